"""Guards on the code a capture ran: checked when each replay starts, beside the guards on
Python values (:mod:`capviz.core.python_guards`).

A graph is the program the code computed when it was captured. The user can change that code
in place afterwards, and the next eager call runs the new code while a replay, which runs no
Python, would run the old one silently (hostile review 13, finding 7):

- a function's code replaced (``helper.__code__ = ...``; IPython's ``%autoreload 2`` applies
  an edit of a module this way, to the live function objects): a :class:`CodeGuard` of kind
  ``"code"`` holds the code object the capture ran;
- a method hidden by an attribute set on the object (``layer.act = np.sin`` where the class
  defines ``act``): kind ``"shadow"``, the object's ``__dict__`` must not hold the name;
- a method replaced on the class (``Layer.act = other``): kind ``"method"``, the class's
  attribute must still be the function the capture ran.

These are not listed by ``str(graph)`` (they are the program's text, not its values) and are
not saved: a loaded graph has no live code to compare.
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass
from typing import Any

from capviz.core.errors import GuardError

KINDS = ("code", "shadow", "method")
"""What a :class:`CodeGuard` checks (see the module docstring)."""

SAME = object()
"""What :meth:`CodeGuard.now` gives where the place still holds what the capture ran."""


@dataclass(frozen=True)
class CodeGuard:
    """One piece of code a capture ran, to be found unchanged at each replay.

    Attributes:
        kind: one of :data:`KINDS`.
        anchor: a weak reference to the function (``"code"``) or to the object whose method
            the code called (``"shadow"``, ``"method"``).
        name: the method's name (``""`` for ``"code"``).
        value: the code object (``"code"``), the function the class held (``"method"``), or
            ``None`` (``"shadow"``).
        label: the place as the user's code spells it (``helper``, ``self.act``).
        source: ``(file, line, name)`` of the function's ``def``.
        fn: the name of the captured function (``forward``).
    """

    kind: str
    anchor: weakref.ref
    name: str
    value: Any
    label: str
    source: tuple
    fn: str

    def now(self) -> Any:
        """What the place holds now, or :data:`SAME` where it still holds what the capture ran
        (or its object was freed: nothing can call the eager code on it)."""
        held = self.anchor()
        if held is None:
            return SAME
        if self.kind == "code":
            code = held.__code__
            return SAME if code is self.value or code == self.value else code
        if self.kind == "shadow":
            own = getattr(held, "__dict__", None)
            return own[self.name] if isinstance(own, dict) and self.name in own else SAME
        now = getattr(type(held), self.name, None)
        return SAME if now is self.value else now


def check(guards: tuple[CodeGuard, ...]) -> None:
    """Raise :class:`GuardError` for the first of ``guards`` whose code changed."""
    for guard in guards:
        now = guard.now()
        if now is not SAME:
            raise code_error(guard, now)


def code_error(guard: CodeGuard, now: Any) -> GuardError:
    """The refusal of a replay after the code at ``guard`` changed (``now``: what is there)."""
    file, line, name = guard.source
    where = f"{os.path.basename(file)}:{line}"
    if guard.kind == "code":
        what = (f"the code of {guard.label} (def at {where}) was replaced after {guard.fn} was "
                f"captured (an edit reloaded in place, as IPython's %autoreload does, or "
                f"{guard.label}.__code__ assigned)")
        fix = f"capture {guard.fn} again after editing {guard.label}"
    elif guard.kind == "shadow":
        what = (f"{guard.label} is now an attribute of the object ({_shown(now)}), which hides "
                f"the method {name} (def at {where}) that {guard.fn} called when captured")
        fix = f"capture {guard.fn} again after setting {guard.label}"
    else:
        what = (f"{guard.label} is now {_shown(now)} on the class, not the method {name} (def at "
                f"{where}) that {guard.fn} called when captured")
        fix = f"capture {guard.fn} again after replacing it"
    err = GuardError(f"{what}, so the graph computes the old code.\nFix: {fix}")
    err.recorded, err.got, err.place = guard.value, now, guard.label
    err.source = (file, line, name)
    return err


def _shown(value: Any) -> str:
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if name is not None:
        return f"<{type(value).__name__} {name}>"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
