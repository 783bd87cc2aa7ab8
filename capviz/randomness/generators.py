"""Random generators as states: draws recorded from the live generator, replayed from it.

A draw inside a capture from NumPy's global generator (``np.random.rand(3)``, also through a
name bound before the capture that the scope rebinds) or from a ``Generator`` / ``RandomState``
object the capture reaches (``self.rng``, ``sampler.rng``, ``rng`` a global) is recorded as a
``draw`` op (:mod:`capviz.ops.creation`) reading a ``state`` node that stands for the
generator: a replay calls the same method with the same arguments on the live generator, which
advances it as the eager call did, so ``np.random.seed(0); replay(x); replay(x)`` equals
``np.random.seed(0); f(x); f(x)`` bit for bit, dtypes included. The capture learns the draw's
shape and dtype by drawing from a copy of the generator; the live one is not advanced.

Generator objects are reached where :mod:`capviz.randomness.generator_watch` looks (the
captured function's globals, closure, defaults and ``self``; the opening frame's locals and
globals; one level into dicts and lists) and one level further, into the attributes of the
objects found there (``sampler.rng``). Each is replaced, for the scope's lifetime, by a
:class:`Stand-in <StandIn>` that records its draws and still passes ``isinstance``; the exit
puts the objects back.

Python's global ``random`` (its module functions are hooked) and ``random.Random`` objects are
recorded the same way. A draw of one number (``random.random()``, ``np.random.rand()``) is a
0-d tensor; NumPy promotes a Python number weakly (``x32 * random.random()`` is float32), so
where the graph's float64 or int64 would give another dtype, the draw is cast to the one NumPy
converts it to (:func:`capviz.trace.state.python_operands`). A draw that cannot be recorded is
refused at its line with the reason: a parameter computed in the capture, an in-place
shuffle, a draw of items (``random.choice(seq)``, ``sample``), of bytes. A reseed stays a
``seed`` violation.
"""

from __future__ import annotations

import copy
import random
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.random import Generator, RandomState

from capviz import ops
from capviz.core.source import user_source
from capviz.randomness.creation import plain, static, user_call
from capviz.trace.context import active
from capviz.trace.state import python_bounds as state_bounds
from capviz.trace.tensor import Tensor

_TYPES = (Generator, RandomState, random.Random)
NOT_DRAWS = frozenset(("bit_generator", "spawn", "get_state", "getstate", "set_state",
                       "setstate", "seed", "get_bit_generator", "set_bit_generator"))
"""Public methods of the generator classes that draw nothing."""
SEEDS = frozenset(("seed", "set_state", "setstate", "set_bit_generator"))
"""Methods that reseed: a ``seed`` violation inside a capture."""
IN_PLACE = frozenset(("shuffle",))


class NotRecordable(Exception):
    """A draw a graph cannot hold; the text says why and what to write instead."""


def _state_node(recorder: Any, generator: Any, label: str, place: tuple | None) -> Any:
    """The ``state`` node standing for ``generator`` in ``recorder``'s graph (made at its
    first draw; ``place``: where the user holds it, for a replay to check it is still there,
    see ``Graph.state_places``)."""
    known = recorder.generators.get(id(generator))
    if known is not None and known[0] is generator:
        return known[1]
    node = recorder._append("state", None, (), {"generator": type(generator).__name__}, None,
                            None, user_source(), label)
    recorder.graph.state_targets[node.index] = generator
    if place is not None:
        recorder.graph.state_places[node.index] = place
    recorder.generators[id(generator)] = (generator, node)
    return node


_PYTHON_REFUSED = {
    "shuffle": "shuffles its argument in place; index with a permutation instead: x = x["
               "np.random.permutation(len(x))]",
    "sample": "returns a list of the population's items, which a graph cannot hold; index "
              "with drawn indices instead: np.asarray(population)[np.random.choice("
              "len(population), k, replace=False)]",
    "choice": "returns an item of its sequence, which a graph cannot hold; index with a "
              "drawn index instead: np.asarray(seq)[{label}.randrange(len(seq))]",
    "choices": "returns a list of the population's items, which a graph cannot hold; index "
               "with drawn indices instead: np.asarray(population)[np.random.randint("
               "len(population), size=k)]",
    "randbytes": "returns bytes, which a graph cannot hold; use a draw of numbers: "
                 "np.random.randint(256, size=n)",
}
"""Draws of Python's ``random`` that return no number, refused with the fix."""
_INT64 = np.iinfo(np.int64)


