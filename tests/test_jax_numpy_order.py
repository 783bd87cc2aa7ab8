"""Issue 25 on JAX, the hostile review 3's findings 6, 8, 13 and 18: where the sums check
fails, the replay computes the sum in NumPy's own order (capviz/backends/jax/numpy_order.py),
bit for bit with eager NumPy, instead of failing; where no program in NumPy's order is written
(float16, the nan forms, an operand NumPy does not hold in C order) the check fails at the node
as before."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.backends.jax import numpy_order
from capviz.backends.jax.backend import x64

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

LENGTHS = [*range(1, 1001), 4097, 8193, 20_000, 100_003, 1_000_000]


def _values(shape, dtype, seed=0):
    """Values of both signs over six decades (every order of their sum rounds otherwise)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)
    return x.astype(dtype)


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), (got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_pairwise_plan_is_numpys_for_every_length(dtype):
    """NumPy's pairwise_sum (8 accumulators up to 128 terms, halves split at a multiple of 8)
    of every length 1 to 1000 and some large ones: the plan's adds, run by NumPy itself, give
    np.sum's bits (np.sum starts from +0.0: a -0.0 total is 0.0 there)."""
    for n in LENGTHS:
        x = _values(n, dtype, seed=n)
        got = numpy_order.by_plan(np, x, numpy_order.plan(n, complex_=False))
        _same_bits(np.where(got == 0, dtype(0), got), np.sum(x))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_the_complex_plan_is_numpys_for_every_length(dtype):
    """A complex sum: four accumulators per part, leaves of 64 terms, split at
    ``(m - m % 8) // 2``."""
    for n in LENGTHS[:1000:3] + LENGTHS[1000:-1]:
        z = _values(n, dtype, seed=n)
        parts = numpy_order.plan(n, complex_=True)
        want = np.sum(z)
        _same_bits(numpy_order.by_plan(np, z.real.copy(), parts) + want.real.dtype.type(0),
                   want.real)
        _same_bits(numpy_order.by_plan(np, z.imag.copy(), parts) + want.real.dtype.type(0),
                   want.imag)


CASES = [*(((n,), None) for n in (1, 2, 7, 8, 9, 16, 17, 64, 65, 127, 128, 129, 257, 1000,
                                  8193)),
         ((7, 300), 0), ((7, 300), 1), ((300, 7), 0), ((300, 7), -1), ((64, 64, 3), (0, 1)),
         ((5, 40, 30), (0, 2)), ((5, 40, 30), (1, 2)), ((300, 1), 0), ((1, 300), 1),
         ((4, 1, 50, 3, 2), (0, 2, 4)), ((2, 3, 4, 5), (0, 2)), ((6, 200, 2), None)]


def _count(shape, axis):
    return int(np.prod(shape)) // int(np.prod(np.sum(np.zeros(shape, np.int8), axis).shape))


def _cumulative_axis(axis):
    return axis if not isinstance(axis, tuple) else None


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_sums_means_and_cumsums_in_numpys_order_under_jit_are_numpys_bits(dtype):
    """The jnp program (gathered leaves padded with -0.0, the tree level by level, a scan for
    a running sum, the mean's division) compiled by XLA: eager NumPy's bits for lengths at
    each edge of the plan, reductions along the last axis, others (row by row), several
    axes, axes of length 1, and all axes."""
    arrays = [_values(shape, dtype, seed=k) for k, (shape, _) in enumerate(CASES)]

    def program(xs):
        out = []
        for x, (shape, axis) in zip(xs, CASES):
            total = numpy_order.reduce_sum(jnp, x, axis)
            out.append((total, numpy_order.mean(jnp, total, _count(shape, axis)),
                        numpy_order.cumulative(jnp, x, _cumulative_axis(axis))))
        return out

    with x64():
        got = jax.jit(program)(arrays)
    for x, (shape, axis), (total, mean, running) in zip(arrays, CASES, got):
        want = np.sum(x, axis)
        _same_bits(np.asarray(total).reshape(np.shape(want)), want)
        want = np.mean(x, axis)
        _same_bits(np.asarray(mean).reshape(np.shape(want)), want)
        _same_bits(running, np.cumsum(x, _cumulative_axis(axis)))


def test_negative_zeros_as_numpy():
    """A reduction starts from +0.0 (np.sum([-0.0]) is 0.0), a cumulative sum from its first
    term (np.cumsum([-0.0]) is [-0.0]); -0.0, the pad, changes no sum."""
    z = np.array([-0.0, -0.0, -0.0], np.float32)
    with x64():
        _same_bits(numpy_order.reduce_sum(jnp, jnp.asarray(z), None), np.sum(z))
        _same_bits(numpy_order.cumulative(jnp, jnp.asarray(z), None), np.cumsum(z))
        mixed = np.array([1.0, -0.0, -1.0, -0.0] * 5, np.float64)
        _same_bits(numpy_order.reduce_sum(jnp, jnp.asarray(mixed), None), np.sum(mixed))


# --- through a replay: the check's failure computes NumPy's bits ---------------------------------


def _replay(fn, *arrays):
    graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    out = graph.replay(dict(zip(graph.inputs, arrays)), backend="jax", to_numpy=True)
    with np.errstate(all="ignore"):
        return np.asarray(next(iter(out.values()))), np.asarray(fn(*arrays))


def _within(got, want, rtol=1e-4, atol=1e-4):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def test_review3_finding6_an_image_channel_mean_and_a_float32_cumsum_are_numpys():
    """Refused before (n roundings: 250 times the real gap): now NumPy's bits."""
    rng = np.random.default_rng(0)
    _same_bits(*_replay(lambda x: x.mean((0, 1)), rng.random((64, 64, 3)).astype(np.float32)))
    _same_bits(*_replay(lambda x: np.cumsum(x), rng.random(1000).astype(np.float32)))


def test_review3_finding13_running_sums_of_never_negative_terms_are_numpys():
    """Unchecked before (0.6% off, silent): a column sum of squares, a mean absolute value
    over rows, an RMS, a cumsum of magnitudes, on (1e5, 2) float32 values in [1, 1.01]."""
    x = (1 + 0.01 * np.random.default_rng(0).random((100_000, 2))).astype(np.float32)
    _same_bits(*_replay(lambda a: np.mean(np.abs(a), axis=0), x))
    _same_bits(*_replay(lambda a: np.sum(a ** 2, axis=0), x))
    _same_bits(*_replay(lambda a: np.sqrt(np.mean(a ** 2, axis=0)), x))
    _same_bits(*_replay(lambda a: np.cumsum(np.abs(a[:, 0]))[-1:], x))


def test_review3_finding18_float32_training_sums_replay():
    """Refused before: the bias gradient of a batch of 1024 (a column sum), and x.sum() of
    1e5 unit normals that cancels near 0."""
    rng = np.random.default_rng(0)
    dout = rng.standard_normal((1024, 64)).astype(np.float32)
    _same_bits(*_replay(lambda d: d.sum(0), dout))
    for seed in range(5):
        x = np.random.default_rng(seed).standard_normal(100_000).astype(np.float32)
        got, want = _replay(lambda a: a.sum(), x)
        _within(got, want)


@pytest.mark.parametrize("offset", [1e3, 1e4])
def test_review3_finding8_a_centring_after_a_mean_is_numpys(offset):
    """A last-axis mean within one rounding, then ``x - mean`` cancelling 3 to 4 digits (a
    layer norm of un-normalised inputs): 1.2x to 34x the tolerance, silent before. The mean
    a subtraction of its own operand reads is held to that subtraction's tolerance: NumPy's
    mean, so the centring is NumPy's bits, and the layer norm within the tolerance."""
    x = (offset + np.random.default_rng(1).random((16, 768))).astype(np.float32)
    _same_bits(*_replay(lambda a: a - a.mean(-1, keepdims=True), x))

    def layer_norm(a):
        mu = a.mean(-1, keepdims=True)
        return (a - mu) / np.sqrt(a.var(-1, keepdims=True) + np.float32(1e-5))

    _within(*_replay(layer_norm, x))


def test_a_transposed_operand_keeps_the_checks_failure():
    """NumPy adds ``x.T.sum(-1)`` of a C array row after row, not pairwise: no program here
    knows that order, so a sum the check fails still fails at the node (held to the running
    sum's bound, which follows x.T's layout: capviz/backends/jax/layouts.py)."""
    big = np.random.default_rng(3).standard_normal(2000) * 1e16
    columns = np.stack([np.concatenate([big, -big[::-1]])] * 2, axis=1)
    columns[5] += 1.0
    graph = cv.capture(lambda a: a.T.sum(-1), cv.spec(columns.shape, columns.dtype))
    with pytest.raises(cv.ReplayError, match=r"\(sum\).*np\.sum: NumPy adds the terms of this "
                       r"sum one after another"):
        graph.replay({graph.inputs[0]: columns}, backend="jax")


def test_a_float16_running_sum_is_numpys_order():
    """A float16 running sum (rows added one after another, each partial sum rounded to
    float16) is NumPy's order, a lax.scan with a float16 carry: 5,000 ones stall at 2048 as in
    NumPy (jax.numpy's float32 partial sums give 5000; refused at the node before)."""
    columns = np.full((5000, 2), 1.0, np.float16)
    graph = cv.capture(lambda a: np.sum(a, axis=0), cv.spec(columns.shape, columns.dtype))
    got = graph.replay({graph.inputs[0]: columns}, backend="jax", to_numpy=True)["out"]
    assert got.dtype == np.float16 and got.tolist() == [2048.0, 2048.0]


def test_a_sum_the_check_passes_is_xlas():
    """The common case: the check passes and XLA's reduction is the result (the program in
    NumPy's order does not run): a float64 row sum, not NumPy's bits here."""
    x = np.random.default_rng(5).standard_normal((4, 100_000))
    got, want = _replay(lambda a: a.sum(-1), x)
    _within(got, want)
