"""A reduction over several axes of a strided or flipped view on Dask chunks (brief 10, W=25d
item 3): NumPy's loop joins no axis of such a view and reads each in its own order (a running
sum of pairwise rows, not one pairwise sum), so no order of the axes describes it; it is
computed as NumPy's function on a buffer with the view's own strides. Refused before
(``... the memory layout of the result of node %1 (getitem), which is not C-contiguous``)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

# (129, 129) float32 values near 1e4: NumPy's sum of each view below differs from the sum of
# its C-ordered copy, so a block laid out in any order of the axes would not be NumPy's
X = (np.random.default_rng(1).standard_normal((129, 129)) * 1e3 + 1e4).astype(np.float32)

VIEWS = {
    "x[::-1]": lambda x: x[::-1],
    "x[:, ::-1]": lambda x: x[:, ::-1],
    "np.rot90(x)": np.rot90,
    "x[::-1, ::2]": lambda x: x[::-1, ::2],
    "x.T[::-1]": lambda x: x.T[::-1],
}


@pytest.mark.parametrize("view", list(VIEWS))
def test_numpys_sum_of_the_view_is_not_its_copys(view):
    v = VIEWS[view](X)
    assert np.sum(v) != np.sum(np.ascontiguousarray(v))


PROGRAMS = {
    "v.sum() - v[0, 0] * v.size": lambda v: v.sum() - v[0, 0] * v.size,
    "v - v.mean()": lambda v: v - v.mean(),
    "v - np.sum(v, axis=(0, 1)) / v.size": lambda v: v - np.sum(v, axis=(0, 1)) / v.size,
    "(v - v.mean()) / v.std()": lambda v: (v - v.mean()) / v.std(),
    "v - v.var()": lambda v: v - v.var(),
    "v - np.nanmean(v)": lambda v: v - np.nanmean(v),
    "v - v.sum(keepdims=True)": lambda v: v - v.sum(axis=None, keepdims=True),
    "v.sum(dtype=np.float64) - 1e6": lambda v: v.sum(dtype=np.float64) - 1e6,
}


@pytest.mark.parametrize("chunks", [(16, 16), (2, 129), (129, 5)], ids=str)
@pytest.mark.parametrize("program", list(PROGRAMS))
@pytest.mark.parametrize("view", list(VIEWS))
def test_a_reduction_over_several_axes_of_a_view_that_reaches_a_subtraction_is_numpys(
        view, program, chunks):
    def fn(x):
        return PROGRAMS[program](VIEWS[view](x))

    graph = cv.capture(fn, cv.spec(X.shape, X.dtype))
    got = graph.replay({"x": X}, backend="dask", chunks=chunks)["out"]
    want = fn(X)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_sum_over_two_of_three_axes_of_a_flipped_view_is_numpys(order):
    x3 = np.asarray(X[:128].reshape(4, 32, 129), order=order)

    def fn(x):
        v = x[:, ::-1]
        return v - v.sum(axis=(1, 2), keepdims=True)

    graph = cv.capture(fn, cv.spec(x3.shape, x3.dtype))
    got = graph.replay({"x": x3}, backend="dask", chunks=(1, 8, 43))["out"]
    assert np.array_equal(got, fn(x3))


def test_a_sum_over_several_axes_of_a_broadcast_view_is_still_refused_naming_it():
    # a broadcast view's strides (0 along an axis) are not followed: refused as before
    def fn(x):
        v = np.broadcast_to(x[:, :1], x.shape)[::-1]
        return v.sum() - x[0, 0] * x.size

    graph = cv.capture(fn, cv.spec(X.shape, X.dtype))
    with pytest.raises(cv.ReplayError) as caught:
        graph.replay({"x": X}, backend="dask", chunks=(16, 16))
    text = str(caught.value)
    assert "(sum)" in text and "test_dask_strided_sums.py" in text
    assert "NumPy's order follows the memory layout of the result of node %" in text
    assert "(broadcast_to)" in text
    assert np.array_equal(graph.replay({"x": X}, backend="dask", chunks=-1)["out"], fn(X))
