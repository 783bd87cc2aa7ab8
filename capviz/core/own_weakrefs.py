"""capviz's own weak references to the user's arrays, told apart from everyone else's.

A capture lifts an outside array into the graph's signature (:mod:`capviz.trace.lifted`) only
where nothing but the places capviz walked can reach it while ``fn`` runs. A count of strong
references (:func:`sys.getrefcount`) does not see a weak one: a ``weakref.ref``, a
``weakref.proxy`` or a ``weakref.WeakValueDictionary`` of the user's hands NumPy's own code the
live array (``self._ref().copy()``), which a lifted pass leaves at its start value: that read
would become a constant of the graph, silently. capviz holds weak references to the arrays it
met too (a graph's ``state_targets`` and ``constant_origins``), so
:func:`weakref.getweakrefcount` cannot decide alone: capviz's own are :class:`OwnRef` objects,
every other one is the user's (or another library's), and an array holding one is not lifted.
"""

from __future__ import annotations

import weakref
from typing import Any


class OwnRef(weakref.ref):
    """A weak reference capviz holds to an array it met (a ``weakref.ref``: every test of
    ``isinstance(ref, weakref.ref)`` holds; ``type(ref) is weakref.ref`` does not)."""

    __slots__ = ()


def only_own(obj: Any) -> bool:
    """Whether every weak reference to ``obj`` (``weakref.ref``, proxies, the keyed references
    of ``WeakValueDictionary``...) is one of capviz's :class:`OwnRef` objects."""
    refs = weakref.getweakrefs(obj)
    return not refs or set(map(type, refs)) == _OWN


_OWN = {OwnRef}
