"""Cases the thorough differential profile found raising inside jax (a raw error wrapped in a
ReplayError) where NumPy computes: each now replays as NumPy computes it."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")


def _replayed(fn, *args):
    graph = cv.capture(fn, *args)
    out = graph.replay(dict(zip(graph.inputs, args)), backend="jax", to_numpy=True)
    return [out[name] for name in graph.outputs]


@pytest.mark.parametrize("params", [{}, {"indexing": "ij", "sparse": True}])
@pytest.mark.parametrize("a, b", [
    (np.ones((1, 1), np.float16), np.full((1, 1), 2, np.float16)),
    (np.arange(6.0).reshape(2, 3), np.arange(2.0)),
])
def test_meshgrid_of_inputs_that_are_not_1d_flattens_them_as_numpy(a, b, params):
    """NumPy's meshgrid flattens each input; jax.numpy's raised "must be 1D"."""
    want = np.meshgrid(a, b, **params)
    got = _replayed(lambda a, b: np.meshgrid(a, b, **params), a, b)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_a_float16_cumulative_sum_with_its_initial_zero_is_checked_and_replays():
    """The float16 running sum's check built its bound without the leading 0 of
    ``include_initial=True`` and raised on the shapes (3, 4) and (3, 5)."""
    a = np.arange(24, dtype=np.float16).reshape(3, 8)[:, ::2]
    fn = lambda a: np.cumulative_sum(a, axis=1, include_initial=True)  # noqa: E731
    (got,) = _replayed(fn, a)
    want = fn(a)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", ["mean", "median"])
def test_pad_of_integers_by_a_statistic_is_refused_at_the_node_with_the_fix(mode):
    """The thorough profile's np.pad-7/8 cases: uint32 values near 2**32 padded by their mean
    came out 1073741824 where NumPy pads 1073741826 (silent). Refused at the node; the quoted
    fix replays NumPy's values."""
    a = np.array([[4294967295, 1, 2, 3], [0, 4294967295, 7, 2]], np.uint32)
    graph = cv.capture(lambda x: np.pad(x, 1, mode=mode), a)
    # decided on the dtype: refused while tracing, naming the node (4e2b3e6)
    with pytest.raises(cv.UnsupportedOperationError) as info:
        graph.replay({graph.inputs[0]: a}, backend="jax")
    message = str(info.value)
    assert f"np.pad(..., mode={mode!r}) of uint32 on the jax backend" in message
    fix = f"np.round(np.pad(x.astype(np.float64), ..., mode={mode!r})).astype(np.uint32)"
    assert fix in message

    def fixed(x):
        return np.round(np.pad(x.astype(np.float64), 1, mode=mode)).astype(np.uint32)

    (got,) = _replayed(fixed, a)
    np.testing.assert_array_equal(got, np.pad(a, 1, mode=mode))


def test_a_failed_check_is_read_against_the_checks_of_the_trace_that_ran():
    """Review 4, finding 9 (``trap7.py``): the compiled function is traced once per input layout,
    and each trace has checks of its own (an F-ordered operand's sum along axis 1 is a running
    sum in NumPy, checked; a C-ordered one's is pairwise). The flags of the F trace were read
    against the latest trace's checks: after replays of F, C, then F, an ``IndexError`` in
    ``_fail``. Each replay now fails at the multiply node with its own message."""

    def f(a):
        t = np.abs(a).sum(axis=1)
        return t * np.float32(1e-30)  # 4e-39: a subnormal NumPy keeps, XLA flushes to 0

    graph = cv.capture(f, np.ones((3, 4), np.float32))
    tiny = np.full((3, 4), 1e-9, np.float32)
    for a in (np.asfortranarray(tiny), tiny, np.asfortranarray(tiny), tiny):
        with pytest.raises(cv.ReplayError) as info:
            graph.replay({"a": a}, backend="jax")
        assert info.value.node.op == "multiply"
        assert str(info.value).startswith("replay failed at node %3 (multiply), recorded at ")
        assert "multiply gave 0 where NumPy's result is a nonzero subnormal" in str(info.value)
    np.testing.assert_array_equal(graph.replay({"a": np.ones((3, 4), np.float32)},
                                               backend="jax", to_numpy=True)["out"],
                                  f(np.ones((3, 4), np.float32)))


