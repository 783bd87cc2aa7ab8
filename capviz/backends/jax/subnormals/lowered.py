"""Declared functions whose common forms the JAX backend writes out in checked steps (the
hostile review 3, finding 23): they leave :data:`capviz.backends.jax.subnormals.DECLARED`'s
refusal where :func:`checked_form` holds, and run their form of
:mod:`capviz.backends.jax.functions`, each step with the check its written-out op has.

* ``np.linalg.norm``: the vector norms of ``ord`` ``None``, ``2``, ``1``, ``inf``, ``-inf``,
  ``0`` and the Frobenius norm, of float32/float64/complex or integer operands
  (:mod:`capviz.backends.jax.functions.norms`);
* ``np.average``: without weights NumPy's ``mean`` (checked as ``np.mean`` is); with weights
  of a float32/float64 or integer operand, the weighted sum's order and flushed products
  (:mod:`capviz.backends.jax.functions.averages`);
* ``np.trapezoid`` of float32/float64 or integer values, with ``dx=`` or ``x=``
  (:mod:`capviz.backends.jax.functions.trapezoids`);
* ``np.cov`` of float32/float64 or integer values, without ``y``, weights or ``dtype``
  (:mod:`capviz.backends.jax.functions.covariances`).

Other forms (``ord=3``, the matrix 2-norm, complex weights, float16, ``np.cov`` with ``y`` or
weights...) stay refused by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.core.ir import Node

LOWERED = frozenset(("linalg.norm", "average", "trapezoid", "cov"))
"""Declared ops with forms written out in checked steps (:func:`checked_form`)."""

COVERAGE = {
    "linalg.norm": "tolerance, checked (real and complex): ord None, 2, 1, inf, -inf, 0 of "
                   "vectors and 'fro' (norm(x) with no axis is NumPy's BLAS dot: the "
                   "contraction's declared bound), else fails at the node; other ord and "
                   "float16 sums refused (arithmetic='xla': tolerance)",
    "average": "tolerance, sums checked (else fails at the node); complex weights refused "
               "(arithmetic='xla': tolerance)",
    "trapezoid": "tolerance, sums checked (else fails at the node); complex refused "
                 "(arithmetic='xla': tolerance)",
    "cov": "tolerance, the mean in NumPy's order and the contraction's declared bound (real "
           "and integer m); y=, weights, dtype= and complex refused (arithmetic='xla': "
           "tolerance)",
}
"""The JAX column of the coverage table for :data:`LOWERED` (``docs/numpy-coverage.md``)."""

_REAL = frozenset(np.dtype(t) for t in (np.float32, np.float64))


def _dtype(value: Any) -> np.dtype | None:
    if isinstance(value, Node):
        return None if value.dtype is None else np.dtype(value.dtype)
    return np.asarray(value).dtype if value is not None else None


def _real_or_integer(value: Any) -> bool:
    dtype = _dtype(value)
    return dtype is not None and (dtype.kind in "biu" or dtype in _REAL)


def checked_form(node: Node) -> bool:
    """Whether ``node`` (an op of :data:`LOWERED`) takes a form written out in checked
    steps."""
    from capviz.backends.jax.functions import covariances, norms

    params = node.params or {}
    operand = node.args[0] if node.args else None
    if not isinstance(operand, Node) or operand.dtype is None or operand.shape is None:
        return False
    if node.op == "linalg.norm":
        return norms.admitted(operand.dtype, params.get("ord"), params.get("axis"),
                              len(operand.shape))
    if node.op == "average":
        weights = node.args[1] if len(node.args) > 1 else params.get("weights")
        if weights is None:
            return True
        return _real_or_integer(operand) and _real_or_integer(weights)
    if node.op == "cov":
        operands = len([a for a in node.args if a is not None])
        return covariances.admitted(operand.dtype, len(operand.shape), params, operands)
    if node.op == "trapezoid":
        x = node.args[1] if len(node.args) > 1 else params.get("x")
        return _real_or_integer(operand) and (x is None or _real_or_integer(x))
    return False
