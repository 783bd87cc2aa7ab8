"""The ndarray API of :class:`capviz.Tensor`: methods and attributes with ndarray's signatures.

Most ndarray methods are a NumPy function with the array first (``a.cumsum(axis)`` is
``np.cumsum(a, axis)``): :data:`SAME_AS_FUNCTION` maps them, and each method is generated to call
that function's handler, with ndarray's own signature (tests/test_numpy_coverage.py checks that
the method's parameters are the function's after the array). Methods whose parameters differ
(``reshape(*shape)``, ``compress(condition)``...) are small adapters here. Methods that write into
the array (``sort``, ``fill``...) belong to the mutation machinery. Every other ndarray name
raises :class:`capviz.UnsupportedOperationError` naming it and the alternative
(:data:`REFUSED_ATTRIBUTES`), never a bare ``AttributeError``.
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.numpy_api import (  # noqa: F401  (their handlers register before the methods are made)
    adapters,
    generated,
    handwritten,
    reads,
    sized,
    tensor_params,
    ufunc_methods,
    writes,
)
from capviz.trace.dispatch import HANDLED, function_name, refusal
from capviz.trace.tensor import Tensor, apply, unsupported

SAME_AS_FUNCTION: dict[str, Callable] = {
    "all": np.all, "any": np.any, "argmax": np.argmax, "argmin": np.argmin,
    "argpartition": np.argpartition, "argsort": np.argsort, "choose": np.choose, "clip": np.clip,
    "cumprod": np.cumprod, "cumsum": np.cumsum, "diagonal": np.diagonal, "dot": np.dot,
    "max": np.max, "mean": np.mean, "min": np.min, "prod": np.prod, "ravel": np.ravel,
    "repeat": np.repeat, "round": np.round, "searchsorted": np.searchsorted,
    "squeeze": np.squeeze, "std": np.std, "sum": np.sum, "swapaxes": np.swapaxes,
    "take": np.take, "trace": np.trace, "var": np.var, "nonzero": np.nonzero,
}
"""ndarray method -> the NumPy function it equals with the array as first argument."""

REFUSED_ATTRIBUTES: dict[str, str] = {
    "strides": "memory layout is not recorded in a graph; use t.shape",
    "flags": "memory layout is not recorded in a graph",
    "base": "memory layout is not recorded in a graph",
    "ctypes": "a capture tensor has no memory; replay the graph for values",
    "data": "a capture tensor has no memory; replay the graph for values",
    "flat": "t.flat is an iterator over the array's memory, which a capture tensor does not "
            "have; write t.ravel()[i] (or np.ravel(t)) instead of t.flat",
    "byteswap": "byte order is not recorded; cast with t.astype(...)",
    "getfield": "structured dtypes are not tensors; use t.view(dtype) for a bit cast",
    "setfield": "structured dtypes are not tensors; write into the tensor with t[...] = v",
    "dump": "pickling values needs the values; replay the graph and save the outputs",
    "dumps": "pickling values needs the values; replay the graph and save the outputs",
    "tofile": "writing a file needs the values; replay the graph and save the outputs",
    "to_device": "a graph replays on a backend of its own; replay with graph.replay(..., "
                 "backend='cupy')",
    "setflags": "memory flags are not recorded in a graph",
    "resize": "t.resize changes the array's size in place; write np.resize(t, shape), "
              "which returns a new tensor",
    "itemset": "ndarray.itemset is gone from NumPy 2; write t[idx] = v",
}
"""ndarray attributes capture refuses, with the alternative the error names."""


def _from_function(name: str, func: Callable) -> Callable:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        handler = HANDLED.get(func)
        if handler is None:
            raise unsupported(f"tensor.{name}()", (self,), refusal(function_name(func)))
        return handler(self, *args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = f"``np.{func.__name__}(t, ...)``, as ``ndarray.{name}``."
    method.__signature__ = inspect.signature(getattr(np.ndarray, name))  # type: ignore[attr-defined]
    return method


def _shape_args(shape: tuple) -> Any:
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        return shape[0]
    return shape


def reshape(self: Tensor, *shape: Any, order: str = "C", copy: Any = None) -> Tensor:
    """``ndarray.reshape``: ``t.reshape(2, 3)`` or ``t.reshape((2, 3))``."""
    return HANDLED[np.reshape](self, _shape_args(shape), order=order, copy=copy)


def transpose(self: Tensor, *axes: Any) -> Tensor:
    """``ndarray.transpose``: axes reversed when none are given."""
    axes = _shape_args(axes) if axes else None
    return HANDLED[np.transpose](self, axes)


def astype(self: Tensor, dtype: Any, order: str = "K", casting: str = "unsafe",
           subok: bool = True, copy: bool = True) -> Tensor:
    """``ndarray.astype``: ``casting`` is checked as NumPy checks it; ``dtype=None`` is
    float64, as NumPy reads it."""
    dtype = np.dtype(dtype)
    if not np.can_cast(self.dtype, dtype, casting):
        raise TypeError(f"Cannot cast array data from {self.dtype!r} to {np.dtype(dtype)!r} "
                        f"according to the rule {casting!r}")
    if not copy and np.dtype(dtype) == self.dtype and _layout_allows(self, dtype, order):
        return self  # NumPy returns the array itself: writes through the result reach it
    return apply(ops.OPS["astype"], (self,), {"dtype": ops.dtype_param(dtype)})


def _layout_allows(self: Tensor, dtype: Any, order: str) -> bool:
    """Whether ``astype(dtype, order, copy=False)`` of an equal dtype returns the array itself:
    always for order 'K'; for 'A', 'C', 'F' when the memory layout fits, which an eager tensor's
    array answers and a capture refuses to guess."""
    if order in ("K", "k"):
        return True
    if not self._trace.records:
        return self._data.astype(dtype, order=order, copy=False) is self._data
    raise unsupported(f"tensor.astype(..., order={order!r}, copy=False)", (self,),
                      "whether NumPy returns the array itself depends on its memory layout, "
                      "which a capture does not decide; write order='K' (the tensor itself) "
                      "or copy=True (a new tensor)")


def compress(self: Tensor, condition: Any, axis: Any = None, out: Any = None) -> Tensor:
    """``ndarray.compress``: ``np.compress(condition, t, axis)``."""
    return HANDLED[np.compress](condition, self, axis, out)


def flatten(self: Tensor, order: str = "C") -> Tensor:
    """``ndarray.flatten``: a flat copy (never a view)."""
    return HANDLED[np.copy](HANDLED[np.ravel](self, order))


def copy(self: Tensor, order: str = "C") -> Tensor:
    """``ndarray.copy``; a NumPy scalar's ``copy()`` is a scalar again (immutable: the
    tensor itself), where ``np.copy`` of one makes a 0-d array."""
    if not self.ndim and self._trace.holds_scalar(self):
        return self
    return HANDLED[np.copy](self, order)


def conj(self: Tensor) -> Tensor:
    """``ndarray.conj``: the complex conjugate, or the tensor itself for a real dtype.

    NumPy returns a real array itself, so writes through the result reach it."""
    if self.dtype.kind in "biuf":
        return self
    return apply(ops.OPS["conjugate"], (self,))


def view(self: Tensor, dtype: Any = None, type: Any = None) -> Tensor:
    """``ndarray.view(dtype)``: the same bytes read as ``dtype``; ``t.view()`` and
    ``t.view(np.ndarray)``: a view of the same array (``t[...]``, writes through it reach
    ``t``)."""
    if isinstance(dtype, builtins.type) and issubclass(dtype, np.ndarray):
        dtype, type = None, dtype  # NumPy's t.view(np.ndarray): an array type, not a dtype
    if type is not None and type is not np.ndarray:
        raise unsupported(f"tensor.view(type={type.__name__})", (self,),
                          "a capture tensor has one array type, ndarray's: write t.view() or "
                          "t.view(dtype)")
    if dtype is None and (self.ndim or not self._trace.holds_scalar(self)):
        return self[...]
    if dtype is None:  # a NumPy scalar's view() is a scalar again
        dtype = self.dtype
    return apply(ops.OPS["view"], (self,), {"dtype": np.dtype(dtype).name})


def tolist(self: Tensor) -> Any:
    """``ndarray.tolist``: the values as nested lists (a data read while capturing)."""
    return self._trace.read(self, ".tolist()").tolist()


def tobytes(self: Tensor, order: str = "C") -> bytes:
    """``ndarray.tobytes``: the raw bytes (a data read while capturing)."""
    return self._trace.read(self, ".tobytes()").tobytes(order)


DATA_READ_METHODS = ("item", "tolist", "tobytes")
"""ndarray methods that return values: data reads while capturing."""

PROPERTIES: dict[str, Callable] = {
    "itemsize": lambda self: self.dtype.itemsize,
    "nbytes": lambda self: self.dtype.itemsize * self.size,
    "real": lambda self: HANDLED[np.real](self),
    "imag": lambda self: HANDLED[np.imag](self),
    "mT": lambda self: HANDLED[np.matrix_transpose](self),
}
"""ndarray properties computed from the tensor (metadata, or an op)."""

ADAPTERS: dict[str, Callable] = {
    "reshape": reshape, "transpose": transpose, "astype": astype, "compress": compress,
    "flatten": flatten, "copy": copy, "conj": conj, "conjugate": conj, "view": view,
    "tolist": tolist, "tobytes": tobytes,
}
"""ndarray methods whose parameters are not a NumPy function's after the array."""


def _getattr(self: Tensor, name: str) -> Any:
    reason = REFUSED_ATTRIBUTES.get(name)
    if reason is None:
        raise AttributeError(f"'Tensor' object has no attribute {name!r}")
    raise unsupported(f"tensor.{name}", (self,), reason)


def attach() -> None:
    """Put the ndarray API on :class:`capviz.Tensor` (done once, at import)."""
    for name, func in SAME_AS_FUNCTION.items():
        setattr(Tensor, name, _from_function(name, func))
    for name, method in ADAPTERS.items():
        setattr(Tensor, name, method)
    for name, getter in PROPERTIES.items():
        setattr(Tensor, name, property(getter, doc=f"``ndarray.{name}``."))
    Tensor.__getattr__ = _getattr  # type: ignore[attr-defined]


attach()
