"""Subnormal floats made inside a JAX replay: where XLA's flush to zero changes a result.

XLA on the CPU flushes float32 and float64 subnormal results to zero (and reads subnormal
operands as zero), where NumPy keeps them (float16 is computed in float32 and keeps them). No
setting turns that off: the CPU client sets the processor's flush-to-zero and
denormals-are-zero modes around every run (``ScopedFlushDenormal`` in XLA's
``cpu_client.cc``), and ``xla_cpu_ftz=False`` leaves ``1e-20 * 1e-20`` at ``0.0`` (jax 0.10.2,
measured). Inputs holding subnormals are refused before the run (``backend.py``); this module
checks the values the graph makes, so that a zero XLA gave where NumPy's value is a nonzero
subnormal fails the replay at the node, before a later division, logarithm or large factor
turns it into a different number (``-1.0`` against ``-0.0``, a finite value against an
infinity):

* **Elementwise arithmetic** (:data:`ELEMENTWISE`): ``*``, ``/``, ``+``, ``-``, ``square``,
  ``reciprocal``, ``exp``, ``exp2``, ``**`` (``power``, ``float_power``), ``deg2rad``,
  ``arctan2``, ``ldexp``. Each has an exact test of "NumPy's result would be a nonzero
  subnormal" from its operands where XLA's result is 0 (a sum of two floats is 0 only when
  they cancel exactly; a product or quotient is tested scaled out of the subnormal range;
  ``exp(x)`` is nonzero above ``log(smallest_subnormal / 2)``, ``a ** b`` where
  ``b * log2|a|`` is above ``log2(smallest_subnormal / 2)``), in the precise program; the
  replay's fast program tests ``*``, ``/``, ``**``, ``arctan2`` and ``ldexp`` by "XLA's result
  is 0 where no factor is 0" (:func:`_fast`), which fails wherever the exact test does, and a
  failure reruns the precise program. The test is an elementwise mask
  (:func:`capviz.backends.jax.trace.poisoned`): in the precise program a flag per node; in the
  fast one, NaN where it fails, an elementwise select XLA fuses into the consumer, and a NaN
  test only where the values leave the program (:mod:`capviz.backends.jax.poison`). An op
  with a literal or constant operand that rules a subnormal out (``x * 1.0001``, ``x + 0.5``,
  ``x / 0.5``, a bias or gain of weights whose magnitudes are measured once on the host) is
  not checked at all.
* **Products that contract** (:data:`PRODUCTS`: ``matmul``, ``dot``, ``einsum``, ``tensordot``,
  ``inner``, ``outer``, ``kron``, ``vecdot``, ``convolve``, ``correlate``, ``cross``...): their
  products and partial sums are made inside the op. A product can be subnormal only when the
  smallest nonzero magnitudes of the operands multiply below ``tiny * 2**(nmant + 1)`` (a
  partial sum of products above that bound is either 0 or normal; of three operands or more,
  a partial product of any of them may come first, so each smallest magnitude below 1
  counts): checked with one reduction per operand (for ``matmul``, per contracted index: the
  smallest magnitude of each column of ``a`` times that of each row of ``b``); with every
  operand but one a constant (a model's weights), an elementwise threshold of that one
  (:func:`_product_with_constants`), which poisons that operand in the fast program.
* **Products along an axis** (:data:`PRODS`: ``prod``, ``cumprod`` and ``nan`` forms): a
  product of 0 (or NaN) where no factor is 0 (or NaN) fails.
* **Variances** (:data:`SPREADS`: ``var``, ``std``, ``nan`` forms): 0 only where the values
  along the axis are all equal (a max and a min along it).
* **Sums** (:data:`SUMS`: ``sum``, ``cumsum``, ``mean`` and their ``nan`` forms, ``diff``,
  ``ediff1d``, ``trace``) and **remainders** (:data:`REMAINDERS`): their operands' nonzero
  terms must reach ``tiny * 2**(nmant + 1)`` (times the count for a mean), an elementwise mask
  that poisons the operand in the fast program (a ``nan`` sum would drop the poison: its mask
  is merged into one flag per shape, :func:`capviz.backends.jax.trace.require_each`). These
  reductions take ``where=``, ``initial=``, ``correction=``.

* **Complex products** (:data:`COMPLEX_PRODUCTS`: ``*`` and ``square`` of complex64 and
  complex128, whose parts are float32 and float64 that XLA flushes): each of the four part
  products ``ac``, ``bd``, ``ad``, ``bc`` must be 0 or of magnitude ``tiny * 2**(nmant + 1)``
  or more (:func:`_complex_product`), else the replay fails at the node: a part of XLA's
  result would be 0 where NumPy's is not, or miss a flushed term. Complex ``/``,
  ``reciprocal``, ``exp``, ``exp2``, ``**`` (:data:`COMPLEX_DECLARED`) are refused by name
  unless the replay takes ``arithmetic="xla"``, as the ops below: their parts are quotients,
  exponentials and sines that no cheap test bounds. Complex ``+`` and ``-`` add the parts
  apart, exactly (their operands are never subnormal in XLA).

The other float ops that can make a subnormal from normal operands (:data:`DECLARED`:
``linalg``, ``fft``, ``cov``, ``polyval``...) are not checked: a JAX replay refuses them by
name when it is bound unless it takes ``arithmetic="xla"`` (:func:`unchecked`,
``JaxBackend.admit``), and so is an op reading a literal or a constant that holds a subnormal
value, which XLA reads as 0 (:func:`subnormal_literal`, :func:`subnormal_constant`);
``docs/guide/replay.md`` ("Where an engine's arithmetic differs from
NumPy's") says what each choice costs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from capviz.backends.jax.trace import (
    dtype_of,
    known_magnitudes,
    poisoned,
    precise,
    require,
    require_each,
)
from capviz.core.ir import Node
from capviz.ops import traits

ELEMENTWISE = frozenset(("multiply", "divide", "add", "subtract", "square", "reciprocal", "exp",
                         "exp2", "power", "float_power", "deg2rad", "radians", "arctan2",
                         "ldexp"))
"""Elementwise ops with an exact test of a flushed result."""

PRODUCTS = frozenset((*traits.CONTRACT, "inner", "outer", "linalg.outer", "kron", "vecdot",
                      "linalg.vecdot", "matvec", "vecmat", "linalg.multi_dot",
                      "linalg.tensordot", "convolve", "correlate", "cross", "linalg.cross"))
"""Products whose inner products and partial sums XLA may flush."""

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

COMPLEX_PRODUCTS = frozenset(("multiply", "square"))
"""Complex ops checked at run time (:func:`_complex_product`): XLA computes them with NumPy's
formula, ``(ac - bd) + (ad + bc)j``, in the parts' float type."""

