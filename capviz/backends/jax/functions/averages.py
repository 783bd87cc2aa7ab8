"""``np.average`` with weights in NumPy's steps, its weighted sum checked against
cancellation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax.cancellation import TOLERANCE
from capviz.backends.jax.functions.rounding import separate
from capviz.backends.jax.trace import dtype_of, require, require_each


def _average(jnp: Any) -> Callable:
    """np.average with weights, NumPy's steps: weights of one axis laid along it, their sum in
    the result's type (float64 for integers: NumPy raises ZeroDivisionError where it is 0,
    checked here, where an int64 sum wraps otherwise), ``multiply(a, w, dtype=...)`` summed
    and divided by it. A sum of products cancelling beyond the tolerance (its terms' size
    times the rounding of a sum in another order) fails at the node: NumPy's order of
    summation and rounding of each product are its own. Without weights: jax.numpy's mean."""

    def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
                **params: Any) -> Any:
        a = jnp.asarray(a)
        if weights is None or returned:
            return jnp.average(a, axis, weights, returned, **params)
        w = jnp.asarray(weights)
        ndim = len(a.shape)
        if isinstance(axis, list):
            axis = tuple(axis)
        if tuple(w.shape) != tuple(a.shape):
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
            for part in parts:  # a complex sum: each of its parts, as a float sum
                _cancelled_sum(jnp, part(numerator), jnp.abs(part(terms)).sum(axis=axis, **keep),
                               jnp.abs(total), n, real, settled)
        # a true division: XLA makes one by a broadcast value a product with its reciprocal,
        # which flushes to 0 past 1 / finfo.tiny (inf / 1.9e38 gave NaN in float32)
        return numerator / separate(jnp.broadcast_to(total, numerator.shape))

    return average


def _cancelled_sum(jnp: Any, got: Any, size: Any, divisor: Any, n: int,
                   dtype: np.dtype, settled: Any) -> None:
    """A sum ``got`` of ``n`` terms of total magnitude ``size`` (then divided by ``divisor``)
    checked to be the same in every order of summation, within the tolerance: the rounding of
    another order is at most ``n * eps * size``; a ``size`` that overflows (a partial sum or
    product may overflow to either infinity, or not, by the order and the fusing) fails
    unless the sum is ``settled`` (a NaN operand: NaN every way)."""
    rtol, atol = TOLERANCE if dtype != np.float16 else (1e-2, 1e-1)
    slack = size * (n * float(np.finfo(dtype).eps))
    quotient = jnp.abs(got / divisor)
    ok = jnp.isfinite(size) & (jnp.abs(slack / divisor) <= atol + rtol * quotient)
    require_each(ok | settled, "np.average: the weighted sum overflows or cancels (its terms' "
                 "magnitudes are far above it), so NumPy's order of summation gives another "
                 "value than XLA's beyond the tolerance; replay with backend='numpy'")


FORMS: dict[str, Callable[[Any], Callable]] = {"average": _average}
"""The forms of this module by op name, each written with NumPy's signature."""
