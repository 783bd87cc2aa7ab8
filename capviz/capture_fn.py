"""The function form :func:`capture`: ``cv.capture(fn, *specs)``.

It opens a :class:`~capviz.capture.CaptureScope` around one call of ``fn``, declares its inputs
from ``fn``'s parameters and its outputs from what ``fn`` returns (a nested tuple or list, a
dict, an ndarray or number NumPy computed from no tensor), and, when the first capture made
array states, captures ``fn`` a second time with other values planted in them
(:mod:`capviz.trace.recapture`), refusing on the first graph what differs. A later capture of
the same function and object takes one pass where that is provably enough, its states lifted
into the graph's signature before ``fn`` runs (:mod:`capviz.trace.lifted`), and the two passes
otherwise. The scope form and the boundaries are :mod:`capviz.capture`.
"""

from __future__ import annotations

import collections
import contextlib
import dis
import functools
import gc
import inspect
import linecache
import traceback
import types
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.capture import CaptureDevice, CaptureScope, _observers, spec
from capviz.core import references
from capviz.core.errors import CapvizError, UnsupportedOperationError
from capviz.core.python_guards import Digest
from capviz.core.source import PACKAGE_DIRS, USER_FILES, user_source
from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain, make_error
from capviz.devices import Device, default_device
from capviz.graph import CapturedGraph
from capviz.randomness import hooks
from capviz.trace import (
    fn_lines,
    guards_python,
    iterators,
    lifted,
    logged_runs,
    outside_writes,
    rebinding,
    recapture,
    state,
)
from capviz.trace import places as walk
from capviz.trace.tensor import Tensor

_CONSTANT_OUTPUTS = (np.ndarray, bool, int, float, complex)


def _function_output(scope: CaptureScope, value: Any, name: str) -> None:
    """One result of the function form: a nested tuple or list gives ``name_0``, ``name_1``...
    (``np.histogramdd``'s ``(hist, [edges...])``); an ndarray or a number the function returns
    (a result NumPy computed from no tensor: ``np.ones(3)``, ``np.poly`` of no roots is
    ``1.0``) is recorded as a constant output, its value as ``np.asarray`` gives it."""
    recorder = scope.recorder
    if isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            _function_output(scope, item, f"{name}_{i}")
    elif type(value) is np.ndarray and recorder.states and state.find(recorder, value):
        scope.output(Tensor(state.read(recorder, value), recorder), name)  # its written value
    elif type(value) in _CONSTANT_OUTPUTS or isinstance(value, np.generic):
        if recorder.poisoned and state.poisoned(np.asarray(value)):
            _refuse_returned(scope, value)
        if type(value) is int and np.asarray(value).dtype == object:
            raise UnsupportedOperationError(
                f"output {name!r}{_returned_by(scope)} is the Python int {value}, which no "
                "NumPy integer dtype holds (eager NumPy would make it an object array); "
                "return float(value) or np.float64(value), or compute it outside the capture")
        recorded = scope.constant(np.asarray(value), name=name)
        if recorder.states and (recorder.twice or recorder.others is not None):  # (see below)
            _at_return(scope, recorded)
        scope.output(recorded, name)
    else:
        scope.output(value, name)


def _at_return(scope: CaptureScope, tensor: Tensor) -> None:
    """Give the constant of a returned value ``fn``'s ``return`` line, when its code has one:
    the second capture's comparison refuses a value NumPy computed from a written state there
    (the first capture wrote finite values, not the NaN mark, into the state's memory)."""
    code = getattr(_plain_function(scope._entry_function), "__code__", None)
    line = _returned_at(scope, code)
    if line is not None:
        tensor._data.source = (code.co_filename, line, code.co_name)


def _refuse_returned(scope: CaptureScope, value: Any) -> None:
    """Refuse a returned value NumPy computed from a written state (its memory held the NaN
    mark) at ``fn``'s ``return`` line, when its code has one (the caller's line else)."""
    recorder = scope.recorder
    code = getattr(_plain_function(scope._entry_function), "__code__", None)
    line = _returned_at(scope, code)
    if line is None:
        state.refuse_poisoned(recorder, value)
    names = [s.node.name or "an ndarray from outside" for s in recorder.states.values()
             if s.poisoned]
    source = (code.co_filename, line, code.co_name)
    text = recapture.line_code(linecache.getline(code.co_filename, line))
    reason = (f"the returned value was computed by NumPy's own operators from "
              f"{' or '.join(names)} after the capture wrote it, and NumPy read its memory, "
              "which the capture does not change; write the return through a tensor: "
              "a local name (W = self.W; W += g; return W * 2.0), whose += rebinds it to the "
              "written tensor")
    message = explain(Failure("unsupported_op", "a value NumPy computed from a written ndarray",
                              "", source, UserCode("other", shorten(text)), None, reason))
    recorder.violation("unsupported_op", "a value NumPy computed from a written ndarray",
                       message, source)
    raise make_error(recorder.graph.violation_records[-1], recorder.graph)  # record mode


