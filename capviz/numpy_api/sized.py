"""Handlers of the NumPy functions whose result length depends on the data: ``np.nonzero``,
``np.flatnonzero``, ``np.argwhere``, ``np.unique``, ``np.extract`` and ``np.compress`` with a
tensor condition. A capture with example values records them with a size symbol (``n0``); one
without refuses them by name (:meth:`capviz.trace.tensor.Trace.sized`); eager devices run them.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from capviz import ops
from capviz.trace.dispatch import HANDLED
from capviz.trace.tensor import Tensor, trace_of, unsupported


def _sized(name: str, args: tuple, params: dict, call: str) -> Any:
    return trace_of(args).sized(ops.OPS[name], args, params, call)


def nonzero(a: Any) -> tuple:
    """``np.nonzero(a)``: one index array per axis, of one data-dependent length."""
    return _sized("nonzero", (a,), {}, "np.nonzero")


def flatnonzero(a: Any) -> Any:
    """``np.flatnonzero(a)``."""
    return _sized("flatnonzero", (a,), {}, "np.flatnonzero")


def argwhere(a: Any) -> Any:
    """``np.argwhere(a)``."""
    return _sized("argwhere", (a,), {}, "np.argwhere")


def extract(condition: Any, arr: Any) -> Any:
    """``np.extract(condition, arr)``."""
    return _sized("extract", (condition, arr), {}, "np.extract")


_COMPRESS = HANDLED[np.compress]  # a static condition: the spec's op (a static length)


def compress(condition: Any, a: Any, axis: Any = None, out: Any = None) -> Any:
    """``np.compress(condition, a, axis)``: with a tensor condition, a data-dependent length."""
    if type(condition) is not Tensor:
        return _COMPRESS(condition, a, axis, out)
    if out is not None:
        raise unsupported("np.compress(..., out=...)", (condition, a),
                          "its length depends on the data; assign the result instead")
    axis = None if axis is None else int(axis)
    return _sized("compress_data", (condition, a), {"axis": axis}, "np.compress")


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: Any = None, *, equal_nan: bool = True,
           sorted: bool = True) -> Any:
    """``np.unique(ar, ...)`` of the flattened array (``axis=None``): the sorted values and,
    as asked, the first indices, the inverse and the counts."""
    if axis is not None or not sorted:
        raise unsupported("np.unique(..., axis=...)" if axis is not None else
                          "np.unique(..., sorted=False)", (ar,),
                          "recorded for the flattened array, sorted (axis=None)")
    flags = {"return_index": bool(return_index), "return_inverse": bool(return_inverse),
             "return_counts": bool(return_counts), "equal_nan": bool(equal_nan)}
    results = _sized("unique", (ar,), flags, "np.unique")
    return results[0] if len(results) == 1 else tuple(results)


for _func, _handler in ((np.nonzero, nonzero), (np.flatnonzero, flatnonzero),
                        (np.argwhere, argwhere), (np.extract, extract), (np.compress, compress),
                        (np.unique, unique)):
    _handler.__signature__ = inspect.signature(_func)  # type: ignore[attr-defined]  # NumPy's
    HANDLED[_func] = _handler
