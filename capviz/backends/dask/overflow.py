"""Float sums over several chunks, checked where the order of addition can change the result.

dask.array adds each chunk's partial sum, then the partial sums, where NumPy adds pairwise along
the axis in memory order. The two orders round differently (within the backend's tolerance),
and a sum whose partial sums overflow in one order need not overflow in the other: float32
``[3e38, -3e38, 3e38, 3e38, -3e38, -3e38]`` in chunks of 2 gives ``nan`` where NumPy gives
``inf``. A reduction whose reduced axes span several chunks therefore fails at its node when
its result is NaN while its operand is finite (for the ``nan`` forms: holds no infinity, NaNs
being left out): that NaN is an infinity of each sign met in dask's order, and NumPy's result
there may be ``inf``, ``nan`` or a number. An infinity from finite values of one sign is every
order's (up to rounding at the threshold), so it is left as it is. Not caught: a sum of both
signs that overflows in NumPy's order and stays finite, or infinite of one sign, in dask's.
One chunk along the reduced axes is NumPy's own sum, unchecked.
"""

from __future__ import annotations

import operator
from typing import Any

import dask.array as da
import numpy as np

SUMS = frozenset(("sum", "nansum", "mean", "nanmean", "var", "std", "nanvar", "nanstd"))
"""Reductions whose result a sum in dask's order can make non-finite."""


def split_axes(x: Any, axis: Any) -> tuple | None:
    """The reduced axes of ``x`` when one of them spans several chunks, else ``None``."""
    if not x.ndim:
        return None
    axes = tuple(range(x.ndim)) if axis is None else tuple(
        operator.index(a) % x.ndim for a in ((axis,) if isinstance(axis, int) else axis))
    return axes if any(len(x.chunks[a]) > 1 for a in axes) else None


class _Finite:
    """A task's check: the result is no NaN wherever the operand was finite (picklable)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, result: np.ndarray, finite: np.ndarray) -> np.ndarray:
        bad = finite & np.isnan(result)
        if np.any(bad):
            raise FloatingPointError(
                f"np.{self.name} over several chunks is nan from finite values: dask.array "
                "adds the chunks' partial sums in another order than NumPy, and a partial sum "
                "that overflows in one order need not in the other, so NumPy's result may be "
                "another; replay with backend='numpy', or with chunks= that keep the reduced "
                "axes in one chunk")
        return result


def checked(name: str, x: Any, params: dict, result: Any, guard: Any) -> Any:
    """``result`` of reduction ``name`` of ``x``, failing at the node (through ``guard``, which
    names it) where :mod:`this module's <capviz.backends.dask.overflow>` rule applies."""
    if name not in SUMS or np.dtype(x.dtype).kind not in "fc" or \
            np.dtype(result.dtype).kind not in "fc":
        return result
    axes = split_axes(x, params.get("axis"))
    if axes is None:
        return result
    plain = ~da.isinf(x) if name.startswith("nan") else da.isfinite(x)
    finite = plain.all(axis=axes, keepdims=bool(params.get("keepdims")))
    if tuple(finite.shape) != tuple(result.shape):
        finite = finite.reshape(result.shape)
    finite = finite.rechunk(result.chunks)
    return da.map_blocks(guard(_Finite(name)), result, finite, dtype=result.dtype,
                         meta=np.empty((0,) * result.ndim, result.dtype))
