"""A consumer's result carried into the next product larger than one block (the hostile review
11's finding 12, the lead's ruling 40 17:35): an MLP on Dask, ``np.maximum(x @ W1 + b1, 0) @ W2
+ b2``, keeps both products on dask.array's blocks, and the bias add of each is tested at run
time (:mod:`capviz.backends.dask.product_checks`).

A product past the chunk-size tested at its consumer (the bias add) leaves that consumer's
result within its own tolerance of NumPy's, and a later op that subtracts it can cancel that
(``np.diff(x @ w + b)``: silent before stop 39). So a consumer's result read by anything but ops
that keep its relative error (:mod:`capviz.backends.dask.kept_error`) made the product gathered
onto one block, the next layer's product included: a plain MLP past the chunk-size on one block,
2.4 to 2.6 times the memory (R11 #12). Now a consumer's result may also reach the *next
product* tested at its own consumers, through ops each of which moves every value by at most
what its operand moved, or scales it by a number (:func:`capviz.backends.dask.product_checks.
_step`: moves, joins, picks, clamps such as ``np.maximum(h, 0)``, ``np.where`` picks, scalings):
there its error is carried into that product's bound, and tested where that product's own
consumer (the next bias add) is.

**The bound.** The consumer ``C`` (an add, a subtract, ``np.diff``... tested by
:class:`~capviz.backends.dask.product_tests.Within`) of values within ``e`` of NumPy's (its
carried bound) rounds once, in both: ``|fl(x) - fl(y)| <= e (1 + u) + 2 u |x|`` for ``|x - y| <=
e``, so its result is within ``E_C = e (1 + eps) + eps (1 + eps) max |r|`` of NumPy's (``r``
the computed result, ``eps = 2 u``; its largest finite magnitude, one more pass). Through the
path it is ``s E_C`` (``s`` the path's scale, one ``E_C`` more per rounding: a scaling's rounding
``2 u |c v| <= |c| E_C``). A product ``A @ B`` of operands within ``E_A``, ``E_B`` of NumPy's
(elementwise) is then within ``2 gamma_k |A| @ |B|`` (the rank-1 bound on the operands dask.array
computed, as before) plus ``(1 + gamma_k) (E_A max_j ||B_j||_1 + E_B max_i ||A_i||_1 + k E_A
E_B)`` (``||B_j||_1`` the sum of ``|B|`` over the contracted axes for each of its other indices;
NumPy's ``|A*| <= |A| + E_A`` in its own rounding): one more pass over each operand, a number per
product. Everything else a consumer's result reaches keeps the gather (:func:`into_products`
returns ``None``).
"""

from __future__ import annotations

import math
from typing import Any

import dask.array as da
import numpy as np

from capviz.backends import contraction_bound
from capviz.backends.dask import contractions, kept_error, magnitudes
from capviz.core.ir import Node

CHAINED = frozenset(("add", "subtract", "ufunc_outer", "ediff1d", "ptp", "diff"))
"""The consumers whose result may be carried into a next product: those tested by
:class:`~capviz.backends.dask.product_tests.Within` with the bound as it stands, one rounding of
their result (not ``np.gradient``'s quotients, nor a variance's or covariance's own rule)."""


