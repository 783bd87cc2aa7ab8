"""Complex products in NumPy's own form (the hostile review 6, finding 24): NumPy's complex
``multiply`` and ``square`` (its SIMD loops on a CPU with fused multiply-adds: AVX2, AVX-512)
compute ``(a + bj)(c + dj)`` as ``fma(a, c, -(b d)) + j fma(a, d, b c)``, each of ``b d`` and
``b c`` rounded, the other product kept exact in a fused multiply-add. XLA computes
``(a c - b d) + j (a d + b c)`` in an order of its own, so ``x * y - y * x`` of complex64
values near 50 and 5e8 was ``0j`` in the replay and ``512j`` in NumPy, silently.

jax has no fused multiply-add, and XLA's CPU compiler contracts a multiply into an add where it
chooses, so :func:`multiply` builds NumPy's rounding from error-free steps: complex64 parts in
float64 (the product of two float32 values is exact there; its sum with the rounded product is
rounded to odd, which float32 then rounds as one correct rounding), complex128 parts by Dekker's
exact product and Knuth's exact sum, ``RN(th + RO(tl + ul))`` (Boldo and Melquiond, *Emulation
of FMA and correctly rounded sums: proved algorithms using rounding to odd*, IEEE TC 2008). Each
product an add reads is rounded first (:func:`capviz.backends.jax.unfused.rounded`), so no
contraction moves a step. Verified against NumPy on drawn values
(``tests/test_jax_complex_products.py``).

:data:`NUMPY_FUSES` says whether this machine's NumPy fuses (measured once on a pair whose two
forms differ); where it does not, products are left as XLA computes them (the tolerance class,
as before). The operands reach this form finite, with parts below ``sqrt(finfo.max)``
(:mod:`capviz.backends.jax.checks`), and with products that are 0 or normal
(:mod:`capviz.backends.jax.subnormals`). The exact product is no multiple of ``2 * tiny``
there, so :func:`multiply` checks its own steps: the replay fails at the node where a part
NumPy keeps subnormal would be flushed (:func:`_flushed32`, :func:`_flushed64`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.jax.trace import TRACE, loop_key
from capviz.backends.jax.unfused import rounded
from capviz.ops.products import einsum_terms

_SPLIT = float(2 ** 27 + 1)
"""Veltkamp's splitting constant for float64 (``2**ceil(53 / 2) + 1``)."""


def _numpy_fuses() -> bool:
    """Whether NumPy's complex multiply here is the fused form: on a complex64 pair whose two
    forms differ (``(1 + 2**-12 + 2**-20) (1 - 2**-12) - 1``: fused ``2**-20 - 2**-24 - 2**-32``,
    exact in float32; plain ``8.34465e-07``)."""
    x = np.array([1 + 2 ** -12 + 2 ** -20 + 1j], np.complex64)
    y = np.array([1 - 2 ** -12 + 1j], np.complex64)
    with np.errstate(all="ignore"):
        return bool(np.multiply(x, y)[0].real == np.float32(2 ** -20 - 2 ** -24 - 2 ** -32))


NUMPY_FUSES = _numpy_fuses()


def _rounded(value: Any) -> Any:
    """``value`` (a product) rounded to its type before what reads it (no contraction)."""
    trace = TRACE.get()
    if trace is None or trace.zero is None:  # an op run on its own: nothing fuses across
        return value
    return rounded(trace.lax, value, trace.zero)


def _two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    """Knuth's exact sum: ``s + e == a + b``, ``s = RN(a + b)``."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _odd(lax: Any, s: Any, e: Any) -> Any:
    """``s + e`` (``s = RN(s + e)``, ``e`` its exact error) rounded to odd: ``s`` where it is
    exact or its last bit is 1, else its neighbour towards ``e``."""
    jnp = _jnp()
    bits = lax.bitcast_convert_type(s, np.int64)
    even = (bits & 1) == 0
    step = jnp.where((e > 0) == (s > 0), np.int64(1), np.int64(-1))
    moved = jnp.where((e != 0) & even, bits + step, bits)
    return lax.bitcast_convert_type(moved, np.float64)


def _jnp() -> Any:
    import jax.numpy as jnp

    return jnp


def _split(a: Any) -> tuple[Any, Any]:
    c = _rounded(_SPLIT * a)
    high = c - (c - a)
    return high, a - high


def _two_product(a: Any, b: Any) -> tuple[Any, Any]:
    """Dekker's exact product of float64 ``a`` and ``b``: ``p + e == a * b``."""
    p = _rounded(a * b)
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _fma64(lax: Any, a: Any, b: Any, c: Any) -> Any:
    """``RN(a * b + c)`` of float64 values: ``RN(th + RO(tl + ul))``."""
    uh, ul = _two_product(a, b)
    th, tl = _two_sum(c, uh)
    v = _odd(lax, *_two_sum(tl, ul))
    return _jnp().where(v == 0, th, th + v)  # th's signed zero: -0.0 + 0.0 would be +0.0


