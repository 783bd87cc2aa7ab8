"""Products rounded as NumPy rounds them: XLA's fused multiply-add kept out of a replay (issue
25; the hostile review 4, finding 7).

NumPy computes ``s - a * b`` as two ufunc calls: the product is rounded to its type, then the
difference is rounded. XLA's CPU compiler fuses the two into one loop, and LLVM contracts the
multiply and the subtract into one fused multiply-add (``fma(a, b, -s)``: the product kept
exact, one rounding), whatever the flags (``--xla_cpu_enable_fast_math=false`` and
``--xla_allow_excess_precision=false`` change nothing; openxla/xla#41579). The two differ by up
to half an ulp of the product, which a cancelling difference turns into any relative error:
``x*x - y*y`` of float32 values near 1e3 came out 302 times beyond the tolerance on 4,070 of
4,096 elements, silently.

So each floating product a traced program makes (:data:`PRODUCTS`: the ``multiply``, ``square``
and ``power`` nodes, whose results jax computes with ``fmul``) that an op may add to goes
through :func:`rounded`: minus a zero the compiler cannot see (an argument of the compiled
function, :attr:`capviz.backends.jax.trace.Trace.zero`). The compiler must then round the
product to its type before anything adds it, as NumPy does: ``s - a * b`` replays NumPy's bits.
An ``lax.optimization_barrier`` or a ``lax.reduce_precision`` to the product's own type does not
do it (XLA simplifies both away). A product only multiplies, quotients and comparisons read
(:data:`_APART`) is left alone. The cost is one subtract per element where the product is
added to, fused into the same loop, and the multiply-add XLA no longer makes: about 2x on a
chain of products and adds of 4 MiB arrays, none measurable on GPT-2.

Complex products (``multiply``, ``square``) are NumPy's fused form where NumPy's CPU dispatch
fuses: :mod:`capviz.backends.jax.complex_products`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from capviz.backends.jax.trace import TRACE

PRODUCTS = frozenset(("multiply", "square", "power", "float_power",
                      "outer", "linalg.outer", "kron", "einsum", "vecdot", "linalg.vecdot",
                      "inner", "dot", "vdot", "matmul", "matvec", "vecmat", "tensordot",
                      "linalg.tensordot", "linalg.multi_dot"))
"""The ops whose floating result XLA computes with a multiply that it may fuse into an add:
the multiplies, and the products not spelled as one (the hostile review 4, finding 7's rest:
``np.outer(a, a) - c``, ``np.einsum('i,j->ij', ...)``, ``np.kron``, and a contraction of one
term, ``np.vecdot`` of length 1 or ``x[:, None] @ y[None, :]``, which XLA simplifies to a
multiply, 69x-312x the tolerance where the difference cancelled). A contraction of more terms
ends in its own sum, not fused into what reads it: its rounding costs one subtract per output
element."""

_BITS = {2: np.int16, 4: np.int32, 8: np.int64}


def rounded(lax: Any, value: Any, zero: Any) -> Any:
    """``value`` (a real float array) rounded to its type before any op that reads it: minus
    ``zero`` as a float, a +0.0 the compiler does not know (``p - 0.0`` is ``p`` for every
    ``p``, ``-0.0`` and NaN included; fused with the multiply, it is ``fma(a, b, -0.0)``, the
    product rounded once, and what reads it reads a rounded value); float16, which XLA may
    keep in float32 between ops, by its bits xor'd with the integer ``zero`` (a float16
    value it must hold). Other types are returned as they are. The subtract costs less than
    the bits' round trip, which XLA does not fuse as well (a chain of 50 products and 50 adds
    of (1024, 1024) float32: 7.0 ms against 9.0 ms, 3.4 ms fused into multiply-adds:
    ``/tmp/lead/fma_sub.py``)."""
    dtype = np.dtype(value.dtype)
    if dtype.kind != "f" or dtype.itemsize not in _BITS:
        return value
    if dtype.itemsize > 2:
        return value - lax.convert_element_type(zero, dtype)
    bits = _BITS[dtype.itemsize]
    mask = lax.convert_element_type(zero, bits)
    return lax.bitcast_convert_type(lax.bitcast_convert_type(value, bits) ^ mask, dtype)


_APART = frozenset(("multiply", "square", "divide", "true_divide", "reciprocal", "sqrt",
                    "absolute", "fabs", "sign", "greater", "greater_equal", "less",
                    "less_equal", "equal", "not_equal", "maximum", "minimum", "fmax", "fmin",
                    "isnan", "isinf", "isfinite", "signbit"))
"""Ops that read a product without adding to it (a multiply, a quotient, a comparison...): a
product only these read (or none: an output) cannot be fused into an add, and is not rounded
(a chain of 100 products paid 3.4x for its guards: the review 4, finding 17)."""


def _apart(nodes: list) -> frozenset:
    """The indices of the product nodes among ``nodes`` whose every reader is in
    :data:`_APART` (arguments nested in lists and tuples included)."""
    readers: dict[int, set[str]] = {}

    def note(arg: Any, op: str) -> None:
        if isinstance(arg, (list, tuple)):
            for item in arg:
                note(item, op)
        elif hasattr(arg, "index") and hasattr(arg, "kind"):
            readers.setdefault(arg.index, set()).add(op)

    for node in nodes:
        for arg in node.args:
            note(arg, node.op)
        for value in node.params.values():
            note(value, node.op)
    return frozenset(node.index for node in nodes if node.op in PRODUCTS
                     and readers.get(node.index, set()) <= _APART)


def in_trace(value: Any) -> Any:
    """``value`` rounded (:func:`rounded`) inside a traced program, unless it is a product node's
    that nothing adds to (:func:`_apart`); as it is elsewhere (an op run on its own fuses with
    nothing)."""
    trace = TRACE.get()
    if trace is None or trace.zero is None:
        return value
    node = trace.node
    if node is not None and node.op in PRODUCTS:
        if trace.apart is None:
            trace.apart = _apart(trace.nodes)
        if node.index in trace.apart:
            return value
    return rounded(trace.lax, value, trace.zero)


def _hidden_zeros(lax: Any, value: Any, zero: Any) -> Any:
    """+0.0 at every element of ``value``'s shape, made of ``value``'s own bits and-ed with the
    integer ``zero`` the compiler does not know: an array that is no broadcast (a broadcast
    zero, or an ``iota``'s bits, XLA and LLVM see through: the divisor stays a broadcast)."""
    dtype = np.dtype(value.dtype)
    bits = _BITS[dtype.itemsize]
    mask = lax.convert_element_type(zero, bits)
    return lax.bitcast_convert_type(lax.bitcast_convert_type(value, bits) & mask, dtype)


def quotient(jnp: Any) -> Callable:
    """``np.divide`` of real floats, correctly rounded as NumPy's, inside a traced program.

    XLA turns a division by a broadcast value (a constant, a 0-d or a ``keepdims`` divisor:
    ``a / 768``, ``e / e.sum(-1, keepdims=True)``) into a product with its reciprocal, one
    ulp off NumPy's quotient on a fifth to a third of the values (the hostile review 4,
    finding 16: ``a / 0.001 - b * 1000`` 445 times the tolerance where the difference
    cancels), and rewrites ``a / (b / c)``, ``(a / b) / c``, ``a / sqrt(b)``, ``a / exp(b)``,
    ``a / pow(b, c)`` into other roundings (``a / (1 / a) - b * b``: 815 times). So the
    divisor, spread to the result's shape, has a zero the compiler cannot see subtracted
    (:func:`_hidden_zeros` where it was a broadcast, the traced zero otherwise), and so has
    the dividend: XLA sees neither a broadcast nor a pattern, and divides each element, as
    NumPy does. Complex and integer quotients, and a divide run outside a traced program, are
    ``jax.numpy``'s."""

    def divide(a: Any, b: Any) -> Any:
        plain = jnp.true_divide(a, b)
        trace = TRACE.get()
        dtype = np.dtype(plain.dtype)
        if trace is None or trace.zero is None or dtype.kind != "f" \
                or dtype.itemsize not in _BITS:
            return plain
        lax = trace.lax
        shape = tuple(plain.shape)
        zero = lax.convert_element_type(trace.zero, dtype)
        dividend = jnp.broadcast_to(jnp.asarray(a).astype(dtype), shape) - zero
        divisor = jnp.asarray(b).astype(dtype)
        if tuple(divisor.shape) == shape:
            divisor = divisor - zero
        else:
            divisor = jnp.broadcast_to(divisor, shape) - _hidden_zeros(lax, dividend,
                                                                       trace.zero)
        return lax.div(dividend, divisor)

    return divide


def rounding(fn: Callable) -> Callable:
    """``fn`` (a product op's form) with its result rounded by :func:`in_trace`."""

    def run(*args: Any, **params: Any) -> Any:
        return in_trace(fn(*args, **params))

    run.__name__ = getattr(fn, "__name__", "product")
    return run


def _product(jnp: Any, a: Any, b: Any) -> Any:
    """``a * b`` rounded before an add reads it, inside a traced program (as a node's is)."""
    return in_trace(jnp.multiply(a, b))


def cross(jnp: Any) -> Callable:
    """``np.cross`` as NumPy computes it (``numpy/_core/numeric.py``): each component a product
    rounded, then ``-=`` another (``cp0 = a1 * b2; cp0 -= a2 * b1``), where ``jax.numpy.cross``
    lets XLA fuse each difference into a multiply-add: nearly parallel vectors of large values
    would cancel to other values. Real float operands only; other types (exact, or complex:
    see the module doc) go to ``jax.numpy.cross``."""

    def run(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
            axis: int | None = None) -> Any:
        a, b = jnp.asarray(a), jnp.asarray(b)
        dtype = np.result_type(a.dtype, b.dtype)
        if dtype.kind != "f":
            return jnp.cross(a, b, axisa, axisb, axisc, axis)
        if axis is not None:
            axisa = axisb = axisc = axis
        a = jnp.moveaxis(a, axisa, -1).astype(dtype)
        b = jnp.moveaxis(b, axisb, -1).astype(dtype)
        if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
            return jnp.cross(a, b)  # jax.numpy raises NumPy's ValueError
        three_a, three_b = a.shape[-1] == 3, b.shape[-1] == 3
        a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
        mul = partial(_product, jnp)
        cp2 = mul(a0, b1) - mul(a1, b0)
        if not (three_a or three_b):
            return cp2
        if three_a and three_b:
            a2, b2 = a[..., 2], b[..., 2]
            cp0 = mul(a1, b2) - mul(a2, b1)
            cp1 = mul(a2, b0) - mul(a0, b2)
        elif three_b:  # a2 = 0
            b2 = b[..., 2]
            cp0, cp1 = mul(a1, b2), -mul(a0, b2)
        else:  # b2 = 0
            a2 = a[..., 2]
            cp0, cp1 = -mul(a2, b1), mul(a2, b0)
        shape = jnp.broadcast_shapes(cp0.shape, cp1.shape, cp2.shape)
        cp = jnp.stack([jnp.broadcast_to(c, shape) for c in (cp0, cp1, cp2)], axis=-1)
        return jnp.moveaxis(cp, -1, axisc)

    return run


def linalg_cross(jnp: Any) -> Callable:
    """``np.linalg.cross``: :func:`cross` of 3-vectors along ``axis`` (NumPy checks the size
    before calling it)."""
    inner = cross(jnp)

    def run(x1: Any, x2: Any, axis: int = -1) -> Any:
        x1, x2 = jnp.asarray(x1), jnp.asarray(x2)
        if x1.shape[axis] != 3 or x2.shape[axis] != 3:
            return jnp.linalg.cross(x1, x2, axis=axis)  # NumPy's ValueError
        return inner(x1, x2, axis=axis)

    return run


LITERAL_GUARDED = frozenset(("add", "subtract", "multiply"))
"""The ufuncs whose literal operands XLA's algebraic simplifier rewrites otherwise than NumPy
computes (the hostile review 5, finding 2): ``x + 0.0`` and ``x - -0.0`` folded to ``x`` (NumPy:
``-0.0 + 0.0`` is ``+0.0``), ``(x + 12582912.0) - 12582912.0`` to ``x`` and ``x + 1 + 2`` to ``x
+ 3`` (NumPy rounds each sum: up to 4,270 times the tolerance), ``x * 2 * 0.5`` to ``x`` (NumPy
overflows to inf), ``(x * 10) * 0`` to ``x * 0`` (NumPy: NaN where ``x * 10`` is inf). A
quotient's operands are hidden already (:func:`quotient`); a power's exponent is left a number
(NumPy's loop picks its form by it: :data:`capviz.backends.jax.carried_sources.EXACT_EXPONENTS`)."""

_LIKE = frozenset(("zeros_like", "ones_like", "full_like"))
"""Creations whose first operand gives only a shape: XLA holds their values as constants."""


def _is_node(value: Any) -> bool:
    return hasattr(value, "index") and hasattr(value, "kind")


def _nodes_in(values: Any) -> list:
    """The nodes among ``values``, lists and tuples searched."""
    found: list = []
    for value in values:
        if isinstance(value, (list, tuple)):
            found.extend(_nodes_in(value))
        elif _is_node(value):
            found.append(value)
    return found


def _from_constants(nodes: list) -> frozenset:
    """The indices of the op nodes among ``nodes`` (in program order) whose values the traced
    program computes from numbers alone, which XLA folds to constants: a creation
    (``np.zeros``, ``np.arange``...; a ``np.full_like(x, 2.0)``, whose ``x`` gives a shape
    only), and what reads nothing else. The graph's constant arrays are arguments of the
    compiled function, unknown to XLA, and not among them."""
    from capviz.ops import is_random

    found: set[int] = set()
    for node in nodes:
        if is_random(node.op):
            continue
        args = node.args[1:] if node.op in _LIKE else node.args
        read = _nodes_in(args) + _nodes_in(tuple(node.params.values()))
        if all(each.kind == "op" and each.index in found for each in read):
            found.add(node.index)
    return frozenset(found)


def _literal(value: Any) -> bool:
    """Whether ``value`` is a number or a host array, which XLA sees as a constant."""
    return isinstance(value, (bool, int, float, complex, np.generic, np.ndarray))


def opaque_operands(name: str, args: list, loop: tuple) -> list:
    """``args`` of the ufunc ``name`` (one of :data:`LITERAL_GUARDED`, in the loop dtypes
    ``loop``), inside a traced program: each float or complex operand XLA would know as a
    constant (a number, or the value of a node :func:`_from_constants` finds) made a value it
    cannot know, minus the zero the compiled function is given (:attr:`capviz.backends.jax.
    trace.Trace.zero`): ``c - 0.0`` is ``c`` for every ``c``, ``-0.0``, infinities and NaN
    included, so the op computes NumPy's values, each rounded as NumPy rounds it. The cost is a
    scalar subtract per literal (a created array's, one per element, fused)."""
    trace = TRACE.get()
    if trace is None or trace.zero is None or name not in LITERAL_GUARDED:
        return args
    node = trace.node
    recorded = node.args if node is not None and node.op == name \
        and len(node.args) == len(args) else None
    out = list(args)
    for k, (value, dtype) in enumerate(zip(args, loop)):
        dtype = np.dtype(dtype)
        if dtype.kind not in "fc":
            continue
        constant = _literal(value)
        if not constant and recorded is not None and _is_node(recorded[k]) \
                and recorded[k].kind == "op":
            if trace.constant is None:
                trace.constant = _from_constants(trace.nodes)
            constant = recorded[k].index in trace.constant
        if constant:
            lax = trace.lax
            if _literal(value):
                with np.errstate(over="ignore"):  # NumPy's cast of a huge number: inf
                    value = np.asarray(value, dtype)
            held = lax.convert_element_type(value, dtype)
            out[k] = held - lax.convert_element_type(trace.zero, dtype)
    return out


def complex_sum_kept(value: Any) -> Any:
    """A complex ``add`` or ``subtract``'s result ``value``, inside a traced program, minus the
    zero the compiled function is given: XLA's CPU code reassociates complex adds, ``(x - y) +
    y`` computed as ``x`` (NumPy rounds ``x - y``: ``(0.7 - 1e8) + 1e8`` is ``0``, and ``-0.0 -
    0.0 + 0.0`` is ``+0.0``), which a value it cannot know in between stops. ``c - 0`` is ``c``
    in each part, ``-0.0`` and NaN included. Other types, and outside a traced program, as it
    is."""
    trace = TRACE.get()
    if trace is None or trace.zero is None or np.dtype(value.dtype).kind != "c":
        return value
    return value - trace.lax.convert_element_type(trace.zero, np.dtype(value.dtype))


SUMS_FROM_ZERO = frozenset(("matmul", "einsum", "dot", "inner", "tensordot", "linalg.tensordot",
                            "vecdot", "linalg.vecdot", "matvec", "vecmat", "vdot",
                            "linalg.multi_dot"))
"""Contractions NumPy adds into a +0.0 (BLAS's accumulator, ``einsum``'s zeroed output): a
zero result is +0.0, where XLA simplifies a contraction of one term (``x[:, None] @ y[None,
:]``, ``np.einsum('i,j->ij', x, y)``) to the product and keeps ``-0.0`` (the hostile review 6,
finding 20); so do ``dot``, ``inner``, ``tensordot``, ``vecdot``, ``matvec``, ``vecmat``,
``vdot`` and ``multi_dot`` (measured: ``np.inner(x[:, None], y[:, None])``, ``np.tensordot(x,
y, axes=0)``, ``np.dot(x, 0-d)``... all +0.0 in NumPy). An ``einsum`` of one operand (a
transpose, a diagonal) moves values, and NumPy's ``dot`` or ``inner`` of two vectors (its BLAS
``dot``) kept ``-0.0`` of a length-1 product: left as XLA's, which agrees."""


def sums_from_zero(name: str, fn: Callable) -> Callable:
    """``fn`` (the op ``name`` of :data:`SUMS_FROM_ZERO`) with a real float zero result made
    +0.0 (a select, which XLA's simplifier leaves)."""

    def run(*args: Any, **params: Any) -> Any:
        result = fn(*args, **params)
        tensors = [a for a in args if hasattr(a, "shape") and not isinstance(a, str)]
        if name == "einsum" and len(tensors) < 2:
            return result
        if name in ("dot", "inner") and len(tensors) == 2 \
                and all(len(t.shape) == 1 for t in tensors):
            return result  # NumPy's BLAS dot of two vectors keeps its own zero's sign
        if not hasattr(result, "dtype") or np.dtype(result.dtype).kind != "f":
            return result
        trace = TRACE.get()
        lax = trace.lax if trace is not None and trace.lax is not None else None
        if lax is None:
            return result
        zero = lax.full_like(result, 0)
        return lax.select(result == zero, zero, result)

    run.__name__ = getattr(fn, "__name__", name)
    return run
