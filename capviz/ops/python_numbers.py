"""``python_number``: Python's own arithmetic on Python numbers an object keeps across calls.

A Python float or int lifted as a 0-d state (:mod:`capviz.trace.kept_numbers`: ``self.sum +=
loss.item() * n``, ``self.count += n``) computes as Python computes, not as NumPy does: an int
never wraps (past int64 this op raises, at its node, where eager Python would hold a larger
int), ``int / int`` is Python's exactly rounded quotient (NumPy converts both to float64 first),
a comparison of an int with a float is exact, a division by zero raises ``ZeroDivisionError``.
The node's ``params["op"]`` names the operator; a replay converts each 0-d operand to the Python
number it stands for (float64 to ``float``, an integer to ``int``, a bool to ``bool``), applies
the operator and gives back NumPy's scalar of the result's kind (float64, int64 or bool).
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


def result_type(name: str, kinds: list[type]) -> type | None:
    """The Python type of ``name`` on operands of ``kinds`` (``None``: not one this op
    computes: a complex, or a power whose type depends on the value)."""
    if name not in OPERATORS or any(k not in (float, int, bool) for k in kinds):
        return None
    samples = [1.0 if k is float else True if k is bool else 3 for k in kinds]
    return type(OPERATORS[name](*samples))


def _meta(args: Any, params: dict) -> tuple[tuple, np.dtype]:
    kinds = [type(a) if type(a) in (float, int, bool) else
             {"f": float, "b": bool}.get(np.dtype(a.dtype).kind, int) for a in args]
    found = result_type(params["op"], kinds)
    if found is None:
        raise TypeError(f"python_number: no Python operator {params['op']!r} on {kinds}")
    return (), _DTYPES[found]


def _impl(xp: Any) -> Callable:
    def python_number(*args: Any, op: str) -> Any:
        value = OPERATORS[op](*(number(a) for a in args))
        if type(value) is int and not INT64[0] <= value <= INT64[1]:
            raise OverflowError(
                f"Python int {value} past int64: eager Python holds it exactly, and the graph "
                "holds the number an object keeps as an int64 (keep it within int64, or "
                "capture again with a float)")
        return _DTYPES[type(value)].type(value)  # (a scalar, as NumPy's 0-d results)

    return python_number


register(Op("python_number", _impl, _meta, params=("op",), nargs=(1, 2)))
