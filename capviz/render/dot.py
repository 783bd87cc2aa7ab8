"""Build a styled ``graphviz.Digraph`` from a graph, with no subprocess.

What is drawn (collapsed and folded scopes, constants as annotations, stubs for high-degree
nodes) is decided by :mod:`capviz.render.model`; this module turns that model into DOT text.
Ids come from program order (``n3`` for node 3, ``s0``/``f0``/``c0``/``t0`` for boxes and
stubs in order of appearance), so the same graph always gives the same DOT text. Every
string that comes from the user (names, scopes, params, messages, file names) is escaped:
HTML-escaped inside the HTML-like labels, and backslash-escaped and marked non-HTML in plain
attributes, so no name can break the DOT or inject markup.
"""

from __future__ import annotations

import html
from typing import Any

import graphviz

from capviz import ops
from capviz.core.ir import Graph, Node
from capviz.io.printing import guard_text, index_text, short_text, type_text
from capviz.render.escape import printable
from capviz.render.model import Item, Model, build, placements
from capviz.render.rules import kind_style

STYLE = {
    "input": {"shape": "box", "style": "rounded,filled", "fillcolor": "#dbeafe",
              "color": "#1d4ed8"},
    "constant": {"shape": "box", "style": "filled", "fillcolor": "#f3f4f6", "color": "#6b7280"},
    "op": {"shape": "box", "style": "rounded,filled", "fillcolor": "#ffffff", "color": "#374151"},
    "random": {"shape": "box", "style": "rounded,filled", "fillcolor": "#ede9fe",
               "color": "#6d28d9"},
    "output": {"shape": "box", "style": "rounded,filled,bold", "fillcolor": "#dcfce7",
               "color": "#15803d"},
    "error": {"shape": "octagon", "style": "filled,bold", "fillcolor": "#fee2e2",
              "color": "#dc2626", "fontcolor": "#991b1b", "penwidth": "2.5"},
    "warning": {"shape": "octagon", "style": "filled,bold", "fillcolor": "#fef3c7",
                "color": "#d97706", "fontcolor": "#92400e", "penwidth": "2"},
    "scope": {"shape": "box3d", "style": "filled", "fillcolor": "#f1f5f9", "color": "#475569"},
    "marked": {"color": "#dc2626", "penwidth": "3", "fillcolor": "#fecaca"},
}
EDGE_STYLE = {
    "after": {"style": "invis"},  # places a violation where it happened; never drawn: it would
    # read as a cause (capviz.render.links)
    "reads": {"style": "dotted", "color": "#dc2626"},
    "affects": {"style": "dashed", "color": "#dc2626"},
}
MARK_TEXT = {"nonfinite": "first NaN/Inf", "diverged": "first divergence",
             "nonfinite_operand": "the non-finite operand of the first NaN/Inf",
             "nonfinite_source": "non-finite from the start (a source of the first NaN/Inf)"}


def attr(text: Any) -> graphviz.quoting.NoHtml:
    """A plain DOT attribute value: backslashes doubled (quotes are escaped by graphviz)."""
    clean = printable(str(text))
    return graphviz.nohtml(clean.replace("\\", "\\\\").replace("\n", "\\n"))


def esc(text: Any) -> str:
    """Text for an HTML-like label (control characters shown as escapes, see
    :mod:`capviz.render.escape`)."""
    return html.escape(printable(str(text)), quote=True).replace("\n", "<br/>")


def _label(title: str, *lines: str, bold: bool = True) -> str:
    head = f"<b>{esc(title)}</b>" if bold else esc(title)
    rest = "".join(f'<br/><font point-size="10">{esc(line)}</font>' for line in lines if line)
    return f"<{head}{rest}>"


