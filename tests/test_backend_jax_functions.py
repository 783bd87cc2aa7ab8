"""Issue 25 on JAX: the NumPy functions the thorough differential profile found silent or
failing inside jax (``python -m tests.differential --thorough --backend jax``), each computed
as eager NumPy computes it, failed at the node with the user's line, or refused by name
(capviz/backends/jax/functions/ and the forms of capviz/backends/jax/ops.py)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytest.importorskip("jax")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def capture(fn, *arrays):
    return cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])


XLA = {"arithmetic": "xla"}
"""The JAX replays here take XLA's arithmetic for the ops whose subnormals no check sees
(``average``, ``interp``...: refused by name otherwise); what these tests check is not about
subnormals."""


def on_jax(fn, *arrays):
    """The JAX replay's outputs, NumPy's eager results, and the graph."""
    graph = capture(fn, *arrays)
    with np.errstate(all="ignore"):
        expected = fn(*[a.copy() for a in arrays])
    got = graph.replay(dict(zip(graph.inputs, arrays)), backend="jax", to_numpy=True, **XLA)
    return np.asarray(got[graph.outputs[0]]), np.asarray(expected)


def jax_is_numpy(fn, *arrays):
    """The JAX replay gives eager NumPy's result bit for bit (NaNs as NaNs), dtype and shape."""
    got, want = on_jax(fn, *arrays)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


def fails_on_jax(fn, arrays, message, cause=None):
    """The NumPy replay computes; the JAX replay fails at ``fn``'s node (this file's line)."""
    graph = capture(fn, *arrays)
    graph.replay(dict(zip(graph.inputs, arrays)))
    with pytest.raises(cv.ReplayError, match=message) as info:
        graph.replay(dict(zip(graph.inputs, arrays)), backend="jax", **XLA)
    assert "test_backend_jax_functions.py" in str(info.value)
    if cause is not None:
        assert isinstance(info.value.__cause__, cause)
    return info.value


def refused_on_jax(fn, arrays, message):
    """The NumPy replay computes; the JAX replay refuses ``fn``'s op by name while tracing
    (an UnsupportedOperationError naming the node and this file's line)."""
    graph = capture(fn, *arrays)
    graph.replay(dict(zip(graph.inputs, arrays)))
    with pytest.raises(cv.UnsupportedOperationError, match=message) as info:
        graph.replay(dict(zip(graph.inputs, arrays)), backend="jax", **XLA)
    assert "test_backend_jax_functions.py" in str(info.value)
    assert info.value.node is not None and info.value.__cause__ is None
    return info.value


# --- silent before: computed as NumPy computes ------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.int64, np.int8])
def test_unwrap_of_integers_takes_the_difference_in_the_integer_type(dtype):
    info = np.iinfo(dtype)
    p = np.array([[0, 5, info.max], [3, 0, info.min], [info.max, 7, 1]], dtype)
    jax_is_numpy(lambda a: np.unwrap(a, axis=0), p)
    jax_is_numpy(lambda a: np.unwrap(a), p)


def test_unwrap_of_floats_and_with_an_integer_period_is_numpys():
    jax_is_numpy(lambda a: np.unwrap(a, period=4), np.array([0, 3, 1, 6, 2, 9], np.int32))
    p = np.array([0.0, 3.5, 7.0, -1.0, 12.0, np.pi], np.float64)
    got, want = on_jax(lambda a: np.unwrap(a), p)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_searchsorted_of_an_unsorted_array_fails_at_the_node():
    a = np.array([2, 127, 127, 0, 127, 2], np.uint8)
    v = np.array([[5, 0, 4, 2], [0, 2, 0, 0]], np.uint8)
    fails_on_jax(lambda s, x: np.searchsorted(s, x, side="right"), [a, v],
                 r"np\.searchsorted of an array that is not sorted \(NaNs last\).*sorter=")
    fails_on_jax(lambda s, x: s.searchsorted(x), [a, v], "not sorted")


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float16, np.int64])
def test_searchsorted_of_a_sorted_array_is_numpys(dtype):
    a = np.array([0, 1, 1, 4, 9, 100], dtype)
    v = np.array([[5, 0, 4, 2], [0, 1, 100, 101]], dtype)
    jax_is_numpy(lambda s, x: np.searchsorted(s, x, side="right"), a, v)
    jax_is_numpy(lambda s, x: s.searchsorted(x), a, v)
    jax_is_numpy(lambda s, x: np.searchsorted(s, x, sorter=np.argsort(s, kind="stable")),
                 a[::-1].copy(), v)


