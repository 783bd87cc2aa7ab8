"""Complex values, whose real and imaginary parts XLA flushes as it flushes float32 and
float64 values (review 2, finding 8; issue 25).

A complex node is replayed by XLA only where the replay sees every part NumPy would keep
subnormal (:func:`unchecked` is an allow-list, so a complex op added to the table is refused
until someone shows it safe):

* **Exact whatever the values** (:data:`COMPLEX_EXACT`): moves, selections and comparisons,
  ``real``, ``imag``, ``conjugate``, ``negative``; and ``absolute``, whose result
  ``hypot(a, b)`` is at least ``max(|a|, |b|)``, normal for normal parts (XLA reads no
  subnormal operand: inputs holding one are refused, and a value XLA made is never one).
* **Checked at run time** (:data:`COMPLEX_CHECKED`), each an elementwise mask merged per shape
  (:func:`capviz.backends.jax.trace.require_each`):

  - ``*`` and ``square`` (:func:`complex_product`): the four part products; in NumPy's
    fused form also each rounded part product and each part of the result (complex64), or
    each part and part product far enough from ``tiny`` (complex128)
    (:func:`capviz.backends.jax.complex_products.multiply`);
  - ``np.multiply.outer``, ``np.add.outer``, ``np.subtract.outer`` (:func:`_outer`): as the
    ufunc itself;
  - ``+`` and ``-`` (:func:`_complex_sum`): parts added apart, a part 0 only where the two
    parts cancel exactly (as the real test of
    :func:`capviz.backends.jax.subnormals.elementwise.elementwise`); not checked with a literal
    operand whose parts are 0 or far from ``tiny`` (``z + (0.5 - 0.25j)``);
  - the sums (:data:`capviz.backends.jax.subnormals.reductions.SUMS`: ``sum``, ``mean``,
    ``cumsum``, ``diff``, ``trace``...) (:func:`_complex_terms`): every nonzero part of the
    operand at least ``tiny * 2**(nmant + 1)`` (times the count for a mean), as the real test;
  - the contractions (:data:`capviz.backends.jax.subnormals.products.PRODUCTS`: ``matmul``,
    ``dot``, ``vdot``, ``einsum``, ``outer``...): the real test, with the smallest nonzero
    magnitude of an operand's parts (a part of a complex product of sums is a sum of part
    products);
  - ``angle`` (:func:`_angle`): ``arctan2(imag, real)``, the precise test of ``arctan2``;
  - ``/`` by a real divisor and ``exp`` (:mod:`.complex_formulas`): each part through NumPy's
    formula (``a * (1 / c)``; ``e^a cos b``, ``e^a sin b``).
  - ``sin``, ``cos``, ``sinh``, ``cosh``, ``sqrt`` and ``log`` (:mod:`.complex_functions`):
    products of real functions of the parts; ``sqrt`` and ``log`` by ``|z|`` and ``|Im z|``.

* **Refused by name** unless the replay takes ``arithmetic="xla"``: every other op with a
  complex result, or a float32/float64 result from a complex operand. Their parts come from
  quotients, exponentials, logarithms, square roots and trigonometric factors that may be
  subnormal from normal operands, where XLA's formulas are not NumPy's, and no cheap test
  bounds them: ``arctan(1e10 + 1e-300j)``'s imaginary part is ``1e-320`` in NumPy, 0 in XLA;
  ``expm1``, ``sign``, ``tan``, ``tanh``, ``log1p``, ``log2``, ``log10``, the arc and inverse
  hyperbolic functions, ``/`` by a complex divisor, ``reciprocal``, ``exp2``, ``**``,
  ``prod`` and ``cumprod``
  (a partial product), ``var`` and ``std`` (squared part deviations: ``np.std`` of
  ``[1e-160 + 1e-160j, 0]`` is ``7.1e-161`` in NumPy, 0 in XLA) alike (a reproducer of each:
  ``tests/test_jax_subnormals_complex.py``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from capviz.backends.jax.subnormals import complex_formulas, complex_functions
from capviz.backends.jax.subnormals.operands import known_values
from capviz.backends.jax.subnormals.products import PRODUCTS, products
from capviz.backends.jax.subnormals.reductions import SUMS
from capviz.backends.jax.trace import dtype_of, require_each
from capviz.core.ir import Node
from capviz.ops import traits

COMPLEX_PRODUCTS = frozenset(("multiply", "square", "scalar_multiply"))
"""Complex ops checked at run time (:func:`complex_product`): XLA computes them with NumPy's
formula, ``(ac - bd) + (ad + bc)j``, in the parts' float type."""

