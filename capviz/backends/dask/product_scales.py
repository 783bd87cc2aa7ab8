"""What a product's bound is multiplied by on its way to a consumer that can cancel it, and at
that consumer (:mod:`capviz.backends.dask.product_checks`, which tests it there): the path's
scalings and roundings (:func:`step`), the consumer's own factor (:data:`CONSUMERS`:
``np.diff`` of order ``n`` by ``2**n``, ``np.gradient`` by :func:`spacing`'s rule), and which
variances and covariances have their own test (:func:`spread`, :func:`observations`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from capviz.backends import cancelling
from capviz.core.ir import Node

CONSUMERS = {"add": 1, "subtract": 1, "ufunc_outer": 1, "ediff1d": 2, "ptp": 2, "diff": 2,
             "gradient": 2, "var": 1, "std": 1, "nanvar": 1, "nanstd": 1, "cov": 1,
             "corrcoef": 1}
"""The consumers tested, with what they multiply the carried bound by (``np.diff``: by it to
the power of its order; ``np.gradient``: :func:`spacing`; a variance's test is its own,
:class:`.SpreadWithin`)."""


SPREADS = frozenset(("var", "std", "nanvar", "nanstd"))
"""The variances tested (:class:`.SpreadWithin`): real values, no ``dtype=``, ``where=``,
``mean=`` or ``correction=``; the ``nan`` forms with each output's own count of terms (NaN
where NumPy's operand is NaN: from an operand's NaN, or an infinity times 0 or of both signs,
in any order of addition; an order that overflows where another does not has a bound beyond
every finite result's tolerance)."""

_SAME = cancelling.LIPSCHITZ | cancelling.CLAMPS | cancelling.PICKS
"""Path ops whose every value is one of their operands' values or its magnitude: the bound
passes unchanged."""


def scale(reach: cancelling.Reach) -> float | None:
    """What the product's bound is multiplied by at the end of ``reach``: the numbers the path
    scales by, one more bound per rounding, the consumer's factor; ``None`` where this module
    does not carry it."""
    consumer = reach.consumer
    factor = CONSUMERS.get(consumer.op)
    if consumer.op == "gradient":  # its results are its unpacks': of the operand's type
        before = reach.path[-1] if reach.path else reach.sum
        h = spacing(consumer, before)
        if h is None:
            return None
        # coordinates (arrays of positions): their weights' largest sum is taken at run time
        factor = 1.0 if coordinates(consumer) else (4.0 if second_order(consumer) else 2.0) / h
    elif factor is None or consumer.dtype is None \
            or np.dtype(consumer.dtype).kind not in "fc":
        return None
    if consumer.op == "ufunc_outer" and consumer.params.get("ufunc") not in cancelling.OUTERS:
        return None
    if consumer.op == "ptp" and not real(consumer):  # complex: the largest by real parts
        return None
    if consumer.op in SPREADS and not spread(consumer, reach):
        return None
    if consumer.op in ("cov", "corrcoef") and observations(
            consumer, reach.path[-1] if reach.path else reach.sum) is None:
        return None
    if consumer.op == "diff":
        n = consumer.params.get("n", 1)
        if not isinstance(n, int) or n < 0:
            return None
        factor = 2 ** n
    total, roundings, before = 1.0, 0, reach.sum
    for node in reach.path:
        moved = step(before, node)
        if moved is None:
            return None
        total *= moved[0]
        roundings += moved[1]
        before = node
    return total * (1 + roundings) * factor


def second_order(node: Node) -> bool:
    """Whether ``np.gradient`` ``node`` takes ``edge_order=2``."""
    return node.params.get("edge_order", 1) == 2


def spacing(consumer: Node, before: Node) -> float | None:
    """The smallest magnitude of ``np.gradient`` ``consumer``'s spacings (1 where none is
    given), where its test carries the bound: real values (``before``, the path's value), one
    number per axis or one for all, or coordinates (real or integer arrays of one axis, whose
    weights the test takes at run time: :func:`coordinates`), ``edge_order`` 1 or 2; else
    ``None``.

    NumPy's formula runs on each block with its neighbours (dask.array's ``gradient``): ``(f[i
    + 1] - f[i - 1]) / (2 h)`` inside moves by at most ``E / h``, ``(f[1] - f[0]) / h`` at
    ``edge_order=1``'s edges by ``2 E / h``, ``(-1.5 f[0] + 2 f[1] - 0.5 f[2]) / h`` at
    ``edge_order=2``'s by ``4 E / h`` (``h`` the smallest spacing): the bound times ``2 / h`` or
    ``4 / h``. Roundings, of both results: the difference and the quotient by a spacing that
    is not a power of two, one each (``2 eps |r|`` in the test); at ``edge_order=2``'s edges
    the three products and two sums of values up to ``M`` (the largest magnitude of ``f``)
    round on ``|f|``, not on the result: ``2 * 3 u * 4 (M + E) / h = 12 eps (M + E) / h``,
    added to the bound (:func:`checked`)."""
    args = consumer.args
    edge_order = consumer.params.get("edge_order", 1)
    if not args or args[0] is not before or not real(before) \
            or isinstance(edge_order, bool) or edge_order not in (None, 1, 2):
        return None
    positions = [a for a in args[1:] if isinstance(a, Node)]
    if any(a.dtype is None or np.dtype(a.dtype).kind not in "fiu" or a.shape is None
           or len(a.shape) > 1 for a in positions):
        return None
    numbers = [number(a) for a in args[1:] if not isinstance(a, Node)]
    if any(n is None or n == 0 for n in numbers):
        return None
    return min(numbers, default=1.0)


