"""Input values for the differential suite: dtypes, and the value generators (normal values and
NumPy's special values: inf, NaN, -0.0, huge, tiny, subnormals)."""

from __future__ import annotations

import numpy as np

DTYPES = ("bool", "int8", "int32", "int64", "uint8", "uint32", "float16", "float32",
          "float64", "complex64", "complex128")
"""The dtypes a case's data inputs take."""

GENERATORS = ("normal", "special", "extreme", "subnormal")
"""The value generators: unit-scale values; a mix of NumPy's special values with ordinary
ones; huge and tiny magnitudes; subnormals among ordinary values."""


def _specials(dt: np.dtype) -> np.ndarray:
    """The special values of a dtype (a float's: infinities, NaN, signed zeros, the largest,
    the smallest normal and subnormal; an integer's: its extremes)."""
    if dt.kind == "b":
        return np.array([True, False])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.array([info.min, info.max, 0, 1, info.max // 2, info.min // 2 or 2], dt)
    info = np.finfo(dt)
    return np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, info.max, -info.max, info.tiny,
                     info.smallest_subnormal, -info.smallest_subnormal, 1.0, -1.5],
                    dtype=dt if dt.kind == "f" else info.dtype)


def _real(rng: np.random.Generator, shape: tuple, dt: np.dtype, generator: str) -> np.ndarray:
    """Real (float, integer or boolean) values of ``dt`` by ``generator``."""
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        if generator in ("normal", "subnormal"):
            low = -5 if dt.kind == "i" else 0
            return rng.integers(low, 6, shape).astype(dt)
        base = rng.integers(-5 if dt.kind == "i" else 0, 6, shape).astype(dt)
        pick = _specials(dt)[rng.integers(0, 6, shape)]
        return np.where(rng.random(shape) < 0.5, pick, base)
    base = rng.standard_normal(shape).astype(dt)
    info = np.finfo(dt)
    with np.errstate(all="ignore"):
        if generator == "normal":
            return base
        if generator == "special":
            pick = _specials(dt).astype(dt)[rng.integers(0, 12, shape)]
            return np.where(rng.random(shape) < 0.4, pick, base)
        if generator == "extreme":
            huge = (base * (info.max / 4)).astype(dt)
            tiny = (base * info.tiny * 8).astype(dt)
            return np.where(rng.random(shape) < 0.5, huge, tiny)
        sub = (rng.integers(1, 50, shape) * info.smallest_subnormal).astype(dt)
        return np.where(rng.random(shape) < 0.3, sub * np.sign(base), base)


def fill(rng: np.random.Generator, shape: tuple, dtype: str, generator: str) -> np.ndarray:
    """An array of ``shape`` and ``dtype`` holding values of ``generator``."""
    dt = np.dtype(dtype)
    if dt.kind != "c":
        return _real(rng, shape, dt, generator)
    part = np.dtype(np.float32 if dt == np.complex64 else np.float64)
    real = _real(rng, shape, part, generator)
    imag = _real(rng, shape, part, generator)
    return (real + 1j * imag).astype(dt)


def non_contiguous(a: np.ndarray) -> np.ndarray:
    """``a``'s values in an array that is not C-contiguous (Fortran order, or every other
    element of a larger buffer): what a transposed or sliced input hands a function."""
    if a.ndim >= 2 and a.size > 1:
        return np.asfortranarray(a)
    wide = np.repeat(a.reshape(-1), 2).reshape(a.shape[:-1] + (-1,)) if a.ndim else None
    if wide is None:
        return a
    return wide[..., ::2]
