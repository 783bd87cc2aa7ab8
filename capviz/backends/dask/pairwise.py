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
:func:`capviz.backends.dask.moments.variance`, each sum this tree), with no ``where=``,
``out=``; and (W=25d, stop 34; each checked against NumPy 2.4's loops and ``np.sum`` itself in
``tests/test_dask_pairwise.py``):

- complex64 and complex128: ``CFLOAT_pairwise_sum`` counts the parts, ``2 n`` for ``n``
  values: a leaf holds up to 64 values (four accumulators per part), a split falls at
  ``(n - n % 8) // 2`` values (:func:`_split`);
- float16: NumPy's half loop adds the terms in float32 (``HALF_pairwise_sum``, the real tree)
  and rounds once to float16; a float16 ``mean`` is ``_mean``'s ``dtype=float32``, a cast;
- ``dtype=`` of the operand's kind (not float16): NumPy's iterator casts the terms through its
  buffer, ``np.getbufsize()`` (8,192) terms at a time, and the loop adds each buffer's pairwise
  sum onto the running total in turn: one tree per buffer (``np.sum(x, dtype=np.float64)`` of
  20,011 float32 values is three trees);
- ``nansum``, ``nanmean`` (NumPy's copy with the NaNs replaced by 0, summed as above, the
  count of the others an integer sum), ``nanvar``, ``nanstd``
  (:func:`capviz.backends.dask.moments.nan_variance`, each sum this tree).

A ``dtype=`` of another kind or float16 (a half accumulator rounds once per buffer) and the
variances' ``dtype=`` stay on one block.
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

REDUCTIONS = frozenset(("sum", "mean", "var", "std", "nansum", "nanmean", "nanvar", "nanstd"))
"""The reductions :func:`reduce` computes over all axes."""

_PLAIN = frozenset(("axis", "keepdims", "ddof", "dtype"))
_VARIANCES = frozenset(("var", "std", "nanvar", "nanstd"))
_FLOATS = tuple(np.dtype(t) for t in ("f2", "f4", "f8", "c8", "c16"))
_LEAF = 128


def _all_axes(x: Any, params: dict) -> bool:
    axis = params.get("axis")
    if axis is None:
        return True
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return sorted(operator.index(a) % x.ndim for a in axes) == list(range(x.ndim))


def accumulator(name: str, x: Any, params: dict) -> tuple | None:
    """How NumPy adds the terms of sum ``name`` of ``x`` over all its axes (its pairwise loop on
    the coalesced operand): ``(terms, buffered)``, the type the terms are cast to and added in
    (float16 terms are added in float32 by NumPy's half loop, one rounding to float16 at the
    end), and whether NumPy casts them to it through its iterator's buffer (a ``dtype=`` that
    is not the operand's, or a float16 ``mean``'s float32: one pairwise sum per buffer of
    ``np.getbufsize()`` terms, added one after another); ``None`` where this is not known."""
    kind = np.dtype(x.dtype)
    dtype = params.get("dtype")
    if name in _VARIANCES and dtype is not None:
        return None  # moments.variance's sums with dtype=: not here
    if name == "mean" and dtype is None and kind == np.float16:
        dtype = np.dtype("f4")  # numpy/_core/_methods.py's _mean
    if dtype is None or np.dtype(dtype) == kind:
        return (np.dtype("f4") if kind == np.float16 else kind), False
    dtype = np.dtype(dtype)
    if dtype not in _FLOATS or dtype == np.float16 \
            or (dtype.kind == "c") != (kind.kind == "c"):
        return None  # a half accumulator rounds per buffer; a cast between kinds: not here
    return dtype, True


