"""Complex ``sin``, ``cos``, ``sinh``, ``cosh``, ``sqrt`` and ``log`` checked at run time where a
part of NumPy's result may be subnormal (the hostile review 3, finding 30; the lead's ruling of
12:55), instead of refused at bind. Verified against NumPy's own results (glibc's ``csin``,
``csqrt``, ``clog``...) on special values, parts near ``tiny``, branch cuts and ``-0.0``
(``tests/test_jax_subnormals_complex_functions.py``); infinite, NaN and huge parts are the
complex special-value check's (:mod:`capviz.backends.jax.checks`: such a node fails).

* **Products of real functions of the parts** (:data:`TRIG`): ``sin(a + bj) = sin a cosh b +
  j cos a sinh b``, ``cos = cos a cosh b - j sin a sinh b``, ``sinh = sinh a cos b + j cosh a
  sin b``, ``cosh = cosh a cos b + j sinh a sin b``. For normal ``a``, ``b`` each factor is 0
  only at 0 (``sin a``, ``sinh b``...; ``cos`` of a float is never 0, ``cosh`` is at least 1)
  and else normal (``|sin a|`` is ``|a|`` or more... near 0, and at least ``6e-17`` elsewhere),
  so a part is subnormal only where the product of its factors is: the test takes ``log|f| +
  log|g|`` in float64 (for complex64 too) and fails where it is below ``log(tiny)`` plus a
  margin of a few ulps and NumPy's part is neither exactly 0 (a factor 0) nor rounded to 0
  (below ``log(smallest_subnormal / 2)`` less the margin), as :mod:`.complex_formulas` tests
  ``exp``. XLA's complex ``sinh`` and ``cosh`` compute ``sinh a`` as ``(e^a - e^-a) / 2``: the
  real part of ``sinh(1e-20 + 1j)`` is 0 where NumPy's is ``5.4e-21`` (and 1e-7 off at
  ``a = 1e-10``), so the backend computes them with NumPy's formula from jax.numpy's real
  functions (:mod:`capviz.backends.jax.functions.hyperbolic`), which are NumPy's within an ulp.
* **sqrt** (:func:`_root`): glibc's ``csqrt`` takes ``t = sqrt((|a| + |z|) / 2)``, normal for a
  normal part, and the other part ``|b| / (2 t)`` (the imaginary part where ``a >= 0``, the
  real part where ``a < 0``): XLA's small part 0 where ``|b| / (2 t)``, scaled out of the
  subnormal range, is above a quarter of the smallest subnormal (glibc rounds twice: the
  quarter is the margin) fails.
* **log** (:func:`_logarithm`): the imaginary part is ``arctan2(b, a)``, the precise test of
  ``angle``; the real part ``log|z|`` is subnormal only for ``|z|`` within ``tiny`` of 1, which
  glibc computes as ``log1p((a - 1)(a + 1) + b**2) / 2`` (``log(1 + 1e-150j)`` is ``5e-301``
  in NumPy and XLA alike): a real part of XLA's below ``tiny * 2**(nmant + 1)`` fails, but
  where the operand is 1, -1, 1j or -1j exactly (NumPy's is 0). The bound is wide: XLA's
  complex64 ``log(1 + 7e-18j)`` is ``2.5288e-35``, NumPy's ``2.5300e-35`` (4.6e-4 apart,
  relatively: a value near ``tiny`` made of squares XLA scales otherwise).

Every test is an elementwise mask merged per shape (:func:`capviz.backends.jax.trace.
require_each`), as the other complex checks.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from capviz.backends.jax.trace import dtype_of, require_each
from capviz.core.ir import Node

TRIG = frozenset(("sin", "cos", "sinh", "cosh"))
"""Complex functions whose parts are products of real functions of the operand's parts."""

ROOTS = frozenset(("sqrt", "log"))
"""Complex functions tested on ``|z|`` and ``|Im z|``."""

PARTS = frozenset(("log1p", "expm1", "tan", "tanh"))
"""Complex functions written in NumPy's formulas (:mod:`capviz.backends.jax.functions.
complex_exponentials`), tested on their result's parts (:func:`_parts`)."""

COMPLEX_FUNCTIONS = TRIG | ROOTS | PARTS
"""The complex ops this module checks (one operand, no parameter: :func:`admitted`)."""

# op -> (real part's factors, imaginary part's factors): f of the real part a, g of b
_FACTORS = {
    "sin": (("sin", "cosh"), ("cos", "sinh")),
    "cos": (("cos", "cosh"), ("sin", "sinh")),
    "sinh": (("sinh", "cos"), ("cosh", "sin")),
    "cosh": (("cosh", "cos"), ("sinh", "sin")),
}

