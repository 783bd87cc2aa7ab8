"""Handlers written by hand: reductions, reshape and friends, concatenation, where, clip...

These ops predate the spec table (:mod:`capviz.ops`) and have their own ops in
:mod:`capviz.ops.table`; tests/test_numpy_coverage.py checks each handler's parameters against
NumPy's signature.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.numpy_api.registry import reject, static
from capviz.numpy_api.writes import write_elementwise, write_into
from capviz.ops.reductions import MASKED
from capviz.trace import conversions
from capviz.trace.dispatch import implements
from capviz.trace.tensor import Tensor, _axis, apply, unsupported


def _ufunc_axis(a: Any, axis: Any) -> Any:
    """``axis`` as a ufunc's reduction reads it: of a 0-d operand, ``axis=0`` or ``-1`` is the
    whole of it, as ``axis=None`` (``np.prod(np.float64(2), axis=0)`` is 2.0, kept 0-d with
    ``keepdims=True``); any other axis, and a tuple, stays NumPy's AxisError."""
    axis = _axis(axis)
    if type(axis) is int and axis in (0, -1) and np.ndim(a) == 0:
        return None
    return axis


def _reduce(call: str, name: str, a: Any, axis: Any, keepdims: Any, out: Any,
            dtype: Any = None, initial: Any = None, where: Any = None) -> Any:
    """Record reduction ``name``; with ``out=`` a tensor, NumPy's call with ``out=`` is
    recorded and written into it (numpy_api/writes.py). With ``where=`` (a mask other than
    ``True``) or ``initial=``, the op is the reduction's masked form (``sum_where``...,
    :data:`capviz.ops.reductions.MASKED`), the mask its second operand."""
    axis = axis if name in ("mean", "var", "std") else _ufunc_axis(a, axis)
    params = {"axis": _axis(axis), "keepdims": bool(keepdims)}
    if dtype is not None:  # the accumulator's dtype, as NumPy's dtype= (recorded by name)
        params["dtype"] = np.dtype(dtype).name
    operands: tuple = (a,)
    op = ops.OPS[name]
    masked = where is not None and where is not np._NoValue and not (
        type(where) is bool and where)
    if masked or (initial is not None and initial is not np._NoValue):
        op = ops.OPS[MASKED[name]]
        if initial is not None and initial is not np._NoValue:
            params["initial"] = _initial(call, initial, a)
        if masked:
            operands = (a, where if type(where) is Tensor else np.asarray(where))
    if out is None:
        return apply(op, operands, params)
    if type(out) is not Tensor:
        raise unsupported(f"{call}(..., out=ndarray)", (a, out), _OUT_NDARRAY.format(call=call))
    return write_into(call, op, operands, params, out)


_OUT_NDARRAY = ("NumPy would write the result into an ndarray, which cannot hold a recorded "
                "value; write y = {call}(...) and use y, or record the buffer first, buf = "
                "cv.constant(arr), and pass out=buf")


def _initial(call: str, initial: Any, a: Any) -> Any:
    """``initial=`` as a graph parameter: a Python number (NumPy casts it to the result's
    dtype, so a NumPy scalar's own type changes nothing); a tensor is refused with the
    rewrite."""
    if type(initial) is Tensor:
        combine = _COMBINE.get(call, "np.maximum(result, v)")
        raise unsupported(f"{call}(..., initial=<tensor>)", (a, initial),
                          "initial must be a Python number; compute the reduction without it "
                          f"and combine the tensor after: {combine}")
    if (isinstance(initial, np.ndarray) and initial.ndim == 0) or isinstance(initial, np.generic):
        initial = initial.item()
    return static(call, "initial", initial, (a,))


_COMBINE = {"np.sum": "np.sum(x, axis) + v", "np.prod": "np.prod(x, axis) * v",
            "np.max": "np.maximum(np.max(x, axis), v)",
            "np.min": "np.minimum(np.min(x, axis), v)"}


def _reduction(name: str, *funcs: Callable) -> None:
    """np.sum / np.prod: ``(a, axis, dtype, out, keepdims, initial, where)``."""

    @implements(*funcs)
    def handler(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                keepdims: Any = False, initial: Any = None, where: Any = None) -> Any:
        return _reduce(f"np.{name}", name, a, axis, keepdims, out, dtype, initial, where)


def _extreme(name: str, *funcs: Callable) -> None:
    """np.max / np.min: no ``dtype`` parameter."""

    @implements(*funcs)
    def handler(a: Any, axis: Any = None, out: Any = None, keepdims: Any = False,
                initial: Any = None, where: Any = None) -> Any:
        return _reduce(f"np.{name}", name, a, axis, keepdims, out, initial=initial,
                       where=where)


