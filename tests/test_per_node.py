"""Built-in numbers per node to colour the view by (issue 23): ``graph.metric("time" |
"bytes" | "error")``, from capviz.replay.per_node and the memory plan."""

import numpy as np
import pytest

import capviz as cv
from capviz.render.view import fragment, read_data
from capviz.replay.per_node import _max_difference, node_errors, node_times


def heavy_then_light():
    return cv.capture(lambda x: (x @ x) + 1.0, cv.spec((384, 384), "float32"))


def ops_of(graph):
    return {n.index: n for n in graph.nodes if n.kind == "op"}


def test_time_is_each_ops_median_time_in_a_profiled_replay():
    graph = heavy_then_light()
    x = np.random.default_rng(0).standard_normal((384, 384)).astype(np.float32)
    name, times = graph.metric("time", {"x": x})
    assert name == "time on numpy (s)"
    ops = ops_of(graph)
    assert set(times) == set(ops)
    matmul = next(i for i, n in ops.items() if n.op == "matmul")
    add = next(i for i, n in ops.items() if n.op == "add")
    assert times[matmul] > 5 * times[add] > 0  # 56M multiply-adds against 147k additions
    # the view draws it with its legend
    data = read_data(fragment(graph, metric=(name, times)))
    assert data["metric"]["name"] == name and set(data["metric"]["values"]) == {
        str(i) for i in ops}


def test_time_refuses_a_lazy_engine_and_no_rounds():
    graph = heavy_then_light()
    x = np.ones((384, 384), np.float32)
    with pytest.raises(ValueError, match="dask builds a task graph and computes it at the end"):
        node_times(graph, {"x": x}, backend="dask")
    with pytest.raises(ValueError, match="rounds must be at least 1, got 0"):
        node_times(graph, {"x": x}, rounds=0)


def test_bytes_are_what_each_op_allocates_in_the_memory_plan():
    graph = cv.capture(lambda x: np.tanh(np.exp(x) * 2.0).reshape(-1), cv.spec((64, 64)))
    name, allocated = graph.metric("bytes")
    assert name == "bytes allocated (memory plan)"
    assert allocated == graph.memory_plan().allocated
    ops = ops_of(graph)
    reshape = next(i for i, n in ops.items() if n.op == "reshape")
    assert allocated[reshape] == 0  # a view allocates nothing
    assert max(allocated.values()) == 64 * 64 * 4


def test_error_is_each_ops_largest_difference_against_another_engine():
    graph = cv.capture(lambda x: np.exp(x).sum(axis=1) / 3.0, cv.spec((64, 256), "float32"))
    x = np.random.default_rng(1).standard_normal((64, 256)).astype(np.float32)
    name, same = graph.metric("error", {"x": x}, against="numpy")
    assert name == "max abs error, numpy vs numpy"
    assert same == {i: 0.0 for i in ops_of(graph)}
    pytest.importorskip("jax")
    name, errors = graph.metric("error", {"x": x}, against="jax")
    assert name == "max abs error, numpy vs jax" and set(errors) == set(ops_of(graph))
    eager = {"exp": np.exp(x)}
    eager["sum"] = eager["exp"].sum(axis=1)
    for i, n in ops_of(graph).items():  # float32 rounding: never large
        scale = float(np.abs(eager.get(n.op, eager["sum"] / 3.0)).max())
        assert 0 <= errors[i] <= 1e-5 * scale
    assert errors == node_errors(graph, {"x": x}, "numpy", "jax")


def test_the_difference_counts_nan_or_inf_on_one_side_only():
    nan, inf = np.nan, np.inf
    assert _max_difference(np.array([1.0, nan, inf]), np.array([1.0, nan, inf])) == 0.0
    assert _max_difference(np.array([1.0, nan]), np.array([1.0, 2.0])) == inf
    assert _max_difference(np.array([inf]), np.array([-inf])) == inf
    assert _max_difference(np.array([1.0, 2.0]), np.array([1.5, 2.0])) == 0.5
    assert _max_difference(np.array([1, 2]), np.array([1.0, 2.0, 3.0])) is None
    assert _max_difference(np.array(["a"]), np.array(["a"])) is None


def test_an_unknown_metric_is_refused_by_name():
    with pytest.raises(ValueError, match="metric must be 'time', 'bytes' or 'error', got 'flops'"):
        heavy_then_light().metric("flops")
