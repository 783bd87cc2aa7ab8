"""Replay on NumPy: inputs checked, results bit-identical to eager, compiled once."""

import numpy as np
import pytest
from conftest import assert_bitwise

import capviz as cv


@pytest.fixture
def graph():
    w = np.full((4, 3), 0.5, np.float32)
    return cv.capture(lambda x, y: (np.tanh(x @ w) + y, y * 2), cv.spec((2, 4)),
                      cv.spec((3,), "float64"))


def test_replay_returns_outputs_by_name(graph):
    out = graph.replay({"x": np.ones((2, 4), np.float32), "y": np.zeros(3)}, backend="numpy")
    assert list(out) == ["out0", "out1"] and out.backend == "numpy"
    assert out["out0"].dtype == np.float64


@pytest.mark.parametrize("inputs,message", [
    ({"x": np.ones((2, 4), np.float32)}, r"missing input 'y': expected float64\[3\]"),
    ({"x": np.ones((2, 4), np.float32), "y": np.zeros(3), "z": 1},
     "unexpected input 'z': the graph's inputs are x, y"),
    ({"x": np.ones((4, 2), np.float32), "y": np.zeros(3)},
     r"input 'x': expected float32\[2,4\], got float32\[4,2\]"),
    ({"x": np.ones((2, 4), np.float64), "y": np.zeros(3)},
     r"input 'x': expected float32\[2,4\], got float64\[2,4\]"),
    ({"x": [[1.0] * 4] * 2, "y": np.zeros(3)}, "input 'x' must be an array.*got list"),
    ({"x": np.ones((2, 4), np.float32), "y": 3.0}, "input 'y' must be an array.*got float"),
    ({"x": cv.tensor(np.ones((2, 4), np.float32), device=cv.Device("numpy")),
      "y": np.zeros(3)}, None),
])
def test_replay_input_errors_name_input_expected_and_got(graph, inputs, message):
    if message is None:  # eager tensors are accepted
        assert graph.replay(inputs, backend="numpy")["out1"].tolist() == [0, 0, 0]
        return
    with pytest.raises(cv.ReplayInputError, match=message):
        graph.replay(inputs, backend="numpy")


@pytest.mark.parametrize("inputs", [np.array(2.5), np.ones((2, 4), np.float32),
                                    [np.ones((2, 4), np.float32), np.zeros(3)], 3.0])
def test_inputs_that_are_not_a_mapping_are_refused_with_the_names(graph, inputs):
    # an ndarray, a list or a number: NumPy's own errors (len() of a 0-d array, an array's
    # truth value) or a list read as key/value pairs ("missing input") before
    with pytest.raises(cv.ReplayInputError) as caught:
        graph.replay(inputs, backend="numpy")
    assert str(caught.value) == (
        f"inputs: expected a mapping of input name to value, got {type(inputs).__name__}; "
        "the graph's inputs are x, y. Fix: graph.replay({'x': ..., 'y': ...}), or "
        "graph.compile()(...) to pass them in order")


def test_a_capture_tensor_is_not_a_replay_input(graph):
    with cv.CaptureDevice().capture_scope() as scope:
        x = scope.input("x", (2, 4))
        with pytest.raises(cv.ReplayInputError, match="input 'x' is a capture tensor, which has "
                                                      "no value"):
            graph.replay({"x": x, "y": np.zeros(3)}, backend="numpy")
        scope.output(x)


def test_replay_is_compiled_once_and_reused(graph):
    inputs = {"x": np.ones((2, 4), np.float32), "y": np.zeros(3)}
    graph.replay(inputs, backend="numpy")
    programs = list(graph.replay_cache.values())
    graph.replay(inputs, backend="numpy")
    assert list(graph.replay_cache.values()) == programs


def test_replay_frees_each_intermediate_after_its_last_use():
    import tracemalloc

    def chain(x):
        y = np.sin(x)
        for _ in range(12):
            y = np.exp(y * 0.5) - 1.0
        return y + x  # x stays alive to the end; the intermediates must not

    g = cv.capture(chain, cv.spec((1 << 20,), "float64"))  # 8 MiB per value
    x = np.ones(1 << 20)
    g.replay({"x": x}, backend="numpy")
    tracemalloc.start()
    g.replay({"x": x}, backend="numpy")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 3.5 * x.nbytes, peak / x.nbytes  # 26 ops, at most ~3 live values at once


def test_replay_error_names_node_op_and_source():
    g = cv.capture(lambda x, i: np.take(x, i, axis=0), cv.spec(3), cv.spec(2, "int64"))
    with pytest.raises(cv.ReplayError, match=r"node %2 \(take\) of float32\[3\], int64\[2\], "
                                             r"recorded at .*test_executor\.py:\d+ in <lambda>"):
        g.replay({"x": np.ones(3, np.float32), "i": np.array([0, 7])}, backend="numpy")


def test_unknown_backend(graph):
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        graph.replay({}, backend="tpu")


