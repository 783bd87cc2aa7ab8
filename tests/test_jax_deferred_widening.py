"""Stop 41 (W=25p, issue 25's speed): a bound carried through a contraction whose operand XLA
holds 0 is widened by NumPy's whole rounding of the product (R12's note 18:21,
``carried_paths._more_terms``) under a ``lax.cond`` per contraction. In a replay's fast program
that cond (a reduction and a branch XLA cannot fuse: 144 in GPT-2 small) is now a merged
elementwise test that no such 0 is (``trace.deferred_widening``): where one is, the precise
program, which keeps the cond, gives the checks and the outputs, and the fast program is traced
with the cond from then on. The same bound, the same checks, the same outputs."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.backends import contraction_bound

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from capviz.backends.jax import carried_paths, trace  # noqa: E402
from capviz.backends.jax.backend import BACKEND, x64  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::capviz.InexactResultWarning")


def _attention_residual(x):
    """One head's attention read by a residual add: softmax's sum reaches the add through
    ``p @ x``, so its bound is carried through the contraction (``_more_terms``)."""
    s = x @ x.T
    e = np.exp(s - s.max(-1, keepdims=True))
    return x + (e / e.sum(-1, keepdims=True)) @ x


def _graph():
    x = np.random.default_rng(3).standard_normal((8, 16)).astype(np.float32)
    return cv.capture(_attention_residual, cv.spec(x.shape, x.dtype)), x


def _fast_text(graph, x):
    """The replay's fast program, lowered, as text (after a replay traced it)."""
    fn = graph.compile(backend="jax", arithmetic="xla")
    fn(x)
    compiled = BACKEND._compiled[fn._program]
    with x64():
        return compiled._fn.lower((jnp.asarray(x),), compiled.constants, None, np.int64(0),
                                  False, ("C",), True, compiled._deferred).as_text()


def test_the_fast_program_has_no_cond_for_the_widening_and_replays_the_same_bits(monkeypatch):
    graph, x = _graph()
    deferred = _fast_text(graph, x)
    got = np.asarray(graph.compile(backend="jax", arithmetic="xla")(x)[0])
    monkeypatch.setattr(trace, "DEFERRED_WIDENING", False)  # as before stop 41
    graph2, _ = _graph()
    conds = _fast_text(graph2, x)
    want = np.asarray(graph2.compile(backend="jax", arithmetic="xla")(x)[0])
    assert conds.count("stablehlo.case") > deferred.count("stablehlo.case")
    assert np.array_equal(got, want)
    eager = _attention_residual(x)
    assert np.all(np.abs(got - eager) <= 1e-4 + 1e-4 * np.abs(eager))


def _more_terms_traced(a, bound, precise):
    """``_more_terms`` of ``a @ b`` with ``a`` off by ``bound``, in a jit-traced program's fast
    (deferred) or precise trace: (its bound, the trace's checks and flags)."""
    node = cv.capture(np.matmul, cv.spec((2, 64), np.float32),
                      cv.spec((64, 3), np.float32)).ops[-1]
    b = np.random.default_rng(5).standard_normal((64, 3)).astype(np.float32)
    kept = {}

    def program(a, b, bound):
        with trace.tracing([node], precise, jnp) as t:
            t.deferred_widening = trace.trace_state()
            fn = jnp.matmul
            out = carried_paths._more_terms(jnp, node, (a, b), {0: bound}, bound @ jnp.abs(b),
                                            fn, {}, np.dtype(np.float32))
        kept["checks"] = t.checks
        return out, jnp.stack(t.flags) if t.flags else jnp.ones(0, bool)

    with x64():
        out, flags = jax.jit(program)(jnp.asarray(a), jnp.asarray(b), jnp.asarray(bound))
    return np.asarray(out), kept["checks"], np.asarray(flags), b


def test_the_fast_programs_test_fails_where_an_operand_xla_holds_0_carries_a_bound():
    a = np.random.default_rng(4).standard_normal((2, 64)).astype(np.float32)
    bound = np.full((2, 64), 1e-6)
    out, checks, flags, b = _more_terms_traced(a, bound, precise=False)
    assert checks == [(None, trace.WIDENING)] and flags.all()  # no 0: the bound as it is
    assert np.allclose(out, bound @ np.abs(b).astype(np.float64), rtol=1e-12, atol=0)
    a[0, 5] = 0.0  # built to trip it: XLA's operand 0 where it carries a bound
    out, checks, flags, _ = _more_terms_traced(a, bound, precise=False)
    assert checks == [(None, trace.WIDENING)] and not flags.any()
    quiet = bound.copy()
    quiet[0, 5] = 0.0  # a 0 with no bound: nothing to widen
    _, _, flags, _ = _more_terms_traced(a, quiet, precise=False)
    assert flags.all()
    # the precise program widens the bound under its cond, as before
    out, checks, _, _ = _more_terms_traced(a, bound, precise=True)
    assert checks == []
    g = np.sqrt(2) * contraction_bound.gamma(64 + 2 + 2, np.float32)
    widened = (np.abs(a).astype(np.float64) + bound) @ np.abs(b).astype(np.float64)
    assert np.all(out >= bound @ np.abs(b).astype(np.float64) + 2 * g * widened)


def test_a_failed_widening_test_runs_the_precise_program_then_traces_the_cond():
    graph, x = _graph()
    fn = graph.compile(backend="jax", arithmetic="xla")
    want = np.asarray(fn(x)[0])
    compiled = BACKEND._compiled[fn._program]
    assert compiled._deferred
    number = len(compiled.traced_checks) - 1
    checks = compiled.traced_checks[number]
    assert (None, trace.WIDENING) in checks
    flags = np.array([check != (None, trace.WIDENING) for check in checks])
    traces = BACKEND.traces
    with x64(), jax.default_matmul_precision("highest"):  # the fast program's test failed
        outputs, _ = compiled._fail((jnp.asarray(x),), None, flags, number, ("C",), True)
    assert np.array_equal(np.asarray(outputs[0]), want)  # the precise program's outputs
    assert not compiled._deferred and BACKEND.traces == traces + 1
    assert np.array_equal(np.asarray(fn(x)[0]), want)  # the fast program with the cond, traced
    assert BACKEND.traces == traces + 2
    assert (None, trace.WIDENING) not in compiled.traced_checks[-1]
