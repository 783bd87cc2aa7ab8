"""The float outputs an inexact backend may compute otherwise than NumPy by more than any
tolerance: those read from a step of an inexact value (issue 25; the hostile review 13,
finding 1, stop 41).

:mod:`capviz.replay.exactness` declares an integer or boolean output computed from floats the
backend rounds otherwise (``np.exp(x).astype(np.int64)`` is 4 on JAX where NumPy gives 5). A
float can hold the same jump: a rounding of such a value (``np.floor(np.exp(x))``: 4.0 for 5.0),
its sign or step (``np.sign``, ``np.heaviside``), and any float computed from an inexact integer
or boolean (``(np.exp(x) >= t) * 1.0``, ``np.mean(p >= t)``: 0.0125 off with a tolerance of
1e-4, a count 250 off; an embedding row picked by such an index, ``E[np.exp(x).astype(int)]``,
greedy decoding's ``np.take_along_axis(v, np.argmax(logits, -1)[:, None], 1)``: 19,900 off).
No tolerance covers a value off by a unit of a step, so such an output is declared as the
integer ones are: the replay warns (``cv.InexactResultWarning``) naming it and the step, and the
differential harness counts it declared, not held to the tolerance.

A step is:

* an op of :data:`ROUNDINGS` of an inexact float (its result is a float);
* an integer or boolean value the backend may compute otherwise (a comparison, ``argmax``,
  ``searchsorted``, a cast to an integer type... of an inexact float: each is already
  inexact by :func:`capviz.replay.exactness.inexact_nodes`).

Every value read from a step (through any op: a product by the mask, a mean, a gather, a cast
back to float, ``np.where``) is *stepped*; a float or complex output that is stepped is
declared. This is a property of the graph, not of the values: an output whose values all lie
far from the step is declared too (a run-time test of the distance to the step would say
where; not written).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.core.ir import Graph, Node

ROUNDINGS = frozenset(("floor", "ceil", "round", "around", "rint", "trunc", "fix", "sign",
                       "heaviside"))
"""Ops of a float whose float result jumps by a unit where their operand crosses a point."""


def _kind(node: Node) -> str | None:
    return None if node.dtype is None else np.dtype(node.dtype).kind


def stepped_nodes(graph: Graph, inexact: dict[int, Node]) -> dict[int, tuple[Node, Node]]:
    """The values read from a step of an inexact value (see the module docstring), by node
    index, each with ``(the step, the float op it comes from)``; ``inexact``:
    :func:`capviz.replay.exactness.inexact_nodes` of ``graph``."""
    stepped: dict[int, tuple[Node, Node]] = {}
    for node in graph.nodes:
        if node.kind != "op":
            continue
        found = None
        for a in node.args:
            if isinstance(a, Node) and a.index in stepped:
                found = stepped[a.index]
                break
        if found is None and node.index in inexact:
            if _kind(node) in ("b", "i", "u"):
                found = (node, inexact[node.index])
            elif node.op in ROUNDINGS and any(
                    isinstance(a, Node) and a.index in inexact and _kind(a) in ("f", "c")
                    for a in node.args):
                found = (node, inexact[node.index])
        if found is not None:
            stepped[node.index] = found
    return stepped


def stepped_float_outputs(graph: Graph, inexact: dict[int, Node]
                          ) -> list[tuple[Node, Node, Node]]:
    """The float and complex outputs read from a step of an inexact value: ``(output node, the
    step, the float op it comes from)`` each."""
    stepped = stepped_nodes(graph, inexact)
    found = []
    for out in graph.output_nodes:
        value: Any = out.args[0]
        if isinstance(value, Node) and _kind(value) in ("f", "c") and value.index in stepped:
            step, origin = stepped[value.index]
            found.append((out, step, origin))
    return found