def _logical(name: str, func: Callable) -> None:
    """np.any / np.all: ``where`` is keyword-only."""

    @implements(func)
    def handler(a: Any, axis: Any = None, out: Any = None, keepdims: Any = False, *,
                where: Any = None) -> Any:
        reject(f"np.{name}", (a,), where=where)
        return _reduce(f"np.{name}", name, a, axis, keepdims, out)


@implements(np.mean)
def _mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False,
          *, where: Any = None) -> Any:
    return _reduce("np.mean", "mean", a, axis, keepdims, out, dtype, where=where)


_reduction("sum", np.sum)
_reduction("prod", np.prod)
_extreme("max", np.max, np.amax)
_extreme("min", np.min, np.amin)
_logical("any", np.any)
_logical("all", np.all)


def _ddof(ddof: Any) -> int | float:
    """``ddof`` (or ``correction``) as NumPy takes it: an integer, or a real number
    (``correction=1.5``); anything else is NumPy's TypeError."""
    try:
        return operator.index(ddof)
    except TypeError:
        if isinstance(ddof, (float, np.floating)):
            return float(ddof)
        raise TypeError(f"ddof must be an integer or a real number, got {ddof!r}") from None


def _moment(name: str, func: Callable) -> None:
    """np.var / np.std: ``ddof`` comes before ``keepdims`` in NumPy's signature."""

    @implements(func)
    def handler(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
                keepdims: Any = False, *, where: Any = None, mean: Any = None,
                correction: Any = np._NoValue) -> Any:
        reject(f"np.{name}", (a,), out=out, where=where, mean=mean)
        if correction is not np._NoValue:  # the array API's name of ddof
            if ddof != 0:
                raise ValueError("ddof and correction can't be provided simultaneously.")
            ddof = correction
        params = {"axis": _axis(axis), "keepdims": bool(keepdims), "ddof": _ddof(ddof)}
        if dtype is not None:
            params["dtype"] = np.dtype(dtype).name
        return apply(ops.OPS[name], (a,), params)


_moment("var", np.var)
_moment("std", np.std)


def _arg(name: str, func: Callable) -> None:
    @implements(func)
    def handler(a: Any, axis: Any = None, out: Any = None, *, keepdims: Any = False) -> Any:
        reject(f"np.{name}", (a,), out=out)
        return apply(ops.OPS[name], (a,), {"axis": _ufunc_axis(a, axis),
                                           "keepdims": bool(keepdims)})


_arg("argmax", np.argmax)
_arg("argmin", np.argmin)


@implements(np.reshape)
def _reshape(a: Any, /, shape: Any, order: str = "C", *, copy: Any = None) -> Any:
    if order not in ("C", "F"):
        raise unsupported(f"np.reshape(..., order={order!r})", (a,),
                          "order='A' reads the memory layout, which a capture does not know; "
                          "write order='C' or order='F'")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
    params = {"shape": tuple(operator.index(s) for s in shape)}
    if order == "F":  # (a node without order is C's, as graphs saved before it were)
        params["order"] = "F"
    return apply(ops.OPS["reshape"], (a,), params)


@implements(np.transpose)
def _transpose(a: Any, axes: Any = None) -> Any:
    return apply(ops.OPS["transpose"], (a,), {"axes": _axis(axes)})


@implements(np.swapaxes)
def _swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    return apply(ops.OPS["swapaxes"], (a,), {"axis1": operator.index(axis1),
                                             "axis2": operator.index(axis2)})


@implements(np.expand_dims)
def _expand_dims(a: Any, axis: Any) -> Any:
    return apply(ops.OPS["expand_dims"], (a,), {"axis": _axis(axis)})


@implements(np.squeeze)
def _squeeze(a: Any, axis: Any = None) -> Any:
    return apply(ops.OPS["squeeze"], (a,), {"axis": _axis(axis)})


@implements(np.broadcast_to)
def _broadcast_to(array: Any, shape: Any, subok: bool = False) -> Any:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
    return apply(ops.OPS["broadcast_to"], (array,),
                 {"shape": tuple(operator.index(s) for s in shape)})


def _diagonal_offset(name: str, m: Any, k: Any) -> Any:
    """``k`` as NumPy takes it (a float or a bool works as in eager NumPy; a value it cannot
    use raises NumPy's own error, from the same call on a 1 x 1 stand-in), recorded as a graph
    parameter."""
    if type(k) is not Tensor:
        getattr(np, name)(np.zeros((1, 1)), k)
    return static(f"np.{name}", "k", k, (m,))


