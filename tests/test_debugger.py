"""The executor as a debugger: stepping, breakpoints, values, first NaN, first divergence, stats."""

import re
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import capviz as cv


def model(x):
    h = np.tanh(x * 2.0)  # LINE h
    y = h @ np.ones((3, 3), np.float32)
    return np.exp(y) - 1.0


@pytest.fixture
def graph():
    return cv.capture(model, cv.spec((2, 3)))


X = {"x": np.ones((2, 3), np.float32)}


def test_stepping_order_is_program_order(graph):
    ex = graph.executor(X, backend="numpy")
    seen = []
    while not ex.finished:
        seen.append(ex.step().index)
        assert ex.position == seen[-1] + 1
    assert seen == [n.index for n in graph.nodes]
    with pytest.raises(StopIteration):
        ex.step()
    assert np.array_equal(ex.outputs()["out"], model(X["x"]))


def test_run_until_breakpoints_and_values(graph):
    ex = graph.executor(X, backend="numpy")
    tanh = next(n for n in graph.ops if n.op == "tanh")
    assert ex.run(until=tanh) is tanh
    assert np.array_equal(ex.values[tanh], np.tanh(X["x"] * 2.0))
    assert np.array_equal(ex.values["x"], X["x"])
    with pytest.raises(KeyError, match="has not run yet"):
        ex.values[graph.ops[-1]]
    ex.break_at(graph.ops[-1])
    stopped = ex.run()
    assert stopped is graph.ops[-1] and not ex.finished
    assert ex.run() is None and ex.finished
    ex2 = graph.executor(X, backend="numpy")
    hit = ex2.run(until=lambda node, value: node.op == "matmul")
    assert hit.op == "matmul"


def test_keep_false_frees_values(graph):
    ex = graph.executor(X, backend="numpy", keep=False)
    ex.run()
    assert set(ex.values) == {graph.output_nodes[0].args[0].index} | {
        n.index for n in graph.constants if n.index not in
        {a.index for m in graph.nodes for _, a in m.operands}}


def nan_program(x):
    y = np.log(x - 1.0)  # NAN CAUSE: log of a negative number
    for _ in range(20):
        y = y * 0.5 + 1.0
    return y


def test_check_finite_finds_the_first_nan_20_ops_before_it_shows():
    g = cv.capture(nan_program, cv.spec(4))
    x = np.array([2.0, 3.0, 0.5, 4.0], np.float32)
    with pytest.raises(cv.NonFiniteError) as info:
        g.replay({"x": x}, backend="numpy", check_finite=True)
    err = info.value
    assert err.node.op == "log" and "1 of 4 elements NaN/Inf" in str(err)
    assert "test_debugger.py" in str(err)
    assert g.marks["nonfinite"] == err.node.index
    (operand, value), = err.inputs.items()
    assert operand.op == "subtract" and value[2] == -0.5
    svg = ET.fromstring(g.to_svg())
    marked = next(e for e in svg.iter("{http://www.w3.org/2000/svg}g") if e.get("id") ==
              f"n{err.node.index}")
    assert any(p.get("stroke") == "#dc2626" for p in marked.iter()
               if p.tag.endswith(("path", "polygon")))


def test_compare_finds_the_perturbed_op(graph):
    def perturbed(x):
        h = np.tanh(x * 2.0)
        y = h @ np.full((3, 3), 1.001, np.float32)  # the deliberate change: other weights
        return np.exp(y) - 1.0

    same = graph.compare(model, X)
    assert not same and same.node is None
    found = graph.compare(perturbed, X)
    assert found.node.op == "matmul"
    assert graph.marks["diverged"] == found.node.index
    assert found.message.startswith(f"%{found.node.index} (matmul, recorded at ")
    assert "max abs error" in found.message


def test_compare_reports_a_different_program():
    g = cv.capture(lambda x: np.exp(x) + 1.0, cv.spec(3))
    found = g.compare(lambda x: np.exp(x) * 1.0 + 1.0, {"x": np.ones(3, np.float32)})
    assert found.node.op == "add"
    assert found.message == f"eager ran multiply where the graph has %{found.node.index} add: " \
                            "the programs differ here"


def test_compare_reports_the_first_value_difference():
    base = cv.capture(lambda x: np.sin(x) * 3.0 + 1.0, cv.spec(3))

    def off(x):
        return np.sin(x) * 3.001 + 1.0

    found = base.compare(off, {"x": np.ones(3, np.float32)}, rtol=1e-6, atol=0)
    assert found.node.op == "multiply"
    assert found.max_abs == pytest.approx(np.sin(1.0) * 0.001, rel=1e-2)


def test_compare_between_backends_without_a_second_backend(graph):
    found = graph.compare(backend="numpy", against="numpy", inputs=X)
    assert not found


def test_replay_error_names_the_users_line():
    def f(x, i):
        return x[i]  # INDEX LINE

    g = cv.capture(f, cv.spec(3), cv.spec(2, "int64"))
    with pytest.raises(cv.ReplayError, match=r"index.*test_debugger\.py:\d+ in f") as info:
        g.executor({"x": np.ones(3, np.float32), "i": np.array([0, 5])}).run()
    assert info.value.node.op == "index"


