"""Sums that cancel, on the JAX backend (issue 25; the hostile review's finding 9).

Where the rule below fails, the sum is computed in NumPy's own order instead
(:mod:`capviz.backends.jax.numpy_order`: its bits, chosen by a ``lax.cond`` on the check's flag,
so a sum that passes runs XLA's reduction alone); only the sums it writes no program for (float16,
the nan forms, ``trace``, an operand NumPy may not hold in C order...) fail at the node. The
skip of never-negative terms holds where NumPy adds pairwise only: its running sums of them are
checked (the hostile review 3, finding 13).

XLA adds the terms of a reduction in another order than NumPy (NumPy: pairwise along a
contiguous axis, one row after another along a strided one; XLA: partial sums in vector lanes
on a CPU, a tree on a GPU), and each order rounds its partial sums otherwise. Where the sum is
of the size of its terms the two agree to a few units of its last place, inside the backend's
tolerance. Where it cancels (4,000 float64 terms of 1e16 adding up to 192), the roundings of
the partial sums are all that is left: NumPy gives 192, XLA -128.

**The rule** (:func:`checked`, for :data:`SUMS`): each output of a float or complex sum or
cumulative sum (each part of a complex one, a sum of floats of its own) fails the replay at
its node, with the user's line, where

    eps * S > atol + rtol * |s|

``s`` the output, ``S`` the same reduction of the terms' magnitudes (``np.sum(|x|)`` for a sum,
``np.mean(|x|)`` for a mean, with the node's axis, ``where=`` and NaNs left out alike), ``eps``
the output type's (float32's for a float16 mean, and a float16 sum along the last axis: NumPy
adds those in float32 and rounds once, as jax.numpy does) and ``(rtol, atol)`` the backend's
tolerance for it (float16's is wider): one rounding of the terms' total magnitude reaches
beyond the tolerance of the result. A float16 sum NumPy adds in float16 one term after another
(along an axis that is not the last, and every cumulative sum, ``np.add.accumulate``
included) rounds each of its ``n`` partial sums to float16, and such a running sum stalls
where the terms fall below half its spacing (5,000 ones: 2048 in NumPy, 5000 in jax.numpy,
which adds in float32): there ``eps`` is ``n`` times float16's (``n`` the length of the
reduced axes), so the sum fails unless it is short, and the message names the fix,
``dtype=np.float64``. Infinite or
NaN terms give the same result in every order (the infinity, or NaN) and pass, unless the
finite terms' magnitudes add up past the type's largest value (a partial sum may overflow to
the other infinity in one order and not in another); an output that is not finite from finite
terms fails, for the same reason.

**Which order, which bound.** NumPy adds the terms of one output pairwise where they lie along
its inner loop: a reduction along the last axis, or over all axes (:func:`_pairwise`). There
its error stays near ``log2(n)`` roundings, and one rounding, ``eps * S``, bounds the
difference from XLA's order: measured (float32 and float64, contiguous sums of 1e4 to 1e6
terms, NumPy's ``np.sum`` against ``jax.jit(jnp.sum)`` on a CPU), ``eps * S`` exceeded the
actual difference by 1.5x (sorted uniform values about 0) to 100x in every case, cancelling
ones (sorted, reversed, repeated 0.1) included. Everywhere else NumPy keeps a running sum,
one term after another: along an axis that is not the last (row after row), and in every
cumulative sum. Each add rounds, and where the terms are small against the running sum the
roundings go one way: 512 then 9,999 terms of 0.75 of its float32 ulp give 512.6103 in NumPy,
512.4578 (exact) in XLA, 2,500 times ``eps * S`` apart; a float32 column mean of 1e6 values
near 1 is 0.4% off (the hostile review 2, finding 10). There the bound is ``n`` roundings,
``n * eps * S`` (``n`` the length of the reduced axes), which covers the ``(n - 1) * eps / 2 *
S`` of the running sum and XLA's own rounding. What it costs: a float32 running sum of more
than about 840 terms of one sign fails (``n * eps`` passes ``rtol``), a float64 one only past
about 4e11 terms or where it cancels; the message names the fix, ``dtype=np.float64``. A
layer norm's mean is along the last axis: GPT-2 keeps one rounding. NumPy's loop follows its
operand's memory layout: an operand it does not hold C-ordered (``x.T``, a ``swapaxes`` or
``moveaxis`` view, an F-ordered input, what is computed from one) is added row by row along
its last axis, so a sum is taken as pairwise only where the layout NumPy gives its operand
(:mod:`capviz.backends.jax.layouts`) is known C-ordered, or strided with its last axis
innermost for a sum along that axis alone; elsewhere it is held to ``n`` roundings, which every
order meets (``x.T.sum(0)``, pairwise in NumPy, is held to them too: a refusal, never a silent
difference).

The float32 sums of unit values of both signs along the last axis fail near 0 (about 4% of
them at 1e4 terms, 36% at 1e5). The fix the message names, ``dtype=np.float64``, passes
those: the check is then float64's.

The contractions that are sums of products (``convolve``, ``correlate``, ``polymul``) take the
worst case of their ``n`` products (:func:`sums_of_products`, which XLA's convolution runs with
fused multiply-adds in its own order), each part of a complex result apart. The contractions of
linear algebra (``matmul``, ``dot``, ``einsum`` of two operands or more, ``tensordot``,
``inner``, ``vecdot``...) are not checked, where the magnitudes would be a second product of
the same size, or a read of a model's weights at every replay: NumPy's own result for them is
its BLAS's order, and they are declared, held to the bound every order meets by ``compare``
and the differential harness (:mod:`capviz.backends.contraction_bound`).

**A sum that reaches an add or subtract** (:mod:`capviz.backends.cancelling`: ``x - x.sum(-1,
keepdims=True) / n``, a difference of two sums; the hostile review 3's finding 8) is within its
own tolerance and may still be far beyond the difference's: such a sum is computed in NumPy's
order where that difference would leave its tolerance, or always, or its bound is carried to
the add or subtract and tested there (:mod:`capviz.backends.jax.carried`, :func:`of`).

A sum of the results of an op that is never negative (:data:`NONNEGATIVE`, ``x ** 2``) is not
checked where it reaches no add or subtract: it cannot cancel, and where it overflows it does
in every order (but within an ulp of the type's largest value). The magnitudes are added in
the type ``eps`` is taken from: a sibling reduction of the same operand, which XLA fuses with
the sum, and a test per output.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends import cancelling, contraction_bound
from capviz.backends.jax import amplified, carried, carried_sources, layouts, numpy_order
from capviz.backends.jax.trace import TRACE, dtype_of, require_each
from capviz.core.ir import Node
from capviz.ops.products import einsum_terms

TOLERANCE = (1e-4, 1e-4)
"""The JAX backend's ``(rtol, atol)`` for float64 (``JaxBackend.tolerance``)."""

