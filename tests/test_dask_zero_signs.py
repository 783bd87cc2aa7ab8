"""Issue 25 on Dask: a zero that a product of linear algebra gives has NumPy's sign
(capviz/backends/dask/contractions.py, ``lone``). NumPy adds the products into a +0.0, so a
zero ``matmul``, ``dot``, ``tensordot``, ``vdot`` or ``einsum`` is +0.0 even where every
product is -0.0, but its ``dot`` of two one-element operands is their product, -0.0.
dask.array's ``tensordot`` of two one-element operands gave +0.0: ``1 / np.dot(x[:1], y[:1])``
in chunks of 2 was ``inf`` where NumPy's is ``-inf`` (hostile review 6, finding 20), silently
(the differential harness now classes a zero of the other sign as a difference). The 18
float32/float64 cases of the first test failed on main 976226b (checked); the +0.0 cases pass
there too (dask.array's sum of the blocks' products starts at +0.0, as NumPy's): kept as the
other half of the rule, in chunks of 1, where each block's product is a lone -0.0."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytest.importorskip("dask")

X = np.array([-0.0, 1.0, -0.0, 2.0])
Y = np.array([1.0, -0.0, 3.0, -0.0])
NEG = np.array([-0.0, -0.0, -0.0])
ONES = np.ones(3)


def _replay(fn, arrays, chunks):
    graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    feed = dict(zip(graph.inputs, arrays))
    return graph.replay(feed, backend="dask", chunks=chunks, to_numpy=True)[graph.outputs[0]]


def _same_bits(got, want) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    return got.dtype == want.dtype and got.tobytes() == want.tobytes()


LONE = {  # NumPy's product of two one-element operands: -0.0, 1 / it is -inf
    "1 / np.dot(x[:1], y[:1])": lambda x, y: 1 / np.dot(x[:1], y[:1]),
    "1 / np.inner(x[:1], y[:1])": lambda x, y: 1 / np.inner(x[:1], y[:1]),
    "1 / np.tensordot(x[:1], y[:1], 1)": lambda x, y: 1 / np.tensordot(x[:1], y[:1], 1),
    "1 / np.dot(x[:1, None], y[None, :1])": lambda x, y: 1 / np.dot(x[:1, None], y[None, :1]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("chunks", [1, 2, "auto"])
@pytest.mark.parametrize("spelling", list(LONE))
def test_a_product_of_two_one_element_operands_keeps_numpys_negative_zero(spelling, chunks,
                                                                          dtype):
    fn = LONE[spelling]
    x, y = X.astype(dtype), Y.astype(dtype)
    want = fn(x, y)
    assert np.all(np.signbit(np.real(np.dot(x[:1], y[:1]))))  # the premise: NumPy's -0.0
    assert _same_bits(_replay(fn, (x, y), chunks), want)


FROM_ZERO = {  # NumPy adds every -0.0 product into a +0.0: 1 / it is inf
    "1 / np.dot(x, y)": lambda x, y: 1 / np.dot(x, y),
    "1 / (x @ y)": lambda x, y: 1 / (x @ y),
    "1 / np.tensordot(x, y, 1)": lambda x, y: 1 / np.tensordot(x, y, 1),
    "1 / np.einsum('i,i', x, y)": lambda x, y: 1 / np.einsum("i,i", x, y),
    "1 / np.vdot(x, y)": lambda x, y: 1 / np.vdot(x, y),
    "1 / np.dot(x[:, None], y[None, :])": lambda x, y: 1 / np.dot(x[:, None], y[None, :]),
    "1 / np.dot(x[None, :], y[:, None])": lambda x, y: 1 / np.dot(x[None, :], y[:, None]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("chunks", [1, 2, "auto"])
@pytest.mark.parametrize("spelling", list(FROM_ZERO))
def test_a_zero_sum_of_negative_zero_products_is_numpys_positive_zero(spelling, chunks, dtype):
    # in chunks of 1 each block's partial product was its lone -0.0, and their sum -0.0
    fn = FROM_ZERO[spelling]
    x, y = NEG.astype(dtype), ONES.astype(dtype)
    want = fn(x, y)
    assert not np.any(np.signbit(np.real(want)))  # the premise: NumPy's +0.0, inf
    assert _same_bits(_replay(fn, (x, y), chunks), want)


TINY = np.full(8, 4e-5, np.float16)  # products -1.6e-9: their float32 total rounds to -0.0
FLOAT16 = {
    "np.dot(x, y)": lambda x, y: np.dot(x, y),
    "np.vdot(x, y)": lambda x, y: np.vdot(x, y),
    "np.einsum('i,i', x, y)": lambda x, y: np.einsum("i,i", x, y),
    "np.tensordot(x, y, 1)": lambda x, y: np.tensordot(x, y, 1),
    "np.einsum('ij,jk->ik')": lambda x, y: np.einsum("ij,jk->ik", np.stack([x, x]),
                                                     np.stack([y, y], 1)),
    "x @ y": lambda x, y: x @ y,
}


@pytest.mark.parametrize("chunks", [2, "auto"])
@pytest.mark.parametrize("spelling", list(FLOAT16))
def test_a_float16_product_keeps_the_sign_of_numpys_rounded_float32_total(spelling, chunks):
    # NumPy adds float16 products in float32 and rounds once: a negative total below float16's
    # smallest subnormal is -0.0; dask.array's sum of one block's product gave +0.0
    fn = FLOAT16[spelling]
    x, y = TINY, -TINY
    want = fn(x, y)
    assert np.all(want == 0) and np.all(np.signbit(want))  # the premise
    assert _same_bits(_replay(fn, (x, y), chunks), want)
