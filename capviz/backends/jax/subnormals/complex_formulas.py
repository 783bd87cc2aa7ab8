"""Complex ops whose parts NumPy computes as real functions of the operands' parts, checked at
run time where a part of NumPy's result may be subnormal (review 3, finding 30; issue 25):

* **A complex divided by a real** (``z / 2``, ``z / n`` of a real node, constant or literal;
  :func:`real_divisor`): NumPy converts the divisor to ``c + 0j`` and divides by Smith's
  formula, whose parts are ``a * (1 / c)`` and ``b * (1 / c)``; XLA's differ from those by
  an ulp at most (measured: within the tolerance), so each part is a real quotient and takes
  the real ``divide``'s test (:func:`capviz.backends.jax.subnormals.elementwise.elementwise`):
  a part XLA made 0 where ``|a / c|`` is above a quarter of the smallest subnormal (NumPy's
  rounded ``a * (1 / c)`` is nonzero above half of it: the quarter is the margin for the
  reciprocal's rounding) fails. So does a divisor above ``1 / tiny``, whose reciprocal NumPy
  keeps subnormal (its quotients lose bits XLA's keep). A literal or constant divisor of
  magnitude 1 or less needs no check: a quotient of a normal part is then at least that part.
* **exp of a complex** (:func:`exponential`): NumPy's parts (glibc's ``cexp``) are
  ``e^a cos b`` and ``e^a sin b``. The test computes ``a + log|cos b|`` and ``a + log|sin b|``
  in float64 (for complex64 too) and fails where one is below ``log(tiny)`` plus a margin of a
  few ulps of the parts' type (NumPy's rounding of ``e^a``, of the sine and of the product)
  and of float64's at ``|log(tiny)|`` (the test's own): there NumPy's part is below the
  smallest normal and XLA's may be flushed (``exp(-20 + 1e-300j)``'s imaginary part is
  ``2.1e-309`` in NumPy, 0 in XLA). A part that is exactly 0 in NumPy passes: ``sin b`` at
  ``b == 0`` (the only zero of a float's sine), and both parts where ``e^a`` rounds to 0
  (``a`` below ``log(smallest_subnormal / 2)``, with the margin). So does every part of
  ``exp(1j * theta)`` but where ``|theta|`` is within a few ulps of ``tiny`` (``a = 0``).
  Where ``e^a`` overflows (``a`` above ``log(finfo.max)``, less the margin) NumPy scales
  (glibc multiplies by ``e^t`` and ``e^(a - t)``) and its product may be finite; XLA's scaling
  there is not verified, so the node fails. Operands that are not finite are left to
  :mod:`capviz.backends.jax.checks` (complex special values).

Both are elementwise masks merged per shape (:func:`capviz.backends.jax.trace.require_each`),
as the other complex checks (:mod:`.complex_parts`). Any other form (a complex divisor,
``where=``/``out=``/``dtype=``) stays refused by name when the replay is bound
(:func:`admitted`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from capviz.backends.jax.subnormals.operands import known_values, operand_magnitudes
from capviz.backends.jax.trace import dtype_of, require_each
from capviz.core.ir import Node

COMPLEX_FORMULAS = frozenset(("divide", "exp"))
"""Complex ops checked here, in the forms :func:`admitted` names."""

_QUOTIENT = ("a part of complex divide's result is 0 where NumPy's is a nonzero subnormal float, "
             "or the real divisor is above 1 / tiny (NumPy's reciprocal of it is subnormal): "
             "XLA flushes subnormal values to zero, and a later division, log or large factor "
             "would give another number than NumPy's; replay with backend='numpy', or scale "
             "the values away from the float's smallest normal ({tiny:.3g})")
_EXP = ("a part of complex exp's result, e^a cos b or e^a sin b, is below the float's smallest "
        "normal ({tiny:.3g}) and nonzero in NumPy, or e^a overflows (a real part above "
        "{high:.6g}): XLA flushes subnormal values to zero (and its scaling of a large e^a is "
        "not verified), so a part of the result would differ from NumPy's; replay with "
        "backend='numpy', or keep exp's result parts away from the smallest normal and its "
        "operand's real parts below {high:.6g}")


def _real(value: Any) -> bool:
    """Whether an argument of a node is real: a node of a real type, or a real literal."""
    if isinstance(value, Node):
        return value.dtype is not None and np.dtype(value.dtype).kind in "biuf"
    known = known_values(value)
    return known is not None and known.dtype.kind in "biuf"


def admitted(node: Node) -> bool:
    """Whether complex ``node`` is a form checked here: ``exp`` of one operand, or ``divide``
    of a complex by a real (a node, a constant or a literal), with no parameter."""
    if node.op not in COMPLEX_FORMULAS or node.params:
        return False
    if node.op == "exp":
        return len(node.args) == 1
    return len(node.args) == 2 and _real(node.args[1]) and not _real(node.args[0])


def _part_type(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32 if dtype.itemsize == 8 else np.float64)


def check(jnp: Any, name: str, args: tuple, r: Any) -> Any:
    """The check of ``divide`` by a real or ``exp`` (complex result ``r``): other forms are
    refused when the replay is bound (:func:`admitted`)."""
    dtype = dtype_of(r)
    if dtype.kind != "c":
        return r
    if name == "divide" and len(args) == 2 and dtype_of(args[1]).kind in "biuf":
        return real_divisor(jnp, args, r)
    if name == "exp" and len(args) == 1:
        return exponential(jnp, args[0], r)
    return r


def real_divisor(jnp: Any, args: tuple, r: Any) -> Any:
    """``z / c`` of a real ``c``: each part is a real quotient, checked as the real divide."""
    dtype = dtype_of(r)
    part = _part_type(dtype)
    info = np.finfo(part)
    bounds = operand_magnitudes(args[1])
    if bounds is not None and bounds[1] <= 1:
        return r  # |a / c| >= |a|: 0 or normal, and 1 / c is normal
    z = jnp.asarray(args[0]).astype(dtype)
    c = jnp.asarray(args[1]).astype(part)
    least = float(info.smallest_subnormal)
    scale = 2.0 ** (info.nmant + 2)
    ok = ~(jnp.abs(c) > 1 / float(info.tiny))
    for part_of in (jnp.real, jnp.imag):
        a, s = part_of(z), part_of(r)
        ok = ok & ((s != 0) | ~(jnp.abs((a * scale) / c) > least * scale / 4))  # NaN: inf / inf
    require_each(ok, _QUOTIENT.format(tiny=float(info.tiny)))
    return r


def exp_limits(dtype: Any) -> tuple[float, float, float, float]:
    """``log(tiny)``, ``log(smallest_subnormal / 2)`` and ``log(finfo.max)`` of the parts of
    complex ``dtype``, and the margin of the test in log space."""
    info = np.finfo(_part_type(np.dtype(dtype)))
    log_tiny = math.log(float(info.tiny))
    log_zero = math.log(float(info.smallest_subnormal)) - math.log(2.0)
    margin = 8 * float(info.eps) + 8 * float(np.finfo(np.float64).eps) * (1 - log_zero)
    return log_tiny, log_zero, math.log(float(info.max)), margin


def exponential(jnp: Any, x: Any, r: Any) -> Any:
    """``exp(a + bj)``: fails where ``e^a cos b`` or ``e^a sin b`` is below ``tiny`` (with the
    margin) and not exactly 0 in NumPy, or ``e^a`` overflows."""
    dtype = dtype_of(r)
    log_tiny, log_zero, log_max, margin = exp_limits(dtype)
    z = jnp.asarray(x).astype(dtype)
    a = jnp.real(z).astype(np.float64)
    b = jnp.imag(z).astype(np.float64)
    ok = ~(a > log_max - margin)  # NaN: left to the special-value checks
    vanishes = a < log_zero - margin  # e^a rounds to 0: both parts are 0 in NumPy and XLA
    for factor in (jnp.cos(b), jnp.sin(b)):
        magnitude = jnp.abs(factor)
        low = a + jnp.log(magnitude) < log_tiny + margin
        ok = ok & (~low | vanishes | (magnitude == 0))
    require_each(ok, _EXP.format(tiny=float(np.finfo(_part_type(dtype)).tiny),
                                 high=log_max - margin))
    return r
