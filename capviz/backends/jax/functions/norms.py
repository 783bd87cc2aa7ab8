"""``np.linalg.norm``'s vector norms and Frobenius norm in NumPy's steps, checked (the hostile
review 3, finding 23: refused at bind whatever the input, while ``np.sqrt((x * x).sum(1))``
replayed checked).

NumPy computes them (``numpy/linalg/_linalg.py``), for a real or complex operand (integers
and booleans as float64):

* ``axis=None`` with ``ord=None`` (or ``'fro'`` of a matrix, ``2`` of a vector): ``sqrt`` of
  ``x.dot(x)`` of the flattened operand (of each part's for complex values), its BLAS's order
  (:data:`DOT`);
* one axis, ``ord`` ``None`` or ``2``, and two axes with ``ord`` ``None``/``'fro'``:
  ``sqrt(add.reduce((x.conj() * x).real, axis))`` (:data:`SQUARES`); ``ord=1``:
  ``add.reduce(abs(x), axis)`` (:data:`ABS_SUM`); ``ord=inf``/``-inf``: the largest/smallest
  ``abs(x)`` (exact); ``ord=0``: the count of nonzero values (exact).

What is checked, and why it is enough:

* **The order of the sum.** Its terms are never negative, so no order cancels: any order's
  sum is within ``gamma_n`` (``n`` the terms, ``gamma_n = n u / (1 - n u)``) of the exact one,
  and NumPy's pairwise sum within one rounding. A sum along the operand's inner loop is
  pairwise in NumPy; one along another axis is NumPy's running sum, held by the sums check of
  :mod:`capviz.backends.jax.cancellation` (``n`` roundings, else NumPy's order,
  :mod:`capviz.backends.jax.numpy_order`). ``sqrt`` halves a relative error. The BLAS ``dot``
  of the flattened operand (``norm(x)``: every gradient-clipping norm) has no order to follow:
  NumPy's own result is its BLAS's, another on another machine, so it is declared as the
  contractions of linear algebra are, held to the bound every order meets by ``compare`` and
  the differential harness (:func:`capviz.backends.contraction_bound.norm_bound`), and
  replays at any length (a float32 one of more than 1,677 values was refused: ``gamma_n``
  passes ``rtol`` there, review 4, finding 9).
* **Flushed squares** (:func:`_flushed_squares`). A square of a part below ``sqrt(tiny)`` is
  subnormal in NumPy and 0 in XLA (XLA flushes it; its sums of normal squares are normal).
  Each lost square is below ``4 tiny`` (a part below ``2 sqrt(tiny)`` counted, for the
  product's rounding), so the sum of squares fails at the node where ``count * 4 tiny`` passes
  ``rtol`` times XLA's sum (0 included: a norm of parts all below ``sqrt(tiny)`` is 0 in XLA,
  ``1e-160`` in NumPy). ``abs``, ``max``, ``min`` and counts make no subnormal; sums of
  normal values of one sign are normal.

Other forms (other ``ord``, the matrix norms of two axes but the Frobenius norm, float16) stay
refused by name (:func:`form`, ``subnormals.declared``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.contraction_bound import norm_is_dot
from capviz.backends.jax import cancellation
from capviz.backends.jax.trace import dtype_of, refusal, require_each

DOT, SQUARES, ABS_SUM, LARGEST, SMALLEST, COUNT = ("dot", "squares", "abs_sum", "largest",
                                                  "smallest", "count")

_TYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))

_FLUSHED = ("np.linalg.norm: parts of the operand are below sqrt(tiny) ({root:.3g}): their "
            "squares are subnormal in NumPy and 0 in XLA (which flushes "
            "subnormal floats), and they are not negligible against the sum of squares, so "
            "the norm would differ from NumPy's; replay with backend='numpy', or scale the "
            "operand up (np.linalg.norm(x * s) / s)")
def form(ord_: Any, axis: Any, ndim: int) -> str | None:
    """Which of NumPy's branches ``norm(x, ord, axis)`` of an ``ndim``-d operand takes: one of
    :data:`DOT`, :data:`SQUARES`, :data:`ABS_SUM`, :data:`LARGEST`, :data:`SMALLEST`,
    :data:`COUNT`, or ``None`` for a form not checked here (refused by name)."""
    if axis is None:
        if norm_is_dot({"ord": ord_}, ndim):
            return DOT
        axis = tuple(range(ndim))
    elif not isinstance(axis, (tuple, list)):
        axis = (axis,)
    if len(axis) == 1 and not _is_str(ord_):
        if ord_ is None or ord_ == 2:
            return SQUARES
        return {math.inf: LARGEST, -math.inf: SMALLEST, 0: COUNT, 1: ABS_SUM}.get(ord_)
    if len(axis) == 2 and (ord_ is None or (_is_str(ord_) and ord_ in ("f", "fro"))):
        return SQUARES
    return None


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


_EXACT = frozenset((LARGEST, SMALLEST))
"""Branches that compute no new value: exact for float16 too."""

_FLOAT16 = ("np.linalg.norm(ord={ord!r}) of float16: NumPy rounds each square or partial sum "
            "to float16 (overflowing past 65504) in loops of its own, which XLA's float32 "
            "arithmetic does not reproduce; replay with backend='numpy', or take the norm of "
            "x.astype(np.float32)")


def admitted(dtype: Any, ord_: Any, axis: Any, ndim: int) -> bool:
    """Whether a norm of an operand of ``dtype`` (its node's) is checked here."""
    dtype = np.dtype(dtype)
    branch = form(ord_, axis, ndim)
    if dtype == np.float16:
        return branch in _EXACT
    return (dtype.kind in "biu" or dtype in _TYPES) and branch is not None


def _norm(jnp: Any) -> Callable:
    def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
        x = jnp.asarray(x)
        if dtype_of(x).kind in "biu":
            x = x.astype(np.float64)
        if isinstance(axis, list):
            axis = tuple(axis)
        ndim = len(x.shape)
        branch = form(ord, axis, ndim)
        if dtype_of(x) == np.float16 and branch not in _EXACT:
            raise refusal(_FLOAT16.format(ord=ord))
        if branch is None:  # refused at bind (subnormals.lowered): never reached
            raise refusal(f"np.linalg.norm(ord={ord!r}, axis={axis!r}) is not checked on "
                          "jax; replay with backend='numpy'")
        if branch == DOT:
            return _dot(jnp, x, keepdims)
        axes = axis if isinstance(axis, tuple) else (tuple(range(ndim)) if axis is None
                                                     else (axis,))
        magnitude = jnp.abs(x)
        if branch == LARGEST:
            return magnitude.max(axis=axes, keepdims=keepdims, initial=0)
        if branch == SMALLEST:
            return magnitude.min(axis=axes, keepdims=keepdims)
        real = np.dtype(dtype_of(x).type(0).real.dtype)
        # the sums check of cancellation.py reads the node's operand (x) for NumPy's layout,
        # which is the terms' (an elementwise result keeps its operand's memory order)
        add_reduce = cancellation.checked("sum", jnp, jnp.sum)
        if branch == COUNT:
            return add_reduce((x != 0).astype(real), axis=axes, keepdims=keepdims)
        if branch == ABS_SUM:
            return add_reduce(magnitude.astype(real), axis=axes, keepdims=keepdims)
        terms = math.prod(x.shape[k] for k in axes) if len(x.shape) else 1
        squares = _squares(jnp, x, terms)
        total = add_reduce(squares, axis=axes, keepdims=keepdims)
        _flushed_squares(jnp, x, total, axes, keepdims)
        return jnp.sqrt(total)

    return norm


def _squares(jnp: Any, x: Any, terms: int) -> Any:
    """``(x.conj() * x).real``: ``a * a + b * b`` of a complex one's parts. Where each output
    adds one term (``terms``), behind an optimization barrier: XLA simplifies ``sqrt(x * x)`` to
    ``|x|``, finite where NumPy's square overflows (``norm([7.4e307])``: ``inf`` in NumPy)."""
    if dtype_of(x).kind != "c":
        squares = x * x
    else:
        a, b = jnp.real(x), jnp.imag(x)
        squares = a * a + b * b
    if terms > 1:
        return squares
    from jax import lax

    return lax.optimization_barrier(squares)


def _flushed_squares(jnp: Any, x: Any, total: Any, axes: Any, keepdims: bool) -> None:
    """Fails where the squares XLA may have flushed (parts below ``2 sqrt(tiny)``, each
    square below ``4 tiny``) could move the sum of squares ``total`` by more than ``rtol`` of
    it."""
    real = np.dtype(dtype_of(total))
    tiny = float(np.finfo(real).tiny)
    root = 2 * math.sqrt(tiny)
    parts = (jnp.real(x), jnp.imag(x)) if dtype_of(x).kind == "c" else (x,)
    small = None
    for part in parts:
        each = ((part != 0) & (jnp.abs(part) < root)).astype(real)
        small = each if small is None else small + each
    count = small.sum(axis=axes, keepdims=keepdims) if axes is not None else small.sum()
    rtol = cancellation.tolerance(real)[0]
    require_each(~(count * (4 * tiny) > rtol * total),
                 _FLUSHED.format(root=math.sqrt(tiny)))


def _dot(jnp: Any, x: Any, keepdims: bool) -> Any:
    """NumPy's fast path: ``sqrt(x.dot(x))`` of the flattened operand (each part's, added),
    its BLAS's order: declared (:func:`capviz.backends.contraction_bound.norm_bound`)."""
    n = math.prod(x.shape)
    flat = x.reshape(-1)
    total = _squares(jnp, flat, n).sum()
    _flushed_squares(jnp, flat, total, None, False)
    result = jnp.sqrt(total)
    return result.reshape((1,) * len(x.shape)) if keepdims else result


FORMS: dict[str, Callable[[Any], Callable]] = {"linalg.norm": _norm}
"""The forms of this module by op name, each written with NumPy's signature."""
