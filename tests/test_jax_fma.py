"""Issue 25 on JAX: XLA's fused multiply-add kept out of a replay (capviz/backends/jax/
unfused.py; the hostile review 4, finding 7). NumPy rounds a product before the add or subtract
that reads it; XLA's CPU compiler fuses the two into one ``fma`` (one rounding), and where the
subtraction cancels, the difference is far beyond the tolerance (``x*x - y*y`` of float32
values near 1e3: 302 times it on 4,070 of 4,096 values). Each floating product of a replay is
rounded to its type first: these replays are NumPy's bits."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")


def _data(dtype):
    r = np.random.default_rng(0)
    n = 4096
    x = (1e3 + r.random(n)).astype(dtype)
    y = (x + r.random(n).astype(dtype) * dtype(1e-3)).astype(dtype)
    a = (1e3 + r.random(n)).astype(dtype)
    b = (a * dtype(767.3)).astype(dtype) + r.random(n).astype(dtype)
    return x, y, a, b


def _assert_numpy_s_bits(fn, args):
    """The JAX replay of ``fn`` on ``args`` is eager NumPy's result, dtype and bits."""
    eager = fn(*args)
    graph = cv.capture(fn, *args)
    got = graph.replay(dict(zip(graph.inputs, args)), backend="jax", to_numpy=True)["out"]
    assert got.dtype == eager.dtype
    np.testing.assert_array_equal(got, eager)


