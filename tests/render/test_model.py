"""The renderer-neutral model: folded constants, stubs, ``x N`` folds, the budget, chunks, and
cost linear in nodes + scopes (capviz/render/model.py)."""

import itertools
import sys

import numpy as np

import capviz as cv
from capviz.render.model import ASIDE_DEGREE, build, scope_tree

MASK = np.ones((4,), np.float32)


def shared_chain(n):
    def f(x):
        for _ in range(n):
            x = x * MASK
        return x

    return cv.capture(f, cv.spec((4,)))


def block(x):
    return np.tanh(x * 2.0) + x


def blocks(n, d=4):
    def model(x):
        for _ in range(n):
            x = block(x)
        return x

    return cv.capture(lambda x: model(x), cv.spec((d,)))


def kinds(model):
    out = {}
    for item in model.items:
        out.setdefault(item.kind, []).append(item)
    return out


def test_constants_are_annotations_on_their_readers_not_nodes():
    g = shared_chain(30)
    m = build(g, collapse=None)
    (const,) = g.constants
    assert m.rep[const.index] is None
    assert f"n{const.index}" not in {i.id for i in m.items}
    readers = [i for i in m.items if i.kind == "node" and i.node.op == "multiply"]
    assert len(readers) == 30
    assert all(i.annotations == ["MASK float32[4]"] for i in readers)
    assert all(e.source != f"n{const.index}" for e in m.edges)


def test_a_constant_nobody_reads_is_drawn():
    with cv.CaptureDevice().capture_scope() as scope:
        x = scope.input("x", (2,))
        scope.constant(np.ones(2, np.float32), name="unused")
        scope.output(x * 2.0)
    m = build(scope.graph, collapse=None)
    const = scope.graph.node("unused")
    assert m.rep[const.index] == f"n{const.index}"


def test_many_annotations_are_summarised():
    arrays = [np.full((2,), float(i), np.float32) for i in range(6)]
    g = cv.capture(lambda x: np.stack([x, *arrays]), cv.spec((2,)))
    (item,) = [i for i in build(g).items if i.kind == "node" and i.node.op == "stack"]
    assert len(item.annotations) == 3 and item.annotations[-1] == "+4 more constants"


def test_a_high_degree_node_is_set_aside_with_one_stub_per_reader():
    with cv.CaptureDevice().capture_scope() as scope:
        w = scope.input("W", (4, 4))
        h = scope.input("h", (1, 4))
        for _ in range(20):
            h = np.tanh(h @ w)
        scope.output(h)
    g = scope.graph
    m = build(g, collapse=None)
    w_id = f"n{g.node('W').index}"
    stubs = kinds(m)["stub"]
    assert len(stubs) == 20 and all(s.node is g.node("W") for s in stubs)
    assert not any(e.source == w_id for e in m.edges)
    matmuls = {f"n{n.index}" for n in g.ops if n.op == "matmul"}
    assert {e.target for e in m.edges if e.source.startswith("t")} == matmuls
    few = cv.capture(lambda x: [x * 1.0 for _ in range(ASIDE_DEGREE)], cv.spec(2))
    assert "stub" not in kinds(build(few, collapse=None))


def test_identical_sibling_scopes_share_a_signature():
    g = blocks(12)
    tree = scope_tree(g)
    sigs = {tree[p].signature for p in tree if p.startswith("model/block[")}
    assert len([p for p in tree if p.startswith("model/block[")]) == 12 and len(sigs) == 1

    def mixed(x):
        return block(block(x)[:2])  # the second block works on a shorter vector

    tree = scope_tree(cv.capture(lambda x: mixed(x), cv.spec((4,))))
    assert tree["mixed/block[0]"].signature != tree["mixed/block[1]"].signature