COMPLEX_DECLARED = frozenset(("divide", "reciprocal", "exp", "exp2", "power", "float_power"))
"""Ops of :data:`ELEMENTWISE` whose complex result no run-time check sees: their parts come
from quotients, exponentials and trigonometric factors (``exp(a + bj)`` is
``exp(a) * (cos b + j sin b)``) that may be subnormal from normal operands, where XLA's formulas
are not NumPy's. A JAX replay refuses them by name for a complex result unless it takes
``arithmetic="xla"`` (:func:`unchecked`)."""

FLUSHED = frozenset((np.dtype(np.float32), np.dtype(np.float64)))
"""The float types XLA flushes (float16 is computed in float32: its subnormals are kept)."""

_MESSAGE = ("{op} gave 0 where NumPy's result is a nonzero subnormal float: XLA flushes "
            "subnormal results to zero, and a later division, log or large factor would give "
            "another number than NumPy's; replay with backend='numpy', or scale the values away "
            "from the float's smallest normal ({tiny:.3g})")
_COMPLEX = ("a product of the real and imaginary parts of complex {op}'s operands is below "
            "{bound:.3g}: XLA flushes its subnormal part products to zero where NumPy keeps "
            "them, so a part of the result would differ from NumPy's; replay with "
            "backend='numpy', or scale the operands up")
_PRODS = ("a partial product of {op} fell below the float's smallest normal: XLA flushes it to "
          "zero (the product is 0, or NaN times an infinity) where NumPy keeps a subnormal "
          "and goes on; replay with backend='numpy', or multiply logarithms (np.log(x).sum())")
