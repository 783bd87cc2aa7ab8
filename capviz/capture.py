"""Capture scopes and their boundaries; the function form ``cv.capture`` is
:mod:`capviz.capture_fn`.

``CaptureDevice`` opens capture scopes (eager devices are in :mod:`capviz.devices`). A scope owns
one :class:`Recorder`, checks the graph's boundaries when it exits (as burn's capture does), and
always leaves its graph on ``scope.graph``, also when the body raised.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import sys
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from capviz.backends.host import host_copy
from capviz.core import references
from capviz.core.errors import (
    BoundaryError,
    CapvizError,
    DuplicateBoundaryError,
    InvalidInputError,
    InvalidOutputError,
    ScopeAlreadyActiveError,
    ScopeClosedError,
    UndeclaredInputError,
    UnknownBoundaryError,
)
from capviz.core.ir import Node, Violation
from capviz.core.references import note_copy
from capviz.core.source import format_source, user_frame, user_source
from capviz.core.violations import make_error, seed_message
from capviz.devices import Device, default_device
from capviz.graph import CapturedGraph
from capviz.randomness import backstop, creation, generator_watch, generators, hooks, memoised
from capviz.trace import guards_block, marked, mutation, rebound, state, views
from capviz.trace import places as walk
from capviz.trace.context import (
    active,
    name_scope_entries,
    register,
    set_name_scope_entries,
    unregister,
)
from capviz.trace.examples import Examples
from capviz.trace.fold import known_value
from capviz.trace.mutation import current
from capviz.trace.recorder import Recorder, describe_node, note_origin
from capviz.trace.scopes import ExplicitScope
from capviz.trace.tensor import Tensor


class Spec(NamedTuple):
    """Shape and dtype of a graph input (see :func:`spec`)."""

    shape: tuple
    dtype: np.dtype


def spec(shape: Any, dtype: Any = "float32") -> Spec:
    """The shape and dtype of an input for :func:`capture` or ``scope.input``."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"shape must hold non-negative sizes, got {shape}")
    return Spec(shape, np.dtype(dtype))


def is_capturing() -> bool:
    """True inside an open capture scope of the current context (thread or asyncio task)."""
    return active() is not None


_INT64 = np.iinfo(np.int64)


