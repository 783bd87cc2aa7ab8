"""Graphs as plain data: the networkx view, and save/load as JSON plus an ``.npz`` of constants.

Nothing here unpickles or evaluates: the JSON holds only numbers, strings, lists and objects
(static values that JSON lacks are tagged: ``{"$tuple": [...]}``, ``{"$slice": [...]}``,
``{"$float": "nan"}``...), and constants are read with ``np.load(allow_pickle=False)``. A file
that does not describe a valid graph raises :class:`capviz.GraphFormatError` saying what is wrong.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import networkx as nx
import numpy as np

from capviz import ops
from capviz.errors import GraphFormatError, GraphVerifyError
from capviz.ir import (
    KINDS,
    VIOLATION_LEVELS,
    CapturedGraph,
    Node,
    Violation,
    dtype_name,
    format_source,
)

FORMAT = "capviz-graph"
VERSION = 1


# --- static values <-> JSON ---------------------------------------------------------------------


def encode(value: Any) -> Any:
    """A static value as JSON data."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else {"$float": repr(v)}
    if isinstance(value, complex):
        return {"$complex": [encode(value.real), encode(value.imag)]}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, slice):
        return {"$slice": [encode(value.start), encode(value.stop), encode(value.step)]}
    if value is Ellipsis:
        return {"$ellipsis": None}
    if isinstance(value, dict):
        return {"$dict": {str(k): encode(v) for k, v in value.items()}}
    raise TypeError(f"cannot store a {type(value).__name__} in a graph file")