SPELLINGS = {
    "difference of squares": (lambda x, y, a, b: x * x - y * y),
    "difference of np.square": (lambda x, y, a, b: np.square(x) - np.square(y)),
    "difference of powers": (lambda x, y, a, b: x ** 2 - y ** 2),
    "residual b - a * c": (lambda x, y, a, b: b - a * 767.3),
    "residual a * c - b": (lambda x, y, a, b: a * 767.3 - b),
    "np.subtract of a product": (lambda x, y, a, b: np.subtract(b, np.multiply(a, 767.3))),
    "a negated product added": (lambda x, y, a, b: b + -(a * 767.3)),
    "a Horner step": (lambda x, y, a, b: (x * 2.0 - 1e3) * x - y * (x * 2.0 - 1e3)),
    "2x2 determinants": (lambda x, y, a, b: x * b - y * a),
    "a sum of products": (lambda x, y, a, b: np.sum(x * x - y * y)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", list(SPELLINGS))
def test_a_product_that_an_add_or_subtract_reads_is_numpy_s_bits(name, dtype):
    fn = SPELLINGS[name]
    args = _data(dtype)
    _assert_numpy_s_bits(fn, args)


def test_xla_left_alone_fuses_the_product_so_the_check_has_something_to_keep_out():
    """The premise, on the installed jax: jax.jit of ``s - a * c`` differs from NumPy (an
    ``fma``); if a jax release stops fusing, this fails and the guard can go."""
    import jax.numpy as jnp

    _, _, a, b = _data(np.float32)
    fused = np.asarray(jax.jit(lambda a, b: b - a * jnp.float32(767.3))(a, b))
    assert not np.array_equal(fused, b - a * np.float32(767.3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("form", ["3 and 3", "2 and 2", "2 and 3", "3 and 2", "axes 0",
                                  "broadcast", "linalg"])
def test_cross_of_nearly_parallel_vectors_is_numpy_s_bits(form, dtype):
    r = np.random.default_rng(1)
    u = (1e3 * r.standard_normal((64, 3))).astype(dtype)
    v = (u * dtype(1.0001)).astype(dtype)
    fns = {
        "3 and 3": (lambda a, b: np.cross(a, b), (u, v)),
        "2 and 2": (lambda a, b: np.cross(a, b), (u[:, :2].copy(), v[:, :2].copy())),
        "2 and 3": (lambda a, b: np.cross(a, b), (u[:, :2].copy(), v)),
        "3 and 2": (lambda a, b: np.cross(a, b), (u, v[:, :2].copy())),
        "axes 0": (lambda a, b: np.cross(a.T, b.T, axisa=0, axisb=0, axisc=0), (u, v)),
        "broadcast": (lambda a, b: np.cross(a, b[0]), (u, v)),
        "linalg": (lambda a, b: np.linalg.cross(a, b), (u, v)),
    }
    fn, args = fns[form]
    _assert_numpy_s_bits(fn, args)


def test_the_stepping_executor_runs_products_one_at_a_time_as_numpy():
    x, y, _, _ = _data(np.float32)
    graph = cv.capture(lambda x, y: x * x - y * y, x, y)
    ex = cv.Executor(graph, {graph.inputs[0]: x, graph.inputs[1]: y}, backend="jax")
    ex.run()
    np.testing.assert_array_equal(ex.outputs(to_numpy=True)["out"], x * x - y * y)


def test_a_product_only_products_and_comparisons_read_is_left_to_xla():
    """Only a product an op may add to is rounded apart (a chain of products pays nothing)."""
    from capviz.backends.jax import unfused

    graph = cv.capture(lambda x, y: ((x * y) * 2.0 + y, (x * x) > y, x * y * y),
                       cv.spec((4,), "float32"), cv.spec((4,), "float32"))
    products = [n for n in graph.ops if n.op == "multiply"]
    apart = unfused._apart(list(graph.ops))
    kept = [n.index in apart for n in products]
    # x*y (read by a multiply), (x*y)*2 (read by an add), x*x (read by a comparison: its own
    # op name), x*y (again), (x*y)*y (an output only)
    assert kept == [True, False, True, True, True]


def test_a_negative_zero_product_keeps_its_sign():
    x = np.array([1.0, -2.0, 3.0], np.float32)
    fn = lambda x: np.signbit(x * -0.0 - 0.0)  # noqa: E731
    graph = cv.capture(fn, x)
    got = graph.replay({graph.inputs[0]: x}, backend="jax", to_numpy=True)["out"]
    np.testing.assert_array_equal(got, fn(x))


def _outer_data(dtype):
    r = np.random.default_rng(2)
    n = 256
    a = (1e3 + r.random(n)).astype(dtype)
    b = (a + r.random(n).astype(dtype) * dtype(1e-3)).astype(dtype)
    c = (np.outer(a, a) + r.random((n, n))).astype(dtype)
    return a, b, c


PRODUCTS_NOT_SPELLED_AS_A_MULTIPLY = {
    "np.outer": lambda a, b, c: np.outer(a, a) - c,
    "np.linalg.outer": lambda a, b, c: np.linalg.outer(a, a) - c,
    "np.multiply.outer": lambda a, b, c: np.multiply.outer(a, a) - c,
    "np.einsum('i,j->ij')": lambda a, b, c: np.einsum("i,j->ij", a, a) - c,
    "np.tensordot(axes=0)": lambda a, b, c: np.tensordot(a, a, axes=0) - c,
    "a column @ a row": lambda a, b, c: a[:, None] @ a[None, :] - c,
    "np.einsum('ij,jk->ik') of one term": lambda a, b, c: np.einsum("ij,jk->ik", a[:, None],
                                                                    a[None, :]) - c,
    "np.einsum('i,i->i')": lambda a, b, c: np.einsum("i,i->i", a, a) - b * b,
    "np.kron": lambda a, b, c: np.kron(a[:16], a[16:32]) - c[:16, 16:32].ravel(),
    "np.vecdot of length 1": lambda a, b, c: np.vecdot(a[:, None], a[:, None]) - b * b,
    "np.matvec of length 1": lambda a, b, c: np.matvec(a[:, None, None], a[:, None])
    - (b * b)[:, None],
    "np.inner of length 1": lambda a, b, c: np.inner(a[:, None], a[:, None]) - c,
    "np.dot by a number": lambda a, b, c: np.dot(a, 767.3) - b * 767.3,
    "np.vdot of length 1": lambda a, b, c: np.vdot(a[:1], a[:1]) - b[0] * b[0],
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", list(PRODUCTS_NOT_SPELLED_AS_A_MULTIPLY))
def test_a_product_not_spelled_as_a_multiply_is_numpy_s_bits(name, dtype):
    """Review 4, finding 7's rest: an outer product, an einsum or a contraction of one term
    that XLA simplifies to a multiply and fuses with the subtract after it (309x-312x the
    tolerance); its result is rounded as a multiply's."""
    _assert_numpy_s_bits(PRODUCTS_NOT_SPELLED_AS_A_MULTIPLY[name], _outer_data(dtype))


def test_a_contraction_that_only_a_product_reads_is_left_to_xla():
    from capviz.backends.jax import unfused

    graph = cv.capture(lambda a, b: (np.outer(a, b) * 2.0, np.outer(a, b) - 1.0),
                       cv.spec((4,), "float32"), cv.spec((4,), "float32"))
    outers = [n for n in graph.ops if n.op == "outer"]
    apart = unfused._apart(list(graph.ops))
    assert [n.index in apart for n in outers] == [True, False]
