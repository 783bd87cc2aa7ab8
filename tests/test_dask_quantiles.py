"""Issue 25 on Dask: quantiles of an array ``q`` along an axis over several chunks. NumPy puts
the axes of ``q`` first; where ``len(q)`` equals a kept length the Dask rule took the result for
the axis replaced in place and gave a (6, 2) array for NumPy's (3, 3), silently (W=25h's dask2
row of the differential harness: 24 cases of ``np.percentile(a, [10, 50, 90], axis=1)``)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytest.importorskip("dask")

M = np.arange(12.0, dtype=np.float32).reshape(3, 4)
WITH_NAN = M.copy()
WITH_NAN[1, 2] = np.nan


@pytest.mark.parametrize("chunks", [2, (1, 2), (3, 1)], ids=str)
@pytest.mark.parametrize("fn, x", [
    (lambda a: np.percentile(a, [10, 50, 90], axis=1), M),
    (lambda a: np.quantile(a, [0.1, 0.5, 0.9], axis=-1), M.astype(np.int64)),
    (lambda a: np.nanpercentile(a, [10, 50, 90], axis=1), WITH_NAN),
    (lambda a: np.nanquantile(a, [[0.1, 0.5], [0.2, 0.9]], axis=1), WITH_NAN),
    (lambda a: np.percentile(a, [10, 50, 90], axis=0), M),
    (lambda a: np.quantile(a, [0.25, 0.75], axis=1, keepdims=True), M),
    (lambda a: np.percentile(a, 30, axis=1), M),
], ids=["percentile axis 1", "quantile int64", "nanpercentile", "nanquantile 2-d q",
        "percentile axis 0", "keepdims", "scalar q"])
def test_quantiles_of_an_array_q_along_an_axis_over_several_chunks_are_numpys(fn, x, chunks):
    want = fn(x)
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    got = graph.replay({graph.inputs[0]: x}, backend="dask", chunks=chunks)[graph.outputs[0]]
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got, want, equal_nan=True)
    lazy = graph.replay({graph.inputs[0]: x}, backend="dask", chunks=chunks, compute=False)
    assert lazy[graph.outputs[0]].shape == want.shape  # the lazy array's own chunks agree