def test_runs_of_identical_scopes_fold_into_one_box_until_the_budget_opens_the_first():
    g = blocks(12)
    tight = build(g, collapse=3)  # x, model, output: no room to open the fold
    (fold,) = kinds(tight)["fold"]
    assert fold.title == "block \u00d7 12" and fold.count == 12 and fold.ops == 36
    assert fold.path == "model/block[0]"
    roomy = build(g, collapse=20)  # the first block opens, the other eleven closed beside it
    closed = [i.title for i in kinds(roomy)["scope"]]
    assert closed == [f"block[{k}]" for k in range(1, 12)]
    assert "fold" not in kinds(roomy)
    assert "model/block[0]" in roomy.opened and "model/block[1]" not in roomy.opened
    shown = {i.node.index for i in kinds(roomy)["node"]}
    assert {n.index for n in g.nodes if n.scope == "model/block[0]"} <= shown
    titles = {roomy.outline.boxes[b].title for b in roomy.clusters}
    assert titles == {"model", "block \u00d7 12", "block[0]"}
    # a budget that fits everything opens everything: every block, side by side in the fold
    everything = build(g, collapse=500)
    assert "scope" not in kinds(everything) and "fold" not in kinds(everything)
    assert {i.node.index for i in kinds(everything)["node"]} >= {n.index for n in g.ops}
    members = [b for b in everything.outline.boxes if b.path.startswith("model/block")
               and b.kind == "scope"]
    fold = next(b for b in everything.outline.boxes if b.kind == "fold")
    assert {b.parent for b in members} == {fold.id} and len(members) == 12


def test_two_identical_scopes_do_not_fold():
    m = build(blocks(2), collapse=500)
    assert "fold" not in kinds(m) and {"model/block[0]", "model/block[1]"} <= m.opened


def test_the_budget_bounds_what_is_drawn_and_opens_whole_levels():
    def f(x):
        for b in range(10):
            with cv.name_scope(f"layer{b}"):  # ten different names: nothing folds
                for _ in range(3):
                    x = np.tanh(x)
        return x

    g = cv.capture(f, cv.spec((4,)))
    for budget in (12, 20, 60, 250):  # the top level's 12 items are always drawn
        m = build(g, collapse=budget)
        assert len(m.items) <= budget, budget
    # 12 boxes at the top; opening the ten layers costs 20 more: all of them or none
    assert not any(p.startswith("layer") for p in build(g, collapse=31).opened)
    assert {f"layer{b}" for b in range(10)} <= build(g, collapse=32).opened


def test_listed_scopes_collapse_and_the_rest_opens():
    g = blocks(3)
    m = build(g, collapse=["model/block[1]"])
    (box,) = kinds(m)["scope"]
    assert box.path == "model/block[1]" and box.ops == 3
    assert box.ins == {"float32[4]"} and box.outs == {"float32[4]"}


def test_a_flat_graph_is_grouped_in_program_order():
    def flat(x):
        for _ in range(2500):
            x = x * 1.5
            x = x + 0.5
        return x

    g = cv.capture(flat, cv.spec((4,)))
    m = build(g, collapse=250)
    chunks = kinds(m)["chunk"]
    # 5,002 items: 105 groups of 48, in 3 groups of groups (opened: 105 boxes fit 250)
    assert len(chunks) == 105 and len(m.items) == 105 and len(m.clusters) == 3
    spans = [tuple(int(p.strip("%")) for p in c.title.split("\u2026")) for c in chunks]
    assert spans[0] == (0, 47) and spans[-1][1] == len(g.nodes) - 1
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(spans))  # consecutive, in order
    assert sum(c.ops for c in chunks) == len(g.ops)
    assert all(e.source != e.target for e in m.edges)
    assert len(build(g, collapse=100).items) == 3  # 105 boxes do not fit: the 3 outer groups


def test_a_violation_inside_a_collapsed_box_is_counted():
    def noisy(x):
        np.random.seed(0)
        return x * 2.0

    g = cv.capture(lambda x: noisy(x), cv.spec(2), on_violation="record")
    (box,) = kinds(build(g, collapse=["noisy"]))["scope"]
    assert box.violations == 1 and box.level == "error"


def operations(fn):
    """Python and C calls made by ``fn`` (a deterministic measure of work)."""
    count = [0]

    def profile(frame, event, arg):
        if event in ("call", "c_call"):
            count[0] += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count[0]


def layers(n):
    def f(x):
        for b in range(n):
            with cv.name_scope(f"layer{b}"):
                x = np.tanh(x) * 1.5
        return x

    return cv.capture(f, cv.spec((4,)))


def test_building_the_model_is_linear_in_scopes():
    small, large = layers(500), layers(1000)
    for collapse in (None, 250):
        ratio = operations(lambda: build(large, collapse)) / \
            operations(lambda: build(small, collapse))
        assert ratio < 2.3, (collapse, ratio)  # quadratic work would give about 4
