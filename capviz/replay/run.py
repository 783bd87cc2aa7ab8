"""Replay: run a graph on a backend (NumPy, CuPy, Dask, JAX), fast or one node at a time.

Two ways to run, like torch.fx's GraphModule and Interpreter:

* :class:`capviz.replay.program.Program` compiles the graph once per backend into a table of
  steps run by one tight loop, with the memory plan of :mod:`capviz.replay.plan` (results
  written into dead buffers with ``out=``); :func:`replay` and :class:`CompiledReplay`
  (``graph.compile()``) hand it to the backend's ``execute``. Nothing from a graph file is
  ever evaluated.
* :class:`capviz.replay.stepper.Executor` steps node by node with one overridable method per
  node kind, keeps values for inspection, and supports breakpoints; ``check_finite`` and
  ``compare`` use it.

Backends are looked up by name in :mod:`capviz.backends.registry`; nothing here names one.
Inputs are checked by :mod:`capviz.replay.inputs`. An op that fails is re-raised as
:class:`ReplayError` naming the node, its op, the shapes of its operands and the user's line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capviz.backends import registry
from capviz.backends.registry import Backend
from capviz.core.errors import ReplayInputError, UnsupportedOperationError
from capviz.core.ir import Graph
from capviz.core.python_guards import check as check_python
from capviz.core.references import begin_check, check_unchanged
from capviz.core.violations import check_replayable
from capviz.ops.random import check_seed, fresh_seed
from capviz.replay import state as state_replay
from capviz.replay.exactness import warn_inexact_outputs
from capviz.replay.inputs import (
    InputCheck,
    ReplayResult,
    backend_of,
    check_inputs,
    resolve_seed,
    result,
)
from capviz.replay.plan import check_fits
from capviz.replay.program import Program
from capviz.replay.stepper import Executor

# --- compiled replay --------------------------------------------------------------------------


def program(graph: Graph, backend: str | Backend) -> Program:
    """The compiled program of ``graph`` for ``backend``: compiled once, reused until the graph
    changes (a node added, a constant replaced: ``graph.version`` moves)."""
    return _compiled(graph, backend_of(backend))[0]


def _compiled(graph: Graph, backend: Backend) -> tuple[Program, InputCheck, bool]:
    """The program and the input check of ``graph`` for ``backend``, and whether the backend
    runs the program as it is (its ``execute`` is :class:`Backend`'s), cached on the graph per
    backend name and rebuilt when the graph changed. A backend holding results in this
    machine's memory first checks that the replay fits (:func:`check_fits`)."""
    entry = graph.replay_cache.get(backend.name)
    if entry is None or entry[0] != graph.version or entry[1] != len(graph.nodes):
        if backend.host_memory:
            check_fits(graph)
        entry = (graph.version, len(graph.nodes), Program(graph, backend),
                 InputCheck(graph, backend), type(backend).execute is Backend.execute)
        graph.replay_cache[backend.name] = entry
        warn_inexact_outputs(graph, backend)  # once per compiled program
    return entry[2], entry[3], entry[4]


class CompiledReplay:
    """A graph compiled for repeated replay: ``fn(x, y)`` runs it on positional inputs.

    Made by ``graph.compile()``. A call checks its inputs against precomputed shapes and dtypes,
    runs the compiled program and returns the outputs as a tuple in ``graph.outputs`` order.
    The program is rebuilt when the graph changes (``graph.version``).

    Attributes:
        graph: the graph.
        backend: the backend's name (``numpy``, ``cupy``, ``dask``, ``jax``).
    """

    def __init__(self, graph: Graph, backend: str = "auto", seed: int | None = None,
                 allow_violations: bool = False, **options: Any) -> None:
        self.graph = graph
        self._backend = backend_of(backend)
        registry.check_options(self._backend, options)
        self._options = options
        self.backend = self._backend.name
        self._allow = allow_violations
        self._seed = None if seed is None else check_seed(seed)
        self._refresh()

    def _refresh(self) -> None:
        graph = self.graph
        check_replayable(graph, self._allow)
        if graph.state_nodes:
            state_replay.check_backend(graph, self._backend)
        self._program, self._check, self._direct = _compiled(graph, self._backend)
        self._backend.admit(self._program, self._options)
        self._version = graph.version
        self._length = len(graph.nodes)
        seed = self._seed if self._seed is not None else graph.rng_seed
        self._fixed_seed = 0 if not self._program.random else seed  # no random op: no seed

    def __call__(self, *inputs: Any) -> tuple:
        """Replay on ``inputs`` (in ``graph.inputs`` order); returns the outputs' tuple."""
        graph = self.graph
        if graph.version != self._version or len(graph.nodes) != self._length:
            self._refresh()
        if graph.python_guards and not self._program.n_states:  # the Python values the
            check_python(graph.python_guards)  # capture read (with states: in state.run)
        args = self._check.positional(graph, inputs)
        seed = self._fixed_seed if self._fixed_seed is not None else fresh_seed()
        if self._program.n_states or self._program.n_effects:  # the live states read, the
            #                                         new values written back, logs made
            if graph.constant_fingerprints:
                check_unchanged(graph)
            return state_replay.run(graph, self._program, self._backend, args, seed,
                                    self._direct, self._options, named=False)[0]
        if graph.constant_fingerprints:
            return _checked_run(graph, self._program, self._backend, self._direct, args, seed,
                                self._options)
        if self._direct:
            return self._program(args, seed)
        return self._backend.execute(self._program, args, seed, self._options)

    def __repr__(self) -> str:
        return (f"<CompiledReplay of {len(self.graph.inputs)} inputs, {len(self.graph.ops)} ops "
                f"on {self.backend}>")


def compile_graph(graph: Graph, backend: str = "auto", seed: int | None = None,
                  allow_violations: bool = False, **options: Any) -> CompiledReplay:
    """``graph.compile()``: see :class:`CompiledReplay`."""
    return CompiledReplay(graph, backend, seed, allow_violations, **options)


def replay(graph: Graph, inputs: Mapping[str, Any] | None = None, backend: str = "auto",
           seed: int | None = None, check_finite: bool = False,
           to_numpy: bool = False, allow_violations: bool = False, state: str = "write",
           states: Mapping[str, Any] | None = None, **options: Any) -> ReplayResult:
    """Run ``graph`` on ``inputs`` (a mapping by input name); return its outputs by name.

    Args:
        graph: the graph.
        inputs: arrays by input name; shape and dtype must match exactly.
        backend: a backend name (``capviz.backends.registry.names()``): ``auto`` (CuPy with a
            GPU, else NumPy), ``numpy``, ``cupy``, ``dask``, ``jax``.
        seed: the seed of random ops (default: the seed of the device captured with).
        check_finite: stop at the first op whose output holds NaN or Inf
            (:class:`NonFiniteError`), and mark it in the graph.
        to_numpy: return host (NumPy) arrays whatever the backend.
        allow_violations: replay a graph that has error-level violations anyway.
        state: ``"write"`` writes the new values of the graph's states (the outside arrays
            the captured code wrote, :mod:`capviz.replay.state`) back into the live arrays,
            as an eager call does; ``"return"`` leaves them and returns the new values in
            ``result.states`` (by state name).
        states: the live arrays by state name, in place of those the capture met (a loaded
            graph has none).
        **options: the backend's own options (Dask: ``chunks=``, ``compute=``).

    Raises:
        TypeError: an option the backend does not take (naming the ones it does).
        IncompleteGraphError: the graph has error-level violations (and not
            ``allow_violations``): it would not compute what the captured code did.
        ReplayInputError: a missing, extra or mistyped input, naming it, expected and got.
        ReplayMemoryError: on a backend holding results in this machine's memory (NumPy),
            the replay's memory plan exceeds the memory available; raised before allocating.
        UnsupportedOperationError: an op the backend cannot run, named with the reason.
        ReplayError: an op failed; names the node and the user's source line.
        NonFiniteError: with ``check_finite``, the first non-finite op.
    """
    return replay_with(graph, inputs, backend, seed, check_finite, to_numpy, allow_violations,
                       options, state, states)


def replay_with(graph: Graph, inputs: Mapping[str, Any] | None, backend: str | Backend,
                seed: int | None, check_finite: bool, to_numpy: bool, allow_violations: bool,
                options: Mapping[str, Any], state: str = "write",
                states: Mapping[str, Any] | None = None) -> ReplayResult:
    """:func:`replay` with the backend's options as one mapping (what ``graph.replay`` calls:
    no keyword unpacking on the way)."""
    if inputs is not None and type(inputs) is not dict and not isinstance(inputs, Mapping):
        raise _not_a_mapping(graph, inputs)
    if graph.violation_records and not allow_violations:
        check_replayable(graph, allow_violations)
    engine = registry.get(backend) if type(backend) is str else backend
    if options:
        registry.check_options(engine, options)
    if check_finite:
        if graph.state_nodes:
            raise UnsupportedOperationError(
                "check_finite=True steps node by node, which does not write the graph's "
                f"states back ({state_replay.label(graph.state_nodes[0])}...); replay "
                "without it")
        if graph.effect_outputs or graph.logged_values:  # (review 7, finding 19: the logs
            logged = (graph.effect_outputs or graph.logged_values)[0]  # were dropped, silent)
            raise UnsupportedOperationError(
                "check_finite=True steps node by node, which does not log the values the "
                f"call logs ({logged.name}...); replay without it")
        if options:
            raise TypeError(f"check_finite=True steps node by node and takes no backend option "
                            f"(got {', '.join(sorted(options))})")
        args = check_inputs(graph, inputs, engine)
        ex = Executor(graph, None, backend=engine, keep=False,
                      seed=resolve_seed(graph, seed), _checked=args, allow_violations=True)
        ex.check_finite = True
        ex.run()
        return ex.outputs(to_numpy)
    if graph.state_nodes:  # refused by name before an op is bound
        state_replay.check_backend(graph, engine)
    prog, check, direct = _compiled(graph, engine)
    if graph.python_guards and not prog.n_states:  # the Python values the capture read
        check_python(graph.python_guards)  # (with states: in state.run, after the states'
        #                                    places: a rebound one is told so first)
    engine.admit(prog, options)
    args = check.named(graph, inputs)
    key = resolve_seed(graph, seed) if prog.random or seed is not None else 0
    if prog.n_states or prog.n_effects:
        if graph.constant_fingerprints:
            check_unchanged(graph)
        values, new = state_replay.run(graph, prog, engine, args, key, direct, options, state,
                                       states)
        out = result(prog.output_names, values, engine, to_numpy)
        out.states = new
        return out
    if graph.constant_fingerprints:
        values = _checked_run(graph, prog, engine, direct, args, key, options)
    else:
        values = prog(args, key) if direct else engine.execute(prog, args, key, options)
    return result(prog.output_names, values, engine, to_numpy)


def _checked_run(graph: Graph, prog: Program, engine: Backend, direct: bool, args: list,
                 key: Any, options: Mapping[str, Any]) -> tuple:
    """Run ``prog`` on a graph keeping constants by reference, checking them unchanged
    (:mod:`capviz.core.references`) while it runs: the check reads the weights on a thread
    of its own as the program (NumPy's, or JAX's XLA threads) computes, and is waited for
    before any result is returned. A program that fails on a changed constant is refused for
    the change, which explains it."""
    checked = begin_check(graph)
    try:
        values = prog(args, key) if direct else engine.execute(prog, args, key, options)
    except Exception as exc:
        err = checked()
        if err is not None:
            raise err from exc
        raise
    err = checked()
    if err is not None:
        raise err
    return values


def _not_a_mapping(graph: Graph, inputs: Any) -> ReplayInputError:
    """The error for ``graph.replay(x)``: inputs are given by name, in a mapping."""
    names = graph.inputs
    example = ", ".join(f"{name!r}: ..." for name in names) or ""
    return ReplayInputError(
        f"inputs: expected a mapping of input name to value, got {type(inputs).__name__}; "
        f"the graph's inputs are {', '.join(names) or '(none)'}. "
        f"Fix: graph.replay({{{example}}}), or graph.compile()(...) to pass them in order")
