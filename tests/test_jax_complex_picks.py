"""Issue 25 on JAX: a complex pick (``max``, ``min``, ``np.maximum``, ``np.fmin``, ``np.sort``...)
of values XLA computed (:mod:`capviz.backends.jax.complex_picks`). NumPy orders complex values
by their real parts first; where two candidates' real parts are within the values' tolerance of
each other, XLA's rounding can break the tie the other way, and the pick's imaginary part jumps
(W=25d's composition row, stop 37: ``q = ((x + 1j) * (x[::-1] - 2j)) @ v``, whose rows i and
5 - i have equal real parts in exact arithmetic; ``q.max(0) - q.min(0)`` replayed
``4.97-4.14j`` where NumPy gives ``4.97+8.80j``, silently). The replay now fails at the pick
there. Every refusal test here fails before (checked on main 787e928: the replay returned)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry

jax = pytest.importorskip("jax")

_R = np.random.default_rng(0)
X = _R.standard_normal((6, 8))
V = _R.standard_normal((8, 8))


def tied(x, v):  # rows i and 5 - i: equal real parts in exact arithmetic
    return ((x + 1j) * (x[::-1] - 2j)) @ v[:8, :3]


SPELLINGS = {
    "max - min": ("max", lambda x, v: tied(x, v).max(0) - tied(x, v).min(0)),
    "max alone": ("max", lambda x, v: tied(x, v).max(0)),
    "np.amax of all": ("max", lambda x, v: np.amax(tied(x, v))),
    "np.nanmin": ("nanmin", lambda x, v: np.nanmin(tied(x, v), axis=0)),
    "np.maximum": ("maximum", lambda x, v: np.maximum(tied(x, v), tied(x, v)[::-1])),
    "np.fmin": ("fmin", lambda x, v: np.fmin(tied(x, v), tied(x, v)[::-1])),
    "np.sort": ("sort", lambda x, v: np.sort(tied(x, v), axis=0)),
}


def _replay(fn, *args, backend="jax"):
    graph = cv.capture(fn, *args)
    return graph.replay(dict(zip(graph.inputs, args)), backend=backend, to_numpy=True)["out"]


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_a_complex_pick_of_tied_real_parts_fails_at_the_pick(spelling):
    op, fn = SPELLINGS[spelling]
    graph = cv.capture(fn, X, V)
    with pytest.raises(cv.ReplayError) as info:
        graph.replay(dict(zip(graph.inputs, (X, V))), backend="jax")
    text = str(info.value)
    assert re.match(rf"replay failed at node %\d+ \({op}\), recorded at "
                    rf"{re.escape(__file__)}:\d+ in ", text), text
    assert text.endswith(
        f"np.{op}: of complex values, which NumPy orders by their real parts first: two of "
        "them have real parts within the tolerance of XLA's arithmetic of each other and "
        "differ beyond it, so NumPy's pick and XLA's may differ there (by the imaginary "
        "parts); replay with backend='numpy'"), text


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_the_fix_it_names_replays_numpy_s_bits(spelling):
    _, fn = SPELLINGS[spelling]
    np.testing.assert_array_equal(_replay(fn, X, V, backend="numpy"), fn(X, V))


def test_a_pick_of_an_input_s_tied_values_is_not_checked():
    # an input is NumPy's own values: its ties are NumPy's
    z = np.array([[1 + 1j, 1 + 2j], [1 + 3j, 1 - 1j]])
    fn = lambda z: z.max(0) - z[0]  # noqa: E731
    np.testing.assert_array_equal(_replay(fn, z), fn(z))


@pytest.mark.parametrize("op", ["max", "min"])
def test_a_complex_pick_of_values_with_no_tie_replays_within_the_tolerance(op):
    rng = np.random.default_rng(1)
    z = rng.standard_normal((16, 8)) + 1j * rng.standard_normal((16, 8))
    w = rng.standard_normal((8, 8)) + 1j * rng.standard_normal((8, 8))
    fn = (lambda z, w: (z @ w).max(0)) if op == "max" else (lambda z, w: (z @ w).min(0))
    got, want = _replay(fn, z, w), fn(z, w)
    rtol, atol = registry.get("jax").tolerance_for(want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
