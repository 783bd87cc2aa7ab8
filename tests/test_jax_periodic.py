"""Issue 25 on JAX: a periodic function (``np.sin``, ``np.cos``, ``np.tan``) of a value XLA
computes in its own order (the hostile review 9, finding 26; the lead's ruling 38 10:50). The
function takes a multiple of its period away from its value, as a remainder does: the value's
error, within its own tolerance, can be the whole of the result's. ``np.sin(x @ ones)`` of
float32 rows near 1e3 replayed 2.3e-4 off NumPy's, ``np.cos`` 0.054, silently. The value's
bound is now carried to the function, its image there (a real ``sin``, ``cos``: the bound
itself) tested against the tolerance of the result: the replay fails at the function where it
is beyond it, naming the user's line and the fixes, and replays elsewhere. Every refusal test
here fails on 42443c1 (checked: the replay returned)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry

jax = pytest.importorskip("jax")

ONES = np.ones(768)
FUNCTIONS = {"sin": np.sin, "cos": np.cos, "tan": np.tan}


def _rows(dtype):
    return (1000 + np.random.default_rng(1).random((16, 768))).astype(dtype)


def _feeds(graph, x):
    return dict(zip(graph.inputs, (x,)))


def _within(got, want):
    rtol, atol = registry.get("jax").tolerance_for(want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("op", list(FUNCTIONS))
def test_a_periodic_function_of_a_large_product_fails_at_the_function(op):
    f = FUNCTIONS[op]

    def fn(x):
        return f(x @ ONES.astype(x.dtype))

    x = _rows(np.float32)
    graph = cv.capture(fn, x)
    with pytest.raises(cv.ReplayError) as info:
        graph.replay(_feeds(graph, x), backend="jax")
    text = str(info.value)
    assert re.match(rf"replay failed at node %\d+ \({op}\), recorded at "
                    rf"{re.escape(__file__)}:\d+ in fn: ", text), text
    assert text.endswith(
        f"np.{op}: its operand was a product of linear algebra (np.matmul: NumPy's BLAS and "
        "XLA add its products in their own orders, declared within 2 gamma_k |A| @ |B| of each "
        f"other), and this {op} takes a multiple of its period away from it: that bound, "
        "carried here, is beyond the tolerance of the result, so NumPy's value and XLA's may "
        "differ there; replay with backend='numpy', or take XLA's order of summation for "
        "products with arithmetic='xla' (graph.compare reports the difference)"), text
    # the fixes it names: NumPy's replay is NumPy's bits; XLA's arithmetic replays
    np.testing.assert_array_equal(graph.replay(_feeds(graph, x), backend="numpy")["out"],
                                  fn(x))
    got = graph.replay(_feeds(graph, x), backend="jax", arithmetic="xla", to_numpy=True)["out"]
    assert got.shape == fn(x).shape


def test_the_function_of_a_product_through_moves_and_scalings_fails_there_too():
    def fn(x):
        return np.cos((x @ ONES.astype(x.dtype))[:, None] * np.float32(2.0))

    x = _rows(np.float32)
    graph = cv.capture(fn, x)
    with pytest.raises(cv.ReplayError, match=(
            r"^replay failed at node %\d+ \(cos\), recorded at .*: np\.cos: its operand was a "
            r"product of linear algebra \(np\.matmul: .*this cos takes a multiple of its period "
            r"away from it: .*arithmetic='xla' \(graph\.compare reports the difference\)$")):
        graph.replay(_feeds(graph, x), backend="jax")


@pytest.mark.parametrize("op", list(FUNCTIONS))
def test_in_float64_the_bound_is_within_the_tolerance_and_it_replays(op):
    # float64's bound is 2**29 times smaller: far within the tolerance of the result
    f = FUNCTIONS[op]

    def fn(x):
        return f(x @ ONES.astype(x.dtype))

    x = _rows(np.float64)
    graph = cv.capture(fn, x)
    _within(graph.replay(_feeds(graph, x), backend="jax", to_numpy=True)["out"], fn(x))


W = 0.02 * np.random.default_rng(2).standard_normal((768, 8))


@pytest.mark.parametrize("op", list(FUNCTIONS))
def test_a_function_of_small_products_that_keeps_them_replays(op):
    # unit rows times small weights: values below 1, where the function keeps at least half
    # of the value (the kept-share rule of a subtract of a declared product): replays
    f = FUNCTIONS[op]

    def fn(x):
        return f(x @ W.astype(x.dtype))

    x = np.random.default_rng(3).standard_normal((16, 768)).astype(np.float32) * 0.5
    graph = cv.capture(fn, x)
    _within(graph.replay(_feeds(graph, x), backend="jax", to_numpy=True)["out"], fn(x))


def test_rotary_angles_of_an_outer_product_replay():
    # np.outer(t, inv_freq): one product per value, NumPy's own rounding in every order
    inv = (1.0 / 10000 ** (np.arange(0, 64, 2) / 64)).astype(np.float32)

    def fn(t):
        angles = np.outer(t, inv)
        return np.concatenate([np.cos(angles), np.sin(angles)], -1)

    t = np.arange(2048, dtype=np.float32)
    graph = cv.capture(fn, t)
    _within(graph.replay(_feeds(graph, t), backend="jax", to_numpy=True)["out"], fn(t))


def test_a_sine_of_a_sum_is_the_sine_of_numpy_s_sum():
    # np.sin(x.sum(-1)) of rows near 1e3: the sum, within its own tolerance in XLA's order,
    # is taken in NumPy's order where it reaches a periodic function (its bits), and the sine
    # is then XLA's of NumPy's sum: within the tolerance
    def fn(x):
        return np.sin(x.sum(-1))

    x = _rows(np.float32)
    graph = cv.capture(fn, x)
    _within(graph.replay(_feeds(graph, x), backend="jax", to_numpy=True)["out"], fn(x))


def test_a_sine_of_a_sum_no_order_is_written_for_fails_at_the_sine():
    # np.nansum: no program in NumPy's order; its bound eps * S is carried to the sine
    def fn(x):
        return np.sin(np.nansum(x, -1))

    x = _rows(np.float32)
    graph = cv.capture(fn, x)
    with pytest.raises(cv.ReplayError, match=(
            r"^replay failed at node %\d+ \(sin\), recorded at .*: np\.sin: its operand was "
            r"added in XLA's order \(np\.nansum, within the tolerance of the sum\), and this sin "
            r"takes a multiple of its period away from it: the sum's error, carried here, is "
            r"beyond the tolerance of the result, .*replay with backend='numpy', or sum in "
            r"float64 \(dtype=np\.float64\)$")):
        graph.replay(_feeds(graph, x), backend="jax")
    np.testing.assert_array_equal(graph.replay(_feeds(graph, x), backend="numpy")["out"],
                                  fn(x))