def _plain_function(fn: Any) -> Any:
    while callable(getattr(fn, "func", None)):  # functools.partial
        fn = fn.func
    return getattr(fn, "__func__", fn)


def _returned_at(scope: CaptureScope, code: Any) -> int | None:
    """The line of the ``return`` statement of ``fn`` (code ``code``) that ran: the line of
    ``fn``'s finished frame, kept by the recorder when it recorded an op from it; else the
    line of its one ``return`` statement (``None``: several, and no op recorded from it)."""
    if code is None:
        return None
    frame = scope.recorder.entry_frame
    if frame is not None and frame.f_code is code and frame.f_lineno:
        return frame.f_lineno
    return _return_line(code)


def _return_line(code: Any) -> int | None:
    """The line of the one ``return <value>`` statement of ``code`` (``None`` when it has
    none or several)."""
    lines = set()
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("RETURN_VALUE", "RETURN_CONST") and \
                instruction.positions is not None and instruction.positions.lineno:
            lines.add(instruction.positions.lineno)
    return lines.pop() if len(lines) == 1 else None


def _returned_by(scope: CaptureScope) -> str:
    """`` returned by f at file:line`` for the function form's function (its definition)."""
    fn = getattr(scope, "_entry_function", None)
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    return f" returned by {code.co_name} ({code.co_filename}:{code.co_firstlineno})"


def capture(fn: Callable, *specs: Any, live: bool = False, on_violation: str = "raise",
            rng: Device | None = None, device: CaptureDevice | None = None,
            global_random: str = "generator") -> CapturedGraph:
    """Capture ``fn`` called on inputs of the given specs, like ``jax.make_jaxpr``.

    Inputs are named after ``fn``'s parameters; outputs ``out`` (one result), ``out0``,
    ``out1``... (a tuple or list; a nested one gives ``out1_0``, ``out1_1``...) or the keys of a
    returned dict. A returned ndarray or number (computed from no tensor) is recorded as a
    constant output. ``live``, ``on_violation``,
    ``rng`` and ``global_random`` are those of :class:`CaptureScope`.

    A spec may be an example array (or an eager tensor): its shape and dtype make the input,
    and its values let the captured code read values. ``if np.any(t):``, ``int(t)``,
    ``float(t)``, ``t.item()``, ``t.tolist()`` return the example's value and record a guard
    that every replay checks (:class:`GuardError` for inputs that take another branch);
    ``x[mask]``, ``np.nonzero``, ``np.unique`` give their result a size symbol (``n0``).
    Values are computed only when read (docs/guide/values.md).

    ``fn`` runs twice when it writes an outside array (a state, docs/guide/state.md) or logs
    a Python value, as
    ``jax.jit`` may trace more than once: a second capture, with other values in the states'
    arrays, finds what NumPy's own code computed from them outside the capture's sight and
    refuses it at its line. Python side effects of ``fn`` (a print, ``next()`` of an
    iterator) happen at capture time, twice; a plain Python value it logs into a list or dict
    it reaches (``self.log.append("step")``) is logged by each replay instead, and refused
    where two runs log different values. Where ``fn``'s statements name the arrays it writes
    (``self.W -= ...``, a loop's names over ``zip(self.params, self.mems)``), a first capture
    runs it twice with those arrays lifted (below) and compares the two graphs, so NumPy's
    reads of them are recorded too. A later capture of the same
    function and object runs ``fn`` once: the places that held its states are bound to the
    states' tensors before it runs, where a count of references shows nothing else can read
    them (:mod:`capviz.trace.lifted`; anything it cannot decide: the two captures, ``fn`` run
    a third time). Every array is put back. An
    outside array NumPy writes with no tensor (``self.n += 1.0``), which no replay would write,
    is put back and refused at that line (:mod:`capviz.trace.outside_writes`).

    Raises:
        CaptureError: as the scope form; the exception's ``graph`` holds the partial graph.
    """
    try:
        return _capture(fn, specs, live, on_violation, rng, device, global_random)
    except CapvizError as err:
        _let_go(err)
        raise


