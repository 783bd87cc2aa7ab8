"""What a picture of a graph shows, decided once for every renderer.

DOT/SVG (:mod:`capviz.render.dot`) draws a :class:`Model` (``{items, edges, clusters}``); the
interactive view (:mod:`capviz.render.view_data`) draws the same :class:`Outline` and starts
with the same boxes open. Neither decides again what is folded or opened. The thresholds are
:data:`capviz.render.rules.RULES`. The decisions:

- **Scope tree.** Each node sits in its ``scope`` (a constant in the deepest scope shared by
  its readers). :func:`scope_tree` builds the tree with every scope's direct nodes, children in
  program order of their first drawn node, drawable size and a structural signature.
- **Constants and scalars are annotations** on the ops that read them, not nodes: a shared
  epsilon array or mask is one line on each reader (``w float32[8,8]``, ``eps = 1e-05``), never
  an edge across the drawing. A constant nobody reads is drawn as a node.
- **The outline** (:func:`outline`): each scope is a box; a run of at least ``fold_min``
  identical sibling scopes (same name up to the call number, same signature: same ops, types
  and wiring, recursively) is one ``fold`` box ``block × 12`` holding the members side by side,
  as siblings; a box with more than ``chunk`` items shows them
  in program-order ``group`` boxes (``%0…%47``), groups of groups when needed.
- **Open to a budget** (:func:`open_levels`): whole levels of boxes open, top down, while the
  drawn count fits; when a level does not fit whole, the members of folds after the first stay
  closed. So 12 identical blocks show as the first block opened and eleven closed blocks beside
  it when the budget allows, as one ``block × 12`` box when not; a large budget opens all.
- **High-degree nodes are set aside.** A drawn item that feeds more than ``aside_degree``
  other items keeps its place; each item that reads it gets a small stub naming it next to each
  reader instead of a long edge (TensorBoard does the same), which keeps every edge short and
  Graphviz fast.

Every step is linear in nodes + edges + scopes (a constant's placement is linear in its readers).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections.abc import Iterator
from typing import Any

from capviz.core.ir import Graph, Node, dtype_name
from capviz.io.printing import constant_text, type_text
from capviz.render.links import violation_edges
from capviz.render.rules import RULES, Rules

ASIDE_DEGREE = RULES.aside_degree  # an item feeding more items than this is set aside
MAX_ANNOTATIONS = RULES.max_annotations  # constant lines on one op; more become "+N more"


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


def readers(graph: Graph) -> dict[int, list[Node]]:
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


def placements(graph: Graph, users: dict[int, list[Node]] | None = None) -> list[str]:
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


def scope_tree(graph: Graph, placed: list[str] | None = None,
               users: dict[int, list[Node]] | None = None) -> dict[str, ScopeInfo]:
    """Every scope of the graph, the root (``""``) first, parents before children.

    A scope's ``nodes`` are the nodes drawn as boxes: unpacks (drawn as their op) and constants
    that have readers (drawn as annotations on them) are left out. A child scope takes its
    place among its parent's ``items`` at its first drawn node (as the view orders them).
    """
    users = readers(graph) if users is None else users
    placed = placements(graph, users) if placed is None else placed
    tree: dict[str, ScopeInfo] = {"": ScopeInfo("", "", None, 0)}
    entered = {""}
    for n, path in zip(graph.nodes, placed):
        info = tree.get(path)
        if info is None:
            info = _add_path(tree, path)
        if n.op == "unpack" or (n.kind == "constant" and n.index in users):
            continue
        if path not in entered:
            _enter(tree, entered, path)
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
        parent = sub
    return tree[path]


def _enter(tree: dict[str, ScopeInfo], entered: set[str], path: str) -> None:
    """List ``path`` (and its ancestors not listed yet) among its parent's items."""
    chain = []
    while path not in entered:
        chain.append(path)
        path = tree[path].parent
    for sub in reversed(chain):
        parent = tree[tree[sub].parent]
        parent.children.append(sub)
        parent.items.append(("scope", sub))
        entered.add(sub)


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


# --- the outline: the boxes a picture can show -------------------------------------------------