def record(recorder: Any, generator: Any, label: str, method: str, args: tuple,
           kwargs: dict, place: tuple | None = None) -> Tensor:
    """Record ``generator.<method>(*args, **kwargs)`` as a ``draw`` of its state.

    A draw of an array is a tensor of its shape and dtype. A draw of one number is a 0-d
    tensor: a NumPy scalar (``rng.integers(5)``) of its dtype; a Python ``float`` or ``int``
    (``random.random()``, ``np.random.rand()``) of float64 or int64, marked ``python`` in its
    params, whose uses :func:`capviz.trace.state.python_operands` cast to the dtype NumPy's weak
    promotion of a Python number converts it to.

    Raises:
        NotRecordable: the draw cannot be recorded (the reason says what to write).
    """
    call = f"{label}.{method}()"
    if isinstance(generator, random.Random) and method in _PYTHON_REFUSED:
        raise NotRecordable(f"{call} {_PYTHON_REFUSED[method].format(label=label)}")
    if method in IN_PLACE:
        raise NotRecordable(f"{call} shuffles its argument in place; index with a "
                            f"permutation instead: x = x[{label}.permutation(len(x))]")
    if not plain(args) or not plain(list(kwargs.values())):
        raise NotRecordable(f"{call} with a parameter that is an array or a capture tensor: "
                            "NumPy's generator draws with plain numbers, and only those are "
                            "recorded; use standard values transformed with the tensors: "
                            f"mu + sigma * {label}.standard_normal(shape)")
    probe = copy.deepcopy(generator)  # the live generator is advanced by replays only
    value = getattr(probe, method)(*args, **kwargs)
    python = type(value) in (float, int)
    if python:  # a Python number: float64 or int64, promoted weakly where it is used
        bounds = _int_bounds(method, args, kwargs) if type(value) is int else None
        if bounds is not None and not (_INT64.min <= bounds[0] and bounds[1] <= _INT64.max):
            raise NotRecordable(f"{call} may return an int beyond int64 (up to {bounds[1]}), "
                                "which a graph cannot hold; use bounds within int64")
        if type(value) is int and not _INT64.min <= value <= _INT64.max:
            raise NotRecordable(f"{call} returned {value}, an int beyond int64, which a graph "
                                "cannot hold; use bounds within int64")
        value = np.asarray(value, np.float64 if type(value) is float else np.int64)
    elif isinstance(value, np.generic):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biufc":
        raise NotRecordable(f"{call} returns a {type(value).__name__}, not a number or an "
                            "array, which a graph cannot hold; use a draw of numbers")
    params = {"method": method, "args": static(args),
              "kwargs": {k: static(v) for k, v in kwargs.items()},
              "shape": tuple(value.shape), "dtype": value.dtype.name}
    if python:
        params["python"] = True
    state = _state_node(recorder, generator, label, place)
    node = recorder.record(ops.OPS["draw"], (state,), params)
    if python:
        recorder.python_nodes.add(node.index)
        if value.dtype.kind == "i":  # (its bounds: trace/state.py checks int64 arithmetic)
            bounds = _int_bounds(method, args, kwargs)
            if bounds is not None:
                state_bounds(recorder)[node.index] = bounds
    return Tensor(node, recorder)


