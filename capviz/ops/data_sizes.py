"""Ops whose result length depends on the data: a boolean-mask read ``x[mask]``,
``np.nonzero``, ``np.flatnonzero``, ``np.argwhere``, ``np.unique``, ``np.compress`` with a tensor
condition, ``np.extract``, and the write back through a mask, ``y[mask] = y[mask] ** -1.5``.

Their shape rules give the data-dependent axis as :class:`capviz.core.symbols.Pending` with an
upper bound (a mask of ``n`` elements selects at most ``n``); the recorder names it (``n0``).
The callables are NumPy's own, so a NumPy replay computes exactly what eager NumPy does.
A capture records these ops only when it has example values (``capviz.trace.sizes``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from capviz.core.symbols import Pending, Symbol
from capviz.ops.table import Op, register

INTP = np.dtype(np.intp)

SIZED = frozenset(("mask_select", "nonzero", "flatnonzero", "argwhere", "unique",
                   "compress_data", "extract"))
"""The ops that make a data-dependent length (a new size symbol)."""


def _size(shape: Sequence) -> int:
    """The number of elements, a symbol counted at its upper bound."""
    return math.prod(s.bound if type(s) in (Symbol, Pending) else int(s) for s in shape)


def _check_mask(x: Any, mask: Any) -> None:
    """NumPy's IndexError for a boolean mask that does not fit ``x``'s leading axes."""
    if len(mask.shape) > len(x.shape):
        raise IndexError(f"too many indices for array: array is {len(x.shape)}-dimensional, "
                         f"but {len(mask.shape)} were indexed")
    for axis, (have, want) in enumerate(zip(x.shape, mask.shape)):
        if have is not want and have != want:
            raise IndexError(f"boolean index did not match indexed array along axis {axis}; "
                             f"size of axis is {have} but size of corresponding boolean axis "
                             f"is {want}")


def _mask_select_meta(args: Sequence, params: dict) -> tuple:
    x, mask = args
    _check_mask(x, mask)
    rest = tuple(x.shape[len(mask.shape):])
    return (Pending(_size(mask.shape)), *rest), x.dtype


def select(x: Any, mask: Any) -> Any:
    """``x[mask]`` (module-level: a distributed scheduler pickles it by name)."""
    return x[mask]


def put(x: Any, mask: Any, value: Any) -> Any:
    """``y = x.copy(); y[mask] = value``."""
    y = x.copy()
    y[mask] = value
    return y


register(Op("mask_select", lambda xp: select, _mask_select_meta, nargs=(2, 2)))


def _mask_put_meta(args: Sequence, params: dict) -> tuple:
    """``y[mask] = v`` where ``v`` has one row per selected element: ``v``'s leading length is
    the symbol of ``x[mask]`` read through the same mask (the recorder checks the mask; the
    rule sees ints standing for the symbols)."""
    x, mask, value = args
    _check_mask(x, mask)
    rest = tuple(x.shape[len(mask.shape):])
    vshape = tuple(value.shape)
    if len(vshape) != len(rest) + 1 or vshape[1:] != rest:
        raise ValueError(f"NumPy boolean array indexing assignment cannot assign "
                         f"{list(vshape)} input values to the selection of shape "
                         f"[?{''.join(f',{s}' for s in rest)}]")
    return tuple(x.shape), x.dtype


register(Op("mask_put", lambda xp: put, _mask_put_meta, nargs=(3, 3)))


def _nonzero_meta(args: Sequence, params: dict) -> list:
    (a,) = args
    if not a.shape:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d("
                         "scalar).nonzero() instead. If the context of this error is of the "
                         "form `arr.nonzero()`, please use `arr.atleast_1d().nonzero()` instead.")
    n = Pending(_size(a.shape))
    return [((n,), INTP) for _ in a.shape]


register(Op("nonzero", lambda xp: xp.nonzero, _nonzero_meta, multi=True))  # a tuple
register(Op("flatnonzero", lambda xp: xp.flatnonzero,
            lambda args, params: ((Pending(_size(args[0].shape)),), INTP)))
register(Op("argwhere", lambda xp: xp.argwhere,
            lambda args, params: ((Pending(_size(args[0].shape)), len(args[0].shape)), INTP)))

UNIQUE_FLAGS = ("return_index", "return_inverse", "return_counts")


def unique_of(unique: Any, ar: Any, **flags: Any) -> tuple:
    """``unique(ar, **flags)`` (the namespace's), its results always a tuple."""
    out = unique(ar, **flags)
    return out if isinstance(out, tuple) else (out,)


def _unique(xp: Any) -> Any:
    return functools.partial(unique_of, xp.unique)  # picklable: a function and NumPy's


def _unique_meta(args: Sequence, params: dict) -> list:
    (ar,) = args
    n = Pending(max(_size(ar.shape), 1) if not ar.shape else _size(ar.shape))
    out = [((n,), ar.dtype)]
    if params.get("return_index"):
        out.append(((n,), INTP))
    if params.get("return_inverse"):
        out.append((tuple(ar.shape), INTP))
    if params.get("return_counts"):
        out.append(((n,), INTP))
    return out


register(Op("unique", _unique, _unique_meta, params=(*UNIQUE_FLAGS, "equal_nan"), multi=True))


def _compress_meta(args: Sequence, params: dict) -> tuple:
    condition, a = args
    if len(condition.shape) != 1:
        raise ValueError("condition must be a 1-d array")
    axis = params.get("axis")
    if axis is None:
        return (Pending(min(_size(condition.shape), _size(a.shape))),), a.dtype
    ndim = len(a.shape)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    axis %= ndim
    length = a.shape[axis]
    bound = min(_size(condition.shape), length.bound if type(length) is Symbol else length)
    shape = list(a.shape)
    shape[axis] = Pending(bound)
    return tuple(shape), a.dtype


register(Op("compress_data", lambda xp: xp.compress, _compress_meta, params=("axis",),
            nargs=(2, 2)))
register(Op("extract", lambda xp: xp.extract, lambda args, params: (
    (Pending(min(_size(args[0].shape), _size(args[1].shape))),), args[1].dtype), nargs=(2, 2)))
