"""Python integers outside the range of the integer type they meet, as NumPy 2 takes them
(NEP 50; the hostile review 8, finding 12).

NumPy compares an integer array with a Python int by the int's value, whatever the array's type
(``x_int8 < 200`` is True everywhere, ``x_uint8 > -1`` too, ``x_int64 < 2**64``), leaves out a
``np.clip`` bound beyond the type's range on the side it cannot clip (``np.clip(x_int8, -200,
200)`` is ``x``; a bound beyond it on the other side raises OverflowError, which the capture
raises), and searches a sorted integer array for such an int by its value
(``np.searchsorted(x_int8, 200)`` is ``len(x)``). jax.numpy converts the int to the array's type
first, wrapping it (200 is -56 in int8): ``x_int8 < 200`` replayed False, silently, and
``x_int64 < 2**64`` raised inside the replay (and ``x_uint64 >= 2**63``, an int jax takes
as an int64 only). Each form here (:data:`FORMS`) answers those cases
as NumPy does, from the int's value alone (every value of the array's type compares the same
way with it), and calls the op as it is otherwise.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax.trace import dtype_of

COMPARISONS = {"less": operator.lt, "less_equal": operator.le, "greater": operator.gt,
               "greater_equal": operator.ge, "equal": operator.eq, "not_equal": operator.ne}
"""The comparison ufuncs and what each computes of two Python numbers."""


def beyond(value: Any, other: Any) -> bool:
    """Whether ``value`` is a Python int (not a bool) outside the range of ``other``'s integer
    type (``other`` an array or a traced value; ``False`` for any other pair)."""
    if type(value) is not int or not hasattr(other, "dtype"):
        return False
    dtype = dtype_of(other)
    if dtype.kind not in "iu":
        return False
    info = np.iinfo(dtype)
    return not int(info.min) <= value <= int(info.max)


def _wide(value: Any, other: Any) -> Any:
    """``value`` as NumPy converts it to ``other``'s type, where it is a Python int jax cannot
    take (beyond int64: ``x_uint64 >= 2**63``, ``x_float32 < 2**200``, inf in float32) and
    within that type's range; else ``value``."""
    if type(value) is not int or not hasattr(other, "dtype") or -2 ** 63 <= value < 2 ** 63:
        return value
    dtype = dtype_of(other)
    if dtype.kind in "iu" and not beyond(value, other):
        return np.asarray(value, dtype)
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            return np.asarray(float(value)).astype(dtype)  # float() raises as NumPy does
    return value


def _comparison(jnp: Any, name: str, fn: Callable) -> Callable:
    compare = COMPARISONS[name]

    def run(*args: Any, **params: Any) -> Any:
        if len(args) == 2 and not params:
            for position in (0, 1):
                value, other = args[position], args[1 - position]
                if beyond(value, other):
                    inside = int(np.iinfo(dtype_of(other)).min)  # any value of the type
                    answer = compare(value, inside) if position == 0 else compare(inside, value)
                    return jnp.full(jnp.shape(other), answer, bool)
            args = (_wide(args[0], args[1]), _wide(args[1], args[0]))
        return fn(*args, **params)

    run.__name__ = name
    return run


def _clip(jnp: Any, fn: Callable) -> Callable:
    def clip(a: Any, *bounds: Any, **params: Any) -> Any:
        # NumPy leaves out a bound below the type's range for the minimum, above it for the
        # maximum (a bound beyond it on the other side raised OverflowError at the capture)
        kept = list(bounds)
        if kept and beyond(kept[0], a) and kept[0] < 0:
            kept[0] = None
        if len(kept) > 1 and beyond(kept[1], a) and kept[1] > 0:
            kept[1] = None
        if len(kept) == 2 and kept[0] is None and kept[1] is None:
            return jnp.asarray(a) + jnp.zeros((), dtype_of(a))  # a copy, as NumPy's
        return fn(a, *(_wide(b, a) for b in kept), **params)

    clip.__name__ = "clip"
    return clip


def _searchsorted(jnp: Any, fn: Callable) -> Callable:
    def searchsorted(a: Any, v: Any, *rest: Any, **params: Any) -> Any:
        if beyond(v, a):  # every element is below it, or every one above it
            return jnp.asarray(int(np.shape(a)[0]) if v > 0 else 0, np.int64)
        return fn(a, _wide(v, a), *rest, **params)

    searchsorted.__name__ = "searchsorted"
    return searchsorted


def kept(name: str, jnp: Any, fn: Callable) -> Callable:
    """``fn``, the JAX form of op ``name`` (:data:`FORMS`), taking a Python int beyond its
    operand's integer type as NumPy does."""
    if name in COMPARISONS:
        return _comparison(jnp, name, fn)
    if name == "clip":
        return _clip(jnp, fn)
    return _searchsorted(jnp, fn)


FORMS = frozenset((*COMPARISONS, "clip", "searchsorted"))
"""The ops :func:`kept` wraps."""
