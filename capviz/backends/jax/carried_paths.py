"""How a carried bound (:mod:`capviz.backends.jax.carried`) passes through the ops on a path from
its source to the consumer that tests it (:func:`passed`): moves, monotone functions, sums and
adds that cannot cancel, products of linear algebra, scalings (rounded as NumPy rounds them:
:func:`scaled`), squares, clamps, picks, joins and selections, each as a forward error bound; any
other op as an infinite one."""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends import cancelling, contraction_bound
from capviz.backends.jax import carried_bounds
from capviz.backends.jax.carried_sources import APPROXIMATED
from capviz.backends.jax.trace import (
    WIDENING,
    deferred_widening,
    dtype_of,
    host_measured,
    require_each,
)
from capviz.core.ir import Node

_ROUNDED = frozenset((np.dtype(np.float32), np.dtype(np.float64)))
"""The types whose products and quotients :func:`scaled` rounds as NumPy does (and whose
squares XLA rounds as NumPy: one correctly rounded product)."""

_ROUNDS = cancelling.SCALINGS | cancelling.SQUARES
"""The path ops that round their value (a product, a quotient, a square): NumPy's rounding in
:data:`_ROUNDED` types, one rounding of each side's added to the bound in the others."""


MONOTONE = frozenset((
    "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh",
    "arctan", "arcsinh", "sinh", "arcsin", "arctanh", "floor", "ceil", "trunc", "rint", "fix",
    "round", "around", "sign", "deg2rad", "rad2deg", "degrees", "radians", "reciprocal",
    "nan_to_num", "spacing"))
"""Elementwise functions of one value that are monotone on each interval of their domain (or,
``reciprocal``, on each side of 0): a value within ``e`` of NumPy's maps within the larger of
``|f(v + e) - f(v)|`` and ``|f(v - e) - f(v)|`` (an end outside the domain gives NaN: the test
fails). The roundings to integers (``floor``, ``round``...) jump there by a unit, and the bound
says so. ``reciprocal`` crosses its pole where ``e >= |v|``: infinite there."""

MOVED = {"advanced_index": (0,), "take_along_axis": (0,), "pad": (0,), "resize": (0,),
         "diagonal": (0,), "linalg.diagonal": (0,), "tril": (0,), "triu": (0,), "diag": (0,),
         "diagflat": (0,), "insert": (0, 2), "append": (0, 1), "delete": (0,),
         "split": (0,), "array_split": (0,), "hsplit": (0,), "vsplit": (0,), "dsplit": (0,),
         "unstack": (0,), "broadcast_arrays": None}
"""Ops whose every result value is one of their operands' values at these positions (``None``:
every tensor operand), or a number (a pad, an inserted constant): the same op of the bounds
(0 for an operand that is NumPy's bits, the padded or inserted numbers 0) is the result's
bound. R6 #16 on W=25s's default: an integer-array index (``p[np.arange(n), y]``, the
tutorial cross-entropy) took the infinite bound of an op not written here, and
``-np.log(p[np.arange(n), y] + 1e-9)`` was refused where it replayed before."""

SUMMED = frozenset(("sum", "mean", "nansum", "nanmean"))
"""The reductions a bound passes through as their own sum of each term's bound."""

_PASSED_CONSUMERS = frozenset(("diff", "ediff1d", "ptp"))
"""The consumers besides an add or subtract (and the periodic functions) that a path can go on
past (:data:`capviz.backends.cancelling.PASSED_CONSUMERS`): the bound of their result
(:func:`carried_bounds.consumer_bound`) and their rounding."""

_LINEAR_ADDS = frozenset(("add", "subtract"))
"""An add or subtract on a path (one that cannot cancel, ``s + s``, ``s + 0``): the operands'
bounds added, and one rounding."""


