"""Evenly spaced values as NumPy makes them: ``np.linspace``, ``np.geomspace`` and the
edges of ``np.histogram_bin_edges`` with a bin count, step by step in NumPy's arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax.cancellation import TOLERANCE
from capviz.backends.jax.functions.rounding import (
    divided,
    lax_bits,
    narrowed,
    product,
)
from capviz.backends.jax.trace import cast, dtype_of, require, require_each


def linspace_as_numpy(jnp: Any, start: Any, stop: Any, num: int = 50, endpoint: bool = True,
                      dtype: Any = None, axis: int = 0) -> Any:
    """np.linspace step by step: ``delta = stop - start`` in the inexact result type, ``y =
    arange(num) * (delta / div)`` (``arange(num) / div * delta`` when a step is 0), ``+ start``,
    the last point set to ``stop``, floored for an integer ``dtype``. jax.numpy's linspace
    interpolates otherwise (an infinite start gives ``inf`` where NumPy's ``0 * inf`` is NaN,
    and its last point is not ``stop``)."""
    dt = np.result_type(_weak_or_dtype(jnp, start), _weak_or_dtype(jnp, stop))
    start, stop = jnp.asarray(start), jnp.asarray(stop)
    num = int(num)
    div = num - 1 if endpoint else num
    if dt.kind not in "fc":  # NumPy's ensure_inexact
        dt = np.dtype(np.float64)
    delta = stop.astype(dt) - start.astype(dt)
    y = jnp.arange(num, dtype=dt).reshape((num,) + (1,) * len(delta.shape))
    exact = None
    if div > 0:
        step = divided(jnp, delta, div)
        stepped = ~jnp.any(step == 0)  # the branch taking y * step
        if dt == np.float64:  # i * step is exact when step's last bits are 0 for i's bits
            exact = stepped & ((lax_bits(step) & _low_bits(num, len(delta.shape))) == 0)
        y = jnp.where(jnp.any(step == 0), product(jnp, divided(jnp, y, div), delta),
                      product(jnp, y, step))
    else:
        y = product(jnp, y, delta)
    if y.dtype != np.dtype(dt):  # float64 holding float32 (float16) products: add, round once
        y = narrowed(jnp, y + start.astype(dt).astype(np.float64), dt)
    else:
        first = start.astype(dt)
        if dt == np.float64:
            _fused_cancellation(jnp, y, first, exact)
        y = y + first
    if endpoint and num > 1:
        y = y.at[-1].set(stop.astype(dt))
    y = jnp.moveaxis(y, 0, axis)
    dtype = dt if dtype is None else np.dtype(dtype)
    if dtype.kind in "iu":  # NaN or out of range fails the node (XLA saturates)
        return cast(jnp, jnp.floor(y), dtype)
    return y.astype(dtype)


def _weak_or_dtype(jnp: Any, value: Any) -> Any:
    """A Python number as itself (weak in NumPy's promotion: ``np.linspace(float32, 5.0)`` is
    float32), anything else as its dtype."""
    if type(value) in (bool, int, float, complex):
        return value
    return dtype_of(jnp.asarray(value))


def _low_bits(num: int, ndim: int) -> np.ndarray:
    """For each ``i < num`` (along a new first axis), the mask of the last mantissa bits a
    float64 must have 0 for its product with ``i`` to be exact: as many bits as ``i``'s odd
    part has after its leading one (none for a power of two)."""
    masks = []
    for i in range(num):
        odd = i >> (i & -i).bit_length() - 1 if i else 1
        masks.append((1 << (odd.bit_length() - 1)) - 1)
    return np.array(masks, np.int64).reshape((num,) + (1,) * ndim)


def _fused_cancellation(jnp: Any, p: Any, start: Any, exact: Any) -> None:
    """``p + start`` (``p`` a float64 product) checked where it can differ from NumPy's beyond
    the tolerance: XLA fuses the product and the sum into one multiply-add, rounded once, where
    NumPy rounds the product first. The two differ by at most half a unit of ``p``, which is
    beyond the backend's tolerance only where the sum cancels (``|p + start|`` far below
    ``|p|``) and the product was not exact (``exact``: per element, or ``None``: unknown)."""
    total = p + start
    rtol, atol = TOLERANCE
    ok = ~jnp.isfinite(p) | (jnp.abs(p) * 2.0**-52 <= atol + rtol * jnp.abs(total))
    if exact is not None:
        ok = ok | exact
    require_each(ok, "np.linspace (or geomspace) of float64: a point cancels to near 0 "
                 "(start + i * step), where XLA's fused multiply-add (rounded once) differs "
                 "from NumPy's product then sum beyond the tolerance; replay with "
                 "backend='numpy'")


def _linspace(jnp: Any) -> Callable:
    def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
                 retstep: bool = False, dtype: Any = None, axis: int = 0) -> Any:
        return linspace_as_numpy(jnp, start, stop, num, endpoint, dtype, axis)

    return linspace


def _geomspace(jnp: Any) -> Callable:
    """np.geomspace step by step: the signs rotated out, ``10 ** linspace(log10(start),
    log10(stop))`` in NumPy's arithmetic, the first and last points set to ``start`` and
    ``stop`` exactly (jax.numpy's overflows ``10 ** log10(finfo.max)`` to ``inf`` and gives
    ``inf`` where NumPy's linspace makes NaN); a zero fails the replay as NumPy raises.
    Complex values go to jax.numpy's geomspace (its sign of a complex is NumPy's)."""

    def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
                  dtype: Any = None, axis: int = 0) -> Any:
        start, stop = jnp.asarray(start), jnp.asarray(stop)
        num = int(num)
        dt = np.result_type(dtype_of(start), dtype_of(stop), float(num),
                            np.zeros((), dtype))
        if dt.kind == "c":
            return jnp.geomspace(start, stop, num, endpoint, dtype, axis)
        require(jnp.all(start != 0) & jnp.all(stop != 0),
                "ValueError: Geometric sequence cannot include zero (NumPy raises)")
        start, stop = start.astype(dt), stop.astype(dt)
        sign = jnp.sign(start)
        start, stop = start / sign, stop / sign
        y = linspace_as_numpy(jnp, jnp.log10(start), jnp.log10(stop), num, endpoint, dt)
        result = jnp.power(np.asarray(10.0, dt), y)
        if num > 0:
            result = result.at[0].set(start)
            if num > 1 and endpoint:
                result = result.at[-1].set(stop)
        result = jnp.moveaxis(result * sign, 0, axis)
        return result.astype(dt if dtype is None else np.dtype(dtype))

    return geomspace


def _histogram_bin_edges(jnp: Any) -> Callable:
    """np.histogram_bin_edges with a number of bins and no range: NumPy's outer edges (the
    minimum and maximum, which must be finite: NumPy raises ValueError, checked here; an empty
    range widened by 0.5 each side) and its linspace between them in the edges' type
    (:func:`linspace_as_numpy`), which must increase (NumPy raises ValueError: too many bins);
    jax.numpy's computes the edges otherwise (a float16 edge 46 where NumPy's is 48). Other
    forms go to jax.numpy's."""

    def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None,
                            weights: Any = None) -> Any:
        a = jnp.asarray(a).ravel()
        if range is not None or not isinstance(bins, (int, np.integer)) \
                or not a.shape[0]:
            return jnp.histogram_bin_edges(a, bins, range, weights)
        first, last = a.min(), a.max()
        require(jnp.isfinite(first) & jnp.isfinite(last),
                "ValueError: autodetected range of [min, max] is not finite (NumPy raises: "
                "an infinity or NaN among the values of np.histogram_bin_edges)")
        edge = np.dtype(np.float64) if dtype_of(a).kind in "biu" else dtype_of(a)
        first, last = first.astype(edge), last.astype(edge)
        same = first == last
        first = jnp.where(same, first - np.asarray(0.5, edge), first)
        last = jnp.where(same, last + np.asarray(0.5, edge), last)
        edges = linspace_as_numpy(jnp, first, last, int(bins) + 1, True, edge)
        require(jnp.all(edges[:-1] < edges[1:]), f"ValueError: Too many bins for data range. "
                f"Cannot create {int(bins)} finite-sized bins (NumPy raises)")
        return edges

    return histogram_bin_edges


FORMS: dict[str, Callable[[Any], Callable]] = {
    "linspace": _linspace,
    "geomspace": _geomspace,
    "histogram_bin_edges": _histogram_bin_edges,
}
"""The forms of this module by op name, each written with NumPy's signature."""
