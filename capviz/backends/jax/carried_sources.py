"""Where the JAX replay's carried bounds start (:mod:`capviz.backends.jax.carried`), besides
the sums' checks and the contractions (:mod:`capviz.backends.jax.carried_contractions`): the
functions XLA approximates (:data:`APPROXIMATED`, the exponents with which a power is NumPy's
bits), the sums for which no bound is written (:data:`UNBOUNDED`), and the real sums of
products whose bound is written here (:data:`PRODUCT_SUMS`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz import ops
from capviz.backends import contraction_bound
from capviz.backends.jax.trace import dtype_of
from capviz.core.ir import Node

APPROXIMATED = {
    "exp": 8, "expm1": 20, "log": 8, "log2": 8, "log10": 12, "log1p": 320, "sin": 8,
    "cos": 8, "tan": 12, "sinh": 100, "cosh": 100, "tanh": 24, "arcsin": 12, "arccos": 12,
    "arctan": 8, "arcsinh": 12, "arccosh": 12, "arctanh": 520, "cbrt": 12, "exp2": 360,
    "power": 8, "float_power": 8, "logspace": 8, "geomspace": 9000, "hypot": 8,
    "arctan2": 12, "i0": 20, "rad2deg": 8, "degrees": 8, "sinc": 8, "logaddexp": 4,
    "logaddexp2": 4,
}
"""The functions XLA computes with its own approximation, and how many units in the last
place of the result the replay's value and NumPy's may be apart: four times the largest gap
measured between them (``/tmp/lead/ulps.py``: 250,000 values each in float32 and float64 over
each function's usual range; ``exp2`` 88 ulps, ``log1p`` 80 and ``arctanh`` 129 in float64,
``sinh``/``cosh`` 25), at least 8. Like the backend's tolerance, a measured figure, not a
proof. Where such a value reaches an add or subtract (``np.exp(x) - np.exp(y)`` of nearby
``x`` and ``y``: 111 times the tolerance, silently, before this), the bound ``K * eps *
|value|`` is carried to it as a sum's is and tested there (:meth:`carried.Carried.after`).
``power`` and ``float_power`` are XLA's ``pow`` except where :data:`EXACT_EXPONENTS` makes
them NumPy's bits (:func:`approximated`): 1.35 ``eps * |value|`` at most from NumPy's (SVML's
``pow`` on this AVX-512 CPU) over 500,000 values of each type, bases in (0, 100) and 1e-5 to
1e5, exponents 3.3, 2.5, -0.5, 7.7, 11.5, integers from -16 to 31 and tensors in (-30, 30)
(``/tmp/w25a/powk.py``); ``x ** y - y ** x`` of float32 values near 10 was 1,000 times the
tolerance, silently. The figures hold for the CPU they were measured on: XLA's GPU
approximations are others. ``logspace`` is XLA's ``pow`` of NumPy's points: the same K.
``geomspace`` of array ends is XLA's ``pow`` of points from XLA's ``log10`` of the ends: a
``log10`` one ulp off moves every point by ``ln 10 * ulp(log10(end))``, so the gap grows with
the ends' exponents (``tests/test_jax_geomspace.py``, its doc; 400
pairs of ends x 50 points per range, 5 ulps for ends in [1, 10], 52 in [1e-5, 1e5], 293 in
[1e-30, 1e30], 2,238 in [1e-300, 1e300] in float64; 398 in float32 over its whole range): four
times the largest. (``np.geomspace`` of plain numbers is NumPy's own, a constant of the
program: exact.)

