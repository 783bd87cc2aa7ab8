"""The cheap test of a declared contraction's add on JAX (the lead's ruling 37 07:30 (b)).

A product ``u`` (``x @ W``, moved, scaled...) reaching an add or subtract ``r = u + o`` is
tested where the add cancels it (``|r| < |u| / 2``) against its declared bound ``2 gamma_k
|A| @ |B|``, whatever the signs of its products. The cheap test takes the rank-1
Cauchy-Schwarz bound ``(|A| @ |B|)_ij <= ||a_i|| ||b_j||`` (:func:`capviz.backends.jax.
carried_contractions.nominal`: the rows' and columns' norms, ``O(MK + KN)``), and the float64
magnitudes' product only where that fails (a ``lax.cond``). Stop 36's cheaper tests (the bound from
``|u|``, a constant bias's static skip, the operand read from the result) held only where
the products add up as one sign's, and go with carried.ONE_SIGN.
"""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::capviz.InexactResultWarning")

ONES = np.ones(768, np.float32)

SHAPES = [("matmul", (64, 768), (768, 64)), ("matmul", (768,), (768, 5)),
          ("matmul", (7, 768), (768,)), ("matmul", (2, 3, 16), (16, 4)),
          ("matmul", (5, 1, 3, 16), (2, 16, 4)), ("matmul", (16,), (16,)),
          ("dot", (9, 33), (33, 4)), ("dot", (33,), (33, 4))]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64])
@pytest.mark.parametrize(("op", "ashape", "bshape"), SHAPES)
def test_the_rank_one_bound_is_never_below_the_declared_one(op, ashape, bshape, dtype):
    jnp = pytest.importorskip("jax.numpy")
    from capviz.backends.jax import carried_contractions
    from capviz.backends.jax.backend import x64

    fn = np.matmul if op == "matmul" else np.dot
    graph = cv.capture(fn, cv.spec(ashape, dtype), cv.spec(bshape, dtype))
    node = graph.ops[-1]
    rng = np.random.default_rng(4)
    with x64():
        for scale in (1e-3, 1.0, 30.0):
            a = rng.standard_normal(ashape) * scale  # both signs
            b = rng.standard_normal(bshape)
            a.flat[::3] = 0.0
            if np.dtype(dtype).kind == "c":
                a = a + 1j * rng.standard_normal(ashape)
            a, b = jnp.asarray(a.astype(dtype)), jnp.asarray(b.astype(dtype))
            c = jnp.matmul(a, b) if op == "matmul" else jnp.dot(a, b)
            exact = np.asarray(carried_contractions.declared_bound(jnp, node, (a, b), c))
            cheap = np.asarray(carried_contractions.nominal(jnp, node, (a, b), c))
            assert cheap.shape == exact.shape == c.shape
            assert np.all(cheap >= exact)
            assert np.all(exact > 0)  # both signs: carried (0 before, carried.ONE_SIGN)


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
            rf"{fn.__name__}: np\.add: its operand was a product of linear algebra "
            r"\(np\.matmul: .*replay with backend='numpy'.*arithmetic='xla'")):
        graph.replay({graph.inputs[0]: x}, backend="jax")


def _spiky():
    """Rows with one large value where the weight is near 0 and small ones elsewhere: the
    rank-1 bound (``||x_i|| ||w_j||``) is 30,000 times the magnitudes' product there."""
    x = np.full((8, 768), 1e-3, np.float32)
    x[:, 0] = 1e3
    x[1::2] *= -1
    return x


SPIKY_W = np.ones((768, 4), np.float32)
SPIKY_W[0] = 1e-6
SPIKY_B = -(_spiky() @ SPIKY_W)[0] * np.float32(0.999)


def _spiky_layer(x):
    return x @ SPIKY_W + SPIKY_B


def test_where_the_cheap_bound_fails_the_exact_one_decides():
    # the bias cancels row 0 (to 1e-3 of it): the rank-1 bound there (2.5) is beyond the
    # tolerance, the magnitudes' product (7e-5) within it, and the replay goes on
    pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    from capviz.backends.jax import carried_contractions
    from capviz.backends.jax.backend import x64

    x = _spiky()
    graph = cv.capture(_spiky_layer, cv.spec(x.shape, x.dtype))
    node = next(n for n in graph.ops if n.op == "matmul")
    with x64():
        a, b = jnp.asarray(x), jnp.asarray(SPIKY_W)
        c = a @ b
        assert float(carried_contractions.nominal(jnp, node, (a, b), c)[0, 0]) > 1e-3
        assert float(carried_contractions.declared_bound(jnp, node, (a, b), c)[0, 0]) < 1e-4
    want = _spiky_layer(x)
    assert np.abs(want[0]).max() < 0.5 * np.abs(x @ SPIKY_W)[0].min()  # the add cancels
    got = np.asarray(graph.replay({graph.inputs[0]: x}, backend="jax")[graph.outputs[0]])
    assert np.all(np.abs(got - want) <= 1e-4 + 1e-4 * np.abs(want))