def _rule(node: Node, known: dict) -> str | None:
    """Which rule of :func:`passed` passes the bounds ``known`` (by position) through
    the path op ``node``: ``"interval"``, ``"linear"``, ``"listed"`` (the classes of
    :mod:`capviz.backends.cancelling` with the value where they take it), or ``None`` (no
    bound written: infinite)."""
    op = node.op
    tensors = [k for k, a in enumerate(node.args) if isinstance(a, Node)]
    if op in _LINEAR_ADDS or (op in contraction_bound.CONTRACTIONS and len(tensors) >= 2):
        return "linear"
    if op in SUMMED or op == "einsum":
        return "linear" if set(known) == {0} and tensors == [0] else None
    if op in MONOTONE:
        return "interval" if set(known) == {0} and tensors == [0] else None
    if op in _PASSED_CONSUMERS or cancelling.periodic(node):
        return "consumer" if set(known) == {0} and tensors == [0] else None
    if op in ("square", "power"):
        return "listed" if set(known) == {0} and (op == "square" or cancelling.squares(
            node.args[0], node) or integer_exponent(node) is not None) else None
    if op in cancelling.SCALINGS:
        return "listed"
    if op in cancelling.CLAMPS or op in cancelling.JOINS or op in cancelling.SELECTS:
        return "listed" if set(known) <= set(cancelling.passed_positions(node)) else None
    if op in cancelling.LIPSCHITZ or op in cancelling.PICKS or op in cancelling.MOVES:
        return "listed" if set(known) == {0} else None
    return None


def _moved_positions(node: Node) -> tuple[int, ...]:
    """The argument positions of the :data:`MOVED` op ``node`` whose values it moves."""
    positions = MOVED[node.op]
    if positions is None:
        return tuple(k for k, a in enumerate(node.args) if isinstance(a, Node))
    return positions


def _moved(jnp: Any, node: Node, args: Any, known: dict, value: Any) -> Any:
    """The bound of the :data:`MOVED` op ``node``'s result (one array, or a tuple of them):
    the op of the bounds ``known`` (0 for the other moved operands and for the numbers it
    lays in)."""
    parts = list(args)
    for k in _moved_positions(node):
        if k >= len(parts):
            continue
        if k in known:
            parts[k] = jnp.broadcast_to(known[k], jnp.shape(args[k])).astype(np.float64)
        else:
            parts[k] = jnp.zeros(jnp.shape(args[k]), np.float64)
    params = dict(node.params)
    if node.op == "pad":  # the numbers it lays in are exact
        params.pop("constant_values", None)
        params.pop("end_values", None)
    try:
        bound = ops.OPS[node.op].bind(jnp)(*parts, **params)
    except (TypeError, ValueError):  # a form jax.numpy's op does not take: no bound written
        return _unknown(jnp, known, value)
    if isinstance(bound, (tuple, list)):
        return tuple(bound)
    if float_value(value):
        real = np.dtype(dtype_of(value).type(0).real.dtype)
        return jnp.broadcast_to(bound, jnp.shape(value)).astype(real)
    return bound


def float_value(value: Any) -> bool:
    """Whether ``value`` is one float or complex array (not a tuple, an integer, a boolean)."""
    return not isinstance(value, (tuple, list)) and dtype_of(value).kind in "fc"


def _unknown(jnp: Any, known: dict, value: Any) -> Any:
    """The bound of a value computed by an op whose bound is not written from operands off
    by ``known``: 0 where every one is 0 (NumPy's bits in, the op's own result out), else
    infinite (float64; one number for several results)."""
    flag = None
    for b in known.values():
        each = jnp.any(jnp.asarray(b) != 0)  # a NaN bound is not 0
        flag = each if flag is None else flag | each
    bound = jnp.where(flag, np.inf, 0.0)
    if isinstance(value, (tuple, list)):
        return bound
    return jnp.broadcast_to(bound, jnp.shape(value))


def _interval(jnp: Any, node: Node, args: Any, bound: Any, value: Any, real: np.dtype) -> Any:
    """The bound of a function of :data:`MONOTONE` of ``args[0]`` off by ``bound``: its
    images of the interval's ends, apart from ``value`` (each computed in ``real``, with two
    roundings and the function's own approximation added)."""
    fn = ops.OPS[node.op].bind(jnp)
    v = jnp.asarray(args[0])
    e = jnp.broadcast_to(bound, jnp.shape(v)).astype(v.dtype if dtype_of(v).kind == "f"
                                                        else real)
    up = fn(v + e, *args[1:], **node.params)
    down = fn(v - e, *args[1:], **node.params)
    apart = jnp.maximum(jnp.abs(up - value), jnp.abs(down - value)).astype(real)
    ulps = APPROXIMATED.get(node.op, 2)
    size = jnp.maximum(jnp.abs(up), jnp.abs(down)).astype(real)
    moved = apart + 2 * ulps * float(np.finfo(real).eps) * size
    if node.op == "reciprocal":  # across the pole: no bound
        moved = jnp.where(e >= jnp.abs(v), np.inf, moved)
    return jnp.where(jnp.broadcast_to(bound, jnp.shape(moved)) != 0, moved, 0).astype(real)


