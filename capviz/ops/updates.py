"""Update ops: the functional form of NumPy's writes (``t[idx] = v``, ``np.put``...).

Each op returns a new array equal to its first operand with the write applied, like JAX's
``x.at[idx].set(v)``; the capture recorder (:mod:`capviz.trace.mutation`) records one whenever
user code writes into a tensor. At replay the op copies its operand and runs NumPy's own
assignment on the copy, so casting, broadcasting and duplicate indices behave exactly as the
eager write did. The shape rules run NumPy's checks on stand-ins that hold no data and raise
NumPy's own exception (type and message) for a write NumPy would refuse.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from capviz.ops.elementwise import UFUNCS
from capviz.ops.table import OPS, Op, is_tensor_meta, register

VOID = np.dtype([])
_UPDATES = ("setitem", "index_put", "put", "put_along_axis", "into", "ufunc_at", "fill_diagonal",
            "putmask", "advanced_index_put", "advanced_ufunc_at")


def strided_standin(shape: tuple, dtype: Any, writeable: bool = False) -> np.ndarray:
    """An array of ``shape`` and ``dtype`` over one element (all strides 0): NumPy checks
    shapes and dtypes on it without the memory a real array of that shape would need. Only for
    calls known to fail before their loop runs (a loop would walk every element)."""
    return as_strided(np.zeros(1, dtype), shape, (0,) * len(shape), writeable=writeable)


def value_standin(value: Any) -> Any:
    """A one-element stand-in for a written value: a literal is itself; a tensor is an array of
    its dtype (array-to-array assignment casts unsafely, so its values never matter)."""
    if is_tensor_meta(value):
        return np.zeros((), value.dtype)
    return value


def check_assignment(target_shape: tuple, dtype: np.dtype, value: Any) -> None:
    """Raise NumPy's error when ``value`` cannot be written into an array part of
    ``target_shape`` and ``dtype`` (a shape that does not broadcast, a Python integer out of
    range, NaN into an integer array, a complex literal into a real array)."""
    vshape = tuple(value.shape) if is_tensor_meta(value) else ()
    trimmed = vshape
    while len(trimmed) > len(target_shape) and trimmed[0] == 1:
        trimmed = trimmed[1:]  # NumPy drops leading length-1 axes of the value
    fits = len(trimmed) <= len(target_shape)
    if fits:
        try:
            fits = tuple(np.broadcast_shapes(trimmed, target_shape)) == tuple(target_shape)
        except ValueError:
            fits = False
    if not fits:  # NumPy's message, from the same assignment on stand-ins
        dest = strided_standin(target_shape, np.uint8, writeable=True)
        dest[...] = strided_standin(vshape, np.uint8)
        raise ValueError(f"could not broadcast input array from shape {vshape} into shape "
                         f"{tuple(target_shape)}")  # pragma: no cover - NumPy raised above
    cell = np.zeros((), dtype)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        cell[()] = value_standin(value)


def check_element_assignment(ndim: int, dtype: np.dtype, value: Any) -> None:
    """Raise NumPy's error for ``x[i, j, ...] = value`` with one integer per axis: NumPy stores
    one element, and an array value must then be 0-d (any other raises, whatever its size)."""
    cell = np.zeros((1,) * ndim, dtype)
    if is_tensor_meta(value):
        value = np.ones((1,) * len(value.shape), value.dtype)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        cell[(0,) * ndim] = value


def selected_shape(shape: tuple, index: Any) -> tuple:
    """The shape of ``x[index]`` for ``x`` of ``shape`` (NumPy's IndexError when it is bad)."""
    return np.empty(shape, VOID)[index].shape


def copy_then(write: Callable) -> Callable[[Any], Callable]:
    def impl(xp: Any) -> Callable:
        def run(x: Any, *operands: Any, **params: Any) -> Any:
            y = x.copy(order="K")  # the written array keeps its axis order, as in eager
            write(xp, y, *operands, **params)
            return y

        run.__name__ = write.__name__
        return run

    return impl


# --- setitem: y = x.copy(); y[index] = value (a static index) -----------------------------------


def _setitem(xp: Any, y: Any, value: Any, index: tuple) -> None:
    y[index] = value


def _setitem_meta(args: Sequence, params: dict) -> tuple:
    x, value = args
    index = params["index"]
    target = selected_shape(x.shape, index)
    if len(index) == len(x.shape) and all(type(k) is int for k in index):
        check_element_assignment(len(x.shape), x.dtype, value)
    else:
        check_assignment(target, x.dtype, value)
    return tuple(x.shape), x.dtype


register(Op("setitem", copy_then(_setitem), _setitem_meta, params=("index",), nargs=(2, 2)))


# --- index_put: y = x.copy(); y[idx] = value (an integer or boolean tensor index) -----------


def _index_put(xp: Any, y: Any, idx: Any, value: Any) -> None:
    y[idx] = value


def _index_put_meta(args: Sequence, params: dict) -> tuple:
    x, idx, value = args
    if idx.dtype == np.bool_:
        mask = tuple(idx.shape)
        if len(mask) > len(x.shape):
            raise IndexError(f"too many indices for array: array is {len(x.shape)}-dimensional, "
                             f"but {len(mask)} were indexed")
        for axis, (have, want) in enumerate(zip(x.shape, mask)):
            if have != want:
                raise IndexError(f"boolean index did not match indexed array along axis {axis}; "
                                 f"size of axis is {have} but size of corresponding boolean "
                                 f"axis is {want}")
        # One value per selected row is data-dependent; the value must fit one row (or be
        # a single row with a leading 1), whatever the number of True entries.
        target = (1, *x.shape[len(mask):])
    elif idx.dtype.kind in "iu":
        if not x.shape:
            raise IndexError("too many indices for array: array is 0-dimensional, but 1 were "
                             "indexed")
        target = (*idx.shape, *x.shape[1:])
    else:
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    check_assignment(target, x.dtype, value)
    return tuple(x.shape), x.dtype


register(Op("index_put", copy_then(_index_put), _index_put_meta, nargs=(3, 3)))


# --- put and put_along_axis: NumPy's functions on the copy --------------------------------------


def _put(xp: Any, y: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    xp.put(y, ind, v, mode=mode)


def _put_meta(args: Sequence, params: dict) -> tuple:
    x, ind, v = args
    with np.errstate(all="ignore"), warnings.catch_warnings():  # NumPy's checks, one element
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        np.put(np.zeros(1, x.dtype), np.zeros(1, ind.dtype), value_standin(v))
    return tuple(x.shape), x.dtype


register(Op("put", copy_then(_put), _put_meta, params=("mode",), nargs=(3, 3)))


def _put_along_axis(xp: Any, y: Any, indices: Any, values: Any, axis: int) -> None:
    xp.put_along_axis(y, indices, values, axis)


def _put_along_axis_meta(args: Sequence, params: dict) -> tuple:
    x, indices, values = args
    axis = params["axis"]
    if _along_axis_fits(x.shape, indices, values, axis):
        check_assignment((), x.dtype, value_standin(values))  # a literal's casting
        return tuple(x.shape), x.dtype
    np.put_along_axis(strided_standin(x.shape, x.dtype, writeable=True),
                      _index_standin(indices), _value_standin_of_shape(values), axis)
    raise ValueError(f"put_along_axis: indices {indices.shape} and values do not fit "
                     f"{tuple(x.shape)} along axis {axis}")  # pragma: no cover - NumPy raised


def _along_axis_fits(shape: tuple, indices: Any, values: Any, axis: int) -> bool:
    """NumPy's checks of ``put_along_axis``, without running it (it would walk the indices)."""
    if not is_tensor_meta(indices) or indices.dtype.kind not in "iu":
        return False
    if len(indices.shape) != len(shape) or not -len(shape) <= axis < len(shape):
        return False
    axis %= len(shape)
    fancy = tuple(1 if i == axis else d for i, d in enumerate(shape))
    try:
        target = tuple(np.broadcast_shapes(fancy, tuple(indices.shape)))
        vshape = tuple(values.shape) if is_tensor_meta(values) else ()
        return tuple(np.broadcast_shapes(vshape, target)) == target
    except ValueError:
        return False


def _index_standin(indices: Any) -> Any:
    if not is_tensor_meta(indices):
        return indices
    return strided_standin(tuple(indices.shape), indices.dtype)


def _value_standin_of_shape(values: Any) -> Any:
    if not is_tensor_meta(values):
        return values
    return strided_standin(tuple(values.shape), values.dtype)


register(Op("put_along_axis", copy_then(_put_along_axis), _put_along_axis_meta,
            params=("axis",), nargs=(3, 3)))


# --- into: a NumPy function called with out= (y = out.copy(); f(..., out=y)) --------------------


def _into(xp: Any) -> Callable:
    def into(target: Any, *operands: Any, op: str, params: dict) -> Any:
        y = target.copy(order="K")
        OPS[op].bind(xp)(*operands, out=y, **params)
        return y

    return into


def _into_meta(args: Sequence, params: dict) -> tuple:
    target, *operands = args
    inner = OPS[params["op"]]
    if inner.random or inner.multi or inner.name in _UPDATES:
        raise TypeError(f"out= is not recorded for {inner.name}")
    shape, dtype = inner.meta(operands, params["params"])
    if tuple(shape) != tuple(target.shape) or np.dtype(dtype) != target.dtype:
        raise ValueError(f"{inner.name}(..., out=...): out is {target.dtype}"
                         f"{list(target.shape)} but the result is {np.dtype(dtype)}"
                         f"{list(shape)}; capture records out= of the result's own shape and "
                         "dtype (write y = the call, then cast or broadcast y)")
    return tuple(target.shape), target.dtype


register(Op("into", _into, _into_meta, params=("op", "params"), nargs=(1, None)))


# --- ufunc_at: np.add.at(x, indices, values), unbuffered (repeated indices accumulate) ----------


def _ufunc_at(xp: Any, y: Any, indices: Any, values: Any, ufunc: str) -> None:
    getattr(xp, ufunc).at(y, indices, values)


def _ufunc_at_meta(args: Sequence, params: dict) -> tuple:
    x, indices, values = args
    ufunc = UFUNCS.get(params["ufunc"])
    if ufunc is None or ufunc.nin != 2 or ufunc.nout != 1:
        raise TypeError(f"{params['ufunc']!r}.at is recorded for ufuncs of two operands")
    if indices.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    if not x.shape:  # NumPy's message for a 0-d array (a NumPy scalar raises TypeError)
        raise IndexError("too many indices for array: array is 0-dimensional, but 1 were "
                         "indexed")
    check_ufunc_at(ufunc, x.dtype, values, (*indices.shape, *x.shape[1:]))
    return tuple(x.shape), x.dtype


def check_ufunc_at(ufunc: np.ufunc, dtype: np.dtype, values: Any, target: tuple) -> None:
    """NumPy's checks of ``ufunc.at(x, index, values)`` where ``x[index]`` has shape ``target``:
    the values broadcast to it exactly (ValueError), and the ufunc's loop and casting accept
    them for ``dtype`` (run on one element)."""
    vshape = tuple(values.shape) if is_tensor_meta(values) else ()
    try:
        fits = tuple(np.broadcast_shapes(vshape, target)) == target
    except ValueError:
        fits = False
    if not fits:
        raise ValueError("array is not broadcastable to correct shape")
    with np.errstate(all="ignore"):
        ufunc.at(np.zeros(1, dtype), np.zeros(1, np.intp), value_standin(values))


register(Op("ufunc_at", copy_then(_ufunc_at), _ufunc_at_meta, params=("ufunc",),
            nargs=(3, 3)))


# --- fill_diagonal and putmask: NumPy's functions on the copy -----------------------------------


def _fill_diagonal(xp: Any, y: Any, val: Any, wrap: bool = False) -> None:
    xp.fill_diagonal(y, val, wrap=wrap)


def _fill_diagonal_meta(args: Sequence, params: dict) -> tuple:
    x, val = args
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if len(set(shape)) != 1 and len(shape) > 2:
        raise ValueError("All dimensions of input must be of equal length")
    with np.errstate(all="ignore"), warnings.catch_warnings():  # NumPy's flat assignment
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        np.fill_diagonal(np.zeros((1, 1), x.dtype), value_standin(val))
    return shape, x.dtype


register(Op("fill_diagonal", copy_then(_fill_diagonal), _fill_diagonal_meta, params=("wrap",),
            nargs=(2, 2)))


def _putmask(xp: Any, y: Any, mask: Any, values: Any) -> None:
    xp.putmask(y, mask, values)


def _putmask_meta(args: Sequence, params: dict) -> tuple:
    """NumPy's checks: the mask's size (not shape) is the array's; the values convert to the
    array's dtype (safe casting for an array, a range check for a Python number), checked on a
    one-element destination."""
    x, mask, values = args
    size = mask.shape if is_tensor_meta(mask) else np.shape(mask)
    if int(np.prod(size)) != int(np.prod(x.shape)):
        raise ValueError("putmask: mask and data must be the same size")
    mask_standin = np.zeros(1, mask.dtype) if is_tensor_meta(mask) else np.zeros(1, bool)
    standin = np.zeros(1, values.dtype) if is_tensor_meta(values) else values
    np.putmask(np.zeros(1, x.dtype), mask_standin, standin)
    return tuple(x.shape), x.dtype


register(Op("putmask", copy_then(_putmask), _putmask_meta, nargs=(3, 3)))