FLOAT16_TOLERANCE = (1e-2, 1e-1)
"""The JAX backend's ``(rtol, atol)`` for float16 (``JaxBackend.float16_tolerance``)."""

SUMS = frozenset(("sum", "mean", "nansum", "nanmean", "cumsum", "nancumsum", "cumulative_sum",
                  "trace", "ufunc_reduce", "ufunc_accumulate"))
"""Sums checked by :func:`checked` (their float and complex outputs; ``np.<ufunc>.reduce`` and
``.accumulate`` of ``np.add`` only)."""

SEQUENTIAL = frozenset(("cumsum", "nancumsum", "cumulative_sum", "ufunc_accumulate"))
"""Those of :data:`SUMS` NumPy adds one term after another along any axis (its running sum)."""

CHECKED = SUMS | frozenset(("convolve", "correlate", "polymul"))
"""Ops whose sums are checked (:func:`checked`, :func:`sums_of_products`): each output replays
within the tolerance or fails at its node (the JAX column of docs/numpy-coverage.md). An
``einsum`` of one operand is checked too (:func:`_einsum_checked`)."""

UNCHECKED = frozenset(("linalg.trace",))
"""Ops that add in XLA's order with no check of their sums (open): where a sum cancels or runs
row by row in NumPy, an output can differ beyond the tolerance, silently (the hostile review 2,
finding 11). The contractions of linear algebra are declared instead
(:mod:`capviz.backends.contraction_bound`); the variances are checked
(:mod:`capviz.backends.jax.variances`)."""

