"""save/load: JSON + npz, never pickle; corrupt or hand-edited files give GraphFormatError."""

import json
import os

import numpy as np
import pytest

import capviz as cv
from capviz.testing import assert_graph_equal


@pytest.fixture
def saved(tmp_path):
    w = np.arange(12, dtype=np.float32).reshape(4, 3)

    def f(x):
        with cv.name_scope("blk"):
            a, b = np.split(x @ w, [1], axis=-1)
        return np.concatenate([b, a[:, ::-1]], axis=1)[..., None] * np.float64(0.5)

    graph = cv.capture(f, cv.spec((2, 4)))
    path = tmp_path / "g.json"
    graph.save(str(path))
    return graph, path


def test_round_trip(saved):
    graph, path = saved
    loaded = cv.load(str(path))
    assert_graph_equal(loaded, graph)
    assert loaded.complete and loaded.inputs == ["x"]
    assert [n.source for n in loaded.nodes] == [n.source for n in graph.nodes]
    x = np.ones((2, 4), np.float32)
    assert np.array_equal(loaded.replay({"x": x})["out"], graph.replay({"x": x})["out"])
    assert os.path.exists(str(path)[:-5] + ".npz")


def test_round_trip_keeps_special_values(tmp_path):
    g = cv.capture(lambda x: np.where(x > 0, x, -np.inf) + x[..., 1:2] * float("nan"),
                   cv.spec((2, 3), "float64"))
    g.save(str(tmp_path / "s.json"))
    assert_graph_equal(cv.load(str(tmp_path / "s.json")), g)
    json.loads((tmp_path / "s.json").read_text())  # strict JSON: no NaN literals


def edit(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("change,message", [
    (lambda d: d["nodes"][2].update(op="frobnicate"), "unknown op 'frobnicate'"),
    (lambda d: d["nodes"][2].update(kind="weird"), "unknown kind 'weird'"),
    (lambda d: d["nodes"][2]["args"].__setitem__(0, {"ref": 9}), "not earlier in program order"),
    (lambda d: d["nodes"].pop(1), "has index 2, expected 1"),
    (lambda d: d["nodes"][2].update(shape=[7, 7]), "recorded as float32[7, 7] but matmul"),
    (lambda d: d["nodes"][2].update(dtype="object"), "not a numeric dtype"),
    (lambda d: d["nodes"][2].update(shape="big"), "shape must be a list"),
    (lambda d: d.update(version=99), "version 99 is not supported"),
    (lambda d: d.update(format="other"), "not a capviz graph"),
    (lambda d: d.update(constants="../../etc/passwd"), "plain file name"),
    (lambda d: d["nodes"][2]["params"].update(evil={"$code": "1"}), "unrecognised value"),
    (lambda d: d["nodes"][2]["params"].update(axis=1), "unknown params ['axis']"),
])
def test_hand_edited_files_are_format_errors(saved, change, message):
    _, path = saved
    edit(path, change)
    with pytest.raises(cv.GraphFormatError, match=message.replace("[", r"\[").replace("]", r"\]")):
        cv.load(str(path))


def test_truncated_json(saved):
    _, path = saved
    path.write_text(path.read_text()[:100])
    with pytest.raises(cv.GraphFormatError, match="not valid JSON"):
        cv.load(str(path))


def test_missing_constant_array(saved):
    _, path = saved
    npz = str(path)[:-5] + ".npz"
    np.savez(npz)
    with pytest.raises(cv.GraphFormatError, match="its array 'c1' is absent"):
        cv.load(str(path))


def test_missing_constants_file(saved):
    _, path = saved
    os.remove(str(path)[:-5] + ".npz")
    with pytest.raises(cv.GraphFormatError, match="constants file .* is missing"):
        cv.load(str(path))


def test_pickled_object_array_is_refused(saved):
    _, path = saved
    npz = str(path)[:-5] + ".npz"
    np.savez(npz, c1=np.array([{"x": 1}, None], dtype=object))
    with pytest.raises(cv.GraphFormatError, match="cannot be loaded safely"):
        cv.load(str(path))


def test_corrupt_npz(saved):
    _, path = saved
    npz = str(path)[:-5] + ".npz"
    with open(npz, "wb") as f:
        f.write(b"PK\x03\x04 not a zip")
    with pytest.raises(cv.GraphFormatError, match="corrupt or truncated"):
        cv.load(str(path))


def test_constant_of_wrong_shape(saved):
    _, path = saved
    np.savez(str(path)[:-5] + ".npz", c1=np.zeros((2, 2), np.float32))
    with pytest.raises(cv.GraphFormatError, match=r"array is float32\[2, 2\] but the node says"):
        cv.load(str(path))


def test_missing_file(tmp_path):
    with pytest.raises(cv.GraphFormatError, match="no graph file"):
        cv.load(str(tmp_path / "nope.json"))
