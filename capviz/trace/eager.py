"""The eager trace: runs each op at once on a replay backend's namespace (NumPy, or CuPy for a
GPU): the registry's :class:`~capviz.backends.registry.Backend` binds the ops and moves values,
so nothing here names an engine."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends import registry
from capviz.core.errors import DeviceMismatchError
from capviz.trace.tensor import Tensor, Trace

_INPLACE = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul,
            "/=": operator.itruediv, "//=": operator.ifloordiv, "%=": operator.imod,
            "**=": operator.ipow, "@=": operator.imatmul, "&=": operator.iand,
            "|=": operator.ior, "^=": operator.ixor, "<<=": operator.ilshift,
            ">>=": operator.irshift}


class EagerTrace(Trace):
    """Runs ops on a replay backend's namespace and wraps results in tensors.

    Attributes:
        backend: the :class:`capviz.backends.registry.Backend` that binds ops and moves values.
        xp: its array namespace.
        name: its name (``numpy`` or ``cupy``).
        device: the :class:`capviz.Device` that owns this backend.
    """

    priority = 0

    def __init__(self, backend: registry.Backend, device: Any = None) -> None:
        self.backend = backend
        self.xp = backend.namespace()
        self.name = backend.name
        self.device = device
        self._bound: dict[str, Any] = {}  # op name -> its callable (ops other than random)

    @property
    def engine(self) -> registry.Backend:
        """:attr:`backend`, under the name ``cv.Device(...).backend.engine`` had before the
        eager trace was named a trace."""
        return self.backend

    def bind(self, op: ops.Op) -> Any:
        """``op``'s callable on this backend (kept per op)."""
        fn = self._bound.get(op.name)
        if fn is None:
            fn = self.backend.bind(op)
            if not op.random:
                self._bound[op.name] = fn
        return fn

    def copy_of(self, data: Any) -> Any:
        """A new array of this backend holding ``data``'s values (its layout kept)."""
        if self.backend.is_native(data):
            return self.xp.array(data, copy=True)
        other = registry.owner(data)
        host = other.to_host(data) if other is not None else data
        return self.backend.from_host(np.array(host, copy=True))

    def to_array(self, value: Any) -> Any:
        """``value`` as an array of this backend (another backend's array goes through the
        host: a CuPy array meets a NumPy device as its copy)."""
        backend = self.backend
        if backend.is_native(value):
            return value
        other = registry.owner(value)
        if other is not None:
            value = other.to_host(value)
        return backend.from_host(value)

    def unwrap(self, a: Any) -> Any:
        if type(a) is Tensor:
            if a._trace is not self:
                if isinstance(a._trace, EagerTrace) and a._trace.backend is self.backend:
                    return a._data
                raise DeviceMismatchError(
                    f"a tensor on device {a._trace.name!r} met a tensor on {self.name!r} in "
                    "one op; move it first with cv.tensor(t.numpy(), device=...)")
            return a._data
        if isinstance(a, ops.SCALAR_TYPES) or a is None:
            return a
        return self.to_array(a)

    def wrap(self, value: Any) -> Tensor:
        return Tensor(self.xp.asarray(value), self)

    def apply(self, op: ops.Op, args: tuple, params: dict) -> Any:
        fn = self.bind(op)
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
        self.bind(op)(*[self.unwrap(a) for a in inputs], out=out._data, **extra)
        return out

    def replace(self, target: Tensor, new: Tensor) -> Tensor:
        target._data[...] = self.unwrap(new)
        return target

    def random(self, op: ops.Op, seed: int, params: dict) -> Tensor:
        """Draw with a random op (``seed`` and ``params['draw']`` fix the values)."""
        return self.wrap(self.bind(op)(seed, **params))

    def read(self, tensor: Tensor, call: str) -> np.ndarray:
        return self.backend.to_host(tensor._data)

    def describe(self, tensor: Tensor) -> str:
        body = np.array2string(self.read(tensor, "repr"), separator=", ", prefix="tensor(")
        return f"tensor({body}, dtype={tensor.dtype}, device={self.name!r})"
