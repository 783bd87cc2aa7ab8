"""The data the interactive view draws: a graph as compact, column-wise JSON.

The browser side (``static/view.js``) lays out and draws it; nothing here depends on the page.
Strings (labels, types, source lines, scope names) are interned in one table and referred to by
position; operands are flat: a count per node (``argc``) and their distances back in program
order (``argd``), so a 50,000-op GPT is about 1.7 MB of JSON, in flat arrays that parse fast.
Every string is data, never markup: the page sets it with ``textContent``, and
:func:`script_json` makes the JSON safe to embed in a ``<script>`` element.

Constants that are read are annotations on their readers (as in :mod:`capviz.render.model`),
listed in ``aside`` with the nodes read by more than ``RULES.aside_degree`` ops, whose readers
show a stub instead of an edge. What the view folds is not decided in the page: ``scopes`` is
the outline of :func:`capviz.render.model.outline` (scopes, ``name × N`` folds, program-order
groups; one box each: title, parent, kind) with the boxes :func:`~capviz.render.model.open_levels`
opens at first, and ``scope`` gives each node's box, so the view and the static SVG fold a graph
the same way (thresholds: :data:`capviz.render.rules.RULES`).
"""

from __future__ import annotations

import json
import linecache
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from capviz.backends.registry import host_array
from capviz.core.ir import Graph, Node
from capviz.core.stats import value_stats
from capviz.io.printing import constant_text, guard_text, index_text, literal_text, type_text
from capviz.render.links import violation_edges
from capviz.render.model import (
    collector_paused,
    open_levels,
    outline,
    placements,
    readers,
    scope_tree,
)
from capviz.render.rules import KIND_STYLES, RULES, kind_style

KIND_CODES = {name: code for code, name in enumerate(KIND_STYLES)}  # input 0 ... violation 4
BOX_CODES = {"root": 0, "scope": 1, "fold": 2, "group": 4}
HIST_BINS = 16


def node_title(node: Node, value: Any = None) -> str:
    """The node's first label line: op with its literals, the input/output name, or a constant
    as it shows on its readers (``eps = 1e-05``, ``w float32[8,8]``)."""
    if node.kind == "input":
        return node.name if node.name is not None else "undeclared input"
    if node.kind == "constant":
        return constant_text(node, value)
    if node.kind == "output":
        return f"{'state' if 'state' in node.params else 'output'} {node.name}"
    if node.kind == "state":
        return f"state {node.name or ''}"
    if node.kind == "violation":
        return f"{node.params.get('level', 'error')}: {node.op}"
    if node.kind == "guard":
        return f"guard {guard_text(node)}"
    if node.op == "getitem":
        return f"getitem{index_text(node.params['index'])}"
    literals = [literal_text(a) for a in node.args if not isinstance(a, Node)]
    return (node.op or node.kind) + (f" {' '.join(literals)}" if literals else "")


def _params_text(node: Node) -> str:
    if node.kind == "violation":
        return node.params.get("message", "")
    return "\n".join(f"{k} = {literal_text(v)}" for k, v in node.params.items()
                     if k != "index")


def _source_text(node: Node) -> tuple[str, str]:
    """``("model.py:12 in forward", "y = x @ w")``; empty strings when unknown."""
    if node.source is None:
        return "", ""
    file, line, func = node.source
    code = linecache.getline(file, line).strip() if isinstance(line, int) else ""
    return f"{os.path.basename(str(file))}:{line} in {func}", code


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


FIRST_VALUES = 8  # the first values of a value shown in its panel


