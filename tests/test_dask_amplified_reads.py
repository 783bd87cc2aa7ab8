"""A value Dask holds within the tolerance of NumPy's (a sum in dask.array's order checked
against its own tolerance, a larger product's consumer tested there) read by an op that can take
the tolerance's absolute part (``atol``) beyond its own result's: a product by a tensor or a
number past 1, a quotient by a number under 1 or of something by it, a root, a square. A value
near 0 within ``atol`` of NumPy's 0 became 116 (``(x @ w + b) * 1e12``) or 7.3 (``x.sum(1) *
1e12``) off NumPy's, silently, on main d33c013 (W=25d's own finding, stop 40; checked). Now such a
sum's check holds ``rtol`` alone (failing, it is computed again in NumPy's order), and such a
consumer's product is computed as NumPy does (``capviz/backends/dask/kept_error.py``
``amplifying``)."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest

import capviz as cv

RNG = np.random.default_rng(7)
X = 1e3 * RNG.random((16, 768))
W = RNG.random((768, 2))
B = -(X @ W)[0]  # cancels the first row's product: NumPy's 0
Z = RNG.standard_normal((16, 768)) * 1e3
Z[:, -1] -= Z.sum(1)  # rows summing to about 0

AMPLIFIED = {
    "(x @ w + b) * 1e12": (lambda x: (x @ W + B) * 1e12, X),
    "np.maximum(x @ w + b, 0) * 1e12": (lambda x: np.maximum(x @ W + B, 0) * 1e12, X),
    "(x @ w + b) * x[:, :2] * 1e9": (lambda x: (x @ W + B) * x[:, :2] * 1e9, X),
    "np.sqrt(np.abs(x @ w + b))": (lambda x: np.sqrt(np.abs(x @ W + B)), X),
    "x.sum(1) * 1e12": (lambda x: x.sum(1) * 1e12, Z),
    "x.mean(1) / 1e-9": (lambda x: x.mean(1) / 1e-9, Z),
    "np.sqrt(np.abs(x.sum(1)))": (lambda x: np.sqrt(np.abs(x.sum(1))), Z),
}


@pytest.mark.parametrize("spelling", list(AMPLIFIED))
def test_a_value_within_atol_read_by_an_op_that_amplifies_it_is_numpys(spelling):
    fn, x = AMPLIFIED[spelling]
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    with dask.config.set({"array.chunk-size": "16KiB"}):
        got = graph.replay({"x": da.from_array(x, chunks=(4, 96))}, backend="dask")["out"]
    assert np.array_equal(got, fn(x))


def test_a_softmax_keeps_its_sum_in_dask_arrays_order_where_the_relative_check_holds():
    """``e / e.sum(-1, keepdims=True)``: the sum is a divisor (amplifying where it is under 1),
    checked against rtol alone; of a softmax it is at least 1, so it passes and replays within
    the tolerance in dask.array's order."""
    x = RNG.standard_normal((64, 512))

    def fn(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    got = graph.replay({"x": da.from_array(x, chunks=(16, 128))}, backend="dask")["out"]
    want = fn(x)
    assert np.all(np.abs(got - want) <= 1e-5 + 1e-5 * np.abs(want))
