"""What no run-time check sees: the ops refused by name unless the replay takes XLA's
arithmetic (:data:`DECLARED`, :func:`unchecked`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.backends.jax.subnormals.complex_parts import unchecked as complex_unchecked
from capviz.backends.jax.subnormals.literals import subnormal_literal
from capviz.backends.jax.subnormals.lowered import LOWERED, checked_form
from capviz.backends.jax.subnormals.operands import FLUSHED
from capviz.backends.jax.subnormals.reductions import CHECKED_PARAMS, SUMS
from capviz.core.ir import Node
from capviz.ops.reductions import MASKED

DECLARED = frozenset((
    *(f"linalg.{name}" for name in ("cholesky", "cond", "det", "inv", "matrix_norm",
                                    "matrix_power", "norm", "pinv", "slogdet", "solve",
                                    "svdvals", "tensorinv", "tensorsolve", "vector_norm",
                                    "eigvalsh")),
    *(f"fft.{name}" for name in ("fft", "fft2", "fftn", "ifft", "ifft2", "ifftn", "rfft",
                                 "rfft2", "rfftn", "irfft", "irfft2", "irfftn", "hfft",
                                 "ihfft")),
    "cov", "corrcoef", "average", "polyval", "interp", "gradient", "trapezoid", "poly",
    "polyadd", "polysub", "polymul", "polyder", "polyint", "spacing", "nextafter", "sinc"))
"""Float ops that can make a subnormal value (inside them, or as their result) from normal
operands, which XLA flushes to zero, and that no run-time check of this module sees: linear
algebra, transforms, the statistics and polynomial functions, ``spacing`` and ``nextafter``
(whose results are subnormal by design near 0), and ``sinc`` of large values; but for
``linalg``, not of integer or boolean operands only (their transforms, sums, products and
quotients by counts are 0 or normal). A JAX replay refuses them by name before anything runs
unless it is given ``arithmetic="xla"`` (:func:`unchecked`)."""

_DEFAULTS = {"where": True}
_PLAIN = {masked: plain for plain, masked in MASKED.items()}
"""The ``where=``/``initial=`` ops (``sum_where``...) and the reduction each is a form of."""


def _float_result(node: Any) -> bool:
    """Whether the node gives a float32/float64 or complex value XLA flushes (a node of several
    results, whose dtype is not recorded, counts)."""
    if node.dtype is None:
        return True
    dtype = np.dtype(node.dtype)
    if dtype.kind == "c":
        dtype = np.dtype(np.float32 if dtype.itemsize == 8 else np.float64)
    return dtype in FLUSHED


def unchecked(node: Any) -> str | None:
    """Why XLA's flush to zero may change ``node``'s result with no run-time check to see it
    (``None``: its result cannot be subnormal from normal operands, or a check sees it)."""
    if node.kind != "op":
        return None
    literal = subnormal_literal(node)
    if literal is not None:
        return literal
    if not _float_result(node):
        return None
    if node.op in LOWERED and checked_form(node):
        return None  # written out in checked steps (functions/norms.py, averages.py...)
    if node.op in DECLARED:
        if not node.op.startswith("linalg.") and not any(
                isinstance(a, Node) and a.dtype is not None and np.dtype(a.dtype).kind in "fc"
                for a in node.args):
            return None  # of integers: sums, products and quotients by counts of integers
        return f"no run-time check sees a subnormal value {node.op} makes"
    complex_values = complex_unchecked(node)
    if complex_values is not None:
        return complex_values
    op = _PLAIN.get(node.op, node.op)  # a where=/initial= form is checked as its reduction
    handled = CHECKED_PARAMS.get(op)
    if handled is None:
        return None
    if node.op in ("diff", "ediff1d") and sum(isinstance(a, Node) for a in node.args) > 1:
        return f"the check of {node.op} covers its operand, not the values it prepends or appends"
    extra = sorted(k for k, v in (node.params or {}).items()
                   if k not in handled and v is not None and _DEFAULTS.get(k, ...) is not v)
    if extra:
        return (f"the check of {node.op}'s sums and products does not cover "
                f"{', '.join(f'{k}=' for k in extra)}")
    initial = (node.params or {}).get("initial")
    if op in SUMS and initial is not None and _small_term(initial, node.dtype):
        return f"the check of {node.op}'s sums does not cover initial={initial!r}"
    return None


def _small_term(value: Any, dtype: Any) -> bool:
    """Whether ``value``, a term of a sum of ``dtype``, has a part of nonzero magnitude below
    ``tiny * 2**(nmant + 1)`` (which a partial sum may cancel into a subnormal)."""
    info = np.finfo(np.dtype(dtype))
    bound = float(info.tiny) * 2.0 ** (info.nmant + 1)
    number = complex(value)  # each part of a complex term is added apart
    return any(0 < abs(part) < bound for part in (number.real, number.imag))

