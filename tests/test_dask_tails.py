"""An MLP on Dask past the chunk-size whose last bias add's result goes to a squared loss
(``((y - t) ** 2).mean()``) or a softmax (``exp(z - z.max(1, keepdims=True)) / sum``) keeps both
products on dask.array's blocks, the loss or softmax tested at run time at its last op
(``capviz/backends/dask/tails.py``, issue 25 stop 41). Before, both products were gathered onto
one block: the subtract and the square or exp after the tested bias add had no test."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest

import capviz as cv
from tests.test_dask_chained_products import B1, B2, SMALL, W1, W2, X, _blocked_products

T = np.maximum(X @ W1 + B1, 0) @ W2 + B2 + 1e-3 * np.random.default_rng(41).standard_normal(
    (64, 32))


def _z(x):
    return np.maximum(x @ W1 + B1, 0) @ W2 + B2


def _softmax(x):
    z = _z(x)
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


TAILS = {
    "mean of squares": lambda x: (_z(x) ** 2).mean(),
    "squared loss": lambda x: ((_z(x) - T) ** 2).mean(),
    "squared loss per row": lambda x: ((_z(x) - T) ** 2).sum(1),
    "squared loss by a number": lambda x: ((_z(x) + 0.5) ** 2).mean(0, keepdims=True),
    "softmax": _softmax,
}


def _replay(fn, x, chunk_size=SMALL, **options):
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    with dask.config.set({"array.chunk-size": chunk_size}):
        return graph.replay({"x": da.from_array(x, chunks=(16, 256))}, backend="dask",
                            **options)["out"]


@pytest.mark.parametrize("spelling", list(TAILS))
def test_a_loss_or_softmax_after_an_mlp_keeps_both_products_on_their_blocks(spelling):
    """Both products in row blocks (on main dc00c85 both were one block: 0 blocked), the
    result within the tolerance of NumPy's."""
    fn = TAILS[spelling]
    assert _blocked_products(_replay(fn, X, compute=False)) == 2
    np.testing.assert_allclose(_replay(fn, X), fn(X), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("spelling", list(TAILS))
@pytest.mark.parametrize("scale", [1e3, 1e5])
def test_large_values_replay_within_the_tolerance(spelling, scale):
    """Inputs up to 1e5 (logits up to ~1e6): within NumPy's tolerance."""
    fn, x = TAILS[spelling], X * scale
    np.testing.assert_allclose(_replay(fn, x), fn(x), rtol=1e-5, atol=1e-5)


def test_a_squared_loss_beyond_its_tolerance_fails_at_the_mean():
    """Values near 1e10 whose difference from ``t`` is 1e-3: the bias add's carried rounding
    (0.09) can move the mean of squares (1e-6) beyond its tolerance: refused at np.mean, the
    user's line named, with the fixes; ``arithmetic='dask'`` and a chunk-size the operands fit
    replay."""
    x = X * 1e10
    t = _z(x) + 1e-3

    def loss(x):
        return ((np.maximum(x @ W1 + B1, 0) @ W2 + B2 - t) ** 2).mean()

    with pytest.raises(cv.ReplayError) as raised:
        _replay(loss, x)
    text = str(raised.value)
    assert "(mean)" in text and "test_dask_tails.py" in text and "in loss" in text
    assert "np.mean reads np.add's result of np.matmul" in text
    assert "arithmetic='dask'" in text and "array.chunk-size" in text
    assert np.isfinite(_replay(loss, x, arithmetic="dask"))
    assert _replay(loss, x, chunk_size="128MiB") == loss(x)


def test_a_softmax_beyond_its_tolerance_fails_at_the_quotient():
    """Logits near 1e8 (inputs x 1e7): ``exp`` makes the bias add's carried rounding a relative
    one beyond the tolerance: refused at the quotient, naming np.divide and the user's line."""
    x = X * 1e7
    with pytest.raises(cv.ReplayError) as raised:
        _replay(_softmax, x)
    text = str(raised.value)
    assert "(divide)" in text and "in _softmax" in text and "np.divide reads np.add's" in text
    np.testing.assert_array_equal(_replay(_softmax, x, chunk_size="128MiB"), _softmax(x))


@pytest.mark.parametrize("spelling", ["target computed", "square returned", "exp returned"])
def test_any_other_reader_keeps_the_gather(spelling):
    """A target computed from the input (its own rounding), a square or exp also returned
    (tested nowhere): the last product stays on one block, exact."""
    def target(x):
        return ((_z(x) - x[:, :32] * 0.5) ** 2).mean()

    def square(x):
        s = (_z(x) - T) ** 2
        return s.mean(), s

    def exp(x):
        z = _z(x)
        e = np.exp(z - z.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True), e

    fn = {"target computed": target, "square returned": square, "exp returned": exp}[spelling]
    graph = cv.capture(fn, cv.spec(X.shape, X.dtype))
    with dask.config.set({"array.chunk-size": SMALL}):
        lazy = graph.replay({"x": da.from_array(X, chunks=(16, 256))}, backend="dask",
                            compute=False)
        got = graph.replay({"x": da.from_array(X, chunks=(16, 256))}, backend="dask")
    first = next(iter(lazy.values())) if isinstance(lazy, dict) else lazy[0]
    assert _blocked_products(first) == 0
    for value, want in zip(got.values(), fn(X) if isinstance(fn(X), tuple) else (fn(X),)):
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-5)

