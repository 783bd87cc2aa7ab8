"""``np.average`` in NumPy's steps: without weights NumPy's ``a.mean(axis)``, with the checks
``np.mean`` has on JAX (its sums' order, :mod:`capviz.backends.jax.cancellation`, and their
subnormal terms, :mod:`capviz.backends.jax.subnormals`); with weights, the weighted sum checked
against cancellation, the weights' sum against its own, and both against the products and
partial sums XLA flushes (the hostile review 3, finding 23: refused at bind before).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax import cancellation, checks, variances
from capviz.backends.jax.cancellation import TOLERANCE
from capviz.backends.jax.functions.rounding import separate
from capviz.backends.jax.trace import dtype_of, require, require_each


def _average(jnp: Any) -> Callable:
    """np.average, NumPy's steps. With weights: weights of one axis laid along it, their sum
    in the result's type (float64 for integers: NumPy raises ZeroDivisionError where it is 0,
    checked here, where an int64 sum wraps otherwise), ``multiply(a, w, dtype=...)`` summed
    and divided by it. A sum of products cancelling beyond the tolerance (its terms' size
    times the rounding of a sum in another order), or whose products or partial sums XLA may
    flush (each by less than ``tiny``), fails at the node: NumPy's order of summation and
    rounding of each product are its own. Without weights: NumPy's ``a.mean(axis)``, checked
    as ``np.mean`` is."""
    mean = variances.checked("mean", jnp, checks.checked(
        "mean", jnp, cancellation.checked("mean", jnp, jnp.mean)))

    def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
                **params: Any) -> Any:
        a = jnp.asarray(a)
        if isinstance(axis, list):
            axis = tuple(axis)
        if returned:
            return jnp.average(a, axis, weights, returned, **params)
        if weights is None:
            result = mean(a, axis=axis, **params)
            if not math.prod(result.shape):  # NumPy's scale a.size / avg.size (review 5)
                raise ZeroDivisionError("division by zero")
            return result
        w = jnp.asarray(weights)
        ndim = len(a.shape)
        one_axis = tuple(w.shape) != tuple(a.shape)  # NumPy adds them pairwise: one rounding
        if one_axis:
            w = jnp.swapaxes(w.reshape((1,) * (ndim - 1) + tuple(w.shape)), -1, axis)
        kind = dtype_of(a).kind
        result = np.result_type(dtype_of(a), dtype_of(w), *(("f8",) if kind in "biu" else ()))
        keep = {"keepdims": bool(params["keepdims"])} if "keepdims" in params else {}
        total = w.astype(result).sum(axis=axis, **keep)
        require(jnp.all(total != 0), "ZeroDivisionError: Weights sum to zero, can't be "
                "normalized (NumPy raises)")
        terms = a.astype(result) * w.astype(result)
        numerator = terms.sum(axis=axis, **keep)
        if result.kind in "fc":
            # a NaN operand makes NaN in every order; any other non-finite term is unsettled
            # (XLA's reduction may fuse a * w into a multiply-add that does not overflow)
            settled = (jnp.isnan(a) | jnp.isnan(w)).any(axis=axis, **keep)
            n = terms.size // max(numerator.size, 1)
            parts = (jnp.real, jnp.imag) if result.kind == "c" else (lambda v: v,)
            real = np.dtype(result.type(0).real.dtype)
            weights_size = jnp.abs(w.astype(result)).sum(axis=axis, **keep)
            if one_axis:  # the weights of one axis, laid along it: a 1-d sum in NumPy
                weights_size = weights_size / n
            _flushed_terms(jnp, a.astype(result), w.astype(result), terms, real)
            for part in parts:  # a complex sum: each of its parts, as a float sum
                _cancelled_sum(jnp, part(numerator), jnp.abs(part(terms)).sum(axis=axis, **keep),
                               total, n, real, settled, weights_size)
        # a true division: XLA makes one by a broadcast value a product with its reciprocal,
        # which flushes to 0 past 1 / finfo.tiny (inf / 1.9e38 gave NaN in float32)
        return numerator / separate(jnp.broadcast_to(total, numerator.shape))

    return average


def _cancelled_sum(jnp: Any, got: Any, size: Any, divisor: Any, n: int,
                   dtype: np.dtype, settled: Any, divisor_size: Any) -> None:
    """A sum ``got`` of ``n`` terms of total magnitude ``size``, divided by ``divisor`` (the
    weights' sum, of total magnitude ``divisor_size``, ``n`` times less for weights of one
    axis, which NumPy adds pairwise: one rounding), checked to be the same in every order
    of summation, within the tolerance: another order moves the sum by at most
    ``n * eps * size`` and the divisor by ``n * eps * divisor_size``, so the quotient by at
    most ``(e_sum + |q| * e_div) / |divisor|``. A ``size`` that overflows (a partial sum or
    product may overflow to either infinity, or not, by the order and the fusing) fails unless
    the sum is ``settled`` (a NaN operand: NaN every way)."""
    rtol, atol = TOLERANCE if dtype != np.float16 else (1e-2, 1e-1)
    eps = n * float(np.finfo(dtype).eps)
    slack = size * eps
    quotient = jnp.abs(got / divisor)
    moved = (slack + quotient * (divisor_size * eps)) / jnp.abs(divisor)
    ok = jnp.isfinite(size) & (moved <= atol + rtol * quotient)
    require_each(ok | settled, "np.average: the weighted sum overflows or cancels (its terms' "
                 "magnitudes are far above it), so NumPy's order of summation gives another "
                 "value than XLA's beyond the tolerance; replay with backend='numpy'")


_FLUSHED = ("np.average: a product a * weights is 0 in XLA where NumPy's is a nonzero subnormal "
            "float, or below {bound:.3g} (the weighted sum's partial sums may then be "
            "subnormal): XLA flushes subnormal floats to zero where NumPy keeps them "
            "(np.average([1e-10, 1e-10], weights=[1e-300, 1e-300]) is 1e-10 in NumPy, 0 in "
            "XLA); replay with backend='numpy', or scale the weights up")


def _flushed_terms(jnp: Any, a: Any, w: Any, terms: Any, dtype: np.dtype) -> None:
    """The weighted sum's terms as the sums check of
    :mod:`capviz.backends.jax.subnormals.reductions` takes them: a product XLA made 0 from
    nonzero factors (NumPy's may be a nonzero subnormal), or one of nonzero magnitude below
    ``tiny * 2**(nmant + 1)`` (a partial sum may be subnormal), fails at the node; then every
    product and partial sum is 0 or normal in NumPy and XLA alike. float16 is not flushed."""
    if dtype == np.float16:
        return
    info = np.finfo(dtype)
    bound = float(info.tiny) * 2.0 ** (info.nmant + 1)
    if dtype_of(terms).kind != "f":  # complex weights are refused at bind
        return
    zero = (a == 0) | (w == 0) | jnp.isnan(a) | jnp.isnan(w)  # NaN: NaN in every order
    require_each(zero | ~(jnp.abs(terms) < bound), _FLUSHED.format(bound=bound))


FORMS: dict[str, Callable[[Any], Callable]] = {"average": _average}
"""The forms of this module by op name, each written with NumPy's signature."""
