"""The ``np.fft`` transforms, checked where pocketfft's rounding and XLA's can differ beyond
the tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.jax.cancellation import TOLERANCE
from capviz.backends.jax.trace import require

_TRANSFORMS = ("fft", "fft2", "fftn", "ifft", "ifft2", "ifftn", "rfft", "rfft2", "rfftn",
               "irfft", "irfft2", "irfftn", "hfft", "ihfft")


def _transform(name: str) -> Callable[[Any], Callable]:
    """A transform of ``np.fft``, checked where its rounding can reach beyond the tolerance:
    pocketfft in NumPy and XLA's FFT round otherwise, by up to about ``eps * log2(n)`` times
    the operand's norm in each output, so an output far below that norm (an int64 signal of
    extremes, whose transform is mostly rounding) differs beyond the tolerance (42.7 against
    56.9 for ``irfftn`` of int64 extremes)."""

    def make(jnp: Any) -> Callable:
        fn = ops.OPS[f"fft.{name}"].bind(jnp)

        def run(a: Any, *args: Any, **params: Any) -> Any:
            params = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}
            result = fn(a, *args, **params)
            _rounding_within_tolerance(jnp, jnp.asarray(a), result)
            return result

        run.__name__ = name
        return run

    return make


def _rounding_within_tolerance(jnp: Any, a: Any, result: Any) -> None:
    real = np.dtype(result.dtype).type(0).real.dtype
    n = max(math.prod(a.shape), math.prod(result.shape), 2)
    norm = jnp.sqrt(jnp.sum(jnp.abs(a.astype(result.dtype)) ** 2))
    bound = norm * (float(np.finfo(real).eps) * (math.log2(n) + 1))
    rtol, atol = TOLERANCE
    require(jnp.all(bound <= atol + rtol * jnp.abs(result)) | ~jnp.isfinite(norm),
            "np.fft: an output of the transform lies far below its operand's norm, within "
            "the rounding of the transform, which pocketfft (NumPy) and XLA's FFT do "
            "otherwise: they differ there beyond the tolerance; replay with backend='numpy'")


FORMS: dict[str, Callable[[Any], Callable]] = {
    f"fft.{name}": _transform(name) for name in _TRANSFORMS}
"""The transforms by op name."""
