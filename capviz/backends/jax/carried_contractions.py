"""The bound of a contraction of linear algebra (``np.matmul``, ``np.dot``, ``np.einsum``...,
and ``np.linalg.norm`` of a whole array) XLA computes, from NumPy's, which is its BLAS's: within
the declared ``2 gamma_k |A| @ |B|``, each side's distance from the exact value taken apart for
a real product of two operands (:func:`declared_bound`, :func:`any_order`), and the cheap
rank-1 bound never below it (:func:`nominal`), which :mod:`capviz.backends.jax.carried` carries
to the consumers that can cancel it (the lead's ruling 37 07:30)."""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz import ops
from capviz.backends import contraction_bound
from capviz.backends.jax.trace import dtype_of, host_measured
from capviz.core.ir import Node


def declared_bound(jnp: Any, node: Node, args: tuple, result: Any) -> Any:
    """The bound of XLA's contraction ``result`` (``np.matmul``...) from NumPy's, which is
    its BLAS's order; 0 where the result is not finite, infinite where no bound holds (a
    float16 one of ``k >= 2048`` products: ``k u >= 1``); ``None`` for an integer result.
    Whatever the signs of its products (the lead's ruling 37 07:30 (a): where they cancel
    among themselves, a layer's weights of both signs, NumPy's value and XLA's are as far
    apart as where they add up as one sign's; the hostile review 8's #16, #20 and #28
    measured it beyond the tolerance of what cancels them).

    A real contraction of two tensor operands takes :func:`_two_sided`: each side's distance
    from the exact value apart, NumPy's by the rounding of every order (:func:`any_order`),
    XLA's measured where the exact value is computable. Any other (complex, three operands
    and more) takes the declared ``2 gamma_k |A| @ |B|`` (+ the flushed partial results' ``2
    k m tiny``; :func:`capviz.backends.contraction_bound.bound`), the magnitudes' contraction
    computed here in float64."""
    kind = dtype_of(result)
    if kind.kind not in "fc":
        return None
    real = np.dtype(kind.type(0).real.dtype)
    operands = [jnp.asarray(a) for a, n in zip(args, node.args) if isinstance(n, Node)]
    if node.op == contraction_bound.NORM:
        return _norm_bound(jnp, operands[0], result, real)
    count, m, g, floor = _gamma(node, operands, kind)
    k = count + m - 2
    kept = {key: v for key, v in node.params.items()
            if key not in ("dtype", "casting", "out")}
    # every argument in its place (np.dot(x, 2.0): a number beside the tensor)
    absolute = [jnp.abs(jnp.asarray(a)).astype(np.float64) if isinstance(n, Node) else
                (abs(a) if isinstance(a, (int, float, complex, np.number)) else a)
                for a, n in zip(args, node.args)]
    fn = ops.OPS[node.op].bind(jnp)
    size = fn(*absolute, **kept) / (1 - contraction_bound.gamma(k + 2, np.float64))
    terms = _nonzero_terms(jnp, fn, node, args, kept)
    if kind.kind == "f" and len(operands) == 2:
        fewer = jnp.minimum(terms, count)
        bound = _two_sided(jnp, fn, node, args, kept, result, size, fewer, count, real)
        bound = jnp.where(terms <= 1, floor, bound + floor)
    else:
        fewer = jnp.minimum(terms, count) + (m - 2)
        u = float(np.finfo(real).eps) / 2
        if kind.kind == "c":
            fewer = fewer + 2
        each = jnp.where(fewer * u < 1,
                         fewer * u / jnp.where(fewer * u < 1, 1 - fewer * u, 1), np.inf)
        each = np.sqrt(2) * each if kind.kind == "c" else each
        g = jnp.minimum(g, each)
        bound = jnp.where((m == 2) & (terms <= 1) & (kind.kind != "c"), floor,
                          2 * g * size + floor)
    # an infinite bound (float16's gamma_k for k >= 2048) stays infinite: the consumer fails
    # (it was 0, a pass, before stop 41); products all 0 add up to 0 in every order
    bound = jnp.where(jnp.isnan(bound) & (size == 0), floor, bound)
    return jnp.where(jnp.isfinite(jnp.abs(result)), bound, 0)


def _nonzero_terms(jnp: Any, fn: Any, node: Node, args: tuple, kept: dict) -> Any:
    """The products that are not 0, per output of the contraction ``node`` (exact in float64):
    a sum of fewer terms rounds fewer times (adding a 0 is exact), and one product of two
    factors is NumPy's own rounding of it in every order (``s @ np.eye(n)``, a one-hot row
    times a table). (A ``lax.cond`` that made this product only where an operand holds a 0
    cost more than the product at GPT-2 pico's sizes: stop 40.)"""
    return fn(*[(jnp.asarray(a) != 0).astype(np.float64) if isinstance(n, Node) else
                (float(a != 0) if isinstance(a, (int, float, complex, np.number)) else a)
                for a, n in zip(args, node.args)], **kept)


SLACK = 1 + 1e-12
"""Rounds a bound computed in float64 up past its own float64 roundings (a dozen operations,
each within ``2 ** -53`` of its value)."""


