"""Order statistics: ``np.quantile``/``np.percentile`` with ``method='linear'`` in
NumPy's ``_lerp`` arithmetic, and the nan forms where NumPy's result (an empty array, a type that
depends on the values) is its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax.functions.empty_operands import numpy_of_empty
from capviz.backends.jax.functions.rounding import each_rounded, narrowed
from capviz.backends.jax.trace import dtype_of, require


def _order_statistic(name: str) -> Callable[[Any], Callable]:
    """np.quantile / np.percentile (and the nan forms of integers, which hold no NaN) with
    NumPy's default ``method='linear'``: NumPy's steps (``_quantile``): the virtual indices,
    their neighbours and weights ``gamma`` computed on the host as NumPy computes them, then
    the neighbours of the sorted values interpolated as NumPy's ``_lerp``: ``next - previous``
    in the values' type (an int64 difference wraps, a float16 one rounds), ``previous + diff
    * gamma``, or ``next - diff * (1 - gamma)`` where ``gamma >= 0.5``, in the result's type
    (a Python ``q`` is weak: a float16 interpolation stays float16), NaN where a slice holds
    one. jax.numpy's interpolation differs on those values. Other methods, weights and tuple
    axes go to jax.numpy's; a nan form of floats too (the empty array: :func:`_nan_order_
    statistic`)."""
    percent = name.endswith("percentile")
    nan_form = name.startswith("nan")
    fallback = _nan_order_statistic(name) if nan_form else None

    def make(jnp: Any) -> Callable:
        other = fallback(jnp) if fallback is not None else getattr(jnp, name)

        def run(a: Any, q: Any, axis: Any = None, out: Any = None,
                overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, **params: Any) -> Any:
            a = jnp.asarray(a)
            simple = (method == "linear" and params.get("weights") is None
                      and out is None and not isinstance(axis, (tuple, list))
                      and math.prod(a.shape) > 0)
            if not simple or (nan_form and dtype_of(a).kind in "fc"):
                return other(a, q, axis, out=out, overwrite_input=overwrite_input,
                             method=method, keepdims=keepdims, **params)
            return _linear_quantile(jnp, a, q, axis, keepdims, percent)

        run.__name__ = name
        return run

    return make


def _linear_quantile(jnp: Any, a: Any, q: Any, axis: Any, keepdims: bool,
                     percent: bool) -> Any:
    weak = type(q) in (int, float)
    qs = np.true_divide(q, 100) if percent else np.asanyarray(q)
    ndim = len(a.shape)
    arr = a.ravel() if axis is None else jnp.moveaxis(a, axis % ndim, 0)
    n = arr.shape[0]
    dtype = dtype_of(arr)
    virtual = np.asanyarray((n - 1) * qs)  # NumPy's 'linear' virtual index
    previous_at, next_at = _neighbours(virtual, n, dtype)
    gamma = np.asanyarray(np.asanyarray(virtual - previous_at), dtype=virtual.dtype)
    if weak:
        gamma = float(gamma)
    else:
        gamma = gamma.reshape(virtual.shape + (1,) * (len(arr.shape) - 1))
    result_dtype = np.result_type(dtype, gamma)
    ordered = jnp.sort(arr, axis=0)
    previous, following = ordered[previous_at], ordered[next_at]
    narrow = result_dtype.kind == "f" and result_dtype.itemsize < 8
    work = np.dtype(np.float64) if narrow else result_dtype
    diff = each_rounded(jnp, following - previous, dtype)  # in the values' type, as NumPy's
    t = np.asarray(np.asarray(gamma, result_dtype), work)
    rest = np.asarray(np.asarray(1 - np.asarray(gamma), result_dtype), work)  # 1 - t in q's type
    part = each_rounded(jnp, diff.astype(work) * t, result_dtype)
    below = each_rounded(jnp, previous.astype(work) + part, result_dtype)
    part = each_rounded(jnp, diff.astype(work) * rest, result_dtype)
    above = each_rounded(jnp, following.astype(work) - part, result_dtype)
    result = jnp.where(t >= 0.5, above, below)
    result = narrowed(jnp, result, result_dtype) if narrow else result.astype(result_dtype)
    if dtype.kind == "f":
        nans = jnp.isnan(ordered[-1])
        result = jnp.where(nans, jnp.asarray(np.nan, result_dtype), result)
    if keepdims:
        kept = (1,) * ndim if axis is None else tuple(
            1 if k == axis % ndim else d for k, d in enumerate(a.shape))
        result = result.reshape(tuple(np.shape(qs)) + kept)
    return result


def _neighbours(virtual: np.ndarray, n: int, dtype: np.dtype) -> tuple:
    """NumPy's ``_get_indexes`` (``numpy/lib/_function_base_impl.py``, a private function,
    written out here): the indices before and after each virtual index, the last value's
    (-1) past the end or for a NaN index of an inexact array, the first's (0) before the
    start."""
    previous = np.asanyarray(np.floor(virtual))
    following = np.asanyarray(previous + 1)
    above = virtual >= n - 1
    previous[above], following[above] = -1, -1
    below = virtual < 0
    previous[below], following[below] = 0, 0
    if np.issubdtype(dtype, np.inexact):
        nans = np.isnan(virtual)
        previous[nans], following[nans] = -1, -1
    return previous.astype(np.intp), following.astype(np.intp)


def _nan_order_statistic(name: str) -> Callable[[Any], Callable]:
    """np.nanquantile / np.nanpercentile of an empty array: NumPy returns ``np.nanmean(a,
    axis, keepdims=keepdims)`` (NaNs, whatever ``q``, and its warning), where jax.numpy's
    gather fails: NumPy's own (:func:`.empty_operands.numpy_of_empty`)."""

    def make(jnp: Any) -> Callable:
        fn = getattr(jnp, name)

        def run(a: Any, q: Any, axis: Any = None, **params: Any) -> Any:
            a = jnp.asarray(a)
            if isinstance(axis, list):
                axis = tuple(axis)
            if math.prod(a.shape):
                wide = np.result_type(dtype_of(a), q if type(q) in (int, float)
                                      else np.asarray(q))  # NumPy's type but for all-NaN
                if wide != dtype_of(a):
                    _no_slice_all_nan(jnp, a, axis, name, wide)
                return fn(a, np.asarray(q) if isinstance(q, list) else q, axis, **params)
            return numpy_of_empty(jnp, getattr(np, name), a, q, axis, **params)

        run.__name__ = name
        return run

    return make


def _no_slice_all_nan(jnp: Any, a: Any, axis: Any, name: str, recorded: np.dtype) -> None:
    """A nan-quantile of float32 (float16) with an array ``q``, whose type in NumPy depends on
    the values: the operand's type where a slice is all NaN (NumPy's ``nanmean`` of it), the
    ``recorded`` float64 otherwise. A slice all NaN fails the replay at the node."""
    all_nan = jnp.all(jnp.isnan(a), axis=axis)
    require(~jnp.any(all_nan), f"np.{name} of {dtype_of(a)} where a slice is all NaN: "
            f"NumPy's result is then {dtype_of(a)}, not the {recorded} the graph recorded "
            "(its result type depends on the values); drop the all-NaN slices or pass q as "
            "a Python float")


FORMS: dict[str, Callable[[Any], Callable]] = {name: _order_statistic(name)
         for name in ("quantile", "percentile", "nanquantile", "nanpercentile")}
"""The forms of this module by op name, each written with NumPy's signature."""