def test_searchsorted_of_floats_with_nans_last_is_numpys():
    a = np.array([-np.inf, -1.0, 0.0, 2.0, np.nan, np.nan], np.float32)
    v = np.array([np.nan, 2.0, -np.inf, np.inf], np.float32)
    jax_is_numpy(lambda s, x: np.searchsorted(s, x), a, v)
    jax_is_numpy(lambda s, x: np.searchsorted(s, x, side="right"), a, v)


# --- raw errors before: computed as NumPy computes, or refused by name -------------------------


def test_insert_of_values_with_more_leading_axes_is_numpys():
    a = np.ones((1, 1), np.int8)
    b = np.full((1, 1, 1), 3, np.int8)
    jax_is_numpy(lambda x, y: np.insert(x, [1], y[:4][None], axis=0), a, b)
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    w = np.arange(4, dtype=np.float32)
    jax_is_numpy(lambda x, y: np.insert(x, [1], y[:4][None], axis=0), m, w)
    jax_is_numpy(lambda x: np.insert(x, 1, 9.0, axis=1), m)
    jax_is_numpy(lambda x: np.insert(x, -1, 9.5), m.astype(np.int32))


@pytest.mark.parametrize("name", ["nanargmin", "nanargmax"])
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_arg_extremum_of_a_zero_d_array_along_axis_0_is_numpys(name, dtype):
    jax_is_numpy(lambda a: getattr(np, name)(a, axis=0), np.array(3, dtype))
    for axis in (0, -1):  # keepdims too (a 0-d result): it was jax's "axis 0 is out of bounds"
        jax_is_numpy(lambda a: getattr(np, name)(a, axis=axis, keepdims=True), np.array(3, dtype))


def test_around_of_booleans_is_numpys_float16():
    jax_is_numpy(lambda a: np.around(a), np.array([[True, False], [False, True]]))


def test_kron_polyadd_polymul_and_convolve_of_booleans_are_numpys():
    m = np.array([[True, False, True, True], [False, False, True, False]])
    v = np.array([True, False, True, True])
    w = np.array([True, True, False])
    jax_is_numpy(lambda a, b: np.kron(a, b), m, v)
    jax_is_numpy(lambda a, b: np.polyadd(a, b), np.array([True, False, True, False, True]), v)
    jax_is_numpy(lambda a, b: np.polymul(a, b), v, w)
    jax_is_numpy(lambda a, b: np.convolve(a, b), v, w)


@pytest.mark.parametrize("dtype", [np.bool_, np.int64, np.uint32, np.float64])
def test_polymul_and_convolve_of_zero_d_operands_are_numpys(dtype):
    a, b = np.array(3, dtype), np.array(2, dtype)
    jax_is_numpy(lambda x, y: np.polymul(x, y), a, b)
    jax_is_numpy(lambda x, y: np.convolve(x, y), a, b)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int64])
def test_integer_convolve_wraps_in_its_type_as_numpys(mode, dtype):
    a = np.array([200, 7, 255, 3, 130], dtype) * (10**15 if dtype == np.int64 else 1)
    v = np.array([100, 255, 9], dtype)
    jax_is_numpy(lambda x, y: np.convolve(x, y, mode), a, v)
    jax_is_numpy(lambda x, y: np.convolve(x, y, mode), v, a)
    jax_is_numpy(lambda x, y: np.polymul(x, y), a, v)


