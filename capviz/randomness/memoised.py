"""Memoised helpers a capture called: their caches are cleared when the scope exits.

Inside a capture NumPy's creation functions return capture tensors (:mod:`capviz.randomness.
creation`), so a helper memoised with :func:`functools.lru_cache` (or ``functools.cache``)
that builds a constant (``causal_mask(n) = np.tril(np.ones((n, n)))``, a window, a table of
positions) caches a capture tensor: after the scope closes that tensor is dead, and the user's
next eager call of the helper would get it and raise ``ScopeClosedError`` (review 3, finding
24). So when a scope opens, :func:`note` notes the ``lru_cache`` wrappers the captured code can
name (the values of the namespaces whose bound names the creation hooks rebind: the captured
function's globals and those of the user frames on the stack, and the attributes of the user's
modules among them) with their count of misses; when it closes, :func:`clear_grown` clears each
whose misses grew (a call computed and cached a value during the capture). A cache is a cache:
clearing it changes no result, the next call computes the value again, as an ndarray. A wrapper
the captured code reaches otherwise (a method of a class, a helper of a module it does not name)
is not seen (docs/guide/state.md).

A memo written by hand (``if n not in _MEMO: _MEMO[n] = np.tril(...)``) in a helper module, or
a cache dict kept on a class (``Layer._shared[n] = ...``), would keep the capture tensor the
same way (review 4, finding 12). So :func:`note` also notes the plain dicts those namespaces
hold, those of the user's modules among them, and those kept as attributes of the user's
classes found there (the classes, and the classes of the objects, they hold), each with a copy
of its items; when the scope closes :func:`capviz.trace.rebound.put_back` gives a dict that
holds a capture tensor the items it held when the scope opened (a key the capture added is
removed: the next call computes it again, as an ndarray), and refuses an item that held an
array the capture stored a tensor over, naming it (``helpers._MEMO[4]``): a replay cannot store
into a dict. A dict with more than 10,000 items, or inside another container, is not noted.
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any

from capviz.core.source import is_user_file
from capviz.trace import rebound
from capviz.trace.tensor import Tensor

_WRAPPER = functools._lru_cache_wrapper  # type: ignore[attr-defined]


_ITEMS = 10_000  # a dict with more items is no memo noted (copying it is the cost)


class Noted:
    """What :func:`note` found: the ``lru_cache`` wrappers with their misses, and the memo dicts
    with copies of their items."""

    __slots__ = ("dicts", "wrappers")

    def __init__(self) -> None:
        self.wrappers: list[tuple[Any, int]] = []
        self.dicts: list[tuple[str, dict, dict]] = []  # (label, memo dict, its items)


def _walk(space: dict, prefix: str, found: dict[int, Any], dicts: dict[int, tuple[str, dict]],
          depth: int) -> None:
    for key, value in list(space.items()):
        kind = type(value)
        if kind is _WRAPPER:
            found[id(value)] = value
        elif kind is dict:
            if not key.startswith("__") and len(value) <= _ITEMS:
                dicts.setdefault(id(value), (f"{prefix}{key}", value))
        elif kind is types.ModuleType:
            if depth and _user_module(value):
                _walk(vars(value), f"{key}.", found, dicts, depth - 1)
        elif isinstance(value, type):
            _class_dicts(value, dicts)
        elif _user_class(kind):
            _class_dicts(kind, dicts)


def _class_dicts(klass: type, dicts: dict[int, tuple[str, dict]]) -> None:
    """The dicts kept as attributes of user class ``klass`` (``Layer._shared``)."""
    if not _user_class(klass):
        return
    for key, value in list(vars(klass).items()):
        if type(value) is dict and not key.startswith("__") and len(value) <= _ITEMS:
            dicts.setdefault(id(value), (f"{klass.__name__}.{key}", value))


@functools.lru_cache(maxsize=4096)
def _user_class(klass: type) -> bool:
    """Whether ``klass`` is defined in a user's file or a notebook (``__main__``)."""
    name = getattr(klass, "__module__", None) or ""
    if name in ("builtins", "numpy") or not isinstance(name, str):
        return False
    module = sys.modules.get(name)
    return module is not None and (name == "__main__" or _user_module(module))


def _user_module(module: types.ModuleType) -> bool:
    file = getattr(module, "__file__", None)
    return isinstance(file, str) and is_user_file(file)


def note(spaces: list[dict]) -> Noted:
    """Every ``lru_cache`` wrapper, with its misses, and every memo dict, with a copy of its
    items (see the module docstring), in ``spaces`` (module namespaces) and in the user's
    modules they hold, once each."""
    found: dict[int, Any] = {}
    dicts: dict[int, tuple[str, dict]] = {}
    walked: set[int] = set()
    for space in spaces:  # (each once: the frames of one module share its globals)
        if id(space) not in walked:
            walked.add(id(space))
            _walk(space, "", found, dicts, 1)
    noted = Noted()
    noted.wrappers = [(wrapper, wrapper.cache_info().misses) for wrapper in found.values()]
    noted.dicts = [(label, value, dict(value)) for label, value in dicts.values()]
    return noted


def clear_grown(noted: Noted) -> list[Any]:
    """Clear each noted wrapper whose misses grew since :func:`note`; the cleared ones."""
    cleared = []
    for wrapper, misses in noted.wrappers:
        if wrapper.cache_info().misses != misses:
            wrapper.cache_clear()
            cleared.append(wrapper)
    return cleared


def put_back(noted: Noted, recorder: Any, source: Any) -> None:
    """The memo dicts' items back where they hold a capture tensor of ``recorder``; an array
    the capture stored a tensor over refused on ``recorder.pending`` (see the module
    docstring). A dict holding the tensor of a state (a lifted array stored there:
    ``CACHE["w"] = self.W``) is left to :func:`capviz.trace.lifted.discard`, which stores the
    array itself back, as the call did."""
    places = []
    states = None
    for label, memo, before in noted.dicts:
        found = _tensors(memo, recorder)
        if not found:
            continue
        if states is None:
            states = {id(s.tensor) for s in recorder.states.values()}
        if not any(id(t) in states for t in found):
            places += rebound.dict_places(memo, label, before)
    if places:
        rebound.put_back(places, recorder, source)


def _tensors(memo: dict, recorder: Any) -> list[Tensor]:
    """The capture tensors of ``recorder`` ``memo``'s values are or hold (one level)."""
    found = []
    for value in list(memo.values()):
        items = value if type(value) in (tuple, list) else (value,)
        found += [t for t in items if type(t) is Tensor and t._trace is recorder]
    return found