def node_label(node: Node, annotations: list[str] | tuple = ()) -> str:
    """The HTML-like label of a node; ``annotations``: the constants it reads, one line each."""
    tt = type_text(node)
    if node.kind == "input":
        return _label(node.name if node.name is not None else "undeclared input", tt)
    if node.kind == "constant":
        return _label(node.name or "constant", tt, bold=bool(node.name))
    if node.kind == "output":
        return _label(f"{'state' if 'state' in node.params else 'output'} {node.name}", tt)
    if node.kind == "state":
        return _label(f"state {node.name or ''}", tt or "generator")
    if node.kind == "violation":
        return _label(f"{node.params.get('level', 'error')}: {node.op}",
                      node.params.get("call", ""))
    if node.kind == "guard":
        read, _, value = guard_text(node).partition(" == ")
        return _label(f"guard {read}", f"== {value}")
    if node.op == "getitem":
        return _label(f"getitem{index_text(node.params['index'], short=True)}", tt,
                      *annotations)
    literals = [short_text(a) for a in node.args if not isinstance(a, Node)]
    title = node.op + (f" {' '.join(literals)}" if literals else "")
    return _label(title, tt, *annotations)


def node_tooltip(node: Node, graph: Graph) -> str:
    """Tooltip text: source line, params, statistics, violation message."""
    parts = []
    if node.source is not None:
        parts.append(f"{node.source[0]}:{node.source[1]} in {node.source[2]}")
    if node.kind == "violation":
        parts.append(node.params.get("message", ""))
    else:
        for k, v in node.params.items():
            parts.append(f"{k} = {short_text(v)}")
    if node.scope:
        parts.append(f"scope {node.scope}")
    stats = graph.stats.get(node.index)
    if stats is not None:
        parts.append(stats.text() if hasattr(stats, "text") else str(stats))
    for mark, index in graph.marks.items():
        if index == node.index:
            parts.append(MARK_TEXT.get(mark, mark))
    return "\n".join(parts) or f"%{node.index}"


def _style(node: Node) -> dict[str, str]:
    if node.kind == "violation":
        return STYLE["error" if node.params.get("level") == "error" else "warning"]
    if node.kind == "op" and ops.is_random(node.op):
        return STYLE["random"]
    return STYLE.get(node.kind) or _rules_style(node.kind)


DOT_SHAPES = {"round": ("box", "rounded,filled"), "box": ("box", "filled"),
              "store": ("cylinder", "filled"), "hexagon": ("hexagon", "filled"),
              "diamond": ("diamond", "filled"), "octagon": ("octagon", "filled")}


def _rules_style(kind: str) -> dict[str, str]:
    """A node kind's style from :data:`capviz.render.rules.KIND_STYLES` (the view's too)."""
    style = kind_style(kind)
    shape, fill = DOT_SHAPES.get(style.shape, DOT_SHAPES["round"])
    return {"shape": shape, "style": fill, "fillcolor": style.fill, "color": style.stroke}


__all__ = ["choose_collapsed", "node_label", "node_tooltip", "placements", "to_dot"]


def choose_collapsed(graph: Graph, collapse: Any) -> set[str]:
    """The scope paths drawn as closed boxes (each the top of what it hides) for ``collapse``
    (a list of paths, or an int node budget); folded runs count every member."""
    if collapse is None or collapse is False:
        return set()
    model = build(graph, collapse)
    tree = model.tree
    return {p for p in tree if p and p not in model.opened and tree[p].parent in model.opened}


def to_dot(graph: Graph, edge_labels: bool = False, collapse: Any = None,
           rankdir: str = "TB", title: str | None = None) -> graphviz.Digraph:
    """The graph as a styled ``graphviz.Digraph``, drawn from the model of
    :mod:`capviz.render.model` (constants as annotations, collapsed and folded scopes,
    high-degree nodes set aside with stubs).

    Args:
        graph: the graph.
        edge_labels: label operand edges with their shape and dtype.
        collapse: scope paths to draw as one box each, or an int node budget: scopes open
            top-down while the drawn count fits. ``None`` draws every node.
        rankdir: Graphviz ``rankdir`` (``TB`` or ``LR``).
        title: a graph label.
    """
    dot = graphviz.Digraph("capviz", format="svg")
    dot.attr(rankdir=attr(rankdir), fontname="Helvetica")
    dot.attr("node", fontname="Helvetica", fontsize="12")
    dot.attr("edge", fontname="Helvetica", fontsize="9", color="#6b7280")
    if title:
        dot.attr(label=attr(title), labelloc="t")
    model = build(graph, collapse)
    marked = set(graph.marks.values())
    _emit_clusters(dot, model, lambda item: _item_statement(item, graph, marked))
    for e in model.edges:
        extra: dict[str, Any] = dict(EDGE_STYLE.get(e.kind, {}))
        if edge_labels and e.kind == "operand" and e.value is not None:
            extra["label"] = attr(type_text(e.value))
        dot.edge(e.source, e.target, **extra)
    return dot