MEANS = frozenset(("mean", "nanmean"))
"""Those of :data:`SUMS` dividing the sum by the count of its terms."""

_PAIRWISE = frozenset(("sum", "nansum", "trace", "ufunc_reduce"))
"""Those of :data:`SUMS` NumPy adds pairwise in float32 for float16 terms when they run along
the last axis (its inner loop), rounding once; along another axis it adds one row after
another, rounding each partial sum to float16 (as it does for a cumulative sum)."""

_SUM = ("np.{op}: an output of the sum cancels (its terms' magnitudes add up to far more than "
        "it: one rounding of them, {eps:.3g} of their total, is beyond the tolerance of the "
        "result) or overflows, so NumPy's order of summation and XLA's give other values "
        "there; replay with backend='numpy', or sum in float64 (dtype=np.float64)")
_ROWS = ("np.{op}: NumPy adds the terms of this sum one after another ({why}), rounding each "
         "of its {n} partial sums to {dtype}, and XLA in another order: {n} roundings of the "
         "terms' total magnitude ({eps:.3g} of it) reach beyond the tolerance of the result, so "
         "NumPy's value and XLA's may differ there (a {dtype} running sum stalls where its "
         "terms fall below half its spacing); replay with backend='numpy'{fix}")
_PRODUCTS = ("a {what} whose sums of products overflow or cancel: NumPy's order of summation "
             "and XLA's fused multiply-adds give other values there beyond the tolerance; "
             "replay with backend='numpy'")


def tolerance(dtype: np.dtype) -> tuple[float, float]:
    """The backend's ``(rtol, atol)`` for floats of ``dtype`` (a real type)."""
    return FLOAT16_TOLERANCE if dtype == np.float16 else TOLERANCE


def checked(name: str, jnp: Any, fn: Callable) -> Callable:
    """``fn`` (the op ``name`` on jax.numpy), its outputs checked by the rule of this module
    when ``name`` is one of :data:`SUMS`; else ``fn``."""
    if name == "einsum":
        return _einsum_checked(jnp, fn)
    if name not in SUMS:
        return fn

    label = {"ufunc_reduce": "add.reduce", "ufunc_accumulate": "add.accumulate"}.get(name, name)

    def run(*args: Any, **params: Any) -> Any:
        result = fn(*args, **params)
        adds = params.get("ufunc", "add") == "add"
        if adds and args and dtype_of(result).kind in "fc" \
                and dtype_of(args[0]).kind in "biufc" and (_reached() or not (
                    _nonnegative_terms() and _pairwise(name, params, jnp.asarray(args[0])))):
            result = _sum_cancels(jnp, name, label, fn, args, params, result)
        return result

    run.__name__ = getattr(fn, "__name__", name)
    return run


NONNEGATIVE = frozenset(("exp", "exp2", "square", "absolute", "fabs", "sqrt", "cosh"))
"""Ops whose real results are never negative (or NaN): a sum of them does not cancel (``S`` is
``|s|``, and ``eps <= rtol``), so its check is left out (softmax's ``np.sum(np.exp(...))``)."""


def _nonnegative_terms() -> bool:
    """Whether the sum being traced adds the real results of an op of :data:`NONNEGATIVE`, or
    of an even integer power (``x ** 2``): read from its node's first operand."""
    trace = TRACE.get()
    node = None if trace is None else trace.node
    if node is None or not node.args or not isinstance(node.args[0], Node):
        return False
    made = node.args[0]
    if made.dtype is None or np.dtype(made.dtype).kind != "f":
        return False
    if made.op in NONNEGATIVE:
        return True
    exponent = made.args[1] if made.op == "power" and len(made.args) == 2 else None
    return type(exponent) is int and exponent % 2 == 0


def _reached() -> bool:
    """Whether the sum being traced reaches an add or subtract (:mod:`.carried`): its check is
    made, and its bound carried, even where its terms cannot cancel among themselves."""
    trace = TRACE.get()
    node = None if trace is None else trace.node
    return node is not None and trace.carried is not None and node.index in trace.carried.found