def _fma32(lax: Any, a: Any, b: Any, c: Any) -> tuple[Any, Any]:
    """``RN(a * b + c)`` of float32 values: in float64, where ``a * b`` is exact, the sum rounded
    to odd, then to float32 (one correct rounding); and the float64 value rounded, which
    :func:`_flushed32` reads."""
    p = _rounded(a.astype(np.float64) * b.astype(np.float64))
    v = _odd(lax, *_two_sum(p, c.astype(np.float64)))
    return v.astype(np.float32), v


_FLUSHED32 = ("complex {op}: a part of NumPy's fused product (or its rounded part product "
              "b*d, b*c) is a nonzero value below {tiny:.3g}, a subnormal float NumPy keeps and "
              "XLA flushes to zero; replay with backend='numpy', or scale the operands up")

_FLUSHED64 = ("complex {op}: a part of an operand is below {part:.3g}, or a product of two "
              "parts below {product:.3g}: NumPy's fused product then makes subnormal floats on "
              "the way, which it keeps and XLA flushes to zero; replay with backend='numpy', or "
              "scale the operands up")


def _flushed32(jnp: Any, a: Any, b: Any, c: Any, d: Any, parts: tuple) -> Any:
    """Where complex64 ``(a + bj)(c + dj)`` is NumPy's in XLA's run (every element of the
    mask): its rounded part products ``b d``, ``b c`` (exact in float64) and the float64 values
    of its parts before their rounding to float32 (``parts``) are 0 or at least float32's
    ``tiny``. A value below it is a subnormal float32 in NumPy (or rounds to ``tiny`` or 0 from
    one) where XLA's conversion flushes it (the hostile review 6's fused form, 63c93fd, made
    ``(x * y).real`` of parts near ``2**-51`` whose products cancel 0 where NumPy keeps a
    subnormal: silent times ``2**200``)."""
    tiny = float(np.finfo(np.float32).tiny)
    b, c, d = (v.astype(np.float64) for v in (b, c, d))
    ok = True
    for v in (b * d, b * c, *parts):
        ok = ok & ~((v != 0) & (jnp.abs(v) < tiny))
    return ok


_GATES64 = (float(np.finfo(np.float64).tiny) * 2.0 ** 53,
            float(np.finfo(np.float64).tiny) * 2.0 ** 106)
"""The smallest nonzero part and product of two parts of complex128 operands whose fused
product is checked to be NumPy's (:func:`_flushed64`)."""


def _flushed64(jnp: Any, a: Any, b: Any, c: Any, d: Any) -> Any:
    """Where complex128 ``(a + bj)(c + dj)`` is NumPy's in XLA's run (every element of the
    mask): each nonzero part at least ``tiny * 2**53`` (Dekker's low halves, multiples of its
    last bit, are then normal) and each product of two nonzero parts at least ``tiny *
    2**106``: the exact product is then a multiple of the parts' last bits' product, itself at
    least ``2 * tiny``, so every step of the error-free product and sum, and each part of the
    result, is 0 or normal, none flushed. Below, Dekker's low terms are subnormal and XLA
    flushes them (a part 3.6e-307 off NumPy's, the imaginary one too), or the real part is a
    subnormal NumPy keeps."""
    part, product = _GATES64
    ok = True
    for u in (a, b, c, d):
        ok = ok & ~((u != 0) & (jnp.abs(u) < part))
    for u in (a, b):
        for v in (c, d):
            ok = ok & ~((u != 0) & (v != 0) & (jnp.abs(u * v) < product))
    return ok


