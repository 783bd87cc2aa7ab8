"""NumPy functions whose parameter NumPy lets be an array, called with a tensor there:
``np.roll(t, shift=<tensor>)``, ``np.ediff1d(t, to_end=<tensor>, to_begin=<tensor>)``,
``np.insert(t, obj=<tensor>, values)``.

The result's shape does not depend on the tensor's values, so the call is recorded as the
ops that compute NumPy's result from them (an integer gather for ``roll``, a concatenation for
``ediff1d``, the ``insert_indices`` op for ``insert``); with Python values the handler generated
from the op's spec records the one op (:mod:`.generated`). Each keeps NumPy's signature.
"""

from __future__ import annotations

import inspect
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.ops.arrays import INSERT_INDICES
from capviz.trace.dispatch import HANDLED, implements
from capviz.trace.tensor import Tensor, apply, unsupported

_ROLL = HANDLED[np.roll]
_EDIFF1D = HANDLED[np.ediff1d]
_INSERT = HANDLED[np.insert]


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_holds_tensor(v) for v in value)
    return type(value) is Tensor


def _with_signature(func: Callable) -> Callable[[Callable], Callable]:
    def wrap(handler: Callable) -> Callable:
        handler.__signature__ = inspect.signature(func)  # type: ignore[attr-defined]
        handler.__name__ = func.__name__
        return implements(func)(handler)

    return wrap


def _integer_scalar(value: Any) -> bool:
    """A 0-d integer tensor, or a Python or NumPy integer."""
    if type(value) is Tensor:
        return value.ndim == 0 and value.dtype.kind in "iu"
    return np.ndim(value) == 0 and np.asarray(value).dtype.kind in "iu"


def _roll_axis(a: Any, shift: Any, axis: int) -> Any:
    """``np.roll(a, shift, axis)`` for one axis: ``np.take(a, (arange(n) - shift) % n,
    axis)``, integer arithmetic, each index in bounds."""
    n = a.shape[axis]
    if n == 0:
        return np.copy(a)
    return np.take(a, (np.arange(n) - shift) % n, axis=axis)


@_with_signature(np.roll)
def _roll(a: Any, shift: Any, axis: Any = None) -> Any:
    if not _holds_tensor(shift):
        return _ROLL(a, shift, axis)
    shifts = list(shift) if isinstance(shift, (tuple, list)) else [shift]
    for s in shifts:
        if not _integer_scalar(s):
            raise unsupported("np.roll(..., shift=<tensor>)", (a, shift),
                              "a tensor shift must be a 0-d integer tensor (or a tuple of "
                              "them, one per axis)")
    if axis is None:
        if len(shifts) != 1:
            raise unsupported("np.roll(..., shift=<tensors>)", (a, shift),
                              "several shifts need axis=, one axis per shift")
        flat = np.ravel(a)
        return np.reshape(_roll_axis(flat, shifts[0], 0), np.shape(a))
    axes = [operator.index(axis)] if not isinstance(axis, (tuple, list)) else \
        [operator.index(k) for k in axis]
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    ndim = np.ndim(a)
    result = a
    for s, k in zip(shifts, axes):
        result = _roll_axis(result, s, np.lib.array_utils.normalize_axis_index(k, ndim))
    return result


def _edge(part: Any, dtype: np.dtype, name: str) -> Any:
    """``to_begin``/``to_end`` of ``np.ediff1d`` as NumPy takes it: raveled, cast to the input's
    dtype, which it must reach under the ``same_kind`` rule (NumPy's TypeError)."""
    have = part.dtype if type(part) is Tensor else np.asarray(part).dtype
    if not np.can_cast(have, dtype, casting="same_kind"):
        raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the "
                        "`same_kind` rule.")
    return np.ravel(part).astype(dtype)


@_with_signature(np.ediff1d)
def _ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    if not (_holds_tensor(to_end) or _holds_tensor(to_begin)):
        return _EDIFF1D(ary, to_end, to_begin)
    flat = np.ravel(ary)
    dtype = flat.dtype
    parts = [] if to_begin is None else [_edge(to_begin, dtype, "to_begin")]
    n = math.prod(np.shape(flat))
    parts.append(np.subtract(flat[1:], flat[:max(n - 1, 0)]))
    if to_end is not None:
        parts.append(_edge(to_end, dtype, "to_end"))
    return np.concatenate(parts)


@_with_signature(np.insert)
def _insert(arr: Any, obj: Any, values: Any, axis: Any = None) -> Any:
    if type(obj) is not Tensor:
        return _INSERT(arr, obj, values, axis)
    if obj.dtype == np.bool_:
        raise unsupported("np.insert(..., obj=<boolean tensor>)", (arr, obj, values),
                          "a mask inserts where it is True, a number of values that depends "
                          "on it; pass integer indices")
    params = {"axis": None if axis is None else operator.index(axis)}
    return apply(ops.OPS[INSERT_INDICES], (arr, obj, values), params)
