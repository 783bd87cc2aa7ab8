"""NumPy's rounding, step by step, in jax.numpy: a product or quotient rounded on its own
(XLA fuses and multiplies by reciprocals), float16/float32 values kept in float64 and rounded as
NumPy's casts round them (subnormals included).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.backends.jax.trace import require_each


def divided(jnp: Any, x: Any, n: int) -> Any:
    """``x / n`` rounded once, as NumPy's, for a float32 or float16 ``x``: XLA divides by a
    constant as a multiplication by its reciprocal (an ulp off), so the quotient is taken in
    float64 and rounded (a float32 divided by an integer below 2**27 is never within float64's
    error of a float32 rounding boundary). A float64 or complex ``x`` is divided by an array
    of ``n`` behind :func:`separate` (XLA turns a division by a broadcast scalar, constant or
    not, into a product with its reciprocal: ``np.linspace`` of int64 extremes, cancelling to
    0 in NumPy, gave 512)."""
    dtype = np.dtype(x.dtype)
    if dtype.kind == "f" and dtype.itemsize < 8:
        return narrowed(jnp, x.astype(np.float64) / n, dtype)
    return x / separate(jnp.full(x.shape, n, dtype))


def product(jnp: Any, a: Any, b: Any) -> Any:
    """``a * b`` rounded on its own, as NumPy's, for float32 or float16 operands: exact in
    float64 and rounded to their precision by ``reduce_precision``, kept in float64 (a product
    rounded by a cast, LLVM narrows to a float32 product and fuses with the sum that follows
    into one multiply-add). Float64 and complex products may be fused (see
    :func:`capviz.backends.jax.functions.ranges._fused_cancellation`)."""
    dtype = np.dtype(a.dtype)
    if dtype.kind == "f" and dtype.itemsize < 8:
        return rounded(jnp, a.astype(np.float64) * b.astype(np.float64), dtype)
    return a * b


def rounded(jnp: Any, x: Any, dtype: np.dtype) -> Any:
    """Float64 ``x`` rounded to float16 or float32 ``dtype``'s values, kept in float64, its
    subnormals included: ``reduce_precision`` rounds normal values and flushes subnormals to
    0 (a float16 ``linspace(0, 2e-4, 5)`` gave 0 where NumPy gives 5e-05), so a value below
    ``dtype``'s smallest normal is rounded to a multiple of its smallest subnormal (an exact
    scaling by a power of two, rounded half to even as the cast does)."""
    from jax import lax

    info = np.finfo(dtype)
    x = jnp.asarray(x).astype(np.float64)  # 1 / unit overflows float16 (0 * inf: NaN)
    normal = lax.reduce_precision(x, exponent_bits=info.nexp, mantissa_bits=info.nmant)
    unit = float(info.smallest_subnormal)
    small = jnp.abs(x) < float(info.smallest_normal)
    tiny = jnp.round(jnp.where(small, x, 0.0) * (1 / unit)) * unit
    return jnp.where(small, tiny, normal)


def each_rounded(jnp: Any, x: Any, dtype: np.dtype) -> Any:
    """``x`` rounded to float16 or float32 ``dtype`` (``x`` exact in float64 or in ``dtype``):
    each step of a chain rounded on its own, as NumPy's, where XLA keeps a float16 chain in
    float32 between steps."""
    if dtype.kind != "f" or dtype.itemsize == 8:
        return x
    return rounded(jnp, x, dtype)


def narrowed(jnp: Any, x: Any, dtype: np.dtype) -> Any:
    """Float64 ``x`` cast to ``dtype``: a float32 subnormal fails the replay at the node, as
    XLA's CPU conversion to float32 flushes it to 0 where NumPy keeps it (float16
    conversions keep their subnormals)."""
    if dtype == np.float32:
        subnormal = (jnp.abs(x) < float(np.finfo(dtype).smallest_normal)) & (x != 0)
        require_each(~subnormal, "a float32 result in the subnormal range (below "
                     f"{np.finfo(dtype).smallest_normal}), which XLA flushes to 0 where NumPy "
                     "keeps it; replay with backend='numpy'")
    return x.astype(dtype)


def separate(x: Any) -> Any:
    """``x`` behind an optimization barrier: XLA sees neither a constant nor a broadcast
    through it."""
    from jax import lax

    return lax.optimization_barrier(x)


def lax_bits(x: Any) -> Any:
    """The bits of float64 ``x`` as int64."""
    from jax import lax

    return lax.bitcast_convert_type(x, np.int64)