_SPREAD = ("{op} gave 0 for values that are not all equal: their squared deviations fell "
           "below the float's smallest normal, which XLA flushes to zero where NumPy keeps "
           "them (x / std would differ); replay with backend='numpy', or scale the values up")
_SUM = ("an operand of {op} holds values of magnitude below {bound:.3g}, whose sums may be "
        "subnormal, which XLA flushes to zero where NumPy keeps them; replay with "
        "backend='numpy', or scale the operand up")
_PRODUCT = ("an operand of {op} holds values so small that their products may be subnormal "
            "(below {tiny:.3g}), which XLA flushes to zero where NumPy keeps them; replay with "
            "backend='numpy', or scale the operands up")


def check(jnp: Any, name: str, fn: Any, args: tuple, operands: list, result: Any,
          params: dict) -> Any:
    """The flush checks of op ``name`` (nothing for an op or a dtype XLA does not flush), run
    as ``fn(*args, **params)`` to give ``result``: returns the result, in the fast trace with
    NaN where a check fails (:func:`capviz.backends.jax.trace.poisoned`)."""
    if name in REMAINDERS:  # divmod gives two results: its operands say what XLA flushes
        return _remainders(jnp, name, fn, args, operands, result, params)
    if name in COMPLEX_PRODUCTS and hasattr(result, "dtype") and dtype_of(result).kind == "c":
        return _complex_product(jnp, name, args, result)
    if not hasattr(result, "dtype") or dtype_of(result) not in FLUSHED:
        return result
    if name in ELEMENTWISE:
        return _elementwise(jnp, name, args, result)
    if name in PRODUCTS:
        return _products(jnp, name, fn, args, operands, result, params)
    if name in SUMS and operands:  # where= drops terms: the mask covers them all
        return _sums(jnp, name, fn, args, operands[0], result, params)
    if name in PRODS and operands:
        return _prods(jnp, name, operands[0], result, params)
    if name in SPREADS and operands:
        return _spreads(jnp, name, operands[0], result, params)
    return result


def _complex_product(jnp: Any, name: str, args: tuple, r: Any) -> Any:
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


def _rerun(fn: Any, args: tuple, params: dict, result: Any, replaced: dict[int, Any]) -> Any:
    """``result``, or, where the fast trace poisoned operands (``replaced``: the poisoned
    value by the id of the operand it replaces), ``fn`` run again on them: the first run's
    result is then unused, and XLA drops it."""
    if all(replaced.get(id(a), a) is a for a in args):
        return result
    return fn(*[replaced.get(id(a), a) for a in args], **params)


_BINARY = ("multiply", "divide", "add", "subtract", "power", "float_power", "arctan2", "ldexp")


def _known(value: Any) -> np.ndarray | None:
    """The values of an operand known when the program is traced (a literal, a small
    constant), as an array; ``None`` for a traced value."""
    if isinstance(value, (int, float, np.generic, np.ndarray)):
        return np.asarray(value)
    return None


def _magnitudes(value: Any) -> tuple[float, float] | None:
    """The smallest nonzero and the largest finite magnitude of an operand known when the
    program is traced: a literal, a small constant baked into the program, or a large constant
    argument measured once on the host (:func:`known_magnitudes`); ``None`` for a value the
    program computes."""
    known = _known(value)
    if known is None:
        return known_magnitudes(value)
    if known.dtype.kind not in "biuf":
        return None
    return magnitudes(known)


