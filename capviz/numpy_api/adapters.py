"""Handlers that shape a call before recording it: nested lists (``np.block``), a sample given
as a sequence (``np.histogramdd``), NumPy's identity results (``np.polyder(p, 0)`` is ``p``,
``np.poly`` of no roots is ``1.0``, ``np.real_if_close`` of a real array is the array),
``np.piecewise`` with values (NumPy's loop of boolean-mask writes), and functions that call back
into Python (``np.apply_along_axis``, ``np.apply_over_axes``), which record what the callback
records.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.numpy_api import generated as _generated  # noqa: F401  (wrapped below)
from capviz.ops.polynomials import polyder_shape
from capviz.trace.dispatch import HANDLED, implements
from capviz.trace.mutation import located
from capviz.trace.tensor import Tensor, apply, unsupported

_TUPLE = ("{path} is a tuple. Only lists can be used to arrange blocks, and np.block does not "
          "allow implicit conversion from tuple to ndarray.")


@implements(np.block)
def _block(arrays: Any) -> Any:
    """``np.block``: one ``block`` op; its ``structure`` parameter holds the nesting, each leaf
    the position of its operand."""
    operands: list = []

    def walk(item: Any, path: str) -> Any:
        if isinstance(item, list):
            return [walk(x, f"{path}[{i}]") for i, x in enumerate(item)]
        if isinstance(item, tuple):
            raise TypeError(_TUPLE.format(path=path))
        operands.append(item)
        return len(operands) - 1

    structure = walk(arrays, "arrays")
    return apply(ops.OPS["block"], tuple(operands), {"structure": structure})


def _wrapping(func: Callable) -> Callable:
    """Decorator: replace the generated handler of ``func`` by the decorated adapter, which
    receives the generated one first and keeps NumPy's signature."""
    recorded = HANDLED[func]

    def register(adapter: Callable) -> Callable:
        @functools.wraps(recorded)
        def handler(*args: Any, **kwargs: Any) -> Any:
            return adapter(recorded, *args, **kwargs)

        HANDLED[func] = handler
        return handler

    return register


@_wrapping(np.histogramdd)
def _histogramdd(recorded: Callable, sample: Any, *args: Any, **kwargs: Any) -> Any:
    """A sample given as D arrays of N values is NumPy's ``np.atleast_2d(sample).T``: the
    same (N, D) values as stacking them along the last axis."""
    if isinstance(sample, (list, tuple)):
        sample = np.stack(sample, axis=-1)
    return recorded(sample, *args, **kwargs)


@_wrapping(np.polyder)
def _polyder(recorded: Callable, p: Any, m: Any = 1) -> Any:
    """``np.polyder(p, 0)`` returns ``np.asarray(p)``: the tensor itself (after NumPy's
    product, whose error for some shapes of ``p`` it raises)."""
    if type(p) is Tensor and int(m) == 0:
        try:
            polyder_shape([p.shape], {"m": 0})
        except (ValueError, TypeError) as err:
            raise _located(p, err) from None
        return p
    return recorded(p, m)


@_wrapping(np.gradient)
def _gradient(recorded: Callable, f: Any, *varargs: Any, axis: Any = None,
              edge_order: int = 1) -> Any:
    """A boolean ``f``: NumPy subtracts ``f - f`` (a TypeError for booleans) for an axis with
    uniform spacing and at the edges for ``edge_order=1``, and not otherwise; the error is
    raised here, at the axis where NumPy raises it."""
    if type(f) is Tensor and f._trace.records and f.dtype == np.bool_ and f.ndim \
            and edge_order in (1, 2):
        _check_boolean_gradient(f, varargs, axis, edge_order)
    return recorded(f, *varargs, axis=axis, edge_order=edge_order)


def _check_boolean_gradient(f: Tensor, varargs: tuple, axis: Any, edge_order: int) -> None:
    """NumPy's loop over the axes, for a boolean ``f``: returns without raising where the
    recorded op's rule raises NumPy's error first (bad spacing arguments, a short axis)."""
    try:
        axes = tuple(range(f.ndim)) if axis is None else \
            np.lib.array_utils.normalize_axis_tuple(axis, f.ndim)
    except (ValueError, TypeError):
        return
    if not varargs or (len(varargs) == 1 and np.ndim(varargs[0]) == 0):
        spacing = [None] * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        return
    uniform = []
    for ax, dx in zip(axes, spacing):
        if dx is None or np.ndim(dx) == 0:
            uniform.append(True)
        elif np.ndim(dx) != 1 or np.shape(dx)[0] != f.shape[ax] or np.shape(dx)[0] < 2:
            return
        elif type(dx) is Tensor:
            uniform.append(None)  # decided by the values
        else:
            diff = np.diff(np.asarray(dx, np.float64 if np.asarray(dx).dtype.kind in "iu"
                                      else None))
            uniform.append(bool((diff == diff[0]).all()))
    for ax, even in zip(axes, uniform):
        if f.shape[ax] < edge_order + 1:
            return
        if even or edge_order == 1:  # NumPy computes f[2:] - f[:-2] (or f[1] - f[0])
            try:
                np.subtract(np.ones(1, bool), np.ones(1, bool))  # NumPy's own TypeError
            except TypeError as err:
                raise _located(f, err) from None
        if even is None:
            raise unsupported("np.gradient of a boolean tensor with coordinates given as a tensor",
                              (f, *varargs), "NumPy raises a TypeError when the coordinates are "
                              "evenly spaced, and computes otherwise; pass f.astype(np.float64) "
                              "(the same values where NumPy computes)")


def _located(tensor: Tensor, err: BaseException) -> BaseException:
    """NumPy's ``err`` at the user's line, in a capture (an eager tensor's error as it is)."""
    return located(tensor._trace, err) if tensor._trace.records else err


