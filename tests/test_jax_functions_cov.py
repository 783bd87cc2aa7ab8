"""``np.cov`` on JAX (the hostile review 3, finding 23: refused at bind): written out in
NumPy's steps (``capviz/backends/jax/functions/covariances.py``): the mean in NumPy's order, so
the centred values are NumPy's bits, the contraction declared as the contractions of linear
algebra are (``contraction_bound.cov_bound``), the factor ``1 / fact`` with NumPy's warnings."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import capviz as cv
from capviz.backends import contraction_bound as cb

jax = pytest.importorskip("jax")

RNG = np.random.default_rng(25)


def _replayed(fn, x):
    graph = cv.capture(fn, x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = graph.replay({graph.inputs[0]: x}, backend="jax", to_numpy=True)["out"]
    return graph, got, [str(w.message) for w in caught]


CASES = [
    ("float64 rows", lambda m: np.cov(m), RNG.standard_normal((3, 7))),
    ("float32 rows", lambda m: np.cov(m), RNG.standard_normal((4, 50)).astype(np.float32)),
    ("columns, values far from 0", lambda m: np.cov(m, rowvar=False),
     (1e3 + RNG.standard_normal((200, 5))).astype(np.float32)),
    ("int64, bias", lambda m: np.cov(m, bias=True), RNG.integers(-100, 100, (4, 9))),
    ("bool", lambda m: np.cov(m), RNG.random((3, 6)) > 0.5),
    ("1-d", lambda m: np.cov(m), RNG.standard_normal(10)),
    ("ddof=0", lambda m: np.cov(m, ddof=0), RNG.standard_normal((2, 30))),
    ("NaN", lambda m: np.cov(m), np.array([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0]])),
    ("4,000 observations near 1e4", lambda m: np.cov(m), 1e4 + RNG.standard_normal((3, 4000))),
]


@pytest.mark.parametrize("label,fn,m", CASES, ids=[c[0] for c in CASES])
def test_cov_replays_within_its_declared_bound_with_numpys_type_and_shape(label, fn, m):
    graph, got, warned = _replayed(fn, m)
    want = fn(m)
    assert got.dtype == want.dtype == np.float64 and got.shape == want.shape
    node = next(n for n in graph.nodes if n.op == "cov")
    assert cb.is_contraction_node(node)
    limit = cb.bound("cov", [m], node.params, want.dtype)
    assert limit.shape == want.shape
    assert not cb.outside(got, want, limit).any(), (got, want, limit)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.nanmax(np.abs(want)))
    assert warned == []
    assert not graph.compare(fn, {graph.inputs[0]: m}, backend="jax")


def test_the_centred_values_are_numpys_bits_where_xlas_mean_is_not():
    """Values of about 1e8 with a spread of 1: a mean one ulp off moves every centred value by
    it, and the covariance by about n ulp**2; NumPy's order of the mean gives NumPy's bits."""
    m = 1e8 + RNG.random((2, 1001))
    _, got, _ = _replayed(lambda a: np.cov(a), m)
    np.testing.assert_allclose(got, np.cov(m), rtol=1e-13)


def test_degrees_of_freedom_of_zero_warn_as_numpy_and_give_its_values():
    m = RNG.standard_normal((2, 3))
    fn = lambda a: np.cov(a, ddof=5)  # noqa: E731
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        want = fn(m)
    _, got, warned = _replayed(fn, m)
    np.testing.assert_array_equal(got, want)  # inf and -inf, NaN where a product is 0
    assert warned == [str(w.message) for w in caught] == [
        "Degrees of freedom <= 0 for slice", "divide by zero encountered in divide"]


def test_an_empty_operand_is_numpys_own_result():
    _, got, _ = _replayed(lambda a: np.cov(a), np.zeros((0, 3)))
    assert got.shape == (0, 0) and got.dtype == np.float64


def test_a_transposed_operand_is_summed_in_numpys_order():
    """np.cov(x.T) of a C-ordered x, and np.cov of an F-ordered input, were refused at the node
    (review 3, finding 23's rest): NumPy's copy of an F-ordered operand is F-ordered, and its
    mean adds each row one value after another (pairwise where C-ordered); the replay follows
    it. Values near 1e8 make the order show: the C-ordered copy's covariance is 6e-13 off."""
    m = 1e8 + RNG.random((1001, 2))
    want = np.cov(m.T)
    other_order = np.cov(np.ascontiguousarray(m.T))
    assert np.max(np.abs(other_order - want) / np.abs(want)) > 1e-13
    for fn, x in [(lambda a: np.cov(a.T), m), (lambda a: np.cov(a), np.asfortranarray(m.T)),
                  (lambda a: np.cov(a.T, bias=True), m),
                  (lambda a: np.cov(a.T, rowvar=False), m.T.copy())]:
        graph, got, warned = _replayed(fn, x)
        expected = fn(x)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-14)
        assert warned == []
    # compare's stepping replay runs each op on its own: an F-ordered input's layout is known
    # there (the host array's), a transpose computed on the device is taken as C-ordered
    fortran = np.asfortranarray(m.T)
    graph = cv.capture(lambda a: np.cov(a), fortran)
    assert not graph.compare(lambda a: np.cov(a), {graph.inputs[0]: fortran}, backend="jax")


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_a_transposed_operand_of_other_types_replays_within_the_bound(dtype):
    x = (RNG.standard_normal((40, 3)) * 5).astype(dtype)
    _, got, _ = _replayed(lambda a: np.cov(a.T), x)
    want = np.cov(x.T)
    assert got.dtype == want.dtype == np.float64
    limit = cb.bound("cov", [x.T], {}, np.float64)
    assert not cb.outside(got, want, limit).any()


