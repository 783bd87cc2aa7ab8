"""NumPy's pairwise sum over all the axes of an operand, as a tree of tasks over its chunks (the
hostile review 4's finding 8).

NumPy's iterator merges the axes of a contiguous operand reduced over all of them into one inner
loop over its memory, and adds its ``n`` terms by ``pairwise_sum`` onto the identity ``+0.0``
(``numpy/_core/src/umath/loops_utils.h.src``; the JAX backend's
:mod:`capviz.backends.jax.numpy_order` writes the same order): up to 128 terms, eight
accumulators (a leaf); more, the two halves split at ``n2 = n // 2 - (n // 2) % 8``, each summed
so, then added. The tree depends on ``n`` only, so every subtree whose terms lie in one chunk is
NumPy's own ``np.sum`` of that slice of the chunk (its leaf algorithm and its splits are the
same; the identity it adds changes a zero's sign only, which the final ``0.0 +`` erases), and
the few subtrees that straddle a chunk boundary are added as NumPy adds them, one task per node
(a leaf that straddles one gathers its at most 128 terms). So the sum is NumPy's bits holding a
chunk at a time, where NumPy's order of a sum over all axes was one block holding the whole
operand (``x.sum() - x[:1000].sum() * 400`` of a 12.2 MiB dask array in 0.6 MiB chunks peaked
at 12.3 MiB, bare dask.array 0.3 MiB).

The operand's chunks are first made runs of its memory (:func:`flat`): its axes permuted into
NumPy's memory order (C order; a transposed or F-ordered operand's own,
:mod:`capviz.backends.dask.in_order`), the axes after the first rechunked whole (as many of the
first axis's rows per chunk as the original chunks held values, at least one), and flattened.
The tasks: about ``log2(n / 128)`` per chunk boundary, and one ``np.sum`` per maximal subtree
inside a chunk. float32 and float64 ``sum`` and ``mean`` (the sum divided by the count as NumPy
divides: :func:`capviz.backends.dask.moments.divided`), and ``var``/``std`` (NumPy's two passes,
:func:`capviz.backends.dask.moments.variance`, each sum this tree), with no ``dtype=``,
``where=``, ``out=``; a complex sum (whose pairwise tree adds its parts otherwise) and the nan
forms run as before.
"""

from __future__ import annotations

import bisect
import math
import operator
from typing import Any

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from capviz.backends.dask import moments

REDUCTIONS = frozenset(("sum", "mean", "var", "std"))
"""The reductions :func:`reduce` computes over all axes."""

_PLAIN = frozenset(("axis", "keepdims", "ddof"))
_LEAF = 128


def covers(name: str, x: Any, params: dict) -> bool:
    """Whether :func:`reduce` computes reduction ``name`` of ``x`` with ``params``: over all the
    axes of a float32 or float64 operand, added in its own type."""
    if name not in REDUCTIONS or not set(params) <= _PLAIN or x.ndim == 0 or 0 in x.shape:
        return False
    if "ddof" in params and name not in ("var", "std"):
        return False
    if np.dtype(x.dtype) not in (np.float32, np.float64):
        return False
    axis = params.get("axis")
    if axis is None:
        return True
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return sorted(operator.index(a) % x.ndim for a in axes) == list(range(x.ndim))