@dataclasses.dataclass
class Box:
    """One box of the outline: a scope, or a box the folding rules make.

    Attributes:
        id: position in :attr:`Outline.boxes` (0: the root).
        kind: ``root``; ``scope`` (a scope of the graph); ``fold`` (a run of identical sibling
            scopes, its members side by side when opened); ``group`` (a program-order group of
            a box with too many items).
        parent: the id of the box it is drawn in (-1 for the root).
        path: the scope path (``scope``), the first member's path (``fold``), the
            path of the scope the group belongs to (``group``).
        title: the box's label: the scope's name, ``block × 12``, ``%0…%47``.
        items: its content in program order: ``("node", index)`` and ``("box", id)``.
        count: the scopes a ``fold`` box holds.
    """

    id: int
    kind: str
    parent: int
    path: str
    title: str
    items: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    count: int = 0


@dataclasses.dataclass
class Outline:
    """The boxes of a picture and where every node sits.

    Attributes:
        boxes: every box, the root first.
        order: box ids, parents before children (breadth first).
        box_of: the box of each scope path that has one.
        node_box: for each node index, the box it is drawn in (an unpack: its op's; a constant
            shown as annotations: the box of the scope it is placed in).
        depth: for each box id, its depth (0: the root).
    """

    boxes: list[Box]
    order: list[int]
    box_of: dict[str, int]
    node_box: list[int]
    depth: list[int]


def outline(graph: Graph, tree: dict[str, ScopeInfo], placed: list[str],
            fold: bool = True, chunk: bool = True, rules: Rules = RULES) -> Outline:
    """The boxes a picture shows, from the scope tree and the folding rules.

    With ``fold``, a run of at least ``rules.fold_min`` identical sibling scopes becomes a
    ``fold`` box (``block × 12``) holding them side by side, as siblings.
    With ``chunk``, a box with more than ``rules.chunk`` items shows them in program-order
    ``group`` boxes of that many (groups of groups when needed).
    """
    boxes = [Box(0, "root", -1, "", "")]
    box_of = {"": 0}

    def new(kind: str, parent: int, path: str, title: str, count: int = 0) -> Box:
        box = Box(len(boxes), kind, parent, path, title, count=count)
        boxes.append(box)
        return box

    for path, info in tree.items():  # parents first
        here = box_of.get(path)
        if here is None:
            continue  # a scope with nothing drawn
        entries: list[tuple[str, int]] = []
        for group in (runs(tree, info) if fold else [[item] for item in info.items]):
            kind, ref = group[0]
            if kind == "node":
                entries.append(("node", ref))
                continue
            members = []
            for _, p in group:
                box = new("scope", here, p, tree[p].name)
                box_of[p] = box.id
                members.append(box)
            if len(members) < max(rules.fold_min, 2):
                entries.extend(("box", m.id) for m in members)
                continue
            base = tree[members[0].path].base
            head = new("fold", here, members[0].path, f"{base} \u00d7 {len(members)}",
                       count=len(members))
            for m in members:  # opened, the fold shows its members side by side, as siblings
                m.parent = head.id
            head.items = [("box", m.id) for m in members]
            entries.append(("box", head.id))
        boxes[here].items = entries
    if chunk:
        for box in list(boxes):
            _split(box, boxes, rules.chunk)
    order, depth = [0], [0] * len(boxes)
    for b in order:  # grows while walked
        for kind, ref in boxes[b].items:
            if kind == "box":
                depth[ref] = depth[b] + 1
                order.append(ref)
    node_box = [0] * len(graph.nodes)
    for b in order:
        for kind, ref in boxes[b].items:
            if kind == "node":
                node_box[ref] = b
    for n, path in zip(graph.nodes, placed):
        if n.op == "unpack":
            node_box[n.index] = node_box[n.args[0].index]
        elif n.kind == "constant" and path in box_of and node_box[n.index] == 0:
            node_box[n.index] = box_of[path]
    _group_titles(boxes, order, graph)
    return Outline(boxes, order, box_of, node_box, depth)


def _split(box: Box, boxes: list[Box], size: int) -> None:
    """Program-order groups of ``size`` items while ``box`` holds more than ``size``."""
    while len(box.items) > size:
        fresh: list[tuple[str, int]] = []
        for k in range(0, len(box.items), size):
            group = Box(len(boxes), "group", box.id, box.path, "")
            boxes.append(group)
            group.items = box.items[k:k + size]
            for kind, ref in group.items:
                if kind == "box":
                    boxes[ref].parent = group.id
            fresh.append(("box", group.id))
        box.items = fresh