def test_pad_of_booleans_with_odd_reflection_is_numpys():
    m = np.array([[True, False, True, True], [False, False, True, False], [True] * 4])
    jax_is_numpy(lambda a: np.pad(a, (1, 2), mode="symmetric", reflect_type="odd"), m)
    jax_is_numpy(lambda a: np.pad(a, 2, mode="reflect", reflect_type="odd"), m)
    refused_on_jax(lambda a: np.pad(a, 3, mode="reflect", reflect_type="odd"), [m],
                   r"reflect_type='odd'\) of bool by more than one reflection")


def test_pad_median_of_complex_values_is_refused_at_the_node():
    m = (np.arange(12).reshape(3, 4) * (1 + 1j)).astype(np.complex64)
    refused_on_jax(lambda a: np.pad(a, 1, mode="median"), [m],
                   r"mode='median'\) of complex64 on the jax backend: jax\.numpy's median "
                   r"takes no complex values.*backend='numpy'")


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.float32])
def test_nan_quantiles_of_an_empty_array_are_numpys_nans(dtype):
    jax_is_numpy(lambda a: np.nanquantile(a, [0.1, 0.9]), np.zeros((0,), dtype))
    jax_is_numpy(lambda a: np.nanpercentile(a, 75, axis=1), np.zeros((2, 0), dtype))
    jax_is_numpy(lambda a: np.nanquantile(a, [0.5], axis=0, keepdims=True),
                 np.zeros((0, 3), dtype))


def test_an_index_into_an_empty_axis_fails_at_the_node_as_numpy_raises():
    x = np.zeros((0,), np.complex128)
    i = np.array([0, 1, 2])
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
        x[i % 3]
    graph = capture(lambda a, b: a[b % 3], x, i)
    with pytest.raises(cv.ReplayError, match="size 0") as info:
        graph.replay(dict(zip(graph.inputs, [x, i])))
    assert isinstance(info.value.__cause__, IndexError)
    with pytest.raises(cv.ReplayError, match=r"an index is out of bounds for an axis of size 0 "
                       r"\(NumPy raises IndexError\)") as info:
        graph.replay(dict(zip(graph.inputs, [x, i])), backend="jax")
    assert "test_backend_jax_functions.py" in str(info.value)


# --- linspace and geomspace in NumPy's arithmetic ---------------------------------------------


def test_geomspace_keeps_numpys_endpoints_and_nans():
    start = np.array([np.inf, 0.11, 0.12, 1.0], np.float32)
    stop = np.array([0.3, -0.54, -1.43, 0.017], np.float32)
    got, want = on_jax(lambda a, b: np.geomspace(np.abs(a) + 1, np.abs(b) + 2, 3), start, stop)
    assert np.isnan(want[1, 0]) and np.isnan(got[1, 0])  # 10 ** (inf + 0 * -inf) is NaN
    np.testing.assert_allclose(got, want, rtol=1e-4)
    top = np.array([0.5, np.finfo(np.float64).max / 4])
    got, want = on_jax(lambda a, b: np.geomspace(np.abs(a) + 1, np.abs(b) + 2, 3), top, top)
    assert got[-1, 1] == want[-1, 1] == np.finfo(np.float64).max / 4  # not 10 ** log10 = inf
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_geomspace_through_zero_fails_at_the_node_as_numpy_raises():
    a = np.array([1.0, 0.0])
    with pytest.raises(ValueError, match="Geometric sequence cannot include zero"):
        np.geomspace(a, a + 1, 3)
    graph = capture(lambda x: np.geomspace(x, x + 1, 3), a)
    with pytest.raises(cv.ReplayError, match="Geometric sequence cannot include zero") as info:
        graph.replay({graph.inputs[0]: a}, backend="jax")
    assert "test_backend_jax_functions.py" in str(info.value)


