"""Random ops on the JAX backend: capviz's Philox streams with the seed traced, so a new seed
runs the same executable.

The words are :func:`capviz.ops.random.philox_raw`'s (equal to NumPy's ``np.random.Philox``),
computed with a ``uint64`` key that is a jax value rather than a Python integer; the transforms to
uniform, normal and Bernoulli values are :mod:`capviz.ops.random`'s. A random op's callable takes
the key ``(seed, zero)``: ``zero`` is a float known only at run time (see :func:`_uniform`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops

_M0, _M1 = 0xD2E7470EE14C6C93, 0xCA5A826395121157
_W0, _W1 = 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B
_M32 = 0xFFFFFFFF


def _mulhilo(jnp: Any, m: int, b: Any) -> tuple[Any, Any]:
    u64 = np.uint64
    m_lo, m_hi = u64(m & _M32), u64(m >> 32)
    b_lo = b & u64(_M32)
    b_hi = b >> u64(32)
    p0, p1, p2, p3 = m_lo * b_lo, m_lo * b_hi, m_hi * b_lo, m_hi * b_hi
    mid = (p0 >> u64(32)) + (p1 & u64(_M32)) + (p2 & u64(_M32))
    hi = p3 + (p1 >> u64(32)) + (p2 >> u64(32)) + (mid >> u64(32))
    return hi, u64(m) * b


def philox(jnp: Any, seed: Any, draw: int, n: int) -> Any:
    """``n`` raw uint64 words of Philox4x64-10 keyed by ``(seed, draw)``; ``seed`` a traced
    uint64 scalar. Equal to ``np.random.Philox(key=[seed, draw]).random_raw(n)`` (and to
    :func:`capviz.ops.random.philox_raw`, which takes the key as Python integers)."""
    blocks = (n + 3) // 4
    c0 = jnp.arange(1, blocks + 1, dtype=np.uint64)
    zero = jnp.zeros(blocks, dtype=np.uint64)
    c1, c2, c3 = zero, zero, zero
    k0 = jnp.asarray(seed, dtype=np.uint64)
    k1 = jnp.asarray(np.uint64(draw & 0xFFFFFFFFFFFFFFFF))
    for r in range(10):
        if r:
            k0 = k0 + np.uint64(_W0)  # uint64 arrays wrap, as the key schedule does mod 2**64
            k1 = k1 + np.uint64(_W1)
        hi0, lo0 = _mulhilo(jnp, _M0, c0)
        hi1, lo1 = _mulhilo(jnp, _M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return jnp.stack([c0, c1, c2, c3], axis=1).reshape(-1)[:n]


def _mantissas(jnp: Any, seed: Any, draw: int, n: int, work: Any) -> Any:
    """As :func:`capviz.ops.random._mantissas`: uint32 halves (low first) for float32, else the top
    53 bits of each word."""
    if work is np.float32:
        words = philox(jnp, seed, draw, (n + 1) // 2)
        low = (words & np.uint64(_M32)).astype(np.uint32)
        high = (words >> np.uint64(32)).astype(np.uint32)
        u32 = jnp.stack([low, high], axis=1).reshape(-1)[:n]
        return (u32 >> np.uint32(8)).astype(np.float32)
    return (philox(jnp, seed, draw, n) >> np.uint64(11)).astype(np.float64)


def _bits(work: Any) -> int:
    return 24 if work is np.float32 else 53


def _work(dtype: str) -> Any:
    return np.float32 if np.dtype(dtype) == np.float32 else np.float64


def uniform(jnp: Any) -> Callable:
    def random_uniform(key: tuple, *, draw: int, shape: tuple, dtype: str, low: float,
                       high: float) -> Any:
        seed, zero = key
        work = _work(dtype)
        k = _mantissas(jnp, seed, draw, ops.numel(shape), work)
        step = (work(high) - work(low)) * work(2.0 ** -_bits(work))
        # NumPy rounds the product, then the sum. XLA fuses the two and LLVM may contract them
        # into one fused multiply-add (one rounding); adding a zero that is only known at run
        # time makes the product's rounding its own: fma(k, step, zero) rounds k * step once,
        # exactly as the multiply does, and the sum then rounds again.
        product = k * step + zero.astype(work)
        return (product + work(low)).astype(np.dtype(dtype)).reshape(shape)

    return random_uniform


def normal(jnp: Any) -> Callable:
    def random_normal(key: tuple, *, draw: int, shape: tuple, dtype: str, mean: float,
                      std: float) -> Any:
        seed = key[0]
        work = _work(dtype)
        n = ops.numel(shape)
        half = (n + 1) // 2
        k = _mantissas(jnp, seed, draw, 2 * half, work)
        u1 = work(1.0) - k[:half] * work(2.0 ** -_bits(work))
        theta = k[half:] * work(2.0 * np.pi * 2.0 ** -_bits(work))
        radius = jnp.sqrt(work(-2.0) * jnp.log(u1))
        z = jnp.concatenate([radius * jnp.cos(theta), radius * jnp.sin(theta)])[:n]
        if std != 1.0 or mean != 0.0:
            z = z * work(std) + work(mean)
        return z.astype(np.dtype(dtype)).reshape(shape)

    return random_normal


def bernoulli(jnp: Any) -> Callable:
    def random_bernoulli(key: tuple, *, draw: int, shape: tuple, dtype: str, p: float) -> Any:
        k = philox(jnp, key[0], draw, ops.numel(shape)) >> np.uint64(11)
        threshold = min(math.ceil(p * 2.0 ** 53), 2 ** 53)
        return (k < np.uint64(threshold)).astype(np.dtype(dtype)).reshape(shape)

    return random_bernoulli
