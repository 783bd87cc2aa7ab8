"""A data_read violation links to the tensor that was read: an edge keyed ``reads`` from that
tensor's node to the violation, in graph.nx, after save/load, and in the drawing."""

import json

import numpy as np
import pytest

import capviz as cv


def reads_edges(graph):
    return [(u, v) for u, v, key, data in graph.nx.edges(keys=True, data=True)
            if key == "reads" and data["kind"] == "reads"]


def capture_reads():
    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        x = scope.input("x", (2,))
        c = scope.constant(np.ones(2, np.float32), name="c")
        y = np.tanh(x)
        total = y.sum()
        float(total)
        bool(y[0] > 0)
        y.numpy()
        c.numpy()  # a constant's value is known: not a violation
        scope.output(y * c, "out")
    return scope.graph


def test_each_data_read_links_to_the_tensor_it_read():
    graph = capture_reads()
    by_call = {v.call: v.order for v in graph.violations}
    assert sorted(by_call) == [".numpy()", "bool()", "float()"]
    read = {call: graph.nodes[u] for u, v in reads_edges(graph)
            for call, order in by_call.items() if order == v}
    assert read["float()"].op == "sum"
    assert read["bool()"].op == "greater"
    assert read[".numpy()"].op == "tanh"
    assert len(reads_edges(graph)) == 3


def test_reads_edges_survive_save_and_load(tmp_path):
    graph = capture_reads()
    graph.save(str(tmp_path / "g.json"))
    loaded = cv.load(str(tmp_path / "g.json"))
    assert reads_edges(loaded) == reads_edges(graph)


def test_reads_edges_are_drawn():
    graph = capture_reads()
    dot = graph.to_dot().source
    for u, v in reads_edges(graph):
        assert any(line.strip().startswith(f"n{u} -> n{v}") and "dotted" in line
                   for line in dot.splitlines()), (u, v)


@pytest.mark.parametrize("target", [99, -1, True, "1", 4])
def test_a_forged_read_target_is_refused_at_load(tmp_path, target):
    graph = capture_reads()
    path = tmp_path / "g.json"
    graph.save(str(path))
    doc = json.loads(path.read_text())
    violation = next(n for n in doc["nodes"] if n["kind"] == "violation")
    if target == 4:  # a later node, not an earlier tensor
        target = violation["index"] + 1
    violation["params"]["target"] = target
    path.write_text(json.dumps(doc))
    with pytest.raises((cv.GraphFormatError, cv.GraphVerifyError),
                       match="a data read's target must be an earlier tensor node"):
        cv.load(str(path))