def test_linspace_from_an_infinity_and_of_integers_is_numpys():
    start = np.array([np.inf, -1.5, 0.0, 2.0])
    stop = np.array([1.0, 1.5, -np.inf, 2.0])
    got, want = on_jax(lambda a, b: np.linspace(a, b, 4), start, stop)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    jax_is_numpy(lambda a, b: np.linspace(a, b, 5), np.array([True, False]),
                 np.array([False, True]))
    jax_is_numpy(lambda a, b: np.linspace(a, b, 3, endpoint=False, axis=1),
                 np.arange(12, dtype=np.uint8).reshape(3, 4), np.full((3, 4), 7, np.uint8))


def test_linspace_cancelling_a_fused_product_fails_at_the_node():
    big = np.iinfo(np.int64)
    a = np.array([[big.min, -2], [3, 3]], np.int64)
    b = np.array([[2**62 - 1, 0], [3, 3]], np.int64)  # a zero step: NumPy's i / 3 * delta
    fn = lambda x, y: np.linspace(x, y, 3, endpoint=False, axis=1)  # noqa: E731
    assert fn(a, b)[0, 2, 0] == 0.0
    fails_on_jax(fn, [a, b], r"np\.linspace \(or geomspace\) of float64: a point cancels to "
                 r"near 0.*fused multiply-add")
    small = np.array([[-2.0, 0.5], [1.0, 4.0]])
    got, want = on_jax(fn, small, -small)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


# --- histogram_bin_edges and the order statistics in NumPy's arithmetic ----------------------


def test_histogram_bin_edges_of_a_non_finite_range_fails_at_the_node_as_numpy_raises():
    a = np.array([0.07, np.inf, -1.0, 0.5, 0.25], np.float32)
    with pytest.raises(ValueError, match="autodetected range of .* is not finite"):
        np.histogram_bin_edges(a, 4)
    graph = capture(lambda x: np.histogram_bin_edges(x, 4), a)
    with pytest.raises(cv.ReplayError, match="autodetected range of .min, max. is not "
                       "finite") as info:
        graph.replay({graph.inputs[0]: a}, backend="jax")
    assert "test_backend_jax_functions.py" in str(info.value)


def test_histogram_bin_edges_of_float16_and_integers_are_numpys():
    jax_is_numpy(lambda x: np.histogram_bin_edges(x, 4),
                 np.array([2.623e-04, -4.325e-04, -4.848e+03, -3.606e+03, 1.473e+04], np.float16))
    jax_is_numpy(lambda x: np.histogram_bin_edges(x, 3), np.array([7, 7, 7], np.int64))
    jax_is_numpy(lambda x: np.histogram_bin_edges(x, 5), np.array([3, 9, 250], np.uint8))


def test_histogram_bin_edges_with_too_many_bins_fails_at_the_node_as_numpy_raises():
    with pytest.raises(ValueError, match="Too many bins"):
        np.histogram_bin_edges(np.array([2.0**53, 2.0**53 + 2]), 4)
    graph = capture(lambda x: np.histogram_bin_edges(x, 4), np.array([2.0**53, 2.0**53 + 2]))
    with pytest.raises(cv.ReplayError, match="Too many bins for data range"):
        graph.replay({graph.inputs[0]: np.array([2.0**53, 2.0**53 + 2])}, backend="jax")


@pytest.mark.parametrize("fn", [
    lambda a: np.percentile(a, [10, 50, 90], axis=1),
    lambda a: np.quantile(a, 0.25, axis=0, keepdims=True),
    lambda a: np.nanpercentile(a, 75, axis=1),
    lambda a: np.quantile(a, [0.3, 0.7]),
])
def test_quantiles_of_int64_extremes_wrap_their_difference_as_numpy(fn):
    big = np.iinfo(np.int64)
    a = np.array([[big.min, 5, big.max, -3], [2**62, -(2**62), 7, 1], [0, big.max, -1, 2]])
    jax_is_numpy(fn, a)


