"""Reductions and remainders: sums (:data:`SUMS`), remainders (:data:`REMAINDERS`), products
along an axis (:data:`PRODS`) and variances (:data:`SPREADS`), and the parameters their checks
account for (:data:`CHECKED_PARAMS`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from capviz.backends.jax.subnormals.operands import FLUSHED, rerun
from capviz.backends.jax.trace import TRACE, dtype_of, poisoned, require_each
from capviz.core.ir import Node

SUMS = frozenset(("sum", "nansum", "cumsum", "nancumsum", "cumulative_sum", "mean",
                  "nanmean", "diff", "ediff1d", "trace", "linalg.trace"))
"""Ops adding or subtracting their operand's elements (a mean dividing by their count): a
partial sum or a difference is subnormal only when terms cancel near ``finfo.tiny``."""

REMAINDERS = frozenset(("fmod", "remainder", "mod", "divmod", "floor_divide"))
"""Remainders (and the floor divisions computed from them): ``fmod(a, b)`` is ``a - n * b``
exactly, a multiple of the smaller spacing of ``a`` and ``b``, so it is subnormal only when an
operand is below ``tiny * 2**(nmant + 1)``; ``floor_divide(-a, b)`` is ``-1`` in NumPy where the
flushed remainder makes it ``-0`` in XLA."""

PRODS = frozenset(("prod", "nanprod", "cumprod", "nancumprod"))
"""Reductions multiplying their operand's elements: once a partial product is flushed to 0,
every later one is 0 (or NaN times an infinity)."""

SPREADS = frozenset(("var", "std", "nanvar", "nanstd"))
"""Reductions of squared deviations: XLA's is 0 when every square was flushed, where NumPy's
is a small nonzero value (and ``x / std`` differs by more than any tolerance)."""

_PRODS = ("a partial product of {op} fell below the float's smallest normal: XLA flushes it to "
          "zero (the product is 0, or NaN times an infinity) where NumPy keeps a subnormal "
          "and goes on; replay with backend='numpy', or multiply logarithms (np.log(x).sum())")
_SPREAD = ("{op} gave 0 for values that are not all equal: their squared deviations fell "
           "below the float's smallest normal, which XLA flushes to zero where NumPy keeps "
           "them (x / std would differ); replay with backend='numpy', or scale the values up")
_SUM = ("an operand of {op} holds values of magnitude below {bound:.3g}, whose sums may be "
        "subnormal, which XLA flushes to zero where NumPy keeps them; replay with "
        "backend='numpy', or scale the operand up")

CHECKED_PARAMS = {
    **{name: frozenset(("axis", "keepdims", "dtype", "where", "initial")) for name in SUMS},
    **{name: frozenset(("axis", "keepdims", "dtype", "where", "initial")) for name in PRODS},
    **{name: frozenset(("axis", "keepdims", "dtype", "ddof", "correction", "where"))
       for name in SPREADS},
    "diff": frozenset(("n", "axis")),
    "ediff1d": frozenset(),
    "trace": frozenset(("offset", "axis1", "axis2", "dtype")),
    "linalg.trace": frozenset(("offset", "dtype")),
}
"""The parameters the checks of sums, products along an axis and variances account for: the
same ops with another one (``prepend=``...) are unchecked, and so is a sum whose ``initial=``
is a nonzero magnitude below ``tiny * 2**(nmant + 1)``."""


NONNEGATIVE_TERMS = frozenset(("exp", "exp2", "square"))
"""Ops whose float results XLA computes, never negative, and so never subnormal (XLA flushes
what it computes): a sum (:data:`_SUMS_OF_TERMS`) of one of their results, each term 0 or at
least ``tiny``, has partial sums each 0 or at least its largest term so far, all normal, in any
order; :func:`sums` does not test it (softmax's ``np.sum(np.exp(...))``: the stop-40 speed
ruling). A term NumPy has subnormal where XLA's is 0 is the op's own check's
(:mod:`.elementwise`)."""

_SUMS_OF_TERMS = frozenset(("sum", "cumsum", "cumulative_sum"))
"""The sums whose results are partial sums of the terms (a mean divides: a normal sum over
``n`` may be subnormal; ``diff`` subtracts; the ``nan`` forms drop terms)."""


def _normal_nonnegative_terms(name: str, params: dict) -> bool:
    """Whether the sum ``name`` being traced adds the results of an op of
    :data:`NONNEGATIVE_TERMS` (its node's first operand), with no ``initial=`` term."""
    trace = TRACE.get()
    node = None if trace is None else trace.node
    if name not in _SUMS_OF_TERMS or params.get("initial") is not None or node is None \
            or not node.args or not isinstance(node.args[0], Node):
        return False
    made = node.args[0]
    return made.kind == "op" and made.op in NONNEGATIVE_TERMS and made.dtype is not None \
        and np.dtype(made.dtype).kind == "f"


def sums(jnp: Any, name: str, fn: Any, args: tuple, x: Any, r: Any, params: dict) -> Any:
    """Every nonzero term at least ``tiny * 2**(nmant + 1)`` (times the count for a mean):
    then every partial sum, a multiple of the smallest term's spacing, is 0 or normal, and so
    is the mean. An elementwise mask of the operand: in the fast trace, the operand poisoned
    where it fails, which XLA fuses into the sum (a ``nan`` sum, which would drop the poison,
    merges the mask into a flag, :func:`capviz.backends.jax.trace.require_each`). A sum of
    terms XLA computed that are never negative needs no test
    (:data:`NONNEGATIVE_TERMS`)."""
    if dtype_of(x) != dtype_of(r):
        return r  # an integer or narrower operand: its terms are exact in the result's type
    if _normal_nonnegative_terms(name, params):
        return r
    info = np.finfo(dtype_of(r))
    bound = float(info.tiny) * 2.0 ** (info.nmant + 1)
    if name in ("mean", "nanmean"):
        bound *= max(1, math.prod(x.shape) // max(1, math.prod(r.shape)))
    ok = ~(jnp.abs(x) < bound) | (x == 0)
    if name.startswith("nan"):  # it would drop a poisoned term: a merged flag
        require_each(ok, _SUM.format(op=name, bound=bound))
        return r
    checked = poisoned(x, ok, _SUM.format(op=name, bound=bound), operand=True)
    return rerun(fn, args, params, r, {id(x): checked})


def remainders(jnp: Any, name: str, fn: Any, args: tuple, operands: list, r: Any,
                params: dict) -> Any:
    """Every nonzero operand at least ``tiny * 2**(nmant + 1)``: then ``a - n * b`` is 0 or
    normal (see :data:`REMAINDERS`). An elementwise mask per operand (poisoned in the fast
    trace)."""
    replaced = {}
    for x in operands:
        dtype = dtype_of(x)
        if dtype not in FLUSHED:
            continue
        info = np.finfo(dtype)
        bound = float(info.tiny) * 2.0 ** (info.nmant + 1)
        replaced[id(x)] = poisoned(x, ~(jnp.abs(x) < bound) | (x == 0),
                                   _SUM.format(op=name, bound=bound), operand=True)
    return rerun(fn, args, params, r, replaced)


def prods(jnp: Any, name: str, x: Any, r: Any, params: dict) -> Any:
    """A product that is 0 (or NaN) only where a factor is 0 (or NaN): XLA's is 0 after a
    flushed partial product, where NumPy's keeps the subnormal and goes on (a product NumPy
    rounds to 0 too is refused as well). ``where=`` leaves factors out (as 1), ``initial=`` is
    one more factor."""
    if dtype_of(x) != dtype_of(r) or set(params) - CHECKED_PARAMS[name]:
        return r  # refused unless arithmetic="xla" (unchecked)
    axis = params.get("axis")
    cumulative = name in ("cumprod", "nancumprod")
    if cumulative and axis is None:
        x, axis = x.reshape(-1), 0
    where = params.get("where")
    if where is not None and where is not True:
        x = jnp.where(jnp.asarray(where), x, jnp.ones((), x.dtype))

    def seen(mask: Any) -> Any:
        if cumulative:
            return jnp.cumsum(mask, axis=axis) > 0
        return jnp.any(mask, axis=axis, keepdims=bool(params.get("keepdims", False)))

    nan_factor = seen(jnp.isnan(x)) if name in ("prod", "cumprod") else False
    zero = seen(x == 0)
    initial = params.get("initial")
    if initial is not None and (initial == 0 or initial != initial):  # a 0 or NaN factor
        zero = zero | True
    ok = zero | ((r != 0) & (~jnp.isnan(r) | nan_factor))
    return poisoned(r, ok, _PRODS.format(op=name))


def spreads(jnp: Any, name: str, x: Any, r: Any, params: dict) -> Any:
    """A variance of 0 only where the values along the axis (those ``where=`` selects) are all
    equal (their range is 0); one NumPy rounds to 0 too (deviations below
    ``sqrt(smallest_subnormal)``) is refused as well."""
    if dtype_of(x) != dtype_of(r) or set(params) - CHECKED_PARAMS[name]:
        return r  # complex values: refused unless arithmetic="xla" (unchecked)
    axis, keepdims = params.get("axis"), bool(params.get("keepdims", False))
    high, low = (jnp.nanmax, jnp.nanmin) if name.startswith("nan") else (jnp.max, jnp.min)
    if not math.prod(x.shape):
        return r  # NumPy's NaN of an empty axis
    where = params.get("where")
    chosen = {} if where is None or where is True else {"where": jnp.asarray(where)}
    top = high(x, axis=axis, keepdims=keepdims, initial=-np.inf, **chosen)
    flat = top == low(x, axis=axis, keepdims=keepdims, initial=np.inf, **chosen)
    return poisoned(r, (r != 0) | flat, _SPREAD.format(op=name))

