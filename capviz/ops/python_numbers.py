"""``python_number``: Python's own arithmetic on Python numbers an object keeps across calls.

A Python float or int lifted as a 0-d state (:mod:`capviz.trace.kept_numbers`: ``self.sum +=
loss.item() * n``, ``self.count += n``) computes as Python computes, not as NumPy does: an int
never wraps (past int64 this op raises, at its node, where eager Python would hold a larger
int), ``int / int`` is Python's exactly rounded quotient (NumPy converts both to float64 first),
a comparison of an int with a float is exact, a division by zero raises ``ZeroDivisionError``.
The node's ``params["op"]`` names the operator; a replay converts each 0-d operand to the Python
number it stands for (float64 to ``float``, an integer to ``int``, a bool to ``bool``), applies
the operator and gives back NumPy's scalar of the result's kind (float64, int64 or bool).

``**`` (``b1 ** self.t``: Adam's bias correction) is Python's ``pow``, whose result type
depends on the values: ``int ** int`` is an exact int for an exponent >= 0 and a float for a
negative one, a negative base to a fractional power is a complex, ``0.0 ** -1`` raises
``ZeroDivisionError`` and a float past the float range ``OverflowError``. The node holds the
type the capture recorded (``params["result"]``: a float where an operand is one or the exponent
a negative literal, an int otherwise); a replay whose Python result is of another type (an int
exponent gone negative, a complex) fails at the node, as an int past int64 does, which is
checked before it is computed (``3 ** 10**9``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.ops.table import Op, register

OPERATORS: dict[str, Callable[..., Any]] = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
    "true_divide": operator.truediv, "divide": operator.truediv,
    "floor_divide": operator.floordiv, "remainder": operator.mod,
    "negative": operator.neg, "positive": operator.pos, "absolute": operator.abs,
    "less": operator.lt, "less_equal": operator.le, "greater": operator.gt,
    "greater_equal": operator.ge, "equal": operator.eq, "not_equal": operator.ne,
    "power": operator.pow,
}
"""The ufuncs a Python operator on Python numbers records, and that operator."""

INT64 = (-2 ** 63, 2 ** 63 - 1)
_DTYPES = {float: np.dtype(np.float64), int: np.dtype(np.int64), bool: np.dtype(np.bool_)}


def number(value: Any) -> Any:
    """The Python number a 0-d operand stands for (a literal stays as it is)."""
    if type(value) in (float, int, bool):
        return value
    kind = np.asarray(value).dtype.kind
    held = np.asarray(value)[()]
    return float(held) if kind == "f" else bool(held) if kind == "b" else int(held)


POWERS = ("power", "scalar_power")
"""The ops ``**`` records (``np.sqrt`` / ``np.square`` of a kept number stay refused: NumPy's,
not Python's ``pow``)."""


def result_type(name: str, kinds: list[type], exponent: Any = None) -> type | None:
    """The Python type of ``name`` on operands of ``kinds`` (``None``: not one this op
    computes: a complex); for ``power``, the type for an int exponent that is not a negative
    literal ``exponent`` (``int ** t``: an int; a replay checks it)."""
    if name not in OPERATORS or any(k not in (float, int, bool) for k in kinds):
        return None
    if name == "power":
        if float in kinds or (type(exponent) in (int, bool) and exponent < 0):
            return float
        return int
    samples = [1.0 if k is float else True if k is bool else 3 for k in kinds]
    return type(OPERATORS[name](*samples))


def _meta(args: Any, params: dict) -> tuple[tuple, np.dtype]:
    kinds = [type(a) if type(a) in (float, int, bool) else
             {"f": float, "b": bool}.get(np.dtype(a.dtype).kind, int) for a in args]
    found = result_type(params["op"], kinds) if "result" not in params else \
        {"float": float, "int": int}.get(params["result"])
    if found is None:
        raise TypeError(f"python_number: no Python operator {params['op']!r} on {kinds}")
    return (), _DTYPES[found]


def _impl(xp: Any) -> Callable:
    def python_number(*args: Any, op: str, result: str | None = None) -> Any:
        numbers = [number(a) for a in args]
        if op == "power":
            value = _power(*numbers, result)
        else:
            value = OPERATORS[op](*numbers)
        if type(value) is int and not INT64[0] <= value <= INT64[1]:
            raise OverflowError(
                f"Python int {value} past int64: eager Python holds it exactly, and the graph "
                "holds the number an object keeps as an int64 (keep it within int64, or "
                "capture again with a float)")
        return _DTYPES[type(value)].type(value)  # (a scalar, as NumPy's 0-d results)

    return python_number


def _power(base: Any, exponent: Any, recorded: str | None) -> Any:
    """Python's ``base ** exponent``, failing where the graph cannot hold what eager Python
    does: an int past int64 (checked before it is computed), a complex, or another type than
    the ``recorded`` one (an int exponent gone negative: Python's float)."""
    ints = type(base) in (int, bool) and type(exponent) in (int, bool)
    if ints and exponent >= 64 and abs(base) >= 2:
        raise OverflowError(
            f"Python int {base} ** {exponent} past int64: eager Python holds it exactly, and the "
            "graph holds the number an object keeps as an int64 (keep it within int64, or "
            "capture again with a float)")
    value = base ** exponent  # (ZeroDivisionError and OverflowError as Python raises them)
    if type(value) is complex:
        raise ValueError(f"{base!r} ** {exponent!r} is the complex {value!r} in Python, and the "
                         "graph holds a real number here (compute it with cmath, or keep the "
                         "base >= 0)")
    if recorded is not None and type(value).__name__ != recorded:
        raise TypeError(f"{base!r} ** {exponent!r} is the Python {type(value).__name__} "
                        f"{value!r}, and the graph holds the {recorded} the capture met here "
                        "(an int ** a negative int is a float in Python); capture again "
                        f"with {'a float base' if recorded == 'int' else 'the exponent'}")
    return value


register(Op("python_number", _impl, _meta, params=("op", "result"), nargs=(1, 2)))
