"""``np.unwrap`` in NumPy's types (an integer difference wraps).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax.trace import dtype_of


def _unwrap(jnp: Any) -> Callable:
    """np.unwrap step by step in NumPy's types: the differences are taken in the input's type
    (an integer input's wrap, ``uint8`` ``0 - 5`` is ``251``), then corrected in
    ``result_type(diff, period)`` (float64 for integers with the default period); jax.numpy's
    unwrap converts integers to floats first."""

    def unwrap(p: Any, discont: Any = None, axis: int = -1, *,
               period: float = 2 * np.pi) -> Any:
        p = jnp.asarray(p)
        ndim = len(p.shape)
        dd = jnp.diff(p, axis=axis)
        if discont is None:
            discont = period / 2
        dtype = np.result_type(dtype_of(dd), period)
        if dtype.kind in "iu":
            interval_high, rem = divmod(period, 2)
            ambiguous = rem == 0
        else:
            interval_high = period / 2
            ambiguous = True
        interval_low = -interval_high
        wide = dd.astype(dtype)
        ddmod = jnp.mod(wide - np.asarray(interval_low, dtype), np.asarray(period, dtype)) \
            + np.asarray(interval_low, dtype)
        if ambiguous:
            ddmod = jnp.where((ddmod == interval_low) & (dd > 0),
                              np.asarray(interval_high, dtype), ddmod)
        correction = ddmod - wide
        correction = jnp.where(_below(jnp, jnp.abs(dd), discont),
                               jnp.zeros_like(correction), correction)
        later = [slice(None)] * ndim
        later[axis] = slice(1, None)
        later = tuple(later)
        up = p.astype(dtype)
        head = p[later].astype(dtype) + jnp.cumsum(correction, axis=axis)
        return up.at[later].set(head)

    return unwrap


def _below(jnp: Any, x: Any, bound: Any) -> Any:
    """``x < bound`` as NumPy compares an array with a Python number (an integer array with a
    float: in float64)."""
    if isinstance(bound, float) and dtype_of(x).kind in "iub":
        return x.astype(np.float64) < bound
    return x < bound


FORMS: dict[str, Callable[[Any], Callable]] = {"unwrap": _unwrap}
"""The forms of this module by op name, each written with NumPy's signature."""