def constant(value: Any, name: str | None = None) -> Any:
    """``value`` recorded as a constant of the innermost open capture, as a capture tensor;
    outside a capture, ``value`` itself.

    For the NumPy that takes a tensor only where an ndarray stood: ``table[labels]`` with an
    ndarray ``table`` calls ``np.asarray(labels)`` (a data read), while
    ``cv.constant(table)[labels]`` records a gather. A write into the tensor is a write into
    the array, as it is eagerly (where the array itself is returned): ``cv.constant(self.c)[
    idx] += 1.0`` makes ``self.c`` a state of the graph, which every replay writes as a call
    does. Code written so runs eagerly unchanged.

    A Python number (``cv.constant(0.9)``) stays what NumPy makes of it: weak in the
    promotion, so ``x32 * cv.constant(0.1)`` is float32 inside a capture as ``x32 * 0.1`` is
    outside; a NumPy scalar (``np.float64(0.9)``) keeps its dtype.

    Args:
        value: an array-like (its value when recorded is the constant's; a state's current
            value where the capture wrote the array).
        name: the constant's name in the graph (default: the variable's name, when found).

    Returns:
        A capture tensor inside a capture; ``value`` otherwise.
    """
    recorder = active()
    if recorder is None:
        return value
    if type(value) is int and not _INT64.min <= value <= _INT64.max:
        return value  # no int64 holds it: a literal of the ops it meets, as it is outside
    if type(value) in (bool, int, float, complex):  # as weak in NumPy's promotion as outside
        tensor = Tensor(recorder.constant(host_copy(value), name, user_source()), recorder)
        state.mark_python(recorder, tensor)  # (x32 * cv.constant(0.1) is float32, as x32 * 0.1)
        if type(value) is int:  # its exact bounds: Python int arithmetic on it is not a draw's
            state.python_bounds(recorder)[tensor._data.index] = (value, value)
        return tensor
    if isinstance(value, Tensor):
        if value._trace is recorder and name is None:  # recorded: cv.constant(h), h = self.h
            return value              # became the state's tensor (trace/state_fixes.py)
        value = value.numpy()  # an eager tensor's value; another capture's is a data read
    if recorder.states and type(value) is np.ndarray:  # (a view of) an array the capture
        written = state.tensor_of(recorder, value)     # wrote: a write into it is the state's
        if written is not None:
            return written
    if type(value) is np.ndarray and value.base is None and value.dtype.kind in "biufc":
        # an array of its own (0-d too): a write into the tensor writes it (below)
        written = recorder.states.get(id(value))
        if written is not None and written.ref() is value:  # a state: its current value
            return written.tensor
        hit = recorder._adopted.get(id(value))  # read again before a write: the same node
        if hit is not None and hit[0] is value and hit[1].kind == "constant" and \
                hit[1].index in recorder.constant_of and recorder._unchanged(hit[1], value):
            return _held(recorder, hit[1])
        seen = recorder.seen(value)
        node = recorder.constant(host_copy(seen),  # (a second capture's first's)
                                 name or recorder.name_of(value), user_source())
        root = note_origin(recorder.graph, node, value)
        if seen is value:  # checked by each replay where it outlives the call (eagerly
            note_copy(recorder.graph, node.index, value, root)  # cv.constant(a) is a itself)
        recorder.constant_of[node.index] = value  # (trace/mutation.outside_constant)
        recorder._adopted[id(value)] = (value, node)  # a first write makes it the state's node
        return _held(recorder, node)
    if type(value) is np.ndarray and value.ndim and name is None:
        # a view (np.linspace's result, W.T): as the capture meets it, a state's recorded value
        # once written (before its first write, the read that write turns into the state's)
        made = recorder.adopt_value(value)
        if isinstance(made, Node):
            tensor = Tensor(made, recorder)
            if made.kind == "constant" and value.base is not None and \
                    value.dtype.kind in "biufc":  # a write into it is a write into the view
                recorder.constant_of[made.index] = value  # (trace/mutation.outside_constant)
                recorder.held_views.setdefault(id(state.root_of(value)), []).append(
                    (tensor, value))  # it sees a later write of its root (state._follow_views)
            return tensor
    if name is None and isinstance(value, np.ndarray):
        name = recorder.name_of(value)
    node = recorder.constant(host_copy(value), name, user_source())
    if isinstance(value, np.ndarray):
        root = note_origin(recorder.graph, node, value)
        if type(value) is np.ndarray:
            note_copy(recorder.graph, node.index, value, root)
    return Tensor(node, recorder)


def _held(recorder: Any, node: Any) -> Tensor:
    """The tensor ``cv.constant(a)`` returns for ``a``'s constant ``node``, noted: eagerly it
    is ``a`` itself, so once the capture writes ``a`` it reads ``a``'s state (a name holding it
    across ``a[...] = ...`` sees the write: trace/mutation.follow_state)."""
    tensor = Tensor(node, recorder)
    held = recorder.held_constants.setdefault(node.index, [])  # (kept while the capture runs)
    if held:  # one buffer eagerly, as a: one storage, which views of either share
        alias = views.base_alias(recorder, held[0])
        tensor._alias = mutation.Alias(alias.storage, (), (node,), alias.layout)
    held.append(tensor)
    return tensor


class _NameScope:
    """The context manager :func:`name_scope` returns: it saves the context's open name scopes
    on entry and puts them back on exit, each one ``ContextVar.set``, so an interrupt leaves no
    stray scope. Each entry is its own :class:`ExplicitScope` (two entries of one name are two
    scopes) and remembers the user frame that entered it, to nest it among the call-stack
    scopes (see :mod:`capviz.trace.scopes`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.previous: tuple[ExplicitScope, ...] = ()

    def __enter__(self) -> None:
        self.previous = name_scope_entries()
        entry = ExplicitScope(self.name, user_frame(sys._getframe(1)))
        try:
            set_name_scope_entries((*self.previous, entry))
        except BaseException:  # interrupted just after the set: undo it
            set_name_scope_entries(self.previous)
            raise

    def __exit__(self, *exc_info: Any) -> None:
        try:
            set_name_scope_entries(self.previous)
        except BaseException:  # interrupted around the set: set again, it is idempotent
            set_name_scope_entries(self.previous)
            raise


def name_scope(name: str) -> contextlib.AbstractContextManager[None]:
    """Group the ops recorded inside into a named scope (a cluster when drawn)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"a name scope needs a non-empty string, got {name!r}")
    return _NameScope(name)


