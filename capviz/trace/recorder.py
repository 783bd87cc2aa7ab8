"""The recording trace: records ops into a :class:`capviz.core.ir.Graph`, never computes.

One :class:`Recorder` serves one capture scope. It belongs to the execution context (the
:mod:`contextvars` context: a thread, or an asyncio task) that opened the scope: the context
variables of :mod:`capviz.trace.context` hold that context's open recorders and name scopes, so
a capture records nothing from another thread or task. Each change to them is one
``ContextVar.set`` of an immutable value, so an interrupt can never leave half a change behind.
Violations are recorded here as nodes; whether they raise is the scope's ``on_violation``
policy.
"""

from __future__ import annotations

import sys
import threading
from types import FrameType
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.host import NUMERIC_KINDS, at, dtype_refusal, host_copy, subclass_refusal
from capviz.core.errors import (
    CaptureError,
    CaptureViolation,
    DeviceMismatchError,
    ScopeClosedError,
    ShapeError,
    UnsupportedOperationError,
)
from capviz.core.ir import VIOLATION_LEVELS, Graph, Node, Violation
from capviz.core.layout import layout_key, same_bits
from capviz.core.own_weakrefs import OwnRef
from capviz.core.references import (
    changed_between_uses,
    describe_constant,
    fingerprint,
    note_copy,
    referenceable,
)
from capviz.core.source import (
    display_file,
    format_source,
    source_of,
    user_frame,
    user_source,
)
from capviz.core.violations import make_error, unsupported_message
from capviz.trace import (  # noqa: F401  (advanced_views registers its view rules)
    advanced_views,
    fold,
    guards,
    masked,
    mutation,
    sizes,
    state,
    views,
    zero_d,
)
from capviz.trace.context import NAME_SCOPE, RECORDERS
from capviz.trace.names import Namer
from capviz.trace.scopes import ScopeTracker
from capviz.trace.tensor import Tensor, Trace

# NumPy scalars are typed literals, like Python scalars: np.float32(0.5) keeps its dtype (NumPy 2
# promotes it strongly, a Python float weakly). Not long double: a file cannot hold it exactly.
_NUMPY_SCALARS = frozenset(
    t for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128,
                np.intc, np.uintc, np.longlong, np.ulonglong)
    if np.dtype(t).itemsize <= 16 and t not in (np.longdouble, np.clongdouble))
_LITERALS = frozenset((bool, int, float, complex, type(None))) | _NUMPY_SCALARS


_VIEWS = views.VIEWS  # op name -> how its result shares memory (views.py, advanced_views.py)
_getframe = sys._getframe

def note_origin(graph: Graph, node: Node, value: np.ndarray) -> np.ndarray:
    """Keep a weak reference to the array whose memory constant ``node`` was copied from: the
    base of ``value``'s views (``W[:3]`` is a temporary, ``W`` lives on), so a replay can
    refuse an input sharing that memory when it writes into the input (replay/aliases.py).
    Conservative: any part of the base counts, not only the part the view covers."""
    root = value
    while isinstance(root.base, np.ndarray):
        root = root.base
    graph.constant_origins[node.index] = OwnRef(root)
    return root


def zero_d_result(op: ops.Op, args: tuple, params: dict, result: Tensor) -> None:
    """Give a 0-d result the kind NumPy gives it (:mod:`capviz.trace.zero_d`): a 0-d
    array has a storage of its own (written in place, seen through every name), a NumPy scalar
    none (``s += 1`` rebinds), whichever an op's view rule decided."""
    if result._alias is None and op.name in ops.UFUNCS:
        return  # the usual case: a ufunc's 0-d result is a scalar
    kind = zero_d.returns_array(op, args, params)
    if kind is True and result._alias is None:
        node = result._data
        if op.name in views.READ_ONLY:  # of a NumPy scalar: NumPy's read-only array
            result._alias = views.read_only_array(node, op, params)
        else:
            result._alias = mutation.Alias(mutation.Storage(node), (), (node,), None)
    elif kind is False and result._alias is not None and op.name in _VIEWS:
        result._alias = None  # np.flip of a 0-d array: a scalar, sharing nothing


def describe_node(node: Node) -> str:
    what = node.op if node.kind == "op" else (node.name or node.kind)
    shape = ",".join(map(str, node.shape or ()))
    return f"%{node.index} ({what}, {node.dtype}[{shape}])"