def coordinates(consumer: Node) -> bool:
    """Whether ``np.gradient`` ``consumer`` is given an array as a spacing (coordinates, or a
    0-d array): its test takes the largest sum of NumPy's weights' magnitudes at run time
    (:func:`capviz.backends.dask.product_tests.weights_bound`)."""
    return any(isinstance(a, Node) for a in consumer.args[1:])


def spread(consumer: Node, reach: cancelling.Reach) -> bool:
    """Whether variance ``consumer`` is one :class:`.SpreadWithin` tests: of real values (its
    first operand the path's value), no ``dtype=``, ``where=``, ``mean=`` or ``correction=``,
    a number ``ddof`` below its count of terms."""
    before = reach.path[-1] if reach.path else reach.sum
    args, params = consumer.args, consumer.params
    if len(args) != 1 or args[0] is not before or not real(before) or not real(consumer) \
            or before.shape is None or params.get("dtype") is not None \
            or params.get("where", True) is not True \
            or any(params.get(k) is not None for k in ("mean", "correction")):
        return False
    ddof = params.get("ddof", 0)
    if isinstance(ddof, bool) or not isinstance(ddof, (int, float, np.integer, np.floating)):
        return False
    terms = count(before.shape, params.get("axis"))
    return terms is not None and 0 <= float(ddof) < terms


def observations(consumer: Node, before: Node) -> tuple[int, float] | None:
    """``np.cov`` or ``np.corrcoef`` ``consumer``'s count of observations and degrees of
    freedom (without weights: with them, its ``fact`` is taken at run time), where
    :class:`CovWithin` or :class:`CorrWithin` tests it: real operands of one or two axes, ``m``
    and an optional ``y`` (one of them ``before``, the path's value: NumPy stacks ``y``'s
    variables under ``m``'s, and the test takes the bound on every variable), ``np.cov``'s
    ``fweights`` and ``aweights`` arrays of one axis that are not the path's value, no
    ``dtype=`` (nor ``np.corrcoef``'s ``bias`` or ``ddof``); else ``None``."""
    args, params = consumer.args, consumer.params
    data = [a for a in args[:2] if a is not None]
    weights = [a for a in args[2:] if a is not None]
    if len(args) > (4 if consumer.op == "cov" else 2) or not data \
            or not any(a is before for a in data) or any(a is before for a in weights) \
            or not real(consumer) \
            or any(not isinstance(a, Node) or not real(a) or a.shape is None
                   or len(a.shape) not in (1, 2) for a in data) \
            or any(not isinstance(a, Node) or a.dtype is None or a.shape is None
                   or np.dtype(a.dtype).kind not in "fiu" or len(a.shape) != 1
                   for a in weights) \
            or any(params.get(k) is not None for k in ("y", "fweights", "aweights", "dtype")) \
            or (consumer.op == "corrcoef" and any(k in params for k in ("bias", "ddof"))):
        return None
    before = args[0]
    rowvar, bias, ddof = params.get("rowvar", True), params.get("bias", False), \
        params.get("ddof")
    if not isinstance(rowvar, bool) or not isinstance(bias, bool) \
            or not (ddof is None or (isinstance(ddof, (int, np.integer))
                    and not isinstance(ddof, bool))):
        return None
    shape = tuple(before.shape)
    rows = 1 if len(shape) == 1 else shape[0]
    n = shape[-1] if len(shape) == 1 or rowvar or rows == 1 else shape[0]
    d = n - ((0 if bias else 1) if ddof is None else int(ddof))
    if weights:
        return int(n), float(d) if d > 0 else 1.0  # d unused: NumPy's fact at run time
    return (int(n), float(d)) if d > 0 else None


def count(shape: tuple, axis: Any) -> int | None:
    """The count of terms of each output of a reduction over ``axis`` of ``shape``."""
    try:
        axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) \
            else tuple(axis)
        return math.prod(int(shape[int(a) % len(shape)]) for a in axes) if shape else 1
    except (TypeError, ValueError, ZeroDivisionError):
        return None


def real(node: Node) -> bool:
    return node.dtype is not None and np.dtype(node.dtype).kind == "f"


def number(value: Any) -> float | None:
    if isinstance(value, (Node, bool, complex, np.complexfloating)) \
            or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    magnitude = abs(float(value))
    return magnitude if math.isfinite(magnitude) else None


def step(before: Node, node: Node) -> tuple[float, int] | None:
    """How path op ``node`` moves the bound of its operand ``before``: (its factor, its
    roundings), or ``None``."""
    args = node.args
    if node.dtype is None or np.dtype(node.dtype).kind not in "fc" or node.shape is None:
        return None
    if node.op in cancelling.MOVES:
        if not args or args[0] is not before or any(a is before for a in args[1:]):
            return None
        if node.op == "astype" and (before.dtype is None or np.dtype(node.dtype).itemsize
                                    < np.dtype(before.dtype).itemsize):
            return None  # a narrowing cast rounds
        return 1.0, 0
    if node.op in cancelling.JOINS or node.op in cancelling.LIPSCHITZ:
        return 1.0, 0
    if node.op in _SAME:  # complex values compare by their real parts first: a pick jumps
        return (1.0, 0) if real(before) and real(node) else None
    if node.op in cancelling.SELECTS:
        return (1.0, 0) if args and args[0] is not before else None
    if node.op not in cancelling.SCALINGS or len(args) != 2:
        return None
    first, second = args
    if node.op == "divide":
        divisor = number(second) if first is before else None
        return (1 / divisor, 1) if divisor else None
    other = second if first is before else first if second is before else None
    by = None if other is before else number(other)
    return None if by is None else (by, 1)
