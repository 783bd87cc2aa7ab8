"""Sums over several chunks that cancel, checked as on the JAX backend and computed as NumPy.

dask.array adds each chunk's partial sum, then the partial sums; NumPy adds pairwise along a
contiguous axis, row after row along a strided one. Each order rounds its partial sums
otherwise. Where a sum is of the size of its terms the two agree within the backend's
tolerance; where it cancels (4,000 float64 terms of 1e16 adding up to 192), the roundings are
all that is left: dask.array gives 0 in chunks of 100, -192 in chunks of 7.

**The rule** (the JAX backend's, ``capviz/backends/jax/cancellation.py``): an output ``s`` of
``sum``, ``nansum``, ``mean``, ``nanmean``, ``trace`` or an ``einsum`` of one operand (a sum:
``np.einsum("i->", x)``) over a reduced axis that spans several chunks (each part of a complex
one apart) reaches it where

    r * eps * S > atol + rtol * |s|

``S`` the same reduction of the finite terms' magnitudes (a mean's: their sum over the count of
its terms, a ``nanmean``'s over the count of its non-NaN terms, per output), ``eps`` that of
the type the sum adds in (float32 for a float16 ``mean``), ``(rtol, atol)`` the backend's
tolerance for the result's dtype, ``r`` the roundings of NumPy's order (the JAX backend's
rule): ``r = 1`` where NumPy adds each output pairwise, along its inner loop (the reduced axes
last in its operand's memory order, all of them for a contiguous operand, a trace's diagonal:
:func:`capviz.backends.dask.in_order.pairwise`), ``r = n`` (the count of its terms) where it
keeps a running sum, one term after another (along an axis that is not last in memory, row after
row; ``einsum``'s own loops), or where the operand's layout is not known. The sum's roundings
are beyond the tolerance of the result there: a float32 column sum of 40,000 values near 1 is
0.003% off in chunks of 2,000 rows, NumPy's running sum drifting (the hostile review 2's
finding 10, as on JAX). Where NumPy keeps a running sum, a block that holds the reduced axes
whole but cuts the axes after them adds otherwise too (a ``(n, 1)`` block's column is contiguous,
added pairwise) and is checked (:func:`capviz.backends.dask.overflow.blocks_add_otherwise`).

The same ``S`` gives these sums their overflow bound, per output: no
partial sum of ``n`` terms can overflow in any order while ``S * exp(n * eps) < finfo.max`` (see
:mod:`capviz.backends.dask.overflow`, whose one-max bound the other reductions take). Where
either holds, the node's task fails with
:class:`~capviz.backends.dask.overflow.OrderMatters`, and the replay computes the node again in
NumPy's order (:mod:`capviz.backends.dask.in_order`): NumPy's result, for the price of a second
run. A pairwise sum of terms of one sign never reaches it (``eps < rtol``); a running one of more
than about 80 float32 terms does (``n * eps`` passes ``rtol``), as do float32 sums of zero-mean
values past about 10,000 terms, whose roundings can differ by more than the tolerance.
``var``/``std`` take the rule of :mod:`capviz.backends.dask.variance`. The contractions of two
operands (``matmul``, ``dot``, ``einsum("ij,jk")``...) are declared, not checked (their
magnitudes would be a second product of the same size, and NumPy's own result is its BLAS's
order): held to the componentwise bound every order meets,
:mod:`capviz.backends.contraction_bound`, by ``compare`` and the differential harness; their
overflow bound is checked.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import dask.array as da
import numpy as np

from capviz.backends.dask import contractions
from capviz.backends.dask.overflow import OrderMatters, blocks_add_otherwise

CANCELS = frozenset(("sum", "nansum", "mean", "nanmean", "trace", "einsum"))
"""The reductions checked (``einsum`` of one operand only: :func:`covers`)."""


def covers(name: str, args: tuple) -> bool:
    """Whether node ``name`` of ``args`` is a sum this module checks."""
    return name in CANCELS and (name != "einsum" or len(args) == 1)


class _Cancels:
    """A task's check: no output's terms' magnitudes, rounded once, reach beyond the tolerance
    of the output, nor, grown by the roundings of ``n`` additions, the dtype's largest value
    (the overflow bound of :mod:`capviz.backends.dask.overflow`, per output; picklable)."""

    def __init__(self, name: str, eps: float, n: int, count: int,
                 tolerance: tuple[float, float], largest: float, rounds: int = 1) -> None:
        self.name = name
        self.eps = eps
        self.rounds = rounds  # 1 where NumPy adds pairwise, n for its running sum
        self.count = count  # a mean's: its terms' magnitudes' sum over the count (a nanmean's
        # count is per output, the task's third operand)
        self.rtol, self.atol = tolerance
        self.n = n
        self.limit = largest * math.exp(-n * eps)

    def __call__(self, result: np.ndarray, magnitudes: np.ndarray,
                 counts: np.ndarray | None = None) -> np.ndarray:
        count = self.count if counts is None else np.maximum(counts, 1)
        complex_ = result.dtype.kind == "c"
        for part, total in ((result.real, magnitudes.real), (result.imag, magnitudes.imag)) \
                if complex_ else ((result, magnitudes),):
            with np.errstate(all="ignore"):
                overflows = ~(total < self.limit)
                cancels = self.rounds * self.eps * total / count \
                    > self.atol + self.rtol * np.abs(part)
            if np.any(overflows):
                raise OrderMatters(
                    f"np.{self.name} over several chunks adds {self.n} terms whose magnitudes "
                    f"add up to {np.max(total):.3g}, so a partial sum can overflow "
                    f"{result.dtype} in dask.array's order of addition and not in NumPy's, or "
                    "in NumPy's only; "
                    f"{_FIX}")
            if np.any(cancels):
                raise OrderMatters(
                    f"np.{self.name} over several chunks cancels: its terms' magnitudes add up "
                    f"to far more than it ({_roundings(self.rounds)} of them, "
                    f"{np.max(self.rounds * self.eps * total / count):.3g}, is beyond the "
                    "tolerance of the result), so dask.array's order of addition and NumPy's "
                    f"can give other values there; {_FIX}")
        return result


def _roundings(rounds: int) -> str:
    if rounds == 1:
        return "one rounding"
    return f"{rounds} roundings, NumPy's running sum one term after another,"


_FIX = ("replay with compute=True (which computes this node as NumPy does), backend='numpy', "
        "or chunks= that keep the reduced axes in one chunk")


def _chunked(name: str, x: Any, params: dict, pairwise: bool) -> bool:
    if not x.ndim or 0 in x.shape:
        return False
    if name == "einsum":
        axes: Any = contractions.contracted(name, (x,), params)[0][0]
    elif name == "trace":
        axes = (params.get("axis1", 0), params.get("axis2", 1))
    else:
        axes = params.get("axis")
        axes = range(x.ndim) if axes is None else (axes,) if isinstance(axes, int) else axes
    return blocks_add_otherwise(x, tuple(operator.index(a) % x.ndim for a in axes), pairwise)


class _FiniteSum:
    """A block's sum of its finite values' magnitudes in ``real`` (dask.array's chunk step:
    one pass, a second only where an infinity or NaN is met; picklable)."""

    def __init__(self, real: np.dtype) -> None:
        self.real = real

    def __call__(self, block: np.ndarray, axis: Any = None, keepdims: bool = False) -> Any:
        values = np.abs(block.astype(self.real, copy=False))  # |int64 min| wraps in int64
        total = np.sum(values, axis=axis, keepdims=keepdims, dtype=self.real)
        if not np.isfinite(total).all():
            total = np.sum(values, axis=axis, keepdims=keepdims, dtype=self.real,
                           where=np.isfinite(values))
        return total


def _summed(blocks: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return np.sum(blocks, axis=axis, keepdims=keepdims)


def _magnitudes(name: str, part: Any, params: dict, real: np.dtype) -> Any:
    """The sum (of ``trace``: along the diagonal; of ``einsum``: by its subscripts) of
    ``part``'s finite magnitudes, in ``real``."""
    if name == "einsum":
        values = da.fabs(part).astype(real)
        values = da.where(da.isfinite(values), values, real.type(0))
        return da.einsum(params["subscripts"], values, dtype=real)
    if name == "trace":
        values = da.fabs(part).astype(real)
        values = da.where(da.isfinite(values), values, real.type(0))
        return da.trace(values, params.get("offset", 0), params.get("axis1", 0),
                        params.get("axis2", 1), dtype=real)
    axis = params.get("axis")
    return da.reduction(part, _FiniteSum(real), _summed, axis=axis,
                        keepdims=bool(params.get("keepdims")), dtype=real,
                        meta=np.empty((), real))