def _number(x: Any) -> Any:
    """A value as JSON can hold it: ints and finite floats as numbers, NaN/Inf as text."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (complex, np.complexfloating)):
        return str(complex(x))
    x = float(x)
    return x if math.isfinite(x) else str(x)


def value_summary(value: Any) -> list | None:
    """``[min, max, mean, std, nan, inf, [histogram counts], lo, hi, [first values]]`` of an
    array, or ``None`` for non-numeric or empty values (non-finite statistics become ``null``;
    non-finite first values ``"nan"``, ``"inf"``)."""
    host = host_array(value)
    stats = value_stats(host)
    if stats is None:
        return None
    arr = host.astype(np.float64)
    finite = arr[np.isfinite(arr)]
    hist: list[int] = []
    lo = hi = None
    if finite.size:
        counts, edges = np.histogram(finite, bins=HIST_BINS)
        hist = [int(c) for c in counts]
        lo, hi = float(edges[0]), float(edges[-1])
    first = [_number(v) for v in host.reshape(-1)[:FIRST_VALUES].tolist()]
    return [_finite(stats.min), _finite(stats.max), _finite(stats.mean), _finite(stats.std),
            stats.nan, stats.inf, hist, lo, hi, first]


def _stats_summary(stats: Any) -> list | None:
    fields = [getattr(stats, k, None) if not isinstance(stats, Mapping) else stats.get(k)
              for k in ("min", "max", "mean", "std", "nan", "inf")]
    if any(f is None for f in fields):
        return None
    return [_finite(float(f)) for f in fields[:4]] + [int(fields[4]), int(fields[5]), [],
                                                      None, None]


class _Strings:
    def __init__(self) -> None:
        self.table: list[str] = [""]
        self.ids: dict[str, int] = {"": 0}

    def __call__(self, text: str) -> int:
        found = self.ids.get(text)
        if found is None:
            found = self.ids[text] = len(self.table)
            self.table.append(text)
        return found


def view_data(graph: Graph, values: Mapping[Any, Any] | None = None,
              title: str | None = None, budget: int = RULES.budget,
              live: bool = False, metric: Any = None,
              canvas_at: int = RULES.canvas_at,
              worker_at: int = RULES.worker_at) -> dict[str, Any]:
    """The graph as the view's JSON-ready dict.

    Args:
        graph: the graph.
        values: kept values by node index (``executor.values``) for the value panel; without
            them, ``graph.stats`` (``compute_stats``) is shown when present.
        title: a heading for the view.
        budget: how many boxes the view draws at first; whole levels open while they fit.
        live: lay out for streaming (append-only order, nothing moves when nodes are added;
            identical blocks are not folded: they would jump into a fold as they arrive).
        metric: colour nodes by a number per node, with a legend: ``"bytes"`` (each op's
            output size), or ``(name, {node or index: number})`` (a profiled replay's time
            per node, the error against another backend per node...).
        canvas_at: past this many drawn nodes the view draws on a canvas.
        worker_at: a graph of more nodes is laid out in a Web Worker.
    """
    with collector_paused():  # many small objects next to a large graph: see model.build
        data = _view_data(graph, values, title, budget, live)
        data["metric"] = metric_data(graph, metric)
        data["canvas_at"] = int(canvas_at)
        data["worker_at"] = int(worker_at)
        return data


def metric_data(graph: Graph, metric: Any) -> dict[str, Any] | None:
    """``{"name": ..., "values": {index: number}}`` for the view's colouring, or ``None``."""
    if metric is None:
        return None
    if metric == "bytes":
        per_node = {n.index: float(np.prod(n.shape, dtype=np.float64)) * np.dtype(n.dtype).itemsize
                    for n in graph.nodes if n.kind == "op" and n.shape is not None
                    and n.dtype is not None}
        return {"name": "output bytes", "values": {str(k): v for k, v in per_node.items()}}
    if isinstance(metric, tuple) and len(metric) == 2 and isinstance(metric[1], Mapping):
        name, numbers = metric
        out = {}
        for key, number in numbers.items():
            number = float(number)
            if math.isfinite(number):
                out[str(graph.node(key).index)] = number
        return {"name": str(name), "values": out}
    raise TypeError(f"metric must be 'bytes' or (name, {{node: number}}), got {metric!r}")


def _drawn_as(node: Node) -> Node:
    """The node an edge from ``node`` starts at: an unpack is drawn as the op it unpacks (as in
    the static SVG), so an output of ``np.split`` is an edge from the split."""
    return node.args[0] if node.op == "unpack" else node


