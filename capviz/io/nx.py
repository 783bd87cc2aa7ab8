"""A graph as a ``networkx.MultiDiGraph`` whose attributes are plain JSON values, and the
program-order links drawn to a violation."""

from __future__ import annotations

import bisect
import math
from typing import Any

import networkx as nx

from capviz import ops
from capviz.core.ir import Graph, Node, dtype_name
from capviz.core.source import format_source
from capviz.core.symbols import Symbol
from capviz.io.json import encode

_POSITIONS = [str(i) for i in range(64)]


def _literal(value: Any) -> Any:
    """``encode`` with a fast path for the literals most ops carry (finite floats, ints)."""
    t = type(value)
    if t is int or (t is float and math.isfinite(value)):
        return value
    return encode(value)


def node_attributes(node: Node) -> dict[str, Any]:
    """The JSON attributes of one node in ``graph.nx``, as the schema lists them (the reference
    :func:`to_networkx` is tested against; it builds them for all nodes at once)."""
    shape = node.shape
    attrs = {
        "kind": node.kind,
        "op": node.op,
        "shape": None if shape is None else [str(s) if type(s) is Symbol else s
                                             for s in shape],  # a size symbol: "n0"
        "dtype": dtype_name(node.dtype),
        "params": {k: encode(v) for k, v in node.params.items()},
        "source": format_source(node.source),
        "order": node.index,
        "scope": node.scope,
        "name": node.name,
    }
    literals = {(_POSITIONS[i] if i < 64 else str(i)): _literal(a)
                for i, a in enumerate(node.args) if type(a) is not Node}
    if literals:
        attrs["literals"] = literals
    return attrs


# Parameter values that are their own JSON (``encode`` returns them as they are): the usual
# ``axis=``, ``keepdims=``, ``mode=``. Exact types: a NumPy integer, a float, a tuple is encoded.
_AS_IS = frozenset((int, str, bool, type(None)))


def _params_json(params: dict) -> dict[str, Any]:
    """``{k: encode(v)}`` of op parameters: a plain copy when every value is its own JSON."""
    if _AS_IS.issuperset(map(type, params.values())):
        return params.copy()
    return {k: encode(v) for k, v in params.items()}


def violation_links(graph: Graph) -> list[tuple[int, int, str]]:
    """Edges that place violations: ``(u, v, key)`` with key ``after``, ``reads`` or ``affects``.

    ``after``: the last node before the violation in program order; ``reads``: the tensor a data
    read read; ``affects``: for a seed violation, each random op recorded after it (until the next
    seed violation); for an unseeded-random warning, every random op of the graph.

    One pass over the nodes plus a binary search per seed violation: linear in nodes + edges.
    """
    if not graph.violation_records:
        return []  # links place violations: none to place
    links = []
    nodes = graph.nodes
    random_ops = [n.index for n in nodes if n.kind == "op" and ops.is_random(n.op)]
    seeds = [n.index for n in nodes if n.kind == "violation" and n.op == "seed"]
    before = None  # the last non-violation node seen
    for n in nodes:
        if n.kind != "violation":
            before = n.index
            continue
        if before is not None:
            links.append((before, n.index, "after"))
        target = n.params.get("target")
        if isinstance(target, int):
            links.append((target, n.index, "reads"))
        if n.op == "seed":
            next_seed = bisect.bisect_right(seeds, n.index)
            until = seeds[next_seed] if next_seed < len(seeds) else len(nodes)
            first = bisect.bisect_right(random_ops, n.index)
            last = bisect.bisect_left(random_ops, until)
            links += [(n.index, r, "affects") for r in random_ops[first:last]]
        elif n.op == "unseeded_random":
            links += [(n.index, r, "affects") for r in random_ops]
    return links


def to_networkx(graph: Graph) -> nx.MultiDiGraph:
    """Build the ``networkx.MultiDiGraph`` of a graph (one edge per operand, keyed by position).

    One pass over the nodes fills networkx's documented dict-of-dict-of-dict-of-dict layout
    (``succ[u][v][key] = data``, with ``pred[v][u]`` the same key dict) rather than calling
    ``add_nodes_from``/``add_edges_from``, whose per-item checks and attribute copies cost more
    than the whole build. It makes what the per-node reference makes (:func:`node_attributes`,
    ``tests/test_serialize.py`` checks it), cheaper: a source string per distinct line, a
    dtype name per change of dtype, parameters that are their own JSON copied rather than
    encoded, and each adjacency dict made with its first entry. Every node and edge still gets
    its own dicts and lists: nothing mutable is shared between two of them.
    """
    g = nx.MultiDiGraph(inputs=graph.inputs, outputs=graph.outputs, rng_seed=graph.rng_seed)
    node_data, pred = g._node, g._pred
    nodes = graph.nodes
    successors: list[dict | None] = [None] * len(nodes)  # made at a node's first user
    sources: dict[Any, str | None] = {None: None}
    last_dtype: Any = None
    dtype = None
    positions = _POSITIONS
    for n in nodes:
        v = n.index
        source = sources.get(n.source)
        if source is None and n.source is not None:
            source = sources[n.source] = format_source(n.source)
        if n.dtype is not last_dtype:
            last_dtype = n.dtype
            dtype = dtype_name(last_dtype)
        shape = n.shape
        params = n.params
        attrs = node_data[v] = {
            "kind": n.kind,
            "op": n.op,
            "shape": None if shape is None else [str(s) if type(s) is Symbol else s
                                                 for s in shape],
            "dtype": dtype,
            "params": _params_json(params) if params else {},
            "source": source,
            "order": v,
            "scope": n.scope,
            "name": n.name,
        }
        preds = None
        literals = None
        pos = 0
        for a in n.args:
            if type(a) is Node:  # an operand edge a -> n keyed by its position
                u = a.index
                keys = None if preds is None else preds.get(u)
                if keys is not None:  # x * x: one more key between the same two nodes
                    keys[pos] = {"kind": "operand"}
                else:
                    keys = {pos: {"kind": "operand"}}
                    if preds is None:
                        preds = {u: keys}
                    else:
                        preds[u] = keys
                    out = successors[u]
                    if out is None:
                        successors[u] = {v: keys}
                    else:
                        out[v] = keys
            else:
                name = positions[pos] if pos < 64 else str(pos)
                t = type(a)
                value = a if t is int or (t is float and math.isfinite(a)) else encode(a)
                if literals is None:
                    literals = attrs["literals"] = {name: value}
                else:
                    literals[name] = value
            pos += 1
        pred[v] = {} if preds is None else preds
    succ = g._succ
    for n, out in zip(nodes, successors):  # keyed by the nodes' own index objects, as pred
        succ[n.index] = {} if out is None else out

    for u, v, key in violation_links(graph):
        keys = succ[u].get(v)
        if keys is None:
            keys = succ[u][v] = pred[v][u] = {}
        keys[key] = {"kind": key}
    return g


