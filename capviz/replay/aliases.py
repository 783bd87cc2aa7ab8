"""Replay inputs that share memory with what the graph writes into.

Eager NumPy writes an input in place, so a second input (or a constant of the graph) sharing
its memory sees the write: ``a += 1; return a + b`` called as ``f(x, x)`` adds the new ``a``
to itself. A replay is functional: the write makes a new value, and every other input keeps
what the caller passed. So a replay whose inputs share memory with an input the graph writes
into would compute something else, silently; it is refused before anything runs
(:class:`capviz.ReplayInputError`), naming both and the write. So is a read-only input the
graph writes into (a ``np.broadcast_to`` result, a read-only memmap): eager NumPy raises.

Which inputs the graph writes into is recorded at capture: the input node's param
``written`` holds the index of the first update node of its buffer
(:func:`capviz.trace.mutation.assign`). Inputs nobody writes may share memory freely.
Only NumPy arrays are checked: the arrays of an immutable backend (JAX) share nothing a
replay could write, and a Dask input is a lazy expression.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from capviz.core.errors import ReplayInputError
from capviz.core.ir import Graph
from capviz.core.source import format_source


class AliasCheck:
    """The inputs of one graph that it writes into, and its constants, to check a replay's
    inputs against (built once per graph version, with the program)."""

    def __init__(self, graph: Graph) -> None:
        nodes = graph.input_nodes
        self.names = tuple(n.name for n in nodes)
        self.written = tuple(k for k, n in enumerate(nodes) if "written" in n.params)
        self._writes = {k: graph.nodes[nodes[k].params["written"]] for k in self.written}
        # each constant's recorded copy, and the user's array it was copied from while that
        # lives (eager NumPy's write into an input aliasing it changes what the program reads)
        self._constants: list[tuple[str, Any]] = []
        if self.written:
            for node in graph.constants:
                name = node.name or f"%{node.index}"
                self._constants.append((name, lambda v=graph.constant_values[node.index]: v))
                origin = graph.constant_origins.get(node.index)
                if origin is not None:
                    self._constants.append((name, origin))

    def check(self, values: Sequence[Any]) -> None:
        """Raise :class:`capviz.ReplayInputError` when an input the graph writes into shares
        memory with another input or a constant."""
        for k in self.written:
            a = values[k]
            if not isinstance(a, np.ndarray) or not a.size:
                continue
            if not a.flags.writeable:
                write = self._writes[k]
                raise ReplayInputError(
                    f"input {self.names[k]!r} is read-only, and the graph writes into it "
                    f"(node %{write.index} {write.op}, recorded at "
                    f"{format_source(write.source) or 'unknown source'}): eager NumPy raises "
                    "ValueError (output array is read-only). Pass a writeable array: "
                    f"{self.names[k]}.copy()")
            for j, b in enumerate(values):
                if j != k and isinstance(b, np.ndarray) and _shared(a, b):
                    raise self._error(k, f"input {self.names[j]!r}", f"{self.names[j]}.copy()")
            for name, get in self._constants:
                value = get()
                if isinstance(value, np.ndarray) and _shared(a, value):
                    raise self._error(k, f"the graph's constant {name!r}",
                                      f"{self.names[k]}.copy()")

    def _error(self, k: int, other: str, fix: str) -> ReplayInputError:
        write = self._writes[k]
        where = format_source(write.source) or "unknown source"
        return ReplayInputError(
            f"input {self.names[k]!r} shares memory with {other}, and the graph writes into "
            f"{self.names[k]!r} (node %{write.index} {write.op}, recorded at {where}): eager "
            f"NumPy would see that write through {other}, a replay does not (its writes make "
            f"new values). Pass arrays that share no memory: {fix}")


def _shared(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` share memory (exactly, unless that is too hard to tell: then
    they are taken to share it)."""
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=10_000))
    except np.exceptions.TooHardError:
        return True
