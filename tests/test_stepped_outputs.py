"""Issue 25, the hostile review 13, finding 1 (stop 41): a float output read from a step of a
float the backend rounds otherwise (capviz/replay/steps.py). ``np.floor(np.exp(x))`` replayed on
JAX 1 off NumPy's (4.0 for 5.0), ``np.mean(np.exp(x) >= t)`` 0.0125 off with a tolerance of
1e-4, greedy decoding's row picked by ``np.argmax`` 19,900 off, with no warning (the integer
index itself warned). Each such output is declared now as the integer ones are: the replay warns
once, naming it and the step."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry
from capviz.replay.exactness import inexact_integer_outputs

jax = pytest.importorskip("jax")

X = np.log(np.arange(1, 20001.0))  # exp(X) lands within an ulp of every integer 1..20000
T = np.arange(1, 20001.0)


def _replay(fn, *args):
    graph = cv.capture(fn, *args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = graph.replay(dict(zip(graph.inputs, args)), backend="jax", to_numpy=True)["out"]
    return out, [str(w.message) for w in caught if issubclass(w.category, cv.InexactResultWarning)]


def _floor(x):
    return np.floor(np.exp(x))


def _share(x, t):
    return np.mean(np.exp(x) >= t)


def _mask(x, t):
    return (np.exp(x) >= t) * 1.0


def _sign(x, t):
    return np.sign(np.exp(x) - t)


def _greedy(x, t):
    logits = np.stack([np.exp(x), t], 1)
    return np.take_along_axis(np.stack([t, 2 * t], 1), np.argmax(logits, 1)[:, None], 1)


def _row(x):
    table = np.arange(20001.0) * 4.51
    return table[np.exp(x).astype(np.int64)]


@pytest.mark.parametrize("fn, args, step", [
    (_floor, (X,), "floor"), (_share, (X, T), "greater_equal"), (_mask, (X, T), "greater_equal"),
    (_sign, (X, T), "sign"), (_greedy, (X, T), "argmax"), (_row, (X,), "astype"),
])
def test_a_float_read_from_a_step_of_xla_s_float_warns_naming_it(fn, args, step):
    got, caught = _replay(fn, *args)
    eager = fn(*args)
    # the premise: beyond the tolerance somewhere (XLA's exp rounds across the step)
    assert np.max(np.abs(got - eager) - (1e-4 + 1e-4 * np.abs(eager))) > 0
    assert len(caught) == 1
    assert "'out' (float64, from %" in caught[0]
    assert f"({step}, recorded at {__file__}:" in caught[0]
    assert "Replay with backend='numpy'" in caught[0]


def test_the_differential_harness_counts_such_an_output_declared():
    graph = cv.capture(_share, X, T)
    assert [out.name for out, _ in inexact_integer_outputs(graph, registry.get("jax"))] \
        == ["out"]


@pytest.mark.parametrize("fn", [
    lambda x: np.floor(x) * np.exp(x),         # a rounding of an input: exact
    lambda x: np.maximum(np.exp(x), 2.0),      # a continuous function: within the tolerance
    lambda x: np.where(x > 3.0, np.exp(x), 0), # a step of an input selects XLA's values
])
def test_no_step_of_an_inexact_value_does_not_warn(fn):
    _, caught = _replay(fn, X)
    assert caught == []
