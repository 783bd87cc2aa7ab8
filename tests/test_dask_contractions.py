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


def _overflowing(shape: tuple, dtype) -> np.ndarray:
    """Half of the values near ``finfo.max / 4`` (their products overflow), half tiny: the
    differential harness's extreme values."""
    rng = np.random.default_rng(25)
    info = np.finfo(dtype)
    base = rng.standard_normal(shape)
    huge = (base * (float(info.max) / 4)).astype(dtype)
    tiny = (base * float(info.tiny) * 8).astype(dtype)
    return np.where(rng.random(shape) < 0.5, huge, tiny)


SELF_PRODUCTS = [
    ("m @ m.T", lambda m: m @ m.T),
    ("m.T @ m", lambda m: m.T @ m),
    ("np.dot(m, m.T)", lambda m: np.dot(m, m.T)),
    ("m @ np.swapaxes(m, 0, 1)", lambda m: m @ np.swapaxes(m, 0, 1)),
    ("m @ m.mT", lambda m: m @ m.mT),
    ("np.tensordot(m, m, ([1], [1]))", lambda m: np.tensordot(m, m, ([1], [1]))),
]


@pytest.mark.parametrize("chunks", [(10, 100), (10, 400), (30, 100)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("label, fn", SELF_PRODUCTS, ids=[s[0] for s in SELF_PRODUCTS])
def test_a_matrix_times_its_own_transpose_that_overflows_gives_numpys_infinities(
        label, fn, dtype, chunks):
    """NumPy hands ``m @ m.T`` (one buffer, strides swapped) to BLAS's ``syrk``, whose
    overflows give other infinities than ``gemm`` of a copy or of dask.array's blocks (float32:
    ``-inf`` where the blocks gave NaN, the differential harness's float16_sums case): the
    replay computes it as NumPy does, the block and its own transpose, and gives NumPy's
    ``inf``, ``-inf`` and NaN at every place."""
    m = _overflowing((30, 400), dtype)
    with np.errstate(all="ignore"):
        want = fn(m)
    got = _on_dask(fn, [m], chunks)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # NaN where NumPy's is, the same infinities


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_product_of_two_matrices_whose_output_spans_several_blocks_that_overflows_is_numpys(
        dtype):
    """The contracted axis in one chunk, the output's rows or columns in several: BLAS's
    kernel on each block of rows makes other NaNs of an overflow than NumPy's one call on the
    whole matrices (float32 (7, 50) @ (50, 7): NaN where NumPy gives an infinity)."""
    a, b = _overflowing((7, 50), dtype), _overflowing((50, 7), dtype)[::-1].copy()
    with np.errstate(all="ignore"):
        want = a @ b
    graph = cv.capture(lambda x, y: x @ y, a, b)
    for rows, columns in [(2, 7), (7, 2), (3, 3)]:  # the 50 contracted in one chunk
        inputs = {"x": da.from_array(a, (rows, 50)), "y": da.from_array(b, (50, columns))}
        np.testing.assert_array_equal(graph.replay(inputs, backend="dask")["out"], want)


def test_a_self_product_of_a_strided_view_that_overflows_is_refused_with_the_fix():
    """``m[:, :50] @ m[:, :50].T``: NumPy's operands are a strided view of ``m``, a layout no
    block of a dask array has; refused at the node with the fixes, and the fix applied gives
    NumPy's values."""
    m = _overflowing((30, 400), np.float32)

    def fn(m):
        return m[:, :50] @ m[:, :50].T

    graph = cv.capture(fn, cv.spec(m.shape, m.dtype))
    with pytest.raises(cv.ReplayError) as caught:
        graph.replay({"m": m}, backend="dask", chunks=(10, 100))
    message = str(caught.value)
    assert "replay failed at node %4 (matmul) of float32[30,50], float32[50,30]" in message
    assert "test_dask_contractions.py" in message
    assert "np.matmul over several blocks adds 50 products" in message
    assert "the memory layout of the result of node %1 (getitem)" in message
    assert message.endswith("replay with backend='numpy', or with chunks= that keep each "
                            "operand in one chunk")
    with np.errstate(all="ignore"):
        want = fn(m)
    got = graph.replay({"m": m}, backend="dask", chunks=m.shape)["out"]  # the fix
    np.testing.assert_array_equal(got, want)
