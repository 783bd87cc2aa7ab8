"""Generator objects a capture can reach: their states noted when the scope opens, compared when
it closes.

A draw from a ``np.random.Generator``, ``RandomState``, ``BitGenerator`` or ``random.Random``
*object* (``rng = np.random.default_rng(0)`` at module level, then ``rng.standard_normal(...)``
inside the captured function) cannot be hooked: its methods are C code on a C type. Its values
would be frozen into the graph as a constant. This module is the backstop: when a scope opens it
finds the generator objects reachable from the capture's entry point and notes their states;
when the scope closes, a changed state means the capture drew from (or reseeded) that object, a
``frozen_random`` violation placed at the scope's exit and named after the name the object was
found under (``rng``, ``self.rng``, ``params["rng"]``). The object's state is put back first
(the one noted when the scope opened), so a refused capture leaves the user's generator where
it was: a call after it draws what an uninterrupted run draws.

Reachable means, for ``cv.capture(fn)``: ``fn``'s globals, closure cells, defaults and keyword
defaults, and for a bound method (or a callable object) its instance's attributes (``self.rng``);
for ``with cap.capture_scope()``: the locals and globals of the frame that opened the scope.
Each of those values is looked at, and so are the first :data:`MAX_ITEMS` items of a value that
is a ``dict``, ``list`` or ``tuple`` (one level, no deeper). Anything else is not seen
(``docs/guide/randomness.md``, "What is not seen").

NumPy's and Python's global generators are not watched here: :mod:`capviz.randomness.hooks` sees
them.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import operator
import random
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import numpy.random

# the real classes, bound before any capture (capviz.randomness.hooks puts stand-ins in their place
# while one is open)
from numpy.random import BitGenerator, Generator, RandomState

from capviz.core.violations import frozen_object_message

MAX_ITEMS = 32
"""Items looked at in each ``dict``, ``list`` or ``tuple`` found at the entry point."""

_GENERATOR_TYPES = (Generator, RandomState, BitGenerator, random.Random)
_CONTAINERS = frozenset({dict, list, tuple})
_BUILTINS = vars(builtins)


class Watched(NamedTuple):
    """A generator object found when the scope opened: its name there, its state (comparable)
    and that state as the object gives it back (:func:`put_back` sets it)."""

    name: str
    obj: Any
    state: Any
    saved: Any = None


def function_roots(fn: Callable) -> list[tuple[str, Any]]:
    """``(name, value)`` pairs reachable from ``fn``, the function ``cv.capture`` calls."""
    roots: list[tuple[str, Any]] = []
    if isinstance(fn, functools.partial):
        roots += [(f"partial argument {i}", a) for i, a in enumerate(fn.args)]
        roots += [(f"partial argument {k}", v) for k, v in fn.keywords.items()]
        fn = fn.func
    owner = getattr(fn, "__self__", None)
    func = getattr(fn, "__func__", fn)
    call = next((vars(k)["__call__"] for k in type(fn).__mro__ if "__call__" in vars(k)), None)
    if owner is None and not isinstance(fn, (types.FunctionType, type)) \
            and isinstance(call, types.FunctionType):
        owner, func = fn, call  # a callable object: its __call__ and its attributes
    if owner is not None and not isinstance(owner, types.ModuleType):
        this = "cls" if isinstance(owner, type) else "self"  # a classmethod's class
        roots.append((this, owner))
        roots += [(f"{this}.{k}", v) for k, v in _attributes(owner)]
    code = getattr(func, "__code__", None)
    if code is None:
        return roots
    for name, cell in zip(code.co_freevars, getattr(func, "__closure__", None) or ()):
        try:
            roots.append((name, cell.cell_contents))
        except ValueError:  # an empty cell (a name assigned later)
            pass
    defaults = getattr(func, "__defaults__", None) or ()
    positional = code.co_varnames[:code.co_argcount]
    roots += zip(positional[len(positional) - len(defaults):], defaults)
    roots += (getattr(func, "__kwdefaults__", None) or {}).items()
    roots += getattr(func, "__globals__", {}).items()
    return roots


def frame_roots(frame: types.FrameType | None) -> list[tuple[str, Any]]:
    """``(name, value)`` pairs of the locals and globals of the frame that opened a scope."""
    if frame is None:
        return []
    scopes = [frame.f_locals]
    if frame.f_globals is not scopes[0]:
        scopes.append(frame.f_globals)
    return [item for names in scopes for item in list(names.items())]


def _attributes(obj: Any) -> list[tuple[str, Any]]:
    try:
        return list(vars(obj).items())
    except TypeError:  # no __dict__ (__slots__, a C type)
        return []


_KNOWN_TYPES: dict[type, bool] = {}  # type -> whether its objects are generators
_KNOWN_LIMIT = 4096  # cleared when it holds more (classes made on the fly)


def _is_generator_type(kind: type) -> bool:
    known = _KNOWN_TYPES.get(kind)
    if known is None:
        if len(_KNOWN_TYPES) >= _KNOWN_LIMIT:
            _KNOWN_TYPES.clear()
        known = _KNOWN_TYPES[kind] = issubclass(kind, _GENERATOR_TYPES) \
            and not issubclass(kind, random.SystemRandom)  # no state: never reproducible
    return known


def _generator_types(items: Iterable[Any]) -> set[type]:
    """The types of the generator objects among ``items`` (one check per distinct type)."""
    return {kind for kind in set(map(type, items)) if _is_generator_type(kind)}


def _first_items(container: Any) -> list[Any]:
    if type(container) is dict:
        return list(itertools.islice(container.values(), MAX_ITEMS))
    return list(container[:MAX_ITEMS])


def _candidates(roots: list[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The generator objects among ``roots`` and among the first items of a root that is a
    dict, list or tuple, with their names. Types are sorted out in bulk (C-level passes and the
    set of the types met), so many globals cost little, and an item's name is written only
    when the item is a generator."""
    kinds = list(map(type, map(operator.itemgetter(1), roots)))
    found = {kind for kind in set(kinds) if _is_generator_type(kind)}
    if found:
        yield from itertools.compress(roots, map(found.__contains__, kinds))
    containers = [(name, value) for name, value in
                  itertools.compress(roots, map(_CONTAINERS.__contains__, kinds))
                  if value is not _BUILTINS]  # a module's __builtins__
    if not _generator_types(itertools.chain.from_iterable(  # (no list made per container)
            itertools.islice(value.values(), MAX_ITEMS) if type(value) is dict
            else value[:MAX_ITEMS] for _, value in containers)):
        return
    for name, value in containers:
        items = _first_items(value)
        found = _generator_types(items)
        if not found:
            continue
        keys = itertools.islice(value, MAX_ITEMS) if type(value) is dict else range(len(items))
        for key, item in zip(keys, items):
            if type(item) in found:
                yield (f"{name}[{key!r}]", item)