REACHING = SUMS | frozenset(("einsum", "sum_where", "mean_where", "average")) \
    | frozenset(carried_sources.APPROXIMATED)
"""The sums :func:`of` follows to an add or subtract: :data:`SUMS`, an ``einsum`` of one
operand, the ``where=``/``initial=`` forms of ``sum`` and ``mean`` (checked as they are), and
``np.average`` without weights (NumPy's ``a.mean(axis)``, checked as ``mean``,
:mod:`capviz.backends.jax.functions.averages`); and the functions XLA approximates
(:data:`capviz.backends.jax.carried_sources.APPROXIMATED`)."""

_ONE_OPERAND = frozenset(("einsum", "average"))
"""Those of :data:`REACHING` followed with one tensor operand only (with two: a contraction,
a weighted average)."""


def _carry(bound: Any, nonfinite: Any) -> None:
    """The bound of the sum being traced (no program in NumPy's order for it), carried to the
    add or subtract it reaches (:mod:`.carried`), 0 where its result is not finite."""
    trace = TRACE.get()
    node = None if trace is None else trace.node
    if node is not None and trace.carried is not None and node.index in trace.carried.found:
        jnp = trace.carried.jnp
        trace.carried.start(node, jnp.where(jnp.isfinite(bound) & ~nonfinite, bound, 0))


def _norm_kept_apart(reach: Any) -> bool:
    """Whether a norm's ``reach`` cannot cancel: the norm itself (never negative) plus a
    number that is not negative, or minus one that is not positive (gradient clipping's
    ``norm + 1e-6``). Its value stays declared there, as a contraction's does."""
    other = reach.other
    if reach.path or isinstance(other, Node) or not isinstance(other, (int, float, np.number)):
        return False
    if reach.consumer.op == "add":
        return float(other) >= 0
    return reach.consumer.op == "subtract" and reach.position == 0 and float(other) <= 0


SPREAD_CONSUMERS = cancelling.DIFFERENCES | cancelling.SPREADS | cancelling.REMAINDERS \
    | frozenset(("ufunc_outer",))
"""The consumers other than an add or subtract that a contraction of linear algebra is
followed to (:func:`_spread`), besides the periodic functions
(:func:`capviz.backends.cancelling.periodic`: ``np.sin(x @ ones)``, the hostile review 9,
finding 26), and ``np.modf``'s fraction and ``np.divmod``'s remainder
(:func:`capviz.backends.cancelling.tuple_consumer`). ``np.subtract.outer``/``np.add.outer``
and those two (W=25w, stop 41; R12 #11, #12): a contraction's reach to them was dropped
here, so ``np.subtract.outer(p[0], p[1])`` of float32 product rows near each other replayed
55x the tolerance off NumPy's, and ``np.modf(p * 7)[0]`` 374x, silently."""


def _spread(reach: cancelling.Reach) -> bool:
    """Whether ``reach`` of a contraction of linear algebra ends at a difference or a spread
    (:data:`SPREAD_CONSUMERS`: ``np.diff(x @ ones)``, ``np.ptp(x @ w)``, ``np.cov`` of products)
    through a path with no other contraction on it, or with others where the product has a weight
    (:func:`capviz.backends.cancelling.through_contractions`: ``np.diff((x @ ones) @ w)``). Such a
    consumer cancels the product's error as a subtract does (``np.diff(x @ ones)`` of float32 rows
    near 1e3 was -16.8125 against NumPy's -16.75, silently: W=25d's /tmp/25d36/mm2.py), and no cheap
    bound is written for it (:meth:`capviz.backends.jax.carried.Carried._declared` tests an add or
    subtract): the product's declared bound is computed in the trace (the magnitudes' product,
    as for a centring) and tested at the consumer
    (:func:`capviz.backends.jax.carried_bounds.consumer_bound`; ``np.cov``, ``np.gradient``: no
    bound written, the replay fails there) where it cancels the values it subtracts
    (:func:`capviz.backends.jax.carried_bounds.not_cancelled`, the lead's ruling 36 05:17)."""
    return (reach.consumer.op in SPREAD_CONSUMERS or cancelling.periodic(reach.consumer)
            or cancelling.tuple_consumer(reach.consumer)) \
        and cancelling.through_contractions(reach)