def _group_titles(boxes: list[Box], order: list[int], graph: Graph) -> None:
    """``%first…%last``: the span of drawn nodes of each group."""
    first = [len(graph.nodes)] * len(boxes)
    last = [-1] * len(boxes)
    for b in reversed(order):  # children before parents
        for kind, ref in boxes[b].items:
            lo, hi = (ref, ref) if kind == "node" else (first[ref], last[ref])
            first[b] = min(first[b], lo)
            last[b] = max(last[b], hi)
        if boxes[b].kind == "group":
            boxes[b].title = f"%{first[b]}\u2026%{last[b]}"


def open_levels(out: Outline, budget: int) -> set[int]:
    """The boxes open at first: whole levels, top down, while the drawn count fits ``budget``.

    Opening a box draws its items instead of it. A level opens entirely or not at all (a
    level half open reads as noise). A budget that fits every box open opens them all;
    otherwise the members of a fold after the first stay closed, side by side with the first
    (one opened block shows what the identical others hold), and the levels open below it.
    """
    everything = _levels(out, budget, later=True)
    if len(everything) == len(out.boxes):
        return everything
    return _levels(out, budget, later=False)


def _levels(out: Outline, budget: int, later: bool) -> set[int]:
    boxes = out.boxes
    opened = {0}
    shown = len(boxes[0].items)
    level = [0]
    while level:
        following = [ref for b in level for kind, ref in boxes[b].items
                     if kind == "box" and (later or not _later_member(boxes, ref))]
        cost = sum(len(boxes[b].items) - 1 for b in following)
        if not following or shown + cost > budget:
            break
        opened.update(following)
        shown += cost
        level = following
    return opened


def _later_member(boxes: list[Box], b: int) -> bool:
    """Whether box ``b`` is a member of a fold other than its first (or a program-order group
    of such members, when the fold holds more than ``chunk``)."""
    first = True
    while boxes[b].parent >= 0:
        parent = boxes[boxes[b].parent]
        if parent.kind not in ("fold", "group"):
            return False
        first = first and parent.items[0] == ("box", b)
        if parent.kind == "fold":
            return not first
        b = parent.id
    return False


# --- the drawn model ---------------------------------------------------------------------------


