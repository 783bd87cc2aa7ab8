"""Complex values, whose real and imaginary parts XLA flushes as it flushes float32 and
float64 values: the products checked part by part (:data:`COMPLEX_PRODUCTS`) and the ops
refused by name (:data:`COMPLEX_DECLARED`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.backends.jax.trace import dtype_of, require_each

COMPLEX_PRODUCTS = frozenset(("multiply", "square"))
"""Complex ops checked at run time (:func:`complex_product`): XLA computes them with NumPy's
formula, ``(ac - bd) + (ad + bc)j``, in the parts' float type."""

COMPLEX_DECLARED = frozenset(("divide", "reciprocal", "exp", "exp2", "power", "float_power"))
"""Ops of :data:`ELEMENTWISE` whose complex result no run-time check sees: their parts come
from quotients, exponentials and trigonometric factors (``exp(a + bj)`` is
``exp(a) * (cos b + j sin b)``) that may be subnormal from normal operands, where XLA's formulas
are not NumPy's. A JAX replay refuses them by name for a complex result unless it takes
``arithmetic="xla"`` (:func:`unchecked`)."""

_COMPLEX = ("a product of the real and imaginary parts of complex {op}'s operands is below "
            "{bound:.3g}: XLA flushes its subnormal part products to zero where NumPy keeps "
            "them, so a part of the result would differ from NumPy's; replay with "
            "backend='numpy', or scale the operands up")


def complex_product(jnp: Any, name: str, args: tuple, r: Any) -> Any:
    """A complex product (:data:`COMPLEX_PRODUCTS`) whose four part products ``ac``, ``bd``,
    ``ad``, ``bc`` are each 0 or of magnitude ``tiny * 2**(nmant + 1)`` or more: then each is
    NumPy's (none was flushed), and their sum or difference, a multiple of ``2 * tiny``, is 0
    or normal, so every part of XLA's result is NumPy's. A part product below that bound (a
    part of the result 0 where NumPy's is a nonzero subnormal, or a normal part missing a
    flushed term) fails the replay at the node. An elementwise mask merged per shape
    (:func:`capviz.backends.jax.trace.require_each`), as the other complex checks
    (:mod:`capviz.backends.jax.checks`)."""
    dtype = dtype_of(r)
    if dtype not in (np.dtype(np.complex64), np.dtype(np.complex128)):
        return r
    if len(args) != (2 if name == "multiply" else 1):
        return r
    info = np.finfo(np.float32 if dtype.itemsize == 8 else np.float64)
    bound = float(info.tiny) * 2.0 ** (info.nmant + 1)
    x = [jnp.asarray(v).astype(dtype) for v in args]
    a, b = x if len(x) == 2 else (x[0], x[0])
    ok = True
    for u in (jnp.real(a), jnp.imag(a)):
        for v in (jnp.real(b), jnp.imag(b)):
            ok = ok & (~(jnp.abs(u * v) < bound) | (u == 0) | (v == 0))
    require_each(ok, _COMPLEX.format(op=name, bound=bound))
    return r

