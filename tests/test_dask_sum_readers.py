"""A float sum over several chunks that an op reads which combines values (``np.convolve``,
``np.correlate``, ``np.fft.fft``, a product, ``np.add.reduce`` of a stack of it) on Dask: built
in NumPy's order, NumPy's bits (stop 36, W=25d: silent before, /tmp/25d36/sums2.py, dask64: 4
rows, e.g. ``np.convolve(x.sum(-1), [1, -1])`` of float32 rows near 1e3 -19.875 against NumPy's
-19.9375). Its check holds the sum to its own tolerance, which scalings, picks and moves keep
(``kept_error.KEEPS``); any other reader can cancel in ways no list of consumers names."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import capviz as cv

X = (1000 + np.random.default_rng(0).random((16, 768))).astype(np.float32)
K1 = np.array([1, -1], np.float32)
D = (np.eye(16, k=1) - np.eye(16))[:15].astype(np.float32)

SPELLINGS = {
    "np.convolve(x.sum(-1), [1, -1])": lambda x: np.convolve(x.sum(-1), K1),
    "np.correlate(x.mean(-1), [1, -1], 'full')": lambda x: np.correlate(x.mean(-1), K1, "full"),
    "np.fft.fft(x.sum(-1)).real": lambda x: np.fft.fft(x.sum(-1)).real,
    "np.add.reduce(np.stack([s, -s[::-1]]), 0)": lambda x: np.add.reduce(
        np.stack([x.sum(-1), -x.sum(-1)[::-1]]), 0),
    "d @ x.sum(-1)": lambda x: D @ x.sum(-1),
    "np.convolve(2 * x.sum(-1)[::-1], [1, -1])": lambda x: np.convolve(
        2 * x.sum(-1)[::-1], K1),
}


@pytest.mark.parametrize("chunks", [64, (4, 96)], ids=str)
@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_a_sum_read_by_an_op_that_combines_values_is_numpys_bits(spelling, chunks):
    fn = SPELLINGS[spelling]
    graph = cv.capture(fn, cv.spec(X.shape, X.dtype))
    got = graph.replay({"x": X}, backend="dask", chunks=chunks)["out"]
    want = fn(X)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


def test_a_sum_read_only_by_scalings_and_moves_keeps_dask_arrays_tree():
    """Its check holds it to its own tolerance, which ``2 * s[::-1]`` keeps: no regather."""
    graph = cv.capture(lambda x: 2 * x.sum(-1)[::-1], cv.spec(X.shape, X.dtype))
    lazy = graph.replay({"x": da.from_array(X, chunks=(4, 96))}, backend="dask",
                        compute=False)["out"]
    assert not any("rechunk" in str(name) for name in lazy.dask.layers)
    assert np.allclose(lazy.compute(), 2 * X.sum(-1)[::-1], rtol=1e-5)
