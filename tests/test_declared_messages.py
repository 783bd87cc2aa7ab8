"""The fix quoted where a declared product's add or subtract fails on JAX (R7 #33): pairwise
squared distances (``|x|**2 + |y|**2 - 2 x @ y.T``, k-means, kNN, RBF kernels) are told
``backend='numpy'`` or the broadcast difference ``((x[:, None] - y[None]) ** 2).sum(-1)``, not
"write the sum as np.sum", which applies to a sum written as a product of a constant (``x @
ones``); a product of two computed values that is neither is told ``backend='numpy'`` alone;
and each, last, ``arithmetic='xla'`` (the lead's ruling 37 07:30 (a))."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::capviz.InexactResultWarning")

X = (3 + np.random.default_rng(0).standard_normal((32, 16))).astype(np.float32)


def l2dist(x):
    sq = (x ** 2).sum(-1)
    return sq[:, None] + sq[None, :] - 2 * x @ x.T


def l2dot(x):
    sq = (x ** 2).sum(-1)
    return sq[:, None] + sq[None, :] - 2 * np.dot(x, x.T)


def l2inner(x):
    sq = (x ** 2).sum(-1)
    return sq[:, None] + sq[None, :] - 2 * np.inner(x, x)


def broadcast(x):
    return ((x[:, None] - x[None]) ** 2).sum(-1)


def _failure(fn, x):
    pytest.importorskip("jax")
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    with pytest.raises(cv.ReplayError) as info:
        graph.replay({graph.inputs[0]: x}, backend="jax")
    return str(info.value)


@pytest.mark.parametrize(("fn", "name"), [(l2dist, "matmul"), (l2dot, "dot"),
                                          (l2inner, "inner")])
def test_pairwise_squared_distances_are_told_the_broadcast_difference_on_jax(fn, name):
    # fails before: the message said "or write the sum as np.sum", which does not apply
    message = _failure(fn, X)
    assert f"in {fn.__name__}: np.subtract: its operand was a product of linear algebra" \
        in message
    assert f"(np.{name}: " in message
    assert message.endswith(
        "replay with backend='numpy', or write the squared distances as the broadcast "
        "difference ((x[:, None] - y[None]) ** 2).sum(-1), which the JAX replay holds within "
        "its tolerance, or take XLA's order of summation for products with arithmetic='xla' "
        "(graph.compare reports the difference)")
    assert "np.sum" not in message


def test_the_broadcast_difference_replays_on_jax_within_the_tolerance():
    pytest.importorskip("jax")
    graph = cv.capture(broadcast, cv.spec(X.shape, X.dtype))
    got = np.asarray(graph.replay({graph.inputs[0]: X}, backend="jax")[graph.outputs[0]])
    want = broadcast(X)
    assert np.all(np.abs(got - want) <= 1e-4 + 1e-4 * np.abs(want))


def _computed(x):
    w = np.abs(x[0])
    return x @ w - (x * w).sum(-1)


def test_a_product_of_two_computed_values_is_told_backend_numpy_alone():
    # fails before: "or write the sum as np.sum" (x @ w is no sum of a constant)
    x = (1e3 + np.random.default_rng(0).random((16, 768))).astype(np.float32)
    message = _failure(_computed, x)
    assert "in _computed: np.subtract: its operand was a product of linear algebra" in message
    assert message.endswith("may differ there; replay with backend='numpy', or take XLA's order "
                            "of summation for products with arithmetic='xla' (graph.compare "
                            "reports the difference)")


def test_a_layer_s_weight_matrix_is_not_told_to_write_a_sum():
    # the lead's ruling 37 07:30 (a) carries a weight of both signs' bound: x @ W is no sum
    # written as a product, so the message does not say "np.sum" (as it did for x @ ones)
    w = (0.02 * np.random.default_rng(1).standard_normal((768, 8))).astype(np.float32)
    x = (1e3 + np.random.default_rng(0).random((16, 768))).astype(np.float32)
    message = _failure(lambda v: (v @ w)[1:] - (v @ w)[:-1], x)
    assert "np.subtract: its operands were a product of linear algebra (np.matmul" in message
    assert "np.sum" not in message
    assert message.endswith("replay with backend='numpy', or take XLA's order of summation "
                            "for products with arithmetic='xla' (graph.compare reports the "
                            "difference)")