OUTER_CHECKED = frozenset(("multiply", "add", "subtract"))
"""The ufuncs whose complex ``np.<ufunc>.outer`` (the op ``ufunc_outer``) is checked as the
ufunc itself is (:func:`_outer`); another ufunc's is refused by name."""

COMPLEX_CHECKED = frozenset((*COMPLEX_PRODUCTS, "add", "subtract", *SUMS, *PRODUCTS, "angle",
                             "astype", "sum_where", "mean_where"))
"""Ops whose complex operands or result a run-time check sees (:func:`check`; ``astype``:
:mod:`capviz.backends.jax.subnormals.casts`; ``sum_where`` and ``mean_where`` run as ``sum``
and ``mean`` with ``where=``, :func:`capviz.backends.jax.ops.functional`)."""

COMPLEX_EXACT = frozenset((
    *(traits.MOVE - {"outer", "linalg.outer", "ufunc_outer"}), *traits.SPLIT, *traits.GATHER,
    "unpack", "copy", "real", "imag", "conjugate", "negative", "positive", "where", "view",
    "select", "choose", "setitem", "index_put", "put", "put_along_axis", "take_along_axis",
    "compress", "append", "insert", "delete", "diag", "diagflat", "advanced_index",
    "advanced_index_put", "mask_select", "mask_put", "extract", "fill_diagonal", "putmask",
    "block", "resize", "lib.stride_tricks.sliding_window_view", "linalg.diagonal",
    "create", "zeros_like", "ones_like", "full_like",
    "max", "min", "max_where", "min_where", "nanmax", "nanmin", "maximum", "minimum", "fmax",
    "fmin", "sort",
    "sort_complex", "partition", "unique", "absolute"))
"""Ops that give NumPy's complex values whatever they are: they move, select or compare
values without computing new ones (``absolute``: its result is normal, see above). ``pad``
counts with a mode that copies (:data:`_COPYING_PADS`)."""

_COPYING_PADS = frozenset((None, "constant", "edge", "wrap", "reflect", "symmetric", "empty"))

_COMPLEX = ("a product of the real and imaginary parts of complex {op}'s operands is below "
            "{bound:.3g}: XLA flushes its subnormal part products to zero where NumPy keeps "
            "them, so a part of the result would differ from NumPy's; replay with "
            "backend='numpy', or scale the operands up")
_PART = ("a part of complex {op}'s result is 0 where NumPy's is a nonzero subnormal float: XLA "
         "flushes subnormal results to zero, and a later division, log or large factor would "
         "give another number than NumPy's; replay with backend='numpy', or scale the values "
         "away from the float's smallest normal ({tiny:.3g})")
_TERMS = ("a real or imaginary part of an operand of complex {op} has a magnitude below "
          "{bound:.3g}, whose sums may be subnormal, which XLA flushes to zero where NumPy "
          "keeps them; replay with backend='numpy', or scale the operand up")
_ANGLE = ("angle gave 0 where NumPy's result is a nonzero subnormal float (an imaginary part "
          "far below the real part): XLA flushes subnormal results to zero, and a later "
          "division, log or large factor would give another number than NumPy's; replay with "
          "backend='numpy', or scale the values away from the float's smallest normal "
          "({tiny:.3g})")


def _part_type(dtype: Any) -> np.dtype:
    """The float type of a complex type's parts (a float type itself)."""
    dtype = np.dtype(dtype)
    if dtype.kind != "c":
        return dtype
    return np.dtype(np.float32 if dtype.itemsize == 8 else np.float64)


def _bound(dtype: Any) -> float:
    """``tiny * 2**(nmant + 1)`` of the parts of ``dtype``: a product or term at least this is
    a multiple of ``2 * tiny``, so its sums are 0 or normal."""
    info = np.finfo(_part_type(dtype))
    return float(info.tiny) * 2.0 ** (info.nmant + 1)


def check(jnp: Any, name: str, fn: Any, args: tuple, operands: list, r: Any,
          params: dict) -> Any:
    """The check of op ``name`` with a complex result or operand (:data:`COMPLEX_CHECKED`);
    the others are refused when the replay is bound (:func:`unchecked`) or need none."""
    if name in COMPLEX_PRODUCTS:
        return complex_product(jnp, name, args, r)
    if not hasattr(r, "dtype"):
        return r
    if name == "ufunc_outer" and (params or {}).get("ufunc") in OUTER_CHECKED \
            and len(args) == 2:
        return _outer(jnp, params["ufunc"], args, r)
    if name in ("add", "subtract") and len(args) == 2:
        return _complex_sum(jnp, name, args, r)
    if name in SUMS and operands:
        return _complex_terms(jnp, name, operands[0], r)
    if name in PRODUCTS:
        return products(jnp, name, fn, args, operands, r, params)
    if name == "angle" and operands:
        return _angle(jnp, operands[0], r)
    if name in complex_formulas.COMPLEX_FORMULAS:
        return complex_formulas.check(jnp, name, args, r)
    if name in complex_functions.COMPLEX_FUNCTIONS:
        return complex_functions.check(jnp, name, args, r)
    return r


