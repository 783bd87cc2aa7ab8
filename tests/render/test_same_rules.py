"""One set of folding rules: the static SVG and the interactive view show the same picture.

Each case renders a graph both ways, parses the real SVG as XML and the view's JSON out of the
real page (``graph.to_html()``), and compares what each shows at first: the open scopes
(SVG clusters, the view's open boxes), the closed boxes with their titles (``block × 12``,
``%0…%47``), the nodes drawn, and the constants drawn as annotations rather than nodes.
"""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import capviz as cv
from capviz.render.rules import RULES
from capviz.render.view import to_html
from tests.render.test_html import data_of, parse

SVG = "{http://www.w3.org/2000/svg}"
BOX_CLASSES = {"capviz-scope", "capviz-fold", "capviz-chunk"}


def classes(elem):
    return set(elem.get("class", "").split())


def svg_picture(graph, budget):
    """(open cluster titles, closed box titles, drawn node indices, annotation lines by node)."""
    root = ET.fromstring(graph.to_svg(collapse=budget))
    clusters, boxes, nodes, notes = [], [], set(), {}
    for g in root.iter(f"{SVG}g"):
        cls = classes(g)
        lines = [t.text for t in g.iter(f"{SVG}text")]
        if "cluster" in cls:
            clusters.append(lines[0])
        elif "node" in cls and cls & BOX_CLASSES:
            boxes.append(lines[0])
        elif "node" in cls and g.get("id", "").startswith("n"):
            index = int(g.get("id")[1:])
            nodes.add(index)
            notes[index] = lines[2:]  # after the title and the type
    return sorted(clusters), sorted(boxes), nodes, notes


def view_picture(graph, budget):
    """The same four things from the view's JSON, as the page's script draws them at first."""
    data = data_of(parse(to_html(graph, budget=budget)))
    strings, scopes = data["strings"], data["scopes"]
    parent, opened = scopes["parent"], set(scopes["open"]) | {0}
    title = [strings[k] for k in scopes["name"]]

    def shown_open(box):
        while box > 0:
            if box not in opened:
                return False
            box = parent[box]
        return True

    holding = {data["scope"][i] for i in range(len(data["kind"]))}
    clusters = sorted(title[b] for b in range(1, len(parent)) if shown_open(b))
    boxes = sorted(title[b] for b in range(1, len(parent))
                   if b not in opened and shown_open(parent[b]))
    aside = set(data["aside"])
    annotation = {i for i in aside if data["kind"][i] == 1}  # read constants: not drawn
    unpacks = set(data["unpacks"])  # drawn as their op, as in the SVG
    nodes = {i for i, box in enumerate(data["scope"])
             if i not in annotation | unpacks and shown_open(box)}
    notes = {}
    back = iter(data["argd"])
    for i, count in enumerate(data["argc"]):
        operands = [i - next(back) for _ in range(count)]
        notes[i] = [strings[data["label"][a]] for a in operands if a in annotation]
    assert holding  # every node has a box
    return clusters, boxes, nodes, notes


def twelve_blocks():
    def block(x):
        return np.tanh(x @ np.eye(4, dtype=np.float32)) + x

    def model(x):
        for _ in range(12):
            x = block(x)
        return x

    return cv.capture(lambda x: model(x), cv.spec((1, 4)))


def test_rules_are_the_ones_both_renderers_default_to():
    from capviz.render.svg import DEFAULT_BUDGET
    from capviz.render.view import DEFAULT_BUDGET as VIEW_BUDGET

    assert DEFAULT_BUDGET == VIEW_BUDGET == RULES.budget
    assert twelve_blocks().view().budget == RULES.budget


@pytest.mark.parametrize("budget", [3, 14, 20, RULES.budget])
def test_twelve_blocks_fold_the_same_way_in_both(budget):
    graph = twelve_blocks()
    svg, view = svg_picture(graph, budget), view_picture(graph, budget)
    assert svg[:3] == view[:3]
    blocks = [f"block[{k}]" for k in range(12)]
    if budget == 3:  # one `block × 12` box, nothing of it open
        assert svg[0] == ["model"] and svg[1] == ["block \u00d7 12"]
    elif budget == 14:  # the fold open: its twelve blocks side by side, closed
        assert svg[0] == sorted(["block \u00d7 12", "model"])
        assert svg[1] == sorted(blocks)
    elif budget == 20:  # the first block open, the other eleven closed beside it
        assert svg[0] == sorted(["block[0]", "block \u00d7 12", "model"])
        assert svg[1] == sorted(blocks[1:])
        first = {n.index for n in graph.nodes if n.scope == "model/block[0]" and n.kind == "op"}
        assert first <= svg[2]
    else:  # the default budget fits everything: every block open
        assert svg[0] == sorted(["block \u00d7 12", "model", *blocks])
        assert svg[1] == []
        assert {n.index for n in graph.ops} <= svg[2]


def test_a_chain_with_a_shared_constant_draws_it_as_an_annotation_in_both():
    mask = np.full((4,), 0.5, np.float32)

    def chain(x):
        for _ in range(60):
            x = x * mask
        return x

    graph = cv.capture(chain, cv.spec((4,)))
    (const,) = graph.constants
    for budget in (RULES.budget, 1000):
        svg, view = svg_picture(graph, budget), view_picture(graph, budget)
        assert svg[:3] == view[:3]
        assert const.index not in svg[2] and const.index not in view[2]
        for n in graph.ops:
            if n.index in svg[2]:
                assert svg[3][n.index] == ["mask float32[4]"]
                assert view[3][n.index] == ["mask float32[4]"]
    # 62 items (x, 60 ops, the output): two program-order groups, opened within the budget
    svg = svg_picture(graph, RULES.budget)
    assert svg[0] == ["%0\u2026%48", "%49\u2026%62"]
    assert len(svg[2]) == 62


def test_a_long_flat_graph_groups_the_same_way_in_both():
    def flat(x):
        for _ in range(3000):
            x = np.tanh(x)
        return x

    graph = cv.capture(flat, cv.spec((2,)))
    svg, view = svg_picture(graph, RULES.budget), view_picture(graph, RULES.budget)
    assert svg[:3] == view[:3]
    # 3,002 items: 63 groups of 48, in two groups of groups, opened (63 boxes fit)
    assert len(svg[0]) == 2 and len(svg[1]) == 63 and not svg[2]
    assert svg[1][0] == "%0\u2026%47"
