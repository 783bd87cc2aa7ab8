"""Issue 25: the contractions of linear algebra are declared, not checked
(capviz/backends/contraction_bound.py). NumPy's own matmul, dot, einsum... add in its BLAS's
order, which differs between machines; an engine's result is held to the componentwise bound
every order of the sum meets, 2 * gamma_k * (|A| @ |B|), by graph.compare and the
differential harness, instead of the flat tolerance. An einsum of one operand is a sum,
checked at run time on JAX."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.backends import contraction_bound as cb

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _cancelling_rows(rows: int = 4, half: int = 2048, seed: int = 1) -> np.ndarray:
    """float32 rows of terms of about 1e4 whose exact sum is 0: each order of addition leaves
    its own roundings (NumPy -0.22, XLA 0.08 on one of them)."""
    rng = np.random.default_rng(seed)
    v = (rng.standard_normal((rows, half)) * 1e4).astype(np.float32)
    x = np.concatenate([v, -v], 1)
    for row in x:
        rng.shuffle(row)
    return x


def _orders(a: np.ndarray, b: np.ndarray, dtype: np.dtype) -> list[np.ndarray]:
    """``a @ b`` (2-d) added in several orders, each product and partial sum rounded to
    ``dtype``: one term after another, backwards, pairwise, and exactly (float64, then
    rounded)."""
    prods = (a[:, :, None].astype(dtype) * b[None, :, :].astype(dtype)).astype(dtype)
    k = prods.shape[1]

    def running(order):
        total = np.zeros((a.shape[0], b.shape[1]), dtype)
        for j in order:
            total = (total + prods[:, j]).astype(dtype)
        return total

    def pairwise(p):
        while p.shape[1] > 1:
            odd = p[:, -1:] if p.shape[1] % 2 else p[:, :0]
            p = np.concatenate([(p[:, 0:-1:2] + p[:, 1::2]).astype(dtype) if p.shape[1] % 2
                                else (p[:, 0::2] + p[:, 1::2]).astype(dtype), odd], 1)
        return p[:, 0]

    exact = (a.astype(np.float64) @ b.astype(np.float64)).astype(dtype)
    return [running(range(k)), running(range(k - 1, -1, -1)), pairwise(prods), exact]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("values", ["normal", "cancelling"])
def test_every_order_of_the_sum_meets_the_declared_bound(dtype, values):
    """The bound holds for NumPy's BLAS against other orders of the same sum, each rounded to
    the result type (float16's products and partial sums rounded to float16 too), on values
    that cancel as on others; for float32 the cancelling difference (up to 0.5 on outputs of
    0) is far past the flat tolerance, inside the bound."""
    rng = np.random.default_rng(7)
    k = 24 if dtype == np.float16 else 512
    if values == "normal":
        a = rng.standard_normal((5, k)).astype(dtype)
    else:
        a = _cancelling_rows(5, k // 2).astype(dtype)
    b = rng.random((k, 3)).astype(dtype)
    b[:, 0] = 1
    want = a @ b
    limit = cb.bound("matmul", [a, b], {}, want.dtype)
    assert limit.shape == want.shape
    for got in _orders(a, b, np.dtype(dtype)):
        assert not cb.outside(got, want, limit).any()
    if values == "cancelling" and dtype == np.float32:
        gaps = [np.abs(got - want).max() for got in _orders(a, b, np.dtype(dtype))]
        assert max(gaps) > 1e-3  # the flat tolerance (1e-4, 1e-4) would call it a difference


def test_a_difference_past_the_bound_and_a_lost_infinity_are_outside():
    a = np.ones((2, 8), np.float32)
    b = np.ones((8, 2), np.float32)
    want = a @ b
    limit = cb.bound("matmul", [a, b], {}, np.float32)
    # 2 * gamma_8 * 8 for float32 (u = 2**-24), and the float64 magnitudes' own margin
    gamma = 8 * 2.0 ** -24 / (1 - 8 * 2.0 ** -24)
    assert np.allclose(limit, 2 * gamma * 8, rtol=1e-12)
    nudged = want + np.float32(16 * 2.0 ** -20)  # 16 ulp of 8: twice 2 * gamma_8 * 8
    assert cb.outside(nudged, want, limit).all()
    assert not cb.outside(want + limit.astype(np.float32) / 2, want, limit).any()
    inf_want = np.array([np.inf, np.nan, 1.0])
    got = np.array([3e38, np.nan, np.inf])
    assert cb.outside(got, inf_want, np.full(3, np.inf)).tolist() == [True, False, True]


@pytest.mark.parametrize("name, shapes, params, k", [
    ("matmul", [(3, 7), (7, 2)], {}, 7),
    ("matmul", [(4, 3, 7), (7,)], {}, 7),
    ("dot", [(3, 7), (7, 2)], {}, 7),
    ("dot", [(), (7, 2)], {}, 1),
    ("vdot", [(3, 7), (3, 7)], {}, 21),
    ("inner", [(3, 7), (2, 7)], {}, 7),
    ("tensordot", [(3, 4, 5), (4, 5, 2)], {"axes": 2}, 20),
    ("linalg.tensordot", [(3, 4, 5), (5, 4, 2)], {"axes": ([1, 2], [1, 0])}, 20),
    ("vecdot", [(3, 7), (7,)], {}, 7),
    ("linalg.vecdot", [(7, 3), (7, 3)], {"axis": 0}, 7),
    ("matvec", [(3, 7), (7,)], {}, 7),
    ("vecmat", [(7,), (7, 3)], {}, 7),
    ("linalg.multi_dot", [(3, 4), (4, 5), (5, 2)], {}, 20),
    ("einsum", [(3, 4), (4, 5), (5, 2)], {"subscripts": "ij,jk,kl->il"}, 20),
    ("einsum", [(3, 4), (3, 4)], {"subscripts": "ij,ij->"}, 12),
    ("einsum", [(2, 6, 4), (2, 4, 5)], {"subscripts": "...ij,...jk->...ik"}, 4)])
def test_the_terms_of_each_contraction_and_its_bound_follow_numpy(name, shapes, params, k):
    """K, the products each output adds, per contraction; the bound has the result's shape
    and, on operands of ones, is 2 * gamma_(K + m - 2) * K."""
    assert cb.terms(name, shapes, params) == k
    operands = [np.ones(s, np.float32) for s in shapes]
    want = np.asarray(cv.ops.get(name).bind(np)(*operands, **params), dtype=np.float64)
    limit = cb.bound(name, operands, params, np.float32)
    assert limit.shape == want.shape
    m = len(shapes)
    u = 2.0 ** -24
    keff = k + m - 2
    assert np.allclose(limit, 2 * keff * u / (1 - keff * u) * want, rtol=1e-9, atol=1e-30)


def test_what_the_bound_leaves_out():
    x = np.ones((3, 3), np.float32)
    assert cb.bound("matmul", [x.astype(np.int64)] * 2, {}, np.int64) is None  # exact
    assert cb.bound("einsum", [x], {"subscripts": "ij->j"}, np.float32) is None  # a sum
    assert not cb.is_contraction("einsum", 1) and cb.is_contraction("einsum", 2)
    assert cb.gamma(2048, np.float16) == np.inf  # k * u >= 1: no bound
    complex_limit = cb.bound("matmul", [x.astype(np.complex64)] * 2, {}, np.complex64)
    assert np.allclose(complex_limit, 2 * np.sqrt(2) * cb.gamma(5, np.float32) * 3, rtol=1e-9)


jax = pytest.importorskip("jax")


def _cancelling_graph():
    x = _cancelling_rows()
    y = np.ones((x.shape[1], 3), np.float32)
    y[:, 1] = 0.5

    def f(x, y):
        return x @ y

    return f, cv.capture(f, x, y), {"x": x, "y": y}


def test_compare_holds_a_contraction_to_its_declared_bound():
    """A float32 matmul whose outputs cancel to 0: NumPy's BLAS and XLA leave other roundings
    (up to 0.44 apart), past the flat (1e-4, 1e-4) but inside 2 * gamma_k * (|A| @ |B|):
    not a divergence; with rtol/atol given, the flat tolerance is used, and it is one."""
    f, graph, inputs = _cancelling_graph()
    got = graph.replay(inputs, backend="jax", to_numpy=True)["out"]
    want = f(**inputs)
    assert np.abs(got - want).max() > 1e-3
    assert not graph.compare(f, inputs, backend="jax")
    assert not graph.compare(None, inputs, backend="jax", against="numpy")
    flat = graph.compare(f, inputs, backend="jax", rtol=1e-4, atol=1e-4)
    assert flat.node is graph.nodes[2] and "(matmul, recorded at" in flat.message
    assert "declared bound" not in flat.message


def test_the_harness_holds_a_contraction_output_to_its_declared_bound():
    """tests/differential: a contraction output past the flat tolerance and inside its bound
    is 'tolerance', not 'silent'; a value past the bound is 'silent'."""
    from capviz.backends import registry
    from tests.differential import classify

    _, graph, inputs = _cancelling_graph()
    arrays = [inputs["x"], inputs["y"]]
    backend = registry.get("jax")
    got, error = classify.replay(graph, arrays, "jax")
    assert error is None
    want = [inputs["x"] @ inputs["y"]]
    limits = classify.contraction_limits(graph, arrays)
    assert list(limits) == [0]
    assert classify.compare(got, want, backend) == "silent"  # the flat tolerance
    assert classify.compare(got, want, backend, set(), limits) == "tolerance"
    past = [want[0] + 2 * limits[0].astype(np.float32) + 1]
    assert classify.compare(past, want, backend, set(), limits) == "silent"


def test_an_einsum_of_one_operand_is_a_checked_sum_on_jax():
    """np.einsum("i->") and ("ij->j") of 4,000 float64 terms of 1e16 adding up to 192: NumPy
    192, XLA's order another value: the JAX replay fails at the einsum node, naming the
    running sum; ordinary values and an einsum that sums nothing replay within the
    tolerance."""
    rng = np.random.default_rng(0)
    v = np.concatenate([np.full(2000, 1e16), np.full(2000, -1e16), [64.0, 64.0, 64.0]])
    rng.shuffle(v)
    for sub, x in (("i->", v), ("ij->j", v[:, None] * np.ones((1, 2)))):
        graph = cv.capture(lambda a, sub=sub: np.einsum(sub, a), x)
        with pytest.raises(cv.ReplayError, match=(
                r"\(einsum\), recorded at .*test_contraction_bound.py.*np\.einsum: NumPy adds "
                r"the terms of this sum one after another \(an einsum of one operand, in its "
                r"own loop\), rounding each of its 4003 partial sums to float64")):
            graph.replay({graph.inputs[0]: x}, backend="jax")
    y = rng.standard_normal((50, 3))
    for sub in ("ij->j", "ij->ji", "ii->"):
        operand = y[:3] if sub == "ii->" else y
        graph = cv.capture(lambda a, sub=sub: np.einsum(sub, a), operand)
        got = graph.replay({graph.inputs[0]: operand}, backend="jax", to_numpy=True)["out"]
        assert np.allclose(got, np.einsum(sub, operand), rtol=1e-12, atol=1e-12)