def checked(name: str, x: Any, params: dict, result: Any, guard: Any,
            tolerance: tuple[float, float], pairwise: bool = True) -> Any:
    """``result`` of reduction ``name`` of ``x``, failing at the node (through ``guard``) with
    ``OrderMatters`` where :mod:`this module's <capviz.backends.dask.cancellation>` rule holds;
    ``tolerance``: the backend's ``(rtol, atol)`` for the result's dtype; ``pairwise``: whether
    NumPy adds each output pairwise (one rounding), else one term after another (``n``)."""
    kind = np.dtype(result.dtype)
    if name not in CANCELS or kind.kind not in "fc" or not _chunked(name, x, params, pairwise):
        return result
    real = np.dtype(np.finfo(kind).dtype)
    adds_in = np.float32 if real == np.float16 and name in _MEANS else real
    if np.dtype(x.dtype).kind == "c":
        parts = [_magnitudes(name, x.real, params, real), _magnitudes(name, x.imag, params, real)]
        magnitudes = parts[0] + 1j * parts[1] if kind.kind == "c" else parts[0] + parts[1]
    else:
        magnitudes = _magnitudes(name, x, params, real)
    if tuple(magnitudes.shape) != tuple(result.shape):
        magnitudes = magnitudes.reshape(result.shape)
    magnitudes = magnitudes.rechunk(result.chunks)
    if name == "einsum":
        n = contractions.contracted(name, (x,), params)[1]
    elif name == "trace":
        axes: Any = (params.get("axis1", 0), params.get("axis2", 1))
        n = min(x.shape[operator.index(a) % x.ndim] for a in axes)
    else:
        axes = params.get("axis")
        axes = range(x.ndim) if axes is None else (axes,) if isinstance(axes, int) else axes
        n = math.prod(x.shape[operator.index(a) % x.ndim] for a in axes)
    adds = np.finfo(adds_in)
    check = _Cancels(name, float(adds.eps), n, n if name == "mean" else 1, tolerance,
                     float(adds.max), 1 if pairwise else n)
    index = tuple(range(result.ndim))
    pairs = [result, index, magnitudes, index]
    if name == "nanmean":
        pairs += [_counts(x, params, result), index]
    return da.blockwise(guard(check), index, *pairs, dtype=result.dtype,
                        meta=np.empty((0,) * result.ndim, result.dtype))


_MEANS = frozenset(("mean", "nanmean"))


def _counts(x: Any, params: dict, result: Any) -> Any:
    """A ``nanmean``'s count of non-NaN terms per output, chunked as ``result``."""
    counts = da.sum(~da.isnan(x), axis=params.get("axis"),
                    keepdims=bool(params.get("keepdims")), dtype=np.int64)
    if tuple(counts.shape) != tuple(result.shape):
        counts = counts.reshape(result.shape)
    return counts.rechunk(result.chunks)