def _shifted(reach: cancelling.Reach) -> bool:
    """Whether ``reach`` of a contraction ends at softmax's exponential past a kept add
    (:func:`capviz.backends.cancelling.softmax_shift`: ``np.exp(a - a.max(-1, keepdims=True))``
    of ``a = q @ k.T / s + mask``): the bound carried there is tested by exp's absolute rule
    (:func:`capviz.backends.jax.carried_bounds.consumer_bound`), cheaply first as at an add."""
    return reach.consumer.op in cancelling.EXPONENTIALS


def of(nodes: list[Node], jnp: Any, contractions: bool = True) -> carried.Carried | None:
    """The sums of :data:`REACHING` among ``nodes`` (a program's op steps) that reach an add
    or subtract, for one trace (:mod:`capviz.backends.jax.carried`), and the contractions of
    linear algebra whose every reach is a centring (``x - (x @ ones / n)[:, None]``: the
    consumer subtracts the product from its own operand, so the declared bound of the product,
    within the tolerance of no result of a cancelling consumer, is carried there and tested);
    ``None`` where none does. ``contractions`` false (the replay's ``arithmetic="xla"``): the
    contractions of linear algebra are not followed, their values and what is computed from
    them XLA's order of summation, untested (the lead's ruling 37 07:30 (c); ``graph.compare``
    holds each to its declared bound)."""
    found = {}
    declared = set()
    names = REACHING | contraction_bound.CONTRACTIONS | {contraction_bound.NORM} \
        | carried_sources.UNBOUNDED
    for k, each in cancelling.reaches(nodes, names, periodic=True, past_adds=True).items():
        node = each[0].sum
        if node.op == contraction_bound.NORM:  # a sum of squares: one sign, its bound tight
            each = tuple(r for r in each if not _norm_kept_apart(r))
            if each:  # NumPy's BLAS dot (declared), or a norm along an axis (unbounded)
                found[k] = each
        elif node.op in carried_sources.UNBOUNDED:
            found[k] = each
        elif contraction_bound.is_contraction_node(node):
            if not contractions and node.op in contraction_bound.CONTRACTIONS:
                continue
            if all(r.centring for r in each):
                found[k] = each
            elif any(_spread(r) for r in each):  # its exact bound, tested at each consumer
                found[k] = tuple(r for r in each if _spread(r) or cancelling.declared(r)
                                 or _shifted(r))
            else:  # to an add or subtract by moves and numbers: followed, cheaply first
                kept = tuple(r for r in each if cancelling.declared(r) or _shifted(r))
                if kept:
                    found[k] = kept
                    declared.add(k)
        elif node.op not in _ONE_OPERAND or len(node.operands) == 1 or node.op == "average":
            found[k] = each  # a weighted average: unbounded (carried_sources.unbounded)
    return carried.Carried(found, jnp, tolerance, frozenset(declared)) if found else None


