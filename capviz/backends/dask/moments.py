"""Reductions whose dask.array algorithm is not NumPy's, written as NumPy computes them.

* ``var``, ``std`` and their ``nan`` forms: dask.array combines per-chunk moments
  (``M2 + n * (mean_i - mean)**2``), which overflows to ``inf - inf = nan`` where NumPy's two
  passes give ``inf`` (float32 or complex values near ``finfo.max``). Here they run NumPy's own
  algorithm (``numpy/_core/_methods.py``'s ``_var``): the
  mean as ``sum / n`` (divided in NumPy's promoted type, cast back as NumPy's ``casting="unsafe"``
  does), the deviations and their squares elementwise (a complex one as the sum of its parts'
  squares), their sum divided by ``max(n - ddof, 0)``, and ``sqrt`` for ``std``; ``nanvar`` as
  NumPy's ``nanvar`` (NaNs replaced by 0 and counted out, a complex deviation squared as
  ``d * conj(d)``, a slice without degrees of freedom NaN). Only the two
  sums are dask.array's tree sums, added in another order than NumPy's pairwise sum, within the
  backend's tolerance where the variance is not tiny against its values (checked by
  :mod:`capviz.backends.dask.variance`, computed again in NumPy's order where it is); every
  other step is NumPy's, bit for bit. Over several chunks a sum can
  still overflow in one order and not the other (float32 ``[3e38, -3e38, 3e38, ...]``: NumPy
  ``inf``, dask ``nan``): where its values are large enough for that,
  :mod:`capviz.backends.dask.overflow` computes the node again as NumPy does. float16 values
  (summed in float16) run as NumPy along the axis (:func:`in_order`).
* ``mean`` as NumPy's ``_mean``: a float16 operand summed in float32 and the mean rounded to
  float16 once (dask.array sums float16 in float16, which overflows to ``inf`` where NumPy's
  mean of the same values is finite).
* ``prod`` and ``nanprod`` of floats and complex values: NumPy multiplies along the axis in
  order, and dask.array multiplies partial products, one more time by the identity ``1`` for
  each: a product that overflows or underflows in one order need not in another (``1e200 *
  1e200 * 1e-200``), and a complex product is not associative where parts are infinite
  (``(1 + 0j) * (inf + infj)`` is ``nan + nanj``). They run as NumPy on each block, the axis
  rechunked into one chunk (the ``axis`` rule), or on one block for the flattened array.
"""

from __future__ import annotations

import operator
from typing import Any

import dask.array as da
import numpy as np

MOMENTS = frozenset(("mean", "var", "std", "nanvar", "nanstd"))
"""Reductions :func:`moment` computes."""

IN_ORDER = frozenset(("prod", "nanprod"))
"""Reductions that must multiply in NumPy's order when complex (:func:`in_order`)."""


HALF_SUMS = frozenset(("sum", "nansum", "nanmean", "var", "std", "nanvar", "nanstd"))
"""Reductions that add float16 values in float16 (NumPy in float32 along its loop, rounded
once; dask.array rounds each chunk's partial sum): run as NumPy does (:func:`in_order`)."""


def in_order(name: str, x: Any, params: dict) -> bool:
    """Whether reduction ``name`` of ``x`` must run as NumPy along its axis: a float or complex
    product (``1e200 * 1e200 * 1e-200`` is ``inf`` in NumPy's order, ``1e200`` in chunks of
    one and two), or a sum of float16 values in float16 (NumPy adds float16 in float32 and
    rounds once; dask.array rounds each chunk's partial sum to float16: ``[60000, 60000 |
    -60000]`` is ``inf`` there, ``60000`` in NumPy; the sums of ``var``, ``std``, ``nanmean``
    and their kin too, where :mod:`capviz.backends.dask.overflow`'s bound would be reached by
    values of a few hundred)."""
    kind = np.dtype(x.dtype)
    if name in HALF_SUMS:
        return kind == np.float16 and params.get("dtype") in (None, np.float16, "float16")
    return name in IN_ORDER and kind.kind in "fc"


def divided(total: np.ndarray, count: Any) -> np.ndarray:
    """NumPy's ``true_divide(total, count, out=total, casting="unsafe")`` on a new array."""
    return np.true_divide(total, count, out=np.empty_like(total), casting="unsafe")


def _axes(x: Any, axis: Any) -> tuple:
    if axis is None:
        return tuple(range(x.ndim))
    return tuple(operator.index(a) % x.ndim
                 for a in ((axis,) if isinstance(axis, int) else axis))