def into_products(consumer: Node, users: dict[int, list[Node]], planned: dict[int, Node],
                  step: Any, returned: frozenset[int] | set[int] = frozenset()
                  ) -> list[tuple[int, int, float]] | None:
    """Where consumer ``consumer``'s result goes: ``[(product index, operand position,
    scale)]`` for each path to a product of ``planned`` (tested at its own consumers) through
    ops ``step`` passes the bound through (``step(before, node)``: ``(factor, roundings)`` or
    ``None``), every other path through ops that keep its relative error
    (:data:`capviz.backends.dask.kept_error.KEEPS`, or ``step``'s); ``None`` where it reaches
    anything else (an op that can cancel it, a product not tested, a path no bound is carried
    through to a product), or where a value past an op that can take the tolerance's absolute
    part beyond its own (:func:`capviz.backends.dask.kept_error.amplifying`: ``(x @ w + b) *
    1e12``) goes anywhere but such a product (``returned``: the nodes a replay returns or a
    guard reads). ``users``: the op nodes reading each node, by its index."""
    chains: list[tuple[int, int, float]] = []
    if consumer.op not in CHAINED:  # no result bound carried: its relative error only
        planned = {}
    best: dict[int, tuple[float | None, bool]] = {consumer.index: (1.0, False)}
    stack: list[tuple[Node, float | None, bool]] = [(consumer, 1.0, False)]
    while stack:
        value, scale, amplified = stack.pop()
        if amplified and (value.index in returned or not users.get(value.index)):
            return None  # within the tolerance's absolute part no more
        for user in users.get(value.index, ()):
            if user.index in planned:
                if scale is None:
                    return None  # a path to the product no bound is carried through
                chains.extend((user.index, k, scale) for k, a in enumerate(user.args)
                              if a is value)
                continue
            moved = step(value, user)
            if moved is None and not _keeps(user):
                return None
            after = None if moved is None or scale is None \
                else scale * moved[0] * (1 + moved[1])
            grown = amplified or kept_error.amplifying(value, user)
            if user.index in best:
                known, was = best[user.index]
                if (was or not grown) and (known is None or (after is not None
                                                             and after <= known)):
                    continue
            best[user.index] = (after, grown)
            stack.append((user, after, grown))
    return chains


def _keeps(user: Node) -> bool:
    """Whether ``user`` keeps its operand's relative error (:mod:`kept_error`'s list)."""
    if user.op == "ufunc_outer":
        return False
    float_cast = user.op == "astype" and user.dtype is not None \
        and np.dtype(user.dtype).kind in "fc"
    return user.op in kept_error.KEEPS or float_cast


def result_bound(carried: Any, result: Any, largest: Any = None) -> Any:
    """``E_C`` of the module docstring: the bound on each value of consumer result ``result``
    (a dask array) whose exact value is within ``carried`` of NumPy's (0-d, float64); not
    finite where ``carried`` is not. ``largest``: ``result``'s largest finite magnitude, where
    the caller has it."""
    eps = float(np.finfo(np.dtype(result.dtype)).eps)
    if largest is None:
        largest = magnitudes.largest(result)
    return carried * (1 + eps) + eps * (1 + eps) * largest


def added(name: str, operands: list, params: dict, dtype: np.dtype, errors: list) -> Any:
    """What operands within ``errors`` (a 0-d bound or ``None`` per operand) of NumPy's add to
    product ``name``'s bound (module docstring): a 0-d float64 dask array."""
    axes, count = contractions.contracted(name, tuple(operands), params)
    k = max(int(count), 1)
    real = np.dtype(np.finfo(dtype).dtype)
    g = math.sqrt(2) * contraction_bound.gamma(k + 2, real) if dtype.kind == "c" \
        else contraction_bound.gamma(k, real)
    first, second = errors
    sums = [None if error is None else _largest_sum(x, tuple(a))  # the other operand's only
            for x, a, error in zip(operands, axes, (second, first))]
    total: Any = 0.0
    if first is not None:
        total = total + first * sums[1]
    if second is not None:
        total = total + second * sums[0]
    if first is not None and second is not None:
        total = total + k * first * second
    slack = 1 + contraction_bound.gamma(k + 2, np.float64)  # the float64 sums' own roundings
    return total * (1 + g) * slack


def _largest_sum(x: Any, axes: tuple) -> Any:
    """The largest sum of ``x``'s magnitudes over ``axes`` (float64, 0-d; an infinite or NaN
    magnitude makes it infinite: no finite bound)."""
    magnitude = da.fabs(x).astype(np.float64) if np.dtype(x.dtype).kind != "c" \
        else da.hypot(x.real.astype(np.float64), x.imag.astype(np.float64))
    magnitude = da.where(da.isnan(magnitude), np.inf, magnitude)
    sums = da.sum(magnitude, axis=axes) if axes else magnitude
    return sums.max() if sums.ndim else sums
