"""The guards of ``__slots__`` attributes a walked object has not set, which ``hasattr`` or
``getattr`` with a default may read (review 10, finding 13): a part of the guards of
:mod:`capviz.trace.guards_python`, which calls :func:`unset_slots` with its collector."""

from __future__ import annotations

import enum
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.python_guards import ABSENT
from capviz.core.source import library_type
from capviz.trace import code_reach
from capviz.trace.places import Place, anchored, function_of


def unset_slots(c: Any, fn: Callable, places: list[Place],
                path: Callable[[Place], tuple | None]) -> None:
    """A guard that the place stays empty (:data:`ABSENT`) on each ``__slots__`` attribute a
    walked object of a user class has not set, that ``hasattr`` or ``getattr`` with a default
    may read (its name a string of the code reached, or any name where the code builds names
    at run time): ``hasattr(self, "sl")``, ``getattr(self, "sl", 0.5)`` (review 10, finding 13,
    silent: the user set the slot between replays; the replay kept the branch, the default).
    A slot is no ``__dict__`` entry, and its class holds its descriptor: the absence guards
    of an object's ``__dict__`` miss it. ``c``: the collector; ``path``: its ``_path`` (a
    place's ``(anchor, steps)`` from what the user holds)."""
    found = c.found
    named = found.strings if found.strung else set()
    named = named | found.tried  # (try: v = self.sl / except AttributeError: review 11, #6)
    if not (named or found.dynamic):
        return
    owner, function = function_of(fn)
    code = getattr(function, "__code__", None)
    first = code.co_varnames[0] if code is not None and code.co_varnames else "self"
    objects: dict[int, tuple[Any, str, Any, tuple]] = {}
    if owner is not None:
        objects[id(owner)] = (owner, first, anchored(owner, (True, ""))[0], ())
    for place in places:
        if place.kind == "keys" and place.path is not None:
            anchor, steps = place.path
            objects.setdefault(id(place.holder), (place.holder, place.label, anchor, tuple(
                s for s in steps if s != (True, ""))))
        elif place.kind not in ("keys", "items") and not isinstance(place.value, _LEAF):
            where = path(place)
            if where is not None:
                objects.setdefault(id(place.value), (place.value, place.label, *where))
    held = {(id(p.holder), p.key) for p in places if p.kind == "slot"}  # (set when it began)
    walked = {id(p.holder) for p in places if p.kind in ("slot", "keys")}
    if owner is not None:
        walked.add(id(owner))  # (its slots are walked whatever it holds)
    for obj, label, anchor, steps in objects.values():
        kind = type(obj)
        if isinstance(obj, (type, types.ModuleType, enum.Enum)) or library_type(kind) or \
                not code_reach._users(kind):
            continue
        for klass in kind.__mro__:
            names = vars(klass).get("__slots__", ())
            for key in (names,) if isinstance(names, str) else names:
                if key.startswith("__") or not (found.dynamic or key in named) or (
                        (id(obj), key) in held if id(obj) in walked else hasattr(obj, key)):
                    continue  # (set when the capture began: a place of its own)
                c.add(f"{label}.{key}", ABSENT, (anchor, (*steps, (True, key))), obj, key,
                      (id(obj), key))


_LEAF = (int, float, complex, str, bytes, bool, type(None), np.ndarray, np.generic, list, dict,
         tuple, set, frozenset, types.FunctionType, types.MethodType, type, types.ModuleType)

