"""Variances over several chunks whose sums NumPy and dask.array round otherwise, checked.

``var``, ``std``, ``nanvar`` and ``nanstd`` run NumPy's two passes
(:mod:`capviz.backends.dask.moments`): the mean ``m = T / n`` of the sum ``T`` of the ``n``
terms, then ``sum((x - m)**2) / (n - ddof)``. Only the two sums are dask.array's, added chunk by
chunk, where NumPy adds pairwise along its inner loop or one term after another (a running sum,
row after row). Where the variance is tiny against the values (``np.var(1e8 +
rng.random(1000))`` in float32: every value rounds to ``1e8``, NumPy's mean is one unit of the
last place off, its variance 64, dask.array's 0), the mean's rounding is all there is, and the
two orders differ by far more than the tolerance.

**The derivation.** Let ``m*`` be the exact mean of the terms. For any ``m``,

    sum((x - m)**2) = sum((x - m*)**2) + n * (m - m*)**2

so the two orders' means, each at most ``e`` from ``m*``, change the second sum by at most
``n * e**2`` (the first-order term ``2 (m - m*) sum(x - m*)`` is zero: a mean's error moves a
variance by its square only). A sum of ``n`` terms of total magnitude ``S`` (``sum |x|``, each
part of a complex one apart) in an order of ``r`` roundings is within ``r * eps * S`` of the exact
one (``r = 1`` where NumPy adds pairwise, ``n`` for its running sum: the rule of
:mod:`capviz.backends.dask.cancellation` and of the JAX backend), and the division by ``n``
rounds once more: ``e = (r + 1) * eps * S / n <= (r + 1) * eps * M``, ``M`` the operand's
largest finite magnitude (``max |re| + max |im|`` of a complex one). The second sum adds
non-negative squares ``Q = sum((x - m)**2)``; its orders, and the roundings of ``x - m``
(relative, ``eps`` each, twice in a square), are within ``(r + 2) * eps * Q`` of each other.
Divided by the degrees of freedom ``d = n - ddof``, the two variances are within

    E = n * e**2 / d + (r + 2) * eps * v,    e = (r + 1) * eps * M

(``v`` the variance), and two standard deviations within ``min(sqrt(E), E / s)`` (``|sqrt(a) -
sqrt(b)| = |a - b| / (sqrt(a) + sqrt(b))``, ``s`` the standard deviation). ``eps`` is that of
the type the sums add in (the ``dtype=`` given, float64 for integers, else the operand's real
type); a ``nanvar``'s ``n`` is its count of non-NaN terms, per output, and NaNs are left out of
``M``, as infinities are (a variance with an infinite term is ``inf`` or NaN in every order).

**The rule** (:func:`checked`): an output fails at the node where ``E > atol + rtol * |v|``
(``|s|`` for a standard deviation), ``(rtol, atol)`` the backend's tolerance for its dtype. The
replay then computes the node again in NumPy's order (:mod:`capviz.backends.dask.in_order`:
NumPy's own ``var`` along the axis on blocks that hold it whole, laid out as NumPy's operand),
NumPy's bits for the price of a second run, or refuses it naming the value whose memory layout
cannot be known there. Ordinary data never reach it: a float32 layer norm's variance of
768 unit values has ``E`` near ``4e-7`` (the squares' term), the tolerance ``2e-5``; a float32
column variance of values near 1e5, or of more than about 80 rows (``(n + 2) * eps`` passes
``rtol``), does, and is NumPy's.

The cost: no pass over the operand of its own. ``M`` is the one max the overflow bound of
:mod:`capviz.backends.dask.overflow` takes of the operand (the same dask task, computed once
for both), and a ``nanvar``'s count per output the one its mean divides by; a test per output.
Where dask.array's blocks add as NumPy does (the reduced axes in one chunk, and, where NumPy
keeps a running sum, the axes after them too) nothing is checked.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import dask.array as da
import numpy as np

from capviz.backends.dask.overflow import OrderMatters, blocks_add_otherwise, magnitude

VARIANCES = frozenset(("var", "std", "nanvar", "nanstd"))
"""The reductions :func:`checked` covers."""


class _Spread:
    """A task's check of each output of a variance (picklable): the bound ``E`` of the module
    docstring against the tolerance of the output."""

    def __init__(self, name: str, eps: float, rounds: int | None, n: int, ddof: float,
                 tolerance: tuple[float, float]) -> None:
        self.name = name
        self.eps = eps
        self.rounds = rounds  # None: n, per output (NumPy's running sum)
        self.n = n
        self.ddof = ddof
        self.rtol, self.atol = tolerance

    def __call__(self, result: np.ndarray, largest: np.ndarray,
                 counts: np.ndarray | None = None) -> np.ndarray:
        n = np.full(result.shape, float(self.n)) if counts is None \
            else np.reshape(counts, result.shape).astype(np.float64)
        rounds = n if self.rounds is None else float(self.rounds)
        root = self.name.endswith("std")
        with np.errstate(all="ignore"):
            value = np.abs(result.astype(np.float64))
            variance = value * value if root else value
            dof = n - self.ddof
            mean_error = (rounds + 1) * self.eps * float(largest)
            error = n * mean_error * mean_error / dof + (rounds + 2) * self.eps * variance
            if root:
                error = np.minimum(np.sqrt(error), error / value)
            beyond = (dof > 0) & (error > self.atol + self.rtol * value)
        if np.any(beyond):
            worst = float(np.max(np.where(beyond, error, 0.0)))
            raise OrderMatters(
                f"np.{self.name} over several chunks: the variance is small against its "
                f"values, so the roundings of their mean in dask.array's order of addition and "
                f"NumPy's can move it by up to {worst:.3g}, beyond the tolerance of the result; "
                "replay with compute=True (which computes this node as NumPy does), "
                "backend='numpy', or chunks= that keep the reduced axes in one chunk")
        return result


def _axes(x: Any, axis: Any) -> tuple:
    if axis is None:
        return tuple(range(x.ndim))
    return tuple(operator.index(a) % x.ndim
                 for a in ((axis,) if isinstance(axis, int) else axis))


def adds_in(x: Any, params: dict) -> np.dtype:
    """The real type a variance's sums add in: ``dtype=``, float64 for integers and booleans,
    else the operand's."""
    dtype = params.get("dtype")
    if dtype is not None:
        kind = np.dtype(dtype)
    elif np.dtype(x.dtype).kind in "biu":
        kind = np.dtype(np.float64)
    else:
        kind = np.dtype(x.dtype)
    return np.dtype(np.finfo(kind).dtype) if kind.kind in "fc" else np.dtype(np.float64)


