"""The process-wide generator backstop: every generator object in the process, watched by every
capture scope.

The stand-ins (:mod:`capviz.randomness.generators`) record draws from the generator objects a
capture reaches and :mod:`capviz.randomness.generator_watch` notes their states; a generator
held anywhere else (a closure cell of another module's object, an attribute three objects
down, a list inside a dict inside a class) would draw during the capture unseen, and its values
would be frozen into the graph. The backstop sees every one: when a scope opens it notes the
state of each generator object of the process that no one else watches, and when it closes a
changed state is a ``frozen_random`` violation naming the generator (where it is held, found
then, from the objects that refer to it), and the state noted when the scope opened is put
back first: a refused capture leaves the generator where it was.

Finding every generator cheaply:

- once, at the first capture of the process, one pass over every object the garbage collector
  tracks (generators are tracked: they hold references), types sorted out in C;
- from then on, NumPy's bit generators and Python's ``random.Random`` objects made anywhere
  are counted when made: every NumPy bit generator makes its lock with
  ``numpy.random.bit_generator.RLock``, a module global looked up at each construction (also
  through ``copy.deepcopy`` and ``pickle``), which the backstop wraps with a counter, and
  ``random.Random.__init__`` likewise. A scope that opens after none was made looks at no
  object; one that opens after some were made looks at the collector's young generations only
  (where every object made since the last look is, unless a collection of generation 1 or 2
  moved them, which ``gc.get_stats`` tells, and then at every object once more).

The generators are held by this module (NumPy's generator types take no weak references) and
let go at the next scope once nothing else holds them. A state is read exactly: a bit
generator's ``state`` (a Mersenne Twister's 2,500 bytes read from its C struct, a
thousandth of the dict NumPy builds), a ``RandomState``'s legacy state (its cached Gaussian
included), a ``random.Random``'s ``getstate()``. NumPy's and Python's global generators are the
hooks' (:mod:`capviz.randomness.hooks`); the objects the watch notes are the watch's.

What it does not see: a draw made by another thread during the capture is taken as the
capture's (as by the watch); a generator the garbage collector does not track (a C extension's
own) or made by a ``random.Random`` subclass whose ``__init__`` skips ``Random.__init__``,
between two scans that find no other new generator, is not noted.
"""

from __future__ import annotations

import ctypes
import gc
import itertools
import random
import sys
import threading
import types
from typing import Any

import numpy as np
import numpy.random
import numpy.random.bit_generator
from numpy.random import MT19937, PCG64, PCG64DXSM, BitGenerator, Generator, RandomState

from capviz.core.violations import frozen_object_message
from capviz.randomness.generator_watch import UNREADABLE, freeze_state, put_back, saved_state
from capviz.randomness.generators import StandIn

_GLOBAL_RAND = numpy.random.mtrand._rand  # NumPy's global RandomState (the hooks' own)
_lock = threading.Lock()
_held: dict[int, Any] = {}  # id -> the object whose state a draw changes (held strongly)
_made = [0]  # bit generators and random.Random objects made since the counters were installed
_seen: list[Any] = [None, None]  # _made and gc's collection counts when last brought up to date
_HOLDERS = 4  # sys.getrefcount of an object only _held holds (in _prune: the dict, the
#              items list, the loop variable, the argument)


def _count_made(original: Any) -> Any:
    def made(*args: Any, **kwargs: Any) -> Any:
        _made[0] += 1
        return original(*args, **kwargs)

    made.__wrapped__ = original  # type: ignore[attr-defined]
    return made


def _install_counters() -> None:
    """Count the generators made from now on (once per process)."""
    module = numpy.random.bit_generator
    if not hasattr(getattr(module, "RLock", None), "__wrapped__"):
        module.RLock = _count_made(module.RLock)  # type: ignore[attr-defined]
    init = random.Random.__init__
    if not hasattr(init, "__wrapped__"):
        random.Random.__init__ = _count_made(init)  # type: ignore[method-assign]


def _collections() -> tuple[int, int, int]:
    return tuple(s["collections"] for s in gc.get_stats())  # type: ignore[return-value]


_WATCHED_TYPES: dict[type, bool] = {}