def test_quantiles_of_float16_interpolate_in_numpys_types():
    a = np.array([[0.2408, -0.417, 1.379, 0.7603], [0.5, -2.25, 0.125, 3.0],
                  [np.nan, 1.0, 2.0, 3.0]], np.float16)
    jax_is_numpy(lambda x: np.percentile(x, [10, 50, 90], axis=1), a)  # float64 results
    jax_is_numpy(lambda x: np.quantile(x, 0.3, axis=1), a)  # a weak q: float16 arithmetic


# --- average with weights ---------------------------------------------------------------------


def test_average_divides_truly_where_xla_would_flush_the_reciprocal():
    a = np.array([[1.0e38, 1.0, 1.0, 1.0], [2.0, 4.0, -1.0, 0.5]], np.float32)
    w = np.array([1.0, 6.0e37, 6.0e37, 6.0e37], np.float32)  # 1 / 1.8e38 is subnormal
    jax_is_numpy(lambda x, y: np.average(x, axis=1, weights=y), a, w)


def test_average_whose_int64_weights_sum_to_zero_in_float64_fails_as_numpy_raises():
    a = np.arange(8, dtype=np.int64).reshape(2, 4)
    w = np.array([2**62 + 1, -(2**62), 1, -1], np.int64)  # 1 in int64, 0.0 in float64
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero"):
        np.average(a, axis=1, weights=w)
    graph = capture(lambda x, y: np.average(x, axis=1, weights=y), a, w)
    with pytest.raises(cv.ReplayError, match="ZeroDivisionError: Weights sum to zero") as info:
        graph.replay(dict(zip(graph.inputs, [a, w])), backend="jax", **XLA)
    assert "test_backend_jax_functions.py" in str(info.value)


def test_average_whose_weighted_sum_overflows_or_cancels_fails_at_the_node():
    big = np.finfo(np.float64).max
    a = np.array([[big * 0.75, big * 0.75, -big * 0.75, 0.5], [1.0, 2.0, 3.0, 4.0]])
    w = np.array([1.0, 1.0, 1.0, 1.0])
    fails_on_jax(lambda x, y: np.average(x, axis=1, weights=y * 2), [a, w],
                 r"np\.average: the weighted sum overflows or cancels")
    cancel = np.array([[1e17, 1.0, -1e17, 0.5], [1.0, 2.0, 3.0, 4.0]])
    fails_on_jax(lambda x, y: np.average(x, axis=1, weights=y), [cancel, w], "cancels")
    small = np.array([[1.5, -2.0, 3.25, 0.5], [1.0, 2.0, 3.0, 4.0]])
    got, want = on_jax(lambda x, y: np.average(x, axis=1, weights=y * 2), small, w)
    np.testing.assert_allclose(got, want, rtol=1e-12)


# --- interp -----------------------------------------------------------------------------------


def test_interp_of_float16_computes_in_float64_as_numpy():
    x = np.array([[0.1, 0.35, 0.62, 0.9]], np.float16)
    xp = np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.5], np.float16)
    got, want = on_jax(lambda a, b: np.interp(a, b, b * 2), x, xp)
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_interp_with_a_period_makes_numpys_periodic_points_and_ignores_left():
    x = np.array([[0.1, 2.35, -0.62, 4.9]])
    xp = np.array([0.0, 0.5, 1.25, 2.0, 2.5, 2.9])
    got, want = on_jax(lambda a, b: np.interp(a, b, b, left=0.0, period=3.0), x, xp)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("xp, period", [
    (np.array([2, 127, 127, 0, 127, 2], np.int8), None),  # not increasing
    (np.array([0, 3, 1, 4, 2, 5], np.int8), 3.0),  # ties modulo the period
    (np.array([0.0, 1.0, np.inf, 4.0, 5.0, 6.0]), None),  # an infinity
])
def test_interp_where_numpys_result_is_its_own_fails_at_the_node(xp, period):
    x = np.array([[0.5, 1.5, 2.5, 3.5]], xp.dtype)
    fails_on_jax(lambda a, b: np.interp(a, b, b * 2, period=period), [x, xp],
                 r"np\.interp of these points: xp is not increasing")


