"""A product of linear algebra one of whose operands NumPy holds strided (a column step
``x[:, ::2]``, a flip, a transpose) on Dask (the hostile review 8's finding 25, silent since
before stop 36): NumPy's product of such a view is not its BLAS's product of the contiguous block
dask.array hands it (``x[:, ::2] @ ones[:32] - t`` of float32 values near 1e3 in one chunk: 0.75
against NumPy's 0.7480469). Where the product is on one block anyway, or followed (an op reads
it), it runs as NumPy's function on buffers with each operand's own strides."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import capviz as cv

RNG = np.random.default_rng(9)
X = (1000 + RNG.random((32, 64))).astype(np.float32)
O32 = np.ones(32, np.float32)
W = (1 + 1e-3 * RNG.random((32, 4))).astype(np.float32)

SPELLINGS = {
    "x[:, ::2] @ ones - t": lambda x: x[:, ::2] @ O32 - np.float32(32016),
    "np.einsum('ij,j->i', x[:, ::2], ones) - t": lambda x: np.einsum("ij,j->i", x[:, ::2], O32)
    - np.float32(32016),
    "np.diff(x[:, ::2] @ ones)": lambda x: np.diff(x[:, ::2] @ O32),
    "x[:, ::2] @ w - t": lambda x: x[:, ::2] @ W - np.float32(32030),
    "np.tensordot(x[:, 1::2], ones, 1) - t": lambda x: np.tensordot(x[:, 1::2], O32, 1)
    - np.float32(32016),
}


@pytest.mark.parametrize("chunks", [None, 64, (8, 16)], ids=str)
@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_a_product_of_a_strided_view_is_numpys_bits(spelling, chunks):
    fn = SPELLINGS[spelling]
    graph = cv.capture(fn, cv.spec(X.shape, X.dtype))
    options = {} if chunks is None else {"chunks": chunks}
    got = graph.replay({"x": X}, backend="dask", **options)["out"]
    want = fn(X)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("chunks", [64, (8, 16)], ids=str)
def test_a_product_of_a_value_and_its_own_transpose_stays_numpys(chunks):
    # one buffer in NumPy (its syrk): not copied into two (a strided view times its own
    # transpose, v = x[:, ::2]; v @ v.T, is still off NumPy's in one chunk: open)
    def fn(x):
        return x @ x.T - np.float32(6.4e7)

    graph = cv.capture(fn, cv.spec(X.shape, X.dtype))
    got = graph.replay({"x": X}, backend="dask", chunks=chunks)["out"]
    assert np.array_equal(got, fn(X))


def test_an_output_product_of_a_transposed_chunked_input_keeps_dask_arrays_blocks():
    graph = cv.capture(lambda x: x.T @ x[:, :8], cv.spec(X.shape, X.dtype))
    lazy = graph.replay({"x": da.from_array(X, chunks=(8, 64))}, backend="dask",
                        compute=False)["out"]
    assert lazy.npartitions == 1 and len(lazy.dask.layers) > 2
    assert np.allclose(lazy.compute(), X.T @ X[:, :8], rtol=1e-5)