def any_order(jnp: Any, u: float, size: Any, peak: Any, terms: Any) -> Any:
    """How far a sum of ``terms`` products of two factors added in any order, each operation
    rounding to unit roundoff ``u`` (a BLAS's blocks and lanes, fused multiply-adds, a wider
    accumulator rounded once), can be from the exact value: ``u A + (n - 1) u (1 + u) (peak +
    gamma_n A)``, ``A`` (``size``) at least ``|A| @ |B|``, ``peak`` at least the larger of
    the positive products' total and the negative ones' (``(A + |c|) / 2``, ``c`` the exact
    value), ``n`` the products that are not 0 (``terms``; infinite where ``n u >= 1``).

    Why: every order is a tree of ``n - 1`` additions of the ``n`` products (adding a 0 is
    exact), each product rounded at most once (``u |t|`` each, ``u A`` in all). An addition
    rounds the exact sum of two computed partial sums by at most ``u`` times it, and that sum
    is a sum of some of the products, at most ``peak`` (a part of the positive ones less a
    part of the negative ones), plus the two partial sums' own errors, at most ``gamma_n A``
    (Higham's lemma 3.1). Against ``gamma_n A`` (every addition at ``A``) it is about ``(A +
    |c|) / (2 A)`` of it: half where the products cancel among themselves (a layer's weights
    of both signs), all of it where they add up as one sign's."""
    nu = terms * u
    g = jnp.where(nu < 1, nu / jnp.where(nu < 1, 1 - nu, 1), np.inf)
    steps = jnp.maximum(terms - 1, 0)
    return (u * size + steps * u * (1 + u) * (peak + g * size)) * SLACK


def _exact_products(jnp: Any, args: tuple, node: Node) -> bool:
    """Whether the products of the contraction ``node``'s tensor operands ``args`` are exact in
    float64 (float operands of at most 26 significant bits: float32, float16, bfloat16), so
    that its float64 contraction is the exact value within ``gamma_k`` of float64."""
    for a, n in zip(args, node.args):
        if isinstance(n, Node):
            kind = dtype_of(a)
            if kind.kind != "f" or np.finfo(kind).nmant > 25:
                return False
    return True


def _two_sided(jnp: Any, fn: Any, node: Node, args: tuple, kept: dict, result: Any,
               size: Any, terms: Any, count: int, real: np.dtype) -> Any:
    """``|c_xla - c_np|`` of a real contraction of two tensor operands (not its flushed partial
    results' floor) as ``|c_xla - c| + |c - c_np|``, ``c`` the exact value: NumPy's side
    :func:`any_order` (the R11 #14 decomposition, stop 40: where the products cancel among
    themselves it is half of ``gamma_k |A| @ |B|``); XLA's measured, ``|c_xla - c64| +
    gamma_k(float64) A``, where the float64 contraction ``c64`` of the operands is exact but
    for its own float64 roundings (:func:`_exact_products`: float32 operands), else
    :func:`any_order` too (float64). ``size`` is ``A``, ``terms`` the products that are not
    0 per output, ``count`` the products per output."""
    u = float(np.finfo(real).eps) / 2
    wide = contraction_bound.gamma(count + 2, np.float64)
    if _exact_products(jnp, args, node):
        signed = fn(*[jnp.asarray(a).astype(np.float64) if isinstance(n, Node) else a
                      for a, n in zip(args, node.args)], **kept)
        off = wide * size  # c64's own float64 roundings
        magnitude = jnp.abs(signed) + off  # >= |c|
        peak = jnp.minimum(size, (size + magnitude) / 2) * SLACK
        xla = (jnp.abs(jnp.asarray(result).astype(np.float64) - signed) + off) * SLACK
        return xla + any_order(jnp, u, size, peak, terms)
    # |c| <= |c_xla| + XLA's own distance, at most gamma_n A (in any order)
    g = contraction_bound.gamma(count, real)
    magnitude = jnp.abs(jnp.asarray(result)).astype(np.float64) + (g + 4 * wide) * size
    peak = jnp.minimum(size, (size + magnitude) / 2) * SLACK
    return 2 * any_order(jnp, u, size, peak, terms)


def _gamma(node: Node, operands: list, kind: np.dtype) -> tuple[int, int, float, float]:
    """``(count, m, g, floor)`` of the contraction ``node`` of ``operands`` (a ``kind``
    result): the products per output, the operands (at least 2), ``gamma_k`` of its type
    (``sqrt(2) gamma_{k+2}`` for a complex one), and the flushed partial results' floor
    ``2 count m tiny``."""
    real = np.dtype(kind.type(0).real.dtype)
    count = contraction_bound.terms(node.op, [tuple(np.shape(a)) for a in operands],
                                    node.params)
    m = max(len(operands), 2)
    k = count + m - 2
    g = np.sqrt(2) * contraction_bound.gamma(k + 2, real) if kind.kind == "c" \
        else contraction_bound.gamma(k, real)
    return count, m, g, 2 * count * m * float(np.finfo(real).tiny)


