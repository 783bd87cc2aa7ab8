"""Example values: what each tensor of a capture holds on the capture's example inputs.

A capture given example arrays (``cv.capture(fn, x)``, ``scope.input("x", x)``) may need a
value while it records: ``if np.any(hit):``, ``n = int(mask.sum())``, the length of ``x[mask]``.
:class:`Examples` computes it lazily, only when asked, by running the graph recorded so far on
the examples, as a NumPy replay would: only the nodes the asked value depends on, each once,
keeping every value computed for the next question. A capture that reads nothing computes
nothing (it keeps a reference to each example, not a copy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz import ops
from capviz.backends import registry
from capviz.core.errors import CapvizError, UnsupportedOperationError
from capviz.core.ir import Graph, Node


class NoExample(Exception):
    """A value cannot be computed: an input was declared by its shape and dtype only, or a
    random op has no seed. ``args[0]`` says which, for the read's refusal."""


class Examples:
    """The example values of one capture's graph.

    Attributes:
        graph: the graph being recorded.
        values: computed values by node index (inputs' examples included).
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.values: dict[int, Any] = {}
        self._bound: dict[str, Any] = {}
        self._backend = registry.get("numpy")
        self.states_known = True  # False in a lifted run (trace/lifted.py): a branch on a
        # lifted state is one it cannot decide, so the run falls back to the two captures

    def give(self, node: Node, value: Any) -> None:
        """Set input ``node``'s example (an ndarray, a NumPy scalar or a host value)."""
        self.values[node.index] = value

    def value(self, node: Node) -> Any:
        """``node``'s value on the examples, computed now if it was not yet.

        Raises:
            NoExample: a value it depends on has no example (see :class:`NoExample`).
        """
        values = self.values
        if node.index in values:
            return values[node.index]
        stack = [node]
        with np.errstate(all="ignore"):  # eager NumPy warned already, at the user's line
            while stack:
                n = stack[-1]
                if n.index in values:
                    stack.pop()
                    continue
                missing = [a for a in n.args if isinstance(a, Node) and a.index not in values]
                if missing:
                    stack.extend(missing)
                    continue
                values[n.index] = self._compute(n)
                stack.pop()
        return values[node.index]

    def _compute(self, n: Node) -> Any:
        if n.kind == "constant":
            return self.graph.constant_values[n.index]
        if n.kind == "input":
            what = f"input {n.name!r}" if n.name else "an undeclared input"
            raise NoExample(f"{what} was given by its shape and dtype only")
        if n.kind == "state" and self.states_known and n.index in self.graph.state_values:
            # an outside array the capture writes: its value when the call starts (what a
            # read of it there gives); the values after its writes follow from the ops
            return self.graph.state_values[n.index]
        if n.kind != "op":
            raise NoExample(f"node %{n.index} ({n.kind}) has no value")
        values = self.values
        if n.op == "unpack":
            return values[n.args[0].index][n.params["index"]]
        fn = self._bound.get(n.op)
        if fn is None:
            fn = self._bound[n.op] = self._backend.bind(ops.OPS[n.op])
        if ops.OPS[n.op].random:
            seed = self.graph.rng_seed
            if seed is None:
                raise NoExample(f"random op %{n.index} ({n.op}) draws from an unseeded device")
            return fn(seed, **n.params)
        args = [values[a.index] if isinstance(a, Node) else a for a in n.args]
        try:
            return fn(*args, **n.params)
        except CapvizError:
            raise
        except Exception as err:  # the examples make the op fail (as eager NumPy would)
            raise UnsupportedOperationError(
                f"op %{n.index} ({n.op}) failed on the capture's example values: "
                f"{type(err).__name__}: {err}") from err
