"""Histograms with a fixed number of bins: histogram, histogram_bin_edges, histogram2d,
histogramdd.

The counts depend on the data, their number does not: every shape here comes from ``bins``
(a count, or explicit edges). ``bins`` that choose the count from the data (``"auto"``...) are
refused by name. Dtypes come from one-element proxies probed with one bin per axis.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from capviz.ops import table as ops
from capviz.ops.spec import FunctionSpec, define


def _bins(params: dict) -> int:
    bins = params.get("bins", 10)
    if isinstance(bins, int):
        if bins < 1:
            raise ValueError("`bins` must be positive, when an integer")
        return bins
    return len(bins) - 1


def _histogram(shapes: list, params: dict) -> list:
    n = _bins(params)
    return [(n,), (n + 1,)]


def _bin_edges(shapes: list, params: dict) -> tuple:
    return (_bins(params) + 1,)


def _data_bins(operands: list, params: dict) -> tuple[str, str] | None:
    """recorded with a number of bins or explicit edges; bins='auto' (or another estimator's
    name) is refused (the number of bins would come from the data)"""
    bins = params.get("bins")
    if isinstance(bins, str):
        return (f"with bins={bins!r}", "the estimator chooses the number of bins from the "
                                       "data, and the output shapes with it; pass a count "
                                       "(bins=10) or explicit edges, e.g. np.histogram_bin_edges "
                                       "of sample data computed before the capture")
    return None


def _one_bin(params: dict) -> dict:
    """Probe with one bin when ``bins`` is a count (explicit edges set the edges' dtype)."""
    return {**params, "bins": 1} if isinstance(params.get("bins", 10), int) else params


def _histogram2d(shapes: list, params: dict) -> list:
    """NumPy's ``histogram2d``: ``bins`` of any length but 1 and 2 are the edges of both axes;
    then ``histogramdd`` of the pair, with its checks."""
    bins = _bins_2d(params.get("bins", 10))
    nx, ny = _bin_counts(bins, 2)
    return [(nx, ny), (nx + 1,), (ny + 1,)]


def _bins_2d(bins: Any) -> Any:
    if isinstance(bins, str):
        raise ValueError("np.histogram2d records a count, a pair of counts or edges as bins")
    if isinstance(bins, (list, tuple)) and len(bins) not in (1, 2):
        return [list(bins), list(bins)]  # NumPy's xedges = yedges = asarray(bins)
    return bins


def _one_bin_2d(params: dict) -> dict:
    """Probe with one bin per axis given by a count (explicit edges set the edges' dtype)."""
    return _one_bin_each({**params, "bins": _bins_2d(params.get("bins", 10))})


# --- histogramdd: a (N, D) sample (or a 1-d one: D = 1) -----------------------------------------


def _dimensions(shape: tuple) -> int:
    """D of NumPy's ``N, D = sample.shape`` (a 1-d or 0-d sample is one dimension)."""
    if len(shape) > 2:
        raise ValueError("too many values to unpack (expected 2)")
    return shape[1] if len(shape) == 2 else 1


def _per_axis(bins: Any, dims: int) -> list:
    if isinstance(bins, (list, tuple, str)):  # NumPy takes len(bins) of anything with one
        if len(bins) != dims:
            raise ValueError("The dimension of bins must be equal to the dimension of the "
                             "sample x.")
        return list(bins)
    return [bins] * dims


def _bin_counts(bins: Any, dims: int) -> list[int]:
    """The number of bins of each axis, with NumPy's checks of ``bins``."""
    counts = []
    for i, b in enumerate(_per_axis(bins, dims)):
        if isinstance(b, (list, tuple)):
            if any(isinstance(e, (list, tuple)) for e in b):
                raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")
            if any(lo > hi for lo, hi in itertools.pairwise(b)):
                raise ValueError(f"`bins[{i}]` must be monotonically increasing, when an "
                                 "array")
            counts.append(max(len(b) - 1, 0))
            continue
        if b < 1:
            raise ValueError(f"`bins[{i}]` must be positive, when an integer")
        if not isinstance(b, int):
            raise TypeError(f"`bins[{i}]` must be an integer, when a scalar")
        counts.append(b)
    return counts


def _histogramdd(shapes: list, params: dict) -> list:
    counts = _bin_counts(params.get("bins", 10), _dimensions(tuple(shapes[0])))
    return [tuple(counts), *[(n + 1,) for n in counts]]


def _one_bin_each(params: dict) -> dict:
    bins = params.get("bins", 10)
    if isinstance(bins, (list, tuple)):
        return {**params, "bins": [b if isinstance(b, (list, tuple)) else 1 for b in bins]}
    return {**params, "bins": 1}


def _dd_proxies(args: list) -> list:
    """A one-row sample of D columns (the rule needs D), a one-element 1-d weight (NumPy
    accepts weights of any rank for an empty sample)."""
    sample, *rest = args
    shape = tuple(sample.shape)
    rows = (1, shape[1]) if len(shape) == 2 else (1,) * len(shape)
    weights = [np.ones(1, w.dtype) if ops.is_tensor_meta(w) else w for w in rest]
    return [np.ones(rows, sample.dtype), *weights]


def _hist_and_edges(hist: Any, *edges: Any) -> tuple:
    """NumPy's ``(hist, [edges...])``."""
    return hist, list(edges)


define(FunctionSpec("histogram", ("a", "weights"), _histogram, multi=True, probe=_one_bin,
                    refuse_if=_data_bins))
define(FunctionSpec("histogram_bin_edges", ("a", "weights"), _bin_edges, probe=_one_bin,
                    refuse_if=_data_bins))
define(FunctionSpec("histogram2d", ("x", "y", "weights"), _histogram2d, multi=True,
                    probe=_one_bin_2d))
define(FunctionSpec("histogramdd", ("sample", "weights"), _histogramdd, multi=True,
                    container=_hist_and_edges, probe=_one_bin_each, proxies=_dd_proxies))