TRANSPOSED_SLICES = {
    "a[:, :4].T": (lambda a: a[:, :4].T, {}),
    "a[::2].T": (lambda a: a[::2].T, {}),
    "a[1:, 2:7].T": (lambda a: a[1:, 2:7].T, {}),
    "np.swapaxes(a[:, ::2], 0, 1)": (lambda a: np.swapaxes(a[:, ::2], 0, 1), {}),
    "a[:, :4].T, rowvar=False": (lambda a: a[:, :4].T, {"rowvar": False}),
}


@pytest.mark.parametrize("spelling", list(TRANSPOSED_SLICES))
def test_a_transposed_slice_replays_within_the_bound(spelling):
    # stop 37 (W=25j): refused by name before ('holds neither in C nor in Fortran order').
    # NumPy's copy np.array(m, ndmin=2, dtype=float64) keeps a transposed slice's order of
    # strides (order='K'): Fortran's, so its mean is added as x.T's
    view, params = TRANSPOSED_SLICES[spelling]
    x = 1e4 + RNG.standard_normal((4000, 9))
    _, got, _ = _replayed(lambda a: np.cov(view(a), **params), x)
    want = np.cov(view(x), **params)
    assert got.dtype == want.dtype == np.float64
    limit = cb.bound("cov", [view(x)], params, np.float64)
    assert not cb.outside(got, want, limit).any()


def test_an_operand_in_neither_order_is_refused_at_the_node():
    x = RNG.standard_normal((7, 6))
    graph = cv.capture(lambda a: np.cov(a[:, ::-1].T), x)  # a flipped view, transposed
    with pytest.raises(cv.UnsupportedOperationError) as info:
        graph.replay({graph.inputs[0]: x}, backend="jax")
    text = str(info.value)
    assert text.startswith("op 'cov' cannot run on the jax backend: np.cov of an operand NumPy "
                           "holds neither in C nor in Fortran order (a flipped or broadcast "
                           "view): NumPy's mean adds its values in that memory order, which "
                           "this replay does not know; replay with backend='numpy' (node %")
    assert re.search(rf"\(node %\d+, recorded at {re.escape(__file__)}:\d+ in <lambda>\)$", text)
    got = graph.replay({graph.inputs[0]: x}, backend="numpy")["out"]
    np.testing.assert_array_equal(got, np.cov(x[:, ::-1].T))


@pytest.mark.parametrize("fn", [lambda m: np.cov(m, m * 2.0),
                                lambda m: np.cov(m, aweights=np.arange(1.0, 8.0)),
                                lambda m: np.cov(m, dtype=np.float32)])
def test_the_other_forms_stay_refused_by_name(fn):
    m = RNG.standard_normal((3, 7))
    graph = cv.capture(fn, m)
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"^op 'cov' cannot run on the jax backend: XLA flushes"):
        graph.replay({graph.inputs[0]: m}, backend="jax")


def test_a_subnormal_centred_value_fails_at_the_node():
    """1e-300 + 1e-310 centred by its mean: NumPy keeps the subnormal difference, XLA flushes
    it to 0 (a covariance of 0 against a tiny nonzero one)."""
    m = np.array([[1e-300, 1e-300 + 2e-308, 1e-300], [1.0, 2.0, 3.0]])
    graph = cv.capture(lambda a: np.cov(a), np.ones((2, 3)))
    with pytest.raises(cv.ReplayError, match=r"np\.cov: .* below the float's smallest normal"):
        graph.replay({graph.inputs[0]: m}, backend="jax")
