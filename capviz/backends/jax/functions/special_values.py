"""``np.nan_to_num`` with NumPy's casts of its replacements.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax.trace import dtype_of


def _nan_to_num(jnp: Any) -> Callable:
    """np.nan_to_num with its replacements ``nan``/``posinf``/``neginf`` cast to the array's
    (real) type on the host, as NumPy's ``copyto`` casts them (1e300 into float32 is inf),
    and put in place by ``where`` on the real and imaginary parts (jax.numpy's nan_to_num
    clips a replacement to ``finfo.max``)."""

    def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
                   neginf: Any = None) -> Any:
        x = jnp.asarray(x)
        real = np.dtype(dtype_of(x).type(0).real.dtype)
        if real.kind != "f":
            return x
        info = np.finfo(real)
        posinf = info.max if posinf is None else posinf
        neginf = info.min if neginf is None else neginf
        with np.errstate(all="ignore"):
            nan, posinf, neginf = (np.asarray(v).astype(real) for v in (nan, posinf, neginf))

        def replaced(d: Any) -> Any:  # NumPy's masks, all taken from the original values
            kept = jnp.where(jnp.isposinf(d), posinf, jnp.where(jnp.isneginf(d), neginf, d))
            return jnp.where(jnp.isnan(d), nan, kept)

        if dtype_of(x).kind == "c":
            return jax_complex(replaced(jnp.real(x)), replaced(jnp.imag(x)), dtype_of(x))
        return replaced(x)

    return nan_to_num


def jax_complex(real: Any, imag: Any, dtype: np.dtype) -> Any:
    """The complex array of ``dtype`` with these real and imaginary parts."""
    from jax import lax

    return lax.complex(real, imag).astype(dtype)


FORMS: dict[str, Callable[[Any], Callable]] = {"nan_to_num": _nan_to_num}
"""The forms of this module by op name, each written with NumPy's signature."""