def _linear(jnp: Any, node: Node, args: Any, known: dict, value: Any, real: np.dtype) -> Any:
    """The bound of a sum (``np.sum``, ``np.mean`` of values off by ``known[0]``: the same
    reduction of the bounds), of an add or subtract on a path (the operands' bounds added), or
    of a product of linear algebra (for each operand off by its bound: the product of that
    bound and the others' magnitudes, in float64), and one rounding of the result."""
    op = node.op
    if op in _LINEAR_ADDS:
        total = None
        for b in known.values():
            total = b if total is None else total + b
        bound = jnp.broadcast_to(total, jnp.shape(value)).astype(real)
    elif op in SUMMED or op == "einsum":  # an einsum of one operand (_rule): a sum
        kept = {k: v for k, v in node.params.items() if k not in ("dtype", "out")}
        wide = jnp.broadcast_to(known[0], jnp.shape(args[0])).astype(np.float64)
        if op.startswith("nan"):  # the terms the nan form leaves out, left out here too
            wide = jnp.where(jnp.isnan(jnp.asarray(args[0])), np.nan, wide)
        summed = ops.OPS[op].bind(jnp)(wide, *args[1:], **kept)
        bound = jnp.broadcast_to(summed, jnp.shape(value)).astype(real)
    else:  # a product of linear algebra: declared where its declaration covers the bounds
        bound = _through_contraction(jnp, node, args, known, value, real)
    moved = jnp.where(bound != 0, bound + _rounding(jnp, real, value), 0)
    return moved.astype(real)


RANK_ONE_TERMS = 2 ** 20
"""From how many products (``M * K * N``) a two-operand ``matmul`` or ``dot`` of 1-d and 2-d
operands carries a bound through its rank-1 form (:func:`_rank_one`) rather than through a
float64 product of the magnitudes (GPT-2 small's heads' projection, 64 x 768 x 768: one more
float64 product per layer at every replay made the JAX replay 1.70x jax.jit against 1.39x
without it, 12 layers)."""


def _through_contraction(jnp: Any, node: Node, args: Any, known: dict, value: Any,
                         real: np.dtype) -> Any:
    """The bound of the contraction ``node``'s ``value`` from operands ``args`` off by the
    bounds ``known`` (by position): for each operand off by its bound, the contraction of that
    bound with the others' magnitudes (widened by their own bounds), in float64; for a large
    ``matmul`` or ``dot`` of 1-d and 2-d operands, the rank-1 bound of that product
    (:func:`_rank_one`), which is never below it."""
    kept = {k: v for k, v in node.params.items() if k not in ("dtype", "casting", "out")}
    fn = ops.OPS[node.op].bind(jnp)
    rank_one = _rank_one_form(node, args)
    # a weight's statistics for the rank-1 form measured on the host, once per trace (the
    # lead's ruling 38 10:50), where no bound widens it: its magnitudes are then not computed
    hosts = tuple(None if j in known else rank_one_statistics(args[j], j)
                  for j in range(2)) if rank_one else (None, None)
    sizes = [(jnp.asarray(a) if j < 2 and hosts[j] is not None else
              jnp.abs(jnp.asarray(a)).astype(np.float64)) if isinstance(n, Node) else a
             for j, (a, n) in enumerate(zip(args, node.args))]
    bound = None
    for k, b in known.items():
        parts = list(sizes)
        parts[k] = jnp.broadcast_to(b, jnp.shape(args[k])).astype(np.float64)
        # the other operands' own bounds: their sizes widened by them
        for j, other in known.items():
            if j != k:
                parts[j] = sizes[j] + jnp.broadcast_to(other, jnp.shape(args[j]))
        each = _rank_one(jnp, *parts, hosts=hosts) if rank_one else fn(*parts, **kept)
        bound = each if bound is None else bound + each
    bound = _grown(jnp, node, args, bound, real)
    bound = _more_terms(jnp, node, args, known, bound, fn, kept, real)
    return jnp.broadcast_to(bound, jnp.shape(value)).astype(real)