@implements(np.tril)
def _tril(m: Any, k: int = 0) -> Any:
    return apply(ops.OPS["tril"], (m,), {"k": _diagonal_offset("tril", m, k)})


@implements(np.triu)
def _triu(m: Any, k: int = 0) -> Any:
    return apply(ops.OPS["triu"], (m,), {"k": _diagonal_offset("triu", m, k)})


def _sequence(name: str, arrays: Any) -> tuple:
    """The arrays NumPy joins: each item as ``np.asarray`` makes it, a list holding tensors
    (``np.concatenate([[label], negatives])``) recorded as NumPy's array of it."""
    if isinstance(arrays, Tensor) or not isinstance(arrays, (list, tuple)):
        raise unsupported(f"np.{name} of a single tensor", (arrays,),
                          "pass a list or tuple of tensors")
    return tuple(_item(item) for item in arrays)


def _item(item: Any) -> Any:
    if isinstance(item, (list, tuple)):
        made = conversions.convert("asarray", (item,), {})
        if made is not None:
            return made
    return item


@implements(np.concatenate)
def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                 casting: str = "same_kind") -> Any:
    seq = _sequence("concatenate", arrays)
    reject("np.concatenate", seq, out=out, dtype=dtype)
    if axis is None:
        raise unsupported("np.concatenate(..., axis=None)", seq, "flatten first with reshape(-1)")
    return apply(ops.OPS["concatenate"], seq, {"axis": operator.index(axis)})


@implements(np.stack)
def _stack(arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None,
           casting: str = "same_kind") -> Any:
    seq = _sequence("stack", arrays)
    reject("np.stack", seq, out=out, dtype=dtype)
    return apply(ops.OPS["stack"], seq, {"axis": operator.index(axis)})


@implements(np.hstack)
def _hstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    seq = _sequence("hstack", tup)
    reject("np.hstack", seq, dtype=dtype)
    return apply(ops.OPS["hstack"], seq)


@implements(np.vstack)
def _vstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    seq = _sequence("vstack", tup)
    reject("np.vstack", seq, dtype=dtype)
    return apply(ops.OPS["vstack"], seq)


_TENSOR_SECTIONS = ("the split points would come from tensor values, and the pieces' shapes "
                    "with them, which a capture does not have; pass Python ints (known before "
                    "the capture), or keep the shape: np.where(mask, x, fill) with a mask "
                    "made from the tensor")


def _sections(name: str, ary: Any, indices_or_sections: Any) -> Any:
    """Python ints for the graph; split points held in a capture tensor are refused by name
    (an eager tensor's are read, as NumPy reads an array's)."""
    held = [indices_or_sections] if type(indices_or_sections) is Tensor else \
        [i for i in indices_or_sections if type(i) is Tensor] \
        if isinstance(indices_or_sections, (list, tuple)) else []
    if any(t._trace.records for t in held):
        raise unsupported(f"np.{name}(..., indices_or_sections=<tensor>)",
                          (ary, indices_or_sections), _TENSOR_SECTIONS)
    if type(indices_or_sections) is Tensor:
        indices_or_sections = indices_or_sections.numpy().tolist()
    elif held:
        indices_or_sections = [i.numpy().item() if type(i) is Tensor else i
                               for i in indices_or_sections]
    if isinstance(indices_or_sections, (int, np.integer)):
        return int(indices_or_sections)
    return [operator.index(i) for i in indices_or_sections]


@implements(np.split)
def _split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    return list(apply(ops.OPS["split"], (ary,), {
        "indices_or_sections": _sections("split", ary, indices_or_sections),
        "axis": operator.index(axis)}))


@implements(np.array_split)
def _array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    return list(apply(ops.OPS["array_split"], (ary,), {
        "indices_or_sections": _sections("array_split", ary, indices_or_sections),
        "axis": operator.index(axis)}))


@implements(np.where)
def _where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None or y is None:
        raise unsupported("np.where(condition)", (condition,),
                          "the one-argument form has a data-dependent shape; write "
                          "np.where(condition, x, fill) to keep the shape")
    return apply(ops.OPS["where"], (condition, x, y))


@implements(np.clip)
def _clip(a: Any, a_min: Any = np._NoValue, a_max: Any = np._NoValue, out: Any = None,
          *, min: Any = np._NoValue, max: Any = np._NoValue, **kw: Any) -> Any:
    lo = a_min if a_min is not np._NoValue else min
    hi = a_max if a_max is not np._NoValue else max
    lo = None if lo is np._NoValue else lo
    hi = None if hi is np._NoValue else hi
    if out is not None:  # np.clip is a ufunc: out= is written as for ufuncs (writes.py)
        return write_elementwise("np.clip", ops.OPS["clip"], (a, lo, hi), out)
    return apply(ops.OPS["clip"], (a, lo, hi))


