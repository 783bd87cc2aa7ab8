"""Whether NumPy gives a 0-d array or a NumPy scalar for an op's 0-d result.

The difference is visible to unchanged code: a 0-d array is mutable, so ``y = np.where(c, x,
0.0); y0 = y; y += 1`` changes ``y0`` too, while a scalar (``x.sum()``, ``np.add(x, 1)`` of a
0-d ``x``) is immutable and ``s += 1`` rebinds ``s``. NumPy decides per function, not by a rule
capture could state: ufuncs and reductions give scalars; ``copy``, ``astype``, ``where``, the
``*_like`` functions, ``roll``, ``tensordot``, ``isin`` give 0-d arrays; ``np.flip`` of a 0-d
array gives a scalar although it is a view op elsewhere. So capture asks NumPy: the op's own
NumPy function runs once on stand-ins of the operands (zero-strided, no memory), and the answer
is kept per op, params, and each operand's rank, dtype and kind (a NumPy scalar or an array:
``np.float64(1).T`` is a scalar, ``np.zeros(()).T`` an array).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from capviz import ops
from capviz.core.symbols import plain
from capviz.trace.tensor import Tensor

_answers: dict[Any, bool | None] = {}
_lock = threading.Lock()


def returns_array(op: ops.Op, args: tuple, params: dict) -> bool | None:
    """True when NumPy's function for ``op`` returns a 0-d ndarray on operands like ``args``
    (the call's operands: tensors, ndarrays, literals), False for a NumPy scalar, ``None`` when
    that cannot be asked (the stand-in call failed)."""
    if op.name in ops.UFUNCS or op.random or op.multi:
        return False if op.name in ops.UFUNCS else None
    key = _key(op, args, params)
    if key is not None:
        answer = _answers.get(key, _MISSING)
        if answer is not _MISSING:
            return answer
    answer = _ask(op, args, params)
    if key is not None:
        with _lock:
            if len(_answers) > 4096:
                _answers.clear()
            _answers[key] = answer
    return answer


_MISSING = object()


def _key(op: ops.Op, args: tuple, params: dict) -> Any:
    try:
        key = (op.name, tuple(sorted(params.items())), tuple(_signature(a) for a in args))
        hash(key)
    except TypeError:  # a list or an array among the params: asked every time
        return None
    return key


def _signature(value: Any) -> Any:
    if type(value) is Tensor:
        return (value.ndim, value.dtype.char, _scalar(value))
    if isinstance(value, np.ndarray):
        return ("ndarray", value.ndim, value.dtype.char)
    if isinstance(value, (list, tuple)):
        return tuple(_signature(v) for v in value)
    return type(value)


def _scalar(tensor: Tensor) -> bool:
    """Whether the tensor stands for a NumPy scalar (``x[1]``, ``x.sum()``), not an array."""
    return not tensor.ndim and tensor._trace.holds_scalar(tensor)


SMALL = 1 << 16
"""Operands of at most this many elements in all are stood in for at their shapes; larger ones
at their shapes with every axis longer than 2 cut to 2 (equal axes stay equal, so operands
that broadcast still do), so asking costs no more than a tiny call (a determinant of a
(4096, 4096) operand would cost seconds)."""


def _arrays(value: Any) -> list:
    if type(value) is Tensor or isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _arrays(v)]
    return []


def _stand_in(value: Any, small: bool) -> Any:
    """A zero-strided array of the operand's dtype and shape (a NumPy scalar for a tensor
    standing for one: NumPy's answer differs, ``np.float64(1).T`` is a scalar)."""
    if type(value) is Tensor and _scalar(value):
        return value.dtype.type(0)
    if type(value) is Tensor or isinstance(value, np.ndarray):
        shape = plain(value.shape)  # a size symbol stands for a length > 1 here
        shape = shape if small else tuple(min(size, 2) for size in shape)
        return np.broadcast_to(np.zeros((), value.dtype), shape)
    if isinstance(value, (list, tuple)):
        return type(value)(_stand_in(v, small) for v in value)
    return value


def _ask(op: ops.Op, args: tuple, params: dict) -> bool | None:
    small = sum(int(np.prod(plain(a.shape))) for a in _arrays(args)) <= SMALL
    try:
        fn = op.bind(np)
        with np.errstate(all="ignore"):
            result = fn(*[_stand_in(a, small) for a in args], **params)
    except Exception:  # any failure: no answer, the default stays
        return None
    if np.ndim(result) != 0:
        return None
    return isinstance(result, np.ndarray)
