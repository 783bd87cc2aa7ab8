"""Issue 25 on Dask: reductions whose dask.array algorithm is not NumPy's run NumPy's
(capviz/backends/dask/moments.py). Each case was silent before: dask.array's combined moments
gave NaN where NumPy's two passes give inf, and its tree of complex partial products NaN where
NumPy's product in order gives inf."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry

pytest.importorskip("dask")
import dask
import dask.array as da
from helpers.dask_scheduler import CountingScheduler

from capviz.backends.dask import tasks as dask_tasks
from capviz.backends.dask.overflow import OrderMatters

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DASK = registry.get("dask")
BIG = np.float32(3.4028235e38)
# the thorough profile's method.std-32[float32,special,own,strided]: two values near
# finfo.max in a column overflow NumPy's squared deviations to inf, dask's moments to nan
SPECIAL = np.asfortranarray(np.array([[1.5370494, 1.1754944e-38, 0.0, np.nan],
                                      [BIG, 0.74785733, -1.4256669, -0.52506047],
                                      [BIG, -1.4614391, -1.7798942, 1.1754944e-38]],
                                     np.float32))
RNG = np.random.default_rng(25)
HUGE_COMPLEX = (RNG.standard_normal((6, 5)) + 1j * RNG.standard_normal((6, 5))) * 1e307
HUGE_COMPLEX[2] = np.nan


def replays_as_numpy_on_dask(fn, x, chunks):
    """``fn(x)`` replayed on Dask with ``chunks`` is eager NumPy's within the tolerance, with
    NumPy's infinities and NaNs where they are."""
    with np.errstate(all="ignore"):
        want = np.asarray(fn(x.copy()))
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    got = graph.replay({graph.inputs[0]: x}, backend="dask", chunks=chunks)[graph.outputs[0]]
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    for part in (np.real, np.imag) if want.dtype.kind == "c" else (np.asarray,):
        assert np.array_equal(np.isnan(part(got)), np.isnan(part(want)))
        assert np.array_equal(np.isposinf(part(got)), np.isposinf(part(want)))
    rtol, atol = DASK.tolerance_for(want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    return want


@pytest.mark.parametrize("chunks", ["auto", 2])
@pytest.mark.parametrize("call", [lambda t: t.std(0), lambda t: np.var(t, axis=0, ddof=1),
                                  lambda t: np.nanstd(t, axis=0), lambda t: np.nanvar(t),
                                  lambda t: np.nanstd(t, keepdims=True)])
def test_dask_variance_of_values_near_the_float_maximum_is_numpys_inf(call, chunks):
    want = replays_as_numpy_on_dask(call, SPECIAL, chunks)
    assert np.isinf(want).any()


@pytest.mark.parametrize("chunks", ["auto", (2, 5)])
@pytest.mark.parametrize("name", ["var", "std", "nanvar", "nanstd"])
def test_dask_variance_of_huge_complex_values_is_numpys(name, chunks):
    # the thorough profile's np.std-272[complex128,extreme,own,C]: NumPy inf, dask nan
    want = replays_as_numpy_on_dask(lambda t: getattr(np, name)(t, axis=1), HUGE_COMPLEX,
                                    chunks)
    assert np.isinf(want).any()


@pytest.mark.parametrize("name", ["var", "std", "nanvar", "nanstd"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "bool",
                                   "complex64"])
def test_dask_variance_of_ordinary_values_stays_within_the_tolerance(name, dtype):
    x = (RNG.standard_normal((40, 30)) * 3).astype(dtype)
    if dtype in ("float32", "complex64"):
        x[3, 4] = np.nan
    for kwargs in ({"axis": 0}, {"axis": (0, 1), "ddof": 1}, {"keepdims": True, "ddof": 50},
                   {"axis": -1, "ddof": 1.5}):
        replays_as_numpy_on_dask(lambda t, k=kwargs: getattr(np, name)(t, **k), x, (7, 11))


# the thorough profile's method.prod-7[complex64,special,own,C] (`t.prod(0, keepdims=True)`):
# NumPy's product in order gives inf+infj and -inf+nanj, dask multiplied its one partial
# product by 1 once more: (1 + 0j) * (inf + infj) is nan+nanj
PRODUCT = np.array([[-0.48989505 - 0.38423538j, 0.44052365 - 3.4028235e38j],
                    [-3.4028235e38 - 1.4e-45j, -3.4028235e38 + 1.2624149j],
                    [3.4028235e38 - 0.26381767j, -0.49972039 + 0.85926336j]], np.complex64)


@pytest.mark.parametrize("chunks", ["auto", 1])
@pytest.mark.parametrize("call", [lambda t: t.prod(0, keepdims=True), lambda t: np.prod(t),
                                  lambda t: np.nanprod(t, axis=0), lambda t: t.prod(axis=-1)])
def test_dask_complex_product_with_infinite_parts_is_numpys(call, chunks):
    for x in (PRODUCT, np.asfortranarray(PRODUCT), PRODUCT.astype(np.complex128) * 1e300):
        with np.errstate(all="ignore"):
            want = np.asarray(call(x.copy()))
        graph = cv.capture(call, cv.spec(x.shape, x.dtype))
        got = graph.replay({"t": x}, backend="dask", chunks=chunks)["out"]
        assert got.tobytes() == want.tobytes()  # NumPy's order of products: bit for bit


def test_numpys_own_product_of_one_complex_infinity_is_nan():
    # why dask's tree differs: NumPy's reduction of a length-1 axis multiplies by the identity
    with np.errstate(all="ignore"):
        assert np.isnan(np.prod(np.array([[np.inf + 1j * np.inf]], np.complex64), axis=0)[0])


def test_dask_std_of_complex_values_with_a_float32_accumulator_is_numpys():
    # the thorough profile's np.std-272[complex128,extreme,own,C], `np.std(a, 1, np.float32)`:
    # NumPy inf, dask nan
    x = np.array([[6.10383336e-309 + 2.81720833e+307j, -4.33497348e+306 + 1.40640633e-307j,
                   -2.93543022e-307 - 7.59565716e+307j, -4.73243189e+307 + 4.87273224e+307j],
                  [-2.12428915e-307 - 1.36321125e-307j, 6.05820616e+307 + 7.20399678e+306j,
                   1.16448404e-307 - 7.91530376e+307j, -3.01100310e+307 + 4.14901402e+307j],
                  [-1.82333104e+307 + 1.34503785e-308j, 2.14541755e+307 + 2.87857965e+307j,
                   3.25670419e-307 - 1.17838466e-307j, -4.60451488e-307 + 4.64527064e-307j]])
    want = replays_as_numpy_on_dask(lambda a: np.std(a, 1, np.float32), x, "auto")
    assert np.isinf(want[0])


@pytest.mark.parametrize("chunks", ["auto", 50])
@pytest.mark.parametrize("call", [lambda t: t.mean(), lambda t: np.mean(t, axis=0),
                                  lambda t: t.mean(axis=1, keepdims=True)])
def test_dask_mean_of_float16_sums_in_float32_as_numpy(call, chunks):
    # the thorough profile's float16_sums[float16,extreme,own,C]: x.mean() of 600 float16
    # values near +-16,000 is 336.5 in NumPy (summed in float32), inf on dask (summed in float16)
    x = (np.random.default_rng(5).standard_normal((600, 2)) * 16000).astype(np.float16)
    want = replays_as_numpy_on_dask(call, x, chunks)
    assert np.isfinite(want).all()
    with np.errstate(all="ignore"):
        assert np.isinf(x.sum(axis=0)).any()  # a float16 sum of the same values overflows


# --- over several chunks (hostile review, finding 5) ------------------------------------------

F32 = np.float32(3e38)
# (values, chunks): float32 sums of both signs whose partial sums overflow in one order only
ORDERS = {
    "numpy inf, dask nan": (np.array([F32, -F32, F32, F32, -F32, -F32]), 2),
    "numpy inf, dask finite": (np.array([F32, -F32, F32, F32, -F32]), 3),
    "numpy finite, dask inf": (np.array([-F32, F32, F32, -F32]), ((1, 2, 1),)),
    "numpy nan, dask finite": (np.array([F32, F32, -F32, -F32, F32]), ((1, 2, 2),)),
}


def _numpys_bits(fn, arrays, chunks):
    """``fn(*arrays)`` replayed on Dask with ``chunks`` is eager NumPy's, bit for bit."""
    with np.errstate(all="ignore"):
        want = np.asarray(fn(*arrays))
        graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
        got = graph.replay(dict(zip(graph.inputs, arrays)), backend="dask",
                           chunks=chunks)[graph.outputs[0]]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    return want


SUMS = [(fn, case) for fn in (np.sum, np.mean, np.nansum, np.nanmean) for case in ORDERS]
# a variance whose first sum overflows is inf in NumPy (its squared deviations overflow), so
# only dask's nan differs
MOMENTS = [(fn, "numpy inf, dask nan") for fn in (np.var, np.std, np.nanvar, np.nanstd)]


@pytest.mark.parametrize("fn, case", SUMS + MOMENTS)
def test_a_sum_that_overflows_in_one_order_only_is_numpys(fn, case):
    values, chunks = ORDERS[case]
    want = _numpys_bits(fn, [values], chunks)
    with np.errstate(all="ignore"):
        dasks = np.asarray(getattr(da, fn.__name__)(da.from_array(values, chunks)).compute())
    assert not np.array_equal(dasks, want, equal_nan=True)  # what the replay gave before


@pytest.mark.parametrize("fn, values, chunks", [
    (lambda a: a.sum(axis=0), np.array([[F32, 1], [F32, 1], [-F32, 1], [-F32, 1]], np.float32),
     2),
    (lambda a: np.sum(a, axis=(0, 1), keepdims=True), np.array([[F32, F32], [-F32, -F32]]),
     ((1, 1), (2,))),
    (np.trace, np.diag([F32, F32, -F32, -F32]), 2),
    (np.sum, np.array([1.5e308, 1.5e308, -1.5e308, -1.5e308]), 2),
    (np.sum, np.array([F32, F32, -F32, -F32], np.complex64) * 1j, 2),
    (lambda a: np.sum(a, dtype=np.float32), np.array([3e38, 3e38, -3e38, -3e38]), 2),
    (lambda a: np.mean(a, axis=1), np.array([[F32, -F32, F32, F32, -F32, -F32]] * 3), (2, 2)),
], ids=["axis 0", "axis tuple", "trace", "float64", "complex64", "dtype=float32", "mean axis 1"])
def test_a_sum_that_overflows_in_one_order_only_is_numpys_for_every_form(fn, values, chunks):
    _numpys_bits(fn, [values], chunks)


def test_a_sum_in_numpys_order_along_an_axis_adds_as_numpys_loop_over_the_whole_array():
    # NumPy adds a column of a C-ordered (16, 3) array row after row (0 here), but a (16, 1)
    # block's column pairwise, as a contiguous run (inf - inf = nan here): the blocks of the
    # second run keep the axes after the reduced one whole
    x = np.zeros((16, 3), np.float32)
    x[[0, 8]], x[[1, 9]] = F32, -F32
    want = _numpys_bits(lambda a: a.sum(axis=0), [x], ((8, 8), (1, 2)))
    assert np.array_equal(want, np.zeros(3, np.float32))
    with np.errstate(all="ignore"):
        assert np.isnan(np.ascontiguousarray(x[:, :1]).sum(axis=0)).all()


_COLUMN = np.zeros(16, np.float32)
_COLUMN[[0, 1]], _COLUMN[[8, 9]] = F32, -F32
_F_ORDERED = np.asfortranarray(np.stack([_COLUMN, _COLUMN], axis=1))
_LAYOUT_FIX = ("NumPy's order of addition follows the memory layout of {}, which is not "
               "C-contiguous, and a dask array has none: replay with backend='numpy', or with "
               "chunks= that keep the reduced axes in one chunk")


@pytest.mark.parametrize("chunks", [(8, 2), (4, 1)], ids=str)
def test_a_sum_of_an_f_ordered_input_that_reaches_the_bound_is_numpys_in_its_layout(chunks):
    # NumPy adds an F-ordered column pairwise (0 here), a C-ordered one row after row (inf):
    # the second run sums the input itself, in its layout (hostile review 2, finding 12)
    with np.errstate(all="ignore"):
        assert np.isinf(np.sum(np.ascontiguousarray(_F_ORDERED), axis=0)).all()
    want = _numpys_bits(lambda x: np.sum(x, axis=0), [_F_ORDERED], chunks)
    assert np.array_equal(want, [0, 0])


@pytest.mark.parametrize("chunks", [(8, 2), (4, 1)], ids=str)
def test_a_sum_of_values_computed_from_an_f_ordered_input_that_reaches_the_bound_is_numpys(
        chunks):
    # NumPy's x * 1.0 keeps x's F order (K order), and so its sum's pairwise order: the second
    # run sums a block laid out in F order (0 here; a C-ordered block gives inf)
    want = _numpys_bits(lambda x: np.sum(x * 1.0, axis=0), [_F_ORDERED], chunks)
    assert np.array_equal(want, [0, 0])


# a C-ordered (2, 16) input whose rows are _COLUMN: transposed by the program, NumPy sums each
# column of x.T along its contiguous axis, pairwise (0); row after row, as on a C-ordered
# block of x.T, it is inf (hostile review 2, finding 12: /tmp/review2/d6.py)
_ROWS = np.stack([_COLUMN, _COLUMN])
TRANSPOSED = {
    "np.sum(x.T, axis=0)": lambda x: np.sum(x.T, axis=0),
    "x.T.sum(0)": lambda x: x.T.sum(0),
    "(x.T * 1.0).sum(0)": lambda x: (x.T * 1.0).sum(0),
    "(x.T + x.T * 0.0).sum(0)": lambda x: (x.T + x.T * 0.0).sum(0),
    "np.swapaxes(x, 0, 1).sum(0)": lambda x: np.swapaxes(x, 0, 1).sum(0),
    "np.moveaxis(x, 0, -1).sum(0)": lambda x: np.moveaxis(x, 0, -1).sum(0),
    "x[:, :16].T.sum(0)": lambda x: x[:, :16].T.sum(0),
    "ones(16) @ x.T": lambda x: np.ones(16, np.float32) @ x.T,
    "np.mean(x.T, axis=0)": lambda x: np.mean(x.T, axis=0),
}


@pytest.mark.parametrize("fn", list(TRANSPOSED.values()), ids=list(TRANSPOSED))
@pytest.mark.parametrize("chunks", [(2, 4), (1, 8)], ids=str)
def test_a_sum_of_a_transposed_input_that_reaches_the_bound_is_numpys_in_its_layout(fn, chunks):
    with np.errstate(all="ignore"):
        assert np.isinf(np.sum(np.ascontiguousarray(_ROWS.T), axis=0)).all()
    want = _numpys_bits(fn, [_ROWS], chunks)
    assert np.all(np.isfinite(want))


@pytest.mark.parametrize("chunks", [(8, 1), (4, 2)], ids=str)
def test_a_sum_of_an_f_ordered_copy_that_reaches_the_bound_is_numpys_in_its_layout(chunks):
    # x.copy(order="F") of a C-ordered x: NumPy adds its contiguous columns pairwise (0)
    want = _numpys_bits(lambda x: x.copy(order="F").sum(0), [np.ascontiguousarray(_F_ORDERED)],
                        chunks)
    assert np.array_equal(want, [0, 0])


def _cancelling_rows():
    rng = np.random.default_rng(3)
    big = rng.standard_normal(2000) * 1e16
    big = np.concatenate([big, -big[::-1]])
    big[5] += 1.0
    return np.stack([big, big[::-1]])  # (2, 4000), C order


@pytest.mark.parametrize("fn", [lambda x: np.sum(x.T, axis=0), lambda x: np.mean(x.T, axis=0),
                                lambda x: x.T.sum(0)], ids=["sum", "mean", "method"])
@pytest.mark.parametrize("chunks", [(2, 500), (1, 1000)], ids=str)
def test_a_cancelling_sum_of_a_transposed_input_is_numpys(fn, chunks):
    # the cancellation check's second run adds x.T's contiguous axis 0 pairwise, as NumPy: 192,
    # where row after row gave 208 (/tmp/review2/d11.py)
    x = _cancelling_rows()
    want = _numpys_bits(fn, [x], chunks)
    assert want[0] == -want[1] != 0


def test_a_float16_sum_of_a_transposed_input_is_numpys():
    # float16 sums always run as NumPy's (moments.in_order): in x.T's layout, not a C block's
    x = (np.random.default_rng(0).standard_normal((64, 300)) * 30).astype(np.float16)
    _numpys_bits(lambda x: x.T.sum(0), [x], (16, 50))
    _numpys_bits(lambda x: x[:, ::2].sum(0), [x], (16, 50))  # strided, C order: as before


FLIPPED = {
    "np.sum(x[:, ::-1].T, axis=0)": lambda x: np.sum(x[:, ::-1].T, axis=0),
    "np.flip(x, 1).T.sum(0)": lambda x: np.flip(x, 1).T.sum(0),
    "(x[::-1, ::-1].T * 1.0).sum(0)": lambda x: (x[::-1, ::-1].T * 1.0).sum(0),
}


@pytest.mark.parametrize("fn", list(FLIPPED.values()), ids=list(FLIPPED))
@pytest.mark.parametrize("chunks", [(2, 4), (1, 8)], ids=str)
def test_a_sum_of_a_flipped_view_that_reaches_the_bound_is_numpys_in_its_layout(fn, chunks):
    # a negative stride: NumPy's loop reads the flipped axis in its own order, as a strided
    # one (x[:, ::-1].sum(-1) is x[:, ::-1].copy().sum(-1)), and writes an elementwise result
    # of it with positive strides; refused before (hostile review 6: softmax(x[::-1]) in a KL)
    with np.errstate(all="ignore"):
        assert np.isinf(np.sum(np.ascontiguousarray(_ROWS[:, ::-1].T), axis=0)).all()
    want = _numpys_bits(fn, [_ROWS], chunks)
    assert np.all(np.isfinite(want))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_a_kl_divergence_against_the_softmax_of_flipped_rows_replays_in_chunks_of_two():
    # hostile review 6 (common.py kl): refused on Dask in chunks of 2 since bacbd70 (the
    # softmax sum of x[::-1] reaches the KL's subtract, and a flipped view had no layout)
    x = np.random.default_rng(7).standard_normal((8, 64)).astype(np.float32)

    def kl(x):
        p, q = _softmax(x), _softmax(x[::-1])
        return (p * (np.log(p) - np.log(q))).sum(-1)

    rtol, atol = DASK.tolerance_for(np.float32)
    for x in (x, np.asfortranarray(x)):  # an F-ordered input: refused before 25d's layouts
        graph = cv.capture(kl, cv.spec(x.shape, x.dtype))
        got = graph.replay({graph.inputs[0]: x}, backend="dask", chunks=2)[graph.outputs[0]]
        assert got.dtype == np.float32 and np.allclose(got, kl(x), rtol=rtol, atol=atol)


@pytest.mark.parametrize("chunks", [(2, 4), (1, 8)], ids=str)
def test_a_sum_of_a_flipped_view_over_several_axes_that_reaches_the_bound_is_numpys(chunks):
    # NumPy's loop joins no axis of a flipped view and reads each in its own order: the run
    # that finds the order matters builds the sum again as NumPy's function on a buffer with
    # the view's strides (refused before, naming the view)
    fn = lambda x: x[:, ::-1].sum() - x[:, :1].sum() * 16  # noqa: E731
    assert np.isneginf(_numpys_bits(fn, [_ROWS], chunks))


@pytest.mark.parametrize("fn", [
    lambda a, b: a @ b, np.dot, lambda a, b: np.tensordot(a, b, 1),
    lambda a, b: np.linalg.tensordot(a, b, axes=1), lambda a, b: np.einsum("ij,jk->ik", a, b),
    lambda a, b: np.einsum("ij,jk", a, b), lambda a, b: np.vdot(a.T, b),
], ids=["matmul", "dot", "tensordot", "linalg.tensordot", "einsum", "einsum implicit", "vdot"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_product_over_a_chunked_contracted_axis_that_overflows_in_one_order_is_numpys(
        fn, dtype):
    # NumPy's sums of the products -b + b + b - b stay finite; dask's partial product of the
    # middle chunk, b + b, overflowed: inf
    big = 3e38 if dtype == np.float32 else 250
    a = np.tile(np.array([-big, big, big, -big], dtype), (4, 1))
    b = np.full((4, 4), big if dtype == np.float16 else 1, dtype)
    _numpys_bits(fn, [a, b], ((1, 2, 1), (1, 2, 1)))


def test_a_product_in_numpys_order_keeps_its_other_axes_chunked_and_numpys_bits():
    a = RNG.standard_normal((6, 8)).astype(np.float32)
    a[:, :4] = np.float32(3e38) * np.sign(a[:, :4])
    b = RNG.standard_normal((8, 5)).astype(np.float32)
    graph = cv.capture(lambda a, b: (a @ b, np.einsum("ij,jk->ik", a, b)), a, b)
    with np.errstate(all="ignore"):
        want = (a @ b, np.einsum("ij,jk->ik", a, b))
        got = graph.replay({"a": a, "b": b}, backend="dask", chunks=3)
        lazy = graph.replay({"a": a, "b": b}, backend="dask", chunks=3, compute=False)
    for name, w in zip(graph.outputs, want):
        assert np.array_equal(got[name], w, equal_nan=True)
    assert lazy["out0"].chunks == ((3, 3), (3, 2))  # what the lazy replay builds: chunked


def test_ordinary_values_over_several_chunks_are_computed_once():
    x = RNG.random((40, 30), np.float32) * 1e3  # of one sign: no sum cancels
    graph = cv.capture(lambda x: (x.sum(axis=0), np.var(x), x @ x.T), x)
    counting = CountingScheduler()
    with dask.config.set(scheduler=counting):
        got = graph.replay({"x": x}, backend="dask", chunks=7)
    assert counting.calls == 1  # no node reached the bound: no second run
    want = (x.sum(axis=0), np.var(x), x @ x.T)
    for name, w in zip(graph.outputs, want):
        np.testing.assert_allclose(got[name], w, rtol=1e-4, atol=1e-2)


_CANCELLING = RNG.standard_normal(2000) * 1e16
_CANCELLING = np.concatenate([_CANCELLING, -_CANCELLING[::-1]])
_CANCELLING[5] += 1.0  # 4,000 terms of 1e16 adding up to a number near 1 (hostile review, 9)
_WITH_A_NAN = np.insert(_CANCELLING, 7, np.nan)  # the same sum, and a NaN the nan forms skip


@pytest.mark.parametrize("chunks", [100, 7])
@pytest.mark.parametrize("fn, values", [
    (np.sum, _CANCELLING), (np.mean, _CANCELLING), (np.nansum, _CANCELLING),
    (np.sum, _CANCELLING + 1j * _CANCELLING[::-1]), (np.mean, _CANCELLING.astype(np.float32)),
    (lambda a: a.sum(axis=1), np.stack([_CANCELLING, -_CANCELLING])),
    (np.trace, np.diag(np.concatenate([_CANCELLING[:200], -_CANCELLING[199::-1]]))),
    (np.nanmean, _CANCELLING), (np.nanmean, _WITH_A_NAN),
    (np.nanmean, _CANCELLING + 1j * _CANCELLING[::-1]),
    (lambda a: np.nanmean(a, axis=1), np.stack([_WITH_A_NAN, -_WITH_A_NAN])),
    (lambda a: np.einsum("i->", a), _CANCELLING),
    (lambda a: np.einsum("ij->i", a), np.stack([_CANCELLING, -_CANCELLING])),
    (lambda a: np.einsum("ii", a), np.diag(np.concatenate([_CANCELLING[:200],
                                                          -_CANCELLING[199::-1]]))),
], ids=["sum", "mean", "nansum", "complex sum", "float32 mean", "axis 1", "trace", "nanmean",
        "nanmean with a NaN", "complex nanmean", "nanmean axis 1", "einsum i->", "einsum ij->i",
        "einsum ii"])
def test_a_sum_that_cancels_over_several_chunks_is_numpys(fn, values, chunks):
    want = _numpys_bits(fn, [values], chunks)
    name = getattr(fn, "__name__", "")
    if name in ("sum", "mean", "nansum", "nanmean") and values.dtype == np.float64:
        dasks = getattr(da, name)(da.from_array(values, chunks)).compute()
        assert not np.array_equal(dasks, want)  # what the replay gave before


@pytest.mark.parametrize("chunks", [100, 7])
def test_a_cancelling_nanmean_and_einsum_differed_from_numpy_before(chunks):
    """Review 2 on /tmp/review2/d12.py: dask.array's own nanmean and einsum("i->") of the 4,000
    cancelling terms were another value than NumPy's, silently (what the replay gave)."""
    with np.errstate(all="ignore"):
        for fn, dasks_fn, values in (
                (np.nanmean, da.nanmean, _WITH_A_NAN),
                (lambda a: np.einsum("i->", a), lambda a: da.einsum("i->", a), _CANCELLING)):
            want = _numpys_bits(fn, [values], chunks)
            assert not np.array_equal(dasks_fn(da.from_array(values, chunks)).compute(), want)


def test_a_product_of_two_operands_is_not_checked_for_cancellation():
    """Contractions of two operands keep dask.array's order (their overflow bound only): one
    run, declared, held to the contraction's bound (tests/test_dask_contractions.py)."""
    x = RNG.standard_normal((30, 40))
    graph = cv.capture(lambda a, b: np.einsum("ij,jk->ik", a, b), x, x.T)
    counting = CountingScheduler()
    with dask.config.set(scheduler=counting):
        got = graph.replay({"a": x, "b": x.T}, backend="dask", chunks=7)["out"]
    assert counting.calls == 1
    np.testing.assert_allclose(got, x @ x.T, rtol=1e-5, atol=1e-5)


def test_the_mean_of_integers_that_cancel_over_several_chunks_is_numpys():
    # the magnitudes are taken in float64: |int64 min| is int64 min again in int64
    values = np.array([np.iinfo(np.int64).min, 3, np.iinfo(np.int64).max, 5, 1, -2])
    _numpys_bits(np.mean, [values], 2)


def test_a_lazy_replay_of_a_sum_that_cancels_fails_with_the_fix():
    graph = cv.capture(lambda a: np.sum(a), _CANCELLING)
    lazy = graph.replay({"a": _CANCELLING}, backend="dask", chunks=100, compute=False)["out"]
    with pytest.raises(cv.ReplayError) as info:
        lazy.compute()
    assert isinstance(info.value.error, OrderMatters)
    assert ("OrderMatters: np.sum over several chunks cancels: its terms' magnitudes add up to "
            "far more than it (one rounding of them, ") in str(info.value)
    assert ("is beyond the tolerance of the result), so dask.array's order of addition and "
            "NumPy's can give other values there; replay with compute=True (which computes "
            "this node as NumPy does), backend='numpy', or chunks= that keep the reduced axes "
            "in one chunk") in str(info.value)


def test_a_lazy_replay_over_several_chunks_fails_the_bound_with_the_fix():
    values, chunks = ORDERS["numpy inf, dask nan"]
    graph = cv.capture(lambda a: np.sum(a), values)
    line = test_a_lazy_replay_over_several_chunks_fails_the_bound_with_the_fix.__code__
    lazy = graph.replay({"a": values}, backend="dask", chunks=chunks, compute=False)["out"]
    with pytest.raises(cv.ReplayError) as info, np.errstate(all="ignore"):
        lazy.compute()  # no second run here: the task fails, naming the node and the fix
    assert isinstance(info.value, dask_tasks.BlockError)
    assert info.value.index == graph.ops[-1].index
    assert isinstance(info.value.error, OrderMatters)
    assert str(info.value) == (
        f"replay failed at node %{graph.ops[-1].index} (sum), recorded at "
        f"{__file__}:{line.co_firstlineno + 2} in <lambda>: OrderMatters: "
        "np.sum over several chunks adds 6 terms whose magnitudes add up to inf, so a partial "
        "sum can overflow float32 in dask.array's order of addition and not in NumPy's, or "
        "in NumPy's only; replay with compute=True (which computes this node as NumPy does), "
        "backend='numpy', or chunks= that keep the reduced axes in one chunk")


def test_a_sum_of_non_finite_operands_over_several_chunks_is_not_refused():
    values = np.array([1.0, np.nan, 2.0, np.inf, 3.0, 4.0], np.float32)
    graph = cv.capture(lambda a: (np.sum(a), np.nansum(a)), values)
    got = graph.replay({"a": values}, backend="dask", chunks=2)
    assert np.isnan(got["out0"]) and got["out1"] == np.inf


def test_a_float_product_over_several_chunks_is_numpys_product_in_order():
    # dask's partial products of chunks of 2 are inf and 0: nan, where NumPy's order gives inf
    values = np.array([1e200, 1e200, 1e-200, 1e-200])
    graph = cv.capture(lambda a: (np.prod(a), a.prod(axis=0, keepdims=True)), values)
    with np.errstate(all="ignore"):
        got = graph.replay({"a": values}, backend="dask", chunks=2)
        assert got["out0"] == np.prod(values) == np.inf
        assert np.array_equal(got["out1"], values.prod(axis=0, keepdims=True))


def test_a_float16_sum_over_several_chunks_is_numpys():
    # NumPy adds float16 in float32 and rounds once; dask rounded each chunk's partial sum to
    # float16: [60000, 60000 | -60000, ...] was inf where NumPy gives 60000 (review, finding 5)
    values = np.array([60000, 60000, -60000, 1, 2, 3], np.float16)
    graph = cv.capture(lambda a: (np.sum(a), np.nansum(a, keepdims=True),
                                  a.reshape(2, 3).sum(axis=1)), values)
    with np.errstate(all="ignore"):
        got = graph.replay({"a": values}, backend="dask", chunks=2)
        want = (np.sum(values), np.nansum(values, keepdims=True), values.reshape(2, 3).sum(1))
    for name, w in zip(graph.outputs, want):
        assert got[name].dtype == np.float16 and np.array_equal(got[name], w)
