"""NumPy's running sum along one axis, computed chunk by chunk (the hostile review 3's finding 28).

Along an axis that is not the innermost in memory (a column of a C-ordered array) NumPy adds a
reduction one term after another: each output starts at ``0`` and adds the rows in order, so
``np.sum(x, 0)`` is ``np.cumsum(x, 0)[-1]``, bit for bit (``-0.0`` terms give ``0.0``, as
NumPy's start at the identity does). A sum the checks send to NumPy's order
(:mod:`capviz.backends.dask.in_order`) therefore needs no block holding the whole axis and the
ones after it (which, for a column mean of a larger-than-memory array, is the whole array): here
a chain of tasks along the axis, one per chunk, each adding its chunk's rows in order onto the
partial sums the task before it returns (``np.cumsum`` of the partial sums and the chunk, whose
last row is the new partial sums), holds a chunk at a time. The other axes keep their chunks,
each column of blocks a chain of its own. ``sum``, ``nansum`` (its NaNs replaced by 0 first,
as NumPy's ``_replace_nan`` does), ``mean`` and ``nanmean`` (the sum divided by the count as
NumPy divides, :func:`capviz.backends.dask.moments.divided`), ``var``, ``std``, ``nanvar`` and
``nanstd`` (NumPy's two passes, :func:`capviz.backends.dask.moments.variance` and
``nan_variance``, each sum a chain), of float and complex operands summed in their own type (no
``dtype=``, ``where=``, ``out=``); any other reduction in NumPy's order (a float16 one, one with
``dtype=``) runs on blocks that hold its axes whole.
"""

from __future__ import annotations

import operator
from typing import Any

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from capviz.backends.dask import moments

RUNNING = frozenset(("sum", "nansum", "mean", "nanmean", "var", "std", "nanvar", "nanstd"))
"""The reductions :func:`reduce` computes chunk by chunk."""

_PLAIN = frozenset(("axis", "keepdims", "ddof"))
_VARIANCES = frozenset(("var", "std", "nanvar", "nanstd"))


def covers(name: str, x: Any, params: dict) -> bool:
    """Whether :func:`reduce` computes reduction ``name`` of ``x`` with ``params`` (a running
    sum along one axis of a float or complex operand, added in its own type)."""
    kind = np.dtype(x.dtype)
    plain = set(params) <= _PLAIN and ("ddof" not in params or name in _VARIANCES)
    return (name in RUNNING and plain and isinstance(params.get("axis"), int)
            and x.ndim >= 2 and 0 not in x.shape and kind.kind in "fc"
            and kind != np.float16)


class _Carry:
    """A task of the chain: the partial sums (``None`` for the first chunk: zeros) plus the
    chunk's rows along ``axis``, in order (picklable)."""

    def __init__(self, axis: int, nan: bool) -> None:
        self.axis = axis
        self.nan = nan

    def __call__(self, carry: np.ndarray | None, block: np.ndarray) -> np.ndarray:
        if self.nan:
            block = np.where(np.isnan(block), block.dtype.type(0), block)
        if carry is None:
            shape = list(block.shape)
            shape[self.axis] = 1
            carry = np.zeros(shape, block.dtype)
        rows = np.concatenate([carry, block], axis=self.axis)
        sums = np.cumsum(rows, axis=self.axis, dtype=block.dtype)
        last = sums.shape[self.axis] - 1
        return np.take(sums, [last], axis=self.axis)


def chain(x: Any, axis: int, nan: bool) -> Any:
    """The running sums of ``x`` along ``axis``, kept as an axis of length one."""
    token = tokenize(x, axis, nan)
    steps = "capviz-running-" + token
    name = "capviz-running-sum-" + token
    carry = _Carry(axis, nan)
    graph: dict = {}
    for index in np.ndindex(*x.numblocks):
        before = None
        if index[axis]:
            before = (steps, *index[:axis], index[axis] - 1, *index[axis + 1:])
        graph[(steps, *index)] = (carry, before, (x.name, *index))
    last = x.numblocks[axis] - 1
    kept = x.numblocks[:axis] + (1,) + x.numblocks[axis + 1:]
    for index in np.ndindex(*kept):
        graph[(name, *index)] = (steps, *index[:axis], last, *index[axis + 1:])
    chunks = x.chunks[:axis] + ((1,),) + x.chunks[axis + 1:]
    layers = HighLevelGraph.from_collections(name, graph, dependencies=[x])
    return da.Array(layers, name, chunks, dtype=x.dtype,
                    meta=np.empty((0,) * x.ndim, x.dtype))


def reduce(name: str, x: Any, params: dict) -> Any:
    """``np.<name>(x, **params)`` in NumPy's order of addition, one chunk at a time (see
    :func:`covers` for what it takes)."""
    axis = operator.index(params["axis"]) % x.ndim
    if name in _VARIANCES:  # NumPy's two passes, each sum one row after another
        def add(values: Any, keepdims: bool) -> Any:
            total = chain(values, axis, name.startswith("nan") and values is x)
            return total if keepdims else total.squeeze(axis=axis)

        if name.startswith("nan"):
            return moments.nan_variance(x, params, name == "nanstd", add)
        return moments.variance(x, params, name == "std", add)
    nan = name.startswith("nan")
    total = chain(x, axis, nan)
    if name in ("mean", "nanmean"):
        if nan:
            count = da.sum(~da.isnan(x), axis=axis, dtype=np.intp, keepdims=True)
        else:
            count = np.intp(x.shape[axis])
        total = da.map_blocks(moments.divided, total, count, dtype=total.dtype)
    return total if params.get("keepdims") else total.squeeze(axis=axis)
