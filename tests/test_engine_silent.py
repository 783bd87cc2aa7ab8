"""Issue 25: never silent on an engine. One regression test per class of values where an
engine's arithmetic is not NumPy's: the engine computes NumPy's value, or the replay fails at
the node with the user's line (docs/guide/replay.md, "Where an engine's arithmetic differs from
NumPy's")."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")
pytest.importorskip("dask")

F32 = np.finfo(np.float32)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def capture(fn, *arrays):
    return cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])


def feed(graph, arrays):
    return dict(zip(graph.inputs, arrays))


def fails_at_node_on_jax(fn, arrays, message, **options):
    """The NumPy replay is eager NumPy's; the JAX replay (with ``options``) fails at ``fn``'s
    node, saying why."""
    graph = capture(fn, *arrays)
    with np.errstate(all="ignore"):
        expected = fn(*arrays)
        got = graph.replay(feed(graph, arrays))["out"]
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(cv.ReplayError, match=message) as info:
        graph.replay(feed(graph, arrays), backend="jax", **options)
    assert "test_engine_silent.py" in str(info.value)


def same_on_every_engine(fn, arrays):
    graph = capture(fn, *arrays)
    with np.errstate(all="ignore"):
        expected = np.asarray(fn(*arrays))
        for backend in ("numpy", "jax", "dask"):
            got = graph.replay(feed(graph, arrays), backend=backend, to_numpy=True)["out"]
            assert got.dtype == expected.dtype, backend
            np.testing.assert_array_equal(got, expected, err_msg=backend)


# --- JAX: complex special values --------------------------------------------------------------

COMPLEX = r"complex operand or result is not finite.*C99"


def test_jax_complex_product_of_infinities_fails_at_the_node():
    a = np.array([np.inf + np.inf * 1j, 1 + 1j], np.complex64)
    fails_at_node_on_jax(lambda x, y: x * y, [a, a], COMPLEX)


# complex log1p and sign are refused by name unless arithmetic="xla" (a subnormal part no check
# sees: subnormals/complex_parts.py); with it, they keep the special-value checks of checks.py

def test_jax_log1p_of_a_huge_complex_fails_at_the_node():
    a = np.array([3e38 + 1j, 0.5 + 0.5j], np.complex64)
    fails_at_node_on_jax(np.log1p, [a], COMPLEX, arithmetic="xla")


def test_jax_sign_of_an_overflowing_complex_fails_at_the_node():
    a = np.array([1e30 + 3e38j], np.complex64)
    fails_at_node_on_jax(np.sign, [a], COMPLEX, arithmetic="xla")


def test_jax_minimum_of_complex_nan_fails_at_the_node():
    a = np.array([complex(np.nan, 1.0), 2 + 0j])
    fails_at_node_on_jax(np.minimum, [a, a[::-1].copy()], COMPLEX)


def test_jax_finite_complex_values_still_replay():
    a = np.array([1 + 2j, -0.5 + 0.25j], np.complex64)
    graph = capture(lambda x, y: (x * y) / (y + 1), a, a)
    # a complex quotient is refused by name unless arithmetic="xla" (subnormals.py), which keeps
    # the complex checks of checks.py
    got = graph.replay({"x": a, "y": a}, backend="jax", arithmetic="xla", to_numpy=True)["out"]
    np.testing.assert_allclose(got, (a * a) / (a + 1), rtol=1e-6)


def _complex_chain(z):
    z = z + (1 - 1j)
    z = z * (1 + 1j)
    w = np.log1p(z * np.float32(1e10))  # parts past sqrt(finfo(float32).max) only here
    return w * 2


def test_jax_merged_complex_check_names_the_node_that_failed():
    # the fast program and-s the elementwise checks into one mask per shape (fused by XLA); a
    # failed mask reruns the precise program, whose flags name the node (complex log1p takes
    # arithmetic="xla", as above)
    graph = capture(_complex_chain, np.ones(4, np.complex64))
    z = np.array([1 + 1j, 1e10 + 0j, 2 + 0j, 0j], np.complex64)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(graph.replay({"z": z})["out"], _complex_chain(z))
    with pytest.raises(cv.ReplayError, match=COMPLEX) as info:
        graph.replay({"z": z}, backend="jax", arithmetic="xla")
    assert info.value.node.op == "log1p"
    assert "test_engine_silent.py:" in str(info.value)
    fine = np.array([1 + 1j, 1e-3 + 0j, 2 + 0j, 0j], np.complex64)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(graph.replay({"z": fine}, backend="jax",
                                                arithmetic="xla")["out"],
                                   _complex_chain(fine), rtol=1e-5)


def test_jax_complex_sums_and_moves_of_infinities_are_numpys():
    # componentwise ops (add, sum) and moves need no check: XLA gives NumPy's values
    z = np.array([np.inf + 1j, -np.inf + 2j, np.nan + 0j, 1 - np.inf * 1j])
    same_on_every_engine(lambda x: (x + x[::-1]).sum() + x.T[0], [z])


def test_jax_stepping_executor_checks_complex_values_at_the_op():
    a = np.array([np.inf + np.inf * 1j, 1 + 1j], np.complex64)
    graph = capture(lambda x, y: x * y, a, a)
    ex = graph.executor({"x": a, "y": a}, backend="jax")
    with pytest.raises(cv.ReplayError, match=COMPLEX):
        ex.run()


# --- JAX: subnormals ----------------------------------------------------------------------------


def test_jax_refuses_a_complex_input_with_a_subnormal_part():
    a = np.array([1e-310 + 1j, 1 + 1j])
    graph = capture(lambda x: x.astype(bool), a)
    np.testing.assert_array_equal(graph.replay({"x": a})["out"], [True, True])
    with pytest.raises(cv.ReplayError, match=r"input 'x' holds subnormal floats"):
        graph.replay({"x": a}, backend="jax")


def _fails_with_flush_on_jax(fn, arrays, op, message=r"nonzero subnormal float: XLA flushes"):
    graph = capture(fn, *arrays)
    with np.errstate(all="ignore"):
        want = fn(*arrays)
        np.testing.assert_array_equal(graph.replay(feed(graph, arrays))["out"], want)
    with pytest.raises(cv.ReplayError, match=message) as info:
        graph.replay(feed(graph, arrays), backend="jax")
    assert info.value.node.op == op
    assert "test_engine_silent.py" in str(info.value)


def test_jax_product_flushed_to_zero_fails_before_a_large_factor_amplifies_it():
    # NumPy: 1e-20 * -1e-20 is a subnormal, times 2**100 is -0.0127; XLA: -0.0
    x, y = np.array([1e-20, 1.0], np.float32), np.array([-1e-20, 2.0], np.float32)
    _fails_with_flush_on_jax(lambda a, b: (a * b) * np.float32(2.0 ** 100), [x, y], "multiply")


def test_jax_float64_quotient_flushed_to_zero_fails_at_the_division():
    # the float64 division: NumPy's (a / b) / a is -1e-120, XLA's -0.0
    a, b = np.array([-1e-200, 1.0]), np.array([1e120, 2.0])
    _fails_with_flush_on_jax(lambda x, y: (x / y) / x, [a, b], "divide")


def test_jax_sum_cancelling_into_a_subnormal_fails_at_the_add():
    tiny = np.finfo(np.float32).tiny
    x, y = np.array([tiny * 1.5, 1.0], np.float32), np.array([-tiny, 2.0], np.float32)
    _fails_with_flush_on_jax(lambda a, b: (a + b) / b, [x, y], "add")


def test_jax_power_into_the_subnormal_range_fails_at_the_power():
    # NumPy: (1e-14 ** 3) * 2**100 is 1.27e-12; XLA: 0
    x = np.array([1e-14, 0.5], np.float32)
    _fails_with_flush_on_jax(lambda a: (a ** np.float32(3)) * np.float32(2.0 ** 100), [x],
                             "power")


def test_jax_exp_into_the_subnormal_range_fails_at_the_exp():
    # NumPy: log(exp(-100)) is -100; XLA: exp flushes to 0 and log gives -inf
    _fails_with_flush_on_jax(lambda a: np.log(np.exp(a)), [np.array([-100.0, -1], np.float32)],
                             "exp")


def test_jax_einsum_whose_partial_product_may_be_subnormal_fails_at_the_node():
    # the einsum('i,j,k->ijk'): 1e-20 * -1e-19 flushed inside the op, times 2e38
    arrays = [np.array([1e-20], np.float32), np.array([-1e-19], np.float32),
              np.array([2e38], np.float32)]
    _fails_with_flush_on_jax(lambda a, b, c: np.einsum("i,j,k->ijk", a, b, c), arrays, "einsum",
                             r"products may be subnormal")


def test_jax_matmul_of_tiny_operands_fails_at_the_node_and_of_normal_ones_replays():
    tiny = np.full((2, 2), 1e-20, np.float32)
    _fails_with_flush_on_jax(lambda a, b: (a @ b) * np.float32(2.0 ** 100), [tiny, tiny],
                             "matmul", r"products may be subnormal")
    weight = np.full((2, 2), 3.0, np.float32)  # a constant: its magnitude measured once
    graph = cv.capture(lambda a: a @ weight, cv.spec((2, 2), "float32"))
    x = np.full((2, 2), 1e-2, np.float32)
    np.testing.assert_allclose(graph.replay({"a": x}, backend="jax")["out"], x @ weight)
    with pytest.raises(cv.ReplayError, match=r"products may be subnormal"):
        graph.replay({"a": np.full((2, 2), 1e-37, np.float32)}, backend="jax")


@pytest.mark.parametrize("reduce", [np.sum, np.mean, np.cumsum], ids=lambda f: f.__name__)
def test_jax_sum_cancelling_into_a_subnormal_fails_at_the_reduction(reduce):
    # NumPy: x / x.sum() is [3, -2] (the sum is a subnormal); XLA flushed it: [inf, -inf]
    tiny = np.finfo(np.float32).tiny
    x = np.array([tiny * 1.5, -tiny], np.float32)
    _fails_with_flush_on_jax(lambda a: a / reduce(a), [x], reduce.__name__,
                             r"whose sums may be subnormal")
    fine = np.array([0.5, -2.0, 0.0], np.float32)
    graph = capture(lambda a: a / reduce(a), fine)
    np.testing.assert_allclose(graph.replay({"a": fine}, backend="jax")["out"],
                               fine / reduce(fine), rtol=1e-6)


@pytest.mark.parametrize("name", ["prod", "cumprod", "nanprod", "nancumprod"])
def test_jax_product_along_an_axis_through_a_subnormal_fails_at_the_node(name):
    # NumPy: 1e-20 * 1e-20 * 1e30 is 1e-10 (through a subnormal); XLA: 0
    fn = getattr(np, name)
    x = np.array([[1e-20, 1e-20, 1e30], [0.5, 2.0, 4.0]], np.float32)
    _fails_with_flush_on_jax(lambda a: fn(a, axis=1), [x], name, r"partial product of")
    zero = np.array([[1e-3, 0.0, 1e30], [0.5, 2.0, 4.0]], np.float32)  # a true zero factor
    graph = capture(lambda a: fn(a, axis=1), zero)
    np.testing.assert_allclose(graph.replay({"a": zero}, backend="jax")["out"],
                               fn(zero, axis=1), rtol=1e-6)


@pytest.mark.parametrize("name", ["var", "std", "nanvar", "nanstd"])
def test_jax_variance_of_tiny_deviations_fails_at_the_node(name):
    # NumPy: the squared deviations of [1e-20, 2e-20, 3e-20] are subnormal, the variance is
    # nonzero and x / std is finite; XLA flushed them: 0, and x / std infinite
    fn = getattr(np, name)
    x = np.array([[1e-20, 2e-20, 3e-20], [1.0, 2.0, 3.0]], np.float32)
    _fails_with_flush_on_jax(lambda a: fn(a, axis=1), [x], name, r"values that are not all")
    flat = np.array([[5.0, 5.0, 5.0], [1.0, 2.0, 3.0]], np.float32)  # a true 0
    graph = capture(lambda a: fn(a, axis=1), flat)
    np.testing.assert_allclose(graph.replay({"a": flat}, backend="jax")["out"], fn(flat, axis=1),
                               rtol=1e-6)


def test_jax_convolution_and_difference_through_a_subnormal_fail_at_the_node():
    tiny = np.finfo(np.float32).tiny
    a, b = np.array([1e-20, 1.0], np.float32), np.array([-1e-20, 2.0], np.float32)
    _fails_with_flush_on_jax(lambda x, y: np.convolve(x, y) * np.float32(2.0 ** 100), [a, b],
                             "convolve", r"products may be subnormal")
    x = np.array([tiny, tiny * 1.5, 1.0], np.float32)  # NumPy: diff [0.5 tiny, ...]
    _fails_with_flush_on_jax(lambda v: v / np.diff(v)[0], [x], "diff",
                             r"whose sums may be subnormal")


def test_jax_deg2rad_arctan2_and_ldexp_into_the_subnormal_range_fail_at_the_node():
    tiny = np.finfo(np.float32).tiny
    x = np.array([tiny * 2, 0.5], np.float32)
    big = np.float32(2.0 ** 100)
    _fails_with_flush_on_jax(lambda a: np.deg2rad(a) * big, [x], "deg2rad")
    _fails_with_flush_on_jax(lambda a: np.arctan2(a, np.float32(4)) * big, [x], "arctan2")
    _fails_with_flush_on_jax(lambda a, n: np.ldexp(a, n) * big,
                             [x, np.array([-2, 3], np.int32)], "ldexp")


def test_jax_values_that_underflow_in_numpy_too_still_replay():
    # exact zeros NumPy gives as well (a product below the smallest subnormal, exp(-200), a
    # literal factor that cannot make a subnormal) are not refused
    x = np.array([1e-30, 1.0, 0.0], np.float32)
    same = capture(lambda a: (a * a, np.exp(a * -200), a * np.float32(3) + 0.5), x)
    got = same.replay({"a": x}, backend="jax", to_numpy=True)
    with np.errstate(all="ignore"):
        want = (x * x, np.exp(x * -200), x * np.float32(3) + 0.5)
    for key, value in zip(same.outputs, want):
        np.testing.assert_allclose(got[key], value, rtol=1e-6)


# --- JAX: float-to-integer casts inside a reduction ---------------------------------------------


def test_jax_cumprod_to_int32_of_an_overflowing_float16_fails_at_the_node():
    a = np.array([np.inf, 2.0], np.float16)
    fails_at_node_on_jax(lambda x: np.cumprod(x, dtype=np.int32), [a],
                         r"float16 value cast to int32 is NaN or outside int32's range")


def test_jax_cumprod_to_int32_of_floats_in_range_is_numpys():
    same_on_every_engine(lambda x: np.cumprod(x, dtype=np.int32),
                         [np.array([1.5, -2.7, 300.0, 7.9], np.float16)])


# --- JAX: round, trapezoid, float16 overflow, mean of integers ------------------------------------


def test_round_of_a_huge_float32_overflows_as_in_numpy():
    a = np.array([F32.max, -3.3e38, 1234.5, 2.5e-3], np.float32)
    same_on_every_engine(lambda x: np.round(x, -2), [a])
    same_on_every_engine(lambda x: np.round(x, 3), [a])


def test_integer_trapezoid_wraps_as_in_numpy():
    big = np.iinfo(np.int64).max
    same_on_every_engine(lambda y: np.trapezoid(y), [np.array([big, big, 3], np.int64)])


def test_jax_float16_std_that_overflows_fails_at_the_node():
    a = np.array([60000.0, -60000.0, 1.0], np.float16)
    fails_at_node_on_jax(lambda x: np.std(x, dtype=np.float16), [a],
                         r"float16 result of std overflowed")


def test_jax_float16_polymul_that_overflows_fails_at_the_node():
    a = np.array([300.0, 300.0, 300.0], np.float16)
    fails_at_node_on_jax(np.polymul, [a, a], r"float16 result of polymul overflowed")


def test_jax_mean_with_an_integer_dtype_is_refused_at_the_node():
    a = np.array([2**62, 2**62, 1], np.int64)
    graph = capture(lambda x: np.mean(x, dtype=np.int64), a)
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"np\.mean\(\.\.\., dtype=int64\): NumPy accumulates in that "
                             r"integer.*test_engine_silent\.py"):
        graph.replay(feed(graph, [a]), backend="jax")


# --- JAX: infinities in convolutions, unchecked bins, LAPACK on NaN -------------------------------


def test_jax_correlate_of_an_infinity_fails_at_the_node():
    a = np.array([0.0, 0.5, 1.0])
    b = np.array([1.0, 2.0, np.inf])
    fails_at_node_on_jax(lambda x, y: np.correlate(x, y, "full"), [a, b],
                         r"operand of correlate holds an infinity or NaN: XLA's convolution")


def test_jax_digitize_with_unordered_bins_fails_as_numpy_raises():
    graph = capture(np.digitize, np.ones(3), np.ones(3))
    bins = np.array([0.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="monotonically"):
        np.digitize(np.ones(3), bins)
    for backend in ("numpy", "jax"):
        with pytest.raises(cv.ReplayError, match="monotonically"):
            graph.replay({"x": np.ones(3), "bins": bins}, backend=backend)


def test_jax_pinv_of_a_nan_fails_at_the_node():
    a = np.array([[1.0, np.nan], [2.0, 3.0]])
    graph = capture(np.linalg.pinv, a)
    with pytest.raises(cv.ReplayError, match=r"operand of linalg\.pinv holds an infinity or NaN"):
        graph.replay({"a": a}, backend="jax", arithmetic="xla")  # linalg: XLA's arithmetic


def test_jax_refuses_polyfit_by_name():
    graph = capture(lambda x, y: np.polyfit(x, y, 1), np.ones(4), np.ones(4))
    with pytest.raises(cv.UnsupportedOperationError, match=r"op 'polyfit' cannot run on the "
                                                           r"jax backend: .*ill-conditioned"):
        graph.replay({"x": np.arange(4.0), "y": np.ones(4)}, backend="jax")


def test_jax_percentile_next_to_an_infinity_fails_at_the_node():
    a = np.array([0.5, np.inf, -1.0, 0.25])
    fails_at_node_on_jax(lambda x: np.percentile(x, 90), [a],
                         r"operand of percentile holds an infinity: NumPy's interpolation")


def test_jax_fft_of_float16_is_refused_by_name_naming_the_users_line():
    a = np.array([0.5, 65500.0, -0.25, 1.0], np.float16)
    graph = capture(lambda x: np.fft.ifft(x, 3), a)
    np.testing.assert_array_equal(graph.replay(feed(graph, [a]))["out"], np.fft.ifft(a, 3))
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"op 'fft\.ifft' cannot run on the jax backend: np\.fft\.ifft of "
                             r"float16: NumPy computes the transform's scale.*"
                             r"test_engine_silent\.py:\d+") as info:
        graph.replay(feed(graph, [a]), backend="jax", arithmetic="xla")
    assert "x.astype(np.float32)" in str(info.value)  # the fix


def test_jax_matrix_rank_of_integers_is_declared_inexact():
    a = np.array([[4_000_000_000, 1], [2, 3]], np.uint32)
    graph = capture(np.linalg.matrix_rank, a)
    with pytest.warns(cv.InexactResultWarning, match="matrix_rank"):
        graph.replay({"A": a}, backend="jax")


# --- every engine: np.polymul's trimmed leading zeros ---------------------------------------------


def test_polymul_of_a_leading_zero_fails_at_the_node_on_every_engine():
    graph = capture(np.polymul, np.ones(3), np.ones(2))
    a1, a2 = np.array([0.0, 1.0, 2.0]), np.array([3.0, 4.0])
    assert np.polymul(a1, a2).shape == (3,)  # NumPy's is shorter than the captured (4,)
    for backend in ("numpy", "jax", "dask"):
        options = {"arithmetic": "xla"} if backend == "jax" else {}  # refused without it
        with pytest.raises(cv.ReplayError, match=r"np\.polymul drops leading zero coeff"):
            graph.replay({"a1": a1, "a2": a2}, backend=backend, **options)


# --- Dask: nanvar and nanstd with dtype= ----------------------------------------------------------


@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
@pytest.mark.parametrize("dtype", ["complex64", "float16"])
def test_dask_nanvar_with_dtype_is_numpys(name, dtype):
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((40, 30)) * 300).astype(dtype)
    a[3, 4] = np.nan
    fn = getattr(np, name)
    graph = capture(lambda x: fn(x, axis=0, dtype=x.dtype), a)
    with np.errstate(all="ignore"):
        expected = fn(a, axis=0, dtype=a.dtype)
    got = graph.replay({"x": a}, backend="dask", chunks=(7, 30))["out"]
    assert got.tobytes() == expected.tobytes()


# --- every engine: view to a dtype of another size needs a contiguous last axis -------------------

STRIDED = np.arange(32, dtype=np.int32).reshape(4, 8)[:, ::2]  # the last axis not contiguous


@pytest.mark.parametrize("backend", ["numpy", "jax", "dask"])
def test_view_to_a_wider_dtype_refuses_a_strided_input_on_every_engine(backend):
    # NumPy raises for this layout; a jax array has none, so JAX computed a value (silent)
    graph = cv.capture(lambda x: x.view(np.int64), cv.spec((4, 4), "int32"))
    assert graph.input_nodes[0].params["layout"] == "C"
    with pytest.raises(ValueError, match="last axis must be contiguous"):
        STRIDED.view(np.int64)
    with pytest.raises(cv.ReplayInputError, match=r"input 'x': expected a C-contiguous array"):
        graph.replay({"x": STRIDED}, backend=backend)
    dense = np.ascontiguousarray(STRIDED)
    got = graph.replay({"x": dense}, backend=backend, to_numpy=True)["out"]
    assert got.tobytes() == dense.view(np.int64).tobytes()


def test_view_to_a_wider_dtype_of_a_transposed_tensor_is_numpys_error_at_capture():
    with pytest.raises(ValueError, match="last axis must be contiguous") as info:
        cv.capture(lambda x: x.T.view(np.int64), cv.spec((4, 4), "int32"))
    assert "test_engine_silent.py" in str(info.value)


def test_view_to_a_wider_dtype_of_an_unknown_layout_is_refused_with_the_copy_fix():
    with pytest.raises(cv.UnsupportedOperationError, match=r"t\.copy\(\)\.view\(int64\)"):
        cv.capture(lambda x: (x.T + 1).view(np.int64), cv.spec((4, 4), "int32"))
    graph = cv.capture(lambda x: (x.T + 1).copy().view(np.int64), cv.spec((4, 4), "int32"))
    x = np.arange(16, dtype=np.int32).reshape(4, 4)
    for backend in ("numpy", "jax", "dask"):
        got = graph.replay({"x": x}, backend=backend, to_numpy=True)["out"]
        assert got.tobytes() == (x.T + 1).copy().view(np.int64).tobytes(), backend


def test_view_of_the_same_item_size_takes_any_layout():
    graph = cv.capture(lambda x: x.view(np.float32), cv.spec((4, 4), "int32"))
    assert "layout" not in graph.input_nodes[0].params
    got = graph.replay({"x": STRIDED})["out"]
    assert got.tobytes() == STRIDED.view(np.float32).tobytes()


# --- NumPy: a NumPy scalar's reflected dunder called directly ------------------------------------


def _scalar_math_replays_as_eager(fn, example, values):
    graph = cv.capture(fn, example)
    for value in values:
        want = np.asarray(fn(value))
        got = np.asarray(graph.replay({"t": value})["out"])
        assert (got.dtype, got.tobytes()) == (want.dtype, want.tobytes()), value
    return graph


def test_a_complex_scalars_reflected_multiply_is_its_scalar_math():
    # s.__rmul__(t) is t * s in NumPy's scalar math, which rounds otherwise than np.multiply's
    # loops (it was recorded as np.multiply: 90 of 200 replays differed in the last bits)
    rng = np.random.default_rng(3)
    parts = rng.standard_normal((50, 4)) * 3
    s = np.complex64(complex(*parts[0, 2:]))
    values = [np.complex64(complex(*p[:2])) for p in parts]
    graph = _scalar_math_replays_as_eager(lambda t: s.__rmul__(t), values[0], values)
    assert [n.op for n in graph.ops] == ["scalar_multiply"]
    graph = _scalar_math_replays_as_eager(lambda t: np.multiply(t, s), values[0], values)
    assert [n.op for n in graph.ops] == ["multiply"]


def test_a_float_scalars_reflected_power_is_its_scalar_math():
    rng = np.random.default_rng(5)
    s = np.float32(abs(rng.standard_normal()) * 3)
    values = [np.float32(v) for v in np.abs(rng.standard_normal(200)) * 3]
    graph = _scalar_math_replays_as_eager(lambda t: s.__rpow__(t), values[0], values)
    assert [n.op for n in graph.ops] == ["scalar_power"]
    graph = _scalar_math_replays_as_eager(lambda t: np.power(t, s), values[0], values)
    assert [n.op for n in graph.ops] == ["power"]


def test_a_reflected_scalar_dunder_in_unreadable_code_is_refused_with_both_spellings():
    namespace = {"cv": cv, "np": np, "s": np.float64(1.5)}
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"(?s)tensor \*\* numpy\.float64.*write t \*\* b \(NumPy's scalar "
                             r"math\) or np\.power\(t, b\)"):
        exec("cv.capture(lambda t: s.__rpow__(t), np.float64(2.0))", namespace)


def test_a_tensor_first_through_a_dynamic_ufunc_is_the_ufunc_not_a_refusal():
    # getattr(np, name)(t, s): the call site is unreadable, but a tensor first reaches scalar
    # math only through s.__rpow__(t) / s.__rmul__(t), which this code never names (refused
    # as "could not read which" after 8dd753b: the property tests' generated programs)
    rng = np.random.default_rng(7)
    s = np.float32(-0.5)
    values = [np.float32(v) for v in np.abs(rng.standard_normal(50)) + 0.1]
    graph = _scalar_math_replays_as_eager(lambda t: getattr(np, "power")(t, s), values[0], values)
    assert [n.op for n in graph.ops] == ["power"]
    c = np.complex64(1.5 - 2j)
    cvalues = [np.complex64(complex(*p)) for p in rng.standard_normal((50, 2))]
    graph = _scalar_math_replays_as_eager(lambda t: getattr(np, "multiply")(t, c), cvalues[0],
                                          cvalues)
    assert [n.op for n in graph.ops] == ["multiply"]