def _let_go(error: BaseException) -> None:
    """Clear the locals of capviz's own finished frames in the tracebacks of ``error`` (and of
    its cause and context): a refusal and its graph reference each other (``graph.error``,
    ``err.graph``), so a refusal the user let go of lives until the collector runs, and with it
    these frames and what their locals hold (the walked places, the snapshot: the user's
    arrays). A later capture of the same function (one eager call after the refusal, as its
    fix says) would count those references and lift nothing (review 7, finding 25). The lines
    of the traceback stay; the frames of the user's code keep their locals."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        tb = error.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            filename = frame.f_code.co_filename
            if filename.startswith(PACKAGE_DIRS) and filename not in USER_FILES:
                with contextlib.suppress(RuntimeError):  # (an executing frame: capture's own)
                    frame.clear()
            tb = tb.tb_next
        error = error.__cause__ or error.__context__


def _capture(fn: Callable, specs: tuple, live: bool, on_violation: str, rng: Device | None,
             device: CaptureDevice | None, global_random: str) -> CapturedGraph:
    """:func:`capture`'s work."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    if len(names) < len(specs):
        names += [f"arg{i}" for i in range(len(names), len(specs))]
    cap = device or CaptureDevice(getattr(fn, "__name__", None))
    drawn = rng or default_device()
    draws = drawn._draws  # where its draw indices stand: a second capture draws the same ones
    scope = cap.capture_scope(live=live, on_violation=on_violation, rng=rng,
                              global_random=global_random)
    scope._twice = True  # a second capture follows when it writes arrays: finite fills
    held = hooks.Hold()  # the hooks, once for both captures (each would make and remove them)
    try:
        hooks.install(held)  # (outside a scope every hook calls through)
        places = scope._places = walk.note(fn)  # what fn reaches by name, noted once
        plan = None if live else lifted.plan(fn, places)  # (one pass: trace/lifted.py)
        outside = outside_writes.note(  # its small arrays copied, before fn runs
            places if plan is None else plan.others(), fn=fn)
        done = None if plan is None else _capture_lifted(
            fn, names, specs, cap, plan, outside, (on_violation, rng, global_random),
            quiet=True)
        floats, again_thrown, guessed = True, False, False
        if done is None and lifted.guesses_floats(plan):  # (an int guessed a float: as an int)
            plan = outside = None  # (they hold the arrays: the next plan counts references)
            floats = False
            plan = lifted.plan(fn, places, floats=False)
            drawn._draws = draws
            outside = outside_writes.note(places if plan is None else plan.others(), fn=fn)
            done = None if plan is None else _capture_lifted(
                fn, names, specs, cap, plan, outside, (on_violation, rng, global_random),
                quiet=True)
        if done is not None and (lifted.has_numbers(plan) or plan.guessed) and (  # (kept
                recapture.grown(places) or done[0].graph.logged_values or  # numbers or a
                any(p.left is not None or p.filled for p in places if p.kind == "items")):
            done = None  # first capture's guess; a list grown or a value logged: one run
            #              cannot tell len(self.log) or a memo's size read in a helper from a
            #              constant, 20L 18:10; the two captures decide)
        elif done is not None and done[1] is None:
            if plan.guessed:  # a first capture: a second lifted run, compared (ruling 36)
                plan = outside = None  # (they hold the arrays: the next plan counts references)
                done = _lifted_again(fn, names, specs, cap, places, done, floats,
                                     (drawn, draws), (on_violation, rng, global_random))
                again_thrown, guessed = done is None, done is not None
            for callback in [] if done is None or done[1] is not None else list(_observers):
                callback(done[0].graph)  # (told once the run stands)
        if done is not None:  # the lifted runs were enough
            scope, error = done
            graph = scope.graph
        else:
            thrown = plan is not None or again_thrown
            if thrown:  # a lifted run thrown away: it drew nothing that counts, and
                drawn._draws = draws  # left every array as it was (the lifted ones untouched)
                plan = outside = None  # (they hold the arrays: a rebinding's plan counts
                outside = outside_writes.note(places, fn=fn)  # references)
            try:
                graph, error = _capture_twice(scope, fn, names, specs, outside, cap,
                                              (drawn, draws), global_random)
                refused = None
            except CapvizError as err:
                refused, graph = err, getattr(err, "graph", None)
            outside = None  # (its copies hold the arrays: a rebinding lifts only unheld ones)
            if thrown and rebinding.marked(places):  # (the run thrown away left cycles that
                gc.collect()  # hold its plan, and so the arrays, until the collector runs:
                #               counted, they made pid_controller's rebinding lift nothing,
                #               refused one time in two)
            again = None if not rebinding.marked(places) else _capture_rebinding(
                fn, names, specs, cap, places, graph, (drawn, draws),
                (on_violation, rng, global_random), refused)
            if again is not None:  # a name rebound each call (trace/rebinding.py): lifted
                scope, error = again
                graph = scope.graph
                if refused is not None:  # (its traceback holds this frame, whose places
                    refused.__traceback__ = None  # hold the arrays: the next capture's
                refused = None  # reference count would find them held, and lift nothing)
            elif refused is not None:
                raise rebinding.blamed(refused, graph, places)
    finally:
        hooks.uninstall(held)
    if not graph.complete:
        graph.constant_sources, graph.constant_places = {}, {}
    if graph.complete and (done is None or guessed):  # (two passes, or a first capture's
        lifted.remember(fn, graph, places)  # two lifted runs: its states, lifted at the
        #                                     next capture of fn, which runs it once)
    if error is not None and on_violation == "raise":
        raise error
    if graph.complete:
        for place, value in scope._binds:  # a buffer made lazily (self.mask = np.tril(...)):
            place.bind(value)               # as the call left it
        graph.python_guards = guards_python.collect(fn, places, graph)  # the Python values
        #                             it read (self.training...), checked by every replay
        references.guard_copies(graph)  # its small arrays' sources (a bias, a 0-d lr) and
        #                                 the paths of the arrays it checks
        if graph.constant_fingerprints or any(type(g.value) is Digest for g in
                                              graph.python_guards):  # (graph.changed() of a
            graph.recapture = _again(fn, _kept(specs, scope), on_violation, rng, device,  #
                                     global_random)  # (captures fn again: ruling 39 14:10)
            graph.remember_nodes()  # (an edit of a node it would drop is refused then)
    return graph


