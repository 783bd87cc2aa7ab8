"""``np.trapezoid`` in NumPy's steps, each checked as its written-out op is on JAX (the hostile
review 3, finding 23: refused at bind before).

NumPy computes ``(d * (y[1:] + y[:-1]) / 2.0).sum(axis)``, ``d`` being ``dx`` or ``np.diff(x)``
(laid along ``axis`` for a 1-d ``x``), the sum of neighbours in ``y``'s type (an integer ``y``
wraps, where jax.numpy converts it to floats first). The checks, for float32/float64 values
(:func:`_flushed`): a difference or a sum of neighbours that XLA made 0 where the two values
do not cancel exactly (NumPy's is then a nonzero subnormal), a product or a half that XLA made
0 where NumPy's is not (scaled out of the subnormal range, as the elementwise tests of
:mod:`capviz.backends.jax.subnormals.elementwise`), and a term of the sum below ``tiny *
2**(nmant + 1)`` (its partial sums may be subnormal) fail at the node; the sum's order is the
sums check's (:mod:`capviz.backends.jax.cancellation`, NumPy's order where it fails), which
reads ``y``'s layout: the terms keep it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax import cancellation
from capviz.backends.jax.trace import dtype_of, require_each

_FLUSHED = ("np.trapezoid: a {what} is 0 in XLA where NumPy's is a nonzero subnormal float, or "
            "a term of the sum is below {bound:.3g} (its partial sums may be subnormal): XLA "
            "flushes subnormal floats to zero where NumPy keeps them; replay with "
            "backend='numpy', or scale the values away from the float's smallest normal")


def lax_slice(x: Any, axis: int, start: int, stop: int) -> Any:
    """``x[..., start:stop, ...]`` along ``axis``."""
    index = [slice(None)] * len(x.shape)
    index[axis] = slice(start, stop)
    return x[tuple(index)]


def _trapezoid(jnp: Any) -> Callable:
    """NumPy's trapezoid, step by step, checked (see the module docstring)."""
    add_reduce = cancellation.checked("sum", jnp, jnp.sum)

    def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
        y = jnp.asarray(y)
        nd = len(y.shape)
        axis = axis % nd
        spacing = None
        if x is None:
            d = dx
        else:
            x = jnp.asarray(x)
            if len(x.shape) == 1:
                d = jnp.diff(x)
                spacing = (lax_slice(x, 0, 1, x.shape[0]), lax_slice(x, 0, 0, x.shape[0] - 1), d)
                d = d.reshape((1,) * axis + (d.shape[0],) + (1,) * (nd - axis - 1))
            else:
                d = jnp.diff(x, axis=axis)
                n = x.shape[axis]
                spacing = (lax_slice(x, axis, 1, n), lax_slice(x, axis, 0, n - 1), d)
        n = y.shape[axis]
        upper = lax_slice(y, axis, 1, n)
        lower = lax_slice(y, axis, 0, max(n - 1, 0))
        pairs = upper + lower
        scaled = d * pairs
        terms = scaled / 2.0
        if dtype_of(terms).kind == "f" and dtype_of(terms) != np.float16:
            _flushed(jnp, spacing, (upper, lower, pairs), d, scaled, terms)
        return add_reduce(terms, axis=axis)

    return trapezoid


def _flushed(jnp: Any, spacing: Any, neighbours: tuple, d: Any, scaled: Any,
             terms: Any) -> None:
    """The subnormal checks of the module docstring, for float ``terms``."""
    dtype = dtype_of(terms)
    info = np.finfo(dtype)
    least = float(info.smallest_subnormal)
    bound = float(info.tiny) * 2.0 ** (info.nmant + 1)
    ok = ~(jnp.abs(terms) < bound) | (terms == 0)
    require_each(ok, _FLUSHED.format(what="term", bound=bound))
    checks = []
    if spacing is not None and dtype_of(spacing[2]).kind == "f":
        checks.append((spacing[2], spacing[0], spacing[1]))
    if dtype_of(neighbours[2]).kind == "f":
        checks.append((neighbours[2], neighbours[0], -neighbours[1]))
    for made, a, b in checks:  # a - b is 0 only where they cancel exactly
        require_each((made != 0) | (a.astype(dtype) == b.astype(dtype)),
                     _FLUSHED.format(what="difference or sum of neighbours", bound=bound))
    scale = 2.0 ** (2 * (info.nmant + 2))
    factor = jnp.asarray(d).astype(dtype)
    pairs = neighbours[2].astype(dtype)
    product_ok = (scaled != 0) | ~(jnp.abs(factor * (pairs * scale)) > least * scale / 2)
    require_each(jnp.broadcast_to(product_ok, scaled.shape),
                 _FLUSHED.format(what="product d * (y[1:] + y[:-1])", bound=bound))
    half_ok = (terms != 0) | ~(jnp.abs(scaled.astype(dtype)) > least)  # v / 2 of |v| > least
    require_each(half_ok, _FLUSHED.format(what="half", bound=bound))


FORMS: dict[str, Callable[[Any], Callable]] = {"trapezoid": _trapezoid}
"""The forms of this module by op name, each written with NumPy's signature."""
