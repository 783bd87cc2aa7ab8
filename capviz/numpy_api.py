"""NumPy functions that capviz tensors handle through ``__array_function__``.

Each handler has the NumPy function's signature, rejects the arguments capviz cannot honour
(``out=``, ``dtype=`` on reductions, ``where=``...) with a clear error, and calls :func:`apply`
with the op of :mod:`capviz.ops`. :data:`HANDLED` maps the NumPy function to its handler.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.tensor import Tensor, _axis, apply, unsupported

HANDLED: dict[Callable, Callable] = {}


def function_name(func: Any) -> str:
    """``numpy.linalg.norm`` -> ``"np.linalg.norm"``."""
    module = getattr(func, "__module__", None) or "numpy"
    module = module.replace("numpy", "np", 1) if module.startswith("numpy") else module
    for private in (".core", "._core", ".lib", ".fromnumeric", ".shape_base", ".numeric",
                    ".multiarray", "._multiarray_umath", ".function_base", "._function_base_impl",
                    "._shape_base_impl", "._twodim_base_impl", ".twodim_base", ".umath"):
        module = module.replace(private, "")
    return f"{module}.{getattr(func, '__name__', repr(func))}"


def supported_functions() -> list[str]:
    """Names of the NumPy functions capviz records (ufuncs aside: every 1- and 2-operand one)."""
    return sorted(function_name(f) for f in HANDLED)


def implements(*funcs: Callable) -> Callable:
    def register(handler: Callable) -> Callable:
        for f in funcs:
            HANDLED[f] = handler
        return handler

    return register


def _reject(name: str, args: Any, **given: Any) -> None:
    bad = [k for k, v in given.items() if v is not None and v is not np._NoValue]
    if bad:
        raise unsupported(f"{name}(..., {bad[0]}=...)", args,
                          f"the argument {bad[0]!r} is not supported")


def _reduction(name: str, *funcs: Callable) -> None:
    @implements(*funcs)
    def handler(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                keepdims: Any = False, *, initial: Any = None, where: Any = None) -> Any:
        _reject(f"np.{name}", (a,), dtype=dtype, out=out, initial=initial, where=where)
        return apply(ops.OPS[name], (a,), {"axis": _axis(axis), "keepdims": bool(keepdims)})


_reduction("sum", np.sum)
_reduction("prod", np.prod)
_reduction("mean", np.mean)
_reduction("max", np.max, np.amax)
_reduction("min", np.min, np.amin)
_reduction("any", np.any)
_reduction("all", np.all)


def _moment(name: str, func: Callable) -> None:
    """np.var / np.std: ``ddof`` comes before ``keepdims`` in NumPy's signature."""

    @implements(func)
    def handler(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
                keepdims: Any = False, *, where: Any = None, mean: Any = None,
                correction: Any = None) -> Any:
        _reject(f"np.{name}", (a,), dtype=dtype, out=out, where=where, mean=mean,
                correction=correction)
        return apply(ops.OPS[name], (a,), {"axis": _axis(axis), "keepdims": bool(keepdims),
                                           "ddof": operator.index(ddof)})


_moment("var", np.var)
_moment("std", np.std)


def _arg(name: str, func: Callable) -> None:
    @implements(func)
    def handler(a: Any, axis: Any = None, out: Any = None, *, keepdims: Any = False) -> Any:
        _reject(f"np.{name}", (a,), out=out)
        return apply(ops.OPS[name], (a,), {"axis": _axis(axis), "keepdims": bool(keepdims)})


_arg("argmax", np.argmax)
_arg("argmin", np.argmin)


@implements(np.reshape)
def _reshape(a: Any, shape: Any = None, order: str = "C", *, copy: Any = None,
             **kw: Any) -> Any:
    shape = kw.pop("newshape", shape)
    if order != "C":
        raise unsupported("np.reshape(..., order=...)", (a,), "only order='C' is supported")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
    return apply(ops.OPS["reshape"], (a,), {"shape": tuple(operator.index(s) for s in shape)})


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


@implements(np.tril)
def _tril(m: Any, k: int = 0) -> Any:
    return apply(ops.OPS["tril"], (m,), {"k": operator.index(k)})


@implements(np.triu)
def _triu(m: Any, k: int = 0) -> Any:
    return apply(ops.OPS["triu"], (m,), {"k": operator.index(k)})


