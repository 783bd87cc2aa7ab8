"""Eager backends: run each op at once on an array namespace (NumPy, or CuPy for a GPU)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from capviz import ops
from capviz.errors import DeviceMismatchError
from capviz.tensor import Backend, Tensor

_INPLACE = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul,
            "/=": operator.itruediv, "//=": operator.ifloordiv, "%=": operator.imod,
            "**=": operator.ipow, "@=": operator.imatmul, "&=": operator.iand,
            "|=": operator.ior, "^=": operator.ixor, "<<=": operator.ilshift,
            ">>=": operator.irshift}


class EagerBackend(Backend):
    """Runs ops on the array namespace ``xp`` and wraps results in tensors.

    Attributes:
        xp: the array namespace (``numpy`` or ``cupy``).
        device: the :class:`capviz.Device` that owns this backend.
    """

    priority = 0

    def __init__(self, xp: Any, device: Any = None) -> None:
        self.xp = xp
        self.name = xp.__name__
        self.device = device

    def to_array(self, value: Any) -> Any:
        """``value`` as an array of this namespace (host arrays are copied to the device)."""
        xp = self.xp
        if xp is np:
            if hasattr(value, "__cuda_array_interface__") and hasattr(value, "get"):
                return value.get()
            return np.asarray(value)
        return xp.asarray(value)

    def unwrap(self, a: Any) -> Any:
        if type(a) is Tensor:
            if a._backend is not self:
                if isinstance(a._backend, EagerBackend) and a._backend.xp is self.xp:
                    return a._data
                raise DeviceMismatchError(
                    f"a tensor on device {a._backend.name!r} met a tensor on {self.name!r} in "
                    "one op; move it first with cv.tensor(t.numpy(), device=...)")
            return a._data
        if isinstance(a, ops.SCALAR_TYPES) or a is None:
            return a
        return self.to_array(a)

    def wrap(self, value: Any) -> Tensor:
        return Tensor(self.xp.asarray(value), self)

    def apply(self, op: ops.Op, args: tuple, params: dict) -> Any:
        fn = op.bind(self.xp)
        out = fn(*[self.unwrap(a) for a in args], **params)
        if op.multi:
            return tuple(self.wrap(o) for o in out)
        return self.wrap(out)

    # --- writes: the array's own in-place operations ------------------------------------------

    def inplace(self, symbol: str, target: Tensor, other: Any) -> Tensor:
        target._data = _INPLACE[symbol](target._data, self.unwrap(other))
        return target

    def setitem(self, target: Tensor, key: Any, value: Any) -> None:
        if isinstance(key, tuple):
            key = tuple(self.unwrap(k) if type(k) is Tensor else k for k in key)
        elif type(key) is Tensor:
            key = self.unwrap(key)
        target._data[key] = self.unwrap(value)

    def write_ufunc(self, op: ops.Op, inputs: tuple, out: Tensor, where: Any) -> Tensor:
        extra = {} if where is True else {"where": self.unwrap(where)}
        op.bind(self.xp)(*[self.unwrap(a) for a in inputs], out=out._data, **extra)
        return out

    def replace(self, target: Tensor, new: Tensor) -> Tensor:
        target._data[...] = self.unwrap(new)
        return target

    def random(self, op: ops.Op, seed: int, params: dict) -> Tensor:
        """Draw with a random op (``seed`` and ``params['draw']`` fix the values)."""
        return self.wrap(op.bind(self.xp)(seed, **params))

    def read(self, tensor: Tensor, call: str) -> np.ndarray:
        data = tensor._data
        if self.xp is np:
            return np.asarray(data)
        return self.xp.asnumpy(data)

    def describe(self, tensor: Tensor) -> str:
        body = np.array2string(self.read(tensor, "repr"), separator=", ", prefix="tensor(")
        return f"tensor({body}, dtype={tensor.dtype}, device={self.name!r})"
