"""A product of linear algebra whose value reaches the differences or the spread of its values
(``np.diff``, ``np.ptp``, ``np.var``, ``np.std``, ``np.gradient``, ``np.cov``) or a subtract
through another product, on Dask chunks: NumPy's bits (the product on one block, NumPy's own
BLAS call). Silent before stop 36 (W=25d, /tmp/25d36/mm2.py on R7's fh7 harness): the row sums
``x @ ones`` of float32 values near 1e3, within their declared bound, differ by about 0.1 from
NumPy's; their differences (near 20) and their variance (near 89) keep that error."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

RNG = np.random.default_rng(0)
X = (1000 + RNG.random((16, 768))).astype(np.float32)
ONES = np.ones(768, np.float32)
W = (1 + RNG.random(768) * 1e-3).astype(np.float32)
O2 = np.ones((768, 2), np.float32)

SPELLINGS = {
    "np.diff(x @ ones)": lambda x: np.diff(x @ ONES),
    "np.diff(x @ w)": lambda x: np.diff(x @ W),
    "np.ediff1d(np.dot(x, w))": lambda x: np.ediff1d(np.dot(x, W)),
    "np.ptp(x @ ones)": lambda x: np.ptp(x @ ONES),
    "np.var(x @ ones)": lambda x: np.var(x @ ONES),
    "np.var(x @ w)": lambda x: np.var(x @ W),
    "np.std(np.einsum('ij,j->i', x, w))": lambda x: np.std(np.einsum("ij,j->i", x, W)),
    "np.gradient(x @ ones)": lambda x: np.gradient(x @ ONES),
    "np.cov(np.stack([x @ ones, x @ w]))": lambda x: np.cov(np.stack([x @ ONES, x @ W])),
    "(x @ o2) @ w2 - t": lambda x: (x @ O2) @ np.array([0.5, 0.5], np.float32)
    - (x + np.float32(0.001)).sum(-1),
}


@pytest.mark.parametrize("chunks", [(4, 96), 64], ids=str)
@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_a_product_into_a_spread_or_differences_is_numpys_bits(spelling, chunks):
    fn = SPELLINGS[spelling]
    graph = cv.capture(fn, cv.spec(X.shape, X.dtype))
    got = graph.replay({"x": X}, backend="dask", chunks=chunks)["out"]
    want = fn(X)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


def test_the_row_sums_as_a_product_over_chunks_are_not_numpys_bits():
    """The precondition: dask.array's product of these chunks is off NumPy's (within the
    product's declared bound), so the differences above cancel a real error."""
    import dask.array as da

    blocked = (da.from_array(X, chunks=(4, 96)) @ ONES).compute()
    assert not np.array_equal(blocked, X @ ONES)
    assert not np.array_equal(np.diff(blocked), np.diff(X @ ONES))