def _kept(specs: tuple, scope: CaptureScope) -> tuple:
    """What :func:`_again` captures with: the example arrays where the capture read a value
    computed from them (``if np.any(x > 0):``, a mask's length), else their shapes and dtypes
    only (a graph keeps no copy of a batch it never read)."""
    recorder = getattr(scope, "recorder", None)
    examples = getattr(recorder, "examples", None)
    inputs = {node.index for node in scope.graph.input_nodes}
    if examples is not None and any(index not in inputs for index in examples.values):
        return specs
    return tuple(spec(s.shape, s.dtype) if type(s) is np.ndarray else s for s in specs)


def _again(fn: Callable, specs: tuple, *options: Any) -> Callable[[], CapturedGraph]:
    """What ``graph.changed()`` calls to capture ``fn`` again where an array its NumPy read
    outside the graph changed (lead ruling 38 10:51): ``fn`` held weakly where it can be (a
    graph keeps no user's object alive), the examples copied."""
    try:  # (a function or lambda is held: nothing else holds `lambda x: x @ w` once
        ref: Any = weakref.WeakMethod(fn) if inspect.ismethod(fn) else (  # captured, and
            (lambda: fn) if isinstance(fn, (types.FunctionType, functools.partial))  # its
            else weakref.ref(fn))  # weight can still change; a model's method, weakly)
    except TypeError:
        ref = lambda: fn  # noqa: E731 (a callable no weak reference can point at)
    kept = tuple(np.array(s, copy=True) if type(s) is np.ndarray else s for s in specs)

    def again() -> CapturedGraph:
        live = ref()
        if live is None:
            raise CapvizError("graph.changed() cannot capture the function again: it is gone. "
                              "Capture it again where you hold it")
        return _capture(live, kept, False, *options)
    return again


