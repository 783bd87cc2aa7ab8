"""Issue 25 on Dask: variances and running sums over several chunks whose roundings dask.array
and NumPy make otherwise, beyond the tolerance (capviz/backends/dask/variance.py, the running
sums of capviz/backends/dask/cancellation.py). Each case was silent before: the replay gave
dask.array's order's value; now the node is computed again in NumPy's order, bit for bit, or
refused naming the value whose memory layout decides it."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry

pytest.importorskip("dask")
import dask
import dask.array as da
from helpers.dask_scheduler import CountingScheduler

from capviz.backends.dask import moments
from capviz.backends.dask.overflow import OrderMatters

DASK = registry.get("dask")
RNG = np.random.default_rng(2025)
# np.var(1e8 + rng.random(1000)) in float32: every value rounds to 1e8, NumPy's pairwise mean is
# one unit of the last place off (its variance 64), dask.array's mean of chunks of 7 exact (0)
LARGE = (1e8 + RNG.random(1000)).astype(np.float32)
# float32 columns near 1e5: NumPy's mean of each column adds row after row (a running sum)
COLUMNS = (1e5 + RNG.random((300, 4))).astype(np.float32)
WITH_NANS = COLUMNS.copy()
WITH_NANS[[3, 50, 51], [0, 1, 1]] = np.nan
NAMES = ["var", "std", "nanvar", "nanstd"]


def _numpys_bits(fn, x, chunks):
    """``fn(x)`` replayed on Dask with ``chunks`` is eager NumPy's, bit for bit."""
    want = np.asarray(fn(x))
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    got = graph.replay({graph.inputs[0]: x}, backend="dask", chunks=chunks)[graph.outputs[0]]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    return want


def _beyond_the_tolerance(got, want):
    rtol, atol = DASK.tolerance_for(want.dtype)
    return bool(np.any(np.abs(got - want) > atol + rtol * np.abs(want)))


@pytest.mark.parametrize("chunks", [7, 64])
@pytest.mark.parametrize("name", NAMES)
def test_a_variance_tiny_against_its_values_is_numpys(name, chunks):
    fn = getattr(np, name)
    want = _numpys_bits(fn, LARGE, chunks)
    assert want == (64.0 if name.endswith("var") else 8.0)
    before = moments.moment(name, da.from_array(LARGE, chunks), {}).compute()
    assert before == 0.0 and _beyond_the_tolerance(before, want)  # what the replay gave


@pytest.mark.parametrize("chunks", [(7, 4), (64, 2)], ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_a_column_variance_of_large_values_is_numpys_running_sum(name, chunks):
    x = WITH_NANS if name.startswith("nan") else COLUMNS
    params = {"axis": 0, "ddof": 1}
    want = _numpys_bits(lambda a: getattr(np, name)(a, **params), x, chunks)
    before = moments.moment(name, da.from_array(x, chunks), params).compute()
    assert _beyond_the_tolerance(before, want)  # about 0.12 in NumPy, 0.08 in dask's order


@pytest.mark.parametrize("name", NAMES)
def test_a_variance_of_a_transposed_input_is_numpys_in_its_layout(name):
    # the columns of x.T are contiguous in NumPy: added pairwise, as on the rows of x
    x = np.ascontiguousarray(COLUMNS.T)
    _numpys_bits(lambda a: getattr(np, name)(a.T, axis=0), x, (2, 64))


@pytest.mark.parametrize("fn", [
    lambda a: np.var(a, axis=(0, 1), keepdims=True), lambda a: np.std(a, dtype=np.float32),
    lambda a: a.var(axis=1, ddof=2), lambda a: np.nanstd(a, axis=0, keepdims=True),
], ids=["axis tuple", "dtype", "method axis 1", "nanstd keepdims"])
def test_every_form_of_a_variance_small_against_its_values_is_numpys(fn):
    _numpys_bits(fn, np.stack([LARGE[:600].reshape(20, 30)] * 2, axis=2)[..., 0], (6, 7))


def test_a_complex_variance_small_against_its_values_is_numpys():
    x = (LARGE + 1j * LARGE[::-1]).astype(np.complex64)
    for name in NAMES:
        _numpys_bits(getattr(np, name), x, 7)


@pytest.mark.parametrize("chunks", [(2000, 3), (20000, 1)], ids=str)
@pytest.mark.parametrize("name", ["sum", "mean", "nansum", "nanmean"])
def test_a_float32_column_sum_of_many_rows_is_numpys_running_sum(name, chunks):
    """The hostile review 2's finding 10 on Dask: NumPy adds a C-ordered float32 column row
    after row, and its running sum drifts (about 0.06% here); dask.array adds chunk by chunk.
    Held to one rounding of the magnitudes, as a pairwise sum, it was silent."""
    x = (1 + 0.01 * RNG.random((40000, 3))).astype(np.float32)
    want = _numpys_bits(lambda a: getattr(np, name)(a, axis=0), x, chunks)
    before = getattr(da, name)(da.from_array(x, chunks), axis=0).compute()
    assert _beyond_the_tolerance(before, want)


def test_a_float32_row_sum_numpy_adds_pairwise_runs_once():
    # along the last axis NumPy adds pairwise: one rounding of the magnitudes, no second run
    x = (1 + 0.01 * RNG.random((3, 40000))).astype(np.float32)
    graph = cv.capture(lambda a: (np.sum(a, axis=1), np.var(a, axis=1)), x)
    counting = CountingScheduler()
    with dask.config.set(scheduler=counting):
        got = graph.replay({"a": x}, backend="dask", chunks=(1, 2000))
    assert counting.calls == 1
    np.testing.assert_allclose(got["out0"], x.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["out1"], x.var(axis=1), rtol=1e-5, atol=1e-5)


def test_a_layer_norms_variance_over_several_chunks_runs_once_within_the_tolerance():
    x = RNG.standard_normal((64, 768)).astype(np.float32) * 2 + 0.5

    def norm(a):
        mean = a.mean(axis=-1, keepdims=True)
        return (a - mean) / np.sqrt(a.var(axis=-1, keepdims=True) + 1e-5), a.std(axis=-1)

    graph = cv.capture(norm, x)
    counting = CountingScheduler()
    with dask.config.set(scheduler=counting):
        got = graph.replay({"a": x}, backend="dask", chunks=(16, 256))
    assert counting.calls == 1  # no output reached the bound: no second run
    for name, want in zip(graph.outputs, norm(x)):
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-5)


