"""A tested consumer's result read by a squared loss or a softmax, tested at their last op (issue
25, stop 41): an MLP's loss ``((y - t) ** 2).mean()`` and its softmax ``exp(z - z.max(1,
keepdims=True)) / sum`` keep dask.array's blocks past the chunk-size.

A product past the chunk-size is tested at its consumer (the bias add ``y = h @ W + b``:
:mod:`capviz.backends.dask.product_checks`), which leaves ``y`` within ``E`` of NumPy's
(:func:`capviz.backends.dask.chained.result_bound`). A subtract of ``y`` can cancel that, and
neither ``np.square`` then a mean, nor ``np.exp``, keeps the relative error of its operand
(:mod:`capviz.backends.dask.kept_error`), so before, both products of such an MLP were gathered
onto one block (2.5 times dask.array's peak). Both readers have a bound in ``E`` that their last
op's values give at run time, with no second pass over the data:

**Squares** (:class:`SquaresWithin`): ``y``, or ``y - t`` / ``y + t`` with ``t`` an input or a
number, squared, then ``np.mean`` or ``np.sum`` (any axis). Each difference ``d`` is within
``a + b |d|`` of NumPy's (``a = E (1 + u)``, ``b = 2 u / (1 - u)``, one rounding in both; ``a =
E``, ``b = 0`` with no subtract), so each square within ``2 a (1 + b) |d| + a**2 + (2 b + b**2)
d**2`` plus its own rounding in both. The mean of ``d**2`` (``Q``) is at most ``m / ((1 - g)
(1 - u))`` (``m`` the computed mean, ``g = gamma_(n+2)``: a sum of ``n`` non-negative terms in
any order, and the quotient) and the mean of ``|d|`` at most ``sqrt(Q)``, so every term of the
bound is a number of ``m``; both sums' roundings are ``g`` of their (non-negative) values.

**Softmax** (:class:`SoftmaxWithin`): ``z - z.max(k, keepdims=True)``, ``np.exp``, divided by
its ``sum(k, keepdims=True)``. The maximum is within ``E`` too (a pick), so each ``s = z -
max`` within ``delta = 2 E (1 + 2 u) + 4 u (M + E)`` (``M`` the largest ``|z|``, which the
consumer's result bound reads already); ``np.exp`` turns that into a relative ``rho =
expm1(delta + 20 u)`` (each side's ``exp`` within a few units in the last place of its exact
value); the sum of positive terms keeps it, with its own ``gamma_n`` in both; so each result is
within ``R |p|``, ``1 + R = (1 + rho)**2 (1 + g) / (1 - g) (1 + u) / (1 - u)``, plus an
absolute ``4 tiny`` where ``exp`` underflows (the sum is at least 1: ``exp(0)`` at the
maximum).

A result fails where its bound is beyond its tolerance (``atol + rtol max(|r| - bound, 0)``),
naming the products and the user's line (:class:`ProductCancels`); the last op's result is then
read only as a consumer's (:func:`capviz.backends.dask.chained.into_products`). Anything else
(another op between, a second reader of a value on the way, ``t`` computed, float16) keeps the
gather, as before.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from capviz.backends import contraction_bound
from capviz.backends.dask.product_tests import ProductCancels, fixes
from capviz.core.ir import Node

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@dataclasses.dataclass(frozen=True)
class Tail:
    """A consumer's result read by a squared loss or a softmax.

    Attributes:
        kind: ``"squares"`` or ``"softmax"``.
        consumer: the consumer's node index (its result's bound, :mod:`chained`).
        last: the index of the op tested (the mean or sum of squares, the softmax's quotient).
        count: the terms of each output's sum.
        centred: squares of ``y - t`` (one more rounding), not of ``y``.
        total: a sum of squares (``np.sum``), not a mean.
        name: the consumer's op.
    """

    kind: str
    consumer: int
    last: int
    count: int
    centred: bool = False
    total: bool = False
    name: str = "add"


def match(consumer: Node, users: dict[int, list[Node]],
          returned: set[int] | frozenset[int]) -> Tail | None:
    """The :class:`Tail` ``consumer``'s result is read by (each value on the way read by the
    next op alone, none returned or guarded), or ``None``."""
    if consumer.dtype is None or np.dtype(consumer.dtype) not in _FLOATS:
        return None
    return _squares(consumer, users, returned) or _softmax(consumer, users, returned)


def _only(value: Node, users: dict[int, list[Node]]) -> Node | None:
    readers = users.get(value.index, [])
    return readers[0] if len(readers) == 1 else None


def _plain(node: Node, *allowed: str) -> bool:
    """Whether ``node``'s params other than ``allowed`` are their defaults."""
    return all(v is None or (k == "where" and v is True) or (k == "keepdims" and v is False)
               for k, v in node.params.items() if k not in allowed)


def _args(node: Node, *expected: Node) -> bool:
    """Whether ``node``'s operands are ``expected``, by identity."""
    return len(node.args) == len(expected) and all(a is b for a, b in zip(node.args, expected))


def _same_type(consumer: Node, *nodes: Node) -> bool:
    return all(n.dtype is not None and np.dtype(n.dtype) == np.dtype(consumer.dtype)
               and n.shape is not None for n in nodes)


