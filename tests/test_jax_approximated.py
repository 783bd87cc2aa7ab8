"""Issue 25 on JAX: a function XLA approximates, whose value an add or subtract then cancels
(capviz/backends/jax/carried.py, APPROXIMATED). XLA's ``exp`` is within a few units in the last
place of NumPy's, within the tolerance of its own result; ``np.exp(x) - np.exp(y)`` of nearby
``x`` and ``y`` near 10 turns that into 111 times the tolerance of the difference, which
replayed silently. The bound ``K * eps * |value|`` is carried to the subtract and tested there:
the replay fails at it, with the user's line, where it does not hold."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")


def _nearby(offset: float) -> tuple[np.ndarray, np.ndarray]:
    r = np.random.default_rng(0)
    x = (offset + r.random(4096)).astype(np.float32)
    y = (x + np.float32(1e-6) * r.random(4096).astype(np.float32)).astype(np.float32)
    return x, y


def _replay(fn, *args):
    graph = cv.capture(fn, *args)
    return graph.replay(dict(zip(graph.inputs, args)), backend="jax", to_numpy=True)["out"]


def test_a_difference_of_two_exps_that_cancels_fails_at_the_subtract():
    x, y = _nearby(10.0)

    def fn(x, y):
        return np.exp(x) - np.exp(y)

    with pytest.raises(cv.ReplayError) as info:
        _replay(fn, x, y)
    message = str(info.value)
    assert f"(subtract), recorded at {__file__}:{fn.__code__.co_firstlineno + 1} in fn" \
        in message
    assert ("np.subtract: its operands were computed by XLA's own np.exp (within 8 units in "
            "the last place of NumPy's), and this subtract cancels them") in message
    # the premise: XLA's exp is not NumPy's, so the difference would not be NumPy's either
    got = np.asarray(jax.jit(lambda x, y: jax.numpy.exp(x) - jax.numpy.exp(y))(x, y))
    eager = fn(x, y)
    assert np.max(np.abs(got - eager) / (1e-4 + 1e-4 * np.abs(eager))) > 10


@pytest.mark.parametrize("name, fn", [
    ("tanh differences", lambda x, y: np.tanh(x * 0.1) - np.tanh(y * 0.1)),
    ("log differences", lambda x, y: np.log(x) - np.log(y)),
    ("a GELU", lambda x, y: 0.5 * x * (1.0 + np.tanh(0.79788456 * (x + 0.044715 * x ** 3)))),
    ("exp minus one of small values", lambda x, y: np.exp((x - 10.0) * 1e-3) - 1.0),
])
def test_a_difference_within_the_carried_bound_replays_within_the_tolerance(name, fn):
    x, y = _nearby(10.0)
    got = _replay(fn, x, y)
    eager = fn(x, y)
    assert got.dtype == eager.dtype
    np.testing.assert_allclose(got, eager, rtol=1e-4, atol=1e-4)


def test_an_exp_that_reaches_no_add_keeps_xla_s_value_unchecked():
    x, _ = _nearby(10.0)
    got = _replay(lambda x: np.exp(x) * 2.0, x)
    np.testing.assert_allclose(got, np.exp(x) * 2.0, rtol=1e-6)