def complex_product(jnp: Any, name: str, args: tuple, r: Any, label: str | None = None) -> Any:
    """A complex product (:data:`COMPLEX_PRODUCTS`) whose four part products ``ac``, ``bd``,
    ``ad``, ``bc`` are each 0 or of magnitude ``tiny * 2**(nmant + 1)`` or more: then each is
    NumPy's (none was flushed), and their sum or difference, a multiple of ``2 * tiny``, is 0
    or normal, so every part of XLA's result is NumPy's. A part product below that bound (a
    part of the result 0 where NumPy's is a nonzero subnormal, or a normal part missing a
    flushed term) fails the replay at the node. An elementwise mask merged per shape
    (:func:`capviz.backends.jax.trace.require_each`), as the other complex checks
    (:mod:`capviz.backends.jax.checks`). This holds for XLA's own form; NumPy's fused form
    (:mod:`capviz.backends.jax.complex_products`, where NumPy fuses) keeps ``ac`` exact, a
    multiple of ``2 * tiny`` only above ``tiny * 2**(2 * (nmant + 1))``, and checks its own
    steps (:func:`capviz.backends.jax.complex_products.multiply`)."""
    dtype = dtype_of(r)
    if dtype not in (np.dtype(np.complex64), np.dtype(np.complex128)):
        return r
    if len(args) != (1 if name == "square" else 2):
        return r
    bound = _bound(dtype)
    x = [jnp.asarray(v).astype(dtype) for v in args]
    a, b = x if len(x) == 2 else (x[0], x[0])
    ok = True
    for u in (jnp.real(a), jnp.imag(a)):
        for v in (jnp.real(b), jnp.imag(b)):
            ok = ok & (~(jnp.abs(u * v) < bound) | (u == 0) | (v == 0))
    require_each(ok, _COMPLEX.format(op=label or name, bound=bound))
    return r


def _complex_sum(jnp: Any, name: str, args: tuple, r: Any, label: str | None = None) -> Any:
    """Complex ``+`` and ``-`` add the parts apart: an exact sum of two normal floats is
    nonzero where it does not cancel exactly, so a part of XLA's result that is 0 where the
    parts do not cancel is one NumPy keeps as a subnormal."""
    dtype = dtype_of(r)
    if dtype.kind != "c" or any(_far_from_tiny(v, dtype) for v in args):
        return r
    a, b = (jnp.asarray(v).astype(dtype) for v in args)
    ok = True
    for part in (jnp.real, jnp.imag):
        u, v, s = part(a), part(b), part(r)
        ok = ok & ((s != 0) | ((u == -v) if name == "add" else (u == v)))
    require_each(ok, _PART.format(op=label or name,
                                  tiny=float(np.finfo(_part_type(dtype)).tiny)))
    return r


def _outer(jnp: Any, ufunc: str, args: tuple, r: Any) -> Any:
    """``np.<ufunc>.outer(a, b)`` of :data:`OUTER_CHECKED`: NumPy's ufunc of ``a`` reshaped to
    broadcast against ``b`` (:mod:`capviz.backends.jax.ufunc_methods`), checked as that
    ufunc is."""
    a, b = args
    a = jnp.asarray(a)
    a = a.reshape(tuple(a.shape) + (1,) * np.ndim(b))
    if ufunc == "multiply":
        return complex_product(jnp, "multiply", (a, b), r, label="multiply.outer")
    return _complex_sum(jnp, ufunc, (a, b), r, label=f"{ufunc}.outer")


def _far_from_tiny(value: Any, dtype: Any) -> bool:
    """Whether ``value`` is a literal or small constant whose every part is 0 or at least
    ``tiny * 2**(nmant + 1)`` in ``dtype``: added to a part XLA computed (0 or normal), such a
    part gives that part back, or a multiple of ``2 * tiny`` (0 or normal), so ``z + (0.5 -
    0.25j)`` needs no check."""
    known = np.asarray(value) if isinstance(value, complex) else known_values(value)
    if known is None or known.dtype.kind not in "biufc":
        return False
    cast = known.astype(dtype)
    parts = np.abs(np.concatenate([cast.real.ravel(), cast.imag.ravel()]))
    return bool(np.all((parts == 0) | (parts >= _bound(dtype))))