def test_transformer_block_in_plain_numpy_replays_bit_for_bit():
    from capviz.models import transformer_block, transformer_weights

    p = transformer_weights(d=16, heads=2)
    x = np.random.default_rng(3).standard_normal((8, 16)).astype(np.float32)
    graph = cv.capture(lambda x: transformer_block(x, p), cv.spec(x.shape, x.dtype))
    graph.verify()
    ops_used = {n.op for n in graph.ops}
    assert {"split", "hstack", "tanh", "where", "matmul", "var", "exp"} <= ops_used
    assert any(n.kind == "constant" and n.dtype == bool for n in graph.nodes)  # np.tri mask
    for _ in range(2):
        assert_bitwise(graph.replay({"x": x}, backend="numpy")["out"], transformer_block(x, p))


def test_zero_size_and_0d_tensors():
    g = cv.capture(lambda x, s: (x * 2, s + 1, x.sum()), cv.spec((0, 3)), cv.spec(()))
    out = g.replay({"x": np.zeros((0, 3), np.float32), "s": np.array(2.0, np.float32)})
    assert out["out0"].shape == (0, 3) and out["out1"].shape == () and float(out["out2"]) == 0.0


def test_huge_shapes_record_without_allocating():
    g = cv.capture(lambda x, y: (x @ y).sum(axis=0) + 1, cv.spec((10**6, 10**6)),
                   cv.spec((10**6, 10**6)))
    assert g.ops[0].shape == (10**6, 10**6)


@pytest.mark.parametrize("kind", ["dask", "jax"])
def test_a_replay_only_backend_is_no_eager_device(kind):
    with pytest.raises(ValueError, match=rf"'{kind}' is a replay-only backend, not an eager "
                                         rf"device \(expected 'numpy' or 'cupy'\): capture on "
                                         rf"cv\.Device\('numpy'\) and run the graph with "
                                         rf"graph\.replay\(inputs, backend='{kind}'\)"):
        cv.Device(kind)
    from capviz.backends import registry

    assert cv.Device("auto").kind == registry.resolve().name  # as backend="auto"


def test_backend_options_are_checked_and_not_taken_by_check_finite():
    g = cv.capture(lambda x: x * 2, cv.spec(3))
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match=r"the numpy backend takes no option 'chunks' "
                                        r"\(its options: none\)"):
        g.replay({"x": x}, backend="numpy", chunks=2)
    with pytest.raises(TypeError, match=r"the numpy backend takes no option 'chunks'"):
        g.compile(backend="numpy", chunks=2)
    assert g.replay({"x": x}, backend="numpy").backend == "numpy"


# --- inputs that are NumPy scalars (review 16) ----------------------------------------------------

def _square_magnitude(z):
    return abs(z * z)  # a complex scalar's own * and abs(): they round otherwise than the loops


def test_a_numpy_scalar_for_a_0d_array_input_is_refused():
    graph = cv.capture(_square_magnitude, cv.spec((), "complex128"))
    # a 0-d array's * is ndarray's loop; its result is a NumPy scalar, whose abs() is its own
    assert [node.op for node in graph.ops] == ["multiply", "scalar_absolute"]
    with pytest.raises(cv.ReplayInputError,
                       match=r"input 'z' was captured as a 0-d array complex128\[\] and got a "
                             r"NumPy scalar numpy.complex128.*pass np.asarray\(z\), or capture "
                             r"with a NumPy scalar example \(scope.input\('z', "
                             r"np.complex128\(0\)\)\)"):
        graph.replay({"z": np.complex128(0.6 + 0.8j)})
    z = np.asarray(0.6 + 0.8j)
    assert_bitwise(graph.replay({"z": z})["out"], _square_magnitude(z))


@pytest.mark.parametrize("capture", [
    lambda: cv.capture(_square_magnitude, np.complex128(0)),
    lambda: _scope_capture(np.complex128(0)),
], ids=["capture", "scope.input"])
def test_an_input_captured_with_a_numpy_scalar_replays_scalar_math(capture):
    graph = capture()
    assert [node.op for node in graph.ops] == ["scalar_multiply", "scalar_absolute"]
    rng = np.random.default_rng(3)
    for _ in range(200):
        z = np.complex128(complex(*rng.standard_normal(2)))
        assert_bitwise(graph.replay({"z": z})["out"], np.asarray(_square_magnitude(z)))
    with pytest.raises(cv.ReplayInputError,
                       match=r"input 'z' was captured as a NumPy scalar numpy.complex128 and got "
                             r"a 0-d array.*pass z\[\(\)\], the scalar"):
        graph.replay({"z": np.asarray(z)})
    compiled = graph.compile(backend="numpy")  # the positional fast path checks it too
    with pytest.raises(cv.ReplayInputError, match="got a 0-d array"):
        compiled(np.asarray(z))


def _scope_capture(example):
    with cv.CaptureDevice().capture_scope() as scope:
        z = scope.input("z", example)
        scope.output(_square_magnitude(z), "out")
    return scope.graph


def test_a_scalar_input_is_immutable_and_survives_save_and_load(tmp_path):
    def f(s):
        s += 1  # a NumPy scalar rebinds; the caller's value is unchanged
        return s ** 1.5

    graph = cv.capture(f, np.float32(0))
    assert [node.op for node in graph.ops] == ["add", "scalar_power"]
    graph.save(str(tmp_path / "g.json"))
    loaded = cv.load(str(tmp_path / "g.json"))
    s = np.float32(2.5)
    assert_bitwise(loaded.replay({"s": s})["out"], np.asarray(f(s)))
