"""Attributes the call sets to a value of the data (a layer's ``self.x = x``, the last loss
``self.last = x.mean()``): set again by each replay as the call sets them (an effect output,
:func:`capviz.trace.effects.record_attribute`), or refused at the line where the code the call
runs asks whether they exist (``hasattr``, ``getattr``) or where a NumPy read of the old array
could be baked into the graph. Called by :func:`capviz.trace.rebound.put_back`."""

from __future__ import annotations

import linecache
import re
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.trace import code_reach, effects, guard_reach, recapture, state_fixes
from capviz.trace.fn_lines import body, source_lines
from capviz.trace.places import DEPTH, NUMBERS, SEQUENCES, Place, anchored, function_of, tensor_in
from capviz.trace.provenance import ABSENT, made_here, of_data, reaches, read_by_capture
from capviz.trace.rebound_refusals import (
    refuse_asked,
    refuse_changed,
    refuse_kept,
    refuse_shadowing,
)
from capviz.trace.tensor import Tensor


class Held:
    """The object holding an attribute, as :func:`capviz.trace.effects.record_attribute`
    takes it: the object, its label and its path."""

    __slots__ = ("holder", "label", "path")

    def __init__(self, holder: Any, label: str, path: tuple) -> None:
        self.holder, self.label, self.path = holder, label, path


_ASKING = frozenset(("getattr", "hasattr", "vars", "AttributeError", "__dict__"))


def asks_on_path(fn: Callable | None, places: list[Place]) -> bool:
    """Whether the code ``fn`` runs can ask whether an attribute exists (``getattr(self,
    "prev", None)``, ``hasattr``, ``except AttributeError``, ``vars``, ``__dict__``: read from
    the bytecode it reaches, :mod:`capviz.trace.code_reach`): a later call may then take
    another path once a replay sets what the last one set (taken as asking where ``fn`` is
    not known). Another method of the class that asks (a ``backward`` testing ``hasattr(self,
    "x")``) is not on the path: it sees what each replay sets, as after each call."""
    if fn is None:
        return True
    return not _ASKING.isdisjoint(code_reach.reach(fn, places).names)


def cache_set(place: Place, tensor: Tensor, recorder: Any, fn: Callable | None,
               read: set[int], known: set[int] = frozenset(), places: list[Place] = ()
               ) -> bool:
    """Whether the call sets attribute ``place`` (which held an ndarray) to ``tensor``, a value
    of the data, and no line of ``fn``, of a method of the object or a function of its module
    ``fn`` names, mentions the attribute but to set it (NumPy may read the array it held with
    no tensor: ``0.9 * self.m``, which the graph keeps): a cache each call sets anew
    (``self.x = x`` in a layer's forward after an eager call: review 8, finding 3), which each
    replay can set as the call does."""
    if not of_data(tensor, recorder) or read_by_capture(place.value, read) or fn is None \
            or unexplained(recorder, tensor, known):
        return False
    found = source_lines(fn)
    if found is None:
        return False
    texts = [text for _, text in body(found[1])]  # (a one-line def's too)
    owner, space = type(place.holder), getattr(function_of(fn)[1], "__globals__", {})
    helpers = [getattr(owner, name, None) if name not in space else space[name]
               for name in found[0].co_names]  # (a method or a function of its module)
    for cell in getattr(function_of(fn)[1], "__closure__", None) or ():
        try:  # (a function the call holds in a closure cell: make_step(st, update)'s
            helpers.append(cell.cell_contents)  # update(st, x), review 10, finding 14)
        except ValueError:
            continue
    for helper in helpers:
        if isinstance(helper, (types.FunctionType, types.MethodType)):
            try:
                texts += [text for _, text in body(recapture.source_lines(helper)[0])]
            except (OSError, TypeError):
                return False
    texts += traced_lines(recorder)  # (the functions the call ran ops in, however deep:
    #                                    h0(s, x) two calls below fn, H[d](s, x): R11 #1)
    reached = reached_lines(fn, helpers, places)  # (and those it reaches by name, however deep,
    if reached is None:  # that ran no op: old = s.n two calls below, R11 #1's rest)
        return False
    texts += reached
    reading = re.compile(rf"\.{re.escape(place.key)}\b(?!\s*=(?!=))")
    return not any(reading.search(part) for text in texts for part in text.split(";"))


def reached_lines(fn: Callable, read: list, places: list[Place] = ()) -> list[str] | None:
    """The lines of every function the code ``fn`` reaches by the names it uses, however deep
    (:func:`capviz.trace.guard_reach.reached`: its module's functions, the methods of the
    classes it reaches, the functions held in the walked ``places``: ``H[0](self, x)``,
    ``self.h(self, x)``), but those of ``read`` (already read): a helper that reads the
    attribute and records no op (``old = s.n`` in ``h1``, which ``fn`` reaches through
    ``h2``), which :func:`traced_lines` does not find (R11 #1's rest); ``None`` where the
    source of one is not found (it may read it)."""
    done = {getattr(getattr(f, "__func__", f), "__code__", None) for f in read}
    texts = []
    for function in guard_reach.reached(fn, list(places)).functions:
        code = getattr(function, "__code__", None)
        if code is None or code in done:
            continue
        done.add(code)
        try:
            texts += [text for _, text in body(recapture.source_lines(function)[0])]
        except (OSError, TypeError):
            return None
    return texts