def _more_terms(jnp: Any, node: Node, args: Any, known: dict, bound: Any, fn: Any,
                kept: dict, real: np.dtype) -> Any:
    """``bound`` plus NumPy's whole rounding of the product of its own operands, ``2 gamma_k``
    of their widened magnitudes' product, where an operand XLA holds 0 carries a bound (the
    hostile review 12's note, 18:21): NumPy's operand may be no 0 there, so its sum can add
    more products than XLA's operands count
    (:func:`capviz.backends.jax.carried_contractions.declared_bound`'s ``n``, and its
    ``n <= 1`` of one product). A ``lax.cond``: the product only where such a 0 is. In a
    replay's fast program (:func:`capviz.backends.jax.trace.deferred_widening`): ``bound``
    as the cond's other branch gives it, and a merged test that no such 0 is; where one
    is, the precise program (with this cond) runs, and gives the checks and outputs."""
    import jax

    if not known:
        return bound
    if deferred_widening():  # the fast program: a merged test; the precise one has the cond
        for k, b in known.items():
            require_each(~((jnp.asarray(args[k]) == 0)
                           & (jnp.broadcast_to(b, jnp.shape(args[k])) != 0)), WIDENING,
                         WIDENING)
        return jnp.asarray(bound).astype(np.float64) + jnp.zeros(jnp.shape(bound), np.float64)
    flag = None
    for k, b in known.items():
        each = jnp.any((jnp.asarray(args[k]) == 0) & (jnp.broadcast_to(b, jnp.shape(args[k]))
                                                       != 0))
        flag = each if flag is None else flag | each
    shapes = [tuple(np.shape(a)) for a, n in zip(args, node.args) if isinstance(n, Node)]
    count = contraction_bound.terms(node.op, shapes, node.params)
    wide = np.sqrt(2) * contraction_bound.gamma(count + len(shapes) + 2, real)

    def more() -> Any:
        parts = [jnp.abs(jnp.asarray(a)).astype(np.float64)
                 + (jnp.broadcast_to(known[j], jnp.shape(a)).astype(np.float64) if j in known
                    else 0) if isinstance(n, Node) else a
                 for j, (a, n) in enumerate(zip(args, node.args))]
        size = fn(*parts, **kept) / (1 - contraction_bound.gamma(count + 2, np.float64))
        return (bound + 2 * wide * size).astype(np.float64)

    return jax.lax.cond(flag, more, lambda: jnp.asarray(bound).astype(np.float64)
                        + jnp.zeros(jnp.shape(bound), np.float64))


def _grown(jnp: Any, node: Node, args: Any, bound: Any, real: np.dtype) -> Any:
    """``bound``, carried through the contraction ``node`` of ``args``, widened by NumPy's
    rounding of the product of its own operands, whose magnitudes are XLA's widened by the
    operands' bounds: that rounding (the declared one of XLA's operands, added at the node)
    grows by at most ``2 sqrt(2) gamma_(k + m + 2)`` of ``bound``
    (:func:`capviz.backends.jax.carried_contractions.any_order` of ``A + bound``; the declared
    ``2 gamma_k A``, complex ``sqrt(2) gamma_(k + 2)``, of ``m`` operands)."""
    shapes = [tuple(np.shape(a)) for a, n in zip(args, node.args) if isinstance(n, Node)]
    count = contraction_bound.terms(node.op, shapes, node.params)
    grown = 1 + 2 * np.sqrt(2) * contraction_bound.gamma(count + len(shapes) + 2, real)
    return jnp.where(bound > 0, bound * grown, bound)  # (0 where no bound: not 0 * inf)


def _rank_one_form(node: Node, args: Any) -> bool:
    """Whether the contraction ``node`` of ``args`` takes :func:`_rank_one`: a ``matmul`` or
    ``dot`` of two operands, each 1-d or 2-d, of at least :data:`RANK_ONE_TERMS` products."""
    if node.op not in ("matmul", "dot") or len(args) != 2 or node.params:
        return False
    shapes = [np.shape(a) for a in args]
    if not all(len(s) in (1, 2) for s in shapes):
        return False
    a, b = shapes
    m = a[0] if len(a) == 2 else 1
    n = b[1] if len(b) == 2 else 1
    return m * a[-1] * n >= RANK_ONE_TERMS


