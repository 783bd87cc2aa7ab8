"""Random tensors: drawn on an eager device, recorded inside a capture.

``cv.random.uniform(shape)`` draws from the device's counter-based generator; inside a capture
scope the draw is recorded as a random op whose stream is fixed by the scope's ``rng`` device's
seed and the draw's index, so a replay gives exactly the values eager execution would have.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz import ops
from capviz.devices import Device, default_device
from capviz.trace.context import active
from capviz.trace.tensor import Tensor

__all__ = ["bernoulli", "normal", "uniform"]


def _shape(shape: Any) -> tuple:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
    out = tuple(int(s) for s in shape)
    if any(s < 0 for s in out):
        raise ValueError(f"shape must hold non-negative sizes, got {out}")
    return out


def _float_dtype(dtype: Any) -> str:
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise TypeError(f"random floats are float32 or float64, got {dt}")
    return dt.name


def _draw(name: str, shape: Any, dtype: str, device: Device | None, **dist: Any) -> Tensor:
    op = ops.OPS[name]
    params = {"shape": _shape(shape), "dtype": dtype, **dist}
    recorder = active()
    if recorder is not None:
        return recorder.random(op, params)
    device = device or default_device()
    params["draw"] = device.next_draw()
    return device.backend.random(op, device.rng_key(), params)


def uniform(shape: Any, low: float = 0.0, high: float = 1.0, dtype: Any = "float32",
            device: Device | None = None) -> Tensor:
    """Uniform values on ``[low, high)``; bit-identical on NumPy and CuPy."""
    return _draw("random_uniform", shape, _float_dtype(dtype), device, low=float(low),
                 high=float(high))


def normal(shape: Any, mean: float = 0.0, std: float = 1.0, dtype: Any = "float32",
           device: Device | None = None) -> Tensor:
    """Normal values (Box-Muller); NumPy and CuPy agree to a few ulp."""
    return _draw("random_normal", shape, _float_dtype(dtype), device, mean=float(mean),
                 std=float(std))


def bernoulli(shape: Any, p: float = 0.5, dtype: Any = "bool",
              device: Device | None = None) -> Tensor:
    """1 (``True``) with probability ``p``, else 0: dropout masks. Bit-identical across backends."""
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    return _draw("random_bernoulli", shape, np.dtype(dtype).name, device, p=float(p))
