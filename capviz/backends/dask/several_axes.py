"""NumPy's sum over several but not all the axes of an operand, a few chunks at a time (W=25d,
stop 34; these ran on one block holding the whole operand).

NumPy's reduction iterates its operand in memory order (its axes from the slowest to the
fastest: C order, or a transposed or F-ordered operand's own, :mod:`capviz.backends.dask.in_order`),
drops the axes of length one and joins neighbouring axes that are both reduced or both kept (a
contiguous operand's strides always join; the result, allocated by the iterator, follows the
operand's order). Its loop is then:

- where the fastest axes are reduced (a group ``G``), the inner loop adds each run of ``G``'s
  values pairwise onto its output (``pairwise_sum``, as :mod:`capviz.backends.dask.pairwise`):
  the same as ``np.add.reduce`` of that run, a row of the operand with ``G`` merged;
- the outer reduced axes add those sums (or, where the fastest axes are kept, the values) onto
  each output one after another, in the memory order of the reduced axes: a running sum, as
  ``np.cumsum`` along them merged, from ``0``.

So ``np.sum(x, axis=(0, 2))`` of a C-ordered ``(a, b, c)`` array is, for each ``j``, ``0 +
pw(x[0, j, :]) + pw(x[1, j, :]) + ...``, and ``np.sum(x, axis=(0, 1))`` the running sum of the
rows of ``x.reshape(a * b, c)``. Checked bit for bit against ``np.sum`` on 2,607 random shapes
(lengths 1 to 300 around the 8 and 128 of the pairwise loop), subsets of axes, memory orders and
float32, float64 and complex64 values (``tests/test_dask_several_axes.py`` keeps a sample).

Here the inner sums run per block holding ``G`` whole (rows of it, as many as a chunk held
values, at least one), and the running sum is
:func:`capviz.backends.dask.running.chain`'s chain of tasks along the merged outer reduced axes
(the later of them rechunked whole, dask.array's reshape), a chunk at a time. ``sum``,
``mean``, ``nansum``, ``nanmean`` (NumPy's copy with NaNs replaced by 0, the count of the
others), ``var``, ``std``, ``nanvar``, ``nanstd`` (NumPy's two passes,
:mod:`capviz.backends.dask.moments`, each sum so), of float32, float64, complex64 and
complex128 operands with no ``dtype=`` (a cast goes through NumPy's buffer, whose splits here are
not written) and not float16 (NumPy's half loop rounds its float32 total to float16 at each call
of the inner loop, between the inner sums and the running sum): those stay on one block.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import dask.array as da
import numpy as np

from capviz.backends.dask import moments, pairwise, running

REDUCTIONS = frozenset(("sum", "mean", "nansum", "nanmean", "var", "std", "nanvar", "nanstd"))
"""The reductions :func:`reduce` computes over several axes."""

_PLAIN = frozenset(("axis", "keepdims", "ddof"))
_VARIANCES = frozenset(("var", "std", "nanvar", "nanstd"))
_TYPES = tuple(np.dtype(t) for t in ("f4", "f8", "c8", "c16"))


def _axes(x: Any, axis: Any) -> tuple | None:
    if axis is None or isinstance(axis, int):
        return None
    try:
        axes = tuple(operator.index(a) % x.ndim for a in axis)
    except TypeError:
        return None
    return axes if len(set(axes)) == len(axes) else None


def covers(name: str, x: Any, params: dict) -> bool:
    """Whether :func:`reduce` computes reduction ``name`` of ``x`` with ``params``: over a
    tuple of several but not all of its axes (see the module docstring for what it takes)."""
    if name not in REDUCTIONS or not set(params) <= _PLAIN or x.ndim < 2 or 0 in x.shape:
        return False
    if "ddof" in params and name not in _VARIANCES:
        return False
    axes = _axes(x, params.get("axis"))
    return axes is not None and 0 < len(axes) < x.ndim and np.dtype(x.dtype) in _TYPES


class _Inner:
    """A block's task (picklable): NumPy's pairwise sum of each run of its last ``k`` axes
    (NumPy's loop over a C-contiguous row)."""

    def __init__(self, k: int) -> None:
        self.k = k

    def __call__(self, block: np.ndarray) -> np.ndarray:
        rows = np.ascontiguousarray(block)
        rows = rows.reshape(rows.shape[:rows.ndim - self.k] + (-1,))
        return np.add.reduce(rows, axis=-1)


def _replaced(block: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(block), block.dtype.type(0), block)


def summed(x: Any, axes: tuple, order: tuple | None, nan: bool) -> Any:
    """``np.sum(x, axis=axes, keepdims=True)`` in NumPy's order, ``x`` laid out in memory in
    ``order`` (``None``: C order); ``nan``: of NumPy's copy with NaNs replaced by 0."""
    if nan:
        x = da.map_blocks(_replaced, x, dtype=x.dtype)
    shape = tuple(x.shape)
    order = tuple(range(x.ndim)) if order is None else tuple(order)
    kept_shape = tuple(1 if a in axes else n for a, n in enumerate(shape))
    memory = [a for a in order if shape[a] != 1]
    if not any(a in axes for a in memory):  # only axes of length one: each output one term
        return da.sum(x, axis=axes, keepdims=True)
    ones = [a for a in range(x.ndim) if shape[a] == 1]
    y = x.transpose(memory + ones)
    if ones:
        y = y.reshape([shape[a] for a in memory])
    if all(a in axes for a in memory):  # every axis longer than one: NumPy's one tree
        return pairwise.total(pairwise.flat(y)).reshape(kept_shape)
    inner = 0
    while memory[len(memory) - 1 - inner] in axes:
        inner += 1
    current = list(memory)
    if inner:
        positions = tuple(range(len(memory) - inner, len(memory)))
        limit = max(math.prod(c[0] for c in x.chunks), 1) * x.dtype.itemsize
        kept = {p: "auto" for p in range(len(memory) - inner)}  # blocks of a chunk's size
        y = y.rechunk({**kept, **{p: -1 for p in positions}}, block_size_limit=limit)
        y = da.map_blocks(_Inner(inner), y, drop_axis=positions, dtype=y.dtype)
        current = memory[:len(memory) - inner]
    outer = [i for i, a in enumerate(current) if a in axes]
    if outer:
        others = [i for i, a in enumerate(current) if a not in axes]
        t = y.transpose(outer + others)
        if len(outer) > 1:
            t = t.reshape((math.prod(t.shape[:len(outer)]),) + t.shape[len(outer):])
        y = running.chain(t, 0, False)[0]
        current = [current[i] for i in others]
    kept = [a for a in range(x.ndim) if a not in axes and shape[a] != 1]
    y = y.transpose([current.index(a) for a in kept]).reshape(kept_shape)
    # the chunks dask.array's own sum would give (what a mean's count is divided block by block)
    return y.rechunk(tuple((1,) if a in axes else x.chunks[a] for a in range(x.ndim)))


def reduce(name: str, x: Any, params: dict, order: tuple | None = None) -> Any:
    """``np.<name>(x, **params)`` over several of ``x``'s axes in NumPy's order (see
    :func:`covers`), ``x`` laid out in memory in ``order`` (``None``: C order)."""
    axes = _axes(x, params["axis"])
    keepdims = bool(params.get("keepdims"))
    nan = name.startswith("nan")

    def add(values: Any, keep: bool) -> Any:
        total = summed(values, axes, order, nan and values is x)
        return total if keep else total.squeeze(axis=axes)

    if name in ("var", "std"):
        return moments.variance(x, params, name == "std", add)
    if name in ("nanvar", "nanstd"):
        return moments.nan_variance(x, params, name == "nanstd", add)
    total = summed(x, axes, order, nan)
    if name in ("mean", "nanmean"):
        count: Any = np.intp(math.prod(x.shape[a] for a in axes))
        if nan:
            count = da.sum(~da.isnan(x), axis=axes, dtype=np.intp, keepdims=True)
        total = da.map_blocks(moments.divided, total, count, dtype=total.dtype)
    return total if keepdims else total.squeeze(axis=axes)