def _warned(graph, *args, backend):
    """What a replay of ``graph`` on ``backend`` returns, and its warnings."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = graph.replay(dict(zip(graph.inputs, args)), backend=backend, to_numpy=True)
    return out[graph.outputs[0]], [(w.category, str(w.message), w.filename) for w in caught]


@pytest.mark.parametrize("fn, a", [
    (lambda a: np.median(a, axis=1), np.zeros((2, 0), np.int64)),  # np.median-96
    (lambda a: np.median(a, axis=1), np.zeros((2, 0), np.float32)),
    (lambda a: np.median(a, axis=1, keepdims=True), np.zeros((3, 0), np.float16)),
    (lambda a: np.median(a), np.zeros((0,), np.float32)),
    (lambda a: np.median(a), np.zeros((0,), np.bool_)),
    (lambda a: np.nanmedian(a), np.zeros((0,), np.bool_)),  # np.nanmedian-97
    (lambda a: np.nanmedian(a, axis=1), np.zeros((2, 0), np.float32)),
    (lambda a: np.nanmedian(a, axis=1), np.zeros((2, 0), np.int64)),
    (lambda a: np.nanquantile(a, 0.3, axis=1), np.zeros((2, 0), np.float32)),
    (lambda a: np.median(a, axis=0), np.zeros((2, 0), np.int64)),
])
def test_a_median_of_an_empty_axis_is_numpys_nan_in_numpys_type_with_its_warning(fn, a):
    """The thorough profile's np.median-96 (int64 (2, 0), axis=1) and np.nanmedian-97 (an empty
    bool array) raised inside jax.numpy's gather. NumPy's result (NaN, its dtype and shape) and
    its "Mean of empty slice" warning at the user's line, on every replay."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fn(a)
        graph = cv.capture(fn, a)
    for _ in range(2):  # the second replay runs the compiled function: the warning again
        got, warned = _warned(graph, a, backend="jax")
        assert got.dtype == want.dtype and got.shape == np.shape(want)
        np.testing.assert_array_equal(got, want)
        if np.size(want):
            assert (RuntimeWarning, "Mean of empty slice", __file__) in warned
        else:
            assert warned == []


F16 = np.random.default_rng(16)


@pytest.mark.parametrize("label, fn, a", [
    ("column sum, 5,000 ones", lambda a: np.sum(a, axis=0), np.ones((5000, 3), np.float16)),
    ("column sum drifting", lambda a: a.sum(0), np.full((3000, 2), 0.1, np.float16)),
    ("cumsum 1-d", lambda a: np.cumsum(a), np.full(4000, 0.3, np.float16)),
    ("cumsum along rows", lambda a: np.cumsum(a, axis=1),
     (F16.standard_normal((4, 3000)) * 100).astype(np.float16)),
    ("add.accumulate", lambda a: np.add.accumulate(a, axis=0), np.full((3000, 2), 0.7,
                                                                        np.float16)),
    ("add.reduce of axes (0, 1) of 3-d", lambda a: np.add.reduce(a, axis=(0, 1)),
     np.full((300, 20, 3), 0.1, np.float16)),
    ("cumulative_sum", lambda a: np.cumulative_sum(a, axis=0),
     (1 + F16.random((3000, 2))).astype(np.float16)),
])
def test_a_float16_running_sum_is_numpys_bits_on_jax(label, fn, a):
    """NumPy adds float16 one term (or row) after another, each partial sum rounded to
    float16; jax.numpy's partial sums are float32 (5,000 ones: 5000 where NumPy stalls at
    2048), and the check refused them at the node. Now the check's failure runs NumPy's order,
    a lax.scan with a float16 carry: NumPy's bits."""
    want = fn(a)
    (got,) = _replayed(fn, a)
    assert got.dtype == want.dtype == np.float16 and got.shape == want.shape
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()


_MAX = np.finfo(np.float64).max