``hypot``, ``arctan2``, ``i0``, ``rad2deg``/``degrees``, ``sinc``, ``logaddexp`` and
``logaddexp2`` were missing (R13 #4, stop 41: ``np.hypot(a, b) - R`` of float32 values near 2e4
was 0.00195 off NumPy's 0, 19 times the tolerance, silently). A sweep of every one- and
two-operand float ufunc of the op table through the backend's own binding against NumPy
(``/work/notes/s41/25x/sweep.py``, ``sweep2.py``: 200,000 values per range, seven ranges, normal
results) found them and no other: largest ``|jax - numpy| / (eps |numpy|)`` hypot 1.40,
arctan2 2.01, i0 5.0, rad2deg 1.12 (float32 only: XLA's product by its own rounded constant;
float64 is NumPy's bits, as is sinc's, 1.93 in float32). ``logaddexp`` and ``logaddexp2`` are 88
``eps |value|`` apart near a zero of the value, so their bound has an absolute part too
(:data:`ABSOLUTE`, :func:`bound`). ``deg2rad``/``radians`` are NumPy's bits in both types."""

ABSOLUTE = {"logaddexp": 4, "logaddexp2": 4}
"""The functions whose gap from NumPy's is not relative to their value (``max(a, b) +
log1p(exp(-|a - b|))``: one rounding of the value plus the ``log1p`` part's, at most ``ln 2``,
whatever the value): ``(K |value| + A) eps``, ``K`` of :data:`APPROXIMATED`, ``A`` here: twice
the largest ``(|jax - numpy| - 2 eps |value|) / eps`` measured (``sweep3.py``: 0.5 and 1.14
in float32, 1.0 and 1.35 in float64, 3.2 million pairs each, results near 0 among them)."""


def bound(jnp: Any, node: Node, result: Any) -> Any:
    """The bound of XLA's approximation ``result`` of the function ``node`` from NumPy's:
    ``K * eps * |result|`` (:data:`APPROXIMATED`), plus ``A * eps`` for those of
    :data:`ABSOLUTE`; 0 where ``result`` is not finite (the same in NumPy)."""
    kind = np.dtype(dtype_of(result))
    eps = float(np.finfo(kind).eps)
    size = jnp.abs(result)
    value = APPROXIMATED[node.op] * eps * size
    if node.op in ABSOLUTE:
        value = value + ABSOLUTE[node.op] * eps
    return jnp.where(jnp.isfinite(size), value, 0).astype(kind)

CONDITIONAL = frozenset(("power", "float_power", "rad2deg", "degrees", "sinc"))
"""The functions of :data:`APPROXIMATED` that are NumPy's bits for some nodes
(:func:`approximated` says which): a power by an exponent of :data:`EXACT_EXPONENTS`, and
``rad2deg``/``degrees``/``sinc`` but in float32 (:data:`FLOAT32_ONLY`)."""

FLOAT32_ONLY = frozenset(("rad2deg", "degrees", "sinc"))
"""The functions XLA computes as NumPy in float64 and otherwise in float32 (sweep above)."""

UNBOUNDED = frozenset(("trapezoid", "linalg.vector_norm", "convolve", "correlate",
                       "polymul"))
"""Sums XLA adds in its own order, within the tolerance (checked or declared), for which no
bound is written here to carry (R6 on W=25s's default: ``np.trapezoid(x, axis=-1) - t`` and
``np.linalg.norm(x, 1, -1) - t`` were silent, 2x to 8x): where one reaches an add or subtract
that can cancel, that add or subtract fails (:func:`unbounded`; a ``np.linalg.norm`` along an
axis or of another ``ord``, and a weighted ``np.average``, too)."""


PRODUCT_SUMS = frozenset(("convolve", "correlate", "polymul"))
"""The real sums of products whose bound is carried (R6 #21 on 1ab42ec: ``np.convolve(x, k,
'same') + x`` of a 3-tap kernel was refused): NumPy's and XLA's orders are each within
``gamma_n |a| * |v|`` of the exact sum (``n`` the products of an output), so ``2 gamma_n`` of
the same op of the magnitudes (computed in float64) apart; 0 where the result is not
finite."""


def product_sums_bound(jnp: Any, node: Node, args: Any, result: Any) -> Any:
    """The bound of XLA's ``np.convolve``/``correlate``/``polymul`` ``result`` from NumPy's
    (:data:`PRODUCT_SUMS`)."""
    real = np.dtype(dtype_of(result))
    a, v = (jnp.abs(jnp.asarray(x)).astype(np.float64) for x in args[:2])
    n = max(min(int(np.size(a)), int(np.size(v))), 1)
    size = ops.OPS[node.op].bind(jnp)(a, v, *args[2:], **node.params)
    bound = 2 * contraction_bound.gamma(n + 1, real) * size \
        + 2 * n * float(np.finfo(real).tiny)
    finite = jnp.isfinite(jnp.abs(result)) & jnp.isfinite(bound)
    return jnp.where(finite, bound, 0).astype(real).reshape(jnp.shape(result))


def unbounded(node: Node) -> bool:
    """Whether ``node``'s value is a sum of :data:`UNBOUNDED` (or a norm that is not NumPy's
    BLAS dot, a weighted average): no bound of its own, so an infinite one is carried."""
    if node.op in UNBOUNDED:
        return True
    if node.op == contraction_bound.NORM:
        return not contraction_bound.is_contraction_node(node)
    return node.op == "average" and len(node.operands) > 1


EXACT_EXPONENTS = {"power": (-1, 0, 0.5, 1, 2), "float_power": (0, 1)}
"""The number exponents with which XLA's power is NumPy's bits: NumPy's ``np.power`` loop takes
``1 / x``, ``1``, ``sqrt``, ``x``, ``x * x`` for them (``capviz.backends.jax.ops._float_power``
follows it), and ``np.float_power`` calls ``pow`` for each but 0 and 1 (``float_power(x, 2)``
is one ulp off ``x * x`` on 80 of 100,000 float64 values)."""


def approximated(node: Node) -> bool:
    """Whether the value of ``node`` is an approximation of XLA's (:data:`APPROXIMATED`):
    every function there, but a power by a number of :data:`EXACT_EXPONENTS` (a tensor
    exponent is approximated) and a float64 one of :data:`FLOAT32_ONLY`."""
    if node.op in FLOAT32_ONLY:
        return node.dtype is None or np.dtype(node.dtype) != np.float64
    exact = EXACT_EXPONENTS.get(node.op)
    if exact is None:
        return node.op in APPROXIMATED
    exponent = node.args[1] if len(node.args) == 2 else None
    number = isinstance(exponent, (int, float, np.integer, np.floating)) \
        and not isinstance(exponent, bool)
    return not (number and exponent in exact)
