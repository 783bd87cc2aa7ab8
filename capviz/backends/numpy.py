"""The NumPy backend: the host namespace, mutable arrays, the memory plan, and NumPy's own Philox
for random bits. Every other backend is compared with it."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from capviz.backends.registry import Backend, register
from capviz.ops.random import MASK64


class NumpyBackend(Backend):
    """Replay on NumPy (``backend="numpy"``): bit for bit what eager NumPy computes.

    Plain ndarrays are its own (``np.memmap`` is read as the ndarray it is); results live in this
    machine's memory, so a replay that would not fit is refused before it allocates.
    """

    name = "numpy"
    extra = None
    mutable = True
    eager = True
    exact = True
    host_memory = True

    def namespace(self) -> Any:
        return np

    def from_host(self, value: Any) -> np.ndarray:
        return np.asarray(value)

    def to_host(self, value: Any) -> np.ndarray:
        return np.asarray(value)

    def is_native(self, value: Any) -> bool:
        return type(value) is np.ndarray

    @property
    def array_type(self) -> type:
        return np.ndarray

    def random_bits(self, seed: int, draw: int, n: int, start: int = 0) -> np.ndarray:
        """NumPy's own ``np.random.Philox`` (C code) makes the words."""
        key = np.array([seed & MASK64, draw & MASK64], dtype=np.uint64)
        gen = np.random.Philox(key=key)
        if start:
            gen.advance(start // 4)  # counter blocks of 4 words
            skip = start % 4
            return gen.random_raw(skip + n)[skip:]
        return gen.random_raw(n)

    def random_u32(self, seed: int, draw: int, n: int) -> np.ndarray:
        words = self.random_bits(seed, draw, (n + 1) // 2)
        if sys.byteorder == "little":  # a word's low half comes first in memory
            return words.view(np.uint32)[:n]
        return super().random_u32(seed, draw, n)  # pragma: no cover - big-endian hosts


register(NumpyBackend())
