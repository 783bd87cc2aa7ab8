"""Random ops per block: the values :mod:`capviz.ops.random` gives at a block's global positions.

A random op's array of ``shape``, cut into blocks (Dask's chunks), is drawn block by block: a
block at ``[(start, stop)]`` per axis covers runs of consecutive C-order positions, and each
position ``p`` uses the Philox words a whole-array draw gives it (word ``p`` for float64 and
bernoulli, uint32 half ``p`` for float32, the Box-Muller pairs ``k[i]``, ``k[half + i]`` for
normal). A run is drawn by NumPy's own Philox advanced to its first word; a block of many short
runs (a chunked last axis) draws at its positions at once with
:func:`capviz.ops.random.philox_at`. So the values never depend on the chunking, nor on where a
block runs. Pure NumPy: the tasks of a cluster's workers run it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from capviz.backends.registry import get
from capviz.ops.random import philox_at


def _element_runs(shape: tuple, location: list) -> tuple[np.ndarray, int]:
    """The block at ``location`` (``[(start, stop)]`` per axis) of an array of ``shape`` as runs
    of consecutive C-order positions: (the runs' first positions, the run length)."""
    nd = len(shape)
    j = nd - 1
    while j >= 0 and tuple(location[j]) == (0, shape[j]):
        j -= 1
    if j < 0:
        return np.zeros(1, dtype=np.int64), math.prod(shape)
    strides = [math.prod(shape[k + 1:]) for k in range(nd)]
    starts = np.zeros((), dtype=np.int64)
    for k in range(j):
        lo, hi = location[k]
        starts = np.add.outer(starts, np.arange(lo, hi, dtype=np.int64) * strides[k])
    starts = np.ravel(starts) + location[j][0] * strides[j]
    return starts, (location[j][1] - location[j][0]) * strides[j]


_FEW_RUNS = 64  # up to this many runs (or runs this long) draw with NumPy's Philox per run


def _mantissas(seed: int, draw: int, starts: np.ndarray, lengths: np.ndarray,
               work: Any) -> np.ndarray:
    """Mantissas ``k[p]`` (as in :mod:`capviz.ops.random`) at the positions of the runs
    ``[start, start + length)``, concatenated: float32 from uint32 half ``p``, float64 from
    word ``p``."""
    if len(starts) <= _FEW_RUNS or lengths.mean() >= 256:
        numpy = get("numpy")
        parts = []
        for start, n in zip(starts.tolist(), lengths.tolist()):
            if work is np.float32:
                first = start // 2
                words = numpy.random_bits(seed, draw, (start + n + 1) // 2 - first, first)
                halves = _halves(words)[start - 2 * first:start - 2 * first + n]
                parts.append((halves >> np.uint32(8)).astype(np.float32))
            else:
                words = numpy.random_bits(seed, draw, n, start)
                parts.append((words >> np.uint64(11)).astype(np.float64))
        return np.concatenate(parts) if parts else np.zeros(0, work)
    offsets = np.cumsum(lengths) - lengths
    positions = np.repeat(starts - offsets, lengths) + np.arange(lengths.sum(), dtype=np.int64)
    if work is np.float32:
        words = philox_at(np, seed, draw, positions >> 1)
        halves = np.where(positions & 1, words >> np.uint64(32), words & np.uint64(0xFFFFFFFF))
        return (halves.astype(np.uint32) >> np.uint32(8)).astype(np.float32)
    return (philox_at(np, seed, draw, positions) >> np.uint64(11)).astype(np.float64)


def _halves(words: np.ndarray) -> np.ndarray:
    """uint64 words as uint32 halves, each word's low half first."""
    low = (words & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    high = (words >> np.uint64(32)).astype(np.uint32)
    return np.stack([low, high], axis=1).reshape(-1)


def _words(seed: int, draw: int, starts: np.ndarray, length: int) -> np.ndarray:
    """Raw words at the positions of the runs (all of ``length``), concatenated."""
    if len(starts) <= _FEW_RUNS or length >= 256:
        numpy = get("numpy")
        parts = [numpy.random_bits(seed, draw, length, s) for s in starts.tolist()]
        return np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    return philox_at(np, seed, draw, starts[:, None] + np.arange(length, dtype=np.int64))


def random_block(kind: str, seed: int, draw: int, shape: tuple, dtype: np.dtype, params: dict,
                 block_info: Any = None) -> np.ndarray:
    """One block of a random op of ``shape``: the values :mod:`capviz.ops.random` gives at the
    block's global positions (the block's location comes from ``block_info``)."""
    location = block_info[None]["array-location"]
    block = tuple(hi - lo for lo, hi in location)
    starts, length = _element_runs(shape, location)
    if not math.prod(block):
        return np.zeros(block, dtype)
    lengths = np.full(len(starts), length, dtype=np.int64)
    work = np.float32 if dtype == np.float32 else np.float64
    bits = 24 if work is np.float32 else 53
    if kind == "random_bernoulli":
        k = _words(seed, draw, starts, length) >> np.uint64(11)
        threshold = math.ceil(params["p"] * 2.0 ** 53)
        return (k < np.uint64(min(threshold, 2 ** 53))).astype(dtype).reshape(block)
    if kind == "random_uniform":
        u = _mantissas(seed, draw, starts, lengths, work)
        step = (work(params["high"]) - work(params["low"])) * work(2.0 ** -bits)
        return (u * step + work(params["low"])).astype(dtype).reshape(block)
    n = math.prod(shape)  # normal: element i pairs mantissas k[i] and k[half + i] (i < half)
    half = (n + 1) // 2
    a_starts, b_starts, a_len, first = _normal_runs(starts, length, half)
    ka = _mantissas(seed, draw, a_starts, a_len, work)
    kb = _mantissas(seed, draw, b_starts, a_len, work)
    unit = work(2.0 ** -bits)
    u1 = work(1.0) - ka * unit
    theta = kb * work(2.0 * np.pi * 2.0 ** -bits)
    radius = np.sqrt(work(-2.0) * np.log(u1))
    z = np.where(first, radius * np.cos(theta), radius * np.sin(theta))
    std, mean = params["std"], params["mean"]
    if std != 1.0 or mean != 0.0:
        z = z * work(std) + work(mean)
    return z.astype(dtype).reshape(block)


def _normal_runs(starts: np.ndarray, length: int, half: int) -> tuple:
    """Element runs split at ``half``: the runs of ``a`` and ``b`` mantissa positions (element
    ``i < half`` uses ``k[i]``, ``k[half + i]`` and cos; ``i >= half`` uses ``k[i - half]``,
    ``k[i]`` and sin), their lengths, and which elements are in the first half."""
    ends = starts + length
    cut = np.clip(half, starts, ends)
    lo_len, hi_len = cut - starts, ends - cut
    a = np.stack([starts, cut - half], axis=1).reshape(-1)
    b = np.stack([starts + half, cut], axis=1).reshape(-1)
    lens = np.stack([lo_len, hi_len], axis=1).reshape(-1)
    first = np.repeat(np.tile([True, False], len(starts)), lens)
    keep = lens > 0
    return a[keep], b[keep], lens[keep], first
