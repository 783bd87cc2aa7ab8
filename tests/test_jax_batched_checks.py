"""The JAX replay's subnormal test of a product of two computed matrices (each head's
``q @ k.T`` and ``p @ v`` in GPT-2) is made once for every such product of its shapes, after the
program (capviz/backends/jax/trace.Trace.require_batched; the lead's ruling 39 14:10: one
reduction per check kind, not one per head): each keeps its flag, its node and its message.
The check itself is covered by tests/test_engine_silent.py::
test_jax_matmul_of_tiny_operands_fails_at_the_node_and_of_normal_ones_replays and
tests/test_jax_subnormals_complex.py (the complex products, not batched)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::capviz.InexactResultWarning")

HEADS = 4


def heads(x, y):
    """Four "heads": each a product of slices of two inputs, scaled up (a flushed product
    would show), side by side."""
    out = [(x[:, 8 * h:8 * h + 8] @ y[8 * h:8 * h + 8, :]) * np.float32(2.0 ** 100)
           for h in range(HEADS)]
    return np.hstack(out)


def _inputs(tiny_head=None):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.0, (8, 8 * HEADS)).astype(np.float32)
    y = rng.uniform(0.5, 1.0, (8 * HEADS, 8)).astype(np.float32)
    if tiny_head is not None:  # NumPy: 1e-20 * 1e-20 is a subnormal; XLA flushes it to 0
        x[:, 8 * tiny_head:8 * tiny_head + 8] = 1e-20
        y[8 * tiny_head:8 * tiny_head + 8, :] = 1e-20
    return x, y


def _matmuls(graph):
    return [node for node in graph.nodes if node.kind == "op" and node.op == "matmul"]


@pytest.mark.parametrize("tiny_head", [0, 2, 3])
def test_a_tiny_head_fails_at_its_own_product(tiny_head):
    x, y = _inputs(tiny_head)
    graph = cv.capture(heads, cv.spec(x.shape, x.dtype), cv.spec(y.shape, y.dtype))
    with pytest.raises(cv.ReplayError, match="an operand of matmul holds values so small that "
                       "their products may be subnormal") as info:
        graph.replay({"x": x, "y": y}, backend="jax")
    assert info.value.node is _matmuls(graph)[tiny_head]
    assert f"node %{info.value.node.index} (matmul)" in str(info.value)
    assert "test_jax_batched_checks.py" in str(info.value)
    assert "replay with backend='numpy'" in str(info.value)


def test_normal_heads_replay_as_numpy_and_the_checks_run_again_at_each_call():
    x, y = _inputs()
    graph = cv.capture(heads, cv.spec(x.shape, x.dtype), cv.spec(y.shape, y.dtype))
    np.testing.assert_allclose(graph.replay({"x": x, "y": y}, backend="jax")["out"],
                               heads(x, y), rtol=1e-5)
    x, y = _inputs(1)  # the same compiled program, new values
    with pytest.raises(cv.ReplayError) as info:
        graph.replay({"x": x, "y": y}, backend="jax")
    assert info.value.node is _matmuls(graph)[1]


def test_the_heads_products_are_tested_in_one_reduction_per_operand():
    import jax

    from capviz.backends.jax.backend import _ZERO, BACKEND, x64
    from capviz.backends.jax.layouts import C

    x, y = _inputs()
    graph = cv.capture(heads, cv.spec(x.shape, x.dtype), cv.spec(y.shape, y.dtype))
    fn = graph.compile(backend="jax")
    dx, dy = jax.device_put(x), jax.device_put(y)
    jax.block_until_ready(fn(dx, dy))
    compiled = BACKEND._compiled[graph.replay_cache["jax"][2]]
    for precise in (False, True):
        with x64(), jax.default_matmul_precision("highest"):
            closed = jax.make_jaxpr(compiled._fn.__wrapped__, static_argnums=(4, 5, 6))(
                (dx, dy), compiled.constants, None, _ZERO, precise, (C, C), False)
        found = [str(e.primitive) for e in closed.jaxpr.eqns]
        # the smallest magnitude of each column of the lhs, of each row of the rhs: one
        # reduction each for the four products (eight before)
        assert found.count("reduce_min") == 2, found.count("reduce_min")


def test_a_product_run_on_its_own_is_checked_now():
    import jax.numpy as jnp

    from capviz.backends.jax.backend import x64
    from capviz.backends.jax.subnormals import products

    tiny = jnp.full((2, 2), 1e-20, np.float32)
    with x64(), pytest.raises(ValueError, match="products may be subnormal"):
        products(jnp, "matmul", jnp.matmul, (tiny, tiny), [tiny, tiny], tiny @ tiny, {})


def test_a_product_of_large_operands_is_tested_at_its_node():
    # past trace.BATCHED_ELEMENTS the operands are not kept to the end of the program
    x = np.full((300, 260), 1e-20, np.float32)
    graph = cv.capture(lambda a, b: (a @ b) * np.float32(2.0 ** 100), cv.spec(x.shape, x.dtype),
                       cv.spec(x.T.shape, x.dtype))
    with pytest.raises(cv.ReplayError, match="products may be subnormal") as info:
        graph.replay({"a": x, "b": np.ascontiguousarray(x.T)}, backend="jax")
    assert info.value.node.op == "matmul"


def test_a_kinds_checks_are_tested_in_groups_past_the_total(monkeypatch):
    from capviz.backends.jax import trace

    monkeypatch.setattr(trace, "BATCHED_TOTAL", 256)  # two heads' operands (2 x 128 elements)
    for tiny_head in (1, 3):
        x, y = _inputs(tiny_head)
        graph = cv.capture(heads, cv.spec(x.shape, x.dtype), cv.spec(y.shape, y.dtype))
        with pytest.raises(cv.ReplayError, match="products may be subnormal") as info:
            graph.replay({"x": x, "y": y}, backend="jax")
        assert info.value.node is _matmuls(graph)[tiny_head]
    x, y = _inputs()
    graph = cv.capture(heads, cv.spec(x.shape, x.dtype), cv.spec(y.shape, y.dtype))
    np.testing.assert_allclose(graph.replay({"x": x, "y": y}, backend="jax")["out"],
                               heads(x, y), rtol=1e-5)