def _capture_twice(scope: CaptureScope, fn: Callable, names: list[str], specs: tuple,
                   outside: outside_writes.Snapshot, cap: CaptureDevice,
                   draws: tuple[Device, int], global_random: str
                   ) -> tuple[CapturedGraph, CapvizError | None]:
    """The first capture in ``scope``, and a second one with other values in its states when
    it made array states (:mod:`capviz.trace.recapture`): the graph and the refusal."""
    places = scope._places  # (the scope lets go of them at its exit)
    try:
        _run(scope, fn, names, specs)
    finally:
        written = outside.put_back()  # what NumPy wrote unseen, put back
    graph = scope.graph
    error = None
    grown = recapture.grown(places) if graph.complete else []
    first = written
    if written and graph.complete and not scope.recorder.inside_states:
        error = outside_writes.refuse(graph, written, fn, user_source())
    elif grown and (read := _reads_grown(fn, recapture.grown(places, LOGS))) is not None:
        error = read(graph)
    elif graph.complete and (recapture.writes_arrays(graph) or scope.recorder.inside_states
                             or graph.logged_values) \
            and not any(v.level == "error" for v in graph.violation_records):
        # (a buffer made by a spelling no hook sees, read by NumPy after a write: its line,
        # which the second run finds, is the cause of what NumPy then wrote unseen, R6 #9)
        regrown = logged_runs.Regrown(places)  # (the Python values the first run logged)
        try:
            error = _capture_again(fn, names, specs, graph, cap, draws, global_random,
                                   grown, scope.recorder.inside_states)
        finally:
            regrown.undo()
            written = outside.put_back() or first  # (the second run's, on another path)
        if error is None and written:
            error = outside_writes.refuse(graph, written, fn, user_source())
    elif first and graph.complete:
        error = outside_writes.refuse(graph, first, fn, user_source())
    return graph, error


LOGS = (list, collections.deque)
"""The containers a read of which, grown by the first run, is refused (a dict the call fills
is a memo more often than a log: its reads are left to the second run)."""


def _reads_grown(fn: Callable, grown: list[str]) -> Callable | None:
    """The refusal of a walked list or deque that the first run grew (``grown``) and that a
    line of ``fn`` reads (``len(self.log)``, ``self.log[-1]``, ``for v in HIST``): every call
    changes what that line reads, past what two runs can compare (a warm-up by
    ``len(self.log) < 2`` agrees in both: hostile review 6, finding 1); ``None`` where no line
    of ``fn`` reads one (``self.log.append(step)`` alone: a side effect, captured)."""
    for label in grown:
        source, _text = fn_lines.reading_line(fn, label)
        if source is not None:
            def refuse(graph: CapturedGraph, label: str = label, source: Any = source) -> Any:
                return recapture.refuse(graph, graph.nodes[-1], recapture.GROWS, label, (
                    f"the call appends to {label} every time it runs (this capture ran it "
                    "once), and the graph keeps what this line read"), source=source)
            return refuse
    return None


def _capture_rebinding(fn: Callable, names: list[str], specs: tuple, cap: CaptureDevice,
                       places: list, graph: CapturedGraph | None, draws: tuple[Device, int],
                       options: tuple, refused: BaseException | None = None
                       ) -> tuple[CaptureScope, CapvizError | None] | None:
    """A first capture refused only because ``fn`` binds a new array to a name each call
    (``graph``: the refused one), captured again twice with those names lifted
    (:mod:`capviz.trace.rebinding`): the first lifted scope and its refusal (the two runs
    differ), or ``None`` to keep the first capture's refusal."""
    found = rebinding.marked(places)
    only = rebinding.only_rebinding(graph, found)
    if refused is not None and only:  # the frames of fn its traceback holds keep the
        traceback.clear_frames(refused.__traceback__)  # arrays in their locals (lines stay)
    if not only or (
            _reads_grown(fn, recapture.grown(places, LOGS)) is not None):
        return None
    drawn, before = draws
    runs = []
    more: list = []  # the graph of a lifted run that wrote an array not lifted
    while len(runs) < 2:
        plan = rebinding.plan(graph, places, found, fn, more[-1] if more else None)
        if plan is None:
            return None
        drawn._draws = before  # (each run draws the indices the first capture drew)
        outside = outside_writes.note(plan.others(), fn=fn)
        tried = len(more)
        done = _capture_lifted(fn, names, specs, cap, plan, outside, options, quiet=True,
                               more=more if not runs and tried < 2 else None)
        plan = outside = None  # (they hold the arrays: the next plan counts references)
        if done is None and len(more) > tried:
            continue  # lifted again with it (below)
        if done is None or done[1] is not None:
            return done
        runs.append(done[0])
    for place in found:
        place.lifts = None
    first, second = runs
    error = rebinding.difference(first.graph, second.graph) or (
        logged_runs.differs(first.graph, second.graph) if first.graph.logged_values else None)
    for callback in [] if error is not None else list(_observers):
        callback(first.graph)
    return first, error


