"""The :class:`Tensor`: one class for eager and capture tensors; its trace decides.

An eager tensor's ``_data`` is an array of its backend (NumPy or CuPy); a capture tensor's
``_data`` is the :class:`capviz.core.ir.Node` that produced it. Every operator and method calls
:func:`apply`, which picks the trace of the operands (a recording trace wins over an eager one,
so an eager tensor that meets a capture becomes an undeclared input the boundary check reports).
"""

from __future__ import annotations

import abc
import operator
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from capviz import ops
from capviz.core.errors import UnsupportedOperationError
from capviz.core.source import source_of, user_frame
from capviz.core.violations import unsupported_message
from capviz.ops.advanced_index import READ, UFUNC_AT, split_key, tensor_key
from capviz.trace import kept_numbers
from capviz.trace.call_site import MULTIPLY, POWER, names_reflected, power_call
from capviz.trace.dispatch import HANDLED, UFUNC_METHODS, function_name, refusal
from capviz.trace.statements import augments_local

_EMPTY: dict = {}


class Trace(abc.ABC):
    """How a tensor's ops run: at once on a replay backend (:class:`~capviz.trace.eager.EagerTrace`)
    or recorded into a graph (:class:`~capviz.trace.recorder.Recorder`); JAX's word."""

    priority = 0
    name = "trace"
    records = False  # True for a capture: values exist only at replay
    lifted: Any = None  # a capture running with states lifted (trace/lifted.py): its Lifted

    @abc.abstractmethod
    def apply(self, op: ops.Op, args: tuple, params: dict) -> Any:
        """Run (eager) or record (capture) ``op``; return a Tensor or a tuple of them."""

    @abc.abstractmethod
    def read(self, tensor: Tensor, call: str) -> np.ndarray:
        """The host value of ``tensor`` (a data read, which a capture records as a violation)."""

    def sized(self, op: ops.Op, args: tuple, params: dict, call: str) -> Any:
        """Run or record ``op``, whose result length depends on the data (``x[mask]``,
        ``np.nonzero``); a capture gives it a size symbol (:mod:`capviz.trace.sizes`)."""
        return self.apply(op, args, params)

    def describe(self, tensor: Tensor) -> str:
        """The tensor's ``repr``."""
        return f"<tensor {tensor.dtype}{list(tensor.shape)}>"

    def holds_scalar(self, tensor: Tensor) -> bool:
        """Whether 0-d ``tensor`` stands for a NumPy scalar (what ``x.sum()`` or ``x[0]``
        returns eagerly), not a 0-d array: ``**`` and ``round()`` differ between the two. Eager
        backends keep no record of it, and a 0-d result of an op is a scalar in NumPy."""
        return True

    def inplace(self, symbol: str, target: Tensor, other: Any) -> Tensor:
        """``target <symbol> other`` for an in-place operator (``"+="``...); returns the tensor
        Python binds (``target`` itself, mutated, unless NumPy rebinds)."""
        raise self.unsupported(f"tensor {symbol} value")

    def setitem(self, target: Tensor, key: Any, value: Any) -> None:
        """``target[key] = value``."""
        raise self.unsupported("tensor[...] = value")

    def write_ufunc(self, op: ops.Op, inputs: tuple, out: Tensor, where: Any) -> Tensor:
        """``ufunc(*inputs, out=out, where=where)``; returns ``out``."""
        raise self.unsupported(f"np.{op.name}(..., out=tensor)")

    def state_target(self, array: np.ndarray, call: str) -> Tensor:
        """The tensor a write into the ndarray ``array`` writes (a capture: its state)."""
        raise self.unsupported(call, _OUT_NDARRAY)

    def replace(self, target: Tensor, new: Tensor) -> Tensor:
        """Write ``new`` (same shape) into ``target`` with NumPy's assignment casting."""
        raise self.unsupported("writing into a tensor")

    def unsupported(self, call: str, reason: str = "") -> UnsupportedOperationError:
        """The error for an operation capviz cannot run or record (at the user's line)."""
        return _unsupported_here(call, reason)


def trace_of(args: Any) -> Trace | None:
    """The backend that handles ``args``: the highest-priority backend among its tensors."""
    found = None
    for a in args:
        if type(a) is Tensor:
            b = a._trace
            if found is None or (b is not found and b.priority > found.priority):
                found = b
    return found


