"""Counter-based random numbers: Philox4x64-10 keyed by ``(seed, draw index)``.

Every random draw is a pure function of ``(seed, draw, shape, distribution)``. Draw ``k`` of a
device seeded with ``s`` uses the Philox key ``(s, k)`` and the counter blocks ``1, 2, 3...``,
which is exactly NumPy's ``np.random.Philox(key=[s, k]).random_raw(n)``. On the host that NumPy
generator makes the raw bits; :func:`philox_raw` is the same algorithm written in plain array
operations (integer multiply, shift, xor), so it runs unchanged on CuPy and gives identical bits.

From raw 64-bit words to values, with operations that round identically on CPU and GPU:

* ``uniform``: float64 ``(w >> 11) * 2**-53`` (float32: ``(w >> 40) * 2**-24``), then
  ``low + (high - low) * u`` in the output dtype. Bit-identical across backends.
* ``bernoulli``: float64 uniform ``< p``. Bit-identical.
* ``normal``: Box-Muller on two float64 uniforms (``log``, ``sqrt``, ``cos``), then
  ``mean + std * z``. The transcendental functions of CuPy and NumPy may differ by an ulp or two,
  so normal draws agree to a few ulp, not bit for bit.

The transforms name no backend: the raw words come from ``source`` (a
:class:`capviz.backends.registry.Backend`, which a random op's callable is given when the backend
binds it): its ``random_bits`` and ``random_u32``. The NumPy backend answers them with NumPy's
own ``np.random.Philox``; the default is :func:`philox_raw` on the namespace. The transforms
write into no array but their own fresh ones, and into those only for a backend whose arrays
are ``mutable`` (no such write at all by default), so they run on immutable arrays (JAX) too.
"""

from __future__ import annotations

import math
import secrets
from typing import Any

import numpy as np

from capviz.ops import table as ops

MASK64 = (1 << 64) - 1
_M0 = 0xD2E7470EE14C6C93
_M1 = 0xCA5A826395121157
_W0 = 0x9E3779B97F4A7C15
_W1 = 0xBB67AE8584CAA73B
_M32 = 0xFFFFFFFF


def check_seed(seed: Any) -> int:
    """Validate a seed: an integer in ``[0, 2**64)``."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__}")
    seed = int(seed)
    if not 0 <= seed <= MASK64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    return seed


def fresh_seed() -> int:
    """A seed from the operating system's entropy."""
    return secrets.randbits(64)


def _mulhilo(xp: Any, m: int, b: Any) -> tuple[Any, Any]:
    """High and low 64-bit words of ``m * b`` (``m`` a constant, ``b`` a uint64 array)."""
    u64 = xp.uint64
    m_lo, m_hi = u64(m & _M32), u64(m >> 32)
    s32 = u64(32)
    b_lo = b & u64(_M32)
    b_hi = b >> s32
    p0 = m_lo * b_lo
    p1 = m_lo * b_hi
    p2 = m_hi * b_lo
    p3 = m_hi * b_hi
    mid = (p0 >> s32) + (p1 & u64(_M32)) + (p2 & u64(_M32))
    hi = p3 + (p1 >> s32) + (p2 >> s32) + (mid >> s32)
    lo = u64(m) * b
    return hi, lo