def _complex_terms(jnp: Any, name: str, x: Any, r: Any) -> Any:
    """A complex sum, mean, difference or trace (``SUMS``) adds the real and the imaginary
    parts apart: the real test of :func:`capviz.backends.jax.subnormals.reductions.sums` on
    each part of the operand (every nonzero part at least ``tiny * 2**(nmant + 1)``, times
    the count for a mean: then every partial sum is 0 or normal, and so is the mean)."""
    if dtype_of(x).kind != "c" or dtype_of(r).kind != "c":
        return r
    bound = _bound(dtype_of(r))
    if name in ("mean", "nanmean"):
        bound *= max(1, math.prod(x.shape) // max(1, math.prod(r.shape)))
    ok = True
    for part in (jnp.real(x), jnp.imag(x)):
        ok = ok & (~(jnp.abs(part) < bound) | (part == 0))
    require_each(ok, _TERMS.format(op=name, bound=bound))
    return r


def _angle(jnp: Any, x: Any, r: Any) -> Any:
    """``angle(a + bj)`` is ``arctan2(b, a)`` (times ``180 / pi`` for ``deg=True``): 0 in XLA
    where NumPy's is a nonzero subnormal exactly where ``|b / a|`` is above half the smallest
    subnormal (the precise test of ``arctan2``, scaled out of the subnormal range)."""
    dtype = dtype_of(r)
    if dtype_of(x).kind != "c" or dtype.kind != "f" or _part_type(dtype) != dtype:
        return r
    info = np.finfo(dtype)
    least = float(info.smallest_subnormal)
    scale = 2.0 ** (info.nmant + 2)
    b, a = jnp.imag(x), jnp.real(x)
    ok = (r != 0) | ~(jnp.abs((b * scale) / a) > least * scale / 2)  # NaN: 0 / 0
    require_each(ok, _ANGLE.format(tiny=float(info.tiny)))
    return r


COMPLEX_NOTES = {"divide": "checked by a real divisor, refused by a complex one (arithmetic="
                            "'xla': tolerance)",
                 "ufunc_outer": "checked for multiply, add and subtract, refused for another "
                                "ufunc (arithmetic='xla': tolerance)"}
"""What a JAX replay does with complex operands of an op checked in some forms only."""


def complex_treatment(op: str) -> str:
    """What a JAX replay does with complex operands of ``op`` (a float or complex result), as
    the coverage table's JAX column says it: ``"exact"``, ``"checked"`` (fails at the node
    where a part of NumPy's result may be subnormal), a note of :data:`COMPLEX_NOTES`, or
    ``"refused (arithmetic='xla': tolerance)"`` (by name when the replay is bound)."""
    if op in COMPLEX_NOTES:
        return COMPLEX_NOTES[op]
    if op in COMPLEX_EXACT:
        return "exact"
    if op in COMPLEX_CHECKED or op in complex_formulas.COMPLEX_FORMULAS \
            or op in complex_functions.COMPLEX_FUNCTIONS:
        return "checked"
    return "refused (arithmetic='xla': tolerance)"


def _complex_nodes(args: Any) -> bool:
    """Whether a node's arguments (lists of them too) hold a complex node."""
    for a in args:
        if isinstance(a, Node) and a.dtype is not None and np.dtype(a.dtype).kind == "c":
            return True
        if isinstance(a, (list, tuple)) and _complex_nodes(a):
            return True
    return False


def unchecked(node: Node) -> str | None:
    """Why XLA's flush may change a part of ``node``'s complex result, or the float result it
    makes from complex operands, with no check to see it (``None``: the op is exact on
    complex values or checked, or it touches none)."""
    complex_result = node.dtype is not None and np.dtype(node.dtype).kind == "c"
    if not complex_result and not _complex_nodes(node.args):
        return None
    if node.op in COMPLEX_EXACT or node.op in COMPLEX_CHECKED:
        return None
    if node.op == "pad" and (node.params or {}).get("mode") in _COPYING_PADS:
        return None
    if node.op == "ufunc_outer" and (node.params or {}).get("ufunc") in OUTER_CHECKED:
        return None
    if complex_formulas.admitted(node) or complex_functions.admitted(node):
        return None
    if complex_result:
        return f"no run-time check sees a subnormal part of the complex result of {node.op}"
    return f"no run-time check sees a subnormal value {node.op} makes from complex operands"
