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
    with pytest.raises(cv.ReplayError) as info:
        graph.replay({graph.inputs[0]: a}, backend="jax")
    message = str(info.value)
    assert f"np.pad(..., mode={mode!r}) of uint32 on the jax backend" in message
    fix = f"np.round(np.pad(x.astype(np.float64), ..., mode={mode!r})).astype(np.uint32)"
    assert fix in message

    def fixed(x):
        return np.round(np.pad(x.astype(np.float64), 1, mode=mode)).astype(np.uint32)

    (got,) = _replayed(fixed, a)
    np.testing.assert_array_equal(got, np.pad(a, 1, mode=mode))