def _rounds(xp: Any, seed: int, draw: int, counter: Any) -> tuple:
    """Philox4x64-10 of the counter blocks ``(counter, 0, 0, 0)`` under the key ``(seed, draw)``:
    the four output words of each block."""
    u64 = xp.uint64
    zero = xp.zeros_like(counter)
    c0, c1, c2, c3 = counter, zero, zero, zero
    k0, k1 = seed & MASK64, draw & MASK64
    for r in range(10):
        if r:
            k0 = (k0 + _W0) & MASK64
            k1 = (k1 + _W1) & MASK64
        hi0, lo0 = _mulhilo(xp, _M0, c0)
        hi1, lo1 = _mulhilo(xp, _M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ u64(k0), lo1, hi0 ^ c3 ^ u64(k1), lo0
    return c0, c1, c2, c3


def philox_raw(xp: Any, seed: int, draw: int, n: int, start: int = 0) -> Any:
    """Words ``start .. start + n`` (uint64) of Philox4x64-10 with key ``(seed, draw)``, on
    namespace ``xp``.

    Equal, bit for bit, to ``np.random.Philox(key=[seed, draw]).random_raw(start + n)[start:]``
    (word ``w`` is lane ``w % 4`` of counter block ``w // 4 + 1``).
    """
    u64 = xp.uint64
    first = start // 4
    blocks = (start + n + 3) // 4 - first
    c0, c1, c2, c3 = _rounds(xp, seed, draw, xp.arange(first + 1, first + blocks + 1, dtype=u64))
    skip = start - 4 * first
    return xp.reshape(xp.stack([c0, c1, c2, c3], axis=1), (-1,))[skip:skip + n]


def split_u32(xp: Any, words: Any, n: int) -> Any:
    """The first ``n`` uint32 halves of uint64 ``words``: each word's low half, then its high
    half."""
    low = (words & xp.uint64(_M32)).astype(xp.uint32)
    high = (words >> xp.uint64(32)).astype(xp.uint32)
    return xp.reshape(xp.stack([low, high], axis=1), (-1,))[:n]


def raw_bits(xp: Any, seed: int, draw: int, n: int, source: Any = None) -> Any:
    """``n`` raw words for a draw: ``source.random_bits`` (a backend), else :func:`philox_raw`
    on ``xp``."""
    if source is not None:
        return source.random_bits(seed, draw, n)
    return philox_raw(xp, seed, draw, n)


def raw_u32(xp: Any, seed: int, draw: int, n: int, source: Any = None) -> Any:
    """``n`` uint32 words: each raw 64-bit word gives its low half, then its high half."""
    if source is not None:
        return source.random_u32(seed, draw, n)
    return split_u32(xp, philox_raw(xp, seed, draw, (n + 1) // 2), n)


def _mantissas(xp: Any, seed: int, draw: int, n: int, work: Any, source: Any) -> Any:
    """Integers ``k`` in ``[0, 2**p)`` as floats of ``work`` (p = 24 for float32, 53 for
    float64): uniform ``k * 2**-p`` has every value exactly representable."""
    if work is np.float32:
        return (raw_u32(xp, seed, draw, n, source) >> xp.uint32(8)).astype(np.float32)
    return (raw_bits(xp, seed, draw, n, source) >> xp.uint64(11)).astype(np.float64)


def _cast(value: Any, dtype: Any, shape: tuple) -> Any:
    """``value`` as ``dtype`` (no copy when it is one already) in ``shape``."""
    dtype = np.dtype(dtype)
    if value.dtype != dtype:
        value = value.astype(dtype)
    return value.reshape(shape)


def _bits(work: Any) -> int:
    return 24 if work is np.float32 else 53


def uniform(xp: Any, seed: int, *, draw: int, shape: tuple, dtype: str, low: float,
            high: float, source: Any = None) -> Any:
    """Uniform draw on ``[low, high)``: ``k * ((high - low) * 2**-p) + low``."""
    work = np.float32 if np.dtype(dtype) == np.float32 else np.float64
    u = _mantissas(xp, seed, draw, ops.numel(shape), work, source)
    step = (work(high) - work(low)) * work(2.0 ** -_bits(work))  # exact power-of-two scaling
    if getattr(source, "mutable", False):  # u is ours: scaled in place, no second buffer
        u *= step
        u += work(low)
    else:  # immutable arrays (JAX): the same two roundings, functionally
        u = u * step + work(low)
    return _cast(u, dtype, shape)


def normal(xp: Any, seed: int, *, draw: int, shape: tuple, dtype: str, mean: float,
           std: float, source: Any = None) -> Any:
    """Normal draw: Box-Muller on pairs of uniforms, both of each pair's values used."""
    work = np.float32 if np.dtype(dtype) == np.float32 else np.float64
    n = ops.numel(shape)
    half = (n + 1) // 2
    k = _mantissas(xp, seed, draw, 2 * half, work, source)
    unit = work(2.0 ** -_bits(work))
    u1 = work(1.0) - k[:half] * unit  # in (0, 1]: log is finite
    theta = k[half:] * work(2.0 * np.pi * 2.0 ** -_bits(work))
    radius = xp.sqrt(work(-2.0) * xp.log(u1))
    z = xp.concatenate([radius * xp.cos(theta), radius * xp.sin(theta)])[:n]
    if std != 1.0 or mean != 0.0:
        z = z * work(std) + work(mean)
    return _cast(z, dtype, shape)


def bernoulli(xp: Any, seed: int, *, draw: int, shape: tuple, dtype: str, p: float,
              source: Any = None) -> Any:
    """Bernoulli draw: 1 where the 53-bit uniform ``k * 2**-53 < p``."""
    k = raw_bits(xp, seed, draw, ops.numel(shape), source) >> xp.uint64(11)
    threshold = math.ceil(p * 2.0 ** 53)  # k < p * 2**53  <=>  k < ceil(p * 2**53)
    return _cast(k < xp.uint64(min(threshold, 2**53)), dtype, shape)


def _random_meta(args: Any, params: dict) -> tuple:
    return tuple(params["shape"]), np.dtype(params["dtype"])


def _bind(fn: Any) -> Any:
    def impl(xp: Any) -> Any:
        def run(seed: int, source: Any = None, **params: Any) -> Any:
            return fn(xp, seed, source=source, **params)

        return run

    return impl


ops.register(ops.Op("random_uniform", _bind(uniform), _random_meta,
                    params=("draw", "shape", "dtype", "low", "high"), nargs=(0, 0), random=True))
ops.register(ops.Op("random_normal", _bind(normal), _random_meta,
                    params=("draw", "shape", "dtype", "mean", "std"), nargs=(0, 0), random=True))
ops.register(ops.Op("random_bernoulli", _bind(bernoulli), _random_meta,
                    params=("draw", "shape", "dtype", "p"), nargs=(0, 0), random=True))


def philox_at(xp: Any, seed: int, draw: int, positions: Any) -> Any:
    """The raw uint64 words at ``positions`` (an integer array, any shape) of the stream keyed by
    ``(seed, draw)``: ``philox_raw(xp, seed, draw, n)[positions]`` without making the words
    before them, so a block of a chunked array (Dask) draws the words of its own global
    positions. Word ``w`` is lane ``w % 4`` of counter block ``w // 4 + 1``."""
    u64 = xp.uint64
    positions = xp.asarray(positions).astype(u64)
    lane = positions & u64(3)
    c0, c1, c2, c3 = _rounds(xp, seed, draw, (positions >> u64(2)) + u64(1))
    return xp.where(lane == u64(0), c0, xp.where(lane == u64(1), c1,
                                                 xp.where(lane == u64(2), c2, c3)))
