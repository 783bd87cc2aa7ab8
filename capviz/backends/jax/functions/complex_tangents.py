"""Complex ``tan`` and ``tanh`` in glibc's formulas (``ctan``, ``ctanh``, which NumPy calls),
where XLA's complex forms are others (225 ulps of ``|w|`` apart on drawn float64 values):

``tanh(x + yj) = sinh x cosh x / d + j sin y cos y / d``, ``d = sinh(x)**2 + cos(y)**2`` (or
``cos(y)**2`` alone where ``|sinh x|`` is below ``eps |cos y|``), and past ``|x| > t`` (``t =
(max_exp - 1) ln 2 / 2``: 354 in float64, 44 in float32) ``copysign(1, x) + j 4 sin y cos y /
e**2t / e**(2(|x| - t))`` (``/ e**2t`` twice past ``2t``); ``tan(x + yj)`` the same with the
roles of the parts exchanged (``sin x cos x / d + j sinh y cosh y / d``). The real functions are
jax.numpy's (complex64: in float64, rounded), each product rounded before an add reads it
(:func:`capviz.backends.jax.unfused.in_trace`: glibc is built without fused multiply-adds).
Measured against NumPy 2.4 on glibc 2.36 over 200,000 values of each type: within 4.4 ulps of
``|w|`` (``tanh``: 24 and ``tan``: 12 declared, ``carried_sources.APPROXIMATED``). Infinite, NaN and
huge parts fail the complex check of :mod:`capviz.backends.jax.checks`; a part NumPy may make
subnormal (the small part past ``t``) fails the check of
:mod:`capviz.backends.jax.subnormals.complex_functions` unless NumPy's formula makes it 0.
Real operands take jax.numpy's own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax.functions.complex_forms import forms, real_function
from capviz.backends.jax.trace import dtype_of
from capviz.backends.jax.unfused import in_trace


def threshold(part: Any) -> int:
    """glibc's ``t = (int) ((M_MAX_EXP - 1) * M_LN2 / 2)`` for the parts' float type."""
    return int((np.finfo(part).maxexp - 1) * math.log(2) / 2)


def _kernel(jnp: Any, h: Any, g: Any) -> tuple[Any, Any]:
    """glibc's ``ctanh`` of ``h + g j`` (finite): its (real, imaginary) parts; ``ctan`` of
    ``g + h j`` is (imaginary, real) of the same."""
    r = in_trace
    part = np.dtype(dtype_of(h))
    t = threshold(part)
    eps = float(np.finfo(part).eps)
    sin_g, cos_g = real_function(jnp, "sin", g), real_function(jnp, "cos", g)
    big = jnp.abs(h) > t
    exp_2t = real_function(jnp, "exp", jnp.asarray(2 * t, part))
    rest = jnp.where(big, jnp.abs(h) - t, jnp.zeros_like(h))
    small_big = r(r(4 * sin_g) * cos_g) / exp_2t
    small_big = jnp.where(rest > t, small_big / exp_2t,
                          small_big / real_function(jnp, "exp", 2 * rest))
    one_big = jnp.copysign(jnp.ones_like(h), h)
    moderate = jnp.where(big, jnp.zeros_like(h), h)
    sh, ch = real_function(jnp, "sinh", moderate), real_function(jnp, "cosh", moderate)
    den = jnp.where(jnp.abs(sh) > jnp.abs(cos_g) * eps, r(sh * sh) + r(cos_g * cos_g),
                    r(cos_g * cos_g))
    return (jnp.where(big, one_big, r(sh * ch) / den),
            jnp.where(big, small_big, r(sin_g * cos_g) / den))


def _tanh(jnp: Any, z: Any) -> Any:
    from jax import lax

    real, imag = _kernel(jnp, jnp.real(z), jnp.imag(z))
    return lax.complex(real, imag)


def _tan(jnp: Any, z: Any) -> Any:
    from jax import lax

    imag, real = _kernel(jnp, jnp.imag(z), jnp.real(z))
    return lax.complex(real, imag)


FORMS: dict[str, Callable[[Any], Callable]] = forms({"tan": _tan, "tanh": _tanh})
"""The forms of this module by op name."""