def nominal(jnp: Any, node: Node, args: tuple, result: Any) -> Any:
    """The cheap bound of the contraction ``node``'s ``result``, never below
    :func:`declared_bound` (the lead's ruling 37 07:30 (b)): for a ``matmul`` of two
    operands (a ``dot`` of 1-d and 2-d ones), the rank-1 Cauchy-Schwarz bound of ``|A| @
    |B|``, ``(|A| @ |B|)_ij <= ||a_i|| ||b_j||`` (each row's and column's norm in float64,
    ``O(MK + KN)``: :func:`_norms_form`), times ``2 gamma_k``; for any other contraction,
    :func:`declared_bound` itself. 0 where ``result`` is not finite; infinite where the norms
    overflow float64 (the exact bound is then taken:
    :meth:`capviz.backends.jax.carried.Carried._declared`)."""
    if not _norms_form(node, args):
        return declared_bound(jnp, node, args, result)
    kind = dtype_of(result)
    a, b = (jnp.asarray(x) for x in args)
    count, _, g, floor = _gamma(node, [a, b], kind)
    # each row's and column's norm; a weight's measured on the host once per trace (the
    # lead's ruling 38 10:50), not read in every replay's program
    rows = _norms(args[0], -1)  # (..., M), or () for a 1-d a
    if rows is None:
        size = jnp.abs(a).astype(np.float64)
        rows = jnp.sqrt(jnp.sum(size * size, axis=-1))
    axis = -2 if b.ndim >= 2 else -1
    cols = _norms(args[1], axis)  # (..., N), or ()
    if cols is None:
        size = jnp.abs(b).astype(np.float64)
        cols = jnp.sqrt(jnp.sum(size * size, axis=axis))
    if a.ndim >= 2 and b.ndim >= 2:
        size = rows[..., :, None] * cols[..., None, :]
    else:
        size = rows[..., None] * cols if b.ndim >= 2 else rows * cols
    # four float64 roundings of each norm and one of their product, rounded up
    size = size / (1 - contraction_bound.gamma(count + 10, np.float64))
    # (any_order's form here, |c| from XLA's value, cost GPT-2 pico's default replay 1.4x for
    # a test that passes there anyway: stop 40, left as it was)
    bound = jnp.broadcast_to(2 * g * size + floor, jnp.shape(result))
    return jnp.where(jnp.isfinite(jnp.abs(result)), bound, 0)


def _norms(value: Any, axis: int) -> np.ndarray | None:
    """The float64 norms of ``value`` along ``axis`` where it is a large constant of the
    program (a weight), measured on the host once per trace
    (:func:`capviz.backends.jax.trace.host_measured`); ``None`` for a computed value."""
    return host_measured(value, f"norms_{axis}", lambda host: np.sqrt(np.sum(
        np.square(np.abs(np.asarray(host)).astype(np.float64)), axis=axis)))


def _norms_form(node: Node, args: tuple) -> bool:
    """Whether the contraction ``node`` of ``args`` takes :func:`nominal`'s rank-1 bound: a
    ``matmul`` of two tensor operands (any batch), or a ``dot`` of two 1-d or 2-d ones, with no
    parameter but ``dtype``."""
    if node.op not in ("matmul", "dot") or len(args) != 2 \
            or not all(isinstance(n, Node) for n in node.args) \
            or any(k not in ("dtype",) for k in node.params):
        return False
    shapes = [np.shape(a) for a in args]
    if any(len(s) == 0 for s in shapes):
        return False
    return node.op == "matmul" or all(len(s) <= 2 for s in shapes)


def _norm_bound(jnp: Any, x: Any, result: Any, real: np.dtype) -> Any:
    """The bound of XLA's ``np.linalg.norm(x)`` (no axis) from NumPy's, its BLAS ``dot``:
    :func:`capviz.backends.contraction_bound.norm_bound` computed here (the squares' sum in
    float64); 0 where the result is not finite (the same in every order). Its squares are
    one sign's, so the bound is carried to every add or subtract the norm reaches (review 5,
    on c91ba55: ``norm(x) - norm(y)`` of close vectors was 312x beyond the tolerance)."""
    count = max(int(np.prod(x.shape)), 1)
    k = 2 * count if dtype_of(x).kind == "c" else count
    g = contraction_bound.gamma(k, real)
    total = jnp.sum(jnp.abs(x).astype(np.float64) ** 2) \
        / (1 - contraction_bound.gamma(k + 2, np.float64))
    d = 2 * g * total + 2 * k * 2 * float(np.finfo(real).tiny)
    low = total * (1 - g) if g < 1 else jnp.zeros_like(total)
    apart = jnp.where(low > 0, jnp.minimum(jnp.sqrt(d), d / (2 * jnp.sqrt(jnp.maximum(low,
                      1e-300)))), jnp.sqrt(d))
    bound = apart + float(np.finfo(real).eps) * jnp.sqrt(total * (1 + g))
    bound = jnp.where(jnp.isnan(bound) & (total == 0), 0, bound)  # infinite stays so
    return jnp.where(jnp.isfinite(jnp.abs(result)), bound, 0).reshape(np.shape(result))
