"""A product of linear algebra one of whose operands NumPy holds strided (a column step
``x[:, ::2]``, a flip, a transpose) on Dask (the hostile review 8's finding 25, silent since
before stop 36): NumPy's product of such a view is not its BLAS's product of the contiguous block
dask.array hands it (``x[:, ::2] @ ones[:32] - t`` of float32 values near 1e3 in one chunk: 0.75
against NumPy's 0.7480469). Where the product is on one block anyway, or followed (an op reads
it), it runs as NumPy's function on buffers with each operand's own strides (views of one value
in NumPy, ``v @ v.T``: views of one buffer)."""

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


SHARED = {  # operands that are views of one value: NumPy's product reads one buffer
    "x @ x.T": lambda x: x @ x.T - np.float32(6.4e7),
    "v @ v.T, v = x[:, ::2]": lambda x: (lambda v: v @ v.T - np.float32(3.2e7))(x[:, ::2]),
    "v.T @ v, v = x[::2]": lambda x: (lambda v: v.T @ v - np.float32(1.6e7))(x[::2]),
    "np.dot(v, v.T), v = x[:, ::-1]": lambda x: (lambda v: np.dot(v, v.T)
                                                  - np.float32(6.4e7))(x[:, ::-1]),
    "x[:, ::2] @ x[:, 1::2].T": lambda x: x[:, ::2] @ x[:, 1::2].T - np.float32(3.2e7),
}


@pytest.mark.parametrize("chunks", [64, (8, 16), 2], ids=str)
@pytest.mark.parametrize("spelling", list(SHARED))
def test_a_product_of_views_of_one_value_is_numpys_on_one_buffer(spelling, chunks):
    # each operand written into one buffer at its own place (refused or silent before for a
    # strided view: v @ v.T in one chunk 8.0 off NumPy's)
    fn = SHARED[spelling]

    graph = cv.capture(fn, cv.spec(X.shape, X.dtype))
    got = graph.replay({"x": X}, backend="dask", chunks=chunks)["out"]
    assert np.array_equal(got, fn(X))


def test_an_output_product_of_a_transposed_chunked_input_keeps_dask_arrays_blocks():
    graph = cv.capture(lambda x: x.T @ x[:, :8], cv.spec(X.shape, X.dtype))
    lazy = graph.replay({"x": da.from_array(X, chunks=(8, 64))}, backend="dask",
                        compute=False)["out"]
    assert lazy.npartitions == 1 and len(lazy.dask.layers) > 2
    assert np.allclose(lazy.compute(), X.T @ X[:, :8], rtol=1e-5)