def _rank_one(jnp: Any, a: Any, b: Any, hosts: tuple = (None, None)) -> Any:
    """An upper bound of ``a @ b`` for nonnegative ``a`` (``M x K`` or ``K``) and ``b`` (``K x
    N`` or ``K``), in ``O(MK + KN)``: each value ``sum_k a_ik b_kj`` is at most ``max_k a_ik *
    sum_k b_kj`` and at most ``sum_k a_ik * max_k b_kj`` (Hoelder), the smaller of the two
    outer products, rounded up for their float64 roundings. ``hosts``: for either operand, its
    statistics measured once on the host where it is a constant's magnitudes
    (:func:`rank_one_statistics`: ``a``'s row maxima and sums, ``b``'s column sums and
    maxima), which the replay's program then does not read (the lead's ruling 38 10:50)."""
    k = a.shape[-1]
    if hosts[0] is None:
        rows = a if a.ndim == 2 else a[None, :]
        largest, total = jnp.max(rows, axis=1), jnp.sum(rows, axis=1)
    else:  # (a is then only its shape)
        largest, total = hosts[0]
    if hosts[1] is None:
        cols = b if b.ndim == 2 else b[:, None]
        summed, most = jnp.sum(cols, axis=0), jnp.max(cols, axis=0)
    else:
        summed, most = hosts[1]
    first = largest[:, None] * summed[None, :]
    second = total[:, None] * most[None, :]
    bound = jnp.minimum(first, second) / (1 - contraction_bound.gamma(k + 2, np.float64))
    if a.ndim == 1:
        bound = bound[0]
    if b.ndim == 1:
        bound = bound[..., 0]
    return bound


def rank_one_statistics(value: Any, position: int) -> tuple | None:
    """The statistics :func:`_rank_one` takes of ``|value|``, operand ``position`` (0: rows'
    maxima and sums; 1: columns' sums and maxima, in float64), measured on the host once per
    trace where ``value`` is a large constant of the program (a weight:
    :func:`capviz.backends.jax.trace.host_measured`); ``None`` for a computed value."""
    def measure(host: np.ndarray) -> np.ndarray:
        size = np.abs(np.asarray(host)).astype(np.float64)
        if position == 0:
            size = size if size.ndim == 2 else size[None, :]
            return np.stack([np.max(size, axis=1), np.sum(size, axis=1)])
        size = size if size.ndim == 2 else size[:, None]
        return np.stack([np.sum(size, axis=0), np.max(size, axis=0)])

    measured = host_measured(value, f"rank_one_{position}", measure)
    return None if measured is None else (measured[0], measured[1])


POWER_EXPONENTS = 64
"""The largest integer exponent whose power a bound passes through (:func:`_powered`)."""


def integer_exponent(node: Node) -> int | None:
    """The exponent of the ``power`` ``node`` where it is a number that is an integer from 1
    to :data:`POWER_EXPONENTS` (``x ** 3`` in GPT-2's gelu), else ``None``: a negative, a
    fractional or a tensor exponent passes no bound (an infinite one: a cancelling consumer
    after it fails)."""
    if node.op != "power" or len(node.args) != 2:
        return None
    exponent = node.args[1]
    if isinstance(exponent, (Node, bool, np.bool_)) \
            or not isinstance(exponent, (int, float, np.integer, np.floating)):
        return None
    if not np.isfinite(exponent) or exponent != int(exponent) \
            or not 1 <= int(exponent) <= POWER_EXPONENTS:
        return None
    return int(exponent)


