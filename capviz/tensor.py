"""The :class:`Tensor`: one class for eager and capture tensors; its backend decides.

An eager tensor's ``_data`` is an array of its backend (NumPy or CuPy); a capture tensor's
``_data`` is the :class:`capviz.ir.Node` that produced it. Every operator and method calls
:func:`apply`, which picks the backend of the operands (a capture backend wins over an eager one,
so an eager tensor that meets a capture becomes an undeclared input the boundary check reports).
"""

from __future__ import annotations

import abc
import operator
from collections.abc import Iterator
from typing import Any

import numpy as np

from capviz import ops
from capviz.errors import UnsupportedOperationError

_EMPTY: dict = {}


class Backend(abc.ABC):
    """What a tensor's backend provides (eager NumPy/CuPy, or the capture recorder)."""

    priority = 0
    name = "backend"

    @abc.abstractmethod
    def apply(self, op: ops.Op, args: tuple, params: dict) -> Any:
        """Run (eager) or record (capture) ``op``; return a Tensor or a tuple of them."""

    @abc.abstractmethod
    def read(self, tensor: Tensor, call: str) -> np.ndarray:
        """The host value of ``tensor`` (a data read, which a capture records as a violation)."""

    def describe(self, tensor: Tensor) -> str:
        """The tensor's ``repr``."""
        return f"<tensor {tensor.dtype}{list(tensor.shape)}>"

    def unsupported(self, call: str, reason: str = "") -> UnsupportedOperationError:
        """The error for an operation capviz cannot run or record."""
        from capviz.violations import unsupported_message

        return UnsupportedOperationError(unsupported_message(call, None, reason))


def backend_of(args: Any) -> Backend | None:
    """The backend that handles ``args``: the highest-priority backend among its tensors."""
    found = None
    for a in args:
        if type(a) is Tensor:
            b = a._backend
            if found is None or (b is not found and b.priority > found.priority):
                found = b
    return found


def apply(op: ops.Op, args: tuple, params: dict = _EMPTY) -> Any:
    """Run or record ``op`` on ``args`` with the backend of its tensor operands."""
    return backend_of(args).apply(op, args, params)


def unsupported(call: str, args: Any, reason: str = "") -> UnsupportedOperationError:
    """The error (recorded as a violation when capturing) for an unsupported call."""
    backend = backend_of(args)
    if backend is None:
        from capviz.violations import unsupported_message

        return UnsupportedOperationError(unsupported_message(call, None, reason))
    return backend.unsupported(call, reason)


def _op(name: str) -> ops.Op:
    return ops.OPS[name]


def _binary(name: str, reflected: bool = False) -> Any:
    op = _op(name)
    if reflected:
        def method(self: Tensor, other: Any) -> Any:
            if type(other) is Tensor and other._backend is not self._backend:
                return apply(op, (other, self))
            return self._backend.apply(op, (other, self), _EMPTY)
    else:
        def method(self: Tensor, other: Any) -> Any:
            if type(other) is Tensor and other._backend is not self._backend:
                return apply(op, (self, other))
            return self._backend.apply(op, (self, other), _EMPTY)
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _unary(name: str) -> Any:
    op = _op(name)

    def method(self: Tensor) -> Any:
        return self._backend.apply(op, (self,), _EMPTY)

    return method


def _axis(axis: Any) -> Any:
    if axis is None or isinstance(axis, int):
        return axis
    if isinstance(axis, np.integer):
        return int(axis)
    return tuple(operator.index(a) for a in axis)