@implements(np.matmul)
def _matmul(x1: Any, x2: Any, **kw: Any) -> Any:
    reject("np.matmul", (x1, x2), **kw)
    return apply(ops.OPS["matmul"], (x1, x2))


@implements(np.dot)
def _dot(a: Any, b: Any, out: Any = None) -> Any:
    if out is None:
        return apply(ops.OPS["dot"], (a, b))
    if type(out) is not Tensor:
        raise unsupported("np.dot(..., out=ndarray)", (a, b, out), _OUT_NDARRAY.format(
            call="np.dot"))
    return write_into("np.dot", ops.OPS["dot"], (a, b), {}, out)


@implements(np.take)
def _take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    reject("np.take", (a, indices), out=out)
    mode = ops.clip_mode(mode)
    if type(indices) is not Tensor:  # NumPy's conversion: an array is cast "same_kind" (the
        # op's rule checks it); a list or scalar converts straight to intp (1.5 -> 1)
        indices = indices if isinstance(indices, np.ndarray) else np.asarray(indices, np.intp)
    params = {"axis": None if axis is None else operator.index(axis)}
    if mode != "raise":  # (a node without mode raises, as graphs saved before it did)
        params["mode"] = mode
    return apply(ops.OPS["take"], (a, indices), params)


def _like(name: str, func: Callable) -> None:
    @implements(func)
    def handler(a: Any, *args: Any, dtype: Any = None, order: str = "K", subok: bool = True,
                shape: Any = None, **kw: Any) -> Any:
        kw.pop("device", None)
        fill = None
        if name == "full_like":
            fill = args[0] if args else kw.pop("fill_value")
            args = args[1:]
        params: dict = {} if fill is None or type(fill) is Tensor else {"fill_value": fill}
        if args and dtype is None:
            dtype = args[0]
        params["dtype"] = None if dtype is None else np.dtype(dtype).name
        if shape is not None:  # NumPy's forms: an int or a sequence of ints
            if isinstance(shape, (int, np.integer)) or getattr(shape, "ndim", None) == 0:
                shape = (shape,)  # a 0-d tensor too: its __index__ is a data read
            params["shape"] = tuple(operator.index(size) for size in shape)
        if type(fill) is Tensor:  # NumPy's full_like: empty_like, then copyto(casting='unsafe')
            result = apply(ops.OPS["zeros_like"], (a,), params)
            np.copyto(result, fill, casting="unsafe")
            return result
        # np.empty_like replays as zeros, as np.empty does (ops/creation.py): the elements
        # NumPy leaves unset hold garbage no replay can reproduce
        return apply(ops.OPS["zeros_like" if name == "empty_like" else name], (a,), params)


_like("zeros_like", np.zeros_like)
_like("ones_like", np.ones_like)
_like("empty_like", np.empty_like)
_like("full_like", np.full_like)


@implements(np.shape)
def _shape(a: Any) -> tuple:
    return a.shape


@implements(np.ndim)
def _ndim(a: Any) -> int:
    return a.ndim


@implements(np.size)
def _size(a: Any, axis: Any = None) -> int:
    return a.size if axis is None else a.shape[axis]


@implements(np.result_type)
def _result_type(*arrays_and_dtypes: Any) -> np.dtype:
    return np.result_type(*[a.dtype if isinstance(a, Tensor) else a for a in arrays_and_dtypes])


@implements(np.astype)
def _astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    if not copy and type(x) is Tensor and np.dtype(dtype) == x.dtype:
        return x  # NumPy returns x itself: writes through the result reach it
    return apply(ops.OPS["astype"], (x,), {"dtype": ops.dtype_param(dtype)})


@implements(np.round, np.around)
def _round(a: Any, decimals: int = 0, out: Any = None) -> Any:
    params = {"decimals": operator.index(decimals)}
    if out is None:
        return apply(ops.OPS["round"], (a,), params)
    if type(out) is not Tensor:
        raise unsupported("np.round(..., out=ndarray)", (a, out),
                          _OUT_NDARRAY.format(call="np.round"))
    return write_into("np.round", ops.OPS["round"], (a,), params, out)


@implements(np.linalg.matmul)
def _linalg_matmul(x1: Any, x2: Any, /) -> Any:
    return apply(ops.OPS["matmul"], (x1, x2))