def flat(x: Any, order: tuple | None = None) -> Any:
    """``x``'s values in NumPy's memory order (``order``: its axes from the slowest to the
    fastest; ``None``: C order) as a 1-d dask array whose chunks are runs of that order."""
    if order is not None:
        x = x.transpose(order)
    if x.ndim == 1:
        return x
    trailing = math.prod(x.shape[1:])
    held = max(math.prod(c[0] for c in x.chunks), 1)  # the values a chunk held
    rows = max(held // max(trailing, 1), 1)
    runs = x.rechunk({0: rows, **{a: -1 for a in range(1, x.ndim)}})
    return runs.reshape(-1)


class _Parts:
    """A chunk's task (picklable): NumPy's sum of each of its ``sums`` ranges (subtrees that lie
    in the chunk), and a copy of each of its ``terms`` ranges (the parts of the leaves, of at
    most 128 terms, that straddle a chunk boundary)."""

    def __init__(self, sums: list, terms: list) -> None:
        self.sums = sums
        self.terms = terms

    def __call__(self, block: np.ndarray) -> tuple:
        return ([np.add.reduce(block[start:stop]) for start, stop in self.sums],
                [block[start:stop].copy() for start, stop in self.terms])


class _Tree:
    """The one task that adds the chunks' parts up NumPy's tree (picklable): ``plan``, a nested
    tuple per node: ``("sum", j, k)`` the k-th subtree sum of chunk ``j``, ``("leaf", (j, k),
    ...)`` a straddling leaf's parts, ``("add", left, right)``; then the reduction's ``+0.0``."""

    def __init__(self, plan: tuple, dtype: np.dtype) -> None:
        self.plan = plan
        self.dtype = dtype

    def __call__(self, *parts: tuple) -> np.ndarray:
        def value(node: tuple) -> Any:
            if node[0] == "sum":
                return parts[node[1]][0][node[2]]
            if node[0] == "leaf":  # at most 128 terms: NumPy's own leaf
                return np.add.reduce(np.concatenate([parts[j][1][k] for j, k in node[1:]]))
            return value(node[1]) + value(node[2])  # two scalars of the type: one IEEE add

        return np.asarray(self.dtype.type(0) + value(self.plan), dtype=self.dtype)


def total(values: Any) -> Any:
    """NumPy's sum of 1-d dask array ``values`` (:func:`flat`), a 0-d dask array: one task per
    chunk (:class:`_Parts`) and one that adds their parts up NumPy's tree (:class:`_Tree`)."""
    bounds = [0, *np.cumsum(values.chunks[0]).tolist()]
    sums: list[list] = [[] for _ in values.chunks[0]]
    terms: list[list] = [[] for _ in values.chunks[0]]

    def block_of(position: int) -> int:
        return bisect.bisect_right(bounds, position) - 1

    def plan(low: int, high: int) -> tuple:
        j = block_of(low)
        if high <= bounds[j + 1]:  # inside one chunk: NumPy's own sum of the slice
            sums[j].append((low - bounds[j], high - bounds[j]))
            return ("sum", j, len(sums[j]) - 1)
        n = high - low
        if n <= _LEAF:  # a leaf across chunks: its terms gathered
            parts = []
            for k in range(j, block_of(high - 1) + 1):
                start, stop = max(low, bounds[k]), min(high, bounds[k + 1])
                terms[k].append((start - bounds[k], stop - bounds[k]))
                parts.append((k, len(terms[k]) - 1))
            return ("leaf", *parts)
        half = n // 2
        half -= half % 8
        return ("add", plan(low, low + half), plan(low + half, high))

    tree = plan(0, bounds[-1])
    token = tokenize(values)
    name, out = "capviz-pairwise-parts-" + token, "capviz-pairwise-sum-" + token
    graph: dict = {(name, j): (_Parts(sums[j], terms[j]), (values.name, j))
                   for j in range(len(bounds) - 1)}
    graph[(out,)] = (_Tree(tree, np.dtype(values.dtype)), *graph)
    layers = HighLevelGraph.from_collections(out, graph, dependencies=[values])
    return da.Array(layers, out, (), dtype=values.dtype, meta=np.empty((), values.dtype))


def reduce(name: str, x: Any, params: dict, order: tuple | None = None) -> Any:
    """``np.<name>(x, **params)`` over all of ``x``'s axes in NumPy's order (see
    :func:`covers`), ``x`` laid out in memory in ``order`` (``None``: C order)."""
    keepdims = bool(params.get("keepdims"))
    shape = (1,) * x.ndim if keepdims else ()

    def add(values: Any, keep: bool) -> Any:
        result = total(flat(values, order))
        return result.reshape((1,) * values.ndim) if keep else result

    if name in ("var", "std"):
        return moments.variance(x, {"axis": None, **params}, name == "std", add)
    result = total(flat(x, order))
    if name == "mean":
        count = np.intp(math.prod(x.shape))
        result = da.map_blocks(moments.divided, result, count, dtype=result.dtype)
    return result.reshape(shape)