def _sequence(name: str, arrays: Any) -> tuple:
    if isinstance(arrays, Tensor) or not isinstance(arrays, (list, tuple)):
        raise unsupported(f"np.{name} of a single tensor", (arrays,),
                          "pass a list or tuple of tensors")
    return tuple(arrays)


@implements(np.concatenate)
def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                 casting: str = "same_kind") -> Any:
    seq = _sequence("concatenate", arrays)
    _reject("np.concatenate", seq, out=out, dtype=dtype)
    if axis is None:
        raise unsupported("np.concatenate(..., axis=None)", seq, "flatten first with reshape(-1)")
    return apply(ops.OPS["concatenate"], seq, {"axis": operator.index(axis)})


@implements(np.stack)
def _stack(arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None,
           casting: str = "same_kind") -> Any:
    seq = _sequence("stack", arrays)
    _reject("np.stack", seq, out=out, dtype=dtype)
    return apply(ops.OPS["stack"], seq, {"axis": operator.index(axis)})


@implements(np.hstack)
def _hstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    seq = _sequence("hstack", tup)
    _reject("np.hstack", seq, dtype=dtype)
    return apply(ops.OPS["hstack"], seq)


@implements(np.vstack)
def _vstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    seq = _sequence("vstack", tup)
    _reject("np.vstack", seq, dtype=dtype)
    return apply(ops.OPS["vstack"], seq)


def _sections(indices_or_sections: Any) -> Any:
    if isinstance(indices_or_sections, (int, np.integer)):
        return int(indices_or_sections)
    return [operator.index(i) for i in indices_or_sections]


@implements(np.split)
def _split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    return list(apply(ops.OPS["split"], (ary,), {
        "indices_or_sections": _sections(indices_or_sections), "axis": operator.index(axis)}))


@implements(np.array_split)
def _array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    return list(apply(ops.OPS["array_split"], (ary,), {
        "indices_or_sections": _sections(indices_or_sections), "axis": operator.index(axis)}))


@implements(np.where)
def _where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None or y is None:
        raise unsupported("np.where(condition)", (condition,),
                          "the one-argument form has a data-dependent shape")
    return apply(ops.OPS["where"], (condition, x, y))


@implements(np.clip)
def _clip(a: Any, a_min: Any = np._NoValue, a_max: Any = np._NoValue, out: Any = None,
          *, min: Any = np._NoValue, max: Any = np._NoValue, **kw: Any) -> Any:
    _reject("np.clip", (a,), out=out)
    lo = a_min if a_min is not np._NoValue else min
    hi = a_max if a_max is not np._NoValue else max
    lo = None if lo is np._NoValue else lo
    hi = None if hi is np._NoValue else hi
    return apply(ops.OPS["clip"], (a, lo, hi))


@implements(np.matmul)
def _matmul(x1: Any, x2: Any, **kw: Any) -> Any:
    _reject("np.matmul", (x1, x2), **kw)
    return apply(ops.OPS["matmul"], (x1, x2))


@implements(np.dot)
def _dot(a: Any, b: Any, out: Any = None) -> Any:
    _reject("np.dot", (a, b), out=out)
    return apply(ops.OPS["dot"], (a, b))


@implements(np.take)
def _take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    _reject("np.take", (a, indices), out=out)
    if mode != "raise":
        raise unsupported("np.take(..., mode=...)", (a, indices), "only mode='raise'")
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices)
        if not np.issubdtype(indices.dtype, np.integer):
            raise IndexError(f"np.take indices must be integers, got {indices.dtype}")
    return apply(ops.OPS["take"], (a, indices), {"axis": None if axis is None
                                                 else operator.index(axis)})


def _like(name: str, func: Callable) -> None:
    @implements(func)
    def handler(a: Any, *args: Any, dtype: Any = None, order: str = "K", subok: bool = True,
                shape: Any = None, **kw: Any) -> Any:
        kw.pop("device", None)
        if name == "full_like":
            params: dict = {"fill_value": args[0] if args else kw.pop("fill_value")}
            args = args[1:]
        else:
            params = {}
        if args and dtype is None:
            dtype = args[0]
        params["dtype"] = None if dtype is None else np.dtype(dtype).name
        if shape is not None:
            raise unsupported(f"np.{name}(..., shape=...)", (a,), "shape= is not supported")
        return apply(ops.OPS[name], (a,), params)


_like("zeros_like", np.zeros_like)
_like("ones_like", np.ones_like)
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
    return apply(ops.OPS["astype"], (x,), {"dtype": np.dtype(dtype).name})
