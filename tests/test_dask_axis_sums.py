"""Sums along one axis outside ``np.sum``'s family on Dask chunks (stop 36, W=25d):
``np.add.reduce`` (and the other ufuncs' ``reduce`` but the picks), ``np.average``,
``np.trapezoid`` and ``np.linalg.vector_norm`` run NumPy's function per block with the axis in
one chunk; NumPy's loop order follows the block's shape and its memory layout, so the axes after
the reduced one are in one chunk too (a (n, 1) column block is contiguous and added pairwise
where NumPy adds the column of the whole C-ordered (n, m) array row after row), and an operand
NumPy holds in another layout (an F-ordered input, a transpose, a flipped or strided view) runs
on one block laid out as NumPy's. Silent before where the sum reached a subtract
(``/tmp/25d36/axis0.py``: 39 rows on main 35e48a1, e.g. ``np.add.reduce(x, 0) - x[0] * n``
67331.75 against NumPy's 67331.0)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

X = (np.random.default_rng(0).standard_normal((300, 8)) * 1e3 + 1e4).astype(np.float32)

SPELLINGS = {
    "np.add.reduce(x, 0) - x[0] * n": lambda x: np.add.reduce(x, axis=0) - x[0] * x.shape[0],
    "np.average(x, 0) - x[0]": lambda x: np.average(x, axis=0) - x[0],
    "np.trapezoid(x, axis=0) - x[0] * n": lambda x: np.trapezoid(x, axis=0)
    - x[0] * (x.shape[0] - 1),
    "np.linalg.vector_norm(x, axis=0) - x[0] * r": lambda x: np.linalg.vector_norm(x, axis=0)
    - x[0] * np.float32(x.shape[0] ** 0.5),
    "np.multiply.reduce(x / 1e4, 0) - 1": lambda x: np.multiply.reduce(x / np.float32(1e4), 0)
    - 1,
    "np.add.reduce(x[:, ::2], 0) - c": lambda x: np.add.reduce(x[:, ::2], axis=0)
    - x[0, ::2] * x.shape[0],
    "np.add.reduce(x.T, 1) - c": lambda x: np.add.reduce(x.T, axis=1) - x[0] * x.shape[0],
    "np.average(x[::-1]) - x[0, 0]": lambda x: np.average(x[::-1]) - x[0, 0],
    "np.trapezoid(x[:, ::-1], axis=0) - c": lambda x: np.trapezoid(x[:, ::-1], axis=0)
    - x[0, ::-1] * (x.shape[0] - 1),
}


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("chunks", [(300, 1), (50, 1), 2, (300, 2)], ids=str)
@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_a_sum_along_an_axis_that_reaches_a_subtraction_is_numpys_bits(spelling, chunks, order):
    fn = SPELLINGS[spelling]
    x = np.asarray(X, order=order)
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    got = graph.replay({"x": x}, backend="dask", chunks=chunks)["out"]
    want = fn(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


def test_numpys_column_sum_is_not_a_column_blocks():
    """The precondition: NumPy's sum of a column of the whole array (row after row) is not the
    sum of the column alone (contiguous: pairwise)."""
    whole = np.add.reduce(X, axis=0)
    alone = np.array([np.add.reduce(np.ascontiguousarray(X[:, k])) for k in range(8)])
    assert not np.array_equal(whole, alone)


def test_a_sum_along_an_axis_of_a_broadcast_view_is_refused_naming_it():
    def fn(x):
        return np.add.reduce(np.broadcast_to(x[:, :1], x.shape), axis=0) - x[0] * x.shape[0]

    graph = cv.capture(fn, cv.spec(X.shape, X.dtype))
    with pytest.raises(cv.ReplayError) as caught:
        graph.replay({"x": X}, backend="dask", chunks=(50, 1))
    text = str(caught.value)
    assert "(ufunc_reduce)" in text and "test_dask_axis_sums.py" in text
    assert "np.add.reduce adds in NumPy's order here" in text
    assert "NumPy's order of addition follows the memory layout of the result of node %" in text
    assert "(broadcast_to), which is not C-contiguous" in text
    assert "replay with backend='numpy'" in text
    assert np.array_equal(graph.replay({"x": X}, backend="numpy")["out"], fn(X))
