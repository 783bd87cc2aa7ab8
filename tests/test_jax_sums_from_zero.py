"""Issue 25 on JAX: a contraction of one term keeps NumPy's +0.0 (capviz/backends/jax/unfused.py's
``sums_from_zero``; the hostile review 6, finding 20). NumPy adds ``matmul``'s and ``einsum``'s
products into a +0.0 (BLAS's accumulator, einsum's zeroed output), so a zero result is +0.0;
XLA simplified ``x[:, None] @ y[None, :]`` and ``np.einsum('i,j->ij', x, y)`` to the product
and kept -0.0 (``1 / ...`` gave -inf against NumPy's inf), silently. So did ``np.dot``,
``np.inner``, ``np.tensordot``, ``np.vecdot``, ``np.matvec``, ``np.vecmat``, ``np.vdot`` and
``np.linalg.multi_dot`` of one-term contractions. ``np.outer`` (NumPy's multiply), a
one-operand ``einsum`` (a move) and NumPy's BLAS ``dot``/``inner`` of two vectors keep -0.0, as
NumPy's do. 34 cases: 20 fail at 5aa160d (matmul and einsum fixed), 24 before it."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")

SPELLINGS = {
    "1 / (x[:, None] @ y[None, :])": lambda x, y: 1 / (x[:, None] @ y[None, :]),
    "1 / np.einsum('i,j->ij', x, y)": lambda x, y: 1 / np.einsum("i,j->ij", x, y),
    "1 / np.outer(x, y)": lambda x, y: 1 / np.outer(x, y),
    "1 / np.einsum('i->i', x)": lambda x, y: 1 / np.einsum("i->i", x) + y[0],
    "1 / (x[:3] @ a matrix)": lambda x, y: 1 / (x[:3] @ np.stack([y, -y, y]).T),
    "1 / np.dot(x[:, None], y[None, :])": lambda x, y: 1 / np.dot(x[:, None], y[None, :]),
    "1 / np.dot(x, 0-d)": lambda x, y: 1 / np.dot(x, y[1]),
    "1 / np.dot(x[:1], y[:1]) (two vectors)": lambda x, y: 1 / np.dot(x[:1], y[:1]),
    "1 / np.inner(x[:, None], y[:, None])": lambda x, y: 1 / np.inner(x[:, None], y[:, None]),
    "1 / np.inner(x[:1], y[:1]) (two vectors)": lambda x, y: 1 / np.inner(x[:1], y[:1]),
    "1 / np.tensordot(x, y, axes=0)": lambda x, y: 1 / np.tensordot(x, y, axes=0),
    "1 / np.vecdot(x[:, None], y[None, :1])": lambda x, y: 1 / np.vecdot(x[:, None],
                                                                         y[:1][None, :]),
    "1 / np.vecdot(x[:1], y[:1])": lambda x, y: 1 / np.vecdot(x[:1], y[:1]),
    "1 / np.matvec(x[:, None], y[:1])": lambda x, y: 1 / np.matvec(x[:, None], y[:1]),
    "1 / np.vecmat(y[:1], x[None, :])": lambda x, y: 1 / np.vecmat(y[:1], x[None, :]),
    "1 / np.vdot(x[:1], y[:1])": lambda x, y: 1 / np.vdot(x[:1], y[:1]),
    "1 / np.linalg.multi_dot(...)": lambda x, y: 1 / np.linalg.multi_dot(
        [x[:, None], y[None, :1], y[None, :1].T]),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", list(SPELLINGS))
def test_a_zero_contraction_has_numpy_s_sign(name, dtype):
    fn = SPELLINGS[name]
    x = np.array([-0.0, 1.0, 0.0, -2.0], dtype)
    y = np.array([1.0, -0.0, 3.0], dtype)
    graph = cv.capture(fn, x, y)
    with np.errstate(all="ignore"):
        want = fn(x, y)
        got = graph.replay({graph.inputs[0]: x, graph.inputs[1]: y}, backend="jax",
                           to_numpy=True)["out"]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