def _sum_cancels(jnp: Any, name: str, label: str, fn: Callable, args: tuple, params: dict,
                 result: Any) -> Any:
    """The rule of this module for ``result = fn(*args, **params)`` (the op ``name``, called
    ``np.<label>`` in the message), each part of a complex one apart. One more reduction per
    part, of the finite terms' magnitudes: where they add up below the type's largest value no
    order overflows, so a result that is not finite comes from an infinite or NaN term and is
    the same in every order. Returns the result: ``result``, or where the rule fails NumPy's
    (:func:`capviz.backends.jax.numpy_order.instead`)."""
    a = jnp.asarray(args[0])
    out = dtype_of(result)
    real = np.dtype(out.type(0).real.dtype)
    wide = np.dtype(np.float32) if real == np.float16 and _in_float32(name, params, a) \
        else real
    dropped = jnp.isnan(a) if name.startswith("nan") and dtype_of(a).kind in "fc" else None
    options = {**params, "dtype": wide}
    if params.get("initial") is not None:
        options["initial"] = abs(complex(params["initial"]))  # a term: its magnitude
    count = max(int(np.prod(a.shape)) // max(int(np.prod(np.shape(result))), 1), 1)
    largest = float(np.finfo(wide).max) / (count if name in MEANS else 1)
    # atol over what the readers scale the sum's error by (x.sum(1) * 1e12: stop 41)
    rtol, atol = amplified.tolerance(*tolerance(real), amplified.of_current())
    eps = float(np.finfo(wide).eps)
    message = _SUM.format(op=label, eps=eps)
    if not _pairwise(name, params, a):  # NumPy rounds each of the n partial sums (row by row)
        n = _terms(name, params, a)
        eps *= n
        wider = _WIDER.get(np.dtype(out.type(0).astype(wide).dtype) if out.kind != "c"
                           else out)
        fix = "" if wider is None else f", or sum in {wider} (dtype=np.{wider})"
        message = _ROWS.format(op=label, why=_why(name, params), n=n, dtype=wide, eps=eps, fix=fix)
    fits = nonfinite = kept = bound = None
    for part in ((jnp.real, jnp.imag) if out.kind == "c" else (None,)):
        terms = (a if part is None else part(a)).astype(wide)
        got = (result if part is None else part(result)).astype(wide)
        finite = jnp.where(jnp.isfinite(terms), jnp.abs(terms), 0)
        if dropped is not None:  # the nan forms leave a NaN element out (its count too)
            finite = jnp.where(dropped, np.nan, finite)
        size = fn(finite, *args[1:], **options)  # NaN for a nanmean of NaNs only
        each = (~(size >= largest), ~jnp.isfinite(got),
                eps * size <= atol + rtol * jnp.abs(got))
        if _running_float16(name, params, a, wide):
            each = each[:2] + (_float16_running_kept(jnp, name, params, terms, got),)
        bound = eps * size if bound is None else bound + eps * size
        if fits is None:
            fits, nonfinite, kept = each
        else:
            fits, nonfinite, kept = fits & each[0], nonfinite | each[1], kept & each[2]
    # a part not finite (complex arithmetic spreads a NaN to both) is the same in every order
    # where the check fails, the sum in NumPy's order (or the failure, where none is written)
    # the bound goes on to an add or subtract the sum reaches (carried.py); a sum not finite
    # is the same in every order: nothing carried from it
    bound = jnp.where(jnp.isfinite(bound) & ~nonfinite, bound, 0)
    return numpy_order.instead(jnp, name, args, params, result, fits & (nonfinite | kept),
                               message, bound)


def _einsum_checked(jnp: Any, fn: Callable) -> Callable:
    """``np.einsum`` on jax.numpy, an einsum of one operand that sums (``"ij->j"``,
    ``"i->"``, ``"ii->"``) checked as a sum NumPy adds one term after another (its einsum
    loops keep a running sum): ``n * eps * S`` (``n`` the terms of an output, ``S`` the same
    einsum of the magnitudes), each part of a complex one apart. An einsum of two operands or
    more is a contraction, declared (:mod:`capviz.backends.contraction_bound`)."""

    def run(*args: Any, **params: Any) -> Any:
        result = fn(*args, **params)
        out = dtype_of(result)
        if len(args) != 1 or out.kind not in "fc":
            return result
        a = jnp.asarray(args[0])
        labels, kept, sizes = einsum_terms(params["subscripts"], [tuple(a.shape)])
        n = math.prod(int(sizes[k]) for k in set(labels[0]) - set(kept))
        if n <= 1:  # a transpose, a diagonal: no sum
            return result
        real = np.dtype(out.type(0).real.dtype)
        rtol, atol = amplified.tolerance(*tolerance(real), amplified.of_current())
        eps = n * float(np.finfo(real).eps)
        kept_each = bound = None
        for part in ((jnp.real, jnp.imag) if out.kind == "c" else (None,)):
            terms = (a if part is None else part(a)).astype(real)
            got = (result if part is None else part(result)).astype(real)
            finite = jnp.where(jnp.isfinite(terms), jnp.abs(terms), 0)
            size = fn(finite, **params)
            each = ~(size >= np.finfo(real).max) & (
                ~jnp.isfinite(got) | (eps * size <= atol + rtol * jnp.abs(got)))
            kept_each = each if kept_each is None else kept_each & each
            bound = eps * size if bound is None else bound + eps * size
        _carry(bound, ~jnp.isfinite(result if out.kind != "c" else jnp.abs(result)))
        wider = _WIDER.get(out)
        fix = "" if wider is None else f", or sum in {wider} (dtype=np.{wider})"
        require_each(kept_each, _ROWS.format(
            op="einsum", why="an einsum of one operand, in its own loop", n=n, dtype=real,
            eps=eps, fix=fix))
        return result

    run.__name__ = getattr(fn, "__name__", "einsum")
    return run


def _running_float16(name: str, params: dict, a: Any, wide: np.dtype) -> bool:
    """Whether the float16 running sum ``name`` is held to :func:`_float16_running_kept`: a plain
    sum or cumulative sum along one axis (no ``where=``, ``initial=``, nan form), short enough
    that ``n`` float16 roundings stay below half (``n * u < 1/2``)."""
    if wide != np.float16 or name not in _RUNNING or _pairwise(name, params, a):
        return False
    if params.get("where") is not None or params.get("initial") is not None:
        return False
    axis = params.get("axis", 0 if name.startswith("ufunc_") or len(a.shape) == 1 else None)
    if not isinstance(axis, (int, np.integer)) or not a.shape:
        return False
    return a.shape[int(axis)] * _U16 < 0.5


_RUNNING = frozenset(("sum", "ufunc_reduce", "cumsum", "cumulative_sum", "ufunc_accumulate"))
_U16 = float(np.finfo(np.float16).eps) / 2
"""float16's unit roundoff: one rounding of a partial sum moves it by at most ``_U16`` of it."""


def _float16_running_kept(jnp: Any, name: str, params: dict, terms: Any, got: Any) -> Any:
    """Where a float16 running sum replays within the tolerance: NumPy rounds each partial sum
    ``p_k`` to float16, so its result is off the exact sum by at most ``u * sum_k |p_k|``
    (first order; the factor ``1 / (1 - n * u)`` covers the rest), and XLA's, added in float32
    and rounded once, by about ``u * |s|``. The partial sums are computed in float32 along the
    node's axis (for a cumulative sum, the bound of each prefix). Far tighter than ``n`` roundings
    of the terms' magnitudes: a float16 column sum of 30 unit normal values passes, and j16's
    5,000 ones (NumPy stalls at 2048) still fail."""
    axis = int(params.get("axis", 0) if params.get("axis") is not None else 0)
    partial = jnp.abs(jnp.cumsum(terms.astype(np.float32), axis=axis))
    n = terms.shape[axis]
    if name in SEQUENTIAL:
        moved = jnp.cumsum(partial, axis=axis)
        if params.get("include_initial"):  # the result starts with the sum of no terms, 0
            pad = [(0, 0)] * moved.ndim
            pad[axis] = (1, 0)
            moved = jnp.pad(moved, pad)
    else:
        moved = jnp.sum(partial, axis=axis, keepdims=bool(params.get("keepdims", False)))
    size = jnp.abs(got.astype(np.float32))
    rtol, atol = tolerance(np.dtype(np.float16))
    return _U16 * (moved / (1 - n * _U16) + size) <= atol + rtol * size


_WIDER = {np.dtype(np.float16): "float64", np.dtype(np.float32): "float64",
          np.dtype(np.complex64): "complex128"}
"""The type whose ``dtype=`` the message of a sum added one row after another names (none for
float64 and complex128)."""


def _masked(params: dict) -> bool:
    """Whether the sum's ``where=`` mask leaves terms out (anything but ``True``)."""
    where = params.get("where")
    return where is not None and where is not True


def _why(name: str, params: dict) -> str:
    """Why NumPy adds the terms of the sum ``name`` one after another."""
    if name in SEQUENTIAL:
        return "a cumulative sum"
    if _masked(params):
        return "with where=, each run of unmasked terms into a running total"
    return "along an axis that is not the last one, one row after another"


def _terms(name: str, params: dict, a: Any) -> int:
    """The number of terms ``n`` an output of this sum (or cumulative sum) adds at most: the
    length of its axes (all of them for ``axis=None``)."""
    if name == "trace":  # the diagonal of axes axis1 and axis2
        shape = a.shape
        sides = [shape[params.get(k, d)] for k, d in (("axis1", 0), ("axis2", 1))]
        return max(min(sides), 1) if len(shape) >= 2 else 1
    axis = params.get("axis", 0 if name.startswith("ufunc_") else None)
    if axis is None:
        return max(int(np.prod(a.shape)), 1)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    return max(int(np.prod([a.shape[int(k)] for k in axes])), 1) if a.shape else 1


def _in_float32(name: str, params: dict, a: Any) -> bool:
    """Whether NumPy adds float16 terms of this sum in float32: a mean (NumPy's ``_mean`` sums
    in float32, in the order of :func:`_pairwise`), or a sum it adds pairwise (rounding once)."""
    if name in MEANS:
        return True
    return name in _PAIRWISE and _pairwise(name, params, a)


def _pairwise(name: str, params: dict, a: Any) -> bool:
    """Whether NumPy adds the terms of each output of this sum pairwise (its inner loop, along
    the last axis of a C-ordered operand, or over all of them): else one after another, a
    running sum (a cumulative sum; a reduction along other axes, row after row). A sum with a
    ``where=`` mask is not: NumPy's masked loop adds each run of unmasked terms pairwise into a
    running total (up to ``n`` roundings, ``tests/test_reductions_where.py``)."""
    if name in SEQUENTIAL or _masked(params):
        return False
    axis = params.get("axis", 0 if name == "ufunc_reduce" else None)
    ndim = len(a.shape)
    if name == "trace" or ndim < 2:  # a trace adds its diagonal, a 1-d view
        return True
    layout = _operand_layout()
    if layout not in (layouts.C, layouts.STRIDED):  # x.T, an F-ordered input (F), or not known:
        return False  # it may be row by row
    if axis is None:
        return layout == layouts.C
    axes = {int(k) % ndim for k in (tuple(axis) if isinstance(axis, (tuple, list)) else (axis,))}
    if axes == {ndim - 1}:  # the innermost axis, a C-ordered or strided operand's
        return True
    return axes == set(range(ndim)) and layout == layouts.C


def _operand_layout() -> str | None:
    """The layout NumPy gives the traced node's first operand (:mod:`.layouts`): C where the
    trace follows none."""
    trace = TRACE.get()
    node = None if trace is None else trace.node
    if trace is None or trace.layouts is None or node is None or not node.args \
            or not isinstance(node.args[0], Node):
        return layouts.C
    return trace.layouts.of(node.args[0])


def sums_of_products(jnp: Any, got: Any, a: Any, v: Any, combine: Callable, n: int,
                     what: str = "convolution (np.convolve, np.polymul)") -> None:
    """Each output of a convolution ``got = combine(a, v)`` (``n`` products at most) checked
    to be the same in NumPy's order of summation and XLA's, within the tolerance: a product or
    partial sum that overflows, or a sum cancelling below ``n * eps`` times its products'
    total magnitude, differs by the order and by XLA's fused multiply-adds (a float64
    ``polymul`` of extremes gave other values). A complex result is checked part by part, each
    against the magnitudes of the products that make it up (``re(a) re(v)`` and ``im(a)
    im(v)`` for the real part). float16 results are left to the float16 overflow check
    (:data:`capviz.backends.jax.checks.FLOAT16_OVERFLOW`)."""
    dtype = dtype_of(got)
    real = np.dtype(dtype.type(0).real.dtype)
    if real == np.float16 or dtype.kind not in "fc":
        return
    rtol, atol = tolerance(real)
    eps = float(np.finfo(real).eps)
    if dtype.kind == "c":
        ar, ai, vr, vi = (jnp.abs(part(x)) for x in (a, v) for part in (jnp.real, jnp.imag))
        parts = ((jnp.real(got), combine(ar, vr) + combine(ai, vi)),
                 (jnp.imag(got), combine(ar, vi) + combine(ai, vr)))
    else:
        parts = ((got, combine(jnp.abs(a), jnp.abs(v))),)
    ok = None
    for value, size in parts:
        slack = size * (n * eps)
        each = (jnp.isfinite(size) & (slack <= atol + rtol * jnp.abs(value))) | jnp.isnan(size)
        ok = each if ok is None else ok & each
    require_each(ok, _PRODUCTS.format(what=what))