class Recorder(Trace):
    """Records ops of one capture scope.

    Attributes:
        graph: the graph being recorded.
        device: the :class:`capviz.CaptureDevice` that opened the scope.
        on_violation: ``"raise"`` or ``"record"``.
        listener: an object with ``node_added(node)`` and ``violation(node)`` (the live view).
        raised: the first violation error raised in ``raise`` mode.
    """

    priority = 1
    records = True

    def __init__(self, graph: Graph, device: Any, on_violation: str = "raise") -> None:
        self.device = device
        self.name = getattr(device, "name", "capture")
        self.graph = graph
        self.thread = threading.get_ident()
        self.closed = False
        self.ended = False  # the scope has exited (closed stays True then; a violation in
        #                     "raise" mode closes the recorder while its scope is still open)
        self.on_violation = on_violation
        self.listener: Any = None
        self.raised: CaptureViolation | None = None
        self.next_draw: Any = None  # callable -> draw index, set by the scope
        self.seeded = True
        self.global_random = "generator"  # or "violation", "record": see CaptureScope
        self.last_draw = -1
        self.pending: list[tuple] = []  # violations reported from other threads (see hooks)
        self.global_states: Any = None  # global generators' states at scope entry (see hooks)
        self.made_generators: list = []  # generators made unseeded inside it (see hooks)
        self._warned_unseeded = False
        self._adopted: dict[int, tuple[Any, Node]] = {}
        self.known: dict[int, Any] = {}  # values computed from constants only (trace/fold.py)
        self.states: dict[int, state.State] = {}  # id(array) -> the state it is (trace/state.py)
        self.poisoned = 0  # states whose memory holds the poison now (trace/state.py)
        self.others: Any = None  # a second capture's planted arrays (trace/recapture.py)
        self.lifted: Any = None  # the states lifted into this capture (trace/lifted.py)
        self.twice = False  # capture() captures again: finite fills, not NaN (trace/state.py)
        self.inside_states: list[str] = []  # the names of the states whose arrays the
        #                                     capture made and dropped (trace/state.py)
        self.constant_of: dict[int, np.ndarray] = {}  # cv.constant(a)'s node -> a (mutation.py)
        self.held_constants: dict[int, list] = {}  # that node -> the tensors cv.constant(a)
        #                                           returned (mutation.follow_state)
        self.held_views: dict[int, list] = {}  # id(root) -> (tensor, view) of cv.constant(view)
        #                                        of a view of root (state._follow_views)
        self.mark_watch: Any = None  # called at the scope form's first NaN mark (capture.py:
        #                              trace/outside_writes.note_marked, which imports state)
        self.marked_outside: Any = None  # the scope form's outside arrays, noted at the
        #                                  first NaN mark (trace/outside_writes.note_marked)
        self.generators: dict[int, tuple[Any, Node]] = {}  # id -> (generator, its state node)
        self.python_nodes: set[int] = set()  # nodes that are Python numbers in eager code:
        #                                       draws of one (random.random()) and arithmetic
        #                                       on them only (trace/state.python_operands)
        self.layouts: dict[int, Any] = {}  # view node index -> stride stand-in
        self.layout_inputs: dict[int, frozenset] = {}  # view node index -> inputs its
        #                                                stand-in assumes C-contiguous
        self.examples: Any = None  # trace.examples.Examples once an input has an example
        self.symbolic = False  # a shape of the graph holds a size symbol (trace/sizes.py)
        self.resolved: dict = {}  # size symbol -> its guarded number (trace/guards.py)
        self.sized_results: list[list[Node]] = []  # results of each sized op (trace/sizes.py)
        self.scopes = ScopeTracker(user_frame(sys._getframe(1)), NAME_SCOPE.get())
        self.namer = Namer()
        # the code object of the last user frame met, its file as shown and its function
        self._user_code: Any = None
        self._user_file: str | None = None
        self._user_function: str | None = None
        # cv.capture's fn: its code, and its frame once an op is recorded from it (after fn
        # returns, the frame's line is the `return` that ran; dropped before the scope exits)
        self.entry_code: Any = None
        self.entry_frame: FrameType | None = None

    # --- state checks ------------------------------------------------------------------------

    def check_usable(self) -> None:
        """Raise unless this recorder may record now (open, and in its own context)."""
        if self.closed:
            raise self.closed_error()
        if self not in RECORDERS.get():
            where = "thread" if threading.get_ident() != self.thread else "asyncio task"
            raise CaptureError(
                f"a capture tensor of {self.name!r} was used from another {where}; a capture "
                f"records only the {where} that opened its scope (its contextvars context). "
                "Capture in that thread or task, or open a scope on another cv.CaptureDevice() "
                "here")

    def closed_error(self, node: Node | None = None) -> ScopeClosedError:
        if self.raised is not None:
            first = str(self.raised).splitlines()[0]
            err = ScopeClosedError(f"the capture scope of {self.name!r} was closed by a violation "
                                   f"and records nothing more: {first}")
            err.graph = self.graph
            return err
        what = f"tensor {describe_node(node)}" if node is not None else "this tensor"
        if node is not None and node.source is not None:
            what += f", recorded at {format_source(node.source)},"
        err = ScopeClosedError(
            f"capture scope is already complete: {what} belongs to a capture scope of "
            f"{self.name!r} that has ended; capture tensors cannot be used after their scope. "
            "Replay the graph (graph.replay) to compute values. A value the captured code "
            "kept (in a list, a dict or an attribute: eager NumPy leaves it there) is a "
            "capture tensor: return it as an output and take it from graph.replay(...)")
        err.graph = self.graph
        return err

    def settle_scopes(self) -> None:
        """Give the nodes their final scope paths and release the frames the scope tracker
        held (called once, when the scope ends)."""
        self.scopes.finish(self.graph.nodes)
        self.namer.release()

    def name_of(self, value: Any, frame: FrameType | None = None) -> str | None:
        """What the user called array ``value`` (a variable, or a path such as
        ``params["blocks"][3]["w"]``; see :mod:`capviz.trace.names`), seen from the user's
        ``frame`` (found here when not given)."""
        if frame is None:
            frame = user_frame(sys._getframe(1))
        return self.namer.find(value, self.namer.frames(frame, self.scopes.entry))

    def name_and_place(self, value: Any, frame: FrameType | None) -> tuple[str | None,
                                                                            tuple | None]:
        """:meth:`name_of` of ``value`` and where the user holds it under that name, for a
        replay to check it is still there (:meth:`capviz.trace.names.Namer.find_place`), from
        one lookup, seen from the user's ``frame``."""
        return self.namer.find_place(value, self.namer.frames(frame, self.scopes.entry))

    # --- recording ------------------------------------------------------------------------------

    def _append(self, kind: str, op: str | None, args: tuple, params: dict, shape: Any,
                dtype: Any, source: Any, name: str | None = None,
                frame: FrameType | None = None) -> Node:
        """Append a node; its scope comes from the user frame (``frame``, else found here)."""
        nodes = self.graph.nodes
        if frame is None:
            frame = user_frame(sys._getframe(1))
        scope = self.scopes.path(frame, NAME_SCOPE.get())
        node = Node(len(nodes), kind, op, args, params, shape, dtype, source, scope, name)
        nodes.append(node)
        if self.listener is not None:
            self.listener.node_added(node)
        return node

    def apply(self, op: ops.Op, args: tuple, params: dict) -> Any:
        """Record ``op`` on ``args``. Called by capviz code only (never the user's), so the
        user's frame is the caller's caller or above. This runs once per captured op: the
        usual case (one or two operands that are literals or this capture's tensors, one
        result, an op made in the same function as the one before) stays in this function."""
        if self.poisoned:  # a number NumPy computed from a written array (trace/state.py)
            for a in args:
                if type(a) is not Tensor and isinstance(a, state.FLOATS) and a != a:
                    state.check_operands(self, args)
                    break
        python = False
        if self.python_nodes:  # draws of Python numbers, promoted weakly (trace/state.py)
            args, python = state.python_operands(self, op, args, params)
            if python:  # (Python's own operator on the numbers an object keeps)
                op, params = state.kept_op(self, op, args, params)
        if self.closed or self not in RECORDERS.get():
            if self.closed:  # name the tensor used after its scope
                raise self.closed_error(next((a._data for a in args if type(a) is Tensor
                                              and a._trace is self), None))
            self.check_usable()
        if len(args) == 2:
            a, b = args
            ta = type(a)
            if ta is Tensor and a._trace is self and a._alias is None:
                a = a._data
            elif ta not in _LITERALS:
                a = self.operand(a)
            tb = type(b)
            if tb is Tensor and b._trace is self and b._alias is None:
                b = b._data
            elif tb not in _LITERALS:
                b = self.operand(b)
            conv: tuple = (a, b)
        elif len(args) == 1:
            a = args[0]
            if type(a) is Tensor and a._trace is self and a._alias is None:
                conv = (a._data,)
            else:
                conv = (self.operand(a),)
        else:
            conv = tuple([self.operand(a) for a in args])
        symbolic = self.symbolic and sizes.symbolic(conv)
        try:
            meta = sizes.meta(self, op, conv, params) if symbolic else op.meta(conv, params)
        except (ShapeError, UnsupportedOperationError) as err:  # NumPy's, or a rule's refusal
            raise self._located(err, user_source()) from None
        if op.multi or meta[1] is None or meta[1].kind not in NUMERIC_KINDS:
            self._check_dtype(op, meta)
        try:
            frame = _getframe(2)
        except ValueError:  # no caller's caller (capviz code started by C code)
            frame = None
        if frame is not None and frame.f_code is self._user_code:
            source = (self._user_file, frame.f_lineno, self._user_function)
        else:
            frame, source = self._user_source(frame)
        if op.multi:
            parent = self._append("op", op.name, conv, params, None, None, source,
                                  frame=frame)
            result: Any = tuple(Tensor(self._append("op", "unpack", (parent,), {"index": i},
                                                    shape, dt, source, frame=frame), self)
                                for i, (shape, dt) in enumerate(meta))
        else:  # _append, inlined
            scopes = self.scopes
            explicit = NAME_SCOPE.get()
            if frame is scopes.last_frame and explicit is scopes.last_explicit \
                    and frame is not None and frame.f_back is scopes.last_back:
                scope = scopes.last_path  # ScopeTracker.path's first test, inlined
            else:
                scope = scopes.path(frame, explicit)
            nodes = self.graph.nodes
            node = Node(len(nodes), "op", op.name, conv, params, meta[0], meta[1], source,
                        scope)
            nodes.append(node)
            if self.listener is not None:
                self.listener.node_added(node)
            result = Tensor(node, self)
        if symbolic:  # name the new sizes the rule derived (trace/sizes.py)
            sizes.settle(self, [t._data for t in result] if op.multi else [result._data])
        view = _VIEWS.get(op.name)
        if view is not None:  # the result shares its operand's memory, as in NumPy
            view(self, op, args, params, result)
        if not op.multi and not meta[0]:  # a 0-d result: an array or a scalar, as NumPy's
            zero_d_result(op, args, params, result)
        if python:  # Python arithmetic on draws of Python numbers: a Python number
            state.mark_python(self, result)
        return result

    def operand(self, a: Any) -> Any:
        """What the graph records for operand ``a``: a tensor's current node, a literal as it
        is, a node for an ndarray or another backend's tensor (:meth:`adopt_value`,
        :meth:`adopt`)."""
        ta = type(a)
        if ta is Tensor:
            if a._trace is not self:
                return self.adopt(a)
            if a._alias is None:
                return a._data
            return mutation.current(self, a)  # shares a buffer that may have been written since
        if ta in _LITERALS:
            return a
        return self.adopt_value(a)

    def _user_source(self, frame: FrameType | None) -> tuple[FrameType | None, Any]:
        """The user's frame at or above ``frame`` and its ``(file, line, function)``; the
        file and function are kept for the next op recorded from the same code."""
        frame = user_frame(frame)
        if frame is None:
            return None, None
        code = frame.f_code
        if code is not self._user_code:
            self._user_code = code
            self._user_file = display_file(code.co_filename)
            self._user_function = code.co_name
            if code is self.entry_code:
                self.entry_frame = frame
        return frame, (self._user_file, frame.f_lineno, self._user_function)

    def record(self, op: ops.Op, args: tuple, params: dict) -> Node:
        """Record ``op`` on operand nodes and literals (used by :mod:`.mutation`); NumPy's
        error, unchanged, when the operands do not fit."""
        if self.symbolic and sizes.symbolic(args):
            shape, dtype = sizes.meta(self, op, args, params)
        else:
            shape, dtype = op.meta(args, params)
        frame = user_frame(sys._getframe(1))
        node = self._append("op", op.name, args, params, shape, dtype, source_of(frame),
                            frame=frame)
        if self.symbolic:
            sizes.settle(self, [node])
        return node

    # --- writes (functionalized: see capviz.trace.mutation) ------------------------------

    def inplace(self, symbol: str, target: Tensor, other: Any) -> Tensor:
        return mutation.inplace(self, symbol, target, other)

    def setitem(self, target: Tensor, key: Any, value: Any) -> None:
        if type(value) is masked.MaskedUpdate:  # the store of x[mask] op= v
            masked.write(self, target, key, value)
            return
        mutation.setitem(self, target, key, value)

    def select(self, target: Tensor, mask: Tensor) -> Any:
        """``target[mask]`` for a boolean tensor: see :mod:`capviz.trace.masked`."""
        return masked.select(self, target, mask)

    def select_rows(self, target: Tensor, key: tuple) -> Any:
        """``target[mask, 1:]``: see :func:`capviz.trace.masked.select_rows`."""
        return masked.select_rows(self, target, key)

    # the function itself (no wrapper: a frame less on every `a += t` into an outside array)
    write_ufunc = mutation.write_ufunc

    def replace(self, target: Tensor, new: Tensor) -> Tensor:
        return mutation.replace(self, target, new)

    def _located(self, err: Exception, source: Any) -> ShapeError:
        loc = format_source(source)
        new = type(err)(f"{err} (at {loc})" if loc else str(err))  # ShapeError or a subclass
        new.graph = self.graph
        return new

    def adopt(self, tensor: Tensor) -> Node:
        """The node for a tensor of another backend met in this capture."""
        other = tensor._trace
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

    def adopt_value(self, value: Any) -> Any:
        """The operand for a non-tensor value met in this capture: a typed literal for a 0-d
        ndarray no write can reach (read-only: as for a NumPy scalar), else a constant node
        holding a snapshot of the value.

        An ndarray met again is the same node only while its bits are unchanged (one compare
        pass against the snapshot): a buffer refilled between two uses is recorded as its value
        at each use, as eager NumPy reads it.
        """
        if type(value) is np.ndarray:
            if value.ndim == 0 and value.dtype.type in _NUMPY_SCALARS and \
                    not value.flags.writeable:
                return self.seen(value)[()]
            # (a writeable one, or a view of such an array (self.a.reshape(()), hostile
            # review 8, finding 14), may be written later in the call: a constant, which the
            # state made at that write takes over (or refuses, naming the read), so the read
            # before it reads the state's value when each replay starts, not the capture's
            # number: census of stop 36, a 0-d running offset `y = x - self.b; self.b -= ...`
            if self.states:  # an array the capture wrote: its recorded value
                written = state.read(self, value)
                if written is not None:
                    return written
                if self.poisoned and state.poisoned(value):
                    state.refuse_poisoned(self, value)
            hit = self._adopted.get(id(value))
            if hit is not None:
                node = hit[1]
                if node.kind != "constant" or self._unchanged(node, value):
                    return node
            seen = self.seen(value)
            name, place = self.name_and_place(value, user_frame(sys._getframe(1)))
            if referenceable(value):  # kept as it is, with a fingerprint (core/references)
                node = self.constant(seen, name, user_source())
                self.graph.constant_fingerprints[node.index] = fingerprint(seen)
            else:
                node = self.constant(host_copy(seen), name, user_source())
            self._adopted[id(value)] = (value, node)
            root = note_origin(self.graph, node, value)
            if node.index not in self.graph.constant_fingerprints and seen is value:
                note_copy(self.graph, node.index, value, root)  # (checked if it outlives
            if seen is value:  # the call) and where the user holds it (a view's base: self.W
                held = value   # of self.W[0]): a replay refuses another array there
                if place is None and root is not value:
                    held, place = root, self.name_and_place(root, user_frame(_getframe(1)))[1]
                if place is not None:
                    self.graph.constant_places[node.index] = (*place, OwnRef(held))
            return node
        if isinstance(value, (str, bytes, dict, set)) or value is Ellipsis:
            raise TypeError(f"a {type(value).__name__} cannot be an operand of a tensor op")
        refusal = subclass_refusal(value)
        if refusal is not None:
            raise self.refuse(f"a {type(value).__name__} operand", refusal)
        return self.constant(host_copy(value), None, user_source())

    def refuse(self, call: str, reason: str) -> UnsupportedOperationError:
        """Record an ``unsupported_op`` violation whose message is ``reason`` at the user's
        line; return its error for the caller to raise (``raise`` mode raises it here)."""
        self.check_usable()
        source = user_source()
        self.violation("unsupported_op", call, f"{reason}{at(source)}", source)
        return make_error(self.graph.violation_records[-1], self.graph)

    def refuse_here(self, call: str, reason: str) -> UnsupportedOperationError:
        """:meth:`refuse` with the message of the situation table (at most three lines: what
        the user's line wrote, ``reason``'s why, ``reason``'s fix after its ``"; "``)."""
        self.check_usable()
        source = user_source()
        message = unsupported_message(call, source, reason, user_frame(sys._getframe(1)))
        self.violation("unsupported_op", call, message, source)
        return make_error(self.graph.violation_records[-1], self.graph)

    def _check_dtype(self, op: ops.Op, meta: Any) -> None:
        """Refuse an op whose result is not a number or a boolean (``x.astype(object)``)."""
        results = meta if op.multi else (meta,)
        for _, dtype in results:
            if dtype is not None and np.dtype(dtype).kind not in NUMERIC_KINDS:
                what = f"x.astype({dtype})" if op.name == "astype" else op.name
                raise self.refuse(what, dtype_refusal(np.dtype(dtype), f"the result of {what}"))

    def _unchanged(self, node: Node, value: np.ndarray) -> bool:
        """Whether ndarray ``value`` still holds what constant ``node`` recorded of it. A
        constant kept by reference (``value`` itself) that changed is refused here: its
        earlier value, which the earlier ops read, is gone."""
        graph = self.graph
        value = self.seen(value)
        kept = graph.constant_fingerprints.get(node.index)
        if kept is None:
            kept = graph.constant_values[node.index]
            return layout_key(kept) == layout_key(value) and same_bits(kept, value)
        if fingerprint(value) == kept:
            return True
        what = describe_constant(graph, node.index)
        raise self.refuse(f"array {what}", changed_between_uses(what))

    def seen(self, value: np.ndarray) -> np.ndarray:
        """The values capviz reads of ndarray ``value``: in a second capture, the first
        capture's where ``value`` is (a view of) an array given other values
        (:meth:`capviz.trace.recapture.OtherValues.seen`); else ``value``."""
        return value if self.others is None else self.others.seen(value)

    def constant(self, array: np.ndarray, name: str | None, source: Any) -> Node:
        """Record a constant node holding ``array`` (already a private copy)."""
        self.check_usable()
        node = self._append("constant", None, (), {}, tuple(array.shape), array.dtype, source,
                            name)
        self.graph.constant_values[node.index] = array
        return node

    def input(self, name: str, shape: tuple, dtype: np.dtype, source: Any,
              stands_for: Any = None) -> Tensor:
        """Record a declared input (``stands_for``: an eager tensor or array it replaces).

        The graph assumes the input C-contiguous, whatever the example's layout: the example
        gives the shape and dtype only (see :mod:`capviz.trace.views`).
        """
        self.check_usable()
        refusal = subclass_refusal(stands_for)
        if refusal is not None:
            raise self.refuse(f"input {name!r}", refusal)
        if np.dtype(dtype).kind not in NUMERIC_KINDS:
            raise self.refuse(f"input {name!r}", dtype_refusal(np.dtype(dtype), f"input {name!r}"))
        params = {"scalar": True} if isinstance(stands_for, np.generic) else {}
        node = self._append("input", None, (), params, tuple(shape), np.dtype(dtype), source,
                            name)
        if stands_for is not None:
            self._adopted[id(stands_for)] = (stands_for, node)
        return Tensor(node, self)

    def output(self, node: Node, name: str, source: Any) -> Node:
        """Append an output node returning ``node``."""
        return self._append("output", None, (node,), {}, node.shape, node.dtype, source, name)

    def random(self, op: ops.Op, params: dict) -> Tensor:
        """Record a random op (its draw index comes from the scope's rng device)."""
        self.check_usable()
        if self.pending:
            self.flush_pending(raise_now=True)
        draw = self.next_draw()
        if draw <= self.last_draw:  # the device was reseeded meanwhile: never repeat a stream
            draw = self.last_draw + 1
        self.last_draw = draw
        params = dict(params, draw=draw)
        shape, dtype = op.meta((), params)
        source = user_source()
        node = self._append("op", op.name, (), params, shape, dtype, source)
        if not self.seeded and not self._warned_unseeded:
            from capviz.core.violations import unseeded_message

            self._warned_unseeded = True
            self.violation("unseeded_random", op.name, unseeded_message(op.name, source),
                           source=source)
        return Tensor(node, self)

    # --- violations -------------------------------------------------------------------------

    def violation(self, kind: str, call: str, message: str, source: Any = None,
                  raise_now: bool = True, target: Node | None = None) -> Violation:
        """Record a violation node; raise it when it is an error and the policy is ``raise``
        (with ``raise_now=False`` the error is only kept on ``raised`` and the scope closed).
        ``target``: the tensor a data read read (the graph links it with a ``reads`` edge)."""
        if source is None:
            source = user_source()
        level = VIOLATION_LEVELS[kind]
        graph = self.graph
        params = {"level": level, "call": call, "message": message}
        if target is not None:
            params["target"] = target.index
        node = Node(len(graph.nodes), "violation", kind, (), params, None, None, source,
                    self.scopes.path(user_frame(sys._getframe(1)), NAME_SCOPE.get()))
        graph.nodes.append(node)
        record = Violation(kind, level, message, call, source, node.index)
        graph.violation_records.append(record)
        if self.listener is not None:
            self.listener.violation(node)
        if level == "warning":
            import warnings

            from capviz.core.errors import UnseededRandomWarning

            warnings.warn(message, UnseededRandomWarning, stacklevel=3)
        elif self.on_violation == "raise":
            err = make_error(record, graph)
            if self.raised is None:
                self.raised = err
            self.closed = True
            if raise_now:
                raise err
        return record

    def flush_pending(self, raise_now: bool = False) -> None:
        """Record the violations other threads reported for this capture (a reseed of its
        device), here in its own thread and program order."""
        while self.pending:
            kind, call, message, source = self.pending.pop(0)
            self.violation(kind, call, message, source, raise_now=raise_now)

    def unsupported(self, call: str, reason: str = "") -> UnsupportedOperationError:
        self.check_usable()
        source = user_source()
        message = unsupported_message(call, source, reason)
        self.violation("unsupported_op", call, message, source)  # raises in "raise" mode
        err = make_error(self.graph.violation_records[-1], self.graph)
        return err  # record mode: the op has no result, so the call still fails

    def state_target(self, array: np.ndarray, call: str, frame: FrameType | None = None
                     ) -> Tensor:
        """The capture tensor a write into the outside ndarray ``array`` writes (the array
        becomes a state of the graph: :mod:`capviz.trace.state`); ``frame``: the user's frame
        making the write, when the caller has it."""
        if self.closed or self not in RECORDERS.get():
            self.check_usable()
        return state.target(self, array, call, frame)

    def read(self, tensor: Tensor, call: str) -> np.ndarray:
        """A value read: with examples, the example's value and a guard; else a violation
        (:mod:`capviz.trace.guards`). NumPy storing ``t`` into an ndarray (``a[idx] = t``)
        is a write into a state instead (:mod:`capviz.trace.state`)."""
        stored = state.store(self, tensor, call)
        if stored is not None:
            return stored
        return guards.read(self, tensor, call)

    def resolve_size(self, symbol: Any) -> int:
        """The number of size ``symbol`` where code needs an int (a guard)."""
        return guards.resolve(self, symbol)

    def sized(self, op: ops.Op, args: tuple, params: dict, call: str) -> Any:
        """Record an op whose result length depends on the data (``call``: what the user
        called): a new size symbol with examples, refused by name without."""
        self.check_usable()
        if self.examples is None:
            raise self.unsupported(call, sizes.UNSIZED)
        result = self.apply(op, args, params)
        nodes = [t._data for t in result] if op.multi else [result._data]
        sizes.settle(self, nodes, sizes.twin(self, nodes))
        return result

    def holds_scalar(self, tensor: Tensor) -> bool:
        return mutation.is_numpy_scalar(tensor)

    def describe(self, tensor: Tensor) -> str:
        state = "closed " if self.closed else ""
        return f"<{state}capture tensor {describe_node(tensor._data)} of {self.name!r}>"
