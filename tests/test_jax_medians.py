"""Issue 25 on JAX: np.median and np.nanmedian of floats in NumPy's steps
(capviz/backends/jax/functions/empty_operands.py). NumPy's median is the mean of the middle
value or values, a sum that starts from +0.0: a zero median is +0.0 where the replay kept
``-0.0`` (the hostile review 5, finding 20: ``np.median([-0.0])``, ``np.median([-0.0, -0.0])``).
np.nanmedian along an axis of fewer than 600 values is ``np.ma.median``, which adds the two
middle values (an odd count's one twice) in the array's own type and halves the sum: ``max +
max`` overflows to inf where jax.numpy's interpolation gave ``max``; of a whole array, or along
a longer axis, it is np.median of the values but the NaNs (float16 added in float32). Each
replay here is eager NumPy's bits (checked to fail before the change but the
cases marked)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")

DTYPES = [np.float16, np.float32, np.float64]
IDS = ["float16", "float32", "float64"]


def _replayed(fn, args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        graph = cv.capture(fn, *args)
    return graph.replay(dict(zip(graph.inputs, args)), backend="jax", to_numpy=True)["out"]


def _assert_numpy_s_bits(fn, a):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # All-NaN slice encountered
        eager = np.asarray(fn(a))
    got = _replayed(fn, (a,))
    assert got.dtype == eager.dtype and got.shape == eager.shape
    nan = np.isnan(eager)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], eager[~nan])
    np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(eager[~nan]))


def _zeros(dtype):
    return np.array([[-0.0, -0.0, 0.0, -0.0], [-0.0, -0.0, -0.0, -0.0],
                     [1.0, -0.0, np.nan, -0.0]], dtype)


def _odd_zeros(dtype):
    return np.array([[-0.0, -0.0, -0.0], [-0.0, 0.0, -0.0], [np.nan, -0.0, 2.0]], dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_a_zero_median_is_numpy_s_plus_zero(name, axis, dtype):
    fn = getattr(np, name)
    for data in (_zeros(dtype), _odd_zeros(dtype), np.array([-0.0], dtype)[:, None]):
        if axis is not None and abs(axis) >= data.ndim:
            continue
        _assert_numpy_s_bits(lambda a, fn=fn: fn(a, axis=axis), data)
        _assert_numpy_s_bits(lambda a, fn=fn: fn(a, axis=axis, keepdims=True), data)


def test_the_median_of_one_negative_zero_is_plus_zero():
    assert not np.signbit(np.median(np.array([-0.0])))
    got = _replayed(lambda a: np.median(a), (np.array([-0.0, -0.0]),))
    assert got == 0.0 and not np.signbit(got)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_nanmedian_at_the_type_s_maximum_overflows_as_numpy_s(axis, dtype):
    """Along a short axis NumPy's masked median adds ``max + max`` in the array's type: inf,
    for one middle value as for two; of the whole array it is np.median's mean (float16 in
    float32: ``max``)."""
    big = np.finfo(dtype).max
    a = np.array([[big, big, np.nan, big], [big, np.nan, np.nan, 1], [big, big, big, np.nan],
                  [np.nan] * 4, [-big, big, 1, np.nan]], dtype)
    _assert_numpy_s_bits(lambda a: np.nanmedian(a, axis=axis), a)
    finite = np.array([[big], [-big]], dtype)
    # float16 from finite values too: NumPy's inf, no longer refused by the float16 check of
    # reductions (capviz/backends/jax/checks.py NUMPY_STEPS_FLOAT16; refused before 25j)
    _assert_numpy_s_bits(lambda a: np.nanmedian(a, axis=axis), finite)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("axis", [(0, 1), (1, 0), (-1,), (0, 2), (1, 2)])
@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_medians_over_a_tuple_of_axes_are_numpy_s(name, axis, dtype):
    """NumPy's _ureduce merges the axes into one last axis: a whole-array median where they are
    all of them. jax.numpy's own interpolated: float16 np.nanmedian(x, axis=(0, 1)) of values
    near 65504 with a NaN among them was inf where NumPy's is 6.55e4, silently (fails before
    25j's change)."""
    big = np.finfo(dtype).max
    rng = np.random.default_rng(7)
    a = np.where(rng.random((3, 4, 5)) < 0.2, np.nan, big).astype(dtype)
    a[0, 0, :3] = [-0.0, 1.0, -big]
    for keepdims in (False, True):
        fn = getattr(np, name)
        _assert_numpy_s_bits(lambda a: fn(a, axis=axis, keepdims=keepdims), a)
        if all(k in (0, 1, -1) for k in axis):
            _assert_numpy_s_bits(lambda a: fn(a, axis=axis, keepdims=keepdims), a[0])


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_nanmedian_along_a_long_axis_is_np_median_of_the_values(dtype):
    rng = np.random.default_rng(0)
    big = np.finfo(dtype).max
    a = np.where(rng.random((3, 700)) < 0.1, np.nan, big).astype(dtype)
    _assert_numpy_s_bits(lambda a: np.nanmedian(a, axis=1), a)
    zeros = np.where(rng.random((2, 701)) < 0.1, np.nan, -0.0).astype(dtype)
    _assert_numpy_s_bits(lambda a: np.nanmedian(a, axis=-1), zeros)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_nanmedian_of_ordinary_values_is_numpy_s(dtype):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((6, 9)) * 10).astype(dtype)
    a[rng.random(a.shape) < 0.2] = np.nan
    a[2] = np.nan  # a slice of NaNs alone: NaN
    for axis in (None, 0, 1):
        _assert_numpy_s_bits(lambda a, axis=axis: np.nanmedian(a, axis=axis), a)
        _assert_numpy_s_bits(lambda a, axis=axis: np.median(a, axis=axis), a)