def test_a_lazy_replay_of_a_variance_small_against_its_values_fails_with_the_fix():
    graph = cv.capture(lambda a: np.std(a), LARGE)
    lazy = graph.replay({"a": LARGE}, backend="dask", chunks=7, compute=False)["out"]
    with pytest.raises(cv.ReplayError) as info:
        lazy.compute()
    assert info.value.index == graph.ops[-1].index
    assert isinstance(info.value.error, OrderMatters)
    assert ("OrderMatters: np.std over several chunks: the variance is small against its "
            "values, so the roundings of their mean in dask.array's order of addition and "
            "NumPy's can move it by up to ") in str(info.value)
    assert ("beyond the tolerance of the result; replay with compute=True (which computes "
            "this node as NumPy does), backend='numpy', or chunks= that keep the reduced axes "
            "in one chunk") in str(info.value)


@pytest.mark.parametrize("fn", [lambda x: np.var(x[::-1], axis=0),
                                lambda x: np.std(np.flipud(x), axis=0),
                                lambda x: np.var(x[::-1, ::-1] * 2.0, axis=0)],
                         ids=["var(x[::-1])", "std(flipud(x))", "var(x[::-1, ::-1] * 2.0)"])
def test_a_variance_of_a_flipped_view_is_numpys(fn):
    # a negative stride: NumPy's loop reads the flipped axis in its own order (its running
    # sum of rows in the view's order), as a strided view's; refused before
    _numpys_bits(fn, COLUMNS, (7, 4))


def test_a_variance_along_one_chunk_whose_other_axes_are_chunked_is_numpys_running_sum():
    # a (300, 1) block's column is contiguous: NumPy adds it pairwise, where it adds the column
    # of the whole C-ordered (300, 4) array row after row (0.08 against 0.14 here): silent
    # before, as the float32 column sums of such blocks were
    want = _numpys_bits(lambda a: np.var(a, axis=0), COLUMNS, (300, 1))
    before = moments.moment("var", da.from_array(COLUMNS, (300, 1)), {"axis": 0}).compute()
    assert _beyond_the_tolerance(before, want)
    x = (1 + 0.01 * RNG.random((40000, 3))).astype(np.float32)
    want = _numpys_bits(lambda a: np.sum(a, axis=0), x, (40000, 1))
    assert _beyond_the_tolerance(da.from_array(x, (40000, 1)).sum(axis=0).compute(), want)


