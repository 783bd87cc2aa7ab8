"""Iterators held outside the captured call, whose position the call moves.

``next(self.steps)`` on an ``itertools.count``, ``next(self.batches)`` on a generator or a list
iterator kept on the object, a schedule ``lr = next(self.sched)``: each call takes the next
item, and the capture records the item its run took (a literal, a constant, a branch) that every
replay would repeat. No hook sees ``next()``, and the two captures of a first capture may take
items that agree (a step decay ``0.5 ** (next(c) // 2)``) or never run twice (no array state),
so the position of each iterator a walked place holds (:mod:`capviz.trace.places`) is noted
before ``fn`` runs and compared after (:func:`positions`, :func:`moved`): one that moved is
refused at the line of ``fn`` naming it (hostile review 8, finding 1; lead ruling 36, 04:30).
A replay can never take the next item, so there is no fix but passing the value in.

Not seen: an iterator no walked place holds, and one whose position neither ``__reduce__`` nor
(a generator) its frame tells.
"""

from __future__ import annotations

import collections.abc
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.trace.fn_lines import naming_line

NEXT = "the next item of an iterator that outlives the call"
"""The ``call`` of the situation ``next_of_outside_iterator``."""

_NUMBERS = (bool, int, float, complex, str, np.generic)


def _position(it: Any, depth: int = 0) -> Any:
    """What tells where iterator ``it`` stands (``None``: nothing does): its ``__reduce__``,
    with the position of each iterator inside it (``itertools.cycle`` holds a list iterator:
    hostile review 8, on 49a6bd7), or a generator's frame."""
    if isinstance(it, types.GeneratorType):
        frame = it.gi_frame
        if frame is None:
            return None  # (exhausted: no next item moves it)
        return frame.f_lasti, tuple((k, v) if isinstance(v, _NUMBERS) else (k, id(v))
                                    for k, v in frame.f_locals.items())  # (its locals are
        #                                    the objects themselves: for b in data: yield b)
    try:
        return _frozen(it.__reduce__(), depth + 1)
    except Exception:  # (a file, a C iterator that does not pickle)
        return None


def _frozen(value: Any, depth: int) -> Any:
    """``value`` with each iterator in it (tuples, lists and dicts, a few levels) as its
    position, each number as itself, anything else by its type."""
    if isinstance(value, _NUMBERS) or value is None or isinstance(value, type):
        return value
    if depth > 6:
        return type(value).__name__
    if isinstance(value, collections.abc.Iterator) and not isinstance(value, np.ndarray):
        return "iterator", _position(value, depth)
    if type(value) in (tuple, list):
        return tuple(_frozen(v, depth + 1) for v in value)
    if type(value) is dict:  # (an iterator class's own state: object.__reduce__'s __dict__)
        return tuple((k, _frozen(v, depth + 1)) for k, v in value.items())
    return type(value).__name__  # (not by identity: __reduce__ may build it anew each time)


def positions(places: list) -> list[tuple[Any, Any, Any]]:
    """``(place, iterator, position)`` of each iterator a walked place holds."""
    found = []
    seen: set[int] = set()
    for place in places:
        if place.kind in ("keys", "items"):
            continue
        value = place.value
        if id(value) in seen or not isinstance(value, collections.abc.Iterator) or \
                isinstance(value, np.ndarray):
            continue
        seen.add(id(value))
        where = _position(value)
        if where is not None:
            found.append((place, value, where))
    return found


def moved(noted: list[tuple[Any, Any, Any]]) -> Any:
    """The first place of ``noted`` whose iterator moved, or ``None``."""
    for place, it, where in noted:
        try:
            changed = bool(_position(it) != where)
        except Exception:  # (a position holding arrays: == is ambiguous)
            changed = False
        if changed:
            return place
    return None


def refusal(place: Any, fn: Callable, source: Any) -> tuple[str, str, Any]:
    """``(call, message, source)`` of the refusal of ``place``'s iterator moved by ``fn``: at
    the line of ``fn`` that names it, else at ``source``."""
    where, text = naming_line(fn, f"{place.label}.__next__")
    if where is not None:
        source = where
    reason = "the capture took one item, and no replay takes another"
    message = explain(Failure("unsupported_op", NEXT, place.label, source,
                              UserCode("other", shorten(text)), None, reason))
    return NEXT, message, source
