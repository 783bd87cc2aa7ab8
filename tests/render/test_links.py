"""Violations are linked to what they affect, never by program order (issue 23): a frozen draw
to the ops that read its values, in the static SVG (parsed as XML) and in the view's data."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import capviz as cv
from capviz.render.links import assigned_name, violation_edges
from capviz.render.view import fragment, read_data

SVG = "{http://www.w3.org/2000/svg}"


def frozen_draws():
    """Two frozen draws: one assigned to ``noise`` and read two lines later, one read on its
    own line; an unrelated op before each."""
    cap = cv.CaptureDevice()
    with cap.capture_scope(on_violation="record", global_random="violation") as scope:
        x = scope.input("x", (4,), "float32")
        noise = np.random.rand(4).astype(np.float32)
        y = x * 2.0
        z = y + noise
        w = y * np.random.rand(4)
        scope.output(z + w, "z")
    return scope.graph


def drawn_edges(svg):
    root = ET.fromstring(svg)
    return {" ".join(g.find(f"{SVG}title").text.split("->"))
            for g in root.iter(f"{SVG}g") if g.get("class") == "edge"}


def test_a_frozen_draw_is_linked_to_the_ops_that_read_it_never_to_the_op_before_it():
    graph = frozen_draws()
    draws = [n for n in graph.nodes if n.kind == "violation"]
    assert [d.op for d in draws] == ["frozen_random", "frozen_random"]
    noise = graph.node("noise")
    readers = [[n.index for n in graph.nodes if noise in [a for _, a in n.operands]]]
    inline = next(n for n in graph.nodes if n.kind == "constant" and n.index > draws[1].index)
    readers.append([n.index for n in graph.nodes if inline in [a for _, a in n.operands]])
    assert all(readers)
    expected = {(d.index, r) for d, rs in zip(draws, readers) for r in rs}
    links = {(u, v) for u, v, key in violation_edges(graph) if key == "affects"}
    assert links == expected
    # the static SVG draws those links and no program-order edge into a violation
    edges = drawn_edges(graph.to_svg())
    assert {f"n{u} n{v}" for u, v in expected} <= edges
    assert not any(e.endswith(f" n{d.index}") for e in edges for d in draws)
    # the view draws the same links and nothing else for them
    assert {tuple(pair) for pair in read_data(fragment(graph))["links"]} == expected


def test_assigned_name_reads_the_plain_name_a_line_assigns(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("noise = f()\nmask: list = g()\nx[0] = 1\ny == 2\nh(z=3)\n")
    names = [assigned_name((str(source), k, "m")) for k in range(1, 6)]
    assert names == ["noise", "mask", None, None, None]
    assert assigned_name(None) is None and assigned_name((str(source), None, "m")) is None


def test_a_first_nan_on_an_unpack_is_marked_on_the_op_it_is_drawn_as():
    # an unpack is drawn as its op (22cd2fd); a NaN input split in two is first non-finite
    # at the split itself (the check looks inside a multi-output op's tuple), and a mark that
    # still lands on an unpack (a graph saved before that) names the split in the view
    from capviz.render.view_data import view_data

    def f(x):
        a, b = np.split(x, 2)
        return a * 2 + b

    graph = cv.capture(f, cv.spec(4))
    split = next(n.index for n in graph.nodes if n.op == "split")
    with pytest.raises(cv.NonFiniteError, match=f"node %{split} \\(split"):
        graph.replay({"x": np.array([1.0, np.nan, 2.0, 3.0], np.float32)}, check_finite=True)
    assert graph.marks == {"nonfinite": split, "nonfinite_operand": 0, "nonfinite_source": 0}
    assert view_data(graph)["marks"] == graph.marks
    graph.marks.update(nonfinite=2)
    data = view_data(graph)
    assert 2 in data["unpacks"]
    assert data["marks"]["nonfinite"] == split
