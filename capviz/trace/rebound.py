"""A capture tensor left in a name outside the capture: ``self.W = self.W - 0.5 * g``.

A functional update of an attribute, a global or a closure variable binds a capture tensor
there: a replay computes values and writes states in place, and cannot rebind a name, so the
graph would keep computing from the old array while eager calls move on; and the user's object
would hold a dead capture tensor after the capture. The function form notes, when the scope
opens, what the places it can see hold (:func:`note`: the attributes of a bound method's
``self``, the globals its code names, its closure cells); when the scope exits,
:func:`put_back` puts the original object back in each place that now holds a capture tensor
and refuses it at the line of the op that made the tensor, with the in-place write as the fix.
(Recording a rebinding as a state write is for later.)
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable
from typing import Any

from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.trace.recapture import line_code
from capviz.trace.tensor import Tensor

REBOUND = "a capture tensor bound outside the capture"
"""The ``call`` of the refusal (the situation ``rebound_to_tensor``)."""

_UPDATE = re.compile(r"^\s*(?P<target>[\w.]+)\s*=\s*(?P=target)\s*"
                     r"(?P<op>\*\*|//|[-+*/@%])\s*(?P<rest>.+?)\s*$")


class Place:
    """One name the captured function can rebind: an object's attribute, a module global,
    a closure cell; what it held when the scope opened."""

    __slots__ = ("holder", "key", "kind", "label", "value")

    def __init__(self, kind: str, holder: Any, key: str, label: str, value: Any) -> None:
        self.kind, self.holder, self.key, self.label, self.value = kind, holder, key, label, value

    def get(self) -> Any:
        if self.kind == "attribute":
            return vars(self.holder).get(self.key, self.value)
        if self.kind == "global":
            return self.holder.get(self.key, self.value)
        try:
            return self.holder.cell_contents
        except ValueError:  # an empty cell
            return self.value

    def put_back(self) -> None:
        if self.kind == "attribute":
            vars(self.holder)[self.key] = self.value
        elif self.kind == "global":
            self.holder[self.key] = self.value
        else:
            self.holder.cell_contents = self.value


def _function(fn: Callable) -> tuple[Any, Any]:
    """``(self or None, the plain function)`` of a bound method, a ``functools.partial`` or
    a function."""
    while callable(getattr(fn, "func", None)):  # functools.partial
        fn = fn.func
    owner = getattr(fn, "__self__", None)
    return owner, getattr(fn, "__func__", fn)


def note(fn: Callable | None) -> list[Place]:
    """The places ``fn`` can rebind, with what each holds now."""
    if fn is None:
        return []
    owner, function = _function(fn)
    code = getattr(function, "__code__", None)
    places = []
    if owner is not None and isinstance(getattr(owner, "__dict__", None), dict):
        first = code.co_varnames[0] if code is not None and code.co_varnames else "self"
        places += [Place("attribute", owner, key, f"{first}.{key}", value)
                   for key, value in list(vars(owner).items())]
    if code is None:
        return places
    space = getattr(function, "__globals__", None)
    if isinstance(space, dict):
        places += [Place("global", space, name, name, space[name])
                   for name in code.co_names if name in space]
    for name, cell in zip(code.co_freevars, getattr(function, "__closure__", None) or ()):
        try:
            places.append(Place("cell", cell, name, name, cell.cell_contents))
        except ValueError:  # an empty cell
            continue
    return places


def put_back(places: list[Place], recorder: Any) -> None:
    """Put the original object back in every place that holds a tensor of ``recorder`` now,
    each refused (queued on ``recorder.pending``) at the line of the op that made it."""
    for place in places:
        found = place.get()
        if type(found) is not Tensor or found._trace is not recorder or found is place.value:
            continue
        place.put_back()
        source = found._data.source
        text = line_code(linecache.getline(source[0], source[1])) if source else ""
        message = explain(Failure("unsupported_op", REBOUND, place.label, source,
                                  UserCode("other", shorten(text)), None, _reason(text)))
        recorder.pending.append(("unsupported_op", REBOUND, message, source))


def _reason(text: str) -> str:
    """Why, and the fix: the line as an in-place write where it is ``a = a <op> b``."""
    why = "the capture put the original object back"
    match = _UPDATE.match(text)
    if match is None:
        return (f"{why}; write the new value into the array in place (a[...] = value, or "
                "a -= d), which the capture records as a state, or return it")
    return (f"{why}; write in place: {match['target']} {match['op']}= {match['rest']} (the "
            "capture records it as a state)")