# --- np.fft: outputs within the rounding of the transform --------------------------------------


def test_fft_of_int64_extremes_fails_at_the_node_where_outputs_are_rounding():
    big = np.iinfo(np.int64)
    a = np.array([[[big.max] * 4, [3] * 4, [big.max - 1] * 4]] * 2)  # zeros amid 6e18
    fails_on_jax(lambda x: np.fft.irfftn(x, s=(3, 6), axes=(1, 2)), [a],
                 r"np\.fft: an output of the transform lies far below its operand's norm")


def test_fft_of_moderate_values_still_replays():
    a = np.arange(24, dtype=np.int64).reshape(2, 3, 4) - 11
    got, want = on_jax(lambda x: np.fft.irfftn(x, s=(3, 6), axes=(1, 2)), a)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    got, want = on_jax(lambda x: np.fft.rfft(x, axis=-1), a.astype(np.float64) / 7)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_pad_odd_reflection_of_values_beyond_half_the_max_fails_at_the_node():
    big = np.finfo(np.float32).max
    m = np.array([[-big, -1.5, 0.16, 2.0], [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]],
                 np.float32)
    fn = lambda a: np.pad(a, (1, 2), mode="symmetric", reflect_type="odd")  # noqa: E731
    assert np.isnan(fn(m)[0, 0])  # NumPy's 2 * -max is -inf
    fails_on_jax(fn, [m], r"reflect_type='odd'\) of float32 values beyond finfo\.max / 2")
    got, want = on_jax(fn, m / 4)
    np.testing.assert_array_equal(got, want)


def test_polymul_and_convolve_whose_sums_overflow_or_cancel_fail_at_the_node():
    big = np.finfo(np.float64).max
    a = np.array([big / 2, 3.0, -big / 2, 1.0])
    v = np.array([2.0, 1.5, 2.0])
    for fn in (lambda x, y: np.polymul(x, y), lambda x, y: np.convolve(x, y)):
        fails_on_jax(fn, [a, v], r"a convolution \(np\.convolve, np\.polymul\) whose sums of "
                     r"products overflow or cancel")
        got, want = on_jax(fn, np.array([0.5, 3.0, -0.25, 1.0]), v)
        np.testing.assert_allclose(got, want, rtol=1e-12)


# --- review findings (issue-25k) --------------------------------------------------------------


def test_float16_subnormal_points_of_linspace_quantile_and_bin_edges_are_numpys():
    """reduce_precision flushed float16 subnormals: linspace(0, 2e-4, 5)[1] was 0, not 5e-05,
    and histogram_bin_edges of [6.2e-5, 1.3e-4] falsely failed with "Too many bins"."""
    h = np.float16
    got, want = on_jax(lambda a, b: np.linspace(a, b, 5), np.array(0, h), np.array(2e-4, h))
    assert want[1] == h(5e-05) and got.dtype == np.float16
    np.testing.assert_array_equal(got, want)
    jax_is_numpy(lambda a: np.histogram_bin_edges(a, 4), np.array([6.2e-5, 1.3e-4], h))
    jax_is_numpy(lambda a: np.quantile(a, 0.25), np.array([0, 1e-4], h))


def test_float32_subnormal_points_of_linspace_fail_at_the_node():
    f = np.float32
    assert np.linspace(f(0), f(4e-38), 5)[1] > 0
    fails_on_jax(lambda a, b: np.linspace(a, b, 5), [np.array(0, f), np.array(4e-38, f)],
                 r"a float32 result in the subnormal range.*XLA flushes to 0")