def multiply(jnp: Any, x: Any, y: Any) -> Any:
    """NumPy's complex ``x * y`` (complex64 or complex128 operands of one type, broadcast),
    failing the replay at the node where a part NumPy makes on the way is subnormal
    (:func:`_flushed32`, :func:`_flushed64`)."""
    from jax import lax

    from capviz.backends.jax.trace import require_each

    x, y = jnp.broadcast_arrays(x, y)
    a, b, c, d = jnp.real(x), jnp.imag(x), jnp.real(y), jnp.imag(y)
    real_type = np.dtype(a.dtype)
    trace = TRACE.get()
    node = None if trace is None else trace.node
    op = "multiply" if node is None else node.op
    if op == "ufunc_outer":
        op = f"{node.params.get('ufunc')}.outer"
    if real_type == np.float32:
        real, real64 = _fma32(lax, a, c, -_rounded(b * d))
        imag, imag64 = _fma32(lax, a, d, _rounded(b * c))
        require_each(_flushed32(jnp, a, b, c, d, (real64, imag64)),
                     _FLUSHED32.format(op=op, tiny=float(np.finfo(real_type).tiny)))
    else:
        real = _fma64(lax, a, c, -_rounded(b * d))
        imag = _fma64(lax, a, d, _rounded(b * c))
        require_each(_flushed64(jnp, a, b, c, d),
                     _FLUSHED64.format(op=op, part=_GATES64[0], product=_GATES64[1]))
    return lax.complex(real, imag)


