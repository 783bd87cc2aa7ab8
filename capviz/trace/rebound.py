"""A capture tensor left in a name outside the capture: ``self.W = self.W - 0.5 * g``.

A functional update of an attribute, a global or a closure variable binds a capture tensor
there: a replay computes values and writes states in place, and cannot rebind a name, so the
graph would keep computing from the old array while eager calls move on; and the user's object
would hold a dead capture tensor after the capture. The function form notes, when the scope
opens, what the places it can see hold (:func:`note`: the attributes of a bound method's
``self``, the globals its code names, its closure cells, and inside them the items of lists and
dicts and the attributes of plain objects, three levels down: ``self.ws[0]``, ``self.d["w"]``,
``self.o.m``); when the scope exits,
:func:`put_back` puts the original object back in each place that now holds a capture tensor
and refuses it at the line of the op that made the tensor, with the in-place write as the fix.
(Recording a rebinding as a state write is for later.)
"""

from __future__ import annotations

import itertools
import linecache
import re
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.trace.recapture import call_method, line_code
from capviz.trace.tensor import Tensor

REBOUND = "a capture tensor bound outside the capture"
"""The ``call`` of the refusal (the situation ``rebound_to_tensor``)."""

_UPDATE = re.compile(r"^\s*(?P<target>[\w.]+(?:\[[^\]=]+\][\w.]*)*)\s*=\s*(?P=target)\s*"
                     r"(?P<op>\*\*|//|[-+*/@%])\s*(?P<rest>.+?)\s*$")


class Place:
    """One name the captured function can rebind: an object's attribute, a module global,
    a closure cell, a list or dict item; what it held when the scope opened."""

    __slots__ = ("holder", "inner", "key", "kind", "label", "value")

    def __init__(self, kind: str, holder: Any, key: Any, label: str, value: Any,
                 inner: bool = False) -> None:
        self.kind, self.holder, self.key, self.label, self.value = kind, holder, key, label, value
        self.inner = inner  # inside a container: refused only where the capture read its array

    def get(self) -> Any:
        if self.kind == "attribute":
            return vars(self.holder).get(self.key, self.value)
        if self.kind in ("global", "dict"):
            return self.holder.get(self.key, self.value)
        if self.kind == "list":
            return self.holder[self.key] if self.key < len(self.holder) else self.value
        try:
            return self.holder.cell_contents
        except ValueError:  # an empty cell
            return self.value

    def put_back(self) -> None:
        if self.kind == "attribute":
            vars(self.holder)[self.key] = self.value
        elif self.kind in ("global", "dict", "list"):
            self.holder[self.key] = self.value
        else:
            self.holder.cell_contents = self.value


_DEPTH = 3  # containers walked below an entry place (self.blocks[0].mW: two)
_ITEMS = 256  # items of one list or dict walked (the rest: not looked at)
_LEAVES = (int, float, complex, str, bytes, bool, type(None), np.ndarray, np.generic)


def _inside(value: Any, label: str, depth: int, seen: set[int]) -> list[Place]:
    """The places inside ``value`` (a list's or dict's items, a plain object's attributes),
    ``depth`` levels down at most, each container once."""
    if depth <= 0 or isinstance(value, _LEAVES) or id(value) in seen:
        return []
    if type(value) is list:
        seen.add(id(value))
        items = [(i, f"{label}[{i}]", "list", item) for i, item in enumerate(value[:_ITEMS])]
    elif type(value) is dict:
        seen.add(id(value))
        items = [(key, f"{label}[{key!r}]", "dict", item)
                 for key, item in itertools.islice(value.items(), _ITEMS)]
    elif _plain_object(value):
        seen.add(id(value))
        items = [(key, f"{label}.{key}", "attribute", item)
                 for key, item in itertools.islice(vars(value).items(), _ITEMS)]
    else:
        return []
    places = []
    for key, inner, kind, item in items:
        places.append(Place(kind, value, key, inner, item, inner=True))
        places += _inside(item, inner, depth - 1, seen)
    return places


