"""A sum of the results of ``exp``, ``exp2`` or ``square`` (softmax's ``np.sum(np.exp(...))``)
holds no subnormal test of its terms on the JAX backend
(capviz/backends/jax/subnormals/reductions.NONNEGATIVE_TERMS; the lead's speed ruling 40 17:35,
W=25p): XLA flushes what it computes, so each term is 0 or at least ``tiny``, never negative,
and every partial sum is 0 or normal in any order. What still fails: a term NumPy keeps
subnormal where XLA's is 0 (at the op that made it), a mean (its division by ``n``), and sums of
other terms (``abs`` moves an input's bits: tested as before). The sums' test itself is covered
by tests/test_engine_silent.py::test_jax_sum_cancelling_into_a_subnormal_fails_at_the_reduction."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::capviz.InexactResultWarning")


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _refused(fn, a, op, text):
    graph = cv.capture(fn, cv.spec(a.shape, a.dtype))
    with pytest.raises(cv.ReplayError, match=text) as info:
        graph.replay({graph.inputs[0]: a}, backend="jax")
    assert info.value.node.op == op, info.value.node
    assert f"({op})" in str(info.value)
    assert "test_jax_nonnegative_sums.py" in str(info.value)
    assert "replay with backend='numpy'" in str(info.value)


def _fast_program(fn, a):
    import jax

    from capviz.backends.jax.backend import _ZERO, BACKEND, x64
    from capviz.backends.jax.layouts import C

    graph = cv.capture(fn, cv.spec(a.shape, a.dtype))
    compiled = graph.compile(backend="jax")
    jax.block_until_ready(compiled(a))
    program = BACKEND._compiled[graph.replay_cache["jax"][2]]
    with x64(), jax.default_matmul_precision("highest"):
        closed = jax.make_jaxpr(program._fn.__wrapped__, static_argnums=(4, 5, 6))(
            (a,), program.constants, None, _ZERO, False, (C,), False)
    def walk(jaxpr):  # the primitives, those of the functions it calls (jnp.where...) too
        for e in jaxpr.eqns:
            yield str(e.primitive)
            for inner in e.params.values():
                inner = getattr(inner, "jaxpr", inner)
                if hasattr(inner, "eqns"):
                    yield from walk(inner)

    return list(walk(closed.jaxpr))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_a_softmax_sum_holds_no_test_of_its_terms(dtype, monkeypatch):
    from capviz.backends.jax.subnormals import reductions

    a = np.random.default_rng(0).standard_normal((4, 16)).astype(dtype)
    graph = cv.capture(softmax, cv.spec(a.shape, a.dtype))
    got = graph.replay({graph.inputs[0]: a}, backend="jax")["out"]
    np.testing.assert_allclose(got, softmax(a), rtol=1e-5)
    found = _fast_program(softmax, a)
    monkeypatch.setattr(reductions, "NONNEGATIVE_TERMS", frozenset())  # the test, as before
    tested = _fast_program(softmax, a)
    # the terms' test: |e| < tiny * 2**(nmant + 1), e != 0, and a NaN where it fails
    assert found.count("lt") == tested.count("lt") - 1, (found, tested)
    assert found.count("select_n") == tested.count("select_n") - 1, (found, tested)


@pytest.mark.parametrize("fn", [lambda a: np.exp(a).sum(), lambda a: softmax(a[None])[0],
                                lambda a: np.cumsum(np.exp(a))],
                         ids=["sum", "softmax", "cumsum"])
def test_an_exp_numpy_keeps_subnormal_fails_at_the_exp(fn):
    # NumPy: exp(-100) = 3.7e-44 (a float32 subnormal); XLA flushes it to 0
    _refused(fn, np.array([-100.0, -1.0], np.float32), "exp",
             "exp gave 0 where NumPy's result is a nonzero subnormal")


def test_a_square_numpy_keeps_subnormal_fails_at_the_square():
    # NumPy: 1e-20 ** 2 = 1e-40 (a float32 subnormal); XLA flushes it to 0
    _refused(lambda a: np.square(a).sum(), np.array([1e-20, 1.0], np.float32), "square",
             "square gave 0 where NumPy's result is a nonzero subnormal")


def test_a_mean_of_exp_is_still_tested():
    # normal terms (2.4e-38) whose mean divides by n: tested as every mean is
    a = np.full(64, -86.6, np.float32)
    _refused(lambda a: np.exp(a).mean(), a, "mean", "an operand of mean holds values of "
             "magnitude below")


def test_a_sum_of_absolute_values_is_still_tested():
    # abs of an input keeps its bits (1e-32 passes to the sum as it is): tested as before
    a = np.array([1e-32, -1e-32, 2e-32], np.float32)
    _refused(lambda a: np.abs(a).sum(), a, "sum", "an operand of sum holds values of "
             "magnitude below")