def test_a_variance_along_one_chunk_numpy_adds_pairwise_is_computed_once_as_numpys():
    # rows chunked, each row whole and contiguous: dask.array runs NumPy's own sums on each
    # block, pairwise as NumPy's loop over the whole array: NumPy's bits, one run
    x = np.ascontiguousarray(COLUMNS.T)
    graph = cv.capture(lambda a: (np.var(a, axis=1), np.sum(a, axis=-1)), x)
    counting = CountingScheduler()
    with dask.config.set(scheduler=counting):
        got = graph.replay({"a": x}, backend="dask", chunks=(1, 300))
    assert counting.calls == 1
    assert np.array_equal(got["out0"], np.var(x, axis=1))
    assert np.array_equal(got["out1"], np.sum(x, axis=-1))


# --- NumPy's running sum chunk by chunk (the hostile review 3's finding 28) ----------------------


@pytest.mark.parametrize("name", ["sum", "mean", "nansum", "nanmean", "var", "std", "nanvar",
                                  "nanstd"])
def test_a_column_reduction_in_numpys_order_holds_a_few_chunks_not_the_whole_array(name):
    """A float32 column sum of a dask-array input (the larger-than-memory use) trips the
    running-sum bound and is computed again in NumPy's order: one chunk at a time along the
    axis, NumPy's bits; it held the whole array, twice, in one block before."""
    import tracemalloc

    host = RNG.random((200_000, 8)).astype(np.float32)  # 6.1 MiB, chunks of 0.15 MiB
    host[[5, 77_000], [1, 6]] = np.nan if name.startswith("nan") else 0.5
    x = da.from_array(host, chunks=(5_000, 8))
    graph = cv.capture(lambda a: getattr(np, name)(a, axis=0), cv.spec(host.shape, "float32"))
    with dask.config.set(scheduler="single-threaded"):
        graph.replay({"a": x}, backend="dask")  # first-call costs: lazy imports (~10 MB)
        tracemalloc.start()
        try:
            got = graph.replay({"a": x}, backend="dask")["out"]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert np.array_equal(got, getattr(np, name)(host, axis=0))
    assert peak < host.nbytes / 2  # a few chunks (1.1 to 1.6 MB), not the 6.4 MB input


@pytest.mark.parametrize("fn, shape, chunks", [
    (lambda a: np.sum(a, axis=0, keepdims=True), (3000, 4), (400, 3)),
    (lambda a: np.mean(a, axis=1), (3, 3000, 5), (2, 700, 2)),
    (lambda a: np.nanmean(a, axis=-2, keepdims=True), (2, 3000, 3), (1, 500, 3)),
    (lambda a: np.std(a, axis=0, ddof=1), (3000, 3), (256, 1)),
    (lambda a: np.var(a, axis=0, keepdims=True), (3000, 2), (999, 2)),
    (lambda a: np.nanvar(a, axis=1, ddof=1), (2, 3000, 3), (1, 400, 2)),
    (lambda a: np.nanstd(a, axis=0, keepdims=True), (3000, 3), (500, 3)),
], ids=["sum keepdims", "mean 3-d", "nanmean keepdims", "std ddof", "var keepdims", "nanvar",
        "nanstd keepdims"])
def test_a_running_sum_chunk_by_chunk_is_numpys_for_every_form(fn, shape, chunks):
    x = (1e4 + RNG.random(shape)).astype(np.float32)
    x.reshape(-1)[::97] = np.nan if "nan" in str(fn.__code__.co_names) else x.reshape(-1)[::97]
    _numpys_bits(fn, x, chunks)


def test_a_running_sum_of_negative_zeros_is_numpys_positive_zero():
    # NumPy's reduction starts at the identity: a column of -0.0 adds up to 0.0
    x = np.full((400, 3), -0.0, np.float32)
    x[:, 2] = 1e4 + RNG.random(400)
    want = _numpys_bits(lambda a: np.sum(a, axis=0), x, (50, 3))
    assert not np.signbit(want[0])


def test_the_coverage_tables_dask_column_says_which_sums_are_checked():
    from capviz.backends.dask import cancellation, variance
    from capviz.numpy_api import coverage

    assert coverage.DASK_CHECKED == (cancellation.CANCELS - {"einsum"}) | variance.VARIANCES
    for name in ("np.var", "np.nanstd", "np.sum", "np.mean", "np.trace"):
        assert coverage.engines(name)[1] == "tolerance, sums checked (else NumPy's order)"
    for name in ("np.matmul", "np.dot", "np.einsum", "np.tensordot", "np.vdot"):
        assert coverage.engines(name)[1] == coverage.DECLARED_CONTRACTION
    assert coverage.engines("np.inner")[1] == "exact"  # NumPy's own function on one block