def normalize_index(key: Any) -> tuple:
    """A static index as a tuple of ints, slices, None, Ellipsis and lists of ints/bools."""
    items = key if isinstance(key, tuple) else (key,)
    out = []
    for k in items:
        if k is None or k is Ellipsis:
            out.append(k)
        elif isinstance(k, slice):
            out.append(slice(*(None if v is None else operator.index(v)
                               for v in (k.start, k.stop, k.step))))
        elif isinstance(k, (bool, np.bool_)):
            out.append(bool(k))
        elif isinstance(k, (int, np.integer)):
            out.append(int(k))
        elif isinstance(k, range):
            out.append(list(k))
        elif isinstance(k, (list, np.ndarray)):
            arr = np.asarray(k)
            if arr.dtype != bool and not np.issubdtype(arr.dtype, np.integer) and arr.size:
                raise IndexError(f"index lists must hold integers or booleans, got {arr.dtype}")
            out.append(arr.tolist())
        else:
            raise IndexError(f"unsupported index {k!r} of type {type(k).__name__}")
    return tuple(out)


class Tensor:
    """An n-dimensional tensor on a capviz device, or recorded by a capture.

    Supports the Python operators, the methods below, and plain NumPy functions through
    ``__array_ufunc__`` / ``__array_function__``.
    """

    __slots__ = ("__weakref__", "_backend", "_data")
    __array_priority__ = 1000
    __hash__ = None  # type: ignore[assignment]  # like ndarray: == is elementwise

    def __init__(self, data: Any, backend: Backend) -> None:
        self._data = data
        self._backend = backend

    # --- metadata --------------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape."""
        return tuple(self._data.shape)

    @property
    def dtype(self) -> np.dtype:
        """The dtype (a ``numpy.dtype``)."""
        return np.dtype(self._data.dtype)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._data.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return ops.numel(self._data.shape)

    @property
    def device(self) -> Any:
        """The device (or capture device) the tensor belongs to."""
        return getattr(self._backend, "device", None)

    def __len__(self) -> int:
        if not self._data.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return self._backend.describe(self)

    # --- data reads ---------------------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """The value as a host ``numpy.ndarray`` (a data-read violation while capturing)."""
        return self._backend.read(self, ".numpy()")

    def item(self) -> Any:
        """The single element as a Python scalar."""
        return self._backend.read(self, ".item()").item()

    def __float__(self) -> float:
        return float(self._backend.read(self, "float()"))

    def __int__(self) -> int:
        return int(self._backend.read(self, "int()"))

    def __bool__(self) -> bool:
        return bool(self._backend.read(self, "bool()"))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        value = self._backend.read(self, "np.asarray()")
        return value if dtype is None else value.astype(dtype)

    # --- NumPy protocols ------------------------------------------------------------------------

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        call = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        if method != "__call__":
            raise unsupported(call, inputs, f"the ufunc method {method!r} is not recorded")
        if kwargs:
            raise unsupported(call, inputs, f"keyword arguments {sorted(kwargs)} are not "
                                            "supported")
        op = ops.ufunc_op(ufunc)
        if op is None:
            raise unsupported(call, inputs, "multi-output and generalized ufuncs are not "
                                            "supported")
        return apply(op, inputs, _EMPTY)

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        from capviz.numpy_api import HANDLED, function_name

        handler = HANDLED.get(func)
        if handler is None:
            raise unsupported(function_name(func), _flat(args, kwargs))
        return handler(*args, **kwargs)

    # --- methods -------------------------------------------------------------------------------

    def reshape(self, *shape: Any) -> Tensor:
        """Reshape (``t.reshape(2, 3)`` or ``t.reshape((2, 3))``; one ``-1`` allowed)."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        return apply(_op("reshape"), (self,), {"shape": tuple(operator.index(s) for s in shape)})

    def transpose(self, *axes: Any) -> Tensor:
        """Permute axes (reverse them when none are given)."""
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = axes[0]
        return apply(_op("transpose"), (self,), {"axes": _axis(axes) if axes else None})

    @property
    def T(self) -> Tensor:  # noqa: N802
        """The transpose (axes reversed)."""
        return apply(_op("transpose"), (self,), {"axes": None})

    def swapaxes(self, axis1: int, axis2: int) -> Tensor:
        """Swap two axes."""
        return apply(_op("swapaxes"), (self,), {"axis1": operator.index(axis1),
                                                 "axis2": operator.index(axis2)})

    def astype(self, dtype: Any) -> Tensor:
        """Cast to ``dtype``."""
        return apply(_op("astype"), (self,), {"dtype": np.dtype(dtype).name})

    def _reduce(self, name: str, axis: Any, keepdims: bool, **extra: Any) -> Tensor:
        return apply(_op(name), (self,), {"axis": _axis(axis), "keepdims": bool(keepdims),
                                          **extra})

    def sum(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """Sum over ``axis``."""
        return self._reduce("sum", axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """Mean over ``axis``."""
        return self._reduce("mean", axis, keepdims)

    def var(self, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Tensor:
        """Variance over ``axis``."""
        return self._reduce("var", axis, keepdims, ddof=operator.index(ddof))

    def std(self, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Tensor:
        """Standard deviation over ``axis``."""
        return self._reduce("std", axis, keepdims, ddof=operator.index(ddof))

    def max(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """Maximum over ``axis``."""
        return self._reduce("max", axis, keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """Minimum over ``axis``."""
        return self._reduce("min", axis, keepdims)

    def argmax(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """Index of the maximum over one ``axis`` (or the flattened tensor)."""
        return self._reduce("argmax", axis, keepdims)

    def argmin(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """Index of the minimum over one ``axis`` (or the flattened tensor)."""
        return self._reduce("argmin", axis, keepdims)

    def clip(self, low: Any, high: Any) -> Tensor:
        """Clip values to ``[low, high]``."""
        return apply(_op("clip"), (self, low, high))

    def __getitem__(self, key: Any) -> Tensor:
        if type(key) is Tensor:
            return apply(_op("index"), (self, key))
        if isinstance(key, tuple) and any(type(k) is Tensor for k in key):
            if len(key) == 1:
                return apply(_op("index"), (self, key[0]))
            raise unsupported("tensor[...] with a tensor inside a tuple index", (self, *key),
                              "index with one integer tensor, or use np.take(t, idx, axis=...)")
        return apply(_op("getitem"), (self,), {"index": normalize_index(key)})

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError("capviz tensors are immutable: build a new tensor "
                        "(np.where(mask, value, t)) instead of assigning into one")

    __add__ = _binary("add")
    __radd__ = _binary("add", True)
    __sub__ = _binary("subtract")
    __rsub__ = _binary("subtract", True)
    __mul__ = _binary("multiply")
    __rmul__ = _binary("multiply", True)
    __truediv__ = _binary("divide")
    __rtruediv__ = _binary("divide", True)
    __floordiv__ = _binary("floor_divide")
    __rfloordiv__ = _binary("floor_divide", True)
    __mod__ = _binary("remainder")
    __rmod__ = _binary("remainder", True)
    __pow__ = _binary("power")
    __rpow__ = _binary("power", True)
    __matmul__ = _binary("matmul")
    __rmatmul__ = _binary("matmul", True)
    __and__ = _binary("bitwise_and")
    __rand__ = _binary("bitwise_and", True)
    __or__ = _binary("bitwise_or")
    __ror__ = _binary("bitwise_or", True)
    __xor__ = _binary("bitwise_xor")
    __rxor__ = _binary("bitwise_xor", True)
    __lt__ = _binary("less")
    __le__ = _binary("less_equal")
    __gt__ = _binary("greater")
    __ge__ = _binary("greater_equal")
    __eq__ = _binary("equal")  # type: ignore[assignment]
    __ne__ = _binary("not_equal")  # type: ignore[assignment]
    __neg__ = _unary("negative")
    __pos__ = _unary("positive")
    __abs__ = _unary("absolute")
    __invert__ = _unary("invert")


def _flat(args: Any, kwargs: dict) -> list:
    """Tensors found in args/kwargs, one level into lists and tuples."""
    out = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, (list, tuple)):
            out.extend(a)
        else:
            out.append(a)
    return out
