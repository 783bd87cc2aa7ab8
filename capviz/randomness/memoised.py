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
"""

from __future__ import annotations

import functools
import types
from typing import Any

from capviz.core.source import is_user_file

_WRAPPER = functools._lru_cache_wrapper  # type: ignore[attr-defined]


def _wrappers(space: dict, found: dict[int, Any], depth: int) -> None:
    for value in list(space.values()):
        if type(value) is _WRAPPER:
            found[id(value)] = value
        elif depth and type(value) is types.ModuleType and _user_module(value):
            _wrappers(vars(value), found, depth - 1)


def _user_module(module: types.ModuleType) -> bool:
    file = getattr(module, "__file__", None)
    return isinstance(file, str) and is_user_file(file)


def note(spaces: list[dict]) -> list[tuple[Any, int]]:
    """``(wrapper, its misses)`` of every ``lru_cache`` wrapper in ``spaces`` (module
    namespaces) and in the user's modules they hold, once each."""
    found: dict[int, Any] = {}
    for space in spaces:
        _wrappers(space, found, 1)
    return [(wrapper, wrapper.cache_info().misses) for wrapper in found.values()]


def clear_grown(noted: list[tuple[Any, int]]) -> list[Any]:
    """Clear each noted wrapper whose misses grew since :func:`note`; the cleared ones."""
    cleared = []
    for wrapper, misses in noted:
        if wrapper.cache_info().misses != misses:
            wrapper.cache_clear()
            cleared.append(wrapper)
    return cleared
