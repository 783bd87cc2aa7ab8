"""Issue 25 on Dask: the contractions of linear algebra over a chunked contracted axis are
declared, not checked (the lead's ruling): dask.array adds the blocks' partial products in its
own order, NumPy in its BLAS's, and the two are held to the componentwise bound every order of
the sum meets, ``|c - c_numpy| <= 2 * gamma_k * (|A| @ |B|)``
(capviz/backends/contraction_bound.py), which ``compare`` and the differential harness apply;
their overflow bound stays checked (capviz/backends/dask/overflow.py)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.backends import contraction_bound, registry

pytest.importorskip("dask")
import dask
import dask.array as da
from helpers.dask_scheduler import CountingScheduler

DASK = registry.get("dask")
RNG = np.random.default_rng(2026)


def _cancelling(rows: int, k: int, cols: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """``a`` (rows, k) and ``b`` (k, cols) of values near 1e3 whose products cancel: ``b``'s
    columns are orthogonal to ``a``'s rows in float64, so ``a @ b`` is the roundings alone."""
    a = RNG.standard_normal((rows, k)) * 1e3
    b = RNG.standard_normal((k, cols)) * 1e3
    q, _ = np.linalg.qr(a.T)
    b = b - q @ (q.T @ b)
    if np.dtype(dtype).kind == "c":
        return ((a + 1j * a[::-1]).astype(dtype), (b - 1j * b[:, ::-1]).astype(dtype))
    return a.astype(dtype), b.astype(dtype)


def _on_dask(fn, arrays, chunks):
    graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    feed = dict(zip(graph.inputs, arrays))
    return graph.replay(feed, backend="dask", chunks=chunks)[graph.outputs[0]]


FORMS = [
    ("matmul", lambda a, b: a @ b, {}),
    ("dot", np.dot, {}),
    ("tensordot", lambda a, b: np.tensordot(a, b, 1), {"axes": 1}),
    ("linalg.tensordot", lambda a, b: np.linalg.tensordot(a, b, axes=([1], [0])),
     {"axes": ([1], [0])}),
    ("einsum", lambda a, b: np.einsum("ij,jk->ik", a, b), {"subscripts": "ij,jk->ik"}),
    ("einsum", lambda a, b: np.einsum("ij,jk", a, b), {"subscripts": "ij,jk"}),
]


@pytest.mark.parametrize("chunks", [7, 250])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
@pytest.mark.parametrize("name, fn, params", FORMS,
                         ids=["matmul", "dot", "tensordot", "linalg.tensordot", "einsum",
                              "einsum implicit"])
def test_a_contraction_over_a_chunked_axis_is_within_its_declared_bound(name, fn, params,
                                                                         dtype, chunks):
    a, b = _cancelling(6, 1000, 5, dtype)
    want = fn(a, b)
    got = _on_dask(fn, [a, b], chunks)
    assert got.dtype == want.dtype and got.shape == want.shape
    limit = contraction_bound.bound(name, [a, b], params, want.dtype)
    assert limit.shape == want.shape
    assert not contraction_bound.outside(got, want, limit).any()


def test_a_float32_matmul_that_cancels_differs_beyond_the_flat_tolerance_within_the_bound():
    # the roundings are all there is of a @ b here: dask.array's blocks and NumPy's BLAS give
    # other values, tens of units apart, where the flat (1e-5, 1e-5) would refuse them; the
    # declared bound, 2 * gamma_k * (|A| @ |B|), is about 1e6 and holds them
    a, b = _cancelling(6, 4000, 5, np.float32)
    want = a @ b
    got = _on_dask(lambda x, y: x @ y, [a, b], 100)
    rtol, atol = DASK.tolerance_for(np.float32)
    assert np.any(np.abs(got - want) > atol + rtol * np.abs(want))
    limit = contraction_bound.bound("matmul", [a, b], {}, np.float32)
    assert not contraction_bound.outside(got, want, limit).any()


def test_a_vdot_and_a_batched_matmul_over_chunked_axes_are_within_their_declared_bound():
    a, b = _cancelling(4, 600, 4, np.float64)
    got = _on_dask(np.vdot, [a, b.T], (2, 50))
    want = np.vdot(a, b.T)
    limit = contraction_bound.bound("vdot", [a, b.T], {}, want.dtype)
    assert not contraction_bound.outside(got, want, limit).any()
    x = np.stack([a, a[::-1]])
    y = np.stack([b, b[:, ::-1]])
    got = _on_dask(lambda p, q: p @ q, [x, y], (1, 2, 64))
    want = x @ y
    limit = contraction_bound.bound("matmul", [x, y], {}, want.dtype)
    assert not contraction_bound.outside(got, want, limit).any()


def test_a_contraction_over_a_chunked_axis_runs_once_in_dask_arrays_order():
    """Declared, not checked: no magnitudes computed at replay time, no second run (the
    overflow bound's one max per operand is all)."""
    a, b = _cancelling(6, 1000, 5, np.float32)
    graph = cv.capture(lambda x, y: (x @ y, np.einsum("ij,jk->ik", x, y)), a, b)
    counting = CountingScheduler()
    with dask.config.set(scheduler=counting):
        got = graph.replay({"x": a, "y": b}, backend="dask", chunks=7)
    assert counting.calls == 1
    for out in graph.outputs:
        limit = contraction_bound.bound("matmul", [a, b], {}, np.float32)
        assert not contraction_bound.outside(got[out], a @ b, limit).any()


def test_compare_holds_a_dask_contraction_to_its_declared_bound_not_the_flat_tolerance():
    a, b = _cancelling(6, 4000, 5, np.float32)

    def fn(x, y):
        return x @ y

    graph = cv.capture(fn, a, b)
    inputs = {"x": da.from_array(a, 100), "y": da.from_array(b, 100)}  # their own chunks
    assert not graph.compare(fn, inputs, backend="dask")  # within 2 * gamma_k * (|A| @ |B|)
    flat = graph.compare(fn, inputs, backend="dask", rtol=1e-5, atol=1e-5)
    assert flat.node is graph.ops[0]  # the matmul, beyond the flat tolerance
    assert "differs: max abs error" in flat.message
