"""``np.linalg.norm(x)`` with no axis on JAX (review 4, finding 9): NumPy takes it from its BLAS
``dot`` (``sqrt(x.dot(x))``), in an order of its own, so it is declared as the contractions of
linear algebra are (``capviz/backends/contraction_bound.py``: ``norm_bound``), held to the bound
every order meets by ``compare`` and the differential harness, and replays at any length: a
gradient-clipping step of a float32 gradient of 4,096 values or more was refused at run time.
Its refusals (float16 sums of squares) are capviz refusals naming the node."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv
from capviz.backends import contraction_bound as cb

jax = pytest.importorskip("jax")

RNG = np.random.default_rng(25)


def clip(grad):
    n = np.linalg.norm(grad)
    return grad * np.minimum(1.0, 1.0 / (n + 1e-6))


@pytest.mark.parametrize("n", [4096, 100_000])
def test_gradient_clipping_of_a_large_float32_gradient_replays_within_the_declared_bound(n):
    grad = RNG.standard_normal(n).astype(np.float32)
    graph = cv.capture(clip, grad)
    out = graph.replay({"grad": grad}, backend="jax", to_numpy=True)["out"]
    want = clip(grad)
    assert out.dtype == want.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-6)
    norm = cv.capture(np.linalg.norm, grad)
    got = norm.replay({norm.inputs[0]: grad}, backend="jax", to_numpy=True)["out"]
    limit = cb.bound("linalg.norm", [grad], {}, np.float32)
    assert not cb.outside(got, np.linalg.norm(grad), limit).any()
    assert not norm.compare(np.linalg.norm, {norm.inputs[0]: grad}, backend="jax")


def _orders(x: np.ndarray) -> list:
    """``sqrt`` of the sum of ``|x|**2`` in several orders, each square and partial sum rounded
    to ``x``'s real type: one after another, backwards, pairwise, and exactly (float64)."""
    real = np.dtype(x.real.dtype)
    parts = (x.real, x.imag) if x.dtype.kind == "c" else (x,)
    squares = np.concatenate([(p * p).astype(real) for p in parts])

    def running(terms):
        total = real.type(0)
        for t in terms:
            total = real.type(total + t)
        return total

    def pairwise(p):
        while p.size > 1:
            odd = p[-1:] if p.size % 2 else p[:0]
            even = p[:p.size - p.size % 2]
            p = np.concatenate([(even[0::2] + even[1::2]).astype(real), odd])
        return p[0]

    exact = np.sum(np.concatenate([np.square(p.astype(np.float64)) for p in parts]))
    sums = [running(squares), running(squares[::-1]), pairwise(squares), real.type(exact)]
    return [np.sqrt(real.type(s)) for s in sums]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("values", ["normal", "spread", "tiny"])
def test_every_order_of_the_sum_of_squares_meets_the_norms_declared_bound(dtype, values):
    n = 3000
    if values == "normal":
        x = RNG.standard_normal(n)
    elif values == "spread":
        x = RNG.standard_normal(n) * 10.0 ** RNG.uniform(-6, 6, n)
    else:  # squares near and below tiny: flushed in one order, kept subnormal in another
        x = RNG.standard_normal(n) * np.sqrt(np.finfo(np.dtype(dtype).type(0).real.dtype).tiny)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(n)
    x = x.astype(dtype)
    results = _orders(x)
    limit = cb.bound("linalg.norm", [x], {}, results[0].dtype)
    for a in results:
        for b in results:
            assert not cb.outside(a, b, limit).any(), (a, b, limit)
    assert not cb.outside(np.linalg.norm(x), results[-1], limit).any()


def test_only_the_norm_numpy_takes_from_its_dot_is_declared():
    x = np.ones((3, 4), np.float32)
    for fn, declared in [(np.linalg.norm, True),
                         (lambda a: np.linalg.norm(a, "fro"), True),
                         (lambda a: np.linalg.norm(a, axis=1), False),
                         (lambda a: np.linalg.norm(a.ravel(), 2), True),
                         (lambda a: np.linalg.norm(a.ravel(), 1), False),
                         (lambda a: np.linalg.norm(a.ravel(), np.inf), False)]:
        graph = cv.capture(fn, x)
        node = next(n for n in graph.nodes if n.op == "linalg.norm")
        assert cb.is_contraction_node(node) is declared
    keep = cb.bound("linalg.norm", [x], {"keepdims": True}, np.float32)
    assert keep.shape == (1, 1)
    assert cb.bound("linalg.norm", [x], {"axis": 1}, np.float32) is None