def _identity(obj: Any) -> Any:
    """The object whose state a draw changes: a generator's bit generator, else the object."""
    if isinstance(obj, Generator):
        return obj.bit_generator
    if isinstance(obj, RandomState):
        return obj._bit_generator
    return obj


def freeze_state(value: Any) -> Any:
    """A comparable copy of a generator's state (arrays as bytes, dicts as sorted items)."""
    if isinstance(value, dict):
        return tuple(sorted((k, freeze_state(v)) for k, v in value.items()))
    if hasattr(value, "tobytes"):
        return value.tobytes()
    return value


UNREADABLE = object()
"""What :func:`state_of` returns for an object whose state cannot be read (a subclass that
refuses): such an object is not watched."""


def state_of(obj: Any) -> Any:
    """The comparable state of a generator object, or :data:`UNREADABLE`."""
    return saved_state(obj)[0]


def saved_state(obj: Any) -> tuple[Any, Any]:
    """``(comparable state, the state as the object gives it)`` of a generator object (the
    second is what :func:`put_back` sets again), or ``(UNREADABLE, None)``."""
    try:
        if isinstance(obj, Generator):
            raw = obj.bit_generator.state
        elif isinstance(obj, RandomState):
            raw = obj.get_state(legacy=False)  # its own cached gauss included
        elif isinstance(obj, BitGenerator):
            raw = obj.state
        else:
            raw = obj.getstate()
            return raw, raw
    except (AttributeError, NotImplementedError, TypeError, ValueError):
        return UNREADABLE, None
    return freeze_state(raw), raw


def put_back(obj: Any, saved: Any) -> None:
    """Set generator ``obj``'s state to ``saved`` (what :func:`saved_state` gave): a capture
    that drew from a generator it refuses as drawn leaves it as it found it, so a call after
    the refusal draws what an uninterrupted run draws."""
    if isinstance(obj, Generator):
        obj.bit_generator.state = saved
    elif isinstance(obj, RandomState):
        obj.set_state(saved)
    elif isinstance(obj, BitGenerator):
        obj.state = saved
    else:
        obj.setstate(saved)


def note(roots: list[tuple[str, Any]]) -> list[Watched]:
    """The generator objects among ``roots`` (one level into containers), with their states;
    each underlying generator once, under the first name it was found by."""
    globals_ = {id(numpy.random.get_bit_generator()), id(random._inst)}  # type: ignore[attr-defined]
    seen: set[int] = set()
    watched = []
    for name, value in _candidates(roots):
        key = id(_identity(value))
        if key in seen or key in globals_:
            continue
        state, saved = saved_state(value)
        if state is UNREADABLE:
            continue
        seen.add(key)
        watched.append(Watched(name, value, state, saved))
    return watched


def note_made(obj: Any, name: str) -> list[Watched]:
    """``obj``, a generator just made inside a capture, watched under ``name`` (empty when its
    state cannot be read)."""
    state, saved = saved_state(obj)
    return [] if state is UNREADABLE else [Watched(name, obj, state, saved)]


def changed(watched: Iterable[Watched]) -> list[Watched]:
    """The watched objects whose state is not what it was when noted."""
    out = []
    for item in watched:
        now = state_of(item.obj)
        if now is not UNREADABLE and now != item.state:
            out.append(item)
    return out


def pending_violations(watched: Iterable[Watched], source: Any) -> list[tuple]:
    """``(kind, call, message, source)`` of a ``frozen_random`` violation for each watched
    object whose state changed, for a recorder's ``pending`` list; each such object's state is
    put back first (review 2, finding 25)."""
    out = []
    for item in changed(watched):
        put_back(item.obj, item.saved)
        kind = _kind(item.obj)
        call = f"{item.name} ({kind}, drawn from or reseeded; seen when the scope closed)"
        out.append(("frozen_random", call, frozen_object_message(item.name, kind, source),
                    source))
    return out


def _kind(obj: Any) -> str:
    for cls, label in ((Generator, "np.random.Generator"), (RandomState, "np.random.RandomState"),
                       (BitGenerator, f"np.random.{type(obj).__name__}"),
                       (random.Random, "random.Random")):
        if isinstance(obj, cls):
            return label
    return type(obj).__name__