def test_stats_appear_in_tooltips(graph):
    stats = graph.compute_stats(X)
    tanh = next(n for n in graph.ops if n.op == "tanh")
    assert stats[tanh.index].max == pytest.approx(np.tanh(2.0))
    assert stats[tanh.index].nan == 0
    svg = ET.fromstring(graph.to_svg())
    titles = [a.get("{http://www.w3.org/1999/xlink}title") for a in svg.iter()
              if a.get("{http://www.w3.org/1999/xlink}title")]
    assert any("max 0.964" in t for t in titles)


class Counting(cv.Executor):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.ops = []

    def run_op(self, node):
        self.ops.append(node.op)
        return super().run_op(node)


def test_executor_methods_can_be_overridden(graph):
    ex = Counting(graph, X, backend="numpy")
    ex.run()
    assert ex.ops == [n.op for n in graph.ops]


def test_compare_holds_float16_values_to_the_backends_float16_tolerance():
    pytest.importorskip("jax")
    x = np.random.default_rng(0).standard_normal((7, 5)).astype(np.float16)
    x = np.where(np.abs(x) < np.finfo(np.float16).tiny, np.float16(0.5), x)  # no subnormals
    graph = cv.capture(lambda a: (a * 2).sum(axis=0), cv.spec((7, 5), "float16"))
    found = graph.compare(inputs={"a": x}, backend="numpy", against="jax")
    assert not found, found.message  # XLA adds the float16 column sums in another order
    exact = graph.compare(inputs={"a": x}, backend="numpy", against="jax", rtol=0.0, atol=0.0)
    assert exact.node is graph.ops[-1]  # explicit rtol/atol still override
    assert re.search(r"\(sum, recorded at .*test_debugger.py:\d+ in <lambda>\) differs: max abs "
                     r"error 0.00\d+", exact.message), exact.message


def test_nonfinite_error_names_the_scope_the_operand_and_the_sources():
    w = np.ones(4, np.float32)
    w[1] = np.nan  # a poisoned weight: the cause, upstream of the first NaN

    def block(x):
        with cv.name_scope("mlp"):
            return np.tanh(x * 2.0) * w + x

    g = cv.capture(lambda x: block(x) + 1.0, cv.spec(4, "float32"))
    (weight,) = g.constants
    with pytest.raises(cv.NonFiniteError) as info:
        g.replay({"x": np.ones(4, np.float32)}, check_finite=True)
    err = info.value
    assert err.node.op == "multiply" and err.scope.endswith("mlp")
    assert f"in scope {err.scope}, recorded at" in str(err)
    assert err.operands == [1]
    assert f"operand 1 (%{weight.index} w (constant)) holds NaN/Inf" in str(err)
    assert [s.index for s in err.sources] == [weight.index]
    assert g.marks["nonfinite_operand"] == g.marks["nonfinite_source"] == weight.index
    # a NaN the op itself makes: its operands are finite, no source
    h = cv.capture(lambda x: np.log(x - 3.0), cv.spec(2, "float32"))
    with pytest.raises(cv.NonFiniteError) as info, np.errstate(invalid="ignore"):
        h.replay({"x": np.ones(2, np.float32)}, check_finite=True)
    assert "its operands are finite: log made the NaN/Inf" in str(info.value)
    assert info.value.operands == [] and info.value.sources == []
    assert "in scope (top level)" in str(info.value)
    assert "nonfinite_operand" not in h.marks and "nonfinite_source" not in h.marks


def test_a_nan_through_a_multi_output_op_is_reported_at_that_op_not_at_its_unpack():
    # np.split returns a tuple; the check used to skip tuples and report the `unpack`
    # after it, saying "its operands are finite: unpack made the NaN/Inf"
    g = cv.capture(lambda x: np.split(x, 2)[1] * 2.0, cv.spec(4, "float64"))
    x = np.array([1.0, 2.0, np.nan, 4.0])
    with pytest.raises(cv.NonFiniteError) as info:
        g.replay({"x": x}, check_finite=True)
    err = info.value
    assert err.node.op == "split"
    assert "(split, 1 of 4 elements NaN/Inf)" in str(err)
    assert "operand 0 (%0 x (input)) holds NaN/Inf" in str(err)
    assert "unpack" not in str(err)
    assert g.marks["nonfinite"] == err.node.index
    # a split that makes its NaN from finite operands is the op that made it
    h = cv.capture(lambda x: np.split(np.log(x - 3.0), 2)[0], cv.spec(4, "float64"))
    with pytest.raises(cv.NonFiniteError) as info, np.errstate(invalid="ignore"):
        h.replay({"x": np.ones(4)}, check_finite=True)
    assert "its operands are finite: log made the NaN/Inf" in str(info.value)


def test_compare_sees_a_difference_in_the_imaginary_part_alone():
    # the comparison cast complex values to float64, dropping the imaginary part (and warning)
    x = {"x": np.array([1.0, 2.0])}
    g = cv.capture(lambda x: x * 1j + 1.0, cv.spec(2, "float64"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning
        found = g.compare(lambda x: x * 5j + 1.0, inputs=x)
    assert found and found.node.op == "multiply"
    assert found.max_abs == 8.0
    assert not g.compare(lambda x: x * 1j + 1.0, inputs=x)


def test_compare_tells_integers_apart_past_two_to_the_53():
    big = 2**53
    g = cv.capture(lambda x: x + 1, cv.spec(1, "int64"))
    found = g.compare(lambda x: x + 0, inputs={"x": np.array([big])})  # 2**53 + 1 vs 2**53
    assert found and found.node.op == "add"
