"""``np.fft``: the one- and n-dimensional transforms, real and Hermitian variants, and shifts.

Shapes follow NumPy's documentation: the transformed axes take the length ``n`` (or ``s``)
given, a real forward transform keeps ``n // 2 + 1`` frequencies on its last axis, and an inverse
real transform returns ``2 * (m - 1)`` points unless told otherwise. Dtypes come from proxies
(NumPy 2 keeps single precision: float32 in, complex64 out).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from capviz.core.errors import UnsupportedOperationError
from capviz.ops.spec import FunctionSpec, axis_index, define


def _length(n: int) -> int:
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return n


def _one_axis(last: Callable[[int, int | None], int], name: str = "") -> Callable:
    """A 1-d transform's rule; ``last(m, n)`` is the output length of the transformed axis."""

    def rule(shapes: list, params: dict) -> tuple:
        shape = list(shapes[0])
        if not shape:
            raise ValueError("Invalid number of FFT data points (0) specified.")
        ax = axis_index(params.get("axis", -1), len(shape))
        if shape[ax] == 0 and name in _UNWRITTEN:
            raise UnsupportedOperationError(
                f"np.fft.{name} of an empty axis with n={params.get('n')}: NumPy returns "
                "memory its transform never wrote (other values at each call), which no "
                "replay can give; Fix: pass an operand with at least one element along the "
                "axis (np.zeros of the length you mean)")
        shape[ax] = last(shape[ax], params.get("n"))
        return tuple(shape)

    return rule


_UNWRITTEN = frozenset(("irfft", "hfft"))
"""The inverse real transforms whose output NumPy 2 leaves unwritten for an empty axis padded
to ``n`` points (``np.fft.irfft(np.zeros(0), n=5)``: subnormal garbage, found by the thorough
differential profile)."""


def _n_axes(last: Callable[[int, int | None], int], default_axes: tuple | None) -> Callable:
    """An n-d transform's rule: every axis takes ``s`` (or keeps its length); the last uses
    ``last``."""

    def rule(shapes: list, params: dict) -> tuple:
        shape = list(shapes[0])
        s, axes = params.get("s"), params.get("axes", default_axes)
        if axes is None:
            axes = tuple(range(len(shape) - len(s), len(shape))) if s is not None \
                else tuple(range(len(shape)))
        axes = [axis_index(a, len(shape)) for a in axes]
        if s is not None and len(s) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
        for i, ax in enumerate(axes):
            n = None if s is None else s[i]
            if i == len(axes) - 1:
                shape[ax] = last(shape[ax], n)
            else:
                shape[ax] = _length(shape[ax] if n is None else n)
        return tuple(shape)

    return rule


def _complex(m: int, n: int | None) -> int:
    return _length(m if n is None else n)


def _real_forward(m: int, n: int | None) -> int:
    return _length(m if n is None else n) // 2 + 1


def _real_inverse(m: int, n: int | None) -> int:
    return _length(2 * (m - 1) if n is None else n)


def _dtype_of(name: str) -> Callable:
    """The transform's dtype for an input dtype, from the transform of two ones."""
    transform = getattr(np.fft, name)

    def rule(dtypes: list, params: dict) -> np.dtype:
        return transform(np.ones(2, dtypes[0])).dtype

    return rule


for _name, _last in [("fft", _complex), ("ifft", _complex), ("rfft", _real_forward),
                     ("ihfft", _real_forward), ("irfft", _real_inverse),
                     ("hfft", _real_inverse)]:
    define(FunctionSpec(f"fft.{_name}", ("a",), _one_axis(_last, _name), _dtype_of(_name)))
for _name, _last in [("fftn", _complex), ("ifftn", _complex), ("rfftn", _real_forward),
                     ("irfftn", _real_inverse)]:
    _one = _name[:-1]
    define(FunctionSpec(f"fft.{_name}", ("a",), _n_axes(_last, None), _dtype_of(_one)))
    define(FunctionSpec(f"fft.{_one}2", ("a",), _n_axes(_last, (-2, -1)), _dtype_of(_one)))
def _shift(shapes: list, params: dict) -> tuple:
    shape = tuple(shapes[0])
    axes = params.get("axes")
    for a in () if axes is None else (axes,) if isinstance(axes, int) else axes:
        axis_index(a, len(shape))
    return shape


define(FunctionSpec("fft.fftshift", ("x",), _shift, "same"))
define(FunctionSpec("fft.ifftshift", ("x",), _shift, "same"))