def _cannot_flush(name: str, args: tuple, info: np.finfo) -> bool:
    """Whether a literal or constant operand rules a subnormal result out (``x * 1.0001``,
    ``x + 0.5``, ``x / 0.5``, a bias ``x + b``, a gain ``g * x`` of magnitudes 1 or more: an
    operand XLA computed is never subnormal, so its product with a
    factor of magnitude 1 or more is not; nor its sum with a term of magnitude
    ``tiny * 2**(nmant + 1)`` or more, or 0, whose nonzero sums are multiples of ``tiny`` or
    more; nor its quotient by a divisor of magnitude 1 or less, nor ``c / x`` for ``|c|`` of
    ``tiny * finfo.max`` or more): then the op needs no check, and costs nothing. A large
    constant's magnitudes are measured once, on the host, when the program is built."""
    for k, value in enumerate(args):
        bounds = _magnitudes(value)
        if bounds is None:
            continue
        low, high = bounds
        if name == "multiply" and (low >= 1 or high == 0):
            return True
        if name in ("add", "subtract") and low >= float(info.tiny) * 2.0 ** (info.nmant + 1):
            return True
        if name == "divide" and k == 1 and high <= 1:
            return True
        if name == "divide" and k == 0 and (low >= float(info.tiny) * float(info.max)
                                            or high == 0):
            return True
        known = _known(value)
        if name in ("power", "float_power") and k == 1 and known is not None and known.size \
                and bool(np.all((known > 0) & (known <= 1))):
            return True  # |x| ** y of 0 < y <= 1 is at least |x| where |x| < 1
    return False


_FACTORS = {"multiply": 2, "square": 1, "divide": 1, "arctan2": 1, "power": 1,
            "float_power": 1, "ldexp": 1}
"""Ops whose result is 0 only where one of their first ``n`` operands is 0, but for an
underflow: their test in the fast program (:func:`_fast`)."""


def _fast(name: str, args: tuple, x: list, nonzero: Any) -> Any:
    """The fast program's test of an op of :data:`_FACTORS`: "XLA's result is not 0, or one of
    its factors is 0" (a literal or small constant factor without zeros is left out). It fails
    wherever the exact test fails (NumPy's result is then a nonzero subnormal, so no factor is
    0) and also where both underflow to 0; a failure reruns the replay's precise program, whose
    exact tests say which, and name the node. Two comparisons per factor, where the exact test
    multiplies, divides or takes a logarithm per element."""
    ok = nonzero
    for value, v in zip(args[:_FACTORS[name]], x):
        known = _known(value)
        if known is None or not bool(np.all(known != 0)):  # computed, or holding a zero
            ok = ok | (v == 0)
    return ok


def _elementwise(jnp: Any, name: str, args: tuple, r: Any) -> Any:
    dtype = dtype_of(r)
    info = np.finfo(dtype)
    if len(args) != (2 if name in _BINARY else 1):
        return r
    if len(args) == 2 and _cannot_flush(name, args, info):
        return r
    x = [jnp.asarray(v).astype(dtype) for v in (args[:1] if name == "ldexp" else args)]
    least = float(info.smallest_subnormal)  # NumPy rounds |v| above least / 2 to nonzero
    # each test is "r is not 0, or NumPy's result is 0 too", in as few elementwise ops as
    # possible: they run for every element of every checked op
    nonzero = r != 0
    if name in _FACTORS and not precise():
        ok = _fast(name, args, x, nonzero)
    elif name in ("add", "subtract"):
        a, b = x  # an exact sum of floats is 0 only when they cancel (an infinity's is not 0)
        ok = nonzero | ((a == -b) if name == "add" else (a == b))
    elif name in ("multiply", "square"):
        a, b = x if len(x) == 2 else (x[0], x[0])
        # a product of normals that is 0 has factors below 1: scaled by 2**(2 * (nmant + 2)),
        # out of the subnormal range (a factor that overflows so makes a nonzero product)
        scale = 2.0 ** (2 * (info.nmant + 2))
        ok = nonzero | ~(jnp.abs(a * (b * scale)) > least * scale / 2)
    elif name in ("divide", "arctan2"):
        a, b = x  # arctan2(a, b) is a / b where that is below tiny (b > 0), else not 0
        scale = 2.0 ** (info.nmant + 2)
        ok = nonzero | ~(jnp.abs((a * scale) / b) > least * scale / 2)  # NaN: inf / inf
    elif name in ("deg2rad", "radians"):  # x * pi / 180 of a normal x is at least least
        ok = nonzero | (x[0] == 0)
    elif name == "ldexp":
        a = x[0]
        n = jnp.asarray(args[1]).astype(np.float64)
        ok = nonzero | (a == 0) | ~(jnp.log2(jnp.abs(a)).astype(np.float64) + n
                                    > math.log2(least) - 1)
    elif name in ("power", "float_power"):
        a, b = x  # NumPy's |a| ** b is nonzero above least / 2: b * log2|a| > log2(least) - 1
        exponent = b * jnp.log2(jnp.abs(a))
        ok = nonzero | (a == 0) | ~(exponent > math.log2(least) - 1)
    elif name == "reciprocal":  # 1 / finfo.max is above smallest_subnormal
        ok = nonzero | jnp.isinf(x[0])
    else:  # exp, exp2
        log = math.log(least) - math.log(2) if name == "exp" else math.log2(least) - 1
        ok = nonzero | (x[0] <= log)
    return poisoned(r, ok, _MESSAGE.format(op=name, tiny=float(info.tiny)))