def moment(name: str, x: Any, params: dict) -> Any | None:
    """``np.<name>(x, **params)`` for ``name`` in :data:`MOMENTS`, as NumPy computes it, or
    ``None`` for an operand this does not cover (run as NumPy on one block)."""
    if x.ndim == 0 or 0 in x.shape:
        return None
    if name == "mean":
        return mean(x, params)
    root = name.endswith("std")
    if name.startswith("nan") and np.dtype(x.dtype).kind in "fc":
        return nan_variance(x, params, root)
    return variance(x, params, root)


def _count(x: Any, axes: tuple) -> np.intp:
    """NumPy's ``_count_reduce_items``: the number of elements reduced, an ``intp``."""
    count = np.intp(1)
    for a in axes:
        count = np.intp(count * x.shape[a])
    return count


def mean(x: Any, params: dict) -> Any:
    """``np.mean(x, **params)`` as NumPy computes it: the sum (of float16 in float32, of
    integers in float64) divided by the count in NumPy's promoted type, cast back."""
    axes = _axes(x, params.get("axis"))
    dtype = params.get("dtype")
    kind = np.dtype(x.dtype)
    half = dtype is None and kind == np.float16
    if dtype is None:
        dtype = np.dtype("f8") if kind.kind in "biu" else np.dtype("f4") if half else None
    total = da.sum(x, axis=axes, dtype=dtype, keepdims=bool(params.get("keepdims")))
    result = total.map_blocks(divided, _count(x, axes), dtype=total.dtype)
    return result.astype(np.float16) if half else result


def variance(x: Any, params: dict, root: bool, add: Any = None) -> Any | None:
    """``np.var(x, **params)`` (``np.std`` with ``root``) as NumPy computes it; ``None`` for
    a ``dtype=`` that changes the result's kind (run as NumPy on one block). ``add(values,
    keepdims)``: the sum over the reduced axes (dask.array's tree sum by default; NumPy's
    running sum chunk by chunk in :mod:`capviz.backends.dask.running`)."""
    axes = _axes(x, params.get("axis"))
    dtype = params.get("dtype")
    if dtype is None and np.dtype(x.dtype).kind in "biu":
        dtype = np.dtype("f8")
    elif dtype is not None:
        dtype = np.dtype(dtype)
        if dtype.kind not in "f" or np.dtype(x.dtype).kind == "c":
            return None  # an integer or complex accumulator: NumPy on one block
    count = _count(x, axes)
    if add is None:
        def add(values: Any, keepdims: bool) -> Any:
            return da.sum(values, axis=axes, dtype=dtype, keepdims=keepdims)
    total = add(x, True)
    mean = total.map_blocks(divided, count, dtype=total.dtype)
    deviation = x - mean
    if np.dtype(deviation.dtype).kind == "c":
        squares = da.square(deviation.real) + da.square(deviation.imag)
    else:
        squares = da.square(deviation)
    result = add(squares, bool(params.get("keepdims")))
    dof = np.maximum(count - params.get("ddof", 0), 0)
    result = result.map_blocks(divided, dof, dtype=result.dtype)
    return da.sqrt(result) if root else result


def _nan_deviation(block: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """NumPy's ``nanvar`` deviations of a block: ``x - mean``, 0 where ``x`` is NaN."""
    return np.where(np.isnan(block), block.dtype.type(0), block - mean)


def nan_variance(x: Any, params: dict, root: bool, add: Any = None) -> Any | None:
    """``np.nanvar(x, **params)`` of floats or complex values (``np.nanstd`` with ``root``) as
    NumPy computes it; ``None`` with ``dtype=`` (run as NumPy on one block). ``add(values,
    keepdims)``: the sum over the reduced axes (as :func:`variance`'s)."""
    if params.get("dtype") is not None:
        return None
    axes = _axes(x, params.get("axis"))
    keepdims = bool(params.get("keepdims"))
    zero = np.dtype(x.dtype).type(0)
    nan = da.isnan(x)
    count = da.sum(~nan, axis=axes, dtype=np.intp, keepdims=True)
    if add is None:
        def add(values: Any, keepdims: bool) -> Any:
            return da.sum(values, axis=axes, keepdims=keepdims)
        total = add(da.where(nan, zero, x), True)
    else:  # NaNs replaced by 0 as the chain adds (no array of replaced values held)
        total = add(x, True)
    mean = da.map_blocks(divided, total, count, dtype=total.dtype)
    deviation = da.map_blocks(_nan_deviation, x, mean, dtype=x.dtype)
    if np.dtype(deviation.dtype).kind == "c":
        squares = (deviation * deviation.conj()).real
    else:
        squares = deviation * deviation
    result = add(squares, keepdims)
    dof = (count if keepdims else count.squeeze(axis=axes)) - params.get("ddof", 0)
    result = da.map_blocks(divided, result, dof, dtype=result.dtype)
    result = da.where(dof <= 0, np.dtype(result.dtype).type(np.nan), result)
    return da.sqrt(result) if root else result
