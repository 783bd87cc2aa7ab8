"""The magnitudes the run-time tests of products larger than one block read
(:mod:`capviz.backends.dask.product_checks`, :mod:`capviz.backends.dask.chained`): the largest
finite magnitude of an array, and the largest 2-norm of its finite magnitudes along some axes,
each one task per block (the magnitudes taken, the non-finite ones dropped and each block
reduced in one NumPy call: before stop 40 five dask.array ops a block, which made an MLP's
tests cost as much as its layers) and a small reduction across the blocks' results."""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np


def largest(x: Any) -> Any:
    """The largest finite magnitude of dask array ``x`` (a complex value's modulus), float64,
    0-d (0 where it has none)."""
    if not x.ndim:
        return x.map_blocks(_magnitudes, dtype=np.float64, meta=np.empty((), np.float64))
    chunks = tuple((1,) * len(c) for c in x.chunks)
    return x.map_blocks(_block_largest, chunks=chunks, dtype=np.float64,
                        meta=np.empty((0,) * x.ndim, np.float64)).max()


def largest_norm(x: Any, axes: tuple) -> Any:
    """The largest 2-norm of dask array ``x``'s finite magnitudes along ``axes`` (float64,
    0-d), their squares summed in float64 (within ``gamma`` of the exact sum: the caller's
    slack)."""
    if not axes:
        return largest(x)
    chunks = tuple((1,) * len(c) if k in axes else c for k, c in enumerate(x.chunks))
    squares = x.map_blocks(_block_squares, axes, chunks=chunks, dtype=np.float64,
                           meta=np.empty((0,) * x.ndim, np.float64))
    norms = da.sqrt(squares.sum(axis=axes))
    return norms.max() if norms.ndim else norms


def _magnitudes(block: np.ndarray) -> np.ndarray:
    """The finite magnitudes of ``block`` in float64 (a complex value's modulus from its parts
    in float64: its own type's modulus rounds), 0 for the others."""
    block = np.asarray(block)
    with np.errstate(all="ignore"):
        magnitude = np.hypot(block.real.astype(np.float64), block.imag.astype(np.float64)) \
            if block.dtype.kind == "c" else np.abs(block).astype(np.float64)
    return np.where(np.isfinite(magnitude), magnitude, 0.0)


def _block_largest(block: np.ndarray) -> np.ndarray:
    return np.full((1,) * np.ndim(block), np.max(_magnitudes(block), initial=0.0))


def _block_squares(block: np.ndarray, axes: tuple) -> np.ndarray:
    magnitude = _magnitudes(block)
    return np.sum(magnitude * magnitude, axis=axes, keepdims=True)
