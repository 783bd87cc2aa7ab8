"""The capture backend: records ops into a :class:`capviz.ir.CapturedGraph`, never computes.

One :class:`Recorder` serves one capture scope. It belongs to the thread that opened the scope;
``STATE`` (thread-local) holds that thread's active recorders and name scopes, so a capture in one
thread records nothing from another. Violations are recorded here as nodes; whether they raise
is the scope's ``on_violation`` policy.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import numpy as np

from capviz import ops
from capviz.errors import (
    CaptureError,
    CaptureViolation,
    DeviceMismatchError,
    ScopeClosedError,
    ShapeError,
    UnsupportedOperationError,
)
from capviz.ir import VIOLATION_LEVELS, CapturedGraph, Node, Violation, format_source
from capviz.tensor import Backend, Tensor
from capviz.violations import make_error, unsupported_message

_LITERALS = frozenset((bool, int, float, complex, type(None)))
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SKIP = (_PACKAGE_DIR, os.path.dirname(os.path.abspath(np.__file__)) + os.sep, "<frozen ")
_USER_FILES = frozenset({os.path.join(_PACKAGE_DIR, "models.py")})  # capviz's own example code


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.recorders: list[Recorder] = []
        self.name_scopes: list[str] = []
        self.scope_path = ""


STATE = _ThreadState()


def active() -> Recorder | None:
    """The innermost recorder active in the current thread, or ``None``."""
    recorders = STATE.recorders
    return recorders[-1] if recorders else None


def is_capturing() -> bool:
    """True inside an active capture scope of the current thread."""
    return bool(STATE.recorders)


def user_source() -> tuple | None:
    """``(file, line, function)`` of the innermost frame outside capviz and NumPy."""
    f = sys._getframe(1)
    skip = _SKIP
    while f is not None and f.f_code.co_filename.startswith(skip) \
            and f.f_code.co_filename not in _USER_FILES:
        f = f.f_back
    if f is None:
        return None
    code = f.f_code
    return (code.co_filename, f.f_lineno, code.co_name)


def push_name_scope(name: str) -> None:
    STATE.name_scopes.append(name)
    STATE.scope_path = "/".join(STATE.name_scopes)


def pop_name_scope() -> None:
    STATE.name_scopes.pop()
    STATE.scope_path = "/".join(STATE.name_scopes)


def host_array(value: Any) -> np.ndarray:
    """A host copy of an array-like value (CuPy arrays are copied to the host)."""
    if hasattr(value, "__cuda_array_interface__") and hasattr(value, "get"):
        return value.get()
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError("object arrays cannot be recorded (they could hold anything)")
    return arr.copy(order="K")


def describe_node(node: Node) -> str:
    what = node.op if node.kind == "op" else (node.name or node.kind)
    shape = ",".join(map(str, node.shape or ()))
    return f"%{node.index} ({what}, {node.dtype}[{shape}])"


class Recorder(Backend):
    """Records ops of one capture scope.

    Attributes:
        graph: the graph being recorded.
        device: the :class:`capviz.CaptureDevice` that opened the scope.
        on_violation: ``"raise"`` or ``"record"``.
        listener: an object with ``node_added(node)`` and ``violation(node)`` (the live view).
        raised: the first violation error raised in ``raise`` mode.
    """

    priority = 1

    def __init__(self, device: Any, on_violation: str = "raise") -> None:
        self.device = device
        self.name = getattr(device, "name", "capture")
        self.graph = CapturedGraph()
        self.thread = threading.get_ident()
        self.closed = False
        self.on_violation = on_violation
        self.listener: Any = None
        self.raised: CaptureViolation | None = None
        self.next_draw: Any = None  # callable -> draw index, set by the scope
        self.seeded = True
        self._warned_unseeded = False
        self._adopted: dict[int, tuple[Any, Node]] = {}

    # --- state checks ------------------------------------------------------------------------

    def check_usable(self) -> None:
        """Raise unless this recorder may record now (open, and in its own thread)."""
        if self.closed:
            raise self.closed_error()
        if threading.get_ident() != self.thread:
            raise CaptureError(
                f"a capture tensor of {self.name!r} was used from another thread; a capture "
                "records only the thread that opened its scope")

    def closed_error(self, node: Node | None = None) -> ScopeClosedError:
        if self.raised is not None:
            first = str(self.raised).splitlines()[0]
            err = ScopeClosedError(f"the capture scope of {self.name!r} was closed by a violation "
                                   f"and records nothing more: {first}")
            err.graph = self.graph
            return err
        what = f"tensor {describe_node(node)}" if node is not None else "this tensor"
        err = ScopeClosedError(
            f"capture scope is already complete: {what} belongs to a capture scope of "
            f"{self.name!r} that has ended; capture tensors cannot be used after their scope. "
            "Replay the graph (graph.replay) to compute values.")
        err.graph = self.graph
        return err

    # --- recording ------------------------------------------------------------------------------

    def _append(self, kind: str, op: str | None, args: tuple, params: dict, shape: Any,
                dtype: Any, source: Any, name: str | None = None) -> Node:
        nodes = self.graph.nodes
        node = Node(len(nodes), kind, op, args, params, shape, dtype, source,
                    STATE.scope_path, name)
        nodes.append(node)
        if self.listener is not None:
            self.listener.node_added(node)
        return node

    def apply(self, op: ops.Op, args: tuple, params: dict) -> Any:
        if self.closed or self.thread != threading.get_ident():
            self.check_usable()
        conv = []
        for a in args:
            ta = type(a)
            if ta is Tensor:
                conv.append(a._data if a._backend is self else self.adopt(a))
            elif ta in _LITERALS:
                conv.append(a)
            else:
                conv.append(self.adopt_value(a))
        try:
            meta = op.meta(conv, params)
        except ShapeError as err:
            raise self._located(err, user_source()) from None
        source = user_source()
        if op.multi:
            parent = self._append("op", op.name, tuple(conv), params, None, None, source)
            return tuple(Tensor(self._append("op", "unpack", (parent,), {"index": i}, shape, dt,
                                             source), self)
                         for i, (shape, dt) in enumerate(meta))
        return Tensor(self._append("op", op.name, tuple(conv), params, meta[0], meta[1], source),
                      self)

    def _located(self, err: Exception, source: Any) -> ShapeError:
        loc = format_source(source)
        new = ShapeError(f"{err} (at {loc})" if loc else str(err))
        new.graph = self.graph
        return new

    def adopt(self, tensor: Tensor) -> Node:
        """The node for a tensor of another backend met in this capture."""
        other = tensor._backend
        if isinstance(other, Recorder):
            if other.closed:
                raise other.closed_error(tensor._data)
            raise DeviceMismatchError(
                f"tensor {describe_node(tensor._data)} of capture device {other.name!r} met a "
                f"tensor of capture device {self.name!r} in one op; a graph records one device")
        hit = self._adopted.get(id(tensor))
        if hit is not None:
            return hit[1]
        node = self._append("input", None, (), {"declared": False}, tensor.shape, tensor.dtype,
                            user_source())
        self._adopted[id(tensor)] = (tensor, node)
        return node

    def adopt_value(self, value: Any) -> Node:
        """The constant node for an ndarray, NumPy scalar or other array met in this capture."""
        hit = self._adopted.get(id(value))
        if hit is not None:
            return hit[1]
        if isinstance(value, (str, bytes, dict, set)) or value is Ellipsis:
            raise TypeError(f"a {type(value).__name__} cannot be an operand of a tensor op")
        node = self.constant(host_array(value), None, user_source())
        if isinstance(value, np.ndarray):
            self._adopted[id(value)] = (value, node)
        return node

    def constant(self, array: np.ndarray, name: str | None, source: Any) -> Node:
        """Record a constant node holding ``array`` (already a private copy)."""
        self.check_usable()
        node = self._append("constant", None, (), {}, tuple(array.shape), array.dtype, source,
                            name)
        self.graph.constant_values[node.index] = array
        return node

    def input(self, name: str, shape: tuple, dtype: np.dtype, source: Any,
              stands_for: Any = None) -> Tensor:
        """Record a declared input (``stands_for``: an eager tensor or array it replaces)."""
        self.check_usable()
        node = self._append("input", None, (), {}, tuple(shape), np.dtype(dtype), source, name)
        if stands_for is not None:
            self._adopted[id(stands_for)] = (stands_for, node)
        return Tensor(node, self)

    def output(self, node: Node, name: str, source: Any) -> Node:
        """Append an output node returning ``node``."""
        return self._append("output", None, (node,), {}, node.shape, node.dtype, source, name)

    def random(self, op: ops.Op, params: dict) -> Tensor:
        """Record a random op (its draw index comes from the scope's rng device)."""
        self.check_usable()
        params = dict(params, draw=self.next_draw())
        shape, dtype = op.meta((), params)
        source = user_source()
        node = self._append("op", op.name, (), params, shape, dtype, source)
        if not self.seeded and not self._warned_unseeded:
            from capviz.violations import unseeded_message

            self._warned_unseeded = True
            self.violation("unseeded_random", op.name, unseeded_message(op.name, source),
                           source=source)
        return Tensor(node, self)

    # --- violations -------------------------------------------------------------------------

    def violation(self, kind: str, call: str, message: str, source: Any = None) -> Violation:
        """Record a violation node; raise it when it is an error and the policy is ``raise``."""
        if source is None:
            source = user_source()
        level = VIOLATION_LEVELS[kind]
        graph = self.graph
        node = Node(len(graph.nodes), "violation", kind, (),
                    {"level": level, "call": call, "message": message}, None, None, source,
                    STATE.scope_path)
        graph.nodes.append(node)
        record = Violation(kind, level, message, call, source, node.index)
        graph.violation_records.append(record)
        if self.listener is not None:
            self.listener.violation(node)
        if level == "warning":
            import warnings

            from capviz.errors import UnseededRandomWarning

            warnings.warn(message, UnseededRandomWarning, stacklevel=3)
        elif self.on_violation == "raise":
            err = make_error(record, graph)
            if self.raised is None:
                self.raised = err
            self.closed = True
            raise err
        return record

    def unsupported(self, call: str, reason: str = "") -> UnsupportedOperationError:
        self.check_usable()
        source = user_source()
        message = unsupported_message(call, source, reason)
        self.violation("unsupported_op", call, message, source)  # raises in "raise" mode
        err = make_error(self.graph.violation_records[-1], self.graph)
        return err  # record mode: the op has no result, so the call still fails

    def read(self, tensor: Tensor, call: str) -> np.ndarray:
        self.check_usable()
        node = tensor._data
        if node.kind == "constant":
            return self.graph.constant_values[node.index].copy()
        from capviz.violations import data_read_message

        source = user_source()
        self.violation("data_read", call, data_read_message(call, describe_node(node), source),
                       source)
        return np.zeros(node.shape, dtype=node.dtype)  # record mode: a placeholder value

    def describe(self, tensor: Tensor) -> str:
        state = "closed " if self.closed else ""
        return f"<{state}capture tensor {describe_node(tensor._data)} of {self.name!r}>"