def _view_data(graph: Graph, values: Mapping[Any, Any] | None, title: str | None,
               budget: int, live: bool) -> dict[str, Any]:
    strings = _Strings()
    users_of = readers(graph)
    placed = placements(graph, users_of)
    boxes = outline(graph, scope_tree(graph, placed, users_of), placed, fold=not live)
    opened = open_levels(boxes, budget)

    kinds = dict(KIND_CODES)  # a kind rules.py does not style yet is drawn as an op
    kind, label, types, source, code, params = [], [], [], [], [], []
    argc: list[int] = []  # operands per node, then their distances back in program order
    argd: list[int] = []
    for n in graph.nodes:
        kind.append(kinds.setdefault(n.kind, len(kinds)))
        label.append(strings(node_title(n, graph.constant_values.get(n.index))))
        types.append(strings(type_text(n)))
        where, line = _source_text(n)
        source.append(strings(where))
        code.append(strings(line))
        params.append(strings(_params_text(n)))
        operands = n.operands
        argc.append(len(operands))
        argd.extend(n.index - _drawn_as(a).index for _, a in operands)
    unpacks = [n.index for n in graph.nodes if n.op == "unpack"]  # drawn as their op, as in the SVG
    aside = []  # drawn as a stub on each reader, not as an edge: read constants, high degree
    for n in graph.nodes:
        users = users_of.get(n.index, ())
        if len(users) > RULES.aside_degree or (n.kind == "constant" and users):
            aside.append(n.index)
    # a violation links to what it affects (the tensor a data read read, the random ops a seed
    # changes, the readers of a frozen draw), never by program order: an arrow from the node
    # before it reads as a cause (capviz.render.links)
    links = [[u, v] for u, v, key in violation_edges(graph) if key in ("reads", "affects")]
    summaries: dict[str, list] = {}
    if values is not None:
        for key in values:
            index = graph.node(key).index
            summary = value_summary(values[key])
            if summary is not None:
                summaries[str(index)] = summary
    else:
        for index, stats in graph.stats.items():
            summary = _stats_summary(stats)
            if summary is not None:
                summaries[str(index)] = summary
    for index, value in graph.constant_values.items():  # a constant's panel: stats, values
        if str(index) not in summaries:
            summary = value_summary(value)
            if summary is not None:
                summaries[str(index)] = summary
    sources = []  # where the first NaN came from: inputs and constants holding NaN/Inf
    if "nonfinite" in graph.marks:
        sources = sorted({int(k) for k, v in summaries.items()
                          if graph.nodes[int(k)].kind in ("input", "constant") and (v[4] or v[5])}
                         | ({int(graph.marks["nonfinite_source"])}
                            if "nonfinite_source" in graph.marks else set()))
    violations = [{"node": v.order, "level": v.level, "kind": v.kind, "call": v.call,
                   "message": v.message} for v in graph.violation_records]
    scopes = {"name": [strings(b.title) for b in boxes.boxes],
              "parent": [b.parent for b in boxes.boxes],
              "kind": [BOX_CODES[b.kind] for b in boxes.boxes],
              "open": sorted(opened - {0})}
    return {
        "version": 2, "title": title or "", "live": live, "kinds": list(kinds),
        "shapes": [kind_style(k).shape for k in kinds],
        "complete": graph.complete, "strings": strings.table,
        "kind": kind, "label": label, "type": types, "source": source, "code": code,
        "params": params, "scope": boxes.node_box, "argc": argc, "argd": argd,
        "scopes": scopes, "aside": aside, "unpacks": unpacks, "links": links,
        "violations": violations,
        "marks": {k: _drawn_as(graph.nodes[int(v)]).index for k, v in graph.marks.items()},
        "values": summaries,
        "sources": sources,
    }


def script_json(data: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``<`` (so no ``</script>`` or
    ``<!--``), no ``>``/``&``, and no U+2028/U+2029, each written as a ``\\u`` escape."""
    from capviz.render.escape import json_surrogates

    text = json_surrogates(json.dumps(data, separators=(",", ":"), ensure_ascii=False,
                                      allow_nan=False))  # a file name that is not UTF-8
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