_TRIG = ("a part of complex {op}'s result, a product of real functions of the operand's parts, "
         "is below the float's smallest normal ({tiny:.3g}) and nonzero in NumPy: XLA flushes "
         "subnormal values to zero, so a part of the result would differ from NumPy's; replay "
         "with backend='numpy', or keep the operand's parts away from the values that make "
         "{op}'s parts tiny")
_ROOT = ("a part of complex {op}'s result is below the float's smallest normal ({tiny:.3g}) "
         "and nonzero in NumPy (an imaginary part far below the real part, or |z| within tiny "
         "of 1 for log): XLA flushes subnormal values to zero, so a part of the result would "
         "differ from NumPy's; replay with backend='numpy', or scale the values away from the "
         "float's smallest normal")


def admitted(node: Node) -> bool:
    """Whether complex ``node`` is a form checked here: one operand, no parameter."""
    return node.op in COMPLEX_FUNCTIONS and not node.params and len(node.args) == 1


def _part_type(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32 if dtype.itemsize == 8 else np.float64)


def check(jnp: Any, name: str, args: tuple, r: Any) -> Any:
    """The check of complex ``name`` (:data:`COMPLEX_FUNCTIONS`) giving ``r``."""
    dtype = dtype_of(r)
    if dtype.kind != "c" or len(args) != 1:
        return r
    z = jnp.asarray(args[0]).astype(dtype)
    if name in TRIG:
        return _products(jnp, name, z, r)
    if name == "sqrt":
        return _root(jnp, z, r)
    if name in PARTS:
        return _parts(jnp, name, z, r)
    return _logarithm(jnp, z, r)


def limits(dtype: Any) -> tuple[float, float, float]:
    """``log(tiny)`` and ``log(smallest_subnormal / 2)`` of the parts of complex ``dtype``,
    and the margin of the tests in log space (a few ulps of the parts' type for NumPy's
    roundings of the factors and their product, and of float64's at ``|log(tiny)|`` for the
    test's own)."""
    info = np.finfo(_part_type(np.dtype(dtype)))
    log_tiny = math.log(float(info.tiny))
    log_zero = math.log(float(info.smallest_subnormal)) - math.log(2.0)
    margin = 8 * float(info.eps) + 8 * float(np.finfo(np.float64).eps) * (1 - log_zero)
    return log_tiny, log_zero, margin


def _products(jnp: Any, name: str, z: Any, r: Any) -> Any:
    """Fails where a part ``f(a) g(b)`` is below ``tiny`` (with the margin) and not exactly 0
    or rounded to 0 in NumPy."""
    dtype = dtype_of(r)
    log_tiny, log_zero, margin = limits(dtype)
    a = jnp.real(z).astype(np.float64)
    b = jnp.imag(z).astype(np.float64)
    ok = True
    for f, g in _FACTORS[name]:
        fa, gb = jnp.abs(getattr(jnp, f)(a)), jnp.abs(getattr(jnp, g)(b))
        size = jnp.log(fa) + jnp.log(gb)  # -inf for a factor 0; inf for cosh overflowing
        low = size < log_tiny + margin
        vanishes = size < log_zero - margin
        ok = ok & (~low | vanishes | (fa == 0) | (gb == 0))
    require_each(ok, _TRIG.format(op=name, tiny=float(np.finfo(_part_type(dtype)).tiny)))
    return r


def _root(jnp: Any, z: Any, r: Any) -> Any:
    """``sqrt``: XLA's small part 0 where NumPy's ``|b| / (2 t)`` is above a quarter of the
    smallest subnormal (scaled out of the subnormal range)."""
    dtype = dtype_of(r)
    info = np.finfo(_part_type(dtype))
    least = float(info.smallest_subnormal)
    scale = 2.0 ** (info.nmant + 2)
    a, b = jnp.real(z), jnp.imag(z)
    t = jnp.sqrt((jnp.abs(a) + jnp.abs(z)) / 2)  # normal: |z| >= max(|a|, |b|)
    small = jnp.where(a >= 0, jnp.imag(r), jnp.real(r))
    quotient = (jnp.abs(b) * scale) / (2 * t)
    ok = (small != 0) | (b == 0) | ~(quotient > least * scale / 4)
    require_each(ok, _ROOT.format(op="sqrt", tiny=float(info.tiny)))
    return r