def traced_lines(recorder: Any) -> list[str]:
    """The lines of every function the capture recorded an op in (each op node's source: its
    file, line and function), the recorded lines themselves included (a one-line ``def``'s
    body): code the call ran, however it was reached (not the capture's caller, whose lines
    the inputs' nodes name)."""
    graph = recorder.graph
    lines: set[tuple[str, int]] = set()
    functions: dict[tuple[str, str], int] = {}
    for node in graph.nodes:
        source = node.source
        if node.kind != "op" or not source or len(source) < 3 or \
                not isinstance(source[0], str):  # (an input's: the capture's caller)
            continue
        lines.add((source[0], source[1]))
        functions.setdefault((source[0], source[2]), source[1])
    texts = [linecache.getline(path, line) for path, line in lines]
    for (path, name), line in functions.items():
        texts += [text for _, text in state_fixes.function_lines(path, line, name)]
    return texts


def bases(array: np.ndarray) -> list[np.ndarray]:
    found = [array]
    while isinstance(found[-1].base, np.ndarray):
        found.append(found[-1].base)
    return found


def unexplained(recorder: Any, tensor: Tensor, known: set[int]) -> bool:
    """Whether ``tensor`` is computed from an array constant that is no array the walk found
    (``known``: their ids), an array NumPy made with no tensor (``0.9 * self.W`` in a method of
    another object: the old value, baked in; W=20c's census, 05:12, silent): a value no replay
    can be trusted to set."""
    origins = recorder.graph.constant_origins
    return reaches(recorder, tensor, lambda n: n.kind == "constant" and n.shape not in ((), None)
                   and (n.index not in origins or id(origins[n.index]()) not in known))


def set_by_replays(place: Place, tensor: Tensor, recorder: Any) -> None:
    """An effect output setting attribute ``place`` to ``tensor``'s value after each replay."""
    if place.path is not None:
        anchor, steps = place.path[0], place.path[1][:-1]
    else:  # (an attribute of fn's own object)
        anchor, steps = anchored(place.holder, (True, place.key))[0], ()
    holder = Held(place.holder, place.label.rsplit(".", 1)[0], (anchor, steps))
    effects.record_attribute(holder, place.key, tensor, recorder)


def added_removed(place: Place, recorder: Any, fn: Callable | None = None,
                   asks: Callable[[], bool] | None = None, source: Any = None
                   ) -> list[tuple[Place, np.ndarray]]:
    """The attributes the capture added to a walked object that hold a tensor of
    ``recorder`` (``self.x = x``), removed and set by each replay (refused where the code the
    call runs asks whether they exist: ``asks``); those holding an array made of ``create``
    ops (:func:`made_here`), with their values, to bind once ``fn`` is captured."""
    attributes = vars(place.holder)
    binds = []
    shadowed = vars(type(place.holder))
    for key in [k for k in attributes if k not in place.value]:
        value = attributes[key]
        if type(value) is Tensor and value._trace is recorder and \
                type(shadowed.get(key)) is np.ndarray:  # (over the class's array it read)
            del attributes[key]
            refuse_shadowing(place, key, value, recorder)
        elif type(value) is Tensor and value._trace is recorder:
            made = made_here(value, recorder, ABSENT)
            if made is not None:
                binds.append((Place("keys", place.holder, key, f"{place.label}.{key}", None),
                              made))
            elif of_data(value, recorder):
                if asks is None or asks() or place.path is None:  # (if not hasattr(self,
                    refuse_asked(f"{place.label}.{key}", value, recorder, fn)  # "cache"))
                else:
                    effects.record_attribute(place, key, value, recorder)  # self.x = x: set
            del attributes[key]  #                                       again by each replay
        elif type(value) in SEQUENCES and tensor_in(value, recorder, DEPTH) is not None:
            items = value.values() if isinstance(value, dict) else value
            made = [t for t in items if type(t) is Tensor and t._trace is recorder
                    and t._data.kind == "op"]  # (its line: one the function computed)
            tensor = made[0] if made else tensor_in(value, recorder, DEPTH)
            del attributes[key]  # (self.cache = (x, out): no replay builds it; review 7 #35)
            if of_data(tensor, recorder):
                refuse_kept(f"{place.label}.{key}", tensor, recorder)
        elif isinstance(value, NUMBERS) and type(value) is not bool:  # self.count =
            del attributes[key]  # getattr(self, "count", 0) + 1, a function's f.n: a number
            added = Place("attribute", place.holder, key, f"{place.label}.{key}", None)
            refuse_changed(added, value, recorder, source, fn)  # each call changes, which
    return binds  #                 the capture made once (hostile review 8, finding 1: Q19)