@pytest.mark.parametrize("a", [
    np.array([[_MAX]]),  # np.median-96[float64,special]: jax.numpy gave inf
    np.array([_MAX, _MAX, 1.0]),
    np.array([[_MAX, _MAX], [1.0, 2.0]]),
    np.array([np.finfo(np.float16).max] * 2, np.float16),  # NumPy's mean adds in float32
    np.random.default_rng(9).standard_normal((4, 6)).astype(np.float32),
    np.random.default_rng(9).integers(-10**18, 10**18, (3, 5)),
    np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]]),
    np.array([[True, False, True], [False, False, True]]),
])
@pytest.mark.parametrize("params", [{}, {"axis": 0}, {"axis": -1, "keepdims": True}])
def test_a_median_is_numpys_middle_values_bit_for_bit(a, params):
    """NumPy's median is the middle value (or NumPy's mean of the two middle values) of each
    sorted slice; jax.numpy interpolates, and np.median([[max]], axis=1) came out inf (silent
    in the thorough profile)."""
    fn = lambda x: np.median(x, **params)  # noqa: E731
    want = np.asarray(fn(a))
    (got,) = _replayed(fn, a)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), (got, want)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0, 2)])
def test_an_average_whose_result_is_empty_raises_numpys_zero_division_error(shape):
    """Review 5: np.average(a, axis=-1) with an empty result raises ZeroDivisionError in NumPy
    (a.size / avg.size); the JAX replay returned an empty array. Now NumPy's error, at the
    node, as the NumPy replay raises it."""
    a = np.zeros(shape)
    with pytest.raises(ZeroDivisionError):
        np.average(a, axis=-1)
    graph = cv.capture(lambda x: np.average(x, axis=-1), a)
    for backend in ("numpy", "jax"):
        with pytest.raises(cv.ReplayError, match="ZeroDivisionError") as info:
            graph.replay({graph.inputs[0]: a}, backend=backend)
        assert isinstance(info.value.__cause__, ZeroDivisionError)


# --- stop 35's thorough profile: 16 raw errors (polysub of 0-d), 2 silent rows ----------------

@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_polysub_of_0d_operands_is_numpys_one_coefficient(dtype):
    """jax.numpy's polysub of 0-d operands raised IndexError inside the replay (16 raw errors
    of the thorough profile); NumPy treats them as 1-d (floats: refused by name, declared)."""
    a, b = np.array(3, dtype), np.array(-2, dtype)
    (got,) = _replayed(np.polysub, a, b)
    want = np.polysub(a, b)
    assert got.dtype == want.dtype and got.tolist() == want.tolist() == [5]


def test_a_complex_cast_to_bool_reads_both_parts_as_numpy():
    """0+nanj and 0+1j are True in NumPy; the JAX replay dropped the imaginary part (False:
    thorough profile, silent, ``form.bool pair[complex128,special]``)."""
    x = np.array([0j, complex(0, np.nan), 1j, complex(np.nan, 0), -0.0 + 0j], np.complex128)
    (got,) = _replayed(lambda a: a.astype(bool), x)
    assert got.tolist() == x.astype(bool).tolist() == [False, True, True, True, False]


def test_spacing_of_an_infinity_is_nan_as_numpy():
    """jax.numpy's float16 spacing of -inf is inf where NumPy gives NaN (thorough profile,
    silent, ``ufunc.spacing[float16,special]``; float32/64 spacing is refused by default, its
    subnormal results declared)."""
    x = np.array([np.inf, -np.inf, 1.0, 2.0], np.float16)
    with np.errstate(invalid="ignore", over="ignore"):
        want = np.spacing(x)
    (got,) = _replayed(np.spacing, x)
    assert got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()


def test_float16_nextafter_of_equal_operands_is_numpys_first_operand():
    """NumPy's float16 nextafter gives x where x == y (-0.0 towards 0.0 stays -0.0), its
    float32/64 one gives y (review 7 #36: the JAX replay gave +0.0 for float16)."""
    x = np.array([-0.0, 0.0, 1.0, 1.0], np.float16)
    y = np.array([0.0, -0.0, 1.0, 2.0], np.float16)
    (got,) = _replayed(np.nextafter, x, y)
    want = np.nextafter(x, y)
    assert got.dtype == want.dtype == np.float16
    assert got.tobytes() == want.tobytes()