def checked(name: str, x: Any, params: dict, result: Any, guard: Any,
            tolerance: tuple[float, float], pairwise: bool) -> Any:
    """``result`` of variance ``name`` of ``x``, failing at the node (through ``guard``) with
    :class:`~capviz.backends.dask.overflow.OrderMatters` where the module's rule holds;
    ``pairwise``: whether NumPy adds each output's terms pairwise (else a running sum of ``n``
    roundings)."""
    if name not in VARIANCES or np.dtype(result.dtype).kind not in "fc" or not x.ndim \
            or 0 in x.shape:
        return result
    axes = _axes(x, params.get("axis"))
    if not blocks_add_otherwise(x, axes, pairwise):
        return result
    n = math.prod(x.shape[a] for a in axes)
    check = _Spread(name, float(np.finfo(adds_in(x, params)).eps), 1 if pairwise else None,
                    n, float(params.get("ddof", 0)), tolerance)
    index = tuple(range(result.ndim))
    pairs: list = [result, index, magnitude(x), ()]
    if name.startswith("nan") and np.dtype(x.dtype).kind in "fc":
        # moments.nan_variance's own count (the same task): per output, kept dims
        counts = da.sum(~da.isnan(x), axis=axes, dtype=np.intp, keepdims=True)
        pairs += [counts.reshape(result.shape).rechunk(result.chunks), index]
    return da.blockwise(guard(check), index, *pairs, dtype=result.dtype,
                        meta=np.empty((0,) * result.ndim, result.dtype))