def _watched_type(kind: type) -> bool:
    known = _WATCHED_TYPES.get(kind)
    if known is None:
        if len(_WATCHED_TYPES) > 4096:
            _WATCHED_TYPES.clear()
        known = _WATCHED_TYPES[kind] = issubclass(
            kind, (Generator, RandomState, BitGenerator, random.Random)) \
            and not issubclass(kind, random.SystemRandom)
    return known


def _take(objects: list[Any]) -> None:
    """Hold the generators among ``objects`` (types sorted out in C)."""
    kinds = set(map(type, objects))
    wanted = {kind for kind in kinds if _watched_type(kind)}
    if not wanted:
        return
    found = list(itertools.compress(objects, map(wanted.__contains__, map(type, objects))))
    covered = {id(obj._bit_generator) for obj in found if isinstance(obj, RandomState)}
    for obj in found:
        if isinstance(obj, Generator):
            obj = obj.bit_generator
        if id(obj) not in covered:  # a RandomState's bit generator: its RandomState's state
            _held[id(obj)] = obj
    for key in covered:
        _held.pop(key, None)


def _bring_up_to_date() -> None:
    made, counts = _made[0], _collections()
    if _seen[0] is None:
        _install_counters()
        _take(gc.get_objects())
    elif made != _seen[0]:
        before = _seen[1]
        if counts[1:] != before[1:]:  # a collection moved young objects to generation 2
            _take(gc.get_objects())
        else:
            young = gc.get_objects(generation=0)
            if counts[0] != before[0]:  # one moved them to generation 1
                young += gc.get_objects(generation=1)
            _take(young)
    _seen[0], _seen[1] = made, counts


def _prune() -> None:
    for key, obj in list(_held.items()):
        if sys.getrefcount(obj) <= _HOLDERS:  # only _held holds it: let it go
            del _held[key]


_MT_BYTES = 624 * 4 + 4  # mt19937_state: uint32 key[624], int pos
_PLAIN_STATES = frozenset((PCG64, PCG64DXSM))


def _state(obj: Any) -> Any:
    """A comparable copy of ``obj``'s state (see the module docstring), or UNREADABLE."""
    return _saved(obj)[0]


def _saved(obj: Any) -> tuple[Any, Any]:
    """``(comparable state, what :func:`_put_back` sets again)`` of ``obj``, or
    ``(UNREADABLE, None)``: one read of the state serves both."""
    if type(obj) is MT19937:
        try:
            raw = ctypes.string_at(obj.ctypes.state_address, _MT_BYTES)
            return raw, raw
        except (AttributeError, TypeError, ValueError):
            pass
    if isinstance(obj, BitGenerator):
        try:
            raw = obj.state
        except (AttributeError, NotImplementedError, TypeError, ValueError):
            return UNREADABLE, None
        if type(obj) in _PLAIN_STATES:  # a dict of ints and strings: compared as it is
            return raw, raw
        return freeze_state(raw), raw
    return saved_state(obj)


def _put_back(obj: Any, saved: Any) -> None:
    """Set ``obj``'s state to ``saved`` (from :func:`_saved`): a Mersenne Twister's key and
    position read from its C struct go back through its ``state`` setter."""
    if type(obj) is MT19937 and type(saved) is bytes:
        key = np.frombuffer(saved, np.uint32, count=624).copy()
        pos = int(np.frombuffer(saved, np.int32, count=1, offset=624 * 4)[0])
        obj.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
    else:
        put_back(obj, saved)


def note(others: list[Any]) -> list[tuple[Any, Any, Any]]:
    """``(object, state, saved state)`` of every generator of the process but NumPy's and
    Python's global ones and ``others`` (generator objects watched elsewhere), when a scope
    opens."""
    rand = numpy.random.mtrand._rand  # (while hooked: a stand-in for the real one)
    skip = {id(_GLOBAL_RAND), id(getattr(rand, "_real", rand)),
            id(numpy.random.get_bit_generator()), id(random._inst)}  # type: ignore[attr-defined]
    for obj in others:
        skip.add(id(obj))
        skip.add(id(getattr(obj, "bit_generator", None)))
        skip.add(id(getattr(obj, "_bit_generator", None)))
    with _lock:
        _bring_up_to_date()
        _prune()
        held = [obj for key, obj in _held.items() if key not in skip]
    noted = []
    for obj in held:
        state, saved = _saved(obj)
        if state is not UNREADABLE:
            noted.append((obj, state, saved))
    return noted