@pytest.mark.parametrize("value, dtype, error, message", [
    (1 + 2j, np.float64, TypeError, "complex"),
    (np.nan, np.int64, ValueError, "cannot convert float NaN to integer"),
    (300, np.uint8, OverflowError, "Python integer 300 out of bounds for uint8"),
])
def test_insert_of_a_value_numpy_cannot_convert_fails_at_the_node_naming_numpys_error(
        value, dtype, error, message):
    a = np.arange(4, dtype=dtype)
    fn = lambda x: np.insert(x, 1, value)  # noqa: E731
    with pytest.raises(error, match=message):
        fn(a)
    graph = capture(fn, a)
    with pytest.raises(cv.ReplayError, match=message) as info:
        graph.replay({graph.inputs[0]: a}, backend="jax")
    assert "test_backend_jax_functions.py" in str(info.value)
    assert isinstance(info.value.__cause__, error)


def test_float_to_integer_casts_of_insert_and_linspace_out_of_range_fail_at_the_node():
    """XLA saturates where NumPy's cast wraps (linspace(0, 300, 5, dtype=uint8)[-1] is 44, not
    255) or gives the platform's value (inf into int64)."""
    fails_on_jax(lambda a, v: np.insert(a, 1, v), [np.arange(4), np.array([np.inf, 1.0])],
                 r"a float64 value cast to int64 is NaN or outside int64's range")
    for stop, dtype in ((300.0, np.uint8), (np.inf, np.int8)):
        fails_on_jax(lambda a, b, t=dtype: np.linspace(a, b, 5, dtype=t),
                     [np.array(0.0), np.array(stop)],
                     rf"a float64 value cast to {np.dtype(dtype)} is NaN or outside")
    jax_is_numpy(lambda a, b: np.linspace(a, b, 5, dtype=np.uint8), np.array(0.0),
                 np.array(250.0))
    jax_is_numpy(lambda a, v: np.insert(a, 1, v), np.arange(4), np.array([2.5, -1.0]))


def test_linspace_with_a_python_number_endpoint_keeps_numpys_weak_promotion():
    """A Python number is weak: np.linspace(float32, 5.0, 7) is float32 (the form computed
    float64 and refused)."""
    f = np.float32
    jax_is_numpy(lambda a: np.linspace(a, 5.0, 7), np.array(0.1, f))
    jax_is_numpy(lambda a: np.linspace(a, 5, 7), np.array([0.1, 1.0], f))
    jax_is_numpy(lambda b: np.linspace(0, b, 7), np.array(5.0, f))
    got, want = on_jax(lambda a: np.linspace(a, 5.0, 7), np.array(0.1, np.float16))
    assert got.dtype == want.dtype == np.float16


def test_nan_to_num_casts_its_replacements_to_the_arrays_type_as_numpy():
    """NumPy casts nan=1e300 to float32 as inf; jax.numpy's nan_to_num clipped it to
    finfo.max (3.4e38)."""
    a = np.array([np.nan, 1.0, np.inf, -np.inf], np.float32)
    assert np.isposinf(np.nan_to_num(a, nan=1e300)[0])
    jax_is_numpy(lambda x: np.nan_to_num(x, nan=1e300), a)
    jax_is_numpy(lambda x: np.nan_to_num(x, nan=1e5, neginf=-7), a.astype(np.float16))
    jax_is_numpy(lambda x: np.nan_to_num(x, nan=2.0, posinf=1e300), a.astype(np.float64))
    jax_is_numpy(lambda x: np.nan_to_num(x), a)


