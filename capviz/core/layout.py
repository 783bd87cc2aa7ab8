"""Constants keep their memory layout: private copies with the same strides, and their file form.

NumPy picks its kernels by layout: ``c @ x`` runs BLAS for a C- or Fortran-ordered ``c`` and a
plain loop for a reversed or gapped one, and the two round differently. So a constant recorded
from an ndarray must replay with the layout the eager code saw, not a re-laid-out copy.

A C- or Fortran-contiguous array is copied in its order (``.npy`` keeps both). Any other array is
copied into a private buffer and viewed with its strides. Strides are kept exactly for every
array without gaps (reversed, transposed, broadcast with stride 0, overlapping windows); a gapped
view (``w[:, ::3]``) keeps the sign and order of its strides, its unit-stride axes and a gap of
at most one element where it had one, which is all NumPy's kernel choice (contiguous loop or
not, BLAS or not) reads, without keeping the memory it skipped. In a graph file such a constant
is its values in C order plus its ``strides``; :func:`with_strides` accepts only the compact
strides :func:`compact_strides` makes, so a file cannot make loading allocate more than the
values' size times a small factor.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def compact_strides(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> tuple:
    """``strides`` with every gap shrunk to at most one element (see the module docstring).

    Axes are walked from the smallest stride up; an axis whose stride equals the extent of the
    axes inside it stays dense, one that skips memory keeps a gap of ``gap % itemsize`` bytes (or
    one element), one that overlaps them keeps its stride. Size-1 and stride-0 axes are kept.
    """
    out = list(strides)
    axes = sorted((i for i, (n, s) in enumerate(zip(shape, strides)) if n > 1 and s != 0),
                  key=lambda i: (abs(strides[i]), -i))
    old_extent = new_extent = itemsize
    for i in axes:
        size = abs(strides[i])
        if size > old_extent:
            gap = size - old_extent
            new = new_extent + (gap % itemsize or itemsize)
        elif size == old_extent:
            new = new_extent
        else:  # overlapping (a sliding window): the stride is the layout
            new = size
        out[i] = new if strides[i] > 0 else -new
        old_extent = size * (shape[i] - 1) + old_extent
        new_extent = new * (shape[i] - 1) + new_extent
    return tuple(out)


def _span(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> tuple[int, int]:
    """Bytes before and after the first element that the layout reaches: ``(low <= 0, high)``."""
    low, high = 0, itemsize
    for n, s in zip(shape, strides):
        if s < 0:
            low += s * (n - 1)
        else:
            high += s * (n - 1)
    return low, high


def _strided_like(values: np.ndarray, strides: Sequence[int]) -> np.ndarray:
    """A fresh array holding ``values`` laid out with ``strides`` (already compact)."""
    itemsize = values.dtype.itemsize
    low, high = _span(values.shape, strides, itemsize)
    buffer = np.empty(high - low, np.uint8)
    out = np.ndarray(values.shape, values.dtype, buffer=buffer, offset=-low, strides=strides)
    out[...] = values
    return out


def file_strides(arr: np.ndarray) -> list[int] | None:
    """The strides a graph file records for constant ``arr``: ``None`` for a C- or
    Fortran-contiguous array (``.npy`` keeps those orders)."""
    if arr.flags.c_contiguous or arr.flags.f_contiguous or arr.size == 0:
        return None
    return [int(s) for s in arr.strides]


def layout_copy(arr: np.ndarray) -> np.ndarray:
    """A private copy of ``arr`` with the same layout (see the module docstring)."""
    if arr.flags.c_contiguous or arr.size == 0:
        return arr.copy(order="C")
    if arr.flags.f_contiguous:
        return arr.copy(order="F")
    return _strided_like(arr, compact_strides(arr.shape, arr.strides, arr.itemsize))


def with_strides(values: np.ndarray, strides: object) -> np.ndarray:
    """``values`` laid out with the ``strides`` a graph file recorded.

    Raises:
        ValueError: ``strides`` is not a list of one int per axis, or not the compact strides
            capviz writes.
    """
    ndim = values.ndim
    if (not isinstance(strides, list) or len(strides) != ndim
            or not all(type(s) is int for s in strides)):
        raise ValueError(f"strides must be a list of {ndim} integers, got {strides!r}")
    if compact_strides(values.shape, strides, values.itemsize) != tuple(strides):
        raise ValueError(f"strides {strides} are not the compact strides capviz writes for "
                         f"{values.dtype}{list(values.shape)}")
    return _strided_like(values, strides)


def layout_key(arr: np.ndarray) -> object:
    """What :func:`layout_copy` keeps of ``arr``'s layout: two arrays with equal keys replay
    alike."""
    if arr.flags.c_contiguous or arr.size == 0:
        return "C"
    if arr.flags.f_contiguous:
        return "F"
    return compact_strides(arr.shape, arr.strides, arr.itemsize)


_SMALL = 1 << 16  # bytes: arrays up to this size are compared as two bytes objects


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """True when ``a`` and ``b`` have the same shape, dtype and identical bits (``-0.0``
    differs from ``0.0``; a NaN equals the same NaN). One pass, no copies."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.nbytes <= _SMALL and a.flags.c_contiguous and b.flags.c_contiguous:
        return a.tobytes() == b.tobytes()  # two small copies: a tenth of the ufunc's overhead
    if a.flags.c_contiguous and b.flags.c_contiguous and a.nbytes % 8 == 0 and a.nbytes:
        words_a, words_b = a.reshape(-1).view(np.uint64), b.reshape(-1).view(np.uint64)
        return not (words_a != words_b).any()  # whole words: fewest elements to compare
    if a.dtype.kind == "c":
        return same_bits(a.real, b.real) and same_bits(a.imag, b.imag)
    size = a.dtype.itemsize
    if size not in (1, 2, 4, 8) or a.dtype.kind not in "biuf":
        return a.tobytes() == b.tobytes()
    bits = np.dtype(f"u{size}")
    return not (a.view(bits) != b.view(bits)).any()  # faster than np.array_equal