def test_the_harness_holds_a_norm_output_to_its_declared_bound():
    from capviz.backends import registry
    from tests.differential import classify

    x = RNG.standard_normal(10_000).astype(np.float32)
    graph = cv.capture(np.linalg.norm, x)
    limits = classify.contraction_limits(graph, [x])
    assert list(limits) == [0]
    want = [np.asarray(np.linalg.norm(x))]
    backend = registry.get("jax")
    got, error = classify.replay(graph, [x], "jax")
    assert error is None
    assert classify.compare(got, want, backend, set(), limits) in ("exact", "tolerance")
    past = [want[0] + np.float32(2 * limits[0] + 1e-3 * want[0])]
    assert classify.compare(past, want, backend, set(), limits) == "silent"


def test_a_refused_norm_is_a_capviz_refusal_at_the_node():
    """norms.py's refusals were NotImplementedError inside a ReplayError: now an
    UnsupportedOperationError naming the op, the node and this file's line."""
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float16)
    graph = cv.capture(lambda a: np.linalg.norm(a, axis=1), x)
    with pytest.raises(cv.UnsupportedOperationError) as info:
        graph.replay({graph.inputs[0]: x}, backend="jax")
    text = str(info.value)
    assert text.startswith("op 'linalg.norm' cannot run on the jax backend: np.linalg.norm(ord="
                           "None) of float16: NumPy rounds each square or partial sum to "
                           "float16")
    assert "take the norm of x.astype(np.float32)" in text
    assert re.search(rf"\(node %1, recorded at {re.escape(__file__)}:\d+ in <lambda>\)$", text)
    assert info.value.node is graph.nodes[1]
    fixed = cv.capture(lambda a: np.linalg.norm(a.astype(np.float32), axis=1), x)
    got = fixed.replay({fixed.inputs[0]: x}, backend="jax", to_numpy=True)["out"]
    np.testing.assert_allclose(got, np.linalg.norm(x.astype(np.float32), axis=1), rtol=1e-6)


def test_a_difference_of_norms_that_cancels_fails_at_the_subtract_with_the_fix_that_replays():
    """Review 5 on c91ba55 (``/tmp/review5/norm_cancel2.py``): ``norm(x) - norm(y)`` of two
    float32 vectors of 100,000 values near 1e3 a few elements apart replayed 312x beyond the
    tolerance once the norm was declared: its bound is now carried to the subtract, which fails
    at its node; the quoted fix (the norms in float64) replays within the tolerance."""
    r = np.random.default_rng(1)
    x = (1e3 + r.random(100_000)).astype(np.float32)
    y = x.copy()
    y[:12] += np.float32(1.0)
    graph = cv.capture(lambda x, y: np.linalg.norm(x) - np.linalg.norm(y), x, y)
    with pytest.raises(cv.ReplayError) as info:
        graph.replay({"x": x, "y": y}, backend="jax")
    text = str(info.value)
    assert info.value.node.op == "subtract"
    assert "np.subtract: its operands were np.linalg.norm of a whole array" in text
    assert __file__ in text
    fixed = cv.capture(lambda x, y: np.linalg.norm(x.astype(np.float64))
                       - np.linalg.norm(y.astype(np.float64)), x, y)
    got = fixed.replay({"x": x, "y": y}, backend="jax", to_numpy=True)["out"]
    want = np.linalg.norm(x.astype(np.float64)) - np.linalg.norm(y.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    clip = cv.capture(lambda g: g / np.linalg.norm(g), x)  # no add or subtract: replays
    np.testing.assert_allclose(clip.replay({"g": x}, backend="jax", to_numpy=True)["out"],
                               x / np.linalg.norm(x), rtol=1e-6)
