"""The code guards of a capture (:mod:`capviz.core.code_guards`): the code of each user
function the captured code reaches, and the methods it calls on the objects it walks, so that a
replay after an edit in place (``%autoreload``, ``layer.act = np.sin``, ``Layer.act = other``)
is refused instead of running the old code (hostile review 13, finding 7)."""

from __future__ import annotations

import enum
import types
import weakref
from typing import Any

from capviz.core.code_guards import CodeGuard
from capviz.core.source import library_type
from capviz.trace import code_reach, guard_reach
from capviz.trace.places import Place


def collect(found: guard_reach.Reached, places: list[Place], fn: str
            ) -> tuple[CodeGuard, ...]:
    """The code guards of a capture of ``fn`` (its name) that reached ``found`` and walked
    the objects of ``places``."""
    guards: list[CodeGuard] = []
    for function in found.functions:
        if type(function) is types.FunctionType and code_reach._users(function):
            guards.append(CodeGuard("code", weakref.ref(function), "", function.__code__,
                                    function.__qualname__, _source(function), fn))
    names = sorted(found.names | {"__call__"})
    seen: set[int] = set()
    for place in places:
        holder = place.holder
        if place.kind != "keys" or id(holder) in seen or _skipped(holder):
            continue
        seen.add(id(holder))
        guards += _methods(holder, place, names, fn)
    return tuple(guards)


def _methods(holder: Any, place: Place, names: list[str], fn: str) -> list[CodeGuard]:
    """The guards of the methods of ``holder`` (a walked object) the code may call by
    ``names``: hidden by an attribute set on it later, or replaced on its class."""
    try:
        ref = weakref.ref(holder)
    except TypeError:
        return []
    kind = type(holder)
    own = place.value if type(place.value) is frozenset else frozenset()
    guards = []
    for name in names:
        method = _static(kind, name)
        if type(method) is not types.FunctionType or getattr(kind, name, None) is not method \
                or name in own or not code_reach._users(method):
            continue
        label, source = f"{place.label}.{name}", _source(method)
        if not name.startswith("__") and isinstance(getattr(holder, "__dict__", None), dict):
            guards.append(CodeGuard("shadow", ref, name, None, label, source, fn))
        guards.append(CodeGuard("method", ref, name, method, label, source, fn))
    return guards


def _static(kind: type, name: str) -> Any:
    """What the first class of ``kind``'s MRO that defines ``name`` holds under it."""
    for klass in kind.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None


def _skipped(holder: Any) -> bool:
    return library_type(type(holder)) or isinstance(
        holder, (types.ModuleType, enum.Enum, type, types.FunctionType)) or \
        not code_reach._users(type(holder))


def _source(function: types.FunctionType) -> tuple:
    code = function.__code__
    return code.co_filename, code.co_firstlineno, function.__qualname__