def _powered(jnp: Any, node: Node, base: Any, bound: Any, value: Any, real: np.dtype) -> Any:
    """The bound of ``base ** n`` (:func:`integer_exponent`) where ``base`` is off NumPy's by
    ``bound``: ``|(m + e) ** n - m ** n| <= (|m| + e) ** n - |m| ** n``, written as ``e *
    sum_k C(n, k) |m| ** (n - k) e ** (k - 1)`` (terms of one sign: no cancellation; ``3 m**2
    e + 3 |m| e**2 + e**3`` for ``x ** 3``), in float64 and rounded up, then XLA's
    approximation of the power (:data:`APPROXIMATED`) and one rounding of each side added. A
    result that is not finite is the same in NumPy where its bound is 0; anything else not
    finite (an overflow of the bound) fails."""
    n = integer_exponent(node)
    size = jnp.abs(jnp.asarray(base)).astype(np.float64)
    e = jnp.broadcast_to(bound, jnp.shape(size)).astype(np.float64)
    total = jnp.zeros(jnp.shape(size), np.float64)
    for k in range(n, 0, -1):  # Horner's form in e: sum_k C(n, k) m**(n-k) e**(k-1)
        total = total * e + comb(n, k) * size ** (n - k)
    moved = e * total * (1 + 4 * n * float(np.finfo(np.float64).eps))
    ulps = APPROXIMATED["power"] + 2
    moved = moved + ulps * float(np.finfo(real).eps) * jnp.abs(value).astype(np.float64)
    info = np.finfo(real)  # rounded up to real, and not to 0 (XLA flushes subnormals)
    moved = jnp.where(e > 0, jnp.maximum(moved * (1 + float(info.eps)),
                                         float(info.tiny)), 0)
    return jnp.broadcast_to(moved, jnp.shape(value)).astype(real)


def _rounding(jnp: Any, real: np.dtype, value: Any) -> Any:
    """What one rounding of each side adds to a bound: ``eps * |value|`` (two where XLA's op
    is not NumPy's own rounding: complex and float16 results)."""
    eps = float(np.finfo(real).eps)
    plain = real != np.float16 and dtype_of(value).kind == "f"
    return (eps if plain else 2 * eps) * jnp.abs(value).astype(real)


def scaled(jnp: Any, op: str, a: Any, b: Any, dtype: np.dtype, checked: bool) -> Any:
    """``a * b`` or ``a / b`` (``op``) rounded once, as NumPy's, in ``dtype``: float32 in
    float64 and rounded (a product or quotient of two float32 values is exact, or correctly
    rounded, in float64, and its rounding to float32 is NumPy's); float64 with the divisor an
    array behind a barrier (XLA divides by a broadcast scalar as a product by its reciprocal)
    and the product behind one (no multiply-add fused with the consumer). Complex and float16:
    jax.numpy's (their bound takes two roundings). ``checked``: a float32 subnormal result
    fails at the node (:func:`capviz.backends.jax.functions.rounding.narrowed`)."""
    # imported here: the functions package imports the sums check, which imports this module
    from capviz.backends.jax.functions.rounding import narrowed, separate

    dtype = np.dtype(dtype)
    a, b = jnp.asarray(a).astype(dtype), jnp.asarray(b).astype(dtype)  # NumPy's operands
    if dtype == np.float32:
        wide = a.astype(np.float64), b.astype(np.float64)
        if op == "divide":
            value = wide[0] / separate(jnp.broadcast_to(wide[1], jnp.broadcast_shapes(
                a.shape, b.shape)))
        else:
            value = wide[0] * wide[1]
        return narrowed(jnp, value, dtype) if checked else value.astype(dtype)
    if dtype == np.float64:
        if op == "divide":
            return a / separate(jnp.broadcast_to(b, jnp.broadcast_shapes(a.shape, b.shape)))
        return separate(a * b)
    return (a * b if op == "multiply" else a / b).astype(dtype)


