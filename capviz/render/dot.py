"""Build a styled ``graphviz.Digraph`` from a graph, with no subprocess.

Node ids come from program order (``n3``), clusters from sorted scope paths, so the same graph
always gives the same DOT text. Every string that comes from the user (names, scopes, params,
messages, file names) is escaped: HTML-escaped inside the HTML-like labels, and backslash-escaped
and marked non-HTML in plain attributes, so no name can break the DOT or inject markup.
"""

from __future__ import annotations

import html
from typing import Any

import graphviz

from capviz.ir import CapturedGraph, Node
from capviz.printing import index_text, literal_text, type_text
from capviz.serialize import violation_links

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
    "after": {"style": "dashed", "color": "#9ca3af", "arrowhead": "none"},
    "reads": {"style": "dotted", "color": "#dc2626"},
    "affects": {"style": "dashed", "color": "#dc2626"},
}
MARK_TEXT = {"nonfinite": "first NaN/Inf", "diverged": "first divergence"}


def attr(text: Any) -> graphviz.quoting.NoHtml:
    """A plain DOT attribute value: backslashes doubled (quotes are escaped by graphviz)."""
    clean = "".join(c if c >= " " or c == "\n" else " " for c in str(text))
    return graphviz.nohtml(clean.replace("\\", "\\\\").replace("\n", "\\n"))


def esc(text: Any) -> str:
    """Text for an HTML-like label."""
    return html.escape(str(text), quote=True).replace("\n", "<br/>")


def _label(title: str, *lines: str, bold: bool = True) -> str:
    head = f"<b>{esc(title)}</b>" if bold else esc(title)
    rest = "".join(f'<br/><font point-size="10">{esc(line)}</font>' for line in lines if line)
    return f"<{head}{rest}>"


def node_label(node: Node) -> str:
    """The HTML-like label of a node."""
    tt = type_text(node)
    if node.kind == "input":
        return _label(node.name if node.name is not None else "undeclared input", tt)
    if node.kind == "constant":
        return _label(node.name or "constant", tt, bold=bool(node.name))
    if node.kind == "output":
        return _label(f"output {node.name}", tt)
    if node.kind == "violation":
        return _label(f"{node.params.get('level', 'error')}: {node.op}",
                      node.params.get("call", ""))
    if node.op == "getitem":
        return _label(f"getitem{index_text(node.params['index'])}", tt)
    literals = [literal_text(a) for a in node.args if not isinstance(a, Node)]
    title = node.op + (f" {' '.join(literals)}" if literals else "")
    return _label(title, tt)


def node_tooltip(node: Node, graph: CapturedGraph) -> str:
    """Tooltip text: source line, params, statistics, violation message."""
    parts = []
    if node.source is not None:
        parts.append(f"{node.source[0]}:{node.source[1]} in {node.source[2]}")
    if node.kind == "violation":
        parts.append(node.params.get("message", ""))
    else:
        for k, v in node.params.items():
            parts.append(f"{k} = {literal_text(v)}")
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
    if node.kind == "op" and node.op.startswith("random_"):
        return STYLE["random"]
    return STYLE[node.kind]


