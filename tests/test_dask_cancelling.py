"""Issue 25 on Dask, the hostile review 3's finding 8: a sum over several chunks within its own
tolerance whose value an add or subtract consumes that cancels (a layer norm's centring of
values near 1e3: 62x beyond the tolerance, silent). Such a sum is built in NumPy's order from the
start (capviz/backends/dask/before_cancel.py): the replay is NumPy's bits, one dask run, or it
is refused at the node where NumPy's order cannot be known. Each test also shows what
dask.array's own order gives there: beyond the tolerance."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry

pytest.importorskip("dask")
import dask
import dask.array as da
from helpers.dask_scheduler import CountingScheduler

DASK = registry.get("dask")
RNG = np.random.default_rng(8)
ROWS = (1e3 + RNG.random((16, 768))).astype(np.float32)  # review 3's d5.py, near 1e3
COLUMNS = (1e3 + RNG.random((3000, 6))).astype(np.float32)  # a standardise's columns


def _layer_norm(x):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


def _layer_norm_by_hand(x):
    m = x.sum(axis=-1) / x.shape[-1]
    d = x - m[:, None]
    return d / np.sqrt((d * d).mean(-1)[:, None] + 1e-5)


def _layer_norm_np(x):
    centred = np.subtract(x, np.mean(x, axis=-1, keepdims=True))
    return centred / np.std(x, axis=-1, keepdims=True)


def _standardise(x):
    return (x - x.mean(0)) / x.std(0)


def _standardise_by_hand(x):
    return (x - np.sum(x, axis=0) / x.shape[0]) / np.sqrt(np.var(x, axis=0) + 1e-8)


def _standardise_np(x):
    return np.divide(np.subtract(x, np.mean(x, axis=0, keepdims=True)),
                     np.std(x, axis=0, keepdims=True))


def _batchnorm(x):
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    return 1.5 * (x - mu) / np.sqrt(var + 1e-5) + 0.25


def _batchnorm_by_hand(x):
    mu = np.mean(x, axis=0, keepdims=True)
    xc = x - mu
    return 1.5 * xc / np.sqrt(np.mean(xc * xc, axis=0, keepdims=True) + 1e-5) + 0.25


def _batchnorm_flat(x):
    mu = np.sum(x, axis=0) * (1.0 / x.shape[0])
    return (x - mu.reshape(1, -1)) * (1.0 / np.sqrt(x.var(axis=0) + 1e-5))


SPELLINGS = {  # review 3's j15.py on Dask, chunks (16, 96)
    "x - x.mean(-1, keepdims=True)": lambda x: x - x.mean(-1, keepdims=True),
    "x - x.sum(-1, keepdims=True) / 768": lambda x: x - x.sum(-1, keepdims=True) / 768,
    "x - np.mean(x, axis=-1)[:, None]": lambda x: x - np.mean(x, axis=-1)[:, None],
    "x.mean(-1) - x[:, 0]": lambda x: x.mean(-1) - x[:, 0],
    "x.sum(-1) - x[:, :384].sum(-1) * 2": lambda x: x.sum(-1) - x[:, :384].sum(-1) * 2,
    "(x - x.mean(-1, keepdims=True)) ** 2 mean": lambda x: ((x - x.mean(-1, keepdims=True))
                                                           ** 2).mean(-1),
    "x - x.mean()": lambda x: x - x.mean(),
    "-x.mean(-1, keepdims=True) + x": lambda x: -x.mean(-1, keepdims=True) + x,
    "x - np.einsum('ij->i', x)[:, None] / 768": lambda x: x - np.einsum("ij->i", x)[:, None]
                                                      / 768,
    "x - np.trace(x[:, :16]) / 16": lambda x: x - np.trace(x[:, :16]) / 16,
    "x - x.astype(np.float64).mean(-1).astype(np.float32)[:, None]":
        lambda x: x - x.astype(np.float64).mean(-1).astype(np.float32)[:, None],
}


def _replayed(fn, x, chunks, **options):
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    return graph.replay({graph.inputs[0]: x}, backend="dask", chunks=chunks,
                        **options)[graph.outputs[0]]


def _ratio(got, want):
    rtol, atol = DASK.tolerance_for(want.dtype)
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want) / (atol + rtol * np.abs(want))))


def _dask_own(fn, x, chunks):
    """``fn`` run by dask.array itself on ``x`` in ``chunks``: its own order of addition."""
    return np.asarray(fn(da.from_array(x, chunks=chunks)).compute())


@pytest.mark.parametrize("label", list(SPELLINGS))
def test_every_spelling_of_a_sum_then_a_subtraction_is_numpys_bits(label):
    fn = SPELLINGS[label]
    want = fn(ROWS)
    counting = CountingScheduler()
    with dask.config.set(scheduler=counting):
        got = _replayed(fn, ROWS, (16, 96))
    # built in NumPy's order from the start: one run (a mean of all the values too: NumPy's
    # pairwise tree over the chunks, capviz/backends/dask/pairwise.py)
    assert counting.calls == 1
    assert got.dtype == want.dtype
    if label.endswith("** 2 mean"):  # the outer mean of squares cancels nothing: dask's tree
        assert _ratio(got, want) <= 1
    else:
        assert np.array_equal(got, want)


@pytest.mark.parametrize("label", ["x - x.mean(-1, keepdims=True)",
                                   "x - x.sum(-1, keepdims=True) / 768",
                                   "x.sum(-1) - x[:, :384].sum(-1) * 2"])
def test_dask_arrays_own_order_there_is_beyond_the_tolerance(label):
    # what the replay gave before: each node within its own tolerance, the output not
    fn = SPELLINGS[label]
    assert _ratio(_dask_own(fn, ROWS, (16, 96)), fn(ROWS)) > 1


NORMS = {"layer norm": (_layer_norm, ROWS, (16, 96)),
         "layer norm by hand": (_layer_norm_by_hand, ROWS, (4, 128)),
         "layer norm np.": (_layer_norm_np, ROWS, (16, 96)),
         "standardise": (_standardise, COLUMNS, (250, 6)),
         "standardise by hand": (_standardise_by_hand, COLUMNS, (250, 3)),
         "standardise np.": (_standardise_np, COLUMNS, (1000, 2)),
         "batchnorm": (_batchnorm, COLUMNS, (250, 6)),
         "batchnorm by hand": (_batchnorm_by_hand, COLUMNS, (500, 6)),
         "batchnorm flat": (_batchnorm_flat, COLUMNS, (300, 6))}


@pytest.mark.parametrize("label", list(NORMS))
def test_a_norm_spelled_three_ways_is_within_the_tolerance_where_dasks_order_is_not(label):
    fn, x, chunks = NORMS[label]
    want = fn(x)
    got = _replayed(fn, x, chunks)
    assert got.dtype == want.dtype and _ratio(got, want) <= 1
    if "np." not in label:  # every sum reaches a subtract (or `var + 1e-5`): NumPy's bits;
        assert np.array_equal(got, want)  # np.std divides, its own tolerance is enough
    assert _ratio(_dask_own(fn, x, chunks), want) > 1


def test_a_layer_norm_in_dask_arrays_order_was_far_beyond_the_tolerance():
    # review 3's d5.py row: 62x near 1e3
    assert _ratio(_dask_own(_layer_norm, ROWS, (16, 96)), _layer_norm(ROWS)) > 10


def test_a_lazy_replay_of_a_centring_is_numpys_bits():
    fn = SPELLINGS["x - x.mean(-1, keepdims=True)"]
    lazy = _replayed(fn, ROWS, (16, 96), compute=False)
    assert isinstance(lazy, da.Array)
    assert np.array_equal(lazy.compute(), fn(ROWS))


def _layers(fn, x, chunks):
    lazy = _replayed(fn, x, chunks, compute=False)
    return " ".join(str(name) for name in lazy.__dask_graph__().layers)


def test_a_sum_that_reaches_no_subtraction_keeps_dask_arrays_reduction():
    # x.mean(-1) * 2 and a sum divided: nothing cancels, dask.array's tree runs, no regathering
    for fn in (lambda x: x.mean(-1) * 2.0, lambda x: x.sum(-1) / np.sqrt(x.shape[-1]),
               lambda x: np.tanh(x.mean(-1, keepdims=True) / 1e3) * x):
        layers = _layers(fn, ROWS, (16, 96))
        assert "rechunk" not in layers and "capviz-running" not in layers, layers
        np.testing.assert_allclose(_replayed(fn, ROWS, (16, 96)), fn(ROWS), rtol=1e-5)
    # the same mean subtracted regathers its rows: the difference the rule makes
    assert "rechunk" in _layers(lambda x: x - x.mean(-1, keepdims=True), ROWS, (16, 96))


def test_a_sum_an_exp_reads_is_numpys_bits():
    # exp multiplies a sum's relative error by its magnitude (stop 36: a sum read by any op
    # but scalings, picks, moves and functions whose condition number is at most 1 is built in
    # NumPy's order); its rows regathered, as a centring's
    def fn(x):
        return np.exp(x.mean(-1, keepdims=True) / 1e3) * x

    assert "rechunk" in _layers(fn, ROWS, (16, 96))
    assert np.array_equal(_replayed(fn, ROWS, (16, 96)), fn(ROWS))


def test_a_sum_whose_axis_is_in_one_chunk_is_left_to_dask_array():
    # each row in one block: dask.array's blocks add as NumPy does, nothing to do
    fn = SPELLINGS["x - x.mean(-1, keepdims=True)"]
    assert "rechunk" not in _layers(fn, ROWS, (4, 768))
    assert np.array_equal(_replayed(fn, ROWS, (4, 768)), fn(ROWS))


def test_a_column_centring_in_numpys_order_holds_a_few_chunks_not_the_whole_array():
    """A column mean NumPy adds row after row, subtracted from a dask-array input (the
    larger-than-memory use): the mean is added chunk by chunk (the hostile review 3's finding
    28), so a lazy replay reduced further never holds the input."""
    import tracemalloc

    host = (1e3 + RNG.random((200_000, 8))).astype(np.float32)  # 6.1 MiB, chunks of 0.15 MiB
    x = da.from_array(host, chunks=(5_000, 8))
    graph = cv.capture(lambda a: a - a.mean(0), cv.spec(host.shape, "float32"))
    with dask.config.set(scheduler="single-threaded"):
        lazy = graph.replay({"a": x}, backend="dask", compute=False)["out"]
        tracemalloc.start()
        try:
            corner = lazy[-5:].compute()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert np.array_equal(corner, (host - host.mean(0))[-5:])
    assert peak < host.nbytes / 2


def test_a_centring_of_a_flipped_view_over_several_chunks_is_numpys():
    # NumPy's loop reads a flipped axis in its own order, as a copy's (refused before)
    def fn(x):
        y = x[:, ::-1]
        return y - y.mean(-1, keepdims=True)

    graph = cv.capture(fn, cv.spec(ROWS.shape, ROWS.dtype))
    got = graph.replay({"x": ROWS}, backend="dask", chunks=(16, 96))["out"]
    assert got.dtype == ROWS.dtype and np.array_equal(got, fn(ROWS))


@pytest.mark.parametrize("chunks", [2, 5])
def test_a_centring_of_an_f_ordered_value_with_a_broadcast_operand_is_numpys(chunks):
    # (x + x[0]) of an F-ordered x is F-ordered in NumPy (the broadcast row sets no order of
    # the two axes), and so is y - y.mean(-1, keepdims=True) (the (12, 1) mean has one axis
    # of length more than one: in every order); refused before, "the result of node %2 (add)"
    x = np.asfortranarray((RNG.standard_normal((12, 40)) * 1e3 + 1e4).astype(np.float32))

    def fn(x):
        y = x + x[0]
        return y - y.mean(-1, keepdims=True)

    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    got = graph.replay({"x": x}, backend="dask", chunks=chunks)["out"]
    assert got.dtype == x.dtype and np.array_equal(got, fn(x))


def test_a_centring_of_a_flipped_view_over_all_axes_is_numpys():
    # over several axes NumPy's loop joins no axis of a flipped view and reads each in its own
    # order: its mean is NumPy's function on a buffer with the view's strides (refused before,
    # naming the subtraction)
    def fn(x):
        y = x[:, ::-1]
        return y - y.mean()

    graph = cv.capture(fn, cv.spec(ROWS.shape, ROWS.dtype))
    got = graph.replay({"x": ROWS}, backend="dask", chunks=(16, 96))["out"]
    assert got.dtype == ROWS.dtype and np.array_equal(got, fn(ROWS))


FULL_SUMS = {  # the program, and whether its output is the whole array (a corner measured)
    "x - x.mean()": (lambda a: a - a.mean(), True),
    "x - x.sum() / x.size": (lambda a: a - a.sum() / a.size, True),
    "x.sum() - x[:1000].sum() * 200": (lambda a: a.sum() - a[:1000].sum() * 200, False),
    "np.abs(x - x.mean()).max()": (lambda a: np.abs(a - a.mean()).max(), False),
    "(x - x.mean()) / x.std() - x.var()": (lambda a: (a - a.mean()) / a.std() - a.var(), True),
}


@pytest.mark.parametrize("offset", [0.0, 1e3])
@pytest.mark.parametrize("label", list(FULL_SUMS))
def test_a_sum_of_all_values_that_reaches_a_subtraction_is_numpys_bits_a_chunk_at_a_time(
        label, offset):
    """A sum over all the values of a dask-array input that feeds a subtraction (a data set's
    standardisation): NumPy's pairwise tree built over the chunks, one run, NumPy's bits
    whether or not its order matters there (values near 1e3: dask.array's own order is beyond
    the tolerance), holding a few chunks, never the input (the hostile review 4's finding 8:
    12.3 MiB for a 12.2 MiB input)."""
    import tracemalloc

    fn, whole_output = FULL_SUMS[label]
    host = (offset + RNG.random((200_000, 8))).astype(np.float32)  # 6.1 MiB
    want = fn(host)
    x = da.from_array(host, chunks=(5_000, 8))
    graph = cv.capture(fn, cv.spec(host.shape, "float32"))

    def run():
        if whole_output:  # a corner of the lazy result: the output is not held either
            lazy = graph.replay({"a": x}, backend="dask", compute=False)["out"]
            return np.asarray(lazy[-5:].compute()), want[-5:]
        return graph.replay({"a": x}, backend="dask")["out"], want

    with dask.config.set(scheduler="single-threaded"):
        run()  # once before measuring: dask's own first-call costs
        tracemalloc.start()
        try:
            got, expected = run()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < host.nbytes / 2  # one block of the input would be 6.1 MiB
    np.testing.assert_array_equal(got, expected)
    counting = CountingScheduler()
    with dask.config.set(scheduler=counting):
        got = graph.replay({"a": x}, backend="dask")["out"]
    assert counting.calls == 1
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_a_centring_on_the_mean_of_all_values_beyond_dasks_tolerance_is_numpys_lazily_too():
    fn = SPELLINGS["x - x.mean()"]
    assert _ratio(_dask_own(fn, ROWS, (16, 96)), fn(ROWS)) > 1  # what dask.array gives
    assert np.array_equal(_replayed(fn, ROWS, (16, 96)), fn(ROWS))
    lazy = _replayed(fn, ROWS, (16, 96), compute=False)
    assert np.array_equal(lazy.compute(), fn(ROWS))


# W=25d stop 34: a contraction whose value an add or subtract cancels (hostile review 6, #13) --

GRAM_ROWS = RNG.standard_normal((8, 64)).astype(np.float32)
WEIGHTS = (RNG.standard_normal((64, 64)) * 0.1).astype(np.float32)


def _squared_distances(x):
    sq = (x ** 2).sum(-1)
    return sq[:, None] + sq[None, :] - 2 * x @ x.T


def _second_moment_less_the_mean_squared(x):
    m = x.mean(0)
    return x.T @ x / np.float32(x.shape[0]) - m[:, None] * m[None, :]


def _squared_distances_by_einsum(x):
    sq = (x ** 2).sum(-1)
    return sq[:, None] + sq[None, :] - 2 * np.einsum("ij,kj->ik", x, x)


def _inner_less_the_squares(x):
    return np.inner(x, x) - np.diag((x ** 2).sum(-1))


@pytest.mark.parametrize("fn", [_squared_distances, _second_moment_less_the_mean_squared,
                                _squared_distances_by_einsum, _inner_less_the_squares])
@pytest.mark.parametrize("chunks", [2, 4])
def test_a_contraction_an_add_or_subtract_cancels_is_numpys_bits(fn, chunks):
    """Review 6's finding 13: the pairwise squared distances of float32 rows in chunks of 2 had
    a diagonal off NumPy's by up to 1.5e-5 (dask.array's blocked product within the
    contraction's declared bound, which held the product only, not the subtract that cancels
    it), beyond the tolerance, silent. A product of a value and its own transpose, each up to
    a scaling (a Gram matrix: its diagonal sums squares, of one sign, as a sum does), whose
    value an add or subtract cancels is now NumPy's own BLAS call on one block (checked to
    fail before this change)."""
    graph = cv.capture(fn, cv.spec(GRAM_ROWS.shape, "float32"))
    got = graph.replay({"x": GRAM_ROWS}, backend="dask", chunks=chunks)["out"]
    want = fn(GRAM_ROWS)
    assert got.tobytes() == want.tobytes()


def test_a_residual_add_of_a_product_of_its_own_operand_is_numpys_call_on_one_block():
    """``x + x @ W`` (the brief's memory row, kept on one block: why). The add's other operand
    is the product's own operand, the shape of a centring (``x - x @ ones / n``, review 4's
    finding 2), and it cancels where ``x @ W`` is near ``-x``: so the product is NumPy's own
    BLAS call, whose bits depend on the block's shape (a block of one row is ``gemv``, not
    ``gemm``; OpenBLAS picks its kernels and threads by the sizes), so its operand is
    gathered. No chunking of the rows is NumPy's bits by proof: it stays one block, exact."""
    fn = lambda x: x + x @ WEIGHTS  # noqa: E731
    graph = cv.capture(fn, cv.spec(GRAM_ROWS.shape, "float32"))
    lazy = graph.replay({"x": GRAM_ROWS}, backend="dask", chunks=(2, 64), compute=False)["out"]
    assert not any(name.startswith("matmul-") for name in lazy.dask.layers)
    assert lazy.compute().tobytes() == fn(GRAM_ROWS).tobytes()
