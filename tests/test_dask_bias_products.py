"""A product reaching a bias add on Dask chunks whose contracted axis is whole in each block
(a linear layer ``x @ W + b`` of rows in chunks): NumPy's bits, on one block (9f42f34), not the
row blocks' products (brief 10, W=25d, item 2, measured and dropped: ``python
benchmarks/dask_gpt_memory.py``). NumPy's product is one BLAS call on the whole operands, and a
BLAS result depends on the shapes it is called with: on the machine this was measured on,
OpenBLAS's float32 product of (512, 768) rows by a (768, 2304) matrix in blocks of 32 rows gave
14% of the elements otherwise (float64: none), and the add of a bias near ``-(x @ W)`` cancels
that rounding."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows", [1, 32, 100])
def test_a_linear_layer_over_row_chunks_is_numpys_bits(dtype, rows):
    x = RNG.standard_normal((256, 768)).astype(dtype)
    w = (RNG.standard_normal((768, 512)) * 0.02).astype(dtype)
    b = -(x[:1] @ w)[0]  # cancels the first row's product, up to its rounding

    def linear(x):
        return x @ w + b

    graph = cv.capture(linear, cv.spec(x.shape, x.dtype))
    got = graph.replay({"x": x}, backend="dask", chunks=(rows, 768))["out"]
    assert got.dtype == dtype and np.array_equal(got, linear(x))
