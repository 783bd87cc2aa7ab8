"""Sums whose value an add or subtract that can cancel consumes, built in NumPy's order from the
start (the hostile review 3's finding 8 on Dask).

A sum over several chunks is held to the tolerance of the sum itself
(:mod:`capviz.backends.dask.cancellation`, :mod:`capviz.backends.dask.variance`): dask.array's
order of addition and NumPy's give values within ``eps * S`` of each other (``S`` the terms'
magnitudes), and for a mean of one-sign terms that is one rounding of the mean. An add or a
subtract that consumes it can cancel: ``x - x.mean(-1, keepdims=True)`` of float32 values near
1e3 leaves values near 0.5 carrying the mean's absolute rounding, ``eps * 1e3``, a relative error
of ``2e-4`` against the tolerance's ``1e-5``: a layer norm of such rows in chunks of 96 was 62x
beyond the tolerance near 1e3, 341x near 1e4, a centring near 1e5 1,560x; silent, since each
node was within its own tolerance. The same holds for a sum written by hand (``x - x.sum(-1,
keepdims=True) / n``), one whose axis an index adds back (``x - np.mean(x, -1)[:, None]``), and
a difference of two sums (``x.sum(-1) - x[:, :384].sum(-1) * 2``).

**The rule.** The graph says which sums reach such a consumer
(:func:`capviz.backends.cancelling.cancelling`: through moves, casts, negation and scalings, up to
the first add or subtract of two tensors or of a tensor and a nonzero number). Each of them whose
terms dask.array's blocks add in another order than NumPy's loop
(:func:`~capviz.backends.dask.overflow.blocks_add_otherwise`: a reduced axis spans several
chunks, or NumPy keeps a running sum across chunked later axes) is built in NumPy's order from
the start (:func:`capviz.backends.dask.reductions.in_numpy_order`): along one axis on blocks
that hold that axis (and, where NumPy adds pairwise, the later ones: a row) whole, or, where
NumPy adds row after row, chunk by chunk (:mod:`capviz.backends.dask.running`, which keeps the
hostile review 3's finding 28's memory); over several axes on one block. Its value is then
NumPy's bits, and so is the consumer's. One case is tested instead (:func:`held`): a float32 or
float64 ``sum`` or ``mean`` over all of its operand's axes, each of whose reaches is a centring
by a number (``x - x.mean()``, ``x - x.sum() / x.size``), whose NumPy order would be one block
holding the whole operand (a larger-than-memory array's): there every value of the consumer is
known at the sum, and the sum fails at its node where ``r * eps * S / count * |factor|``, its
error carried to the consumer, exceeds ``atol + rtol * min |x -+ factor * s|``, the tolerance
of the consumer's smallest value (:func:`centring_checked`; two more passes over the operand,
its magnitudes' sum and that minimum: ``x - x.mean()`` of a (2048, 2048) float32 array costs
3.7x to 4.3x bare dask.array, 1.7x before, in ``benchmarks/dask_sums.py``); the replay then
computes it again in NumPy's order on one block, as a failed sum check does, or, lazily
(``compute=False``), the task fails naming the fix. Where NumPy's order cannot be known (its
operand's memory layout is not: a flipped or broadcast view), the node is refused at build
time, naming the consumer, with the fixes (chunks that keep the reduced axes in one chunk, or
``backend='numpy'``).

Why not a check at run time (the JAX backend's choice where NumPy's order is dear): a test of
the consumer's tolerance needs the sum's bound carried through the scalings to the add or
subtract and a pass over its operands, and on Dask NumPy's order is cheap where it keeps the
chunks: a layer norm's rows regathered once cost less than the checks they replace (the mean's
magnitudes' sum, the variance's bound): ``benchmarks/dask_sums.py``'s layer norm row, 1.01x to
1.09x bare dask.array against 1.42x to 1.47x before.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import dask.array as da
import numpy as np

from capviz.backends import cancelling
from capviz.backends.dask import contractions
from capviz.backends.dask.overflow import OrderMatters, blocks_add_otherwise
from capviz.backends.dask.shapes import is_array
from capviz.core.ir import Node
from capviz.core.source import format_source

SUMS = frozenset(("sum", "nansum", "mean", "nanmean", "trace", "einsum", "var", "std",
                  "nanvar", "nanstd"))
"""The reductions looked at: those :mod:`capviz.backends.dask.in_order` computes in NumPy's
order (``einsum`` of one operand only: a sum)."""

FEEDING: ContextVar[dict[int, tuple] | None] = ContextVar("capviz_dask_feeding", default=None)
"""The replay being built's sums that reach an add or subtract that can cancel, by node index,
each with its :class:`~capviz.backends.cancelling.Reach` es; ``None`` outside a replay's
build."""


def feeding(nodes: list[Node]) -> dict[int, tuple]:
    """The sums among ``nodes`` (a program's op nodes, in order) whose value reaches an add or
    subtract that can cancel: node index -> its reaches."""
    return cancelling.reaches(nodes, SUMS)


def wanted(name: str, args: tuple, params: dict, dtype: np.dtype, index: int | None,
           pairwise: Any) -> bool:
    """Whether reduction node ``index`` (``name`` of ``args``, a result of ``dtype``) is one of
    :data:`FEEDING` that dask.array's blocks add in another order than NumPy's;
    ``pairwise()``: whether NumPy adds each output pairwise."""
    feeding_ = FEEDING.get()
    if not feeding_ or index not in feeding_ or name not in SUMS or not args \
            or (name == "einsum" and len(args) != 1):
        return False
    x = args[0]
    if not is_array(x) or not x.ndim or 0 in x.shape or np.dtype(dtype).kind not in "fc":
        return False
    return blocks_add_otherwise(x, _axes(name, x, params), pairwise())


def _axes(name: str, x: Any, params: dict) -> tuple:
    if name == "einsum":
        items: Any = contractions.contracted(name, (x,), params)[0][0]
    elif name == "trace":
        items = (params.get("axis1", 0), params.get("axis2", 1))
    else:
        axis = params.get("axis")
        items = range(x.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    return tuple(int(a) % x.ndim for a in items)


def refused(node: Node, source: str) -> OrderMatters:
    """The error of sum ``node``, which reaches a consumer that can cancel, where NumPy's order
    of addition follows the layout of ``source`` (in words), which is not known."""
    consumers = [reach.consumer for reach in (FEEDING.get() or {}).get(node.index, ())]
    where = ", ".join(_named(c) for c in consumers[:2])
    return OrderMatters(
        f"np.{node.op} over several chunks feeds {where}, which can cancel: there the "
        "roundings of dask.array's order of addition, within the tolerance of the sum, can be "
        "beyond the tolerance of the result, so this sum must be added in NumPy's order; "
        f"NumPy's order follows the memory layout of {source}, which is not C-contiguous, and "
        "a dask array has none: replay with chunks= that keep the reduced axes in one chunk, "
        "or with backend='numpy'")


_HELD = frozenset(("sum", "mean"))
_PLAIN = frozenset(("axis", "keepdims"))


def held(name: str, x: Any, params: dict, dtype: np.dtype, index: int | None) -> bool:
    """Whether sum node ``index`` (``name`` of ``x``, one of :data:`FEEDING`) is held by a test
    of its consumers' tolerance at run time (:func:`centring_checked`) instead of NumPy's order:
    a float32 or float64 ``sum`` or ``mean`` over all the axes of its operand, whose NumPy order
    needs one block holding the whole operand (a larger-than-memory array's), and every reach
    of it a centring by a number (``x - x.mean()``, ``x - x.sum() / n``), where the consumer's
    values are known at the sum."""
    reaches = (FEEDING.get() or {}).get(index, ())
    kind = np.dtype(dtype)
    if name not in _HELD or kind not in (np.float32, np.float64) \
            or np.dtype(x.dtype) != kind or not set(params) <= _PLAIN:
        return False
    if len(_axes(name, x, params)) != x.ndim:
        return False
    return bool(reaches) and all(r.centring and r.factor is not None for r in reaches)


class _Centred:
    """A task's test (picklable): the sum's error, one rounding (``rounds``) of its terms'
    magnitudes ``total`` (over ``count`` for a mean) times each consumer's factor, within the
    tolerance of that consumer's smallest value."""

    def __init__(self, name: str, eps: float, rounds: int, count: int, factors: list,
                 tolerances: list, where: list) -> None:
        self.name = name
        self.eps = eps
        self.rounds = rounds
        self.count = count
        self.factors = factors
        self.tolerances = tolerances
        self.where = where

    def __call__(self, result: np.ndarray, total: np.ndarray, *gaps: np.ndarray) -> np.ndarray:
        error = self.rounds * self.eps * float(total) / self.count
        for gap, factor, (rtol, atol), where in zip(gaps, self.factors, self.tolerances,
                                                    self.where):
            bound = error * abs(factor)
            if bound > atol + rtol * float(gap):
                raise OrderMatters(
                    f"np.{self.name} over several chunks feeds {where}, which cancels: the "
                    f"roundings of its terms' magnitudes there, {bound:.3g}, are beyond the "
                    f"tolerance of its smallest value ({float(gap):.3g}), so dask.array's "
                    "order of addition and NumPy's can give other values there; replay with "
                    "compute=True (which computes this node as NumPy does), backend='numpy', "
                    "or chunks= that keep the reduced axes in one chunk")
        return result


def centring_checked(name: str, x: Any, result: Any, index: int, guard: Any,
                     tolerance: Any, pairwise: bool) -> Any:
    """``result``, sum or mean ``name`` of all of ``x`` (:func:`held`), failing at the node
    (through ``guard``) with ``OrderMatters`` where a consumer's tolerance does not hold the
    sum's error: ``r * eps * S / count * |factor| > atol + rtol * min |x -+ factor * s|``
    (``S`` the finite terms' magnitudes' sum, ``r`` 1 where NumPy adds pairwise, else ``n``).
    The replay then computes it in NumPy's order (one block), as a failed sum check does.
    ``tolerance``: the backend's ``(rtol, atol)`` for a dtype."""
    magnitudes = da.fabs(x)
    total = da.sum(da.where(da.isfinite(magnitudes), magnitudes, 0), dtype=np.float64)
    value = result.reshape(())
    reaches = FEEDING.get()[index]
    gaps, factors, tolerances, where = [], [], [], []
    for reach in reaches:  # the consumer's values in x's type: a scale, rounded or not
        shift = (-1.0 if reach.consumer.op == "subtract" else 1.0) * reach.factor * value
        gaps.append(da.nanmin(da.fabs(x + shift.astype(x.dtype))))
        factors.append(reach.factor)
        tolerances.append(tolerance(reach.consumer.dtype))
        where.append(_named(reach.consumer))
    n = int(np.prod(x.shape))
    check = _Centred(name, float(np.finfo(x.dtype).eps), 1 if pairwise else n,
                     n if name == "mean" else 1, factors, tolerances, where)
    index_ = tuple(range(result.ndim))
    pairs: list = [result, index_, total, ()]
    for gap in gaps:
        pairs += [gap, ()]
    return da.blockwise(guard(check), index_, *pairs, dtype=result.dtype,
                        meta=np.empty((0,) * result.ndim, result.dtype))


def _named(node: Node) -> str:
    where = format_source(node.source)
    return f"node %{node.index} ({node.op}" + (f" at {where}" if where else "") + ")"
