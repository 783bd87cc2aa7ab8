"""Values a capture knows without a replay: a tensor computed from constants and ``create``
ops only (``np.eye(2)``, ``np.zeros(3)`` filled with plain numbers) has the value NumPy
computes from them, so reading it (``cv.constant(np.eye(2))``, ``for i in np.arange(3)``,
``float(np.zeros(1)[0])``) reads that value, as it did when these functions returned ndarrays.
A tensor reaching an input, a random draw or a state has no value until a replay: reading it
stays a data read.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from capviz import ops
from capviz.core.ir import Graph, Node

MAX_NODES = 4096
"""Nodes evaluated at most for one read (a longer history is read as unknown)."""


def known_value(graph: Graph, node: Node, memo: dict[int, Any]) -> Any:
    """The value of ``node`` computed with NumPy from constants and ``create`` ops, or
    ``None`` when it depends on anything else. ``memo`` keeps values by node index."""
    order: list[Node] = []
    stack = [node]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if n.index in memo or n.index in seen:
            continue
        if n.kind == "constant":
            memo[n.index] = graph.constant_values[n.index]
            continue
        if n.kind != "op" or len(seen) >= MAX_NODES:
            return None
        op = ops.OPS.get(n.op)
        if n.op != "unpack" and (op is None or op.random):
            return None
        seen.add(n.index)
        order.append(n)
        stack.extend(a for a in n.args if isinstance(a, Node))
    for n in sorted(order, key=operator.attrgetter("index")):
        args = [memo[a.index] if isinstance(a, Node) else a for a in n.args]
        if n.op == "unpack":
            memo[n.index] = args[0][int(n.params["index"])]
            continue
        with np.errstate(all="ignore"):
            memo[n.index] = ops.OPS[n.op].bind(np)(*args, **n.params)
    return memo[node.index]
