"""Where the user's code is: the source line of a recorded node and the scope it sits in.

Scopes come for free from the user's own call stack, merged with explicit ``cv.name_scope``\\ s.
A :class:`ScopeTracker` (one per capture) turns the stack at each recorded op into a path such
as ``gpt2/transformer_block[3]/mha/softmax``:

- every user function on the stack between the capture's entry and the op is one level, named by
  its qualified name without the ``<locals>`` part (``attention``, ``MLP.forward``, ``lambda``);
  frames of capviz and NumPy are skipped, and so are generator expressions, comprehensions and
  module-level code (``<genexpr>``, ``<listcomp>``, ``<module>``): they make no level;
- the entry is the frame that opened the capture (``with cap.capture_scope()``); with
  ``cv.capture(fn)``, ``fn`` itself is the top level, as in ``jax.make_jaxpr``;
- an explicit ``cv.name_scope`` is one level under the function that entered it;
- each entry into a level is its own scope, numbered per parent and name in the order they
  recorded something: a name entered once under its parent shows plain (``mha``), a name
  entered several times shows an index on every entry (``block[0]``, ``block[1]``). While a
  capture runs, the first entry shows plain until a second one appears; the final names are
  settled when the capture ends (:meth:`ScopeTracker.finish`).

Cost: the tracker keeps the frames of the current chain (and releases them at :meth:`finish`);
an op recorded in the same frame as the one before costs two identity checks, a new frame costs
a walk up to the first frame already known.
"""

from __future__ import annotations

import inspect
from types import CodeType, FrameType
from typing import Any

from capviz.core.source import PACKAGE_DIRS, SKIP_DIRS, USER_FILES

_SUSPENDABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_NO_LEVEL = frozenset({"<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>", "<module>"})


def level_name(code: CodeType) -> str:
    """The scope name of a function: its qualified name without ``<locals>``; ``lambda``."""
    name = getattr(code, "co_qualname", code.co_name)
    if "<locals>." in name:
        name = name.rsplit("<locals>.", 1)[1]
    if name.endswith(".__call__"):  # a callable object: named after its class, like a module
        name = name[:-len(".__call__")]
    return name.replace("<lambda>", "lambda")


_CAPVIZ = "<capviz>"  # the kind of capviz's own code (a boundary, not a level)
_KINDS: dict[int, tuple[CodeType, str | None]] = {}


def _code_kind(code: CodeType) -> str | None:
    """For a frame's code: its level name, ``None`` (no level: NumPy, a comprehension,
    module-level code) or ``_CAPVIZ``; cached per code object."""
    hit = _KINDS.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    filename = code.co_filename
    if filename.startswith(PACKAGE_DIRS) and filename not in USER_FILES:
        kind: str | None = _CAPVIZ
    elif filename.startswith(SKIP_DIRS) or code.co_name in _NO_LEVEL:
        kind = None
    else:
        kind = level_name(code)
    if len(_KINDS) > 100_000:  # code made by exec in a loop: start again rather than grow
        _KINDS.clear()
    _KINDS[id(code)] = (code, kind)
    return kind


# --- explicit scopes ---------------------------------------------------------------------------


class ExplicitScope:
    """One entry into ``cv.name_scope(name)``; ``frame`` is the user frame that entered it."""

    __slots__ = ("frame", "name")

    def __init__(self, name: str, frame: FrameType | None) -> None:
        self.name = name
        self.frame = frame

    def __repr__(self) -> str:
        return f"ExplicitScope({self.name!r})"


# --- the scope tree ----------------------------------------------------------------------------


class Scope:
    """One scope of a capture: a function call or a name-scope entry, under its parent.

    Attributes:
        parent: the enclosing scope (``None`` for the root).
        name: the function or name-scope name.
        number: how many same-named siblings recorded something before this one.
        path: the path recorded on nodes while the capture runs.
    """

    __slots__ = ("counts", "name", "number", "parent", "path")

    def __init__(self, parent: Scope | None, name: str, number: int, path: str) -> None:
        self.parent = parent
        self.name = name
        self.number = number
        self.path = path
        self.counts: dict[str, int] | None = None  # made at the first child (most have none)

    def child(self, name: str) -> Scope:
        counts = self.counts
        if counts is None:
            counts = self.counts = {}
        number = counts.get(name, 0)
        counts[name] = number + 1
        segment = name if number == 0 else f"{name}[{number}]"
        return Scope(self, name, number, f"{self.path}/{segment}" if self.path else segment)


