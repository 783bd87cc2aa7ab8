"""Sums over several but not all the axes of an operand on Dask (W=25d, stop 34): NumPy's order
(``capviz/backends/dask/several_axes.py``: the fastest reduced axes added pairwise per run, the
outer reduced ones a running sum in memory order), a few chunks at a time, where they were one
block holding the whole operand. Bits checked against NumPy itself on random shapes, subsets of
axes, memory layouts and chunkings; memory by the largest bytes one task holds (the task graph,
no clock)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytest.importorskip("dask")
import dask
import dask.array as da
from dask.callbacks import Callback

from capviz.backends.dask import several_axes

RNG = np.random.default_rng(34)
NAMES = ["sum", "mean", "nansum", "nanmean", "var", "std", "nanvar", "nanstd"]


def _laid_out(values: np.ndarray, order: tuple) -> np.ndarray:
    """``values`` held in memory with its axes in ``order`` (slowest first)."""
    return np.ascontiguousarray(values.transpose(order)).transpose(np.argsort(order))


@pytest.mark.parametrize("seed", range(4))
def test_several_axes_are_numpys_bits_for_random_shapes_layouts_and_chunks(seed):
    """Lengths around the pairwise loop's 8 and 128 (and of one, which NumPy drops), every
    reduction, float32/float64/complex, C and other memory orders, random chunks."""
    rng = np.random.default_rng(seed)
    with dask.config.set(scheduler="sync"), np.errstate(all="ignore"):
        for _ in range(40):
            ndim = int(rng.integers(2, 5))
            shape = tuple(int(n) for n in rng.choice([1, 2, 3, 5, 9, 17, 64, 65, 130], ndim))
            if np.prod(shape) > 60_000:
                continue
            axes = tuple(int(a) for a in rng.choice(ndim, int(rng.integers(1, ndim)),
                                                    replace=False))
            dtype = rng.choice([np.float32, np.float64, np.complex64, np.complex128])
            values = rng.standard_normal(shape) * 10.0 ** rng.integers(-2, 5, shape)
            if np.dtype(dtype).kind == "c":
                values = values + 1j * rng.standard_normal(shape) * 1e3
            values = values.astype(dtype)
            name = str(rng.choice(NAMES))
            if name.startswith("nan"):
                values.reshape(-1)[rng.integers(0, values.size, values.size // 7 + 1)] = np.nan
            order = tuple(int(a) for a in rng.permutation(ndim))
            host = _laid_out(values, order)
            params = {"axis": axes, **({"keepdims": True} if rng.random() < 0.3 else {})}
            chunks = tuple(int(rng.integers(1, n + 1)) for n in shape)
            x = da.from_array(values, chunks=chunks)
            assert several_axes.covers(name, x, params)
            want = getattr(np, name)(host, **params)
            got = several_axes.reduce(name, x, params, order).compute()
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes(), \
                (name, shape, axes, order, dtype, chunks)


def test_what_stays_on_one_block():
    """float16 (NumPy's half loop rounds between the inner sums and the running sum), a
    ``dtype=`` (a buffered cast), one axis or all of them (the other paths)."""
    x = da.ones((4, 5, 6), chunks=2)
    assert not several_axes.covers("sum", x.astype(np.float16), {"axis": (0, 1)})
    assert not several_axes.covers("sum", x, {"axis": (0, 1), "dtype": np.float64})
    assert not several_axes.covers("sum", x, {"axis": 0})
    assert not several_axes.covers("sum", x, {"axis": (0, 1, 2)})
    assert several_axes.covers("sum", x, {"axis": (0, 1)})


class _Held(Callback):
    """The most bytes one task holds at once: its inputs' (read before it runs: the scheduler
    releases them after) and its result's (dask's final concatenation of the output aside)."""

    def __init__(self) -> None:
        super().__init__()
        self.most = 0
        self._inputs: dict = {}

    def _pretask(self, key, dsk, state):
        self._inputs[key] = sum(_nbytes(state["cache"].get(k))
                                for k in state["dependencies"].get(key, ()))

    def _posttask(self, key, result, dsk, state, id):
        if str(key[0] if isinstance(key, tuple) else key).startswith("finalize"):
            return
        self.most = max(self.most, _nbytes(result) + self._inputs.pop(key, 0))


def _nbytes(value) -> int:
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return int(getattr(value, "nbytes", 0))


PROGRAMS = {
    "x - x.sum(axis=(0, 1))": lambda x: x - x.sum(axis=(0, 1)),
    "x - x.mean(axis=(1, 2))[:, None, None]": lambda x: x - x.mean(axis=(1, 2))[:, None, None],
    "x - x.sum(axis=(0, 2))[None, :, None]": lambda x: x - x.sum(axis=(0, 2))[None, :, None],
    "x - np.nanmean(x, axis=(0, 1))": lambda x: x - np.nanmean(x, axis=(0, 1)),
    "x - x.var(axis=(0, 2), keepdims=True)": lambda x: x - x.var(axis=(0, 2), keepdims=True),
    "x.T - x.T.sum(axis=(0, 1))": lambda x: x.T - x.T.sum(axis=(0, 1)),
}


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("label", list(PROGRAMS))
def test_a_sum_over_several_axes_feeding_a_subtraction_is_numpys_bits_a_few_chunks_at_a_time(
        label, order):
    """Each was one block holding the whole operand (checked: every case fails on main at
    the held bytes); now NumPy's bits, no task holding half of it."""
    fn = PROGRAMS[label]
    host = (RNG.standard_normal((40, 300, 7)) * 1e3 + 1e3).astype(np.float32)
    host = np.asarray(host, order=order)
    graph = cv.capture(fn, cv.spec(host.shape, "float32"))
    want = fn(host)
    with dask.config.set({"array.chunk-size": "64KiB"}):  # dask's rechunks: small pieces
        lazy = graph.replay({"x": host}, backend="dask", chunks=(5, 100, 7),
                            compute=False)["out"]
    with dask.config.set(scheduler="sync"), _Held() as held:
        got = lazy.compute()
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()
    assert held.most < host.nbytes / 2
