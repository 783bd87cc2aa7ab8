"""The cheap test of a declared contraction's add on JAX (W=25s, stop 36; R7 #34: GPT-2's
replay paid an elementwise test per bias add and per head's masked scores, 1.86x jax.jit with
biases 0.02 * N(0, 1)).

A product ``u`` (``x @ W``, moved, scaled by numbers) reaching an add or subtract ``r = u + o``
is tested where the add cancels it (``|r| < |u| / 2``) against its bound from ``|u|``
(:func:`capviz.backends.jax.carried.nominal`). Now:

- where ``o`` is a constant whose largest magnitude bounds that bound within the tolerance
  (``|u| < 2 |o|`` where the add cancels: a bias of a trained model's size), and no other bound
  reaches the add, the fast program makes no test there at all;
- elsewhere the test reads the add's result and ``o`` only (``|u| <= |r - o|``, one rounding of
  ``r`` allowed), reduced to a flag at once; a failure reruns the precise trace, which takes the
  magnitudes' product and fails at the add, naming the user's line, where that fails.
"""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::capviz.InexactResultWarning")

RNG = np.random.default_rng(11)
W = (RNG.standard_normal((768, 64)) * 0.02).astype(np.float32)
SMALL = (RNG.standard_normal(64) * 0.02).astype(np.float32)
ONES = np.ones(768, np.float32)


def _fast_checks(fn, x):
    """``fn`` replayed on JAX for ``x``: its output and how many checks its fast program
    makes."""
    pytest.importorskip("jax")
    from capviz.backends.jax.backend import BACKEND

    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    got = np.asarray(graph.compile(backend="jax")(x)[0])
    compiled = BACKEND._compiled[graph.replay_cache["jax"][2]]
    return got, len(compiled.checks[False])


def _dense_small(x):
    return x @ W + SMALL


def _dense_large(x):
    return x @ W + SMALL * np.float32(1e4)


def test_a_dense_layer_plus_a_small_constant_bias_makes_no_check_on_jax():
    # fails before: the add made an elementwise test as a large bias's does
    x = np.random.default_rng(0).standard_normal((64, 768)).astype(np.float32)
    got_small, small = _fast_checks(_dense_small, x)
    got_large, large = _fast_checks(_dense_large, x)
    assert small < large
    for got, fn in ((got_small, _dense_small), (got_large, _dense_large)):
        want = fn(x)
        assert np.all(np.abs(got - want) <= 1e-4 + 1e-4 * np.abs(want))


def test_a_small_constant_bias_that_cancels_the_product_replays_within_the_tolerance():
    # x @ ones of values near 1.5e-5 is near 0.0115; the bias takes it to near 0: the add
    # cancels the product, but its declared error (2 gamma_768 * 0.0115, 1e-6) is within atol
    pytest.importorskip("jax")
    x = (1e-5 * (1 + np.random.default_rng(2).random((16, 768)))).astype(np.float32)
    bias = -np.float32(np.median(x @ ONES))
    fn = lambda v: v @ ONES + bias  # noqa: E731
    got, checks = _fast_checks(fn, x)
    want = fn(x)
    assert np.abs(want).min() < 0.5 * np.abs(x @ ONES).min()  # the add cancels somewhere
    assert np.all(np.abs(got - want) <= 1e-4 + 1e-4 * np.abs(want))
    _, without = _fast_checks(lambda v: v @ ONES, x)
    assert checks == without


def _near():
    return (1e3 + np.random.default_rng(0).random((16, 768))).astype(np.float32)


CANCELLING = -(_near() @ ONES)[0]


def _constant_cancels(x):
    return x @ ONES + CANCELLING


def _scaled_cancels(x):
    return (x @ ONES) * np.float32(0.5) + CANCELLING * np.float32(0.5)


def _divided_cancels(x):
    return -(x @ ONES)[:, None] / np.float32(768) + (x + np.float32(0.001)).mean(-1, keepdims=True)


@pytest.mark.parametrize("fn", [_constant_cancels, _scaled_cancels, _divided_cancels])
def test_a_sum_written_as_a_product_cancelled_by_a_constant_or_a_mean_fails_at_the_add(fn):
    pytest.importorskip("jax")
    x = _near()
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    with pytest.raises(cv.ReplayError, match=(
            rf"node %\d+ \(add\), recorded at .*test_declared_cheap\.py:\d+ in "
            rf"{fn.__name__}: np\.add: its operand was a product of linear algebra whose "
            r"products add up as one sign's \(np\.matmul: .*replay with backend='numpy'")):
        graph.replay({graph.inputs[0]: x}, backend="jax")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("op", ["add", "subtract"])
def test_the_operand_read_from_the_result_and_the_other_is_never_below_its_magnitude(op, dtype):
    jnp = pytest.importorskip("jax.numpy")
    from capviz.backends.jax import carried
    from capviz.backends.jax.backend import x64

    rng = np.random.default_rng(5)
    real = np.dtype(dtype(0).real.dtype)
    tiny = float(np.finfo(real).tiny)
    u = rng.standard_normal(4000) * 10.0 ** rng.integers(-3, 4, 4000)
    o = -u * (1 + rng.standard_normal(4000) * 10.0 ** rng.integers(-8, 0, 4000))
    u[:50], o[:50] = tiny * rng.random(50), -tiny * rng.random(50)  # flushed sums
    if real.kind == "f" and np.dtype(dtype).kind == "c":
        u = u + 1j * rng.standard_normal(4000)
        o = o - 1j * np.imag(u) * (1 + 1e-7 * rng.standard_normal(4000))
    u, o = u.astype(dtype), o.astype(dtype)
    with x64():
        for position in (0, 1):
            a = (u, o) if position == 0 else (o, u)
            ja = tuple(jnp.asarray(v) for v in a)
            r = ja[0] + ja[1] if op == "add" else ja[0] - ja[1]
            above = np.asarray(carried._operand_above(jnp, op, position, ja, r, real))
            assert np.all(above >= np.abs(u.astype(np.complex128)))


LARGE = (np.random.default_rng(12).standard_normal(64) * 0.3).astype(np.float32)


def _dense_trained(x):
    return x @ W + LARGE


def test_a_bias_of_a_trained_models_size_takes_the_exact_bound_in_the_fast_program():
    # fails before: the cheap test failed where the bias halves an output (R8 #30) and every
    # call ran the precise program too (traced for it: checks[True])
    pytest.importorskip("jax")
    from capviz.backends.jax.backend import BACKEND

    x = np.random.default_rng(0).standard_normal((64, 768)).astype(np.float32)
    graph = cv.capture(_dense_trained, cv.spec(x.shape, x.dtype))
    got = np.asarray(graph.compile(backend="jax")(x)[0])
    compiled = BACKEND._compiled[graph.replay_cache["jax"][2]]
    want = _dense_trained(x)
    assert np.abs(want).min() < 0.5 * np.abs(x @ W).max()
    assert np.all(np.abs(got - want) <= 1e-4 + 1e-4 * np.abs(want))
    assert True not in compiled.checks