class ScopeTracker:
    """Turns the call stack at each recorded node into a scope path, for one capture.

    Args:
        entry: the user frame that opened the capture (its ops are at the top level).
        explicit: the explicit name scopes already open when the capture began (a fixed prefix).
    """

    def __init__(self, entry: FrameType | None, explicit: tuple[ExplicitScope, ...] = ()) -> None:
        self.root = Scope(None, "", 0, "/".join(e.name for e in explicit))
        self.entry = entry
        self.prefix = explicit
        self.scopes: list[Scope] = [self.root]
        # the current chain, outermost first: (key, scope); a key is a frame or an ExplicitScope
        self.levels: list[tuple[Any, Scope]] = [(entry, self.root)]
        self.root_frames: list[FrameType] = [] if entry is None else [entry]
        self.frames: dict[int, tuple[FrameType, int]] = {} if entry is None else \
            {id(entry): (entry, 0)}
        self.explicit: dict[int, tuple[ExplicitScope, Scope]] = {}
        self.suspended: dict[int, tuple[FrameType, Scope]] = {}  # generators between resumes
        self.last_frame: FrameType | None = None
        self.last_back: FrameType | None = None
        self.last_explicit: tuple = explicit
        self.last_path = self.root.path
        self.on_frame: Any = None  # told each frame met above a recorded op's, once (memoised.py)

    def path(self, frame: FrameType | None, explicit: tuple[ExplicitScope, ...]) -> str:
        """The scope path of a node recorded with ``frame`` as the innermost user frame."""
        if frame is self.last_frame and explicit is self.last_explicit and frame is not None \
                and frame.f_back is self.last_back:
            return self.last_path
        path = self._resolve(frame, explicit).path
        self.last_frame = frame
        self.last_back = None if frame is None else frame.f_back
        self.last_explicit = explicit
        self.last_path = path
        return path

    def _resolve(self, frame: FrameType | None, explicit: tuple) -> Scope:
        new, at = self._new_frames(frame)
        levels = self.levels
        if len(levels) > at + 1:
            for key, scope in levels[at + 1:]:
                if type(key) is not ExplicitScope:
                    self.frames.pop(id(key), None)
                    if key.f_code.co_flags & _SUSPENDABLE:  # resumed later: the same call
                        self.suspended[id(key)] = (key, scope)
            del levels[at + 1:]
        if explicit is self.prefix and not self.explicit:  # no name scope opened: functions only
            for f in new:
                self._enter_frame(f)
            return levels[-1][1]
        open_scopes = [e for e in explicit if e not in self.prefix]
        if len(self.explicit) > len(open_scopes):  # forget entries that were left
            still = {id(e) for e in open_scopes}
            self.explicit = {k: v for k, v in self.explicit.items() if k in still}
        placed = {id(key) for key, _ in levels if isinstance(key, ExplicitScope)}
        owners = self.root_frames if at == 0 else [levels[at][0]]
        self._enter_explicit(open_scopes, placed, owners)
        for f in new:
            self._enter_frame(f)
            self._enter_explicit(open_scopes, placed, [f])
        orphans = [e for e in open_scopes if id(e) not in placed]
        self._enter_explicit(orphans, placed, None)  # opened in a frame not on this stack
        return levels[-1][1]

    def _enter_frame(self, f: FrameType) -> None:
        """Push the level of a call: a new scope, or the one a resumed generator had."""
        levels = self.levels
        parent = levels[-1][1]
        seen = self.suspended.get(id(f))
        if seen is not None and seen[0] is f and seen[1].parent is parent:
            scope = seen[1]
        else:
            scope = parent.child(_code_kind(f.f_code))
            self.scopes.append(scope)
        self.frames[id(f)] = (f, len(levels))
        levels.append((f, scope))

    def _new_frames(self, frame: FrameType | None) -> tuple[list[FrameType], int]:
        """The user frames above ``frame`` not yet in the chain (outermost first), and the
        position in the chain of the first known frame they hang from."""
        new: list[FrameType] = []
        known = self.frames
        watch = self.on_frame
        f = frame
        while f is not None:
            hit = known.get(id(f))
            if hit is not None and hit[0] is f:
                new.reverse()
                return new, hit[1]
            kind = _code_kind(f.f_code)
            if watch is not None and kind is not _CAPVIZ:
                watch(f)
            if kind is _CAPVIZ:
                # capviz called the user's code (cv.capture(fn)): its outermost frame is the top
                if new:
                    top = new.pop()
                    self.root_frames.append(top)
                    known[id(top)] = (top, 0)
                new.reverse()
                return new, 0
            if kind is not None:
                new.append(f)
            f = f.f_back
        return [], 0  # the capture's entry is not on this stack: no function levels

    def _enter_explicit(self, open_scopes: list[ExplicitScope], placed: set[int],
                        owners: list[FrameType] | None) -> None:
        levels = self.levels
        for e in open_scopes:
            if id(e) in placed:
                continue
            if owners is not None and not any(e.frame is o for o in owners):
                continue
            parent = levels[-1][1]
            seen = self.explicit.get(id(e))
            if seen is not None and seen[0] is e and seen[1].parent is parent:
                scope = seen[1]  # the same entry, met again after a call returned
            else:
                scope = parent.child(e.name)
                self.scopes.append(scope)
                self.explicit[id(e)] = (e, scope)
            levels.append((e, scope))
            placed.add(id(e))

    def finish(self, nodes: list) -> None:
        """Settle the final paths (``block`` becomes ``block[0]`` once a ``block[1]`` exists)
        on ``nodes`` and release the frames the tracker held."""
        final: dict[int, str] = {id(self.root): self.root.path}
        renames: dict[str, str] = {}
        for scope in self.scopes[1:]:
            parent = scope.parent
            segment = scope.name if parent.counts[scope.name] == 1 else \
                f"{scope.name}[{scope.number}]"
            head = final[id(parent)]
            path = f"{head}/{segment}" if head else segment
            final[id(scope)] = path
            if path != scope.path:
                renames[scope.path] = path
        if renames:
            for node in nodes:
                new = renames.get(node.scope)
                if new is not None:
                    node.scope = new
        self.levels = [(None, self.root)]
        self.frames = {}
        self.root_frames = []
        self.entry = None
        self.explicit = {}
        self.suspended = {}
        self.last_frame = self.last_back = None
        self.prefix = ()
        self.last_explicit = ()
