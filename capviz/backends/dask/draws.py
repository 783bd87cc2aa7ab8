"""Random ops as dask arrays: each block draws the words of its own global positions
(:func:`capviz.backends.dask.random.random_block`), so values never depend on the chunking.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import dask.array as da
import numpy as np
from dask.array.core import normalize_chunks
from dask.base import tokenize

from capviz import ops
from capviz.backends.dask.random import random_block
from capviz.backends.dask.shapes import meta_array
from capviz.backends.dask.tasks import CHUNKS, NODE, Guarded


def _random_chunks(shape: tuple, dtype: np.dtype) -> tuple:
    """Chunks of a random op's array: the replay's ``chunks`` where it fits the shape, else
    ``"auto"`` (values never depend on the chunking)."""
    chunks = CHUNKS.get()
    if not isinstance(chunks, Mapping):
        try:
            return normalize_chunks(chunks, shape, dtype=dtype)
        except (ValueError, TypeError):
            pass
    return normalize_chunks("auto", shape, dtype=dtype)


class _RandomBlock:
    """A random op's task: :func:`random_block` told where its block lies (``block_info``)."""

    def __init__(self, fn: Callable, args: tuple) -> None:
        self.fn = fn
        self.args = args

    def __call__(self, block_info: Any = None) -> np.ndarray:
        return self.fn(*self.args, block_info=block_info)


def random_op(op: ops.Op) -> Callable:
    def run(seed: int, *, draw: int, shape: Any, dtype: str, **params: Any) -> Any:
        shape = tuple(shape)
        dt = np.dtype(dtype)
        chunks = _random_chunks(shape, dt)
        name = f"capviz-{op.name}-" + tokenize(seed, draw, shape, dt.str,
                                               sorted(params.items()), chunks)
        fn = _RandomBlock(Guarded(random_block, NODE.get()),
                          (op.name, seed, draw, shape, dt, params))
        return da.map_blocks(fn, chunks=chunks, dtype=dt, meta=meta_array(shape, dt),
                             name=name)

    return run