def _int_bounds(method: str, args: tuple, kwargs: dict) -> tuple[int, int] | None:
    """The least and greatest Python int ``random.<method>(*args)`` can return (``None``:
    not known, taken as int64's)."""
    try:
        if kwargs:
            return None
        if method == "randint" and len(args) == 2:
            return int(args[0]), int(args[1])
        if method == "randrange" and 1 <= len(args) <= 3:
            start, stop = (0, args[0]) if len(args) == 1 else (args[0], args[1])
            return min(int(start), int(stop) - 1), max(int(start), int(stop) - 1)
        if method == "getrandbits" and len(args) == 1:
            return 0, 2 ** int(args[0]) - 1
    except (TypeError, ValueError):
        return None
    return None


# --- stand-ins for generator objects ---------------------------------------------------------


class StandIn:
    """Stands in for a generator object while a capture is open: its draws from the capturing
    context are recorded (:func:`record`), anything else is the real object's. ``isinstance``
    and ``__class__`` answer the real class."""

    __slots__ = ("_capviz_label", "_capviz_place", "_capviz_real", "_capviz_report")

    def __init__(self, real: Any, label: str, report: Callable[[str, str], None],
                 place: tuple | None = None) -> None:
        object.__setattr__(self, "_capviz_real", real)
        object.__setattr__(self, "_capviz_place", place)
        object.__setattr__(self, "_capviz_label", label)
        object.__setattr__(self, "_capviz_report", report)

    def __getattr__(self, name: str) -> Any:
        real = self._capviz_real
        attr = getattr(real, name)
        if name.startswith("_") or not callable(attr):
            return attr
        label = self._capviz_label
        if name in SEEDS:
            report = self._capviz_report

            def reseed(*args: Any, **kwargs: Any) -> Any:
                if active() is not None:
                    report(f"{label}.{name}", args, kwargs)
                return attr(*args, **kwargs)

            return reseed
        if name in NOT_DRAWS:
            return attr

        def draw(*args: Any, **kwargs: Any) -> Any:
            recorder = active()
            if recorder is None or recorder.global_random != "generator" \
                    or not user_call(sys._getframe(1)):
                return attr(*args, **kwargs)  # not ours: the watch sees the state change
            try:
                return record(recorder, real, label, name, args, kwargs,
                              self._capviz_place)
            except NotRecordable as why:
                raise recorder.refuse_here(f"{label}.{name}(...)", str(why)) from None

        draw.__name__ = name
        return draw

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._capviz_real, name, value)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # type: ignore[override]
        return type(self._capviz_real)

    def __deepcopy__(self, memo: dict) -> Any:
        return copy.deepcopy(self._capviz_real, memo)

    def __copy__(self) -> Any:
        return copy.copy(self._capviz_real)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return self._capviz_real.__reduce_ex__(protocol)

    def __repr__(self) -> str:
        return repr(self._capviz_real)


def _is_generator(value: Any) -> bool:
    return type(value) is not StandIn and isinstance(value, _TYPES) \
        and not isinstance(value, random.SystemRandom)


_SKIP = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
         types.MethodType)


_NO_DICT = frozenset({dict, list, tuple, str, bytes, int, float, bool, complex, set, frozenset,
                      type(None)})  # built-in types vars() refuses (a TypeError raised and
#                                     caught for each big dict of a namespace: ~1 us apiece)


def _attributes(obj: Any) -> dict | None:
    if type(obj) in _NO_DICT or isinstance(obj, _SKIP) or isinstance(obj, _TYPES):
        return None
    try:
        found = vars(obj)
    except TypeError:
        return None
    return found if type(found) is dict else None


def _root_place(container: Any, key: Any) -> tuple | None:
    """Where a root's value is held (``Graph.state_places``): a module's globals (a dict) or
    a closure cell, kept strongly (they hold the one value, or live as long as their module);
    a frame's local (no container) has no place a replay can look at again."""
    if type(container) is dict:
        return container, ((False, key),)
    if container is not None:
        return container, ((True, key),)
    return None


def _below(place: tuple | None, owner: Any, is_attribute: bool, key: Any) -> tuple | None:
    """The place of ``owner``'s item or attribute ``key``, ``owner`` being at ``place``: from
    a weak reference to ``owner`` when it takes one, else from ``place``."""
    try:
        return weakref.ref(owner), ((is_attribute, key),)
    except TypeError:  # a dict, a list
        return None if place is None else (place[0], (*place[1], (is_attribute, key)))