def apply(op: ops.Op, args: tuple, params: dict = _EMPTY) -> Any:
    """Run or record ``op`` on ``args`` with the backend of its tensor operands."""
    return trace_of(args).apply(op, args, params)


def unsupported(call: str, args: Any, reason: str = "") -> UnsupportedOperationError:
    """The error (recorded as a violation when capturing) for an unsupported call."""
    backend = trace_of(args)
    if backend is None:
        return _unsupported_here(call, reason)
    return backend.unsupported(call, reason)


def _unsupported_here(call: str, reason: str) -> UnsupportedOperationError:
    """The error outside a capture, naming the user's file and line as a capture's does."""
    source = source_of(user_frame(sys._getframe(1)))
    return UnsupportedOperationError(unsupported_message(call, source, reason))


def _ufunc_keyword_fix(call: str, kwargs: dict) -> str:
    """The rewrite of a ufunc call with keyword arguments capture does not record."""
    if "dtype" in kwargs or "signature" in kwargs:
        return f"cast the operands first, {call}(a.astype(t), b.astype(t)), as dtype= does"
    if "where" in kwargs:
        return (f"write np.where(mask, {call}(a, b), fallback): without out=, NumPy leaves "
                "the elements where= skips uninitialised")
    return (f"write the call without {', '.join(f'{k}=' for k in sorted(kwargs))} (what "
            "capviz records of NumPy's API is listed in docs/guide/numpy.md)")


def tuple_index_fix(key: tuple) -> str:
    """The alternative to a tensor inside a tuple index (``t[m, ...]``, ``t[:, idx]``)."""
    if any(type(k) is Tensor and k.dtype == np.bool_ for k in key):
        return ("use a boolean mask alone, over the leading axes (t[m] = v, t[m] op= v); over "
                "other axes keep the shape: t[...] = np.where(mb, t + v, t) to update, "
                "np.where(mb, t, fill) to read, with mb the mask broadcast to t's axes "
                "(m for t[:, m] of a 2-d t, m[:, None] for t[m, :])")
    return "index with one integer tensor, or use np.take(t, idx, axis=...)"


# ``ndarray += t`` is np.add(ndarray, t, out=(ndarray,)): NumPy gives no hook to make the ndarray
# hold a recorded value, so the in-place update is refused at the user's line with the rewrite.
_OUT_NDARRAY = ("NumPy would write the result into an ndarray, as `a += t` on an ndarray `a` "
                "does, and an ndarray cannot hold a recorded value; write `a = a + t` (a new "
                "tensor), or record the buffer first, b = cv.constant(a), and update the "
                "tensor: b += t")


_INTO: dict[np.ufunc, tuple[ops.Op | None, str]] = {}  # ufunc -> its op and the call's text,
#                                                      for a write into an ndarray