@dataclasses.dataclass
class Item:
    """One thing drawn.

    Attributes:
        id: unique id: ``n<index>`` (a node), ``s<k>`` (a closed scope), ``f<k>`` (a closed
            fold box), ``c<k>`` (a closed program-order group), ``t<k>`` (a stub).
        kind: ``node``, ``scope``, ``fold``, ``chunk`` or ``stub``.
        parent: the id of the outline box it is drawn in (0: top level).
        node: the graph node (``node`` items), or the set-aside node a stub stands for.
        path: the outline box's path (closed boxes; see :class:`Box`).
        title: the first label line of a box (``node`` items: empty, the renderer labels them).
        count: scopes inside a fold.
        ops: op nodes inside (closed boxes).
        annotations: folded constants shown on a node, one line each.
        violations: violation nodes inside (closed boxes).
        level: ``error`` or ``warning`` when a violation is inside.
        marked: a debugger mark (first NaN/Inf, first divergence) is on or inside it.
        ins, outs: types entering and leaving a closed box.
        box: the outline box a closed item shows (-1 for nodes and stubs).
    """

    id: str
    kind: str
    parent: int
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
    box: int = -1


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
        edges: drawn edges; between closed boxes, one per pair and kind.
        clusters: the open boxes that hold drawn items, parents first (``{box id: parent box
            id}``; the root, 0, is not a cluster).
        tree: the full scope tree (:func:`scope_tree`).
        outline: the boxes (:func:`outline`).
        rep: for each node index, the id of the item that shows it (``None``: a constant
            shown as annotations on its readers).
        opened: the scope paths drawn open (the root included).
        open_boxes: the ids of the outline boxes drawn open (the root included).
    """

    items: list[Item]
    edges: list[Edge]
    clusters: dict[int, int]
    tree: dict[str, ScopeInfo]
    outline: Outline
    rep: list[str | None]
    opened: set[str]
    open_boxes: set[int]


def build(graph: Graph, collapse: Any = None) -> Model:
    """Decide what to draw.

    Args:
        graph: the graph.
        collapse: ``None`` (every node drawn, nothing folded or chunked), an int node budget,
            or a list of scope paths to draw collapsed.
    """
    with collector_paused():
        return _build(graph, collapse)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
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


def _build(graph: Graph, collapse: Any) -> Model:
    users = readers(graph)
    placed = placements(graph, users)
    tree = scope_tree(graph, placed, users)
    budget = collapse if isinstance(collapse, int) and not isinstance(collapse, bool) else None
    if budget is not None:
        out = outline(graph, tree, placed)
        opened = open_levels(out, max(budget, 2))
    else:
        out = outline(graph, tree, placed, fold=False, chunk=False)
        listed = {str(s) for s in collapse} if collapse else set()
        check_listed(graph, [str(s) for s in collapse] if collapse else [])
        opened = {b.id for b in out.boxes if b.path not in listed or b.kind == "root"}
    return _assemble(graph, users, tree, out, opened)


def check_listed(graph: Graph, paths: list[str]) -> None:
    """Scope paths to collapse must be scopes of the graph: a typo would draw everything open
    without a word (``ValueError``; the CLI's ``--collapse`` reports the same text)."""
    scopes = {n.scope for n in graph.nodes if n.scope}
    for path in paths:
        if not any(s == path or s.startswith(path + "/") for s in scopes):
            top = sorted({s.split("/")[0] for s in scopes})
            raise ValueError(f"collapse names scope {path!r}, which the graph does not have; "
                             f"its top-level scopes: {', '.join(top) or '(none)'}")


def _assemble(graph: Graph, users: dict[int, list[Node]], tree: dict[str, ScopeInfo],
              out: Outline, opened: set[int]) -> Model:
    boxes = out.boxes
    shown_by: list[int] = [-1] * len(boxes)  # the outermost closed box around it, or -1
    for b in out.order[1:]:
        up = shown_by[boxes[b].parent]
        shown_by[b] = up if up >= 0 else (-1 if b in opened else b)
    items: dict[str, Item] = {}
    box_item: dict[int, str] = {}
    prefix = {"scope": "s", "fold": "f", "group": "c"}
    counter = {"s": 0, "f": 0, "c": 0}
    rep: list[str | None] = []
    order: list[str] = []
    seen: set[str] = set()
    for n in graph.nodes:
        if n.op == "unpack":
            rep.append(rep[n.args[0].index])
            continue
        if n.kind == "constant" and n.index in users:
            rep.append(None)  # shown as annotations on its readers
            continue
        b = out.node_box[n.index]
        closed = shown_by[b]
        if closed < 0:
            r = f"n{n.index}"
            items[r] = Item(r, "node", b, node=n)
        else:
            r = box_item.get(closed)
            if r is None:
                box = boxes[closed]
                p = prefix[box.kind]
                r = box_item[closed] = f"{p}{counter[p]}"
                counter[p] += 1
                kind = {"s": "scope", "f": "fold", "c": "chunk"}[p]
                items[r] = Item(r, kind, box.parent, path=box.path, title=box.title,
                                count=box.count, box=closed)
        rep.append(r)
        if r not in seen:
            seen.add(r)
            order.append(r)
    _annotate(graph, users, items, rep)
    edges = _edges(graph, items, rep)
    _summarise(graph, items, rep, edges)
    drawn = [items[i] for i in order]
    drawn += [it for it in items.values() if it.kind == "stub"]
    visible = {b for b in opened if shown_by[b] < 0}
    paths = {boxes[b].path for b in visible if boxes[b].kind in ("root", "scope")}
    return Model(drawn, edges, _clusters(out, drawn), tree, out, rep, paths, visible)


def _annotate(graph: Graph, users: dict[int, list[Node]], items: dict[str, Item],
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


def _edges(graph: Graph, items: dict[str, Item], rep: list[str | None]) -> list[Edge]:
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
    for a, b, kind in violation_edges(graph):
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


def _summarise(graph: Graph, items: dict[str, Item], rep: list[str | None],
               edges: list[Edge]) -> None:
    """Op counts, violations, marks and in/out types of the closed boxes."""
    marked = set(graph.marks.values())
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
    for e in edges:
        if e.kind != "operand" or e.value is None:
            continue
        text = type_text(e.value)
        if items[e.target].kind not in ("node", "stub"):
            items[e.target].ins.add(text)
        if items[e.source].kind not in ("node", "stub"):
            items[e.source].outs.add(text)


def _clusters(out: Outline, drawn: list[Item]) -> dict[int, int]:
    """The open boxes that hold something drawn, parents first: ``{box id: parent id}``."""
    used: set[int] = set()
    for item in drawn:
        b = item.parent
        while b > 0 and b not in used:
            used.add(b)
            b = out.boxes[b].parent
    return {b: out.boxes[b].parent for b in out.order if b in used}