def _logarithm(jnp: Any, z: Any, r: Any) -> Any:
    """``log``: the imaginary part as ``arctan2(b, a)``'s precise test; the real part below
    ``tiny * 2**(nmant + 1)`` fails unless the operand is on the unit circle's axis points."""
    dtype = dtype_of(r)
    info = np.finfo(_part_type(dtype))
    least = float(info.smallest_subnormal)
    tiny = float(info.tiny)
    scale = 2.0 ** (info.nmant + 2)
    a, b = jnp.real(z), jnp.imag(z)
    angle = jnp.imag(r)
    ok = (angle != 0) | ~(jnp.abs((b * scale) / a) > least * scale / 2)  # NaN: 0 / 0
    unit = ((jnp.abs(a) == 1) & (b == 0)) | ((a == 0) & (jnp.abs(b) == 1))
    near = tiny * 2.0 ** (info.nmant + 1)
    ok = ok & (~(jnp.abs(jnp.real(r)) < near) | unit)
    require_each(ok, _ROOT.format(op="log", tiny=tiny))
    return r


_PARTS = ("a part of complex {op}'s result is below {near:.3g} (the float's smallest normal, "
          "{tiny:.3g}, times 2**{bits}) and not one NumPy makes exactly 0: NumPy's part may be "
          "subnormal, or made from one, where XLA flushes to zero; replay with "
          "backend='numpy', or keep the values away from those that make {op}'s parts tiny")
HYPOT_UNDERFLOW = 2.0 ** -440
"""Below this, a smaller leg of at least glibc's ``TINY_VAL`` (``2**-511``, where it scales)
makes partial terms of glibc's hypot kernel subnormal, which XLA flushes (measured: 48 of
2,870 such pairs of 500,000 drawn differ by an ulp; none elsewhere)."""

_HYPOT = ("complex log1p of a + bj with |a + 1| and |b| both below 2**-440: glibc's hypot "
          "makes subnormal partial terms there, which XLA flushes; replay with backend='numpy'")


def _parts(jnp: Any, name: str, z: Any, r: Any) -> Any:
    """``log1p``, ``expm1`` (NumPy's formulas, from normal factors): a part of XLA's result
    below ``near = tiny * 2**(nmant + 1)`` fails unless NumPy's is exactly 0 by the formula
    (the imaginary part where ``b`` is 0, or ``exp(a)`` underflows to 0 past every
    subnormal; ``expm1``'s real part where ``a`` is 0 and ``2 sin(b/2)**2`` underflows past
    every subnormal; ``log1p``'s real part where the hypotenuse is 1). Above ``near``, a
    flushed term (below ``tiny``) moves a part by less than half an ulp. ``log1p`` of
    complex128 fails where glibc's hypot kernel would make subnormal partial terms
    (:data:`HYPOT_UNDERFLOW`)."""
    dtype = dtype_of(r)
    info = np.finfo(_part_type(dtype))
    tiny = float(info.tiny)
    near = tiny * 2.0 ** (info.nmant + 1)
    a, b = jnp.real(z), jnp.imag(z)
    re, im = jnp.real(r), jnp.imag(r)
    if name in ("tan", "tanh"):  # glibc's: the small part past t, 0 past 2t
        past = 2 * int((info.maxexp - 1) * math.log(2) / 2)
        hyperbolic, trig = (a, b) if name == "tanh" else (b, a)
        zero_h, zero_g = hyperbolic == 0, (trig == 0) | (jnp.abs(hyperbolic) > past)
        re_exact, im_exact = (zero_h, zero_g) if name == "tanh" else (zero_g, zero_h)
    elif name == "expm1":
        vanished = a < math.log(float(info.smallest_subnormal)) - 2  # exp(a) is 0
        # a of 0: expm1(a) cos(b) is 0, and 2 sin(b/2)**2 underflows past every subnormal
        re_exact = (a == 0) & (jnp.abs(b) < math.sqrt(float(info.smallest_subnormal)) / 2)
        im_exact = (b == 0) | vanished
    else:
        re_exact = re == 0  # log(1): the hypotenuse is glibc's, 1 exactly where NumPy's is
        im_exact = b == 0
    ok = (re_exact | ~(jnp.abs(re) < near)) & (im_exact | ~(jnp.abs(im) < near))
    require_each(ok, _PARTS.format(op=name, near=near, tiny=tiny, bits=info.nmant + 1))
    if name == "log1p" and _part_type(dtype) == np.float64:
        shifted = a + 1
        big = jnp.maximum(jnp.abs(shifted), jnp.abs(b))
        small = jnp.minimum(jnp.abs(shifted), jnp.abs(b))
        kernel = (small >= 2.0 ** -511) & (small > big * 2.0 ** -54)
        require_each(~(kernel & (small < HYPOT_UNDERFLOW)), _HYPOT)
    return r