def _complex_operands(jnp: Any, a: Any, b: Any) -> tuple[Any, Any] | None:
    """``a`` and ``b`` in their complex result type where NumPy's form applies, else None."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    dtype = np.result_type(np.dtype(a.dtype), np.dtype(b.dtype))
    if dtype.kind != "c" or not NUMPY_FUSES:
        return None
    return a.astype(dtype), b.astype(dtype)


def _outer(name: str, fallback: Callable | None) -> Callable[[Any], Callable]:
    """``np.outer``/``np.linalg.outer``: NumPy's ``multiply`` of the raveled operands, the
    first along a new last axis (the hostile review 7, finding 26: XLA's complex product
    there against NumPy's fused one)."""

    def make(jnp: Any) -> Callable:
        own = fallback(jnp) if fallback is not None else (
            jnp.outer if name == "outer" else jnp.linalg.outer)

        def run(a: Any, b: Any, **params: Any) -> Any:
            both = _complex_operands(jnp, a, b)
            if both is None or params:
                return own(a, b, **params)
            return multiply(jnp, both[0].reshape(-1)[:, None], both[1].reshape(-1)[None, :])

        run.__name__ = name
        return run

    return make


def _kron(fallback: Callable | None) -> Callable[[Any], Callable]:
    """``np.kron``: NumPy's ``multiply`` of the operands spread over alternate axes, reshaped
    (``numpy/lib/_shape_base_impl.py``)."""
    return lambda jnp: _kron_form(jnp, fallback(jnp) if fallback is not None else jnp.kron)


def _kron_form(jnp: Any, own: Callable) -> Callable:
    def run(a: Any, b: Any) -> Any:
        both = _complex_operands(jnp, a, b)
        if both is None:
            return own(a, b)
        a, b = both
        nd = max(a.ndim, b.ndim)
        a = a.reshape((1,) * (nd - a.ndim) + tuple(a.shape))
        b = b.reshape((1,) * (nd - b.ndim) + tuple(b.shape))
        spread_a = jnp.expand_dims(a, tuple(range(1, 2 * nd, 2)))
        spread_b = jnp.expand_dims(b, tuple(range(0, 2 * nd, 2)))
        return multiply(jnp, spread_a, spread_b).reshape(
            tuple(int(m) * int(n) for m, n in zip(a.shape, b.shape)))

    run.__name__ = "kron"
    return run


def plain(jnp: Any, x: Any, y: Any) -> Any:
    """NumPy's complex scalar math ``x * y`` (``np.complex64(a) * np.complex64(b)``: its
    ``scalarmath.c``, no fused multiply-add): ``(ac - bd) + (ad + bc)j``, each product rounded
    before the sum reads it (:func:`_rounded`), as NumPy's on every one of 20,000 drawn pairs
    (``/work/notes/s36/25j/scalarform.py``). A real operand is a complex one of imaginary part
    0, as NumPy converts it (``inf * 0`` is NaN there too)."""
    from jax import lax

    x, y = jnp.broadcast_arrays(x, y)
    a, b, c, d = jnp.real(x), jnp.imag(x), jnp.real(y), jnp.imag(y)
    real = _rounded(a * c) - _rounded(b * d)
    imag = _rounded(a * d) + _rounded(b * c)
    return lax.complex(real, imag)


def _scalar_multiply(jnp: Any) -> Callable:
    """``scalar_multiply``: a complex NumPy scalar's own ``*`` (:func:`plain`), in the type
    NumPy's ``multiply`` gives the operands (a Python float weakly)."""

    def scalar_multiply(a: Any, b: Any) -> Any:
        dtype = np.multiply.resolve_dtypes((loop_key(a), loop_key(b), None))[-1]
        if dtype.kind != "c":
            return jnp.multiply(a, b)
        return plain(jnp, jnp.asarray(a, dtype), jnp.asarray(b, dtype))

    return scalar_multiply


def _einsum(fallback: Callable | None) -> Callable[[Any], Callable]:
    """``np.einsum`` of two complex operands and one term per output (no summed label, or
    summed labels of size 1: ``'i,i->i'``, ``'i,j->ij'``, ``'ij,ij->ij'``): NumPy's einsum loop,
    which multiplies unfused as its scalar math does (:func:`plain`; ``/work/notes/s36/25j/
    einsumform.py``: every element of 20,000 drawn pairs per type, where the fused multiply
    differs), then adds the product to its zeroed output (a zero part is +0.0, as
    :func:`capviz.backends.jax.unfused.sums_from_zero` makes a real one). XLA's own complex
    product there differed in the last bits, and ``np.einsum('i,i->i', x, y) - x * y`` cancels
    them. Each real product is the same einsum of the parts, one term, rounded before the sum
    reads it."""

    def make(jnp: Any) -> Callable:
        own = fallback(jnp) if fallback is not None else ops.OPS["einsum"].bind(jnp)

        def einsum(*operands: Any, **params: Any) -> Any:
            subscripts = params.get("subscripts")
            if len(operands) != 2 or set(params) != {"subscripts"} \
                    or not isinstance(subscripts, str):
                return own(*operands, **params)
            a, b = (jnp.asarray(v) for v in operands)
            dtype = np.result_type(np.dtype(a.dtype), np.dtype(b.dtype))
            if dtype.kind != "c":
                return own(*operands, **params)
            labels, kept, sizes = einsum_terms(subscripts, [tuple(a.shape), tuple(b.shape)])
            summed = (set(labels[0]) | set(labels[1])) - set(kept)
            if math.prod(int(sizes[k]) for k in summed) != 1:
                return own(*operands, **params)
            from jax import lax

            a, b = a.astype(dtype), b.astype(dtype)

            def product(u: Any, v: Any) -> Any:
                return _rounded(own(u, v, subscripts=subscripts))

            real = product(jnp.real(a), jnp.real(b)) - product(jnp.imag(a), jnp.imag(b))
            imag = product(jnp.real(a), jnp.imag(b)) + product(jnp.imag(a), jnp.real(b))
            # added to the zeroed output: a zero part is +0.0 (a select XLA leaves)
            real, imag = (lax.select(v == 0, lax.full_like(v, 0), v) for v in (real, imag))
            return lax.complex(real, imag)

        return einsum

    return make


def forms(existing: dict[str, Callable[[Any], Callable]]) -> dict[str, Callable]:
    """The forms of the ops whose complex result NumPy computes with its ``multiply`` loop
    (``outer``, ``linalg.outer``, ``kron``): NumPy's form of complex operands, else the form
    ``existing`` (:data:`capviz.backends.jax.ops.OVERRIDES`) has for the op, or jax.numpy's;
    and a complex scalar's own ``*`` (``scalar_multiply``: :func:`plain`)."""
    return {"outer": _outer("outer", existing.get("outer")),
            "linalg.outer": _outer("linalg.outer", existing.get("linalg.outer")),
            "kron": _kron(existing.get("kron")), "scalar_multiply": _scalar_multiply,
            "einsum": _einsum(existing.get("einsum"))}