def _lifted_again(fn: Callable, names: list[str], specs: tuple, cap: CaptureDevice,
                  places: list, done: tuple[CaptureScope, None], floats: bool,
                  draws: tuple[Device, int], options: tuple
                  ) -> tuple[CaptureScope, CapvizError | None] | None:
    """A first capture's lifted run (``done``, standing) followed by a second lifted run of
    ``fn``, compared with it (:func:`capviz.trace.rebinding.difference`): the first scope and
    the refusal, recorded on its graph, of a Python value the call changes from one run to the
    next (a counter in a helper's module, a schedule: what the two passes of
    :mod:`capviz.trace.recapture` refuse, and one run would freeze); ``None`` where the second
    run is thrown away (the two passes decide). The lifted runs read the states through their
    tensors, so nothing is planted: each run reads what the other does, and a difference
    comes from Python values alone. The second run draws the indices the first drew."""
    drawn, before = draws
    after = drawn._draws
    plan = lifted.plan(fn, places, floats)
    if plan is None or not plan.guessed:
        return None
    drawn._draws = before
    outside = outside_writes.note(plan.others(), fn=fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the first run's warnings were given)
        again = _capture_lifted(fn, names, specs, cap, plan, outside, options, quiet=True)
    plan = outside = None  # (they hold the arrays)
    drawn._draws = after
    if again is None or again[1] is not None:
        return None
    first, second = done[0].graph, again[0].graph
    error = rebinding.difference(first, second) or (
        logged_runs.differs(first, second) if first.logged_values else None)
    return done[0], error


def _capture_lifted(fn: Callable, names: list[str], specs: tuple, cap: CaptureDevice,
                    plan: lifted.Lifted, outside: outside_writes.Snapshot, options: tuple,
                    quiet: bool = False, more: list | None = None
                    ) -> tuple[CaptureScope, CapvizError | None] | None:
    """Capture ``fn`` once with the states of ``plan`` lifted (:mod:`capviz.trace.lifted`):
    the scope and the refusal of an outside array NumPy wrote unseen (as the first of two
    captures refuses it), or ``None`` where the run is thrown away (every array put back) and
    the two captures must run. ``more``: where a run thrown away only because it wrote an
    array state the plan did not lift appends its graph (a rebinding's plan comes from a
    refused first capture, which missed a write NumPy made from a state's planted memory:
    ``self.W -= lr * self.v`` after ``self.v += g``; lifted, it is a tensor's, review 7,
    finding 25), for a plan that lifts it too."""
    on_violation, rng, global_random = options
    scope = cap.capture_scope(on_violation=on_violation, rng=rng, global_random=global_random)
    scope._quiet = True  # (the observers are told below, once the run stands)
    scope._places = plan.places
    try:
        _run(scope, fn, names, specs, plan)
    except Exception as err:  # (fn's own error, or a refusal: the two captures give today's)
        _let_go(err)  # (its frames hold the plan, which holds the arrays: until the collector
        failed = True  # ran, a rebinding's plan counted them and lifted nothing)
    else:
        failed = False
    finally:
        written = outside.put_back()
    graph = scope.graph if scope.recorder is not None else None
    if graph is not None and not failed and graph.complete and written:
        return scope, outside_writes.refuse(graph, written, fn, user_source())
    if graph is None or failed or written or scope.recorder.inside_states or not lifted.kept(
            graph, plan, outside, scope._outputs):  # (an array made inside: two captures)
        lifted.discard(plan)
        if more is not None and graph is not None and not failed and not written and \
                not scope.recorder.inside_states and lifted.unlifted(graph, plan):
            more.append(graph)
        return None
    for callback in [] if quiet else list(_observers):
        callback(graph)
    return scope, None


def _call_quietly(fn: Callable, args: list) -> Any:
    """``fn(*args)`` with NumPy's floating-point settings that are ``warn`` as ``ignore``:
    while ``fn`` runs inside a capture, NumPy's own operators compute on capviz's values (the
    values written after a state's first write, the other values of a second capture:
    ``self.counts / self.counts.sum()`` is 0/0 there, census of stop 35), whose warnings are no
    user's; a ``raise`` setting is kept (the call would raise eagerly too). After the call each
    setting ``fn`` left as set here is put back; one ``fn`` set itself (``np.seterr(over=
    "raise")``) stays, as after an eager call (review 7, finding 32: np.errstate undid it)."""
    before = np.geterr()
    quiet = {kind: "ignore" if how == "warn" else how for kind, how in before.items()}
    np.seterr(**quiet)
    try:
        return fn(*args)
    finally:
        now = np.geterr()
        np.seterr(**{kind: before[kind] if now[kind] == quiet[kind] else now[kind]
                     for kind in now})


def _run(scope: CaptureScope, fn: Callable, names: list[str], specs: tuple,
         plan: lifted.Lifted | None = None) -> None:
    """Capture ``fn`` on inputs of ``specs`` named ``names`` in ``scope`` (with the states of
    ``plan`` lifted: :mod:`capviz.trace.lifted`); an error carries the partial graph."""
    scope._entry_function = fn  # generator objects are looked for from fn, not from here
    recorder = None
    try:
        with scope:
            recorder = scope.recorder
            recorder.entry_code = getattr(_plain_function(fn), "__code__", None)
            recorder.entry_function = fn  # (a draw no hook saw is looked for from it)
            try:
                args = [scope.input(n, s) for n, s in zip(names, specs)]
                if plan is not None:
                    lifted.lift(recorder, plan)
                decorated = hooks.errstate_decorated(fn)  # (@np.errstate on a helper)
                if decorated is not None:
                    recorder.violation("unsupported_op", *decorated)
                    raise make_error(recorder.graph.violation_records[-1], recorder.graph)
                held = iterators.positions(scope._places)  # (next(self.steps): no hook sees it)
                result = _call_quietly(fn, args)  # (what fills and planted values make)
                if held and (place := iterators.moved(held)) is not None:
                    recorder.violation("unsupported_op",
                                       *iterators.refusal(place, fn, user_source()))
                    raise make_error(recorder.graph.violation_records[-1], recorder.graph)
                if isinstance(result, dict):
                    for key, value in result.items():
                        _function_output(scope, value, str(key))
                elif isinstance(result, (tuple, list)):
                    for i, value in enumerate(result):
                        _function_output(scope, value, f"out{i}")
                else:
                    _function_output(scope, result, "out")
                del result  # an array made by the call is dead at exit: no state
            finally:  # (trace/state.py): nor is one fn's finished frame holds
                recorder.entry_code = recorder.entry_frame = None
                if plan is not None:
                    lifted.unlift(plan, recorder)  # the arrays back, before the exit
    except BaseException as err:
        if scope.recorder is not None and getattr(err, "graph", None) is None:
            with contextlib.suppress(AttributeError, TypeError):
                err.graph = scope.recorder.graph
        raise
    finally:
        if recorder is not None:  # (read at the scope's exit: hooks.untracked_state_changes)
            recorder.entry_function = None


def _capture_again(fn: Callable, names: list[str], specs: tuple, graph: CapturedGraph,
                   cap: CaptureDevice, draws: tuple[Device, int], global_random: str,
                   grown: list[str], inside: list[str] = ()) -> CapvizError | None:
    """Capture ``fn`` a second time with other values in the states' live arrays
    (:mod:`capviz.trace.recapture`), put every array back, and refuse on ``graph`` what
    differs: the error, recorded on ``graph``, or ``None``. The second capture draws the
    same indices from the rng device, notifies no observer and warns nothing."""
    drawn, before = draws
    after = drawn._draws
    others = recapture.OtherValues(graph)
    second = cap.capture_scope(rng=drawn, global_random=global_random)
    second._quiet = True
    second._others = others
    failure: Exception | None = None
    try:
        others.plant()
        drawn._draws = before
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                _run(second, fn, names, specs)
            except Exception as err:  # another path with other values: refused below
                failure = err
    finally:
        drawn._draws = after
        written = others.restore()
    try:
        error = recapture.difference(graph, second.graph if second.recorder else None, others,
                                     written, failure, grown, inside)
        if error is None and graph.logged_values:  # a Python value each run logs: the same
            error = logged_runs.differs(graph, second.graph)
        return error
    finally:
        failure = None  # (its traceback holds this frame: no cycle left to the collector)