@_wrapping(np.poly)
def _poly(recorded: Callable, seq_of_zeros: Any) -> Any:
    """``np.poly`` of no roots returns the Python float ``1.0``, whatever the dtype. A list of
    tensors (``np.poly([x[0], x[1]])``) is the array NumPy makes of it: the items stacked."""
    if isinstance(seq_of_zeros, (list, tuple)) and any(type(z) is Tensor for z in seq_of_zeros):
        seq_of_zeros = np.stack(seq_of_zeros)
    if type(seq_of_zeros) is Tensor and seq_of_zeros.shape == (0,):
        return 1.0
    return recorded(seq_of_zeros)


@implements(np.real_if_close)
def _real_if_close(a: Any, tol: Any = 100) -> Any:
    """A real tensor is returned itself, as NumPy returns a real array; for a complex one the
    dtype (real or complex) would depend on the values."""
    if a.dtype.kind != "c":  # a NumPy scalar becomes a 0-d array, as np.asanyarray makes it
        return np.copy(a) if not a.ndim and a._trace.holds_scalar(a) else a
    raise unsupported("np.real_if_close of a complex tensor", (a,),
                      "its output dtype (real or complex) depends on the values; write "
                      "np.real(a) for the real part, or keep a complex")


_PIECEWISE_FUNCTION = ("it calls the function on x[cond], whose shape depends on the values; "
                       "for a function that works elementwise write "
                       "np.where(cond, f(x), other) (nested for several pieces)")


@implements(np.piecewise)
def _piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Any:
    """``np.piecewise`` with values (not functions): NumPy's own algorithm on tensors, each
    piece a boolean-mask write ``y[cond] = value`` into ``np.zeros_like(x)``."""
    if any(callable(f) for f in funclist):
        raise unsupported("np.piecewise with a function", (x, condlist), _PIECEWISE_FUNCTION)
    if type(x) is not Tensor:
        raise unsupported("np.piecewise of an ndarray with tensor conditions", (x, condlist),
                          "record the array first, x = cv.constant(x)")
    if not x.ndim:
        raise unsupported("np.piecewise of a 0-d tensor", (x, condlist),
                          "NumPy returns a 0-d array here, which capture cannot tell from a "
                          "NumPy scalar; write np.where(cond, value, other)")
    n2 = len(funclist)
    scalar = np.isscalar(condlist) or (type(condlist) is Tensor and not condlist.ndim
                                       and condlist._trace.holds_scalar(condlist))
    first = None if scalar else condlist[0]
    array_like = isinstance(first, (list, np.ndarray)) or (type(first) is Tensor and first.ndim)
    if scalar or not array_like:
        condlist = [condlist]  # NumPy's undocumented single condition
    conds = [c.astype(bool) if type(c) is Tensor else np.asarray(c, dtype=bool)
             for c in condlist]
    n = len(conds)
    if n == n2 - 1:  # the "otherwise" piece
        conds.append(~np.any(np.stack(conds), axis=0))
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = np.zeros_like(x)
    for cond, value in zip(conds, funclist):
        y[cond] = value
    return y


# --- callbacks ----------------------------------------------------------------------------------


@implements(np.apply_along_axis)
def _apply_along_axis(func1d: Callable, axis: Any, arr: Any, *args: Any, **kwargs: Any) -> Any:
    """NumPy's loop with the callback run on each 1-d slice (a view) of the tensor: each
    slice's result is cast to the first one's dtype as NumPy's buffer assignment casts it,
    and the results are stacked in NumPy's order and axis placement."""
    nd = arr.ndim
    axis = np.lib.array_utils.normalize_axis_index(operator.index(axis), nd)
    dims = list(range(nd))
    view = np.transpose(arr, dims[:axis] + dims[axis + 1:] + [axis])
    batch = view.shape[:-1]
    indices = list(np.ndindex(batch))
    if ops.numel(batch) == 0:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results: list = []
    for ind in indices:
        res = func1d(view[(*ind, Ellipsis)], *args, **kwargs)
        if isinstance(res, (list, tuple)) and any(type(r) is Tensor for r in res):
            res = np.stack(res)  # the array NumPy makes of a list of tensors
        res = res if type(res) is Tensor else np.asanyarray(res)
        if results:
            first = results[0]
            while res.ndim > first.ndim and res.shape[0] == 1:  # NumPy's assignment drops
                res = res.reshape(res.shape[1:])                # leading length-1 axes
            if res.shape != first.shape:
                res = np.broadcast_to(res, first.shape)
            if res.dtype != first.dtype:
                res = res.astype(first.dtype)
        results.append(res)
    first = results[0]
    buff = np.reshape(np.stack(results), batch + first.shape)
    ndim = len(batch) + first.ndim
    buff_dims = list(range(ndim))
    permute = (buff_dims[:axis] + buff_dims[ndim - first.ndim:]
               + buff_dims[axis:ndim - first.ndim])
    return np.transpose(buff, permute)


@implements(np.apply_over_axes)
def _apply_over_axes(func: Callable, a: Any, axes: Any) -> Any:
    """NumPy's loop: ``func(value, axis)`` for each axis, the result's reduced axis put back."""
    val = a
    n = a.ndim
    if np.array(axes).ndim == 0:
        axes = (axes,)
    for axis in axes:
        if axis < 0:
            axis = n + axis
        res = func(val, axis)
        if res.ndim == val.ndim:
            val = res
            continue
        res = np.expand_dims(res, axis)
        if res.ndim != val.ndim:
            raise ValueError("function is not returning an array of the correct shape")
        val = res
    return val