def _plain_object(value: Any) -> bool:
    """An instance of a user class with a ``__dict__`` (not a module, class or function)."""
    return (isinstance(getattr(value, "__dict__", None), dict)
            and not isinstance(value, (type, types.ModuleType, types.FunctionType,
                                       types.MethodType, types.BuiltinFunctionType)))


def _function(fn: Callable) -> tuple[Any, Any]:
    """``(self or None, the plain function)`` of a bound method, a ``functools.partial``, a
    function, or a callable object (its class's ``__call__``, ``self`` the object)."""
    while callable(getattr(fn, "func", None)):  # functools.partial
        fn = fn.func
    owner = getattr(fn, "__self__", None)
    function = getattr(fn, "__func__", fn)
    if owner is None and not hasattr(function, "__code__") and _plain_object(fn):
        call = call_method(fn)
        if call is not None and hasattr(call, "__code__"):
            return fn, call
    return owner, function


def note(fn: Callable | None) -> list[Place]:
    """The places ``fn`` can rebind, with what each holds now."""
    if fn is None:
        return []
    owner, function = _function(fn)
    code = getattr(function, "__code__", None)
    places: list[Place] = []
    seen: set[int] = set()
    if owner is not None and isinstance(getattr(owner, "__dict__", None), dict):
        first = code.co_varnames[0] if code is not None and code.co_varnames else "self"
        seen.add(id(owner))
        for key, value in list(vars(owner).items()):
            places.append(Place("attribute", owner, key, f"{first}.{key}", value))
            places += _inside(value, f"{first}.{key}", _DEPTH, seen)
    if code is None:
        return places
    space = getattr(function, "__globals__", None)
    if isinstance(space, dict):
        for name in code.co_names:
            if name in space:
                places.append(Place("global", space, name, name, space[name]))
                places += _inside(space[name], name, _DEPTH, seen)
    for name, cell in zip(code.co_freevars, getattr(function, "__closure__", None) or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        places.append(Place("cell", cell, name, name, value))
        places += _inside(value, name, _DEPTH, seen)
    return places


def put_back(places: list[Place], recorder: Any) -> None:
    """Put the original object back in every place that holds a tensor of ``recorder`` now,
    each refused (queued on ``recorder.pending``) at the line of the op that made it. A place
    inside a container (``self.ws[0]``) counts only where the capture read the array it held
    (a functional update of it): a scratch list the function fills with its own values
    (``calls.append(row)``) is not a rebinding."""
    read = None
    for place in places:
        found = place.get()
        if type(found) is not Tensor or found._trace is not recorder or found is place.value:
            continue
        if place.inner:
            if read is None:
                read = {id(ref()) for ref in recorder.graph.constant_origins.values()}
            if not _read_by_capture(place.value, read):
                continue
        place.put_back()
        source = found._data.source
        text = line_code(linecache.getline(source[0], source[1])) if source else ""
        message = explain(Failure("unsupported_op", REBOUND, place.label, source,
                                  UserCode("other", shorten(text)), None, _reason(text)))
        recorder.pending.append(("unsupported_op", REBOUND, message, source))


def _read_by_capture(value: Any, read: set[int]) -> bool:
    """Whether ``value`` is an ndarray whose memory the capture read as a constant."""
    if not isinstance(value, np.ndarray):
        return False
    root = value
    while isinstance(root.base, np.ndarray):
        root = root.base
    return id(root) in read


def _reason(text: str) -> str:
    """Why, and the fix: the line as an in-place write where it is ``a = a <op> b``."""
    why = "the capture put the original object back"
    match = _UPDATE.match(text)
    if match is None:
        return (f"{why}; write the new value into the array in place (a[...] = value, or "
                "a -= d), which the capture records as a state, or return it")
    return (f"{why}; write in place: {match['target']} {match['op']}= {match['rest']} (the "
            "capture records it as a state)")