def _ufunc_into_ndarray(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> Any:
    """``ufunc(..., out=ndarray)`` (what ``a += t`` on an ndarray ``a`` calls): eager tensors are
    read and NumPy writes into the ndarray, as for ndarray operands; a capture refuses it."""
    backend = trace_of(inputs)
    outs = kwargs["out"]
    if backend is not None and backend.records and len(outs) == 1 \
            and type(outs[0]) is np.ndarray:  # the ndarray is a state of the capture
        array = outs[0]
        frame = user_frame(sys._getframe(1))
        into = _INTO.get(ufunc)
        if into is None:
            if len(_INTO) > 256:
                _INTO.clear()
            into = _INTO[ufunc] = (ops.ufunc_op(ufunc), f"np.{ufunc.__name__}(..., out=ndarray)")
        dest = backend.state_target(array, into[1], frame)
        # the written array among the operands (`a += t` reads a): its state tensor, as a
        # read of it would give
        if len(inputs) == 2:
            a, b = inputs
            inputs = (dest if a is array else a, dest if b is array else b)
        else:
            inputs = tuple([dest if a is array else a for a in inputs])
        op = into[0] if len(kwargs) == 1 else None
        if op is not None and not op.multi:  # no keyword but out=: _ufunc_into's usual case
            backend.write_ufunc(op, inputs, dest, True)
        else:
            _ufunc_into(ufunc, f"np.{ufunc.__name__}", inputs, dict(kwargs, out=(dest,)))
        # `mem += t` on a local name rebinds it to the written tensor, so NumPy's operators
        # on it afterwards are recorded; any other target keeps its ndarray (NumPy's `out`)
        return dest if augments_local(frame) else array
    call = f"np.{ufunc.__name__}"
    if backend is None or backend.records or any(type(o) is Tensor for o in outs):
        raise unsupported(f"{call}(..., out=ndarray)", inputs, _OUT_NDARRAY)
    values = [backend.read(a, call) if type(a) is Tensor else a for a in inputs]
    return ufunc(*values, **kwargs)


def _op(name: str) -> ops.Op:
    return ops.OPS[name]


def _binary(name: str, reflected: bool = False) -> Any:
    op = _op(name)
    if reflected:
        def method(self: Tensor, other: Any) -> Any:
            if type(other) is Tensor and other._trace is not self._trace:
                return apply(op, (other, self))
            return self._trace.apply(op, (other, self), _EMPTY)
    else:
        def method(self: Tensor, other: Any) -> Any:
            if type(other) is Tensor and other._trace is not self._trace:
                return apply(op, (self, other))
            return self._trace.apply(op, (self, other), _EMPTY)
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _is_scalar(value: Any) -> bool:
    """Whether ``value`` is a NumPy or Python scalar or a 0-d tensor standing for a NumPy
    scalar: what a NumPy scalar's own ``**`` takes (with a 0-d array it calls np.power)."""
    if type(value) is Tensor:
        return not value._data.shape and value._trace.holds_scalar(value)
    return isinstance(value, (bool, int, float, complex, np.generic))


def _power(self: Tensor, other: Any, modulo: Any = None) -> Any:
    """``t ** other`` as ndarray's ``**`` (its fast paths, see
    :func:`capviz.ops.elementwise.power_op`), or as a NumPy scalar's ``**`` when ``t`` stands for
    one (``scalar_power``)."""
    if modulo is not None:
        return NotImplemented  # like ndarray: three-argument pow is not implemented
    if _is_scalar(self) and _is_scalar(other):
        return apply(_op("scalar_power"), (self, other))
    if type(other) is Tensor:
        return apply(_op("power"), (self, other))
    op = ops.power_op(self.dtype, other)
    if op.name == "power":
        return self._trace.apply(op, (self, other), _EMPTY)
    return self._trace.apply(op, (self,), _EMPTY)


def _rpower(self: Tensor, other: Any) -> Any:
    """``other ** t``: a NumPy scalar's ``**`` when both stand for scalars, else np.power."""
    name = "scalar_power" if _is_scalar(self) and _is_scalar(other) else "power"
    return apply(_op(name), (other, self))


def _complex_scalar_math(a: Any, b: Any) -> bool:
    """Whether ``a * b`` is a complex NumPy scalar's own math (both stand for scalars, one is
    complex): it rounds otherwise than np.multiply's loops (see ``scalar_multiply``)."""
    if not (_is_scalar(a) and _is_scalar(b)):
        return False
    return any(type(v) is complex or (isinstance(v, (Tensor, np.generic)) and v.dtype.kind == "c")
               for v in (a, b))


def _multiply(reflected: bool) -> Any:
    """``t * other`` as ndarray's ``*``, except for a tensor standing for a NumPy scalar: with a
    list, tuple or str, Python's repetition (``[0] * n`` with ``n = x.max()``: the count is
    data, read through ``__index__``; a float or bool scalar: NumPy's TypeError); with another
    scalar, one of them complex, the complex scalar's own math (``scalar_multiply``)."""
    method = _binary("multiply", reflected)

    def multiply(self: Tensor, other: Any) -> Any:
        if not self._data.shape:  # 0-d: perhaps a NumPy scalar, whose own * may run
            if type(other) in (list, tuple, str) and _is_scalar(self):
                if self.dtype.kind not in "iu":
                    raise TypeError(f"can't multiply sequence by non-int of type "
                                    f"'numpy.{self.dtype.name}'")
                return other * self.__index__()
            if _complex_scalar_math(self, other):
                args = (other, self) if reflected else (self, other)
                return apply(_op("scalar_multiply"), args)
        return method(self, other)

    multiply.__name__ = method.__name__
    return multiply


def _abs(self: Tensor) -> Any:
    """``abs(t)``: a complex NumPy scalar's own ``abs`` (``scalar_absolute``) when ``t`` stands
    for one, else np.absolute."""
    name = "scalar_absolute" if self.dtype.kind == "c" and _is_scalar(self) else "absolute"
    return self._trace.apply(_op(name), (self,), _EMPTY)


def _scalar_operator(ufunc: np.ufunc, inputs: tuple) -> bool:
    """Whether ``np.power`` or ``np.multiply`` got a NumPy scalar and a tensor standing for a
    NumPy scalar: first, what a NumPy scalar's ``**`` and ``*`` hand on (they never defer to
    ``__rpow__``/``__rmul__``), and what ``np.power(b, t)`` passes too; second, what a NumPy
    scalar's reflected dunder called directly hands on (``s.__rpow__(t)`` is ``t ** s``, passed
    as ``np.power(t, s)``). Only a complex multiplication's scalar math differs from its
    loops."""
    if len(inputs) != 2:
        return False
    a, b = inputs
    if isinstance(a, np.generic):
        tensor = b
    elif isinstance(b, np.generic):
        tensor = a
    else:
        return False
    if type(tensor) is not Tensor or not _is_scalar(tensor):
        return False
    return ufunc is np.power or (ufunc is np.multiply and _complex_scalar_math(a, b))


def _scalar_base_call(ufunc: np.ufunc, inputs: tuple) -> Any:
    """``b ** t`` (NumPy's scalar math, ``scalar_power``) or ``np.power(b, t)`` (its array
    loops, ``power``), told apart by the call running in the caller's frame
    (:mod:`capviz.trace.call_site`); the same for ``b * t`` and ``np.multiply(b, t)``, and for
    ``b.__rpow__(t)`` (``t ** b``, scalar math) and ``np.power(t, b)``; refused when that call
    cannot be read."""
    operator = POWER if ufunc is np.power else MULTIPLY
    frame = sys._getframe(2)  # the frame that called __array_ufunc__
    kind = power_call(frame, operator)
    if kind is None and not isinstance(inputs[0], np.generic) and \
            not names_reflected(frame, operator):
        kind = "ufunc"  # a tensor first: scalar math only by s.__rpow__(t), which it never names
    if kind is None:
        left, right = (f"numpy.{type(v).__name__}" if isinstance(v, np.generic) else "tensor"
                       for v in inputs)
        symbol = "**" if ufunc is np.power else "*"
        a, b = ("b", "t") if left != "tensor" else ("t", "b")
        raise unsupported(f"{left} {symbol} {right}", inputs, (
            f"a NumPy scalar's {symbol} rounds differently from np.{operator.ufunc}, and "
            "capture could not read which of the two this line calls; write "
            f"{a} {symbol} {b} (NumPy's scalar math) or np.{operator.ufunc}({a}, {b}) (its "
            "array loops) at this line"))
    name = f"scalar_{operator.ufunc}" if kind == "operator" else operator.ufunc
    return apply(_op(name), inputs)


def _round(self: Tensor, ndigits: Any = None) -> Any:
    """``round(t, ndigits)``: as NumPy's scalars (a 0-d tensor stands for the scalar a NumPy
    reduction returns); ``round()`` of an n-d tensor raises as ``round()`` of an ndarray does."""
    kind = self.dtype.kind
    scalar = not self.ndim and self._trace.holds_scalar(self)
    if not scalar or kind not in "iuf":
        what = f"numpy.{self.dtype.type.__name__}" if scalar else "numpy.ndarray"
        raise TypeError(f"type {what} doesn't define __round__ method (round() of a "
                        f"{self.ndim}-d {self.dtype} tensor fails as it does in NumPy); write "
                        "np.round(t, decimals), which capture records")
    if ndigits is None:  # a Python int: the value is needed
        return round(self._trace.read(self, "round()")[()])
    return self._trace.apply(_op("round"), (self,), {"decimals": operator.index(ndigits)})


def _inplace(symbol: str) -> Any:
    """An in-place operator: mutates the tensor object, as ndarray's does (so every Python
    reference sees the new value); a capture records it as an update (trace/mutation.py)."""

    def method(self: Tensor, other: Any) -> Any:
        trace = self._trace
        python = getattr(trace, "python_nodes", None)
        if python and self._data.index in python:
            return NotImplemented  # (a Python number: += binds a new one, as Python does)
        return trace.inplace(symbol, self, other)

    method.__name__ = f"__i{symbol[:-1]}__"
    return method


def _ufunc_into(ufunc: np.ufunc, call: str, inputs: tuple, kwargs: dict) -> Any:
    """``np.<ufunc>(..., out=t)`` with a tensor ``t``: the result written into ``t``."""
    kwargs = dict(kwargs)
    out = kwargs.pop("out")
    where = kwargs.pop("where", True)
    op = ops.ufunc_op(ufunc)
    if len(out) != 1 or op is None or op.multi:
        raise unsupported(f"{call}(..., out=...)", inputs, "out= is recorded for ufuncs with "
                                                           "one output")
    if kwargs.pop("casting", "same_kind") != "same_kind" or kwargs:
        raise unsupported(f"{call}(..., out=...)", inputs, "with out=, only where= and "
                                                           "casting='same_kind' are supported")
    return out[0]._trace.write_ufunc(op, inputs, out[0], where)


def _ufunc_at(ufunc: np.ufunc, call: str, inputs: tuple, kwargs: dict) -> None:
    """``np.add.at(t, indices, values)``: the unbuffered update written into tensor ``t``."""
    if len(inputs) != 3 or kwargs:
        raise unsupported(call, inputs, "recorded as ufunc.at(t, indices, values) with "
                                        "integer indices")
    target, indices, values = inputs
    backend = trace_of(inputs)
    if type(target) is np.ndarray and backend is not None and backend.records:
        _ufunc_at(ufunc, call, (backend.state_target(target, f"{call} into an ndarray"),
                                indices, values), kwargs)
        return None
    if type(target) is not Tensor:
        raise unsupported(f"{call} into an ndarray", inputs, (
            "an ndarray cannot hold a recorded value; make the buffer a tensor and update "
            f"it: b = np.zeros_like(t, shape=a.shape) or b = cv.constant(a), then {call}(b, "
            "idx, v) (a + v would not accumulate repeated indices)"))
    if type(indices) is Tensor or isinstance(indices, (list, np.ndarray, range)):
        if type(indices) is not Tensor:
            indices = np.asarray(indices)
        if indices.dtype.kind in "iu":  # one integer array: along the first axis
            new = apply(_op("ufunc_at"), (target, indices, values), {"ufunc": ufunc.__name__})
            target._trace.replace(target, new)
            return
    # any other index (a tuple, a slice, None, Ellipsis, an int, a mask) as NumPy's indexing
    # reads it: static entries in the index, integer tensors in their places
    key = tensor_key(indices if isinstance(indices, tuple) else (indices,),
                     lambda k: type(k) is Tensor)
    if any(type(k) is Tensor and k.dtype == np.bool_ for k in key):
        raise unsupported(f"{call} with a boolean tensor in the index", inputs,
                          "the positions a mask selects depend on its values; write "
                          f"{call}(t, np.flatnonzero(mask_array), v) with a mask known to "
                          "the program, or np.where(mask, op(t, v), t)")
    index, positions, tensors = split_key(key, lambda k: type(k) is Tensor, normalize_index)
    new = apply(_op(UFUNC_AT), (target, values, *tensors),
                {"ufunc": ufunc.__name__, "index": index, "tensors": positions})
    target._trace.replace(target, new)


def _unary(name: str) -> Any:
    op = _op(name)

    def method(self: Tensor) -> Any:
        return self._trace.apply(op, (self,), _EMPTY)

    return method


def _axis(axis: Any) -> Any:
    """An ``axis``/``axes`` argument as NumPy reads it: an int (a NumPy integer or a 0-d
    integer array too: ``np.expand_dims(t, np.array(0))``), ``None``, or a tuple of ints."""
    if axis is None or isinstance(axis, int):
        return axis
    if isinstance(axis, np.integer) or (isinstance(axis, np.ndarray) and axis.ndim == 0):
        return operator.index(axis)
    return tuple(operator.index(a) for a in axis)


def _zero_d_array_in(key: Any) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    return any(type(k) is np.ndarray and k.ndim == 0 for k in items)


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

    __slots__ = ("__weakref__", "_alias", "_data", "_trace")
    __array_priority__ = 1000
    __hash__ = None  # type: ignore[assignment]  # like ndarray: == is elementwise

    def __init__(self, data: Any, backend: Trace) -> None:
        self._data = data
        self._trace = backend  # the keyword keeps its public name: Tensor(data, backend=...)
        self._alias: Any = None  # capture only: the buffer it shares (trace/mutation.py)

    @property
    def __class__(self) -> type:  # type: ignore[override]
        """The tensor's class, as for any object. ``isinstance(t, np.ndarray)`` reads it when
        the type check fails; during a capture with states lifted (:mod:`capviz.trace.lifted`)
        a read from code outside capviz of a tensor computed from a lifted state, where eager
        NumPy (and the two passes) would hold an ndarray, makes that capture fall back to the
        two passes (:meth:`~capviz.trace.lifted.Lifted.class_read`)."""
        lifted = self._trace.lifted
        if lifted is not None:
            lifted.class_read(self, sys._getframe(1))
        return Tensor

    def __capviz_value__(self) -> Any:
        """The array an eager tensor holds, which a replay takes as an input's value; ``None``
        for a capture tensor, which has no value (the replay's input check asks this, so the
        replay layer never imports the Tensor)."""
        return None if self._trace.records else self._data

    # --- metadata --------------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape."""
        return tuple(self._data.shape)

    @shape.setter
    def shape(self, shape: Any) -> None:
        """``t.shape = (3, 2)``: an eager tensor's array is reshaped in place as NumPy does (or
        raises NumPy's AttributeError); a capture refuses it (it would change what every
        reference to the tensor sees, view or copy, from a layout capture does not decide)."""
        if self._trace.records:
            raise unsupported("t.shape = ...", (self,), "write t = t.reshape(...), which "
                                                        "capture records")
        self._data.shape = shape

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
        return getattr(self._trace, "device", None)

    def __len__(self) -> int:
        if not self._data.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if not self._data.shape:  # raised by iter() itself, as ndarray's (np.iterable is False)
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __repr__(self) -> str:
        lifted = self._trace.lifted  # (repr of a lifted state is not the ndarray's: as isinstance)
        if lifted is not None:
            lifted.class_read(self, sys._getframe(1))
        return self._trace.describe(self)

    def __format__(self, spec: str) -> str:
        """``f"{t}"`` is ``str(t)``; ``f"{t:.3f}"`` formats the value as NumPy does (a data
        read, which a capture records as a violation at the user's line)."""
        lifted = self._trace.lifted
        if lifted is not None:
            lifted.class_read(self, sys._getframe(1))
        if not spec:
            return str(self)
        return format(self._trace.read(self, f"format(tensor, {spec!r})"), spec)

    def __copy__(self) -> Tensor:
        """``copy.copy(t)``: ``np.copy(t)`` (an eager copy, or a recorded ``copy`` op)."""
        return np.copy(self)

    def __deepcopy__(self, memo: dict) -> Tensor:
        """``copy.deepcopy(t)``: ``np.copy(t)``, as for an ndarray of numbers."""
        return np.copy(self)

    # --- data reads ---------------------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """The value as a host ``numpy.ndarray`` (a data-read violation while capturing)."""
        return self._trace.read(self, ".numpy()")

    def item(self, *args: Any) -> Any:
        """The single element as a Python scalar, or with ``args`` the element at a flat index
        or an index tuple (``x.item(3)``, ``x.item(0, 1)``), as ``ndarray.item`` (a data read)."""
        if not args and getattr(self._trace, "python_nodes", None):  # (a kept number's
            kept = kept_numbers.item(self)                           # update: lifted)
            if kept is not None:
                return kept
        if args:  # (the element recorded, then read as t[i].item() is: a guard)
            index = args[0] if len(args) == 1 else args
            if type(index) is tuple:
                return self[index].item()
            return self.reshape(-1)[operator.index(index)].item()
        return self._trace.read(self, ".item()").item()

    def __float__(self) -> float:
        if getattr(self._trace, "python_nodes", None):  # (a kept number's update: lifted)
            kept = kept_numbers.stand_in(self, "float()")
            if kept is not None:
                return kept
        return float(self._trace.read(self, "float()"))

    def is_integer(self) -> bool:
        """Whether the NumPy scalar a 0-d tensor stands for is an integer (a data read).

        As ``x.sum().is_integer()`` eagerly (NumPy's integer and float scalars); while
        capturing it is a data read."""
        if self.ndim or not self._trace.holds_scalar(self) or self.dtype.kind not in "iuf":
            raise AttributeError(f"'Tensor' object has no attribute 'is_integer' (only the "
                                 f"NumPy integer and float scalars have it; this is a "
                                 f"{self.ndim}-d {self.dtype} tensor)")
        return bool(self._trace.read(self, ".is_integer()")[()].is_integer())

    def __int__(self) -> int:
        if getattr(self._trace, "python_nodes", None):  # (a kept number's update: lifted)
            kept = kept_numbers.stand_in(self, "int()")
            if kept is not None:
                return kept
        return int(self._trace.read(self, "int()"))

    def __index__(self) -> int:
        """A 0-d integer tensor as a Python int (``range(t)``, ``x[:t]``, ``np.zeros(t)``), as
        NumPy's integer scalars and 0-d arrays convert: a data read while capturing."""
        if self.ndim or self.dtype.kind not in "iu":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return operator.index(self._trace.read(self, "operator.index()")[()])

    def __bool__(self) -> bool:
        return bool(self._trace.read(self, "bool()"))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        value = self._trace.read(self, "np.array()" if copy else "np.asarray()")
        return value if dtype is None else value.astype(dtype)

    # --- NumPy protocols ------------------------------------------------------------------------

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method != "__call__":
            if method == "at":
                return _ufunc_at(ufunc, f"np.{ufunc.__name__}.at", inputs, kwargs)
            # reduce, accumulate, outer; reduceat refused with a rewrite
            return UFUNC_METHODS[0](ufunc, method, inputs, kwargs)
        out = kwargs.get("out")
        if out is not None:
            for o in out:
                if type(o) is not Tensor:
                    return _ufunc_into_ndarray(ufunc, inputs, kwargs)
            return _ufunc_into(ufunc, f"np.{ufunc.__name__}", inputs, kwargs)
        call = f"np.{ufunc.__name__}"
        if set(kwargs) == {"axis"} and ufunc is np.vecdot:
            # the core axis moved last: np.vecdot(a, b, axis=k) computes exactly that
            axis = operator.index(kwargs.pop("axis"))
            inputs = tuple(np.moveaxis(x, axis, -1) if np.ndim(x) else x for x in inputs)
        if kwargs:
            raise unsupported(call, inputs, f"keyword arguments {sorted(kwargs)} are not "
                                            f"supported; {_ufunc_keyword_fix(call, kwargs)}")
        if _scalar_operator(ufunc, inputs):
            return _scalar_base_call(ufunc, inputs)
        op = ops.ufunc_op(ufunc)
        if op is None:
            raise unsupported(call, inputs, "multi-output and generalized ufuncs are not "
                                            "supported")
        return apply(op, inputs, _EMPTY)

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        handler = HANDLED.get(func)
        if handler is None:
            name = function_name(func)
            raise unsupported(name, _flat(args, kwargs), refusal(name))
        return handler(*args, **kwargs)

    # --- methods -------------------------------------------------------------------------------

    @property
    def T(self) -> Tensor:  # noqa: N802
        """The transpose (axes reversed)."""
        return apply(_op("transpose"), (self,), {"axes": None})

    # The rest of ndarray's API (reshape, sum, astype, clip...) is attached by
    # capviz.numpy_api.methods, generated from the NumPy functions' handlers.

    def __getitem__(self, key: Any) -> Tensor:
        if type(key) is list or (type(key) is tuple and list in map(type, key)):
            key = tensor_key(key, lambda k: type(k) is Tensor)
        if type(key) is Tensor:
            if self._trace.records and key.dtype == np.bool_:  # x[mask] op= v (masked.py)
                return self._trace.select(self, key)
            return apply(_op("index"), (self, key))
        if isinstance(key, tuple) and any(type(k) is Tensor for k in key):
            if len(key) == 1:
                return self[key[0]]
            if any(type(k) is Tensor and k.dtype == np.bool_ for k in key):
                if self._trace.records and type(key[0]) is Tensor and key[0].dtype == np.bool_:
                    return self._trace.select_rows(self, key)  # x[mask, 1:] (masked.py)
                raise unsupported("tensor[...] with a boolean tensor inside a tuple index",
                                  (self, *key), tuple_index_fix(key))
            index, positions, tensors = split_key(key, lambda k: type(k) is Tensor,
                                                  normalize_index)
            result = apply(_op(READ), (self, *tensors), {"index": index, "tensors": positions})
        else:
            result = apply(_op("getitem"), (self,), {"index": normalize_index(key)})
        if result._alias is not None and _zero_d_array_in(key):
            # a 0-d ndarray in an index is an index array (recorded as the int it holds):
            # NumPy's advanced indexing, a copy, not a view
            return np.copy(result)
        return result

    # --- writes: NumPy's mutation; a capture records update ops (trace/mutation.py) ----

    def __setitem__(self, key: Any, value: Any) -> None:
        self._trace.setitem(self, key, value)

    def fill(self, value: Any) -> None:
        """Set every element to ``value`` (as ``ndarray.fill``: ``t[...] = value``)."""
        self._trace.setitem(self, Ellipsis, value)

    def sort(self, axis: int = -1, kind: Any = None, order: Any = None) -> None:
        """Sort in place along ``axis`` (as ``ndarray.sort``: ``np.sort``'s result written
        back into the tensor)."""
        if order is not None:
            raise unsupported("tensor.sort(order=...)", (self,), "order= needs a structured "
                                                                "dtype, which tensors do not have")
        self._trace.replace(self, np.sort(self, axis=axis, kind=kind))

    def partition(self, kth: Any, axis: int = -1, kind: str = "introselect",
                  order: Any = None) -> None:
        """Partition in place (as ``ndarray.partition``: ``np.partition``'s result written
        back)."""
        if order is not None:
            raise unsupported("tensor.partition(order=...)", (self,), "order= needs a "
                                                                     "structured dtype")
        self._trace.replace(self, np.partition(self, kth, axis=axis, kind=kind))

    def put(self, indices: Any, values: Any, mode: str = "raise") -> None:
        """Write ``values`` at flat ``indices`` (as ``ndarray.put``: ``np.put(t, ...)``)."""
        np.put(self, indices, values, mode=mode)

    __iadd__ = _inplace("+=")
    __isub__ = _inplace("-=")
    __imul__ = _inplace("*=")
    __itruediv__ = _inplace("/=")
    __ifloordiv__ = _inplace("//=")
    __imod__ = _inplace("%=")
    __ipow__ = _inplace("**=")
    __imatmul__ = _inplace("@=")
    __iand__ = _inplace("&=")
    __ior__ = _inplace("|=")
    __ixor__ = _inplace("^=")
    __ilshift__ = _inplace("<<=")
    __irshift__ = _inplace(">>=")

    __add__ = _binary("add")
    __radd__ = _binary("add", True)
    __sub__ = _binary("subtract")
    __rsub__ = _binary("subtract", True)
    __mul__ = _multiply(False)
    __rmul__ = _multiply(True)
    __truediv__ = _binary("divide")
    __rtruediv__ = _binary("divide", True)
    __floordiv__ = _binary("floor_divide")
    __rfloordiv__ = _binary("floor_divide", True)
    __mod__ = _binary("remainder")
    __rmod__ = _binary("remainder", True)
    __divmod__ = _binary("divmod")
    __rdivmod__ = _binary("divmod", True)
    __pow__ = _power
    __rpow__ = _rpower
    __round__ = _round
    __lshift__ = _binary("left_shift")
    __rlshift__ = _binary("left_shift", True)
    __rshift__ = _binary("right_shift")
    __rrshift__ = _binary("right_shift", True)
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
    __abs__ = _abs
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