def _sites(roots: list[tuple[str, Any, Any, Any]]) -> list[tuple[str, Any, Any, Any, Any]]:
    """``(name, container, key, value, place)`` for the generator objects (:func:`_is_generator`)
    among the values of ``roots`` and one level below: items of dicts and lists, attributes of
    plain objects (``place``: where a replay finds the value again, or ``None``). Names and
    places are made for those only (a namespace's other values cost a type test each)."""
    out = [(*root, _root_place(root[1], root[2])) for root in roots if _is_generator(root[3])]
    for name, container, key, value in roots:
        if type(value) is dict and len(value) <= 64:
            found = [(k, v) for k, v in list(value.items()) if _is_generator(v)]
            if found:
                place = _root_place(container, key)
                out += [(f"{name}[{k!r}]", value, k, v, _below(place, value, False, k))
                        for k, v in found]
        elif type(value) is list and len(value) <= 64:
            found = [(i, v) for i, v in enumerate(value) if _is_generator(v)]
            if found:
                place = _root_place(container, key)
                out += [(f"{name}[{i}]", value, i, v, _below(place, value, False, i))
                        for i, v in found]
        else:
            attrs = _attributes(value)
            if attrs is not None and len(attrs) <= 256:
                found = [(k, v) for k, v in list(attrs.items()) if _is_generator(v)]
                if found:
                    place = _root_place(container, key)
                    out += [(f"{name}.{k}", attrs, k, v, _below(place, value, True, k))
                            for k, v in found]
    return out


def roots_of(fn: Callable | None, frame: types.FrameType | None) -> list[tuple]:
    """``(name, container, key, value)`` where generator objects may live: ``fn``'s globals,
    closure cells and ``self`` (``cv.capture``), or the opening frame's locals (their objects'
    attributes only: a function's locals cannot be rebound) and globals."""
    roots: list[tuple] = []
    if fn is not None:
        owner = getattr(fn, "__self__", None)
        func = getattr(fn, "__func__", fn)
        if owner is not None and not isinstance(owner, types.ModuleType):
            roots.append(("self", None, None, owner))
        for name, cell in zip(getattr(getattr(func, "__code__", None), "co_freevars", ()),
                              getattr(func, "__closure__", None) or ()):
            try:
                roots.append((name, cell, "cell_contents", cell.cell_contents))
            except ValueError:
                pass
        space = getattr(func, "__globals__", None)
        if type(space) is dict:
            roots += [(k, space, k, v) for k, v in list(space.items())]
    if frame is not None:
        if frame.f_locals is not frame.f_globals:
            roots += [(k, None, None, v) for k, v in list(frame.f_locals.items())]
        roots += [(k, frame.f_globals, k, v) for k, v in list(frame.f_globals.items())]
    return roots


def install(roots: list[tuple], report: Callable[[str, str], None]) -> list[tuple]:
    """Put a :class:`StandIn` in place of each generator object found from ``roots`` (where it
    can be put back); returns what :func:`remove` undoes."""
    done: list[tuple] = []
    made: dict[int, StandIn] = {}
    for name, container, key, value, place in _sites(roots):
        if container is None or not _is_generator(value):
            continue
        stand_in = made.get(id(value))
        if stand_in is None:
            stand_in = made[id(value)] = StandIn(value, name, report, place)
        try:
            if isinstance(container, (dict, list)):
                container[key] = stand_in
            else:
                setattr(container, key, stand_in)
        except (TypeError, AttributeError, IndexError):
            continue
        done.append((container, key, value, stand_in))
    return done


def remove(done: list[tuple]) -> None:
    """Put the generator objects back (a site the user changed meanwhile is left)."""
    while done:
        container, key, real, stand_in = done.pop()
        try:
            if isinstance(container, (dict, list)):
                if container[key] is stand_in:
                    container[key] = real
            elif getattr(container, key) is stand_in:
                setattr(container, key, real)
        except (LookupError, AttributeError):
            pass