def test_nan_quantiles_of_float32_with_an_all_nan_slice_and_an_array_q_fail_at_the_node():
    """NumPy's nanquantile of float32 with a list q is float32 where a slice is all NaN and
    float64 otherwise; the graph records float64, which JAX gave silently."""
    a = np.array([[np.nan, np.nan], [1.0, 2.0]], np.float32)
    assert np.nanpercentile(a, [50], axis=1).dtype == np.float32
    graph = capture(lambda x: np.nanpercentile(x, [50], axis=1), a)
    with pytest.raises(cv.ReplayError, match=r"np\.nanpercentile of float32 where a slice is "
                       r"all NaN: NumPy's result is then float32, not the float64") as info:
        graph.replay({graph.inputs[0]: a}, backend="jax")
    assert "test_backend_jax_functions.py" in str(info.value)
    jax_is_numpy(lambda x: np.nanquantile(x, [0.5], axis=1), a[1:])
    jax_is_numpy(lambda x: np.nanquantile(x, 0.5, axis=1), a)  # a weak q: float32 throughout


def test_complex_average_whose_weighted_sum_cancels_fails_at_the_node():
    """The cancellation check ran on float sums only: a complex sum of 4,000 terms of 1e16
    cancelling to ~192 gave -0.032+0.032j where NumPy gives -0.048+0.048j."""
    rng = np.random.default_rng(3)
    big = rng.standard_normal(2000) * 1e16
    big = np.concatenate([big, -big[::-1]])
    big[5] += 1.0
    fails_on_jax(lambda a, w: np.average(a, weights=w), [big + 1j * big[::-1], np.ones(4000)],
                 r"np\.average: the weighted sum overflows or cancels")
    small = rng.standard_normal(6) + 1j * rng.standard_normal(6)
    got, want = on_jax(lambda a, w: np.average(a, weights=w), small, rng.random(6))
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_quantiles_of_repeated_values_are_numpys_not_nan(dtype):
    # ae92352 scaled the zero difference of two equal neighbours by 1 / smallest subnormal,
    # which overflows float16: 0 * inf gave NaN for almost every quantile of real data
    values = np.array([1.0, 1.0, 2.0, 5.0, 5.0, 5.0, 7.0], dtype)
    jax_is_numpy(lambda a: np.quantile(a, 0.3), values)
    jax_is_numpy(lambda a: np.percentile(a, [50, 60]), values)
    jax_is_numpy(lambda a: np.quantile(a, 0.5), np.full(4, 0.5, dtype))


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax",
                                  "nanmin"])
@pytest.mark.parametrize("axis", [0, -1])
def test_nan_reductions_of_a_0d_array_along_axis_0_are_numpys(name, axis):
    """NumPy reduces a 0-d array along axis 0 or -1 as its one element (0-d result, keepdims
    or not); jax.numpy raised "axis 0 is out of bounds" (the thorough profile's raw errors,
    ``form.nansum initial`` of uint32)."""
    for value in (np.array(7.5), np.array(np.nan), np.array(7, np.uint32)):
        if value.dtype.kind == "u" and name in ("nanmean", "nanvar", "nanstd"):
            continue  # NumPy's np.mean of an integer 0-d array raises AxisError
        for keepdims in (False, True):
            jax_is_numpy(lambda a: getattr(np, name)(a, axis=axis, keepdims=keepdims), value)
    jax_is_numpy(lambda a: np.nansum(a, axis=0, initial=1.5), np.array(7, np.uint32))


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "nancumsum", "nancumprod",
                                  "cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("axis", [0, -1, None])
def test_accumulations_of_a_0d_array_along_axis_0_are_numpys_1d_result(name, axis):
    """NumPy accumulates a 0-d array along axis 0 or -1 (np.cumulative_sum also along
    ``axis=None``) as a 1-d array of its one element, ``[2.5]``; jax.numpy raised "axis 0 is out
    of bounds" (review 2, finding 27: ``np.nancumsum(x, axis=0)`` of 0-d float64, float32 and
    uint32)."""
    values = [np.array(2.5), np.array(np.nan), np.array(2.5, np.float32)]
    if name not in ("cumprod", "cumulative_prod"):  # jax.numpy's products of uint32 are uint32
        values.append(np.array(7, np.uint32))
    for value in values:
        jax_is_numpy(lambda a: getattr(np, name)(a, axis=axis), value)