def _item_statement(item: Item, graph: Graph, marked: set[int]) -> dict[str, Any]:
    """The DOT attributes of one drawn item."""
    if item.kind == "node":
        n = item.node
        attrs = dict(_style(n))
        if n.index in marked:
            attrs.update(STYLE["marked"])
        attrs.update(label=node_label(n, item.annotations), tooltip=attr(node_tooltip(n, graph)),
                     **{"class": f"capviz-{n.kind}"})
        return attrs
    if item.kind == "stub":
        what = _short_name(item)
        return {"shape": "box", "style": "rounded,dashed", "color": "#9ca3af",
                "fontsize": "9", "label": _label(what, bold=False), "class": "capviz-stub",
                "tooltip": attr(f"{what}: read by many ops, set aside (its node is drawn once)")}
    lines = [f"{item.ops} ops", "in: " + ", ".join(sorted(item.ins)[:3]),
             "out: " + ", ".join(sorted(item.outs)[:3])]
    attrs = dict(STYLE["scope"])
    if item.violations:
        attrs.update({k: v for k, v in STYLE[item.level or "error"].items() if k != "shape"})
        lines.append(f"{item.violations} violation{'s' if item.violations > 1 else ''}")
    if item.marked:
        attrs.update(STYLE["marked"])
    what = {"scope": f"collapsed scope {item.path}",
            "fold": f"{item.count} identical scopes, the first {item.path}",
            "chunk": f"nodes {item.title} of scope {item.path or '(top level)'}"}[item.kind]
    kind_class = "capviz-scope" if item.kind == "scope" else f"capviz-scope capviz-{item.kind}"
    attrs.update(label=_label(item.title, *lines), tooltip=attr(what), **{"class": kind_class})
    return attrs


def _short_name(item: Item) -> str:
    n = item.node
    if n is None:
        return item.title
    if n.name:
        return n.name
    return f"%{n.index} {n.op or n.kind}"


def _emit_clusters(dot: graphviz.Digraph, model: Model, statement: Any) -> None:
    """Nodes in nested ``cluster_`` subgraphs (one per open box of the outline), written
    iteratively (deep recursion in the user's program makes deep clusters), in one pass over
    items and clusters."""
    children: dict[int, list[int]] = {}
    for box, parent in model.clusters.items():
        children.setdefault(parent, []).append(box)
    members: dict[int, list[Item]] = {}
    for item in model.items:
        members.setdefault(item.parent, []).append(item)
    ids = {box: k for k, box in enumerate(model.clusters)}
    boxes = model.outline.boxes
    stack: list[tuple[bool, int]] = [(True, 0)]
    while stack:
        opening, b = stack.pop()
        if not opening:
            dot.body.append("}\n")
            continue
        if b:
            box = boxes[b]
            dot.body.append(f"subgraph cluster_{ids[b]} {{\n")
            dot.attr(label=attr(box.title), style="rounded,dashed", color="#94a3b8",
                     fontcolor="#475569", tooltip=attr(box.path or box.title),
                     **{"class": f"capviz-cluster capviz-{box.kind}"})
            stack.append((False, b))
        for item in members.get(b, ()):
            dot.node(item.id, **dict(statement(item), id=item.id))
        for child in reversed(children.get(b, ())):
            stack.append((True, child))