def decode(data: Any, where: str = "value") -> Any:
    """The static value for JSON data written by :func:`encode`."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v, where) for v in data]
    if isinstance(data, dict) and len(data) == 1:
        (tag, body), = data.items()
        if tag == "$tuple" and isinstance(body, list):
            return tuple(decode(v, where) for v in body)
        if tag == "$slice" and isinstance(body, list) and len(body) == 3:
            parts = [decode(v, where) for v in body]
            if all(p is None or (isinstance(p, int) and not isinstance(p, bool)) for p in parts):
                return slice(*parts)
        if tag == "$float" and body in ("nan", "inf", "-inf"):
            return float(body)
        if tag == "$complex" and isinstance(body, list) and len(body) == 2:
            return complex(decode(body[0], where), decode(body[1], where))
        if tag == "$ellipsis" and body is None:
            return Ellipsis
        if tag == "$dict" and isinstance(body, dict):
            return {k: decode(v, where) for k, v in body.items()}
    raise GraphFormatError(f"{where}: unrecognised value {json.dumps(data)[:80]}")


# --- the networkx view -----------------------------------------------------------------------


def node_attributes(node: Node, sources: dict | None = None) -> dict[str, Any]:
    """The JSON attributes of a node in ``graph.nx`` (``sources``: a cache of source strings,
    shared by the many nodes one line of a loop makes)."""
    if sources is None:
        source = format_source(node.source)
    else:
        source = sources.get(node.source)
        if source is None:
            source = sources[node.source] = format_source(node.source)
    attrs = {
        "kind": node.kind,
        "op": node.op,
        "shape": None if node.shape is None else list(node.shape),
        "dtype": dtype_name(node.dtype),
        "params": {k: encode(v) for k, v in node.params.items()} if node.params else {},
        "source": source,
        "order": node.index,
        "scope": node.scope,
        "name": node.name,
    }
    if len(node.args) > 1 or (node.args and not isinstance(node.args[0], Node)):
        literals = {str(i): encode(a) for i, a in enumerate(node.args)
                    if not isinstance(a, Node)}
        if literals:
            attrs["literals"] = literals
    return attrs


def violation_links(graph: CapturedGraph) -> list[tuple[int, int, str]]:
    """Edges that place violations: ``(u, v, key)`` with key ``after``, ``reads`` or ``affects``.

    ``after``: the last node before the violation in program order; ``reads``: the tensor a data
    read read; ``affects``: for a seed violation, each random op recorded after it (until the next
    seed violation); for an unseeded-random warning, every random op of the graph.
    """
    links = []
    nodes = graph.nodes
    random_ops = [n.index for n in nodes if n.kind == "op" and n.op.startswith("random_")]
    for n in nodes:
        if n.kind != "violation":
            continue
        before = next((m for m in reversed(nodes[:n.index]) if m.kind != "violation"), None)
        if before is not None:
            links.append((before.index, n.index, "after"))
        target = n.params.get("target")
        if isinstance(target, int):
            links.append((target, n.index, "reads"))
        if n.op == "seed":
            later_seed = next((m.index for m in nodes[n.index + 1:]
                               if m.kind == "violation" and m.op == "seed"), len(nodes))
            links += [(n.index, r, "affects") for r in random_ops if n.index < r < later_seed]
        elif n.op == "unseeded_random":
            links += [(n.index, r, "affects") for r in random_ops]
    return links


def to_networkx(graph: CapturedGraph) -> nx.MultiDiGraph:
    """Build the ``networkx.MultiDiGraph`` of a graph (one edge per operand, keyed by position)."""
    g = nx.MultiDiGraph(inputs=graph.inputs, outputs=graph.outputs, rng_seed=graph.rng_seed)
    sources: dict[tuple, str | None] = {}

    g.add_nodes_from((n.index, node_attributes(n, sources)) for n in graph.nodes)
    g.add_edges_from((a.index, n.index, pos, {"kind": "operand"})
                     for n in graph.nodes for pos, a in enumerate(n.args) if type(a) is Node)
    g.add_edges_from((u, v, key, {"kind": key}) for u, v, key in violation_links(graph))
    return g


# --- save -------------------------------------------------------------------------------------


def _node_json(node: Node) -> dict[str, Any]:
    source = None
    if node.source is not None:
        file, line, func = node.source
        source = {"file": file, "line": line, "function": func}
    return {
        "index": node.index,
        "kind": node.kind,
        "op": node.op,
        "args": [{"ref": a.index} if isinstance(a, Node) else {"lit": encode(a)}
                 for a in node.args],
        "params": {k: encode(v) for k, v in node.params.items()},
        "shape": None if node.shape is None else list(node.shape),
        "dtype": dtype_name(node.dtype),
        "source": source,
        "scope": node.scope,
        "name": node.name,
    }


def constants_path(path: str) -> str:
    """The ``.npz`` that goes with a graph file."""
    root, ext = os.path.splitext(path)
    return (root if ext == ".json" else path) + ".npz"


def save(graph: CapturedGraph, path: str) -> None:
    """Write the graph to ``path`` (JSON) and its constants to :func:`constants_path`."""
    path = os.fspath(path)
    npz = constants_path(path)
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "complete": graph.complete,
        "rng_seed": graph.rng_seed,
        "constants": os.path.basename(npz),
        "nodes": [_node_json(n) for n in graph.nodes],
    }
    arrays = {f"c{i}": np.asarray(v) for i, v in graph.constant_values.items()}
    with open(npz, "wb") as f:
        np.savez(f, **arrays)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, allow_nan=False)


# --- load ------------------------------------------------------------------------------------


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise GraphFormatError(f"{where}: {what}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _dtype(value: Any, where: str) -> np.dtype | None:
    if value is None:
        return None
    _need(isinstance(value, str), where, f"dtype must be a string, got {value!r}")
    try:
        dt = np.dtype(value)
    except TypeError:
        raise GraphFormatError(f"{where}: unknown dtype {value!r}") from None
    _need(dt.kind in "biufc" and dt.name == value, where,
          f"dtype {value!r} is not a numeric dtype name")
    return dt


def _shape(value: Any, where: str) -> tuple | None:
    if value is None:
        return None
    _need(isinstance(value, list) and all(_is_int(s) and s >= 0 for s in value), where,
          f"shape must be a list of non-negative integers, got {json.dumps(value)[:60]}")
    return tuple(value)


def _source(value: Any, where: str) -> tuple | None:
    if value is None:
        return None
    _need(isinstance(value, dict) and isinstance(value.get("file"), str)
          and _is_int(value.get("line")) and isinstance(value.get("function"), str), where,
          "source must be {file: str, line: int, function: str}")
    return (value["file"], value["line"], value["function"])


def _build_node(i: int, raw: Any, nodes: list[Node]) -> Node:
    where = f"node {i}"
    _need(isinstance(raw, dict), where, "must be an object")
    _need(raw.get("index") == i, where, f"has index {raw.get('index')!r}, expected {i} "
                                        "(nodes must be listed in program order)")
    kind = raw.get("kind")
    _need(kind in KINDS, where, f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    op = raw.get("op")
    where = f"node %{i} ({op or kind})"
    if kind == "op":
        _need(isinstance(op, str) and op in ops.OPS, where, f"unknown op {op!r}")
    elif kind == "violation":
        _need(op in VIOLATION_LEVELS, where, f"unknown violation kind {op!r}")
    else:
        _need(op is None, where, f"a {kind} node has no op")
    args_raw = raw.get("args", [])
    _need(isinstance(args_raw, list), where, "args must be a list")
    args: list[Any] = []
    for pos, a in enumerate(args_raw):
        _need(isinstance(a, dict) and len(a) == 1 and ("ref" in a or "lit" in a), where,
              f"argument {pos} must be {{'ref': index}} or {{'lit': value}}")
        if "ref" in a:
            ref = a["ref"]
            _need(_is_int(ref) and 0 <= ref, where, f"argument {pos} refers to {ref!r}")
            _need(ref < i, where, f"argument {pos} refers to %{ref}, which is not earlier in "
                                  "program order (a cycle, a missing node or reordered nodes)")
            args.append(nodes[ref])
        else:
            args.append(decode(a["lit"], f"{where} argument {pos}"))
    params_raw = raw.get("params", {})
    _need(isinstance(params_raw, dict), where, "params must be an object")
    params = {k: decode(v, f"{where} param {k!r}") for k, v in params_raw.items()}
    name = raw.get("name")
    _need(name is None or isinstance(name, str), where, "name must be a string or null")
    scope = raw.get("scope", "")
    _need(isinstance(scope, str), where, "scope must be a string")
    return Node(i, kind, op, tuple(args), params, _shape(raw.get("shape"), where),
                _dtype(raw.get("dtype"), where), _source(raw.get("source"), where), scope, name)


def _load_constants(path: str, doc: dict, graph: CapturedGraph) -> None:
    wanted = [n for n in graph.nodes if n.kind == "constant"]
    if not wanted:
        return
    name = doc.get("constants")
    _need(isinstance(name, str) and name and os.path.basename(name) == name
          and name not in (".", ".."), "graph file",
          f"'constants' must be a plain file name next to the graph, got {name!r}")
    npz = os.path.join(os.path.dirname(os.path.abspath(path)), name)
    try:
        with np.load(npz, allow_pickle=False) as data:
            for node in wanted:
                key = f"c{node.index}"
                _need(key in data.files, f"constant %{node.index}",
                      f"its array {key!r} is absent from {name}")
                try:
                    arr = data[key]
                except ValueError as err:
                    raise GraphFormatError(f"constant %{node.index}: {name}[{key!r}] cannot be "
                                           f"loaded safely: {err}") from None
                _need(arr.dtype.kind in "biufc", f"constant %{node.index}",
                      f"array of dtype {arr.dtype} is not numeric")
                _need(arr.shape == node.shape and arr.dtype == node.dtype,
                      f"constant %{node.index}", f"array is {arr.dtype}{list(arr.shape)} but the "
                      f"node says {node.dtype}{list(node.shape or ())}")
                graph.constant_values[node.index] = arr
    except GraphFormatError:
        raise
    except FileNotFoundError:
        raise GraphFormatError(f"constants file {npz} is missing") from None
    except Exception as err:  # zipfile, zlib and format errors come in many types
        raise GraphFormatError(f"constants file {npz} is corrupt or truncated: "
                               f"{type(err).__name__}: {err}") from None


def load(path: str) -> CapturedGraph:
    """Load a graph written by ``graph.save(path)``.

    Raises:
        GraphFormatError: the file is not a valid capviz graph (the message says why).
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise GraphFormatError(f"no graph file at {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise GraphFormatError(f"{path} is not valid JSON (truncated or corrupt?): {err}") \
            from None
    except RecursionError:
        raise GraphFormatError(f"{path} nests too deeply to be a capviz graph") from None
    try:
        return _from_doc(path, doc)
    except GraphFormatError:
        raise
    except GraphVerifyError as err:
        raise GraphFormatError(f"{path} describes an inconsistent graph: {err}") from None
    except Exception as err:  # untrusted input: whatever broke, the file is what is wrong
        raise GraphFormatError(f"{path} is not a valid capviz graph: "
                               f"{type(err).__name__}: {err}") from None


def _from_doc(path: str, doc: Any) -> CapturedGraph:
    _need(isinstance(doc, dict) and doc.get("format") == FORMAT, "graph file",
          f"not a capviz graph (expected \"format\": \"{FORMAT}\")")
    _need(doc.get("version") == VERSION, "graph file",
          f"version {doc.get('version')!r} is not supported (this capviz reads {VERSION})")
    raw_nodes = doc.get("nodes")
    _need(isinstance(raw_nodes, list), "graph file", "'nodes' must be a list")
    seed = doc.get("rng_seed")
    _need(seed is None or (_is_int(seed) and 0 <= seed < 2**64), "graph file",
          f"rng_seed must be null or an integer in [0, 2**64), got {seed!r}")
    graph = CapturedGraph()
    graph.rng_seed = seed
    graph.complete = bool(doc.get("complete", True))
    for i, raw in enumerate(raw_nodes):
        graph.nodes.append(_build_node(i, raw, graph.nodes))
    for n in graph.nodes:
        if n.kind == "violation":
            level = n.params.get("level")
            message, call = n.params.get("message"), n.params.get("call")
            _need(level == VIOLATION_LEVELS[n.op] and isinstance(message, str)
                  and isinstance(call, str), f"violation %{n.index}",
                  "needs params level, message and call")
            graph.violation_records.append(Violation(n.op, level, message, call, n.source,
                                                     n.index))
    _load_constants(path, doc, graph)
    from capviz.verify import verify_graph

    verify_graph(graph)
    return graph