def covers(name: str, x: Any, params: dict) -> bool:
    """Whether :func:`reduce` computes reduction ``name`` of ``x`` with ``params``: over all the
    axes of a float16, float32, float64, complex64 or complex128 operand, with a ``dtype=``
    of its own kind (not float16) for a sum or mean (see :func:`accumulator`)."""
    if name not in REDUCTIONS or not set(params) <= _PLAIN or x.ndim == 0 or 0 in x.shape:
        return False
    if "ddof" in params and name not in _VARIANCES:
        return False
    if np.dtype(x.dtype) not in _FLOATS or not _all_axes(x, params):
        return False
    return accumulator(name, x, params) is not None


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
    in the chunk), and a copy of each of its ``terms`` ranges (the parts of the leaves that
    straddle a chunk boundary), its values cast to ``terms_dtype`` first (NumPy's half loop
    adds float16 terms in float32; a buffered cast adds the cast values)."""

    def __init__(self, sums: list, terms: list, terms_dtype: np.dtype) -> None:
        self.sums = sums
        self.terms = terms
        self.terms_dtype = terms_dtype

    def __call__(self, block: np.ndarray) -> tuple:
        def cast(start: int, stop: int, copy: bool) -> np.ndarray:  # a slice at a time
            return block[start:stop].astype(self.terms_dtype, copy=copy)

        return ([np.add.reduce(cast(start, stop, False)) for start, stop in self.sums],
                [cast(start, stop, True) for start, stop in self.terms])


class _Tree:
    """The one task that adds the chunks' parts up NumPy's trees (picklable): ``plans``, one
    per buffer (one for an unbuffered sum), each a nested tuple per node: ``("sum", j, k)`` the
    k-th subtree sum of chunk ``j``, ``("leaf", (j, k), ...)`` a straddling leaf's parts,
    ``("add", left, right)``; each tree added in turn onto the reduction's ``+0`` in
    ``terms``, the total cast to ``dtype`` (float16: the half loop's one rounding)."""

    def __init__(self, plans: list, terms: np.dtype, dtype: np.dtype) -> None:
        self.plans = plans
        self.terms = terms
        self.dtype = dtype

    def __call__(self, *parts: tuple) -> np.ndarray:
        def value(node: tuple) -> Any:
            if node[0] == "sum":
                return parts[node[1]][0][node[2]]
            if node[0] == "leaf":  # at most one leaf's terms: NumPy's own leaf
                return np.add.reduce(np.concatenate([parts[j][1][k] for j, k in node[1:]]))
            return value(node[1]) + value(node[2])  # two scalars of the type: one IEEE add

        result = self.terms.type(0)
        for plan in self.plans:
            result = result + value(plan)
        return np.asarray(result).astype(self.dtype)


def _split(n: int, complex_: bool) -> int | None:
    """Where NumPy's pairwise sum of ``n`` terms splits them (``None``: a leaf, added in one
    loop). Real: up to 128 terms a leaf, else at ``n // 2`` less its remainder by 8. Complex
    (``CFLOAT_pairwise_sum``, which counts the parts, ``2 n``): up to 64 terms a leaf, else at
    ``(n - n % 8) // 2`` terms."""
    if complex_:
        return None if n <= _LEAF // 2 else (n - n % 8) // 2
    if n <= _LEAF:
        return None
    half = n // 2
    return half - half % 8


def total(values: Any, terms: Any = None, buffer: int = 0) -> Any:
    """NumPy's sum of 1-d dask array ``values`` (:func:`flat`), a 0-d dask array: one task per
    chunk (:class:`_Parts`) and one that adds their parts up NumPy's tree (:class:`_Tree`).
    ``terms``: the type NumPy adds in (float16 values: float32, one rounding at the end);
    ``buffer``: the buffer size of NumPy's cast (0: no cast, one tree; else a tree per buffer
    of that many terms, added in turn, the result in ``terms``)."""
    dtype = np.dtype(values.dtype)
    terms = np.dtype(terms) if terms is not None else \
        np.dtype("f4") if dtype == np.float16 else dtype
    complex_ = terms.kind == "c"
    bounds = [0, *np.cumsum(values.chunks[0]).tolist()]
    sums: list[list] = [[] for _ in values.chunks[0]]
    spans: list[list] = [[] for _ in values.chunks[0]]

    def block_of(position: int) -> int:
        return bisect.bisect_right(bounds, position) - 1

    def plan(low: int, high: int) -> tuple:
        j = block_of(low)
        if high <= bounds[j + 1]:  # inside one chunk: NumPy's own sum of the slice
            sums[j].append((low - bounds[j], high - bounds[j]))
            return ("sum", j, len(sums[j]) - 1)
        half = _split(high - low, complex_)
        if half is None:  # a leaf across chunks: its terms gathered
            parts = []
            for k in range(j, block_of(high - 1) + 1):
                start, stop = max(low, bounds[k]), min(high, bounds[k + 1])
                spans[k].append((start - bounds[k], stop - bounds[k]))
                parts.append((k, len(spans[k]) - 1))
            return ("leaf", *parts)
        return ("add", plan(low, low + half), plan(low + half, high))

    n = bounds[-1]
    step = buffer or n
    plans = [plan(low, min(low + step, n)) for low in range(0, n, step)]
    result = terms if buffer else dtype
    token = tokenize(values, terms, buffer)
    name, out = "capviz-pairwise-parts-" + token, "capviz-pairwise-sum-" + token
    graph: dict = {(name, j): (_Parts(sums[j], spans[j], terms), (values.name, j))
                   for j in range(len(bounds) - 1)}
    graph[(out,)] = (_Tree(plans, terms, result), *graph)
    layers = HighLevelGraph.from_collections(out, graph, dependencies=[values])
    return da.Array(layers, out, (), dtype=result, meta=np.empty((), result))


def _replaced(block: np.ndarray) -> np.ndarray:
    """NumPy's ``_replace_nan(a, 0)`` of a block: a copy with its NaNs 0."""
    return np.where(np.isnan(block), block.dtype.type(0), block)


def reduce(name: str, x: Any, params: dict, order: tuple | None = None) -> Any:
    """``np.<name>(x, **params)`` over all of ``x``'s axes in NumPy's order (see
    :func:`covers`), ``x`` laid out in memory in ``order`` (``None``: C order). The nan forms
    sum NumPy's copy of ``x`` with its NaNs replaced by 0 (``numpy/lib/_nanfunctions_impl.py``)
    and count the others."""
    keepdims = bool(params.get("keepdims"))
    shape = (1,) * x.ndim if keepdims else ()
    nan = name.startswith("nan")

    def add(values: Any, keep: bool) -> Any:
        if nan and values is x:  # the nan forms' first sum: of the replaced values
            values = da.map_blocks(_replaced, values, dtype=values.dtype)
        result = total(flat(values, order))
        return result.reshape((1,) * values.ndim) if keep else result

    if name in ("var", "std"):
        return moments.variance(x, {**params, "axis": None}, name == "std", add)
    if name in ("nanvar", "nanstd"):
        return moments.nan_variance(x, {**params, "axis": None}, name == "nanstd", add)
    terms, buffered = accumulator(name, x, params)
    values = da.map_blocks(_replaced, x, dtype=x.dtype) if nan else x
    result = total(flat(values, order), terms, np.getbufsize() if buffered else 0)
    if name in ("mean", "nanmean"):
        count: Any = np.intp(math.prod(x.shape))
        if nan:
            count = da.sum(~da.isnan(x), dtype=np.intp)
        result = da.map_blocks(moments.divided, result, count, dtype=result.dtype)
        if np.dtype(x.dtype) == np.float16 and params.get("dtype") is None:
            result = result.astype(np.float16)  # _mean's float32 mean rounded once
    return result.reshape(shape)