_names = itertools.count()
_observers: list[Callable[[CapturedGraph], None]] = []


def observe(callback: Callable[[CapturedGraph], None]) -> Callable[[], None]:
    """Call ``callback(graph)`` whenever a capture scope ends (the pytest plugin uses this).
    Returns a function that removes the callback."""
    _observers.append(callback)

    def remove() -> None:
        if callback in _observers:
            _observers.remove(callback)

    return remove


class CaptureDevice:
    """A device that records instead of computing. Reusable; one active scope at a time."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name or f"capture{next(_names)}"
        self._lock = threading.Lock()
        self._active: CaptureScope | None = None

    def capture_scope(self, live: bool = False, on_violation: str = "raise",
                      rng: Device | None = None,
                      global_random: str = "generator") -> CaptureScope:
        """A context manager that records the ops of its body (see :class:`CaptureScope`)."""
        return CaptureScope(self, live=live, on_violation=on_violation, rng=rng,
                            global_random=global_random)

    def seed(self, seed: int) -> None:
        """Always a ``seed`` violation: a capture device has no generator to reseed."""
        call = hooks.call_text(f"CaptureDevice({self.name!r}).seed", (seed,), {})
        if active() is not None:
            hooks.report_seed(call)
            return
        source = user_source()
        raise make_error(Violation("seed", "error", seed_message(call, source), call, source, -1),
                         None)

    def __repr__(self) -> str:
        return f"CaptureDevice({self.name!r})"


class _Declared(NamedTuple):
    name: str
    value: Any
    source: Any


class CaptureScope:
    """One capture: ``with cap.capture_scope() as scope: ...``.

    Args:
        device: the capture device.
        live: show a live graph view in Jupyter (a no-op, with one warning, elsewhere).
        on_violation: ``"raise"`` (default) raises at the first error-level violation;
            ``"record"`` keeps capturing and collects them (``graph.check()`` raises the first).
        rng: the real device whose seeded stream random ops use (default: the default device).
        global_random: what a draw from NumPy's global generator or from a generator object
            the capture reaches (``self.rng``) in the body is: ``"generator"`` (default) a
            draw of that generator, a state of the graph that every replay draws from and
            advances, as eager calls do (:mod:`capviz.randomness.generators`);
            ``"violation"`` a ``frozen_random`` violation, since its values would be
            frozen into the graph; ``"record"`` records NumPy's common draws (``rand``,
            ``randn``, ``random``, ``uniform``, ``normal``, ``standard_normal``...) as capviz
            random ops, so each replay draws fresh, reproducible values from capviz's Philox
            generator (not NumPy's numbers); other draws stay violations.
    """

    def __init__(self, device: CaptureDevice, live: bool = False, on_violation: str = "raise",
                 rng: Device | None = None, global_random: str = "generator") -> None:
        if on_violation not in ("raise", "record"):
            raise ValueError(f"on_violation must be 'raise' or 'record', got {on_violation!r}")
        if global_random not in ("generator", "violation", "record"):
            raise ValueError("global_random must be 'generator', 'violation' or 'record', got "
                             f"{global_random!r}")
        if rng is not None and not isinstance(rng, Device):
            raise TypeError(f"rng must be a cv.Device, got {type(rng).__name__}")
        self.device = device
        self.live = live
        self.on_violation = on_violation
        self.rng = rng
        self.global_random = global_random
        self.recorder: Recorder | None = None
        self.view: Any = None
        self._inputs: list[_Declared] = []
        self._outputs: list[_Declared] = []
        self._opened_at: Any = None
        self._entry_function: Callable | None = None  # set by capture(): fn, not the caller
        self._watched: list[generator_watch.Watched] = []  # generator objects it can reach
        self._backstop: list[tuple] = []  # every other generator of the process, noted
        self._rebound: list[tuple] = []  # names bound before the capture, hooked for it
        self._stand_ins: list[tuple] = []  # generator objects replaced for it
        self._quiet = False  # a second capture (capture()): no observer is told
        self._others: Any = None  # its planted arrays (trace/recapture.OtherValues)
        self._twice = False  # the first of capture()'s two: no NaN mark (trace/state.py)
        self._places: list = []  # names fn can rebind, with what they held (trace/rebound.py)
        self._binds: list = []  # arrays made there to bind once fn is captured (rebound.py)
        self._marked: BaseException | None = None  # fn's error while a state held the mark
        self._memoised: Any = None  # lru_cache wrappers, memo dicts (randomness/memoised.py)
        self._block: Any = None  # the scope form's block, for its guards (trace/guards_block)

    @property
    def graph(self) -> CapturedGraph:
        """The graph (partial while recording or when the capture failed)."""
        if self.recorder is None:
            raise RuntimeError("the capture scope has not been entered yet")
        return self.recorder.graph

    # --- entering and leaving -------------------------------------------------------------------

    def __enter__(self) -> CaptureScope:
        if self.recorder is not None:
            raise RuntimeError("a CaptureScope object can be entered once; call "
                               "capture_scope() again for a new capture")
        self._opened_at = user_source()
        recorder = Recorder(CapturedGraph(), self.device, self.on_violation)
        recorder.others = self._others
        recorder.twice = self._twice
        entry = recorder.scopes.entry  # (its line now: the with statement's)
        recorder.mark_watch = functools.partial(
            marked.note_marked, line=None if entry is None else entry.f_lineno)
        recorder.global_random = self.global_random
        rng = self.rng or default_device()
        self.recorder = recorder
        roots = generator_watch.frame_roots(recorder.scopes.entry) \
            if self._entry_function is None \
            else generator_watch.function_roots(self._entry_function)
        self._watched = generator_watch.note(roots)
        if not self._places:  # (cv.capture notes them before, for trace/outside_writes.py)
            self._places = walk.note(self._entry_function)
        if self._entry_function is None:  # the Python values the block reads: its guards
            self._block = guards_block.note(entry, None if entry is None else entry.f_lineno)
        self._backstop = backstop.note([w.obj for w in self._watched])  # every other one
        try:
            self._acquire(rng)
            return self
        except BaseException:  # anything, a KeyboardInterrupt included: undo every step
            self._release()
            raise

    def _acquire(self, rng: Device) -> None:
        """Take the device, bind the rng device, register the recorder in this context, install
        the hooks, attach the live view: in this order, each step one atomic change that
        :meth:`_release` undoes whether or not the step completed."""
        recorder = self.recorder
        with self.device._lock:
            other = self.device._active
            if other is not None:
                raise ScopeAlreadyActiveError(
                    f"capture device {self.device.name!r} already has an active capture scope "
                    f"(opened at {format_source(other._opened_at)}); a device records one scope "
                    "at a time: use another cv.CaptureDevice() for a concurrent capture")
            self.device._active = self
        rng.bind_capture(recorder)
        register(recorder)
        hooks.install(recorder)
        spaces = self._namespaces()
        self._rebound = creation.rebind(spaces, hooks.replacements, hooks.hooked_ids())
        self._memoised = memoised.Seen()  # memos the code that runs names: settled at exit
        recorder.scopes.on_frame = self._memoised.frame
        self._stand_ins = generators.install(generators.roots_of(
            self._entry_function, recorder.scopes.entry), hooks.report_stand_in_seed)
        if self.live:
            from capviz.render.live import attach

            attach(self)

    def _namespaces(self) -> list[dict]:
        """The module namespaces whose names bound before the capture (``from numpy import
        zeros``) are rebound to the hooks for its lifetime: the captured function's globals,
        and those of the user frames on the stack when the scope opens."""
        spaces = []
        fn = self._entry_function
        while isinstance(getattr(fn, "func", None), Callable):  # functools.partial
            fn = fn.func
        fn = getattr(fn, "__func__", fn)
        if not hasattr(fn, "__globals__"):  # a callable object: its class's __call__
            fn = vars(type(fn)).get("__call__")
        if isinstance(getattr(fn, "__globals__", None), dict):
            spaces.append(fn.__globals__)
        frame = self.recorder.scopes.entry
        while frame is not None:
            if creation.user_call(frame):
                spaces.append(frame.f_globals)
            frame = frame.f_back
        return spaces

    def _release(self, keep_view: bool = False) -> None:
        """Undo :meth:`_acquire`, last step first.

        The recorder is ended first (inert: it records nothing and the hooks skip it). Each
        undo is idempotent, is tried even when another failed, and runs at the call depth of
        the step it undoes, going no deeper than that step did, so it also completes after a
        ``RecursionError``. The first failure is raised once all were tried; a caller that got
        one (an interrupt landing here) can call again to finish.
        """
        self.recorder.closed = True
        self.recorder.ended = True
        undo: list[tuple[Callable[[Any], None], Any]] = [
            (generators.remove, self._stand_ins), (creation.restore, self._rebound),
            (hooks.uninstall, self.recorder),
            (unregister, self.recorder), (_free_device, self)]
        if not keep_view:
            undo.insert(0, (_close_view, self))
        failure: BaseException | None = None
        for step, arg in undo:
            try:
                step(arg)
            except BaseException as err:
                failure = failure or err
        if failure is not None:
            raise failure

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        # An exception anywhere in here (a KeyboardInterrupt, a RecursionError) still releases
        # everything; one that cuts the first release short is followed by a second, complete
        # one. Only a KeyboardInterrupt delivered at this method's very first instruction,
        # before any `try` is in force, escapes: no Python __exit__ can catch that one
        # (docs/guide/capture-state.md).
        try:
            if exc is not None and self.recorder.poisoned:  # int() of a NaN the mark made...
                self._marked = marked.raised_on_mark(self.recorder, exc)
            self._binds = rebound.put_back(  # a capture tensor left in a name, a number changed
                self._places, self.recorder, user_source(),
                getattr(self, "_entry_function", None))
            self._places = []
            self.recorder.scopes.on_frame = None
            if self._memoised is not None:  # a memo keeping a capture tensor: eager's value
                memoised.settle(self._memoised, self.recorder, user_source())
            state.restore(self.recorder, user_source())  # the written arrays' values back
            marked.refuse_marked(self.recorder, user_source())  # the mark NumPy carried
            hooks.untracked_state_changes(self.recorder)  # a reseed no hook saw
            self.recorder.pending += generator_watch.pending_violations(  # a draw from an object
                self._watched + self.recorder.made_generators, user_source())
            self.recorder.pending += backstop.pending_violations(self._backstop, user_source())
            self._watched = []
            self._backstop = []
            self.recorder.flush_pending()  # a reseed from another thread, not yet recorded
            self._memoised = None
        finally:
            try:
                self._release(keep_view=True)  # the view stays, to show the final graph
            except BaseException:
                self._release(keep_view=True)
                raise
        return self._finish(exc)

    def _finish(self, exc: BaseException | None) -> bool:
        """Check the boundaries, set the graph's outcome, show it, call the observers."""
        recorder = self.recorder
        graph = recorder.graph
        error: BaseException | None = exc
        if recorder.raised is not None and (error is None or isinstance(error, ScopeClosedError)
                                            or error is self._marked
                                            or _wrapped(error, recorder.raised)):
            # a violation the body caught still fails the capture; one NumPy turned into its
            # own error (`ndarray[i] = t` calls float(t) and raises "setting an array element
            # with a sequence" from the data-read violation) is raised as itself
            error = recorder.raised
            if exc is not None and exc is self._marked:  # the function's own error, maybe:
                marked.catchable_as(error, exc)          # an except clause for it catches it
        written = state.final_values(recorder)  # what a replay writes back
        if error is None:
            try:
                self._check_boundaries(recorder)
            except BoundaryError as err:
                error = err
        recorder.settle_scopes()  # final scope names (block -> block[0] once block[1] exists)
        state.finish(recorder, written, user_source())  # once no frame holds the arrays
        if isinstance(error, CapvizError) and getattr(error, "graph", None) is None:
            error.graph = graph
        graph.error = error
        graph.complete = error is None
        block, self._block = self._block, None
        if graph.complete and block is not None:  # the Python values it read (m.training)
            graph.python_guards = guards_block.collect(block, graph)
        if graph.complete and self._entry_function is None:  # (the scope form: its small
            references.guard_copies(graph)  # arrays' sources checked, as cv.capture's are)
            graph.scope_form = "the with block" if block is None else block.fn.__name__
        try:
            if self.view is not None:
                self.view.finish(graph)  # raises a render failure of the live view
        except BaseException:
            self.view.close()
            raise
        finally:
            for callback in [] if self._quiet else list(_observers):
                callback(graph)
        if error is not None and error is not exc:
            raise error from exc
        return False

    # --- boundaries --------------------------------------------------------------------------

    def input(self, name: str, shape_or_example: Any, dtype: Any = None) -> Tensor:
        """Declare a graph input and return its capture tensor.

        Forms: ``input("x", (1, 4), "float32")``, ``input("x", cv.spec(...))``, or
        ``input("x", example)`` with an array or eager tensor (uses of that object inside the
        scope then read this input). An example's values let the capture read values: ``if
        np.any(t):``, ``int(t)``, ``x[mask]`` return or use the example's values and record
        guards and size symbols (docs/guide/values.md); they are computed only when read.
        """
        recorder = self._recorder()
        source = user_source()
        if not isinstance(name, str) or not name:
            raise TypeError(f"an input name must be a non-empty string, got {name!r}")
        self._inputs.append(_Declared(name, shape_or_example, source))
        value = shape_or_example
        if isinstance(value, Tensor) and value._trace is recorder:
            made = current(recorder, value)
            known = known_value(recorder.graph, made, recorder.known)
            if known is not None:  # an example made inside the block: np.zeros((4, 3))
                value = shape_or_example = np.asarray(known)
                self._inputs[-1] = _Declared(name, value, source)
                nodes = recorder.graph.nodes
                if made.op == "create" and nodes and nodes[-1] is made:
                    nodes.pop()  # made for this input only: the input stands in its place
                    recorder.graph.rebuilt()
        if isinstance(value, Tensor) and isinstance(value._trace, Recorder):
            return value  # produced inside a graph: reported at exit (invalid or unknown input)
        stands_for = None
        if isinstance(value, Spec):
            shape, dt = value.shape, value.dtype
        elif isinstance(value, (tuple, list)) and all(isinstance(s, (int, np.integer))
                                                       for s in value):
            given = spec(value, "float32" if dtype is None else dtype)
            shape, dt = given.shape, given.dtype
        elif isinstance(value, Tensor) or (hasattr(value, "shape") and hasattr(value, "dtype")):
            shape, dt = tuple(value.shape), np.dtype(value.dtype)
            stands_for = value
        else:
            return Tensor(recorder._append("input", None, (), {"declared": False,
                                                              "unknown": True}, (),
                                           np.dtype("float32"), source, name), recorder)
        if dtype is not None and np.dtype(dtype) != dt:
            raise TypeError(f"input {name!r}: dtype {np.dtype(dtype)} does not match the "
                            f"example's {dt}")
        tensor = recorder.input(name, shape, dt, source, stands_for)
        example = _example_value(stands_for)
        if example is not None:  # values are computed from it only when the code reads one
            if recorder.examples is None:
                recorder.examples = Examples(recorder.graph)
            recorder.examples.give(tensor._data, example)
        return tensor

    def constant(self, value: Any, name: str | None = None) -> Tensor:
        """Record ``value`` (an array-like) as a named constant of the graph."""
        recorder = self._recorder()
        if isinstance(value, Tensor):
            value = value.numpy()
        if recorder.poisoned and state.poisoned(np.asarray(value)):
            state.refuse_poisoned(recorder, value)  # NumPy computed it from a written array
        node = recorder.constant(host_copy(value), name, user_source())
        return Tensor(node, recorder)

    def output(self, value: Any, name: str | None = None) -> None:
        """Declare an output (default names ``out0``, ``out1``...); checked at scope exit."""
        self._recorder()
        if name is None:
            name = f"out{len(self._outputs)}"
        if not isinstance(name, str) or not name:
            raise TypeError(f"an output name must be a non-empty string, got {name!r}")
        self._outputs.append(_Declared(name, value, user_source()))

    def _recorder(self) -> Recorder:
        if self.recorder is None:
            raise RuntimeError("use the scope inside its with-block")
        self.recorder.check_usable()
        return self.recorder

    def _check_boundaries(self, recorder: Recorder) -> None:
        """Raise the first boundary error (inputs, undeclared reads, then outputs); on success
        append the output nodes."""
        names: dict[str, _Declared] = {}
        tensors: dict[int, _Declared] = {}
        for d in self._inputs:
            v = d.value
            if _capture_tensor(v):
                _check_known("input", d, recorder)
                raise InvalidInputError(
                    f"input {d.name!r}{_declared_at(d)} is {describe_node(v._data)}, a tensor "
                    "produced inside this graph; an input must come from outside (an array, an "
                    "eager tensor, or a shape and dtype)")
            if not (isinstance(v, (Spec, Tensor, tuple, list)) or hasattr(v, "shape")):
                raise UnknownBoundaryError(
                    f"input {d.name!r}{_declared_at(d)} is a value of type {type(v).__name__}, "
                    "not a shape, spec, array or tensor")
            _check_unique("input", d, names)
            if isinstance(v, Tensor) or (hasattr(v, "dtype") and not isinstance(v, np.generic)):
                # (a NumPy scalar is a value, not an object: np.bool_(False) is one object
                # wherever it is written, and two inputs may be given it)
                if id(v) in tensors:
                    raise DuplicateBoundaryError(
                        f"the same tensor is declared as input {tensors[id(v)].name!r} and as "
                        f"input {d.name!r}{_declared_at(d)}")
                tensors[id(v)] = d
        for node in recorder.graph.nodes:
            if node.kind == "input" and node.params.get("declared") is False \
                    and not node.params.get("unknown"):
                raise UndeclaredInputError(
                    f"the graph reads a tensor ({node.dtype}{list(node.shape)}, first used at "
                    f"{format_source(node.source)}) that is neither a declared input nor a "
                    "constant; declare it with scope.input(name, t) before using it, or record "
                    "its value with scope.constant(t)")
        names = {}
        for d in self._outputs:
            _check_unique("output", d, names)
            if not _capture_tensor(d.value):
                kind = "an eager tensor" if isinstance(d.value, Tensor) else \
                    f"a value of type {type(d.value).__name__}"
                fix = "outputs must be computed inside the scope"
                if d.value is None and getattr(self, "_entry_function", None) is not None:
                    fix = ("the function returned None: a function that writes into its "
                           "input (X -= X.mean(axis=0)) outputs the written value only when "
                           "it returns it (return X)")
                raise InvalidOutputError(
                    f"output {d.name!r}{_declared_at(d)} is {kind}, not a tensor of this "
                    f"capture; {fix}")
            _check_known("output", d, recorder)
        for d in self._outputs:
            recorder.output(current(recorder, d.value), d.name, d.source)  # after writes


def _example_value(value: Any) -> Any:
    """The host value an input's example gives (a reference to an ndarray, not a copy: a
    capture that reads no value pays nothing for it), or ``None`` for a spec, or an array of
    another engine (its shape and dtype only)."""
    if type(value) is np.ndarray or isinstance(value, np.generic):
        return value
    if isinstance(value, np.ndarray) and not isinstance(value, np.matrix):
        return value  # np.memmap: read as the ndarray it is
    if isinstance(value, Tensor) and not value._trace.records:
        return value._trace.read(value, "example")
    return None


def _free_device(scope: CaptureScope) -> None:
    """Mark the scope's capture device free, if this scope holds it."""
    with scope.device._lock:
        if scope.device._active is scope:
            scope.device._active = None


def _close_view(scope: CaptureScope) -> None:
    """Detach the live view from a scope that failed to open and stop its worker."""
    view, scope.view = scope.view, None
    scope.recorder.listener = None
    if view is not None:
        view.close()


def _declared_at(d: _Declared) -> str:
    loc = format_source(d.source)
    return f" (declared at {loc})" if loc else ""


def _capture_tensor(value: Any) -> bool:
    return isinstance(value, Tensor) and isinstance(value._trace, Recorder)


def _check_known(role: str, d: _Declared, recorder: Recorder) -> None:
    """A capture tensor named as a boundary must belong to this capture."""
    other = d.value._trace
    if other is not recorder:
        raise UnknownBoundaryError(
            f"{role} {d.name!r}{_declared_at(d)} is a tensor of another capture "
            f"({describe_node(d.value._data)} of {other.name!r}), unknown to this one")


def _check_unique(role: str, d: _Declared, seen: dict[str, _Declared]) -> None:
    if d.name in seen:
        raise DuplicateBoundaryError(
            f"{role} name {d.name!r} is declared twice: at "
            f"{format_source(seen[d.name].source)} and at {format_source(d.source)}")
    seen[d.name] = d



def _wrapped(error: BaseException, violation: BaseException) -> bool:
    """Whether ``error``, not a capviz error, was raised from ``violation`` (its cause or
    context chain holds it)."""
    if isinstance(error, CapvizError):
        return False
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        if link is violation:
            return True
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return False