def passed(jnp: Any, node: Node, args: Any, value: Any, carried: dict) -> tuple:
    """(``value``, its bound) after the path op ``node`` of operands ``args``, the bounds
    of its operands ``carried`` by argument position (``None``: NumPy's bits)."""
    known = {k: b for k, b in carried.items() if b is not None}
    if known and node.op == "unpack":  # one result of several: its own bound
        bound = known[0]
        if isinstance(bound, (tuple, list)):
            return value, bound[node.params["index"]]
        return value, jnp.broadcast_to(bound, jnp.shape(value))
    if known and node.op in MOVED and set(known) <= set(_moved_positions(node)):
        return value, _moved(jnp, node, args, known, value)
    if not float_value(value):  # an integer, a boolean, several results (np.modf)
        return value, (_unknown(jnp, known, value) if known else None)
    real = np.dtype(dtype_of(value).type(0).real.dtype)
    if not known:  # NumPy's bits, and NumPy's rounding of them (scaled), but in float16
        if node.op not in _ROUNDS or dtype_of(value) in _ROUNDED:
            return value, None  # and complex, where XLA's product is its own
        return value, _rounding(jnp, real, value)
    rule = _rule(node, known)
    if rule is None:  # an op whose bound is not written here: infinite, so it fails
        return value, _unknown(jnp, known, value)
    if rule == "consumer":  # a difference, np.ptp, a periodic function the walk went past
        bound = carried_bounds.consumer_bound(jnp, node, args, value, [known[0]])[0]
        bound = jnp.broadcast_to(bound, jnp.shape(value)).astype(real)
        ulps = APPROXIMATED.get(node.op, 1) + 1
        moved = bound + ulps * _rounding(jnp, real, value)
        return value, jnp.where(bound != 0, moved, 0).astype(real)
    if rule == "interval":  # a monotone function of the value: its ends' images
        return value, _interval(jnp, node, args, known[0], value, real)
    if rule == "linear":  # a sum, an add that cannot cancel, a product of linear algebra
        return value, _linear(jnp, node, args, known, value, real)
    if node.op == "power" and not cancelling.squares(node.args[0], node):  # m ** n
        return value, _powered(jnp, node, args[0], known[0], value, real)
    if node.op in ("square", "power"):  # m ** 2, m off by e: e * (2 |m| + e), rounded
        e = jnp.asarray(known[0]).astype(np.float64)  # in float64, rounded up to real
        bound = e * (2 * jnp.abs(jnp.asarray(args[0])).astype(np.float64) + e) \
            * (1 + float(np.finfo(real).eps))
        moved = jnp.where(bound > 0, jnp.maximum(bound + _rounding(jnp, real, value),
                                                 float(np.finfo(real).tiny)), 0)
        return value, moved.astype(real)
    if node.op in cancelling.LIPSCHITZ:  # |v|, re(v): moved by at most v's error
        return value, jnp.broadcast_to(known[0], jnp.shape(value)).astype(real)
    if node.op in cancelling.CLAMPS:  # one operand's value: the largest of their errors
        bound = None
        for k in cancelling.passed_positions(node):
            each = known.get(k)
            if each is not None:
                bound = each if bound is None else jnp.maximum(bound, each)
        return value, jnp.broadcast_to(bound, jnp.shape(value)).astype(real)
    if node.op in cancelling.PICKS:  # values along an axis: the largest error there
        return value, carried_bounds.picked(jnp, node, args[0], known[0], value).astype(real)
    if node.op in cancelling.JOINS or node.op in cancelling.SELECTS:
        # each value of the result is one operand's: the same op of their bounds (0 for
        # an operand that is NumPy's bits), the choosing operands as they are
        parts = list(args)
        for k in cancelling.passed_positions(node):
            parts[k] = known[k] if k in known else jnp.zeros(jnp.shape(args[k]), real)
        mover = ops.OPS[node.op].bind(jnp)
        return value, mover(*parts, **node.params).astype(real)
    if node.op in cancelling.SCALINGS:
        first = known.get(0)
        second = known.get(1)
        a, b = (jnp.abs(args[0]), jnp.abs(args[1]))
        if node.op == "multiply":
            bound = 0
            if first is not None:
                bound = bound + first * (b + (second if second is not None else 0))
            if second is not None:
                bound = bound + second * a
        else:  # the value divided by b; a divisor off by its own bound too
            room = b - (second if second is not None else 0)
            numerator = (first if first is not None else 0) \
                + (jnp.abs(value) * second if second is not None else 0)
            bound = jnp.where(room > 0, numerator / jnp.where(room > 0, room, 1), np.inf)
        moved = jnp.where(bound > 0, bound + _rounding(jnp, real, value), 0)
        return value, moved.astype(real)
    bound = known[0]
    if node.op == "astype":
        wide = jnp.broadcast_to(bound, value.shape).astype(real)
        return value, jnp.where(wide > 0, wide + _rounding(jnp, real, value), 0)
    if node.op in ("negative", "positive", "copy"):
        return value, bound
    mover = ops.OPS[node.op].bind(jnp)
    return value, mover(bound, *args[1:], **node.params)
