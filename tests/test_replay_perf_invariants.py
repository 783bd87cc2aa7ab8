"""What replay performance rests on (issue 14), checked without clocks: the compiled replay is
rebuilt whenever the graph changes, ``graph.compile()`` takes positional inputs and checks them,
and compiling costs memory linear in the graph (under 1 KB per op)."""

import tracemalloc
import warnings

import numpy as np
import pytest

import capviz as cv
from capviz.replay.program import Program


def scaled():
    w = np.full(3, 2.0, np.float32)
    return cv.capture(lambda x: x * w + 1, cv.spec(3))


X = np.ones(3, np.float32)


def test_replacing_a_constant_is_seen_by_replay_compile_and_executor():
    graph = scaled()
    fn = graph.compile(backend="numpy")
    assert graph.replay({"x": X}, backend="numpy")["out"].tolist() == [3, 3, 3]
    (const,) = graph.constants
    graph.constant_values[const.index] = np.full(3, 5.0, np.float32)
    assert graph.replay({"x": X}, backend="numpy")["out"].tolist() == [6, 6, 6]
    assert fn(X)[0].tolist() == [6, 6, 6]
    ex = graph.executor({"x": X}, backend="numpy")
    ex.run()
    assert ex.outputs()["out"].tolist() == [6, 6, 6]


def test_editing_a_node_in_place_is_seen_after_graph_changed():
    graph = scaled()
    fn = graph.compile(backend="numpy")
    assert fn(X)[0].tolist() == [3, 3, 3]
    add = graph.ops[-1]
    add.args = (add.args[0], 10)
    graph.changed()
    assert fn(X)[0].tolist() == [12, 12, 12]
    assert graph.replay({"x": X}, backend="numpy")["out"].tolist() == [12, 12, 12]


def test_every_version_bump_path():
    graph = scaled()
    seen = [graph.version]
    (const,) = graph.constants
    values = graph.constant_values
    for change in (lambda: values.update({const.index: values[const.index]}),
                   lambda: values.setdefault(99, np.zeros(1)),
                   lambda: values.pop(99),
                   graph.changed):
        change()
        assert graph.version > seen[-1]
        seen.append(graph.version)


def test_compiled_replay_takes_positional_inputs_and_checks_them():
    graph = cv.capture(lambda x, y: (x + y, x * y), cv.spec(3), cv.spec(3, "float64"))
    fn = graph.compile(backend="numpy")
    y = np.full(3, 2.0)
    a, b = fn(X, y)
    assert a.dtype == np.float64 and a.tolist() == [3, 3, 3] and b.tolist() == [2, 2, 2]
    with pytest.raises(cv.ReplayInputError, match=r"expected 2 inputs \(x, y\), got 1"):
        fn(X)
    with pytest.raises(cv.ReplayInputError, match=r"input 'y': expected float64\[3\], "
                                                  r"got float32\[3\]"):
        fn(X, X)
    with pytest.raises(cv.ReplayInputError, match="input 'x' must be an array"):
        fn([1, 2, 3], y)
    tensor = cv.tensor(X, device=cv.Device("numpy"))  # converted as replay() converts it
    assert fn(tensor, y)[0].tolist() == [3, 3, 3]


def test_compile_refuses_a_graph_with_violations():
    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        x = scope.input("x", (3,))
        np.random.seed(1)
        scope.output(x * 2)
    with pytest.raises(cv.IncompleteGraphError):
        scope.graph.compile(backend="numpy")
    fn = scope.graph.compile(backend="numpy", allow_violations=True)
    assert fn(X)[0].tolist() == [2, 2, 2]


def test_random_graphs_replay_their_seed_through_compile():
    dev = cv.Device("numpy")
    dev.seed(3)
    graph = cv.capture(lambda x: x + cv.random.uniform((3,)), cv.spec(3), rng=dev)
    fn = graph.compile(backend="numpy")
    expected = graph.replay({"x": X}, backend="numpy")["out"]
    assert fn(X)[0].tobytes() == expected.tobytes()
    assert graph.compile(backend="numpy", seed=4)(X)[0].tobytes() \
        == graph.replay({"x": X}, backend="numpy", seed=4)["out"].tobytes()


def test_a_failing_step_names_its_node_and_warnings_point_at_the_user():
    graph = cv.capture(lambda x, i: np.log(x)[:2] + np.take(x, i), cv.spec(3),
                       cv.spec(2, "int64"))
    fn = graph.compile(backend="numpy")
    with pytest.raises(cv.ReplayError, match=r"node %4 \(take\).*test_replay_perf_invariants"):
        fn(X, np.array([0, 9]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(np.zeros(3, np.float32), np.array([0, 1]))
    (w,) = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert "divide by zero encountered in log" in str(w.message)
    assert w.filename == __file__


def _chain_graph(n):
    def fn(x):
        for _ in range(n // 2):
            x = x * 1.0001
            x = x + 0.5
        return x

    return cv.capture(fn, cv.spec((4,)))


@pytest.mark.parametrize("n", [1_000, 20_000])
def test_compiling_costs_under_1_kb_per_op(n):
    graph = _chain_graph(n)
    tracemalloc.start()
    try:
        prog = Program(graph, "numpy")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak / n < 1024, peak / n
    assert len(prog.table) == n  # one step per op: no kill steps in a chain


def test_the_table_holds_one_step_per_op_and_registers_stay_few():
    graph = _chain_graph(10_000)
    prog = Program(graph, "numpy")
    assert len(prog.table) == 10_000
    assert len(prog._template) <= 8  # value registers, two shared literals, the seed
    x = np.ones(4, np.float32)
    y = x
    for _ in range(5_000):
        y = y * 1.0001
        y = y + 0.5
    assert prog((x,), 0)[0].tobytes() == y.tobytes()