def _sums(jnp: Any, name: str, fn: Any, args: tuple, x: Any, r: Any, params: dict) -> Any:
    """Every nonzero term at least ``tiny * 2**(nmant + 1)`` (times the count for a mean):
    then every partial sum, a multiple of the smallest term's spacing, is 0 or normal, and so
    is the mean. An elementwise mask of the operand: in the fast trace, the operand poisoned
    where it fails, which XLA fuses into the sum (a ``nan`` sum, which would drop the poison,
    merges the mask into a flag, :func:`capviz.backends.jax.trace.require_each`)."""
    if dtype_of(x) != dtype_of(r):
        return r  # an integer or narrower operand: its terms are exact in the result's type
    info = np.finfo(dtype_of(r))
    bound = float(info.tiny) * 2.0 ** (info.nmant + 1)
    if name in ("mean", "nanmean"):
        bound *= max(1, math.prod(x.shape) // max(1, math.prod(r.shape)))
    ok = ~(jnp.abs(x) < bound) | (x == 0)
    if name.startswith("nan"):  # it would drop a poisoned term: a merged flag
        require_each(ok, _SUM.format(op=name, bound=bound))
        return r
    checked = poisoned(x, ok, _SUM.format(op=name, bound=bound), operand=True)
    return _rerun(fn, args, params, r, {id(x): checked})


def _remainders(jnp: Any, name: str, fn: Any, args: tuple, operands: list, r: Any,
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
    return _rerun(fn, args, params, r, replaced)


def _prods(jnp: Any, name: str, x: Any, r: Any, params: dict) -> Any:
    """A product that is 0 (or NaN) only where a factor is 0 (or NaN): XLA's is 0 after a
    flushed partial product, where NumPy's keeps the subnormal and goes on (a product NumPy
    rounds to 0 too is refused as well). ``where=`` leaves factors out (as 1), ``initial=`` is
    one more factor."""
    if dtype_of(x) != dtype_of(r) or set(params) - _CHECKED_PARAMS[name]:
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


def _spreads(jnp: Any, name: str, x: Any, r: Any, params: dict) -> Any:
    """A variance of 0 only where the values along the axis (those ``where=`` selects) are all
    equal (their range is 0); one NumPy rounds to 0 too (deviations below
    ``sqrt(smallest_subnormal)``) is refused as well."""
    if dtype_of(x) != dtype_of(r) or set(params) - _CHECKED_PARAMS[name]:
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


def magnitudes(a: np.ndarray) -> tuple[float, float]:
    """The smallest nonzero finite magnitude of a host array (inf when there is none) and its
    largest finite magnitude (0 when there is none)."""
    magnitude = np.abs(np.asarray(a))
    if magnitude.dtype.kind != "f":
        magnitude = magnitude.astype(np.float64)
    finite = np.isfinite(magnitude)
    high = float(np.max(magnitude, where=finite, initial=0.0))
    low = float(np.min(magnitude, where=finite & (magnitude != 0), initial=np.inf))
    return low, high


def _smallest(jnp: Any, a: Any, axis: Any = None) -> Any:
    """The smallest nonzero finite magnitude of ``a`` (along ``axis``), as float64; inf when
    there is none. A constant's is measured once on the host (:func:`known_magnitudes`): the
    smallest of the whole array, which bounds that of any axis."""
    known = known_magnitudes(a)
    if known is not None:
        return np.float64(known[0])
    magnitude = jnp.abs(a)
    ignored = (magnitude == 0) | ~jnp.isfinite(magnitude)
    low = jnp.min(jnp.where(ignored, np.inf, magnitude), axis=axis, initial=np.inf)
    return low.astype(np.float64)  # the smallest values only: a float64 copy costs a pass


def _products(jnp: Any, name: str, fn: Any, args: tuple, operands: list, r: Any,
              params: dict) -> Any:
    dtype = dtype_of(r)
    info = np.finfo(dtype)
    bound = math.log2(float(info.tiny)) + info.nmant + 1
    floats = [a for a in operands if dtype_of(a).kind == "f"]
    if not floats:
        return r
    computed = [a for a in floats if _magnitudes(a) is None]
    if len(computed) == 1 and len(floats) > 1:
        x = computed[0]
        checked = _product_with_constants(jnp, floats, x, bound,
                                          _PRODUCT.format(op=name, tiny=float(info.tiny)))
        return _rerun(fn, args, params, r, {id(x): checked})
    if name == "matmul" and len(floats) == 2:
        a, b = floats
        a = a[None, :] if a.ndim == 1 else a
        b = b[:, None] if b.ndim == 1 else b
        # per contracted index k: min_i |a[..., i, k]| * min_j |b[..., k, j]|
        low = jnp.log2(_smallest(jnp, a, axis=-2)) + jnp.log2(_smallest(jnp, b, axis=-1))
        ok = jnp.all(low >= bound)
    else:
        logs = [jnp.log2(_smallest(jnp, a)) for a in floats]
        if len(logs) > 2:  # a partial product of any of them may come first: count each < 1
            logs = [jnp.minimum(v, 0.0) for v in logs]
        ok = sum(logs) >= bound
    require(ok, _PRODUCT.format(op=name, tiny=float(info.tiny)))
    return r


def _product_with_constants(jnp: Any, floats: list, x: Any, bound: float, message: str) -> Any:
    """The test of :func:`_products` where every operand but ``x`` is known (a model's weights:
    their smallest magnitude is measured once on the host): the sum of the logarithms of the
    smallest magnitudes reaches ``bound`` exactly where every nonzero finite ``|x|`` reaches a
    threshold, an elementwise mask (``x`` poisoned where it fails, in the fast trace), where the
    smallest magnitude of ``x`` along an axis would be a reduction and a flag per product.
    Returns ``x`` as checked."""
    logs = []
    for a in floats:
        if a is x:
            continue
        low = _magnitudes(a)[0]
        if low == np.inf:
            return x  # an operand of zeros (or infinities): a product of 0, NaN or inf
        logs.append(math.log2(low) if low > 0 else -np.inf)
    if len(floats) > 2:  # as in _products: each magnitude below 1 counts
        logs = [min(v, 0.0) for v in logs]
    need = bound - sum(logs)  # log2 of the smallest |x| that passes
    if len(floats) > 2 and need > 0:
        need = np.inf  # x's clamped logarithm is at most 0: only zeros pass
    dtype = dtype_of(x)
    threshold = np.asarray(2.0 ** need if need < 1024 else np.inf).astype(dtype)
    if float(threshold) < 2.0 ** need:  # rounded down to x's type: round up, not to miss one
        threshold = np.nextafter(threshold, dtype.type(np.inf))
    if float(threshold) <= float(np.finfo(dtype).tiny):
        return x  # XLA's nonzero values are at least tiny (a flushed one is its producer's)
    return poisoned(x, ~(jnp.abs(x) < threshold) | (x == 0), message, operand=True)


# --- what no check sees: refused unless the replay takes XLA's arithmetic ----------------------

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

_CHECKED_PARAMS = {
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

_DEFAULTS = {"where": True}


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
    if node.op in COMPLEX_DECLARED and node.dtype is not None \
            and np.dtype(node.dtype).kind == "c":
        return f"no run-time check sees a subnormal part of the complex result of {node.op}"
    if node.op in DECLARED:
        if not node.op.startswith("linalg.") and not any(
                isinstance(a, Node) and a.dtype is not None and np.dtype(a.dtype).kind in "fc"
                for a in node.args):
            return None  # of integers: sums, products and quotients by counts of integers
        return f"no run-time check sees a subnormal value {node.op} makes"
    handled = _CHECKED_PARAMS.get(node.op)
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
    if node.op in SUMS and initial is not None and _small_term(initial, node.dtype):
        return f"the check of {node.op}'s sums does not cover initial={initial!r}"
    return None


def _small_term(value: Any, dtype: Any) -> bool:
    """Whether ``value``, a term of a sum of ``dtype``, is a nonzero magnitude below
    ``tiny * 2**(nmant + 1)`` (which a partial sum may cancel into a subnormal)."""
    info = np.finfo(np.dtype(dtype))
    magnitude = abs(complex(value))
    return 0 < magnitude < float(info.tiny) * 2.0 ** (info.nmant + 1)


# --- subnormal values the program reads: literals and constants, refused like DECLARED --------

def _literals(value: Any) -> Any:
    """The float and complex numbers and arrays in a node's static arguments or parameters."""
    if isinstance(value, Node) or isinstance(value, bool):
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _literals(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _literals(item)
    elif isinstance(value, (float, complex, np.floating, np.complexfloating)):
        yield value
    elif isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        yield value


def _subnormals_in(value: Any, dtype: Any) -> np.ndarray:
    """The values of ``value`` (a number or an array; each part of a complex one) that are
    nonzero subnormals once in ``dtype`` (none for a dtype XLA does not flush)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        dtype = np.dtype(np.float32 if dtype.itemsize == 8 else np.float64)
    a = np.asarray(value)
    if dtype not in FLUSHED or a.dtype.kind not in "fc":
        return np.empty(0)
    tiny = np.finfo(dtype).tiny
    found = []
    with np.errstate(all="ignore"):
        for part in ((a.real, a.imag) if a.dtype.kind == "c" else (a,)):
            cast = part.astype(dtype)
            found.append(cast[(cast != 0) & (np.abs(cast) < tiny)])
    return np.concatenate([f.reshape(-1) for f in found])


def subnormal_literal(node: Node) -> str | None:
    """Why a literal of ``node`` (an argument or a parameter: ``x + 1e-310``,
    ``np.clip(x, 1e-310, None)``) makes XLA's result differ from NumPy's: it is a nonzero
    subnormal in the type the op computes in (NumPy's promotion of the operands and the
    literal; a Python number takes the operands' type), or in its own float32/float64 type
    (XLA may convert it on the device, where it reads as 0); ``None`` when none is. XLA reads
    subnormal floats as 0, and no run-time check sees a value the program does not compute.
    float16 literals are kept (XLA computes float16 in float32)."""
    operands = [np.dtype(a.dtype) for a in node.args
                if isinstance(a, Node) and a.dtype is not None]
    own = np.dtype(node.dtype) if node.dtype is not None else None
    for value in (*_literals(node.args), *_literals(node.params or {})):
        try:
            computed = np.result_type(*operands, value) if operands else \
                own if own is not None and own.kind in "fc" else np.result_type(value)
        except TypeError:  # pragma: no cover - a value NumPy does not promote
            computed = None
        dtypes = [computed] if isinstance(value, (float, complex)) else [computed, value.dtype]
        for dtype in dtypes:
            if dtype is None:
                continue
            found = _subnormals_in(value, dtype)
            if found.size:
                return (f"the literal {_shown(value, found)} is subnormal in "
                        f"{np.dtype(dtype).name}: XLA reads it as 0")
    return None


def _shown(value: Any, found: np.ndarray) -> str:
    if isinstance(value, np.ndarray) and value.size > 1:
        return f"array holding {float(found[0])!r}"
    return repr(value.item() if isinstance(value, np.ndarray) else value)


def subnormal_constant(host: Any, low: float | None = None) -> str | None:
    """What a constant holds that XLA reads as 0 (its first nonzero subnormal value, in its
    own float32/float64 or complex type), ``None`` when it holds none; ``low``: its smallest
    nonzero magnitude when already measured (:func:`magnitudes`), which rules most out."""
    dtype = np.asarray(host).dtype
    if dtype.kind not in "fc" or (low is not None and dtype.kind == "f"
                                  and not low < float(np.finfo(dtype).tiny)):
        return None
    found = _subnormals_in(host, dtype)
    if not found.size:
        return None
    return f"{float(found[0])!r}, subnormal in {dtype.name}"
