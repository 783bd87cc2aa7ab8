"""Issue 25 on JAX (stop 41, W=25a): a value the replay tests against ``atol + rtol |value|``
(a sum XLA adds in its own order, a bias add of a declared product) passes near 0 by ``atol``
alone, and an op after it that scales it up carried the error, not the tolerance: float64
``(x @ w + b) * 1e12`` of a bias cancelling a row was 437 off NumPy's 0, ``x.sum(1) * 1e12`` of
rows summing near 0 10.9 off NumPy's 3.6, ``1 / x.sum(1)`` finite where NumPy's is ``inf``,
silently, on main dc00c85 (checked: every test of the first two groups fails there). Dask's
d1db3b0 fixed the same class. Now the test holds ``atol`` over the factor the readers scale the
error by (:func:`capviz.backends.jax.amplified.gain`, 0 where it is known at run time only): a
sum failing it is computed in NumPy's order (NumPy's bits), an add fails at its node naming the
fix.

And a float16 product of ``k >= 2048`` terms (``k u >= 1``: no bound ``gamma_k`` holds) reaching
a consumer: :func:`capviz.backends.jax.carried_contractions.declared_bound` gave 0 for its
infinite bound, so the consumer passed (exact on the data measured, by luck of XLA's order;
a ``k = 1024`` one, whose bound is finite, was refused): now it fails as the ``k = 1024`` one
does."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry

jax = pytest.importorskip("jax")

RNG = np.random.default_rng(7)
X = 1e3 * RNG.random((16, 768))
W = RNG.random((768, 2))
B = -(X @ W)[0]  # cancels the first row's product: NumPy's 0
Z = RNG.standard_normal((16, 768)) * 1e3
Z[:, -1] -= Z.sum(1)  # rows summing to about 0


def _replayed(fn, x):
    graph = cv.capture(fn, x)
    return np.asarray(next(iter(graph.replay(dict(zip(graph.inputs, (x,))),
                                             backend="jax").values())))


REFUSED = {
    "(x @ w + b) * 1e12": lambda x: (x @ W + B) * 1e12,
    "(x @ w + b) / 1e-12": lambda x: (x @ W + B) / 1e-12,
    "(x @ w + b) * x[:, :2] * 1e9": lambda x: (x @ W + B) * x[:, :2] * 1e9,  # by 1e9
    "(np.einsum('ij,jk->ik', x, w) + b) * 1e12":
        lambda x: (np.einsum("ij,jk->ik", x, W) + B) * 1e12,
    "np.sqrt(np.abs(x @ w + b))": lambda x: np.sqrt(np.abs(x @ W + B)),
    "((x @ w + b) * 1e3) ** 3": lambda x: ((x @ W + B) * 1e3) ** 3,
}


@pytest.mark.parametrize("spelling", list(REFUSED))
def test_a_bias_add_within_atol_then_scaled_up_fails_at_the_add(spelling):
    fn = REFUSED[spelling]
    with pytest.raises(cv.ReplayError) as info:
        _replayed(fn, X)
    text = str(info.value)
    assert re.match(rf"replay failed at node %\d+ \(add\), recorded at {re.escape(__file__)}:"
                    r"\d+ in <lambda>: np\.add: its operand was a product of linear algebra "
                    r"\(np\.(matmul|einsum)", text), text
    assert text.endswith("replay with backend='numpy', or take XLA's order of summation for "
                         "products with arithmetic='xla' (graph.compare reports the "
                         "difference)"), text


EXACT = {
    "x.sum(1) * 1e12": lambda x: x.sum(1) * 1e12,
    "x.mean(1) / 1e-12": lambda x: x.mean(1) / 1e-12,
    "1 / x.sum(1)": lambda x: 1 / x.sum(1),
    "x.sum(1) * x[:, 0] * 1e9": lambda x: x.sum(1) * x[:, 0] * 1e9,
    "np.sqrt(np.abs(x.sum(1)))": lambda x: np.sqrt(np.abs(x.sum(1))),
    "np.log(np.abs(x.sum(1)))": lambda x: np.log(np.abs(x.sum(1))),
}


@pytest.mark.parametrize("spelling", list(EXACT))
def test_a_sum_within_atol_then_scaled_up_is_numpys(spelling):
    fn = EXACT[spelling]
    with np.errstate(divide="ignore"):
        assert np.array_equal(_replayed(fn, Z), fn(Z))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ordinary_layers_scaled_up_still_replay(dtype):
    """A bias add that keeps its product, then a scaling (a temperature, a gain), and a sum
    of terms of one sign scaled up: no value near 0 within ``atol`` only."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 64)).astype(dtype)
    w = (rng.standard_normal((64, 16)) * 0.1).astype(dtype)
    b = np.full(16, 3.0, dtype)

    def fn(x):
        return (x @ w + b) * 1e3, (x * x).sum(1) * 1e3

    got = cv.capture(fn, x).replay({"x": x}, backend="jax")
    rtol, atol = registry.get("jax").tolerance_for(np.dtype(dtype))
    for value, want in zip(got.values(), fn(x)):
        np.testing.assert_allclose(np.asarray(value), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("k", [2048, 4096])
def test_a_float16_product_past_any_bound_fails_at_its_consumer(k):
    rng = np.random.default_rng(0)
    x = 1.0 + 0.1 * rng.random((8, k))
    x = x.astype(np.float16)
    w = (0.01 + 0.01 * rng.random((k, 4))).astype(np.float16)
    t = x @ w  # NumPy's product: the subtract cancels it to 0

    def fn(x):
        return x @ w - t

    with pytest.raises(cv.ReplayError) as info:
        _replayed(fn, x)
    text = str(info.value)
    assert "np.subtract: its operand was a product of linear algebra (np.matmul" in text \
        and "replay with backend='numpy'" in text, text