def changed(noted: list[tuple[Any, Any, Any]]) -> list[Any]:
    """The generators of ``noted`` whose state is not what it was (when the scope closes)."""
    return [obj for obj, state, _ in noted if _state(obj) != state]


def describe(obj: Any, ignore: frozenset[int] = frozenset()) -> tuple[str, str, str]:
    """``(name, kind, where)`` of a held generator for a message: the name it is held under and
    where that is (``held where the capture does not look:`` a module global, an attribute, a
    closure variable, an item; or the scope's stand-in's name for it), found from the objects
    that refer to it but ``_held`` and the containers in ``ignore`` (by id: the caller's
    own)."""
    ignore = ignore | {id(_held)}
    owner = obj
    if isinstance(obj, BitGenerator):  # the Generator drawing from it, if any
        owner = next((r for r in gc.get_referrers(obj) if isinstance(r, Generator)
                      and r.bit_generator is obj), obj)
    kind = {Generator: "np.random.Generator", RandomState: "np.random.RandomState"}.get(
        type(owner), f"np.random.{type(owner).__name__}" if isinstance(owner, BitGenerator)
        else f"random.{type(owner).__name__}")
    name, where = _where_held(owner, ignore) or ("rng", f"{_LOOKS}at 0x{id(owner):x}")
    return name, kind, where


_LOOKS = "held where the capture does not look: "
_STAND_IN = ("that the capture reached, whose draws it records only with "
             "global_random=\"generator\" (the default)")


def _where_held(obj: Any, ignore: frozenset[int]) -> tuple[str, str] | None:
    for ref in gc.get_referrers(obj):
        if id(ref) in ignore:
            continue
        if type(ref) is StandIn and ref._capviz_real is obj:  # the scope's stand-in for it
            return ref._capviz_label, _STAND_IN
        if type(ref) is dict:
            key = next((k for k, v in ref.items() if v is obj), None)
            if key is None:
                continue
            module = next((m for m in list(sys.modules.values())
                           if getattr(m, "__dict__", None) is ref), None)
            if module is not None:
                return f"{module.__name__}.{key}", _LOOKS + "a module global"
            holder = next((r for r in gc.get_referrers(ref)
                           if getattr(r, "__dict__", None) is ref), None)
            if holder is not None:
                return _as_name(key), \
                    f"{_LOOKS}an attribute of a {type(holder).__name__} object"
            return _as_name(key), f"{_LOOKS}the item {key!r} of a dict"
        if type(ref) is types.CellType:
            for fn in gc.get_referrers(ref):
                if type(fn) is tuple:
                    fn = next((f for f in gc.get_referrers(fn)
                               if type(f) is types.FunctionType and f.__closure__ is fn), None)
                if type(fn) is types.FunctionType and fn.__closure__ \
                        and ref in fn.__closure__:
                    name = fn.__code__.co_freevars[fn.__closure__.index(ref)]
                    return name, f"{_LOOKS}a closure variable of {fn.__qualname__}"
        if type(ref) is list:
            return "rng", \
                f"{_LOOKS}item {next(i for i, v in enumerate(ref) if v is obj)} of a list"
    return None


def _as_name(key: Any) -> str:
    return key if isinstance(key, str) and key.isidentifier() else "rng"


def pending_violations(noted: list[tuple[Any, Any, Any]], source: Any) -> list[tuple]:
    """``(kind, call, message, source)`` of a ``frozen_random`` violation for each generator of
    ``noted`` whose state changed, for a recorder's ``pending`` list; each one's state is put
    back first, so a refused capture leaves it as it found it."""
    out: list[tuple] = []
    found = changed(noted)
    if not found:
        return out
    saved = {id(obj): state for obj, _, state in noted}
    ignore = frozenset(map(id, (found, noted, out, saved, *noted)))
    for obj in found:
        _put_back(obj, saved[id(obj)])  # (review 2, finding 25)
        name, kind, where = describe(obj, ignore)
        call = f"{name} ({kind}, {where}: drawn from or reseeded; seen when the scope closed)"
        out.append(("frozen_random", call, frozen_object_message(name, kind, source,
                                                                 reach=where), source))
    return out
