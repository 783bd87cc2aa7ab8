"""Variances that cancel, on the JAX backend (issue 25; the hostile review 2, finding 11).

NumPy's ``var`` (``std`` is its square root; ``nanvar``, ``nanstd`` leave the NaNs out) makes
two passes along the axis: the mean, ``m' = sum(x) / n`` added in NumPy's order (pairwise
along the last axis of a C-ordered operand, one row after another along another axis:
:func:`capviz.backends.jax.cancellation._pairwise`), then the sum of the squared deviations,
``T' = sum((x - m')**2)``, divided by ``n - ddof``. XLA adds both sums in its own order, so its
``m'`` is another number, and where the values are large against their spread (a tiny variance
of large values: ``1e4 + rng.random(1000)`` in float32) that difference is all that is left.

**The derivation.** For any ``m'``, exactly (the cross term is ``2 (m - m') sum(x - m) = 0``,
``m`` the exact mean):

    sum((x - m')**2) = sum((x - m)**2) + n (m - m')**2

so a mean off by ``e`` moves the sum of squares by ``n e**2``, never less than the exact one:
two engines whose means are each within ``E`` of ``m`` leave sums of squares at most
``n E**2`` apart. Each mean is within ``E = (eps_m + eps) * M`` of ``m``: ``M`` the mean of the
terms' magnitudes, ``eps_m`` the rounding of their sum by the module's rule for the order NumPy
adds them in (``eps`` of the type it adds in where it adds pairwise, ``n`` times that where it
adds one row after another: :mod:`capviz.backends.jax.cancellation`), ``eps`` the rounding of
the mean stored in the result's type. The second pass adds terms that are never negative: it
cannot cancel, and each engine's rounds it by at most ``eps_m + 2 * eps`` of itself (the
subtraction and the square each round once, then the sum by the same rule). So a variance ``v``
from NumPy and from XLA is within

    B = n * E**2 / (n - ddof) + 2 * (eps_m + 3 * eps) * v

(the division rounding once more per engine), and each output fails at its node, with the
user's line, where ``B > atol + rtol * |v|`` (for ``std = sqrt(v)``: ``B / (s + sqrt(v - B))``,
at most ``sqrt(B)``, against ``atol + rtol * s``). A complex operand's deviations' squared
moduli take each part's mean error, ``n (E_re**2 + E_im**2)``. A result that is not finite (an
infinite term, or squares past the type's largest value) is the same in every order and
passes. What it costs: one more mean along the axis, of the magnitudes, per variance; a layer
norm's variance (``np.var(x, axis=-1)``: GPT-2's, values of about their spread) passes. What
it refuses: a float32 variance whose values' mean magnitude is more than about 8e4 times
their spread along the last axis (``sqrt(rtol) / eps``), fewer along another axis, with the
fix ``dtype=np.float64`` where it is wider.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax.cancellation import _WIDER, _pairwise, tolerance
from capviz.backends.jax.trace import dtype_of, require_each

VARIANCES = frozenset(("var", "std", "nanvar", "nanstd"))
"""The variances checked by :func:`checked` (their float and complex operands)."""

_VAR = ("np.{op}: the mean NumPy subtracts (its sum {why}) is off the exact one by up to "
        "{e:.3g} of the values' mean magnitude, and a variance of values far larger than their "
        "spread is that error squared (or a sum overflows its type): NumPy's order of "
        "summation and XLA's give other values there beyond the tolerance; replay with "
        "backend='numpy'{fix}")


def checked(name: str, jnp: Any, fn: Callable) -> Callable:
    """``fn`` (the op ``name`` on jax.numpy), each output checked by the rule of this module
    when ``name`` is one of :data:`VARIANCES`; else ``fn``."""
    if name not in VARIANCES:
        return fn

    def run(*args: Any, **params: Any) -> Any:
        result = fn(*args, **params)
        if args and dtype_of(result).kind == "f" and dtype_of(args[0]).kind in "biufc":
            _variance_cancels(jnp, name, args[0], params, result)
        return result

    run.__name__ = getattr(fn, "__name__", name)
    return run


def _variance_cancels(jnp: Any, name: str, x: Any, params: dict, result: Any) -> None:
    """The rule of this module for ``result``, variance ``name`` of ``x``."""
    a = jnp.asarray(x)
    out = dtype_of(result)  # the real type NumPy computes in (float64 for integers)
    summed = np.dtype(np.float32) if out == np.float16 else out
    axis = params.get("axis")
    keepdims = bool(params.get("keepdims", False))
    pairwise = _pairwise("sum", {"axis": axis}, a)
    n_axes = _length(a.shape, axis)
    eps = float(np.finfo(out).eps)
    eps_m = float(np.finfo(summed if pairwise else out).eps) * (1 if pairwise else n_axes)
    wide = np.dtype(np.float64) if out == np.float64 else np.dtype(np.float32)
    nan_form = name.startswith("nan")
    parts = (jnp.real, jnp.imag) if dtype_of(a).kind == "c" else (None,)
    kept = ~jnp.isnan(a) if nan_form and dtype_of(a).kind in "fc" else None
    count = _count(jnp, a, kept, axis, keepdims, wide, n_axes)
    largest = float(np.finfo(out).max)
    shift = 0.0
    fits = None
    for part in parts:
        terms = (a if part is None else part(a)).astype(wide)
        size = jnp.abs(terms) if kept is None else jnp.where(kept, jnp.abs(terms), 0)
        total = jnp.sum(size, axis=axis, keepdims=keepdims)
        shift = shift + ((eps_m + eps) * total / jnp.maximum(count, 1)) ** 2
        below = ~(total >= largest)  # NumPy's sum cannot overflow its type (NaN: every order's)
        fits = below if fits is None else fits & below
    ddof = params.get("ddof", 0) or 0
    left = jnp.maximum(count - ddof, 0)
    rtol, atol = tolerance(out)
    got = jnp.abs(result.astype(wide))
    v = got ** 2 if name.endswith("std") else got
    bound = jnp.where(left > 0, count * shift / jnp.maximum(left, 1), 0) \
        + 2 * (eps_m + 3 * eps) * v
    if name.endswith("std"):
        rest = jnp.sqrt(jnp.maximum(v - bound, 0))
        bound = jnp.minimum(jnp.sqrt(bound), bound / jnp.maximum(got + rest, np.finfo(wide).tiny))
    # NumPy's sum of the squares overflows its type where XLA's (float32 for float16) may not
    squares_fit = (v + bound) * jnp.maximum(left, 1) < largest
    ok = fits & (~jnp.isfinite(got) | (squares_fit & (bound <= atol + rtol * got)))
    wider = _WIDER.get(out)
    fix = "" if wider is None else f", or compute in {wider} (dtype=np.{wider})"
    why = "added pairwise" if pairwise else f"of {n_axes} terms added one row after another"
    require_each(ok, _VAR.format(op=name, e=eps_m + eps, why=why, fix=fix))


def _length(shape: tuple, axis: Any) -> int:
    """The number of terms an output adds: the length of the reduced axes."""
    if axis is None:
        return max(int(np.prod(shape)), 1)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    return max(int(np.prod([shape[int(k)] for k in axes])), 1) if shape else 1


def _count(jnp: Any, a: Any, kept: Any, axis: Any, keepdims: bool, wide: np.dtype,
           n: int) -> Any:
    """The terms of each output: ``n``, or the non-NaN ones of a nan form."""
    if kept is None:
        return np.asarray(n, dtype=wide)
    return jnp.sum(kept, axis=axis, keepdims=keepdims).astype(wide)
