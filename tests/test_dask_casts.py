"""Issue 25 on Dask: a float cast to an integer type out of its range (NaN, an infinity, a value
beyond the type's largest) gives the integer NumPy's cast loop gives at that element's place
(its vector instructions one, its scalar tail another: float64 ``4294967300.0`` to ``uint32`` is
``0`` in a vector, ``4`` in the tail), so a block of dask.array, of another length, cast other
integers: ``np.round(a, -2)`` of a ``uint32`` ``4294967295`` (NumPy's float64 ``4294967300.0``
cast back) was ``4`` in blocks of two and ``0`` in NumPy (the differential harness's
``form.round -2[uint32]``). Now each block is tested and such a node is computed again as NumPy
does, on one block laid out as NumPy's operand (``capviz/backends/dask/casts.py``)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytest.importorskip("dask")
import dask
from helpers.dask_scheduler import CountingScheduler

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _replay(fn, a, chunks, **options):
    graph = cv.capture(fn, cv.spec(a.shape, a.dtype))
    return graph.replay({"a": a}, backend="dask", chunks=chunks, **options)["out"]


ROUNDED = [
    ("uint32", 4294967295, -2),
    ("uint32", 4294967249, -2),
    ("int8", 127, -1),
    ("int64", 2**63 - 1, -3),
    ("uint64", 2**64 - 1, -5),
]


@pytest.mark.parametrize("chunks", [2, 3, (4, 5)])
@pytest.mark.parametrize("dtype, value, decimals", ROUNDED,
                         ids=[f"{d}-{v}-{k}" for d, v, k in ROUNDED])
def test_round_of_integers_that_rounds_out_of_their_range_is_numpys(dtype, value, decimals,
                                                                      chunks):
    a = np.full((4, 8), value, dtype)
    a[0, :3] = [0, 1, 49]  # in range, beside the ones that round out of it
    want = np.round(a, decimals)
    got = _replay(lambda a: np.round(a, decimals), a, chunks)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


CAST = [(np.nan, "uint32"), (np.inf, "uint32"), (-np.inf, "int32"), (4294967300.0, "uint32"),
        (-1e20, "uint32"), (3e9, "int32"), (1e20, "int64"), (300.0, "uint8")]


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("value, dtype", CAST, ids=[f"{v}-{d}" for v, d in CAST])
def test_astype_of_floats_out_of_the_integer_range_is_numpys_at_every_place(value, dtype,
                                                                             order):
    a = np.full((4, 8), value, order=order)
    a[1, 1] = 7.0
    want = a.astype(dtype)
    for chunks in [2, 3]:
        got = _replay(lambda a: a.astype(dtype), a, chunks)
        np.testing.assert_array_equal(got, want)


def test_astype_of_a_complex_and_a_float32_out_of_range_is_numpys():
    z = np.full((4, 8), 5e9 + 1j, np.complex128)
    f = np.full((4, 8), np.nan, np.float32)
    for a, dtype in [(z, "uint32"), (f, "uint32"), (f, "int16")]:
        with pytest.warns(Warning) if a.dtype.kind == "c" else _nothing():
            want = a.astype(dtype)
        np.testing.assert_array_equal(_replay(lambda a: a.astype(dtype), a, 3), want)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_casts_in_range_run_once_and_out_of_range_twice():
    """The test rides on the cast's own tasks: values in range cost one ``dask.compute``; a
    value out of range makes the node computed again on one block (a second run)."""
    inside = np.linspace(-0.5, 4e9, 32).reshape(4, 8)
    for a, runs in [(inside, 1), (np.where(inside > 0, inside, np.nan), 2)]:
        counting = CountingScheduler()
        with dask.config.set(scheduler=counting):
            got = _replay(lambda a: a.astype(np.uint32), a, 3)
        np.testing.assert_array_equal(got, a.astype(np.uint32))
        assert counting.calls == runs


def test_a_cast_out_of_range_of_a_strided_view_is_refused_naming_it_and_the_fix_replays():
    a = np.full((4, 8), np.nan)

    def fn(a):
        return a[:, ::2].astype(np.uint32)

    graph = cv.capture(fn, cv.spec(a.shape, a.dtype))
    with pytest.raises(cv.ReplayError) as caught:
        graph.replay({"a": a}, backend="dask", chunks=(4, 8))
    message = str(caught.value)
    assert "replay failed at node %2 (astype) of float64[4,4]" in message
    assert "test_dask_casts.py" in message
    assert "OutOfRange: np.astype casts a value out of uint32's range" in message
    assert ("NumPy's cast loop follows the memory layout of the result of node %1 (getitem), "
            "which is not C-contiguous") in message
    assert message.endswith("replay with backend='numpy'")
    np.testing.assert_array_equal(graph.replay({"a": a}, backend="numpy")["out"], fn(a))


def test_a_lazy_replay_of_a_cast_out_of_range_fails_naming_compute_true():
    a = np.full((4, 8), np.nan)
    lazy = _replay(lambda a: a.astype(np.uint32), a, 3, compute=False)
    with pytest.raises(cv.ReplayError) as caught:
        lazy.compute()
    message = str(caught.value)
    assert "node %1 (astype)" in message and "test_dask_casts.py" in message
    assert "replay with compute=True (which computes this node as NumPy does)" in message
    np.testing.assert_array_equal(_replay(lambda a: a.astype(np.uint32), a, 3),
                                  a.astype(np.uint32))