def _scope_prefixes(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def placements(graph: CapturedGraph) -> list[str]:
    """The scope each node is drawn in: its own, except for constants, which sit in the deepest
    scope shared by all their users (a weight drawn next to the layer that reads it). Inputs stay
    where they were declared: they are the graph's boundary."""
    users = graph.users()
    out = []
    for n in graph.nodes:
        scope = n.scope
        if n.kind == "constant" and users.get(n.index):
            scopes = [u.scope.split("/") if u.scope else [] for u in users[n.index]]
            common: list[str] = []
            for parts in zip(*scopes):
                if any(p != parts[0] for p in parts):
                    break
                common.append(parts[0])
            scope = "/".join(common)
        out.append(scope)
    return out


def choose_collapsed(graph: CapturedGraph, collapse: Any,
                     placed: list[str] | None = None) -> set[str]:
    """Scope paths to draw collapsed: a list given, or (an int) enough of the largest scopes to
    bring the drawn node count under that budget."""
    if not collapse and collapse != 0:
        return set()
    if not isinstance(collapse, int) or isinstance(collapse, bool):
        return {str(s) for s in collapse}
    budget = collapse
    placed = placed if placed is not None else placements(graph)
    per_scope: dict[str, int] = {}
    for n, scope in zip(graph.nodes, placed):
        if scope and n.op != "unpack":
            per_scope[scope] = per_scope.get(scope, 0) + 1
    sizes: dict[str, int] = {}
    for scope, count in per_scope.items():
        for p in _scope_prefixes(scope):
            sizes[p] = sizes.get(p, 0) + count
    drawn = len([n for n in graph.nodes if n.op != "unpack"])
    chosen: set[str] = set()
    depth = 1
    while drawn > budget:
        level = sorted((p for p in sizes if p.count("/") == depth - 1
                        and not any(p.startswith(c + "/") or p == c for c in chosen)),
                       key=lambda p: (-sizes[p], p))
        if not level:
            break
        for p in level:
            if drawn <= budget:
                break
            chosen.add(p)
            drawn -= sizes[p] - 1
        depth += 1
    return chosen


def _collapsed_of(scope: str, collapsed: set[str]) -> str | None:
    if not scope or not collapsed:
        return None
    for p in _scope_prefixes(scope):
        if p in collapsed:
            return p
    return None


def to_dot(graph: CapturedGraph, edge_labels: bool = False, collapse: Any = None,
           rankdir: str = "TB", title: str | None = None) -> graphviz.Digraph:
    """The graph as a styled ``graphviz.Digraph``.

    Args:
        graph: the graph.
        edge_labels: label operand edges with their shape and dtype.
        collapse: scope paths to draw as one node each, or an int node budget above which the
            largest scopes collapse.
        rankdir: Graphviz ``rankdir`` (``TB`` or ``LR``).
        title: a graph label.
    """
    dot = graphviz.Digraph("capviz", format="svg")
    dot.attr(rankdir=attr(rankdir), fontname="Helvetica")
    dot.attr("node", fontname="Helvetica", fontsize="12")
    dot.attr("edge", fontname="Helvetica", fontsize="9", color="#6b7280")
    if title:
        dot.attr(label=attr(title), labelloc="t")
    placed = placements(graph)
    collapsed = choose_collapsed(graph, collapse, placed)
    scope_ids = {p: f"s{i}" for i, p in enumerate(sorted(collapsed))}
    collapsed_of: dict[str, str | None] = {}
    rep: dict[int, str] = {}
    members: dict[str, list[Node]] = {}
    for n, scope in zip(graph.nodes, placed):
        if scope not in collapsed_of:
            collapsed_of[scope] = _collapsed_of(scope, collapsed)
        c = collapsed_of[scope]
        if c is not None:
            members.setdefault(c, []).append(n)
            rep[n.index] = scope_ids[c]
        elif n.op == "unpack":
            rep[n.index] = rep[n.args[0].index]
        else:
            rep[n.index] = f"n{n.index}"
    marked = set(graph.marks.values())
    users = graph.users()
    copies = _constant_copies(graph, users, rep, placed)
    statements: dict[str, list[tuple[str, dict]]] = {}
    for n in graph.nodes:
        if n.op == "unpack" or rep[n.index] != f"n{n.index}":
            continue
        attrs = dict(_style(n))
        if n.index in marked:
            attrs.update(STYLE["marked"])
        attrs.update(label=node_label(n), tooltip=attr(node_tooltip(n, graph)),
                     **{"class": f"capviz-{n.kind}"})
        for scope, name in copies.get(n.index, {placed[n.index]: f"n{n.index}"}).items():
            statements.setdefault(scope, []).append((name, dict(attrs, id=name)))
    for path in sorted(members):
        nodes = members[path]
        ops_count = sum(1 for n in nodes if n.kind == "op" and n.op != "unpack")
        bad = [n for n in nodes if n.kind == "violation"]
        inside = {n.index for n in nodes}
        ins = sorted({type_text(a) for n in nodes for _, a in n.operands if a.index not in inside})
        outs = sorted({type_text(n) for n in nodes
                       if any(u.index not in inside for u in users.get(n.index, ()))})
        lines = [f"{ops_count} ops", "in: " + ", ".join(ins[:3]), "out: " + ", ".join(outs[:3])]
        attrs = dict(STYLE["scope"])
        if bad:
            level = "error" if any(n.params.get("level") == "error" for n in bad) else "warning"
            attrs.update({k: v for k, v in STYLE[level].items() if k != "shape"})
            lines.append(f"{len(bad)} violation{'s' if len(bad) > 1 else ''}")
        if inside & marked:
            attrs.update(STYLE["marked"])
        sid = rep[nodes[0].index]
        attrs.update(label=_label(path, *lines), id=sid, **{"class": "capviz-scope"},
                     tooltip=attr(f"collapsed scope {path}"))
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        statements.setdefault(parent, []).append((sid, attrs))
    _emit_scopes(dot, statements)
    seen_edges: set[tuple[str, str]] = set()
    for n in graph.nodes:
        if n.op == "unpack":
            continue
        for _, a in n.operands:
            u, v = rep[a.index], rep[n.index]
            if a.index in copies:
                if v.startswith("s"):
                    continue  # a shared constant read inside a collapsed scope: part of it
                u = copies[a.index][placed[n.index]]
            if u == v:
                continue
            if u.startswith("s") or v.startswith("s"):
                if (u, v) in seen_edges:
                    continue  # one edge per pair into or out of a collapsed scope
                seen_edges.add((u, v))
            extra: dict[str, Any] = {}
            if edge_labels:
                extra["label"] = attr(type_text(a))
            dot.edge(u, v, **extra)
    for u, v, key in violation_links(graph):
        ru, rv = rep[u], rep[v]
        if ru != rv:
            dot.edge(ru, rv, **EDGE_STYLE[key])
    return dot


def _constant_copies(graph: CapturedGraph, users: dict[int, list[Node]], rep: dict[int, str],
                     placed: list[str]) -> dict[int, dict[str, str]]:
    """Constants read in several scopes are drawn once per scope that reads them (TensorBoard
    does the same): an edge from one shared weight to every layer would cross the whole drawing
    and cost Graphviz minutes. Reads inside collapsed scopes are part of the collapsed node.
    Returns ``{constant index: {scope: drawn id}}`` for such constants only."""
    out: dict[int, dict[str, str]] = {}
    for n in graph.nodes:
        if n.kind != "constant" or rep[n.index] != f"n{n.index}":
            continue
        readers = users.get(n.index, ())
        scopes: list[str] = []
        absorbed = False
        for u in readers:
            if rep[u.index].startswith("s"):
                absorbed = True
            elif placed[u.index] not in scopes:
                scopes.append(placed[u.index])
        if len(scopes) > 1 or absorbed:
            out[n.index] = {scope: f"n{n.index}" if k == 0 else f"n{n.index}_{k}"
                            for k, scope in enumerate(scopes)}
    return out


def _emit_scopes(dot: graphviz.Digraph, statements: dict[str, list[tuple[str, dict]]]) -> None:
    paths = sorted(p for p in statements if p)
    all_paths = sorted({q for p in paths for q in _scope_prefixes(p)})
    ids = {p: i for i, p in enumerate(all_paths)}

    def emit(target: graphviz.Digraph, path: str) -> None:
        for name, attrs in statements.get(path, []):
            target.node(name, **attrs)
        children = [p for p in all_paths if p.rsplit("/", 1)[0] == path and "/" in p] \
            if path else [p for p in all_paths if "/" not in p]
        for child in children:
            with target.subgraph(name=f"cluster_{ids[child]}") as sub:
                sub.attr(label=attr(child.rsplit("/", 1)[-1]), style="rounded,dashed",
                         color="#94a3b8", fontcolor="#475569", tooltip=attr(child))
                emit(sub, child)

    emit(dot, "")
