"""What a picture of a graph shows, decided once for every renderer: ``{items, edges, clusters}``.

DOT/SVG (:mod:`capviz.render.dot`), the interactive view and the live view draw from a
:class:`Model`; none of them decides again what is collapsed or folded. The decisions:

- **Scope tree.** Each node sits in its ``scope`` (a constant in the deepest scope shared by
  its readers). :func:`scope_tree` builds the tree with every scope's direct nodes, children in
  program order, drawable size and a structural signature.
- **Constants and scalars are annotations** on the ops that read them, not nodes: a shared
  epsilon array or mask is one line on each reader (``w float32[8,8]``, ``eps = 1e-05``), never
  an edge across the drawing. A constant nobody reads is drawn as a node.
- **Collapse to a budget.** With an int budget the tree is opened top-down, breadth first, a
  scope at a time in program order, while the drawn count fits; everything below stays one
  collapsed box (op count, in/out types, violations).
- **Runs of identical siblings fold** into one ``name x N`` box unless the budget opens them all:
  scopes are identical when their signatures are (same ops, types and wiring, recursively), so
  12 identical blocks are recognised once.
- **Flat graphs are chunked.** A scope with more items than the budget (a graph with no
  functions and no name scopes) shows its items in program-order chunks (``%0 - %799``) of
  at least the budget each, at most half the budget of them.
- **High-degree nodes are set aside.** A drawn item that feeds more than
  :data:`ASIDE_DEGREE` other items keeps its place; each item that reads it gets a small stub
  naming it next to each reader instead of a long edge (TensorBoard does the same), which
  keeps every edge short and Graphviz fast.

Every step is linear in nodes + edges + scopes (a constant's placement is linear in its readers).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
from collections.abc import Iterator
from typing import Any

from capviz.ir import CapturedGraph, Node, dtype_name
from capviz.printing import constant_text, type_text
from capviz.serialize import violation_links

ASIDE_DEGREE = 12  # an item feeding more items than this is set aside, with stubs
MAX_ANNOTATIONS = 3  # constant lines shown on one op; more become "+N more"


# --- the scope tree ----------------------------------------------------------------------------


@dataclasses.dataclass
class ScopeInfo:
    """One scope of the tree.

    Attributes:
        path: the "/"-joined path (``""`` for the root).
        name: the last segment (``block[3]``).
        parent: the parent's path (``None`` for the root).
        depth: 0 for the root.
        children: child scope paths, in program order of their first node.
        nodes: indices of the nodes drawn directly in this scope, in program order.
        items: this scope's direct content in program order: ``("node", index)`` and
            ``("scope", path)`` entries.
        size: drawable nodes in this scope and below (constants and unpacks excluded).
        ops: op nodes in this scope and below.
        signature: a small int, equal for structurally identical scopes.
    """

    path: str
    name: str
    parent: str | None
    depth: int
    children: list[str] = dataclasses.field(default_factory=list)
    nodes: list[int] = dataclasses.field(default_factory=list)
    items: list[tuple[str, Any]] = dataclasses.field(default_factory=list)
    size: int = 0
    ops: int = 0
    signature: int = 0

    @property
    def base(self) -> str:
        """The name without its call number: ``block[3]`` -> ``block``."""
        name = self.name
        if name.endswith("]") and "[" in name:
            head, _, number = name[:-1].rpartition("[")
            if number.isdigit():
                return head
        return name


def readers(graph: CapturedGraph) -> dict[int, list[Node]]:
    """For each node index, the nodes that take it as an operand (``graph.users()``, in one
    pass over the arguments)."""
    out: dict[int, list[Node]] = {}
    for n in graph.nodes:
        for a in n.args:
            if type(a) is Node:
                got = out.get(a.index)
                if got is None:
                    out[a.index] = [n]
                else:
                    got.append(n)
    return out


def placements(graph: CapturedGraph, users: dict[int, list[Node]] | None = None) -> list[str]:
    """The scope each node is drawn in: its own, except for constants, which sit in the deepest
    scope shared by all their readers. Inputs stay where they were declared."""
    users = readers(graph) if users is None else users
    out = []
    for n in graph.nodes:
        scope = n.scope
        users_of = users.get(n.index) if n.kind == "constant" else None
        if users_of:
            first = users_of[0].scope
            common = first.split("/") if first else []
            for u in users_of[1:]:
                if not common:
                    break
                if u.scope == first:
                    continue
                parts = u.scope.split("/") if u.scope else []
                k = 0
                while k < len(common) and k < len(parts) and common[k] == parts[k]:
                    k += 1
                del common[k:]
            scope = "/".join(common)
        out.append(scope)
    return out


def scope_tree(graph: CapturedGraph, placed: list[str] | None = None,
               users: dict[int, list[Node]] | None = None) -> dict[str, ScopeInfo]:
    """Every scope of the graph, the root (``""``) first, parents before children.

    A scope's ``nodes`` are the nodes drawn as boxes: unpacks (drawn as their op) and constants
    that have readers (drawn as annotations on them) are left out.
    """
    users = readers(graph) if users is None else users
    placed = placements(graph, users) if placed is None else placed
    tree: dict[str, ScopeInfo] = {"": ScopeInfo("", "", None, 0)}
    for n, path in zip(graph.nodes, placed):
        info = tree.get(path)
        if info is None:
            info = _add_path(tree, path)
        if n.op == "unpack" or (n.kind == "constant" and n.index in users):
            continue
        info.nodes.append(n.index)
        info.items.append(("node", n.index))
    signatures: dict[tuple, int] = {}
    nodes = graph.nodes
    for info in sorted(tree.values(), key=lambda s: -s.depth):  # children before parents
        info.size += len(info.nodes)
        info.ops += sum(1 for i in info.nodes if nodes[i].kind == "op")
        if info.parent is None:
            break  # the root comes last and has no siblings: no signature needed
        first = info.nodes[0] if info.nodes else 0
        local = set(info.nodes)
        tokens: list[Any] = []
        for kind, ref in info.items:
            if kind == "scope":
                child = tree[ref]
                tokens.append(("scope", child.base, child.signature))
            else:
                n = nodes[ref]
                wiring = tuple(a.index - first if a.index in local else -1
                               for a in n.args if type(a) is Node)
                tokens.append((n.kind, n.op, n.shape, dtype_name(n.dtype), wiring))
        info.signature = signatures.setdefault(tuple(tokens), len(signatures))
        parent = tree[info.parent]
        parent.size += info.size
        parent.ops += info.ops
    return tree


def _add_path(tree: dict[str, ScopeInfo], path: str) -> ScopeInfo:
    parts = path.split("/")
    parent = ""
    for k in range(1, len(parts) + 1):
        sub = "/".join(parts[:k])
        if sub not in tree:
            tree[sub] = ScopeInfo(sub, parts[k - 1], parent, k)
            tree[parent].children.append(sub)
            tree[parent].items.append(("scope", sub))
        parent = sub
    return tree[path]


def runs(tree: dict[str, ScopeInfo], info: ScopeInfo) -> list[list[tuple[str, Any]]]:
    """The scope's items grouped: consecutive child scopes with the same base name and
    signature form one group (a run of identical siblings); every other item is its own."""
    groups: list[list[tuple[str, Any]]] = []
    for item in info.items:
        if item[0] == "scope" and groups and groups[-1][-1][0] == "scope":
            last, this = tree[groups[-1][-1][1]], tree[item[1]]
            if last.base == this.base and last.signature == this.signature:
                groups[-1].append(item)
                continue
        groups.append([item])
    return groups


# --- the drawn model ---------------------------------------------------------------------------


@dataclasses.dataclass
class Item:
    """One thing drawn.

    Attributes:
        id: unique id: ``n<index>`` (a node), ``s<k>`` (a collapsed scope), ``f<k>`` (a folded
            run of identical scopes), ``c<k>`` (a chunk of a flat scope), ``t<k>`` (a stub).
        kind: ``node``, ``scope``, ``fold``, ``chunk`` or ``stub``.
        parent: the path of the cluster it is drawn in (``""``: top level).
        node: the graph node (``node`` items), or the set-aside node a stub stands for.
        path: the scope path (``scope``), the first member's path (``fold``), the chunked
            scope (``chunk``).
        title: the first label line of a box (``node`` items: empty, the renderer labels them).
        count: members of a fold; boxes of a chunk.
        ops: op nodes inside (``scope``, ``fold``, ``chunk``).
        annotations: folded constants shown on a node, one line each.
        violations: violation nodes inside (collapsed items).
        level: ``error`` or ``warning`` when a violation is inside.
        marked: a debugger mark (first NaN/Inf, first divergence) is on or inside it.
        ins, outs: types entering and leaving a collapsed item.
    """

    id: str
    kind: str
    parent: str
    node: Node | None = None
    path: str | None = None
    title: str = ""
    count: int = 0
    ops: int = 0
    annotations: list[str] = dataclasses.field(default_factory=list)
    violations: int = 0
    level: str | None = None
    marked: bool = False
    ins: set[str] = dataclasses.field(default_factory=set)
    outs: set[str] = dataclasses.field(default_factory=set)


@dataclasses.dataclass
class Edge:
    """One drawn edge: ``kind`` is ``operand`` or a violation link (``after``, ``reads``,
    ``affects``); ``value`` is the node whose value flows (for edge labels)."""

    source: str
    target: str
    kind: str
    value: Node | None = None


@dataclasses.dataclass
class Model:
    """The renderer-neutral picture.

    Attributes:
        items: drawn things, in program order of their first node (stubs last).
        edges: drawn edges; between collapsed items, one per pair and kind.
        clusters: the opened scopes that hold drawn items, parents first
            (``{path: parent path}``; the root is not a cluster).
        tree: the full scope tree (:func:`scope_tree`).
        rep: for each node index, the id of the item that shows it (``None``: a constant
            shown as annotations on its readers).
        opened: the scope paths drawn open (the root included).
    """

    items: list[Item]
    edges: list[Edge]
    clusters: dict[str, str]
    tree: dict[str, ScopeInfo]
    rep: list[str | None]
    opened: set[str]


def build(graph: CapturedGraph, collapse: Any = None) -> Model:
    """Decide what to draw.

    Args:
        graph: the graph.
        collapse: ``None`` (every node drawn, nothing folded or chunked), an int node budget,
            or a list of scope paths to draw collapsed.
    """
    with _collector_paused():
        return _build(graph, collapse)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Building allocates many small acyclic objects next to a large graph; every full pass of
    Python's cycle collector scans the whole heap, which made 8,000 scopes cost 9x 2,000
    instead of 4x. Paused while building (restored as found: a build started while it was
    paused leaves it to the outer one)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _build(graph: CapturedGraph, collapse: Any) -> Model:
    users = readers(graph)
    placed = placements(graph, users)
    tree = scope_tree(graph, placed, users)
    groups = {path: runs(tree, info) for path, info in tree.items()}
    budget = collapse if isinstance(collapse, int) and not isinstance(collapse, bool) else None
    if budget is not None:
        opened, chunked = open_to_budget(tree, groups, max(budget, 2))
    else:
        listed = {str(s) for s in collapse} if collapse else set()
        opened = {""}
        for path, info in tree.items():  # parents come first
            if path and info.parent in opened and path not in listed:
                opened.add(path)
        chunked = {}
    return _assemble(graph, users, placed, tree, groups, opened, chunked)


def _boxes(groups: list, budget: int) -> tuple[int, int]:
    """(boxes drawn when the scope is open, chunk size or 0)."""
    if len(groups) <= budget:
        return len(groups), 0
    size = max(budget, math.ceil(len(groups) / max(1, budget // 2)))
    return math.ceil(len(groups) / size), size


def open_to_budget(tree: dict[str, ScopeInfo], groups: dict[str, list], budget: int
                   ) -> tuple[set[str], dict[str, int]]:
    """Open scopes breadth first, in program order, while the drawn count fits ``budget``.

    A run of identical siblings opens all together or stays one folded box. A scope with more
    items than the budget is chunked (``{path: items per chunk}``) and its children stay
    closed inside their chunks. Returns the opened paths and the chunked scopes.
    """
    opened = {""}
    chunked: dict[str, int] = {}
    drawn, size = _boxes(groups[""], budget)
    if size:
        chunked[""] = size
    level = [""]
    while level:
        following: list[str] = []
        for path in level:
            if path in chunked:
                continue
            for group in groups[path]:
                if group[0][0] != "scope":
                    continue
                members = [p for _, p in group]
                costs = [_boxes(groups[p], budget) for p in members]
                cost = sum(c for c, _ in costs) - 1
                if drawn + cost > budget:
                    continue
                drawn += cost
                for p, (_, chunk) in zip(members, costs):
                    opened.add(p)
                    following.append(p)
                    if chunk:
                        chunked[p] = chunk
        level = following
    return opened, chunked


def _assemble(graph: CapturedGraph, users: dict[int, list[Node]], placed: list[str],
              tree: dict[str, ScopeInfo], groups: dict[str, list], opened: set[str],
              chunked: dict[str, int]) -> Model:
    items: dict[str, Item] = {}
    scope_rep: dict[str, str | None] = {"": None}
    group_of: dict[tuple[str, Any], int] = {}  # (kind, ref) -> position of its group
    for path, size in chunked.items():
        for k, group in enumerate(groups[path]):
            for item in group:
                group_of[item] = k // size
    counter = {"s": 0, "f": 0, "c": 0}

    def new_box(kind: str, prefix: str, parent: str, path: str, title: str) -> str:
        ident = f"{prefix}{counter[prefix]}"
        counter[prefix] += 1
        items[ident] = Item(ident, kind, parent, path=path, title=title)
        return ident

    chunk_ids: dict[tuple[str, int], str] = {}

    def chunk(path: str, k: int) -> str:
        ident = chunk_ids.get((path, k))
        if ident is None:
            ident = chunk_ids[(path, k)] = new_box("chunk", "c", path, path, "")
        return ident

    for path, info in tree.items():  # parents before children
        if not path or path in opened:
            if path:
                scope_rep[path] = None
            for group in groups[path]:
                if group[0][0] != "scope":
                    continue
                closed = [p for _, p in group if p not in opened]
                if path in chunked:
                    for p in closed:
                        scope_rep[p] = chunk(path, group_of[("scope", p)])
                elif len(group) > 1 and len(closed) == len(group):
                    head = tree[closed[0]]
                    ident = new_box("fold", "f", path, closed[0],
                                    f"{head.base} x {len(closed)}")
                    items[ident].count = len(closed)
                    for p in closed:
                        scope_rep[p] = ident
                else:
                    for p in closed:
                        scope_rep[p] = new_box("scope", "s", path, p, tree[p].name)
            continue
        if path not in scope_rep:  # inside a closed ancestor
            scope_rep[path] = scope_rep[info.parent]
    rep: list[str | None] = []
    order: list[str] = []
    seen: set[str] = set()
    for n, path in zip(graph.nodes, placed):
        if n.op == "unpack":
            rep.append(rep[n.args[0].index])
            continue
        if n.kind == "constant" and n.index in users:
            rep.append(None)  # shown as annotations on its readers
            continue
        r = scope_rep[path]
        if r is None:
            if path in chunked:
                r = chunk(path, group_of[("node", n.index)])
            else:
                r = f"n{n.index}"
                items[r] = Item(r, "node", path, node=n)
        rep.append(r)
        if r not in seen:
            seen.add(r)
            order.append(r)
    _annotate(graph, users, items, rep)
    edges = _edges(graph, items, rep)
    _summarise(graph, items, rep, edges)
    drawn = [items[i] for i in order]
    drawn += [it for it in items.values() if it.kind == "stub"]
    return Model(drawn, edges, _clusters(tree, drawn), tree, rep, opened)


def _annotate(graph: CapturedGraph, users: dict[int, list[Node]], items: dict[str, Item],
              rep: list[str | None]) -> None:
    """Constants become lines on the node items that read them (readers inside a closed box
    are part of it)."""
    shown: dict[str, set[str]] = {}
    for n in graph.nodes:
        if n.kind != "constant" or n.index not in users:
            continue
        text = constant_text(n, graph.constant_values.get(n.index))
        for u in users[n.index]:
            item = items.get(rep[u.index])
            if item is None or item.kind != "node":
                continue
            texts = shown.setdefault(item.id, set())
            if text not in texts:
                texts.add(text)
                item.annotations.append(text)
    for item in items.values():
        extra = len(item.annotations) - MAX_ANNOTATIONS
        if extra > 0:
            item.annotations[MAX_ANNOTATIONS - 1:] = [f"+{extra + 1} more constants"]


def _edges(graph: CapturedGraph, items: dict[str, Item], rep: list[str | None]) -> list[Edge]:
    raw: list[Edge] = []
    pairs: set[tuple[str, str, str]] = set()
    for n in graph.nodes:
        if n.op == "unpack":
            continue
        v = rep[n.index]
        for a in n.args:
            if type(a) is not Node:
                continue
            u = rep[a.index]
            if u is None or u == v:
                continue
            if items[u].kind != "node" or items[v].kind != "node":
                if (u, v, "operand") in pairs:
                    continue
                pairs.add((u, v, "operand"))
            raw.append(Edge(u, v, "operand", a))
    for a, b, kind in violation_links(graph):
        u, v = rep[a], rep[b]
        if u is None or v is None or u == v or (u, v, kind) in pairs:
            continue
        pairs.add((u, v, kind))
        raw.append(Edge(u, v, kind))
    targets: dict[str, set[str]] = {}
    for e in raw:
        targets.setdefault(e.source, set()).add(e.target)
    aside = {u for u, vs in targets.items() if len(vs) > ASIDE_DEGREE}
    if not aside:
        return raw
    out: list[Edge] = []
    stubs: dict[tuple[str, str], str] = {}
    for e in raw:
        if e.source not in aside:
            out.append(e)
            continue
        stub = stubs.get((e.source, e.target))
        if stub is None:
            stub = stubs[(e.source, e.target)] = f"t{len(stubs)}"
            source = items[e.source]
            items[stub] = Item(stub, "stub", items[e.target].parent, node=source.node,
                               path=source.path, title=source.title)
        out.append(Edge(stub, e.target, e.kind, e.value))
    return out


def _summarise(graph: CapturedGraph, items: dict[str, Item], rep: list[str | None],
               edges: list[Edge]) -> None:
    """Op counts, violations, marks, spans and in/out types of the collapsed items."""
    marked = set(graph.marks.values())
    spans: dict[str, list[int]] = {}
    for n in graph.nodes:
        ident = rep[n.index]
        item = items.get(ident) if ident is not None else None
        if item is None or item.kind == "node":
            continue
        if n.kind == "op" and n.op != "unpack":
            item.ops += 1
        if n.kind == "violation":
            item.violations += 1
            if n.params.get("level") == "error" or item.level is None:
                item.level = n.params.get("level", "error")
        if n.index in marked:
            item.marked = True
        if item.kind == "chunk":
            span = spans.setdefault(ident, [n.index, n.index])
            span[1] = n.index
    for ident, (first, last) in spans.items():
        items[ident].title = f"%{first} - %{last}"
    for e in edges:
        if e.kind != "operand" or e.value is None:
            continue
        text = type_text(e.value)
        if items[e.target].kind not in ("node", "stub"):
            items[e.target].ins.add(text)
        if items[e.source].kind not in ("node", "stub"):
            items[e.source].outs.add(text)


def _clusters(tree: dict[str, ScopeInfo], drawn: list[Item]) -> dict[str, str]:
    """The opened scopes that hold something drawn, parents first: ``{path: parent}``."""
    used: set[str] = set()
    for item in drawn:
        path = item.parent
        while path and path not in used:
            used.add(path)
            path = tree[path].parent
    return {p: tree[p].parent for p in tree if p in used}
