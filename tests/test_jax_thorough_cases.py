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