def _squares(consumer: Node, users: dict, returned: Any) -> Tail | None:
    value, reader = consumer, _only(consumer, users)
    centred = False
    if reader is not None and reader.op in ("subtract", "add") and len(reader.args) == 2 \
            and reader.args[0] is value:
        other = reader.args[1]
        if not ((isinstance(other, Node) and other.kind != "op")
                or (isinstance(other, (int, float, np.integer, np.floating))
                and not isinstance(other, bool))):
            return None
        centred, value, reader = True, reader, _only(reader, users)
    if reader is None or reader.op != "square" or len(reader.args) != 1 \
            or reader.args[0] is not value or not _plain(reader):
        return None
    square, last = reader, _only(reader, users)
    if last is None or last.op not in ("mean", "sum") or len(last.args) != 1 \
            or not _plain(last, "axis", "keepdims") \
            or not _same_type(consumer, value, square, last):
        return None
    axis = last.params.get("axis")
    try:
        axes = range(len(square.shape)) if axis is None else \
            (axis,) if isinstance(axis, int) else tuple(axis)
        count = int(np.prod([square.shape[int(a) % len(square.shape)] for a in axes]))
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    if count < 1 or ({value.index, square.index} - {consumer.index}) & set(returned):
        return None
    return Tail("squares", consumer.index, last.index, count, centred, last.op == "sum",
                consumer.op)


def _axis(node: Node) -> int | None:
    axis = node.params.get("axis")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or node.shape is None \
            or node.params.get("keepdims") is not True or not _plain(node, "axis", "keepdims"):
        return None
    return int(axis) % max(len(node.shape), 1)


def _softmax(consumer: Node, users: dict, returned: Any) -> Tail | None:
    readers = users.get(consumer.index, [])
    top = next((r for r in readers if r.op in ("max", "amax")), None)
    shift = next((r for r in readers if r.op == "subtract"), None)
    if len(readers) != 2 or top is None or shift is None or not _args(top, consumer) \
            or not _args(shift, consumer, top) or _only(top, users) is not shift:
        return None
    exp = _only(shift, users)
    if exp is None or exp.op != "exp" or not _args(exp, shift) or not _plain(exp):
        return None
    after = users.get(exp.index, [])
    total = next((r for r in after if r.op == "sum"), None)
    last = next((r for r in after if r.op in ("divide", "true_divide")), None)
    if len(after) != 2 or total is None or last is None or not _args(total, exp) \
            or not _args(last, exp, total) or _only(total, users) is not last \
            or not _plain(last) or not _same_type(consumer, top, shift, exp, total, last):
        return None
    axis = _axis(top)
    if axis is None or axis != _axis(total) or len(consumer.shape) != len(top.shape) \
            or {top.index, shift.index, exp.index, total.index} & set(returned):
        return None
    return Tail("softmax", consumer.index, last.index, int(exp.shape[axis]), name=consumer.op)


class _Test:
    """What both tests share: the words of the error and the tolerance (picklable)."""

    def __init__(self, tail: Tail, words: tuple[str, str, str], rtol: float, atol: float,
                 dtype: Any) -> None:
        self.tail, self.words = tail, words
        self.rtol, self.atol = rtol, atol
        self.u = float(np.finfo(dtype).eps) / 2
        self.tiny = float(np.finfo(dtype).tiny)
        self.g = contraction_bound.gamma(tail.count + 2, dtype)

    def _test(self, name: str, block: np.ndarray, e: float, total: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            r = np.abs(np.asarray(block)).astype(np.float64)
            limit = self.atol + self.rtol * np.maximum(r - total, 0)
            beyond = np.isfinite(r) & ~(total * (1 + 2 * self.u) <= limit)
        if np.any(beyond):
            named, held, need = self.words
            raise ProductCancels(
                f"np.{name} reads np.{self.tail.name}'s result of {named}, which dask.array "
                f"adds in its own blocks since its operands ({held}) do not fit dask's "
                f"array.chunk-size: its declared rounding, up to {e:.3g} on each value, can "
                f"move this result by up to {float(np.max(np.where(beyond, total, 0))):.3g}, "
                f"beyond its tolerance ({float(np.min(limit[beyond])):.3g}), so it can differ "
                f"from NumPy's; {fixes(need)}")
        return block


class SquaresWithin(_Test):
    """A task's test of a mean or sum of squares of a consumer's result (module docstring)."""

    def __call__(self, block: np.ndarray, carried: Any) -> np.ndarray:
        e, u, g, tail = float(np.asarray(carried)), self.u, self.g, self.tail
        a, b = (e * (1 + u), 2 * u / (1 - u)) if tail.centred else (e, 0.0)
        with np.errstate(all="ignore"):
            m = np.abs(np.asarray(block)).astype(np.float64)
            if tail.total:
                m = m / tail.count
            q = m / ((1 - g) * (1 - u)) if g < 1 else np.full(m.shape, np.inf)
            mean_abs = np.sqrt(q)
            theirs = (1 + b) ** 2 * q + 2 * a * (1 + b) * mean_abs + a * a
            squares = 2 * a * (1 + b) * mean_abs + a * a + (2 * b + b * b) * q \
                + u * (q + theirs)
            total = squares + g * q + g * (1 + u) * theirs
            if tail.total:
                total = total * tail.count
        return self._test("sum" if tail.total else "mean", block, e, total)


class SoftmaxWithin(_Test):
    """A task's test of a softmax's quotient of a consumer's result (module docstring)."""

    def __call__(self, block: np.ndarray, carried: Any, largest: Any) -> np.ndarray:
        e, m, u, g = float(np.asarray(carried)), float(np.asarray(largest)), self.u, self.g
        with np.errstate(all="ignore"):
            delta = 2 * e * (1 + 2 * u) + 4 * u * (m + e)
            rho = np.expm1(delta + 20 * u) if np.isfinite(delta) else np.inf
            grown = (1 + rho) ** 2 * (1 + g) / (1 - g) * (1 + u) / (1 - u) - 1 \
                if g < 1 else np.inf
            p = np.abs(np.asarray(block)).astype(np.float64)
            total = grown * (1 + grown) * p + 4 * self.tiny
            if not np.isfinite(grown):
                total = np.full(p.shape, np.inf)
        return self._test("divide", block, e, total)
