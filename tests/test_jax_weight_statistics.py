"""A weight's statistics for the JAX replay's bounds (the rank-1 bound's column sums and maxima
through a product, the declared bound's column norms) are measured on the host once per traced
program, not read from the weight in every replay's XLA program (the lead's ruling 38 10:50;
capviz/backends/jax/trace.host_measured). GPT-2's arithmetic='xla' replay read each layer's
heads' projection in float64 at every call for them (benchmarks/jax_weight_statistics.py). A
weight the user changes is refused until graph.changed(), which traces again with the new
statistics: never a replay checked against the old weight's."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::capviz.InexactResultWarning")


def _program_jaxpr(graph, probe, **options):
    """The jaxpr of ``graph``'s fast JAX program, traced on ``probe``, and the variable of each
    large constant argument, in order."""
    import jax

    from capviz.backends.jax.backend import _ZERO, BACKEND, x64

    fn = graph.compile(backend="jax", **options)
    jax.block_until_ready(fn(probe))
    compiled = BACKEND._compiled[graph.replay_cache["jax"][2]]
    xla = options.get("arithmetic") == "xla"
    with x64(), jax.default_matmul_precision("highest"):
        closed = jax.make_jaxpr(compiled._fn.__wrapped__, static_argnums=(4, 5, 6))(
            (probe,), compiled.constants, None, _ZERO, False, (), xla)
    constants = closed.jaxpr.invars[1:1 + len(compiled.constants)]
    return closed.jaxpr, constants


def _readers(jaxpr, var) -> list[str]:
    """The primitives of the equations reading ``var`` (nested jaxprs included)."""
    found = []

    def walk(j, v):
        for eqn in j.eqns:
            if any(a is v for a in eqn.invars):
                found.append(str(eqn.primitive))
            for param in eqn.params.values():
                inner = getattr(param, "jaxpr", None)
                if inner is not None:
                    inner = inner if hasattr(inner, "eqns") else inner.jaxpr
                    for a, b in zip(eqn.invars, inner.invars):
                        if a is v:
                            walk(inner, b)

    walk(jaxpr, var)
    return found


W = (np.random.default_rng(3).standard_normal((128, 128)) * 0.02).astype(np.float32)


def _exp_through_a_weight(x):
    # exp's bound (XLA's own exp) carried through a product with a weight, 64 x 128 x 128:
    # the rank-1 form, and, by default, the product's own declared bound at the subtract
    p = np.exp(x / np.float32(1e4)) @ W
    return p[:, 1:] - p[:, :-1]


@pytest.mark.parametrize("arithmetic", ["numpy", "xla"])
def test_the_replays_program_reads_a_weight_only_in_its_product(arithmetic):
    jax = pytest.importorskip("jax")
    graph = cv.capture(_exp_through_a_weight, cv.spec((64, 128), np.float32))
    probe = jax.device_put(np.random.default_rng(0).random((64, 128)).astype(np.float32))
    options = {"arithmetic": arithmetic}
    try:
        jaxpr, constants = _program_jaxpr(graph, probe, **options)
    except cv.ReplayError:  # the default replay may fail at the subtract: traced all the same
        jaxpr, constants = _program_jaxpr(graph, probe, arithmetic="xla")
    (weight,) = constants
    # its products (the fast trace's rerun of one on a checked operand is dead code), and the
    # exact bound's lax.cond, run only where the cheap test fails; before (stop 37) also abs
    # of it at every replay: float64 magnitudes reduced to column sums, maxima or norms
    readers = _readers(jaxpr, weight)
    assert "dot_general" in readers
    assert set(readers) <= {"dot_general", "cond"}


def test_the_host_statistics_give_the_rank_one_bound_they_replace():
    jnp = pytest.importorskip("jax.numpy")
    from capviz.backends.jax import carried_paths as carried
    from capviz.backends.jax.backend import x64
    from capviz.backends.jax.trace import TRACE, Trace

    rng = np.random.default_rng(0)
    with x64():
        for ashape, bshape in (((64, 768), (768, 768)), ((768,), (768, 5)), ((7, 768), (768,))):
            a = np.abs(rng.standard_normal(ashape))
            b = rng.standard_normal(bshape).astype(np.float32)
            b[0] = np.inf if b.ndim == 1 else b[0]
            traced_b = jnp.asarray(b)
            trace = Trace([])
            trace.constant_hosts = {id(traced_b): b}
            token = TRACE.set(trace)
            try:
                hosts = (None, carried.rank_one_statistics(traced_b, 1))
            finally:
                TRACE.reset(token)
            assert hosts[1] is not None
            size = jnp.abs(traced_b).astype(np.float64)
            want = np.asarray(carried._rank_one(jnp, jnp.asarray(a), size))
            got = np.asarray(carried._rank_one(jnp, jnp.asarray(a), traced_b, hosts=hosts))
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-13)
            assert carried.rank_one_statistics(traced_b, 1) is None  # outside a trace


def test_a_computed_operand_and_an_op_run_alone_are_not_measured_on_the_host():
    jnp = pytest.importorskip("jax.numpy")
    from capviz.backends.jax.trace import TRACE, Trace, host_measured

    value = jnp.ones(3)
    assert host_measured(value, "w", np.abs) is None  # no trace
    token = TRACE.set(Trace([]))
    try:
        assert host_measured(value, "w", np.abs) is None  # not a constant of the program
    finally:
        TRACE.reset(token)


def test_a_weight_changed_in_place_is_refused_then_measured_again_after_changed():
    # the weight's column norms decide the declared bound's cheap test at the bias add: the
    # capture's tiny weight passes it; the new one, whose products the bias cancels, must fail
    # there (checked against the old weight's norms, it passed: a silent difference)
    pytest.importorskip("jax")
    rng = np.random.default_rng(5)
    x = (1.0 + rng.random((8, 256))).astype(np.float32)
    w = (rng.standard_normal((256, 64)) * 1e-6).astype(np.float32)
    b = np.full(64, 3.0, np.float32)

    def layer(v):
        return v @ w + b

    graph = cv.capture(layer, cv.spec(x.shape, x.dtype))
    feeds = {graph.inputs[0]: x}
    got = np.asarray(graph.replay(feeds, backend="jax")[graph.outputs[0]])
    assert np.allclose(got, layer(x), rtol=1e-6, atol=0)

    w[:] = rng.standard_normal((256, 64)).astype(np.float32) * 10
    b[:] = -(x[0] @ w) + np.float32(1e-3) * rng.standard_normal(64).astype(np.float32)
    with pytest.raises(cv.ReplayError, match=r"changed"):
        graph.replay(feeds, backend="jax")
    graph.changed()
    with pytest.raises(cv.ReplayError, match=(
            r"node %\d+ \(add\), recorded at .*test_jax_weight_statistics\.py:\d+ in layer: "
            r".*arithmetic='xla'")):
        graph.replay(feeds, backend="jax")
    # the fix the message names: NumPy's own arithmetic
    got = graph.replay(feeds, backend="numpy")[graph.outputs[0]]
    assert np.array_equal(got, layer(x))
