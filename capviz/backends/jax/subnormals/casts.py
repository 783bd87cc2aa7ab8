"""Casts to a narrower float type (``astype``: float64 or complex128 to float32 or complex64):
NumPy rounds a value below the narrower type's smallest normal to a subnormal of it, where XLA's
conversion flushes it to 0 (``np.array([1e-40]).astype(np.float32)`` is ``1e-40`` in NumPy,
``0`` in XLA, measured with jax 0.10.2). A cast to float16 keeps its subnormals (XLA computes
float16 in float32), and a cast that widens or keeps the type makes none."""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.backends.jax.subnormals.operands import FLUSHED
from capviz.backends.jax.trace import dtype_of, poisoned, require_each

_CAST = ("a cast to {dtype} gave 0 where NumPy's cast is a nonzero subnormal {part}: XLA "
         "flushes subnormal results to zero, and a later division, log or large factor would "
         "give another number than NumPy's; replay with backend='numpy', or scale the values "
         "away from {part}'s smallest normal ({tiny:.3g}) before the cast")


def _part(dtype: np.dtype) -> np.dtype:
    if dtype.kind != "c":
        return dtype
    return np.dtype(np.float32 if dtype.itemsize == 8 else np.float64)


def narrowing(jnp: Any, x: Any, r: Any) -> Any:
    """``r``, the cast of ``x``, checked where it narrows a float or complex type to a type XLA
    flushes: a part of ``r`` that is 0 where that part of ``x`` is above half the narrower
    type's smallest subnormal (which NumPy rounds to a nonzero value) fails. A real result is
    poisoned in the fast program (:func:`capviz.backends.jax.trace.poisoned`); a complex one
    is a mask merged per shape, as the other complex checks."""
    source, target = dtype_of(x), dtype_of(r)
    if source.kind not in "fc" or target.kind not in "fc":
        return r
    part = _part(target)
    if part not in FLUSHED or _part(source).itemsize <= part.itemsize:
        return r
    info = np.finfo(part)
    half = float(info.smallest_subnormal) / 2
    pairs = [(jnp.real(r), jnp.real(x))]
    if target.kind == "c" and source.kind == "c":
        pairs.append((jnp.imag(r), jnp.imag(x)))
    ok = True
    for got, given in pairs:
        ok = ok & ((got != 0) | ~(jnp.abs(given) > half))
    message = _CAST.format(dtype=target.name, part=part.name, tiny=float(info.tiny))
    if target.kind == "c":
        require_each(ok, message)
        return r
    return poisoned(r, ok, message)
