"""Complex ``log1p`` and ``expm1`` in NumPy's own formulas (``numpy/_core/src/umath/
funcs.inc.src``: ``nc_log1p``, ``nc_expm1``; C99 has neither), where XLA's complex forms are
others (``log1p`` of a complex with a huge real part: ``89.07-0.785j`` against NumPy's
``inf-0.785j``; 1.4e7 ulps of ``|z|`` apart near ``z = -1 + bj``):

* ``log1p(a + bj) = log(hypot(a + 1, b)) + j atan2(b, a + 1)``. The hypotenuse is glibc's
  (:func:`hypot`), bit for bit: the log of a hypotenuse near 1 turns one ulp of it into any
  relative error of the real part, and jax.numpy's own ``hypot`` is another ulp on a third of
  float64 values. The log and the angle are jax.numpy's, within an ulp of glibc's.
* ``expm1(a + bj) = (expm1(a) cos(b) - 2 sin(b/2)**2) + j exp(a) sin(b)``, each product rounded
  before the subtract reads it (:func:`capviz.backends.jax.unfused.in_trace`: no fused
  multiply-add, as NumPy's C).

complex64 takes the real functions in float64, rounded to float32 (glibc's float functions are
correctly rounded but in rare cases, which this is nearest to). Measured against NumPy 2.4 on
glibc 2.36 over 300,000 values (parts 1e-12 to 1e3, a third near ``a = -1``):
complex128 ``log1p`` is NumPy's bits on every value, complex64 within 1 ulp of ``|w|`` (94%
bits); ``expm1`` within 2.9 (complex128, 69% bits) and 2.2 (complex64, 97% bits) ulps of
``|w|``: inside the tolerance the backend declares for them
(``carried_sources.APPROXIMATED``). Signed zeros follow NumPy's on the grid of special values
(``tests/test_jax_complex_exponentials.py``).
Infinite, NaN and huge parts fail the complex check of :mod:`capviz.backends.jax.checks`;
parts NumPy would make subnormal fail the check of
:mod:`capviz.backends.jax.subnormals.complex_functions`. Real operands take jax.numpy's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax.functions.complex_forms import forms, real_function
from capviz.backends.jax.trace import dtype_of
from capviz.backends.jax.unfused import in_trace

_SCALE = 2.0 ** -600
_LARGE = 2.0 ** 511
_TINY = 2.0 ** -511
_EPS = 2.0 ** -54
"""glibc's constants of ``__hypot`` (``sysdeps/ieee754/dbl-64/e_hypot.c``)."""

def hypot(jnp: Any, x: Any, y: Any) -> Any:
    """glibc's ``hypot`` (2.35 and later) of float64 ``x`` and ``y``, finite: the legs scaled
    by ``2**-600`` past ``2**511`` or by ``2**600`` below ``2**-511``, the sum where the smaller
    is below ``2**-54`` of the larger, else its kernel without fused multiply-adds (``sqrt(ax**2
    + ay**2)`` corrected by the rounding error of the squares), each product rounded (its bits
    but where the smaller leg is below ``2**-440``: the subnormal check's
    ``HYPOT_UNDERFLOW``); float32:
    glibc's ``hypotf``, ``sqrt`` of the float64 sum of squares, rounded."""
    if dtype_of(x) == np.float32:
        xd, yd = x.astype(np.float64), y.astype(np.float64)
        return jnp.sqrt(in_trace(xd * xd) + in_trace(yd * yd)).astype(np.float32)
    r = in_trace
    x, y = jnp.abs(x), jnp.abs(y)
    ax, ay = jnp.maximum(x, y), jnp.minimum(x, y)
    large, tiny = ax > _LARGE, ay < _TINY
    sx = jnp.where(large, ax * _SCALE, jnp.where(tiny, ax / _SCALE, ax))
    sy = jnp.where(large, ay * _SCALE, jnp.where(tiny, ay / _SCALE, ay))
    h = jnp.sqrt(r(sx * sx) + r(sy * sy))
    upper = h <= 2.0 * sy
    near = h - sy
    far = h - sx
    t1 = jnp.where(upper, r(sx * (2.0 * near - sx)), r(2.0 * far * (sx - 2.0 * sy)))
    t2 = jnp.where(upper, r((near - 2.0 * (sx - sy)) * near),
                   r((4.0 * far - sy) * sy) + r(far * far))
    kernel = h - (t1 + t2) / (2.0 * h)
    kernel = jnp.where(large, kernel / _SCALE, jnp.where(tiny, kernel * _SCALE, kernel))
    plain = jnp.where(tiny & ~large, ax >= ay / _EPS, ay <= ax * _EPS)
    return jnp.where(plain, ax + ay, kernel)


def _log1p(jnp: Any, z: Any) -> Any:
    from jax import lax

    a, b = jnp.real(z), jnp.imag(z)
    shifted = a + 1
    if dtype_of(a) == np.float32:
        angle = jnp.arctan2(b.astype(np.float64), shifted.astype(np.float64)).astype(np.float32)
    else:
        angle = jnp.arctan2(b, shifted)
    return lax.complex(real_function(jnp, "log", hypot(jnp, shifted, b)), angle)


def _expm1(jnp: Any, z: Any) -> Any:
    from jax import lax

    a, b = jnp.real(z), jnp.imag(z)
    half = real_function(jnp, "sin", b / 2)
    real = in_trace(real_function(jnp, "expm1", a) * real_function(jnp, "cos", b)) \
        - in_trace(in_trace(2 * half) * half)
    return lax.complex(real, in_trace(real_function(jnp, "exp", a) * real_function(jnp, "sin", b)))


FORMS: dict[str, Callable[[Any], Callable]] = forms({"log1p": _log1p, "expm1": _expm1})
"""The forms of this module by op name."""
