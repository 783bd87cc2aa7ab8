"""Elementwise float ops (:data:`ELEMENTWISE`) with an exact test of a flushed result, and
the fast program's cheaper test (:func:`_fast`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from capviz.backends.jax.subnormals.operands import known_values, operand_magnitudes
from capviz.backends.jax.trace import dtype_of, poisoned, precise

ELEMENTWISE = frozenset(("multiply", "divide", "add", "subtract", "square", "reciprocal", "exp",
                         "exp2", "power", "float_power", "deg2rad", "radians", "arctan2",
                         "ldexp"))
"""Elementwise ops with an exact test of a flushed result."""

_MESSAGE = ("{op} gave 0 where NumPy's result is a nonzero subnormal float: XLA flushes "
            "subnormal results to zero, and a later division, log or large factor would give "
            "another number than NumPy's; replay with backend='numpy', or scale the values away "
            "from the float's smallest normal ({tiny:.3g})")

_BINARY = ("multiply", "divide", "add", "subtract", "power", "float_power", "arctan2", "ldexp")


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
        bounds = operand_magnitudes(value)
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
        known = known_values(value)
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
        known = known_values(value)
        if known is None or not bool(np.all(known != 0)):  # computed, or holding a zero
            ok = ok | (v == 0)
    return ok


def elementwise(jnp: Any, name: str, args: tuple, r: Any) -> Any:
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

