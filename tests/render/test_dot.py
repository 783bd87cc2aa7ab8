"""DOT building and the SVG it renders to, parsed as XML."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import capviz as cv
from capviz.render.dot import choose_collapsed

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"
HOSTILE = ['x"];evil[label="', "<script>alert(1)</script>", "back\\slash\\", "new\nline",
           "&amp; <b>bold</b>", "}\ndigraph {", "ends with \\"]


def svg_nodes(svg_text):
    root = ET.fromstring(svg_text)
    out = {}
    for g in root.iter(f"{SVG}g"):
        if "node" in (g.get("class") or "").split():
            out[g.get("id")] = g
    return root, out


def texts(g):
    return "".join(t.text or "" for t in g.iter(f"{SVG}text"))


def tooltip(g):
    return next((a.get(f"{XLINK}title") for a in g.iter() if a.get(f"{XLINK}title")), "")


def violation_graph():
    dev = cv.Device("numpy")
    dev.seed(0)
    with cv.CaptureDevice().capture_scope(on_violation="record", rng=dev) as scope:
        x = scope.input("x", (2, 3))
        w = scope.constant(np.ones((3, 3), np.float32), name="w")
        with cv.name_scope("block"):
            h = np.tanh(x @ w)
            np.random.seed(1)
            r = cv.random.uniform((2, 3))
        scope.output(h + r, "y")
    return scope.graph


def test_each_kind_has_its_own_style_in_the_svg():
    g = violation_graph()
    _, nodes = svg_nodes(g.to_svg())
    kinds = {n.index: n.kind for n in g.nodes if n.kind != "constant"}  # constants: annotations
    for index, kind in kinds.items():
        elem = nodes[f"n{index}"]
        assert f"capviz-{kind}" in elem.get("class").split()
    fills = {}
    for index, kind in kinds.items():
        shape = next(e for e in nodes[f"n{index}"].iter() if e.tag in (f"{SVG}path",
                                                                       f"{SVG}polygon"))
        fills.setdefault(kind, set()).add(shape.get("fill"))
    assert fills["input"] == {"#dbeafe"} and fills["output"] == {"#dcfce7"}
    assert fills["violation"] == {"#fee2e2"} and "constant" not in fills
    assert fills["op"] == {"#ffffff", "#ede9fe"}  # random ops are tinted


def test_op_nodes_show_op_shape_dtype_and_source_tooltip():
    g = violation_graph()
    _, nodes = svg_nodes(g.to_svg())
    matmul = next(n for n in g.ops if n.op == "matmul")
    elem = nodes[f"n{matmul.index}"]
    assert texts(elem) == "matmulfloat32[2,3]w float32[3,3]"  # the constant it reads
    assert f"test_dot.py:{matmul.source[1]} in violation_graph" in tooltip(elem)


def test_violation_is_red_with_its_message_and_links():
    g = violation_graph()
    root, nodes = svg_nodes(g.to_svg())
    v = g.violations[0]
    elem = nodes[f"n{v.order}"]
    assert "error: seed" in texts(elem) and "np.random.seed(1)" in texts(elem)
    assert "seeding is not supported during graph capture" in tooltip(elem)
    stroke = next(e for e in elem.iter() if e.tag == f"{SVG}polygon").get("stroke")
    assert stroke == "#dc2626"
    edges = {e.find(f"{SVG}title").text for e in root.iter(f"{SVG}g")
             if e.get("class") == "edge"}
    random_op = next(n for n in g.ops if n.op == "random_uniform")
    assert f"n{v.order}->n{random_op.index}" in edges  # "affects" the random op after it


def test_warning_is_amber():
    dev = cv.Device("numpy")
    with pytest.warns(cv.UnseededRandomWarning):
        g = cv.capture(lambda: cv.random.normal((2,)), rng=dev)
    _, nodes = svg_nodes(g.to_svg())
    elem = nodes[f"n{g.violations[0].order}"]
    assert next(e for e in elem.iter() if e.tag == f"{SVG}polygon").get("stroke") == "#d97706"


def test_edge_labels_on_request():
    g = cv.capture(lambda x: x * 2, cv.spec((2, 5)))
    assert "float32[2,5]" not in g.to_dot().source.split("->", 1)[1]
    assert 'label="float32[2,5]"' in g.to_dot(edge_labels=True).source


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_escaped_everywhere(name):
    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        x = scope.input(name, (2,))
        with cv.name_scope(name):
            c = scope.constant(np.ones(2, np.float32), name=name)
            y = x * c
        float(y.sum())  # a violation whose message holds the listing of a hostile name
        scope.output(y, name)
    g = scope.graph
    dot = g.to_dot().source
    svg = g.to_svg()
    root, nodes = svg_nodes(svg)  # parses: nothing broke out of the SVG
    assert not [e for e in root.iter() if e.tag.endswith("script")]
    assert "<script" not in svg
    drawn = {f"n{n.index}" for n in g.nodes if n.kind != "constant"}  # constants: annotations
    assert set(nodes) == drawn  # no node injected, none lost
    invisible = dot.count("[style=invis]")  # a violation's placement: not drawn
    assert dot.count(" -> ") - invisible == len(root.findall(f".//{SVG}g[@class='edge']"))
    assert texts(nodes[f"n{g.node(name).index}"]).startswith(name.replace("\n", ""))
    (mul,) = [n for n in g.ops if n.op == "multiply"]
    assert texts(nodes[f"n{mul.index}"]).endswith(name.replace("\n", "") + " float32[2]")
    assert "<script" not in g._repr_mimebundle_(include=["image/svg+xml"])["image/svg+xml"]


def test_same_graph_same_dot():
    def f(x):
        with cv.name_scope("a"):
            y = np.exp(x)
        with cv.name_scope("b"):
            return y + x

    assert cv.capture(f, cv.spec(3)).to_dot().source == cv.capture(f, cv.spec(3)).to_dot().source
    g = cv.capture(f, cv.spec(3))
    assert g.to_dot().source == g.to_dot().source


def scoped(blocks=4, per_block=5):
    def f(x):
        for b in range(blocks):
            with cv.name_scope(f"block{b}"):
                for _ in range(per_block):
                    x = np.tanh(x) * 1.5
        return x

    return cv.capture(f, cv.spec(3))


def test_scopes_become_clusters():
    root, _ = svg_nodes(scoped(blocks=3, per_block=1).to_svg())
    clusters = [g for g in root.iter(f"{SVG}g") if "cluster" in g.get("class", "").split()]
    labels = sorted(texts(c) for c in clusters)
    assert labels == ["block0", "block1", "block2"]


def test_collapse_listed_scopes():
    g = scoped(blocks=3, per_block=2)
    _, nodes = svg_nodes(g.to_svg(collapse=["block1"]))
    scope_nodes = [e for e in nodes.values() if "capviz-scope" in e.get("class").split()]
    assert len(scope_nodes) == 1
    assert texts(scope_nodes[0]) == "block14 opsin: float32[3]out: float32[3]"


def test_collapse_to_a_node_budget():
    g = scoped(blocks=10, per_block=10)  # 202 nodes: x, ten blocks of 20, the output
    chosen = choose_collapsed(g, 60)
    assert chosen == {f"block{b}" for b in range(10)}  # opening all ten costs 190: none open
    _, nodes = svg_nodes(g.to_svg(collapse=60))
    assert len(nodes) == 12
    assert len([i for i in nodes if i.startswith("s")]) == len(chosen)
    assert choose_collapsed(g, 202) == set()
    assert len(svg_nodes(g.to_svg(collapse=None))[1]) == len(g.nodes)


def test_collapsed_scope_with_a_violation_stays_marked():
    g = violation_graph()
    _, nodes = svg_nodes(g.to_svg(collapse=["block"]))
    (elem,) = [e for e in nodes.values() if "capviz-scope" in e.get("class").split()]
    assert "1 violation" in texts(elem)
    assert next(e for e in elem.iter() if e.tag in (f"{SVG}polygon", f"{SVG}path")).get(
        "stroke") == "#dc2626"


def test_mimebundle_keys():
    g = cv.capture(lambda x: x + 1, cv.spec(2))
    bundle = g._repr_mimebundle_()  # stored once: the view (its picture inside) and the text
    assert set(bundle) == {"text/html", "text/plain"}
    assert bundle["text/plain"] == str(g)  # a small graph: its listing
    assert set(g._repr_mimebundle_(include=["text/plain"])) == {"text/plain"}
    asked = g._repr_mimebundle_(include=["image/svg+xml", "text/plain"])
    assert set(asked) == {"image/svg+xml", "text/plain"}
    ET.fromstring(asked["image/svg+xml"])
    assert set(g._repr_mimebundle_(exclude=["text/plain"])) == {"text/html"}


def edges_of(root):
    return {e.find(f"{SVG}title").text.replace("&#45;", "-") for e in root.iter(f"{SVG}g")
            if e.get("class") == "edge"}


def test_a_shared_constant_is_an_annotation_on_every_reader():
    w = np.ones((3, 3), np.float32)

    def f(x):
        for b in range(3):
            with cv.name_scope(f"layer{b}"):
                x = np.tanh(x @ w)
        return x

    g = cv.capture(f, cv.spec((2, 3)))
    (const,) = g.constants
    root, nodes = svg_nodes(g.to_svg(collapse=None))
    assert not any(i.startswith(f"n{const.index}") for i in nodes)
    for n in g.ops:
        if n.op == "matmul":
            assert texts(nodes[f"n{n.index}"]) == "matmulfloat32[2,3]w float32[3,3]"
    assert not any(e.startswith(f"n{const.index}-") for e in edges_of(root))


def test_chain_reading_one_shared_ndarray_renders_every_node():
    mask = np.full((4,), 0.5, np.float32)

    def f(x):
        for _ in range(1000):
            x = x * mask
        return x

    g = cv.capture(f, cv.spec((4,)))
    root, nodes = svg_nodes(g.to_svg(collapse=None))  # every op drawn, the mask on each
    assert len(nodes) == len(g.nodes) - 1
    assert all(texts(nodes[f"n{n.index}"]).endswith("mask float32[4]") for n in g.ops)
    assert len(edges_of(root)) == len(g.ops) + 1  # the chain and the output, nothing else
    _, overview = svg_nodes(g.to_svg())  # the default budget: program-order chunks
    assert 1 < len(overview) <= 250


def rnn_graph(steps=120):
    with cv.CaptureDevice().capture_scope() as scope:
        xs = scope.input("xs", (steps, 1, 8))
        w, u, b = scope.input("W", (8, 8)), scope.input("U", (8, 8)), scope.input("b", (1, 8))
        h = np.zeros((1, 8), np.float32)
        for t in range(steps):
            h = np.tanh(xs[t] @ w + h @ u + b)
        scope.output(h, "h")
    return scope.graph


def test_unrolled_rnn_sets_its_weights_aside_with_stubs():
    g = rnn_graph()
    root, nodes = svg_nodes(g.to_svg(collapse=None))
    stubs = [e for e in nodes.values() if "capviz-stub" in e.get("class").split()]
    assert len(stubs) == 4 * 120  # W, U, b and xs next to each of their 120 readers
    assert sorted({texts(s) for s in stubs}) == ["U", "W", "b", "xs"]
    weights = {f"n{g.node(name).index}" for name in ("W", "U", "b", "xs")}
    assert weights <= set(nodes)  # each drawn once, in its place
    assert not any(e.split("->")[0] in weights for e in edges_of(root))


def classes(elem):
    return elem.get("class", "").split()


EYE4 = np.eye(4, dtype=np.float32)  # a constant (np.eye inside a capture records a create op)


def twelve_blocks():
    """A model of 12 identical ``block`` calls, captured."""
    def block(x):
        return np.tanh(x @ EYE4) + x

    def model(x):
        for _ in range(12):
            x = block(x)
        return x

    return cv.capture(lambda x: model(x), cv.spec((1, 4)))


def test_identical_blocks_fold_into_one_box():
    g = twelve_blocks()
    _, nodes = svg_nodes(g.to_svg(collapse=3))
    (fold,) = [e for e in nodes.values() if "capviz-fold" in classes(e)]
    assert texts(fold).startswith("block \u00d7 1236 ops")


def test_a_fold_opens_its_first_block_with_the_others_closed_beside_it():
    g = twelve_blocks()
    root, nodes = svg_nodes(g.to_svg(budget=20))
    clusters = {next(c.iter(f"{SVG}text")).text: c for c in root.iter(f"{SVG}g")
                if "cluster" in classes(c)}
    assert set(clusters) == {"model", "block \u00d7 12", "block[0]"}
    assert "capviz-fold" in classes(clusters["block \u00d7 12"])
    first = {n.index for n in g.ops if n.scope == "model/block[0]"}
    assert {f"n{i}" for i in first} <= set(nodes)
    closed = sorted(texts(e).split("3 ops")[0] for e in nodes.values()
                    if "capviz-scope" in classes(e))
    assert closed == sorted(f"block[{k}]" for k in range(1, 12))
    assert not any(f"n{n.index}" in nodes for n in g.ops if n.scope == "model/block[1]")
    # the default budget fits all twelve: every block open, side by side in the fold
    root, nodes = svg_nodes(g.to_svg())
    clusters = {next(c.iter(f"{SVG}text")).text for c in root.iter(f"{SVG}g")
                if "cluster" in classes(c)}
    assert clusters == {"model", "block \u00d7 12"} | {f"block[{k}]" for k in range(12)}
    assert {f"n{n.index}" for n in g.ops} <= set(nodes)


def test_to_svg_refuses_a_scope_the_graph_does_not_have_as_the_cli_does():
    g = twelve_blocks()
    with pytest.raises(ValueError, match=r"collapse names scope 'nosuch', which the graph does "
                                         r"not have; its top-level scopes: model"):
        g.to_svg(collapse=["nosuch"])
    with pytest.raises(ValueError, match="'model/block'"):
        g.to_dot(collapse=["model/block"])
    assert "capviz-scope" in g.to_dot(collapse=["model/block[3]"]).source


def test_new_node_kinds_are_drawn_with_the_style_rules_py_gives_them():
    from capviz.render.rules import KIND_STYLES

    g = twelve_blocks()
    ops = [n for n in g.nodes if n.kind == "op"]
    ops[0].kind, ops[1].kind = "state", "guard"  # as issues 20 and 21 make them
    source = g.to_dot(collapse=None).source
    for node, shape in ((ops[0], "cylinder"), (ops[1], "hexagon")):
        line = next(ln for ln in source.splitlines() if ln.strip().startswith(f"n{node.index} "))
        assert f"shape={shape}" in line
        assert f'fillcolor="{KIND_STYLES[node.kind].fill}"' in line
