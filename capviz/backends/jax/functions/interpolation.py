"""``np.interp`` of real values in float64 as NumPy's C loop, checked where NumPy's result is
its own algorithm's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax.cancellation import TOLERANCE
from capviz.backends.jax.trace import dtype_of, require


def _interp(jnp: Any) -> Callable:
    """np.interp of real values in float64, as NumPy's C loop computes whatever the inputs'
    type (jax.numpy's interpolates in the inputs' type: a float16 ``x`` gave 0.50 where NumPy
    gives 0.62), the periodic points made as NumPy makes them, checked where NumPy's result is
    its own: ``xp`` not increasing (without a period: NumPy's binary search then finds its own
    neighbours) or tied (with one: its quicksort orders them), an infinity or NaN among the
    points (NumPy's C formula falls back to the slope at the next point where jax.numpy's
    gives NaN), a result that is not finite or cancels below the points' rounding (NumPy's
    ``slope * (x - xp[j]) + fp[j]`` and jax.numpy's ``(x - xp[j]) / dx * df + fp[j]`` round
    otherwise)."""

    def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
               period: Any = None) -> Any:
        x, xp, fp = (jnp.asarray(v) for v in (x, xp, fp))
        if dtype_of(fp).kind == "c":
            return jnp.interp(x, xp, fp, left, right, period)
        x, xp, fp = (v.astype(np.float64) for v in (x, xp, fp))
        ok = jnp.all(jnp.isfinite(x)) & jnp.all(jnp.isfinite(xp)) & jnp.all(jnp.isfinite(fp))
        if period is not None:  # NumPy's periodic points, left and right ignored
            period = abs(float(period))
            x, xp = jnp.remainder(x, period), jnp.remainder(xp, period)
            order = jnp.argsort(xp, stable=True)
            xp, fp = xp[order], fp[order]
            if xp.shape[0] > 1:  # tied points: NumPy's quicksort picks their order
                ok = ok & jnp.all(xp[1:] > xp[:-1])
            xp = jnp.concatenate([xp[-1:] - period, xp, xp[:1] + period])
            fp = jnp.concatenate([fp[-1:], fp, fp[:1]])
            left = right = None
        elif xp.shape[0] > 1:
            ok = ok & jnp.all(xp[1:] >= xp[:-1])
        result = jnp.interp(x, xp, fp, left, right)
        rtol, atol = TOLERANCE
        rounding = jnp.max(jnp.abs(fp)) * (8 * float(np.finfo(np.float64).eps))
        each = jnp.isfinite(result) & (rounding <= atol + rtol * jnp.abs(result))
        require(ok & jnp.all(each), "np.interp of these points: xp is not increasing (or, "
                "with a period, holds ties), or the "
                "points hold an infinity or NaN, or the result overflows or cancels far "
                "below the points' values, where NumPy's C interpolation gives its own "
                "result; replay with backend='numpy'")
        return result

    return interp


FORMS: dict[str, Callable[[Any], Callable]] = {"interp": _interp}
"""The forms of this module by op name, each written with NumPy's signature."""
