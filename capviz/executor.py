"""Replay: run a graph on a backend (NumPy, CuPy, Dask, JAX), fast or one node at a time.

Two ways to run, like torch.fx's GraphModule and Interpreter:

* :class:`capviz.replay_program.Program` compiles the graph once per backend into a table of
  steps run by one tight loop, with the memory plan of :mod:`capviz.replay_plan` (results
  written into dead buffers with ``out=``); :func:`replay` and :class:`CompiledReplay`
  (``graph.compile()``) hand it to the backend's ``execute``. Nothing from a graph file is
  ever evaluated.

Backends are looked up by name in :mod:`capviz.backends.registry`; nothing here names one.
* :class:`Executor` steps node by node with one overridable method per node kind, keeps values
  for inspection, and supports breakpoints; ``check_finite`` and ``compare`` use it.

An op that fails is re-raised as :class:`ReplayError` naming the node, its op, the shapes of its
operands and the user's source line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends import registry
from capviz.backends.capture import subclass_fix, type_name
from capviz.backends.eager import EagerBackend
from capviz.backends.registry import Backend
from capviz.errors import CapvizError, NonFiniteError, ReplayError, ReplayInputError
from capviz.ir import CapturedGraph, Node, format_source
from capviz.replay_aliases import AliasCheck
from capviz.replay_plan import check_fits
from capviz.replay_program import Program, picker
from capviz.replay_warnings import user_warnings
from capviz.rng import check_seed, fresh_seed
from capviz.violations import check_replayable

# --- backends and inputs ------------------------------------------------------------------------


def backend_of(backend: str | Backend) -> Backend:
    """The :class:`Backend` for a name (``auto``: CuPy when it is usable, else NumPy)."""
    return backend if isinstance(backend, Backend) else registry.get(backend)


def _type_text(shape: Any, dtype: Any) -> str:
    return f"{np.dtype(dtype)}[{','.join(map(str, shape))}]"


def check_inputs(graph: CapturedGraph, inputs: Mapping[str, Any] | None,
                 backend: Backend) -> list[Any]:
    """Validate replay inputs; return them as arrays of ``backend`` in graph input order.

    An input is a NumPy array (moved with ``backend.from_host``), an array of ``backend``
    itself, or an eager tensor. The messages are the same on every backend.
    """
    from capviz.tensor import Tensor

    inputs = dict(inputs or {})
    for node in graph.input_nodes:
        if node.name is None:
            raise ReplayInputError(f"the graph reads an undeclared input %{node.index} "
                                   f"(first used at {format_source(node.source)}); only a "
                                   "complete graph can be replayed")
    names = graph.inputs
    missing = [n for n in names if n not in inputs]
    if missing:
        node = graph.node(missing[0])
        raise ReplayInputError(f"missing input {missing[0]!r}: expected "
                               f"{_type_text(node.shape, node.dtype)} (the graph's inputs are "
                               f"{', '.join(names)})")
    extra = sorted(set(inputs) - set(names))
    if extra:
        raise ReplayInputError(f"unexpected input {extra[0]!r}: the graph's inputs are "
                               f"{', '.join(names) or '(none)'}")
    out, host = [], []
    for node in graph.input_nodes:
        value = inputs[node.name]
        if isinstance(value, Tensor):
            if not isinstance(value._backend, EagerBackend):
                raise ReplayInputError(f"input {node.name!r} is a capture tensor, which has no "
                                       "value; pass an array "
                                       f"{_type_text(node.shape, node.dtype)}")
            value = value._data
        value = _scalar_input(node, value)
        native = backend.is_native(value)
        if not native:
            foreign = registry.owner(value)
            if foreign is not None:
                raise ReplayInputError(
                    f"input {node.name!r} is an array of the {foreign.name} backend "
                    f"({type_name(value)}) but the replay runs on {backend.name}; pass a NumPy "
                    f"array or replay with backend={foreign.name!r}")
            if not isinstance(value, np.ndarray):
                raise ReplayInputError(f"input {node.name!r} must be an array "
                                       f"{_type_text(node.shape, node.dtype)}, got "
                                       f"{type(value).__name__} (wrap it with np.asarray first)")
            _check_array_type(node, value)
        problem = backend.input_problem(value) if native else None
        if problem is not None:
            raise ReplayInputError(f"input {node.name!r}: {problem}")
        got_shape, got_dtype = tuple(value.shape), np.dtype(value.dtype)
        if got_shape != node.shape or got_dtype != node.dtype:
            raise ReplayInputError(f"input {node.name!r}: expected "
                                   f"{_type_text(node.shape, node.dtype)}, got "
                                   f"{_type_text(got_shape, got_dtype)}")
        flags = getattr(value, "flags", None)  # arrays without a layout (Dask, JAX) have none
        if node.params.get("layout") == "C" and flags is not None and not flags.c_contiguous:
            raise ReplayInputError(
                f"input {node.name!r}: expected a C-contiguous array (the layout it was "
                "captured with), got a non-C-contiguous one (Fortran-ordered, transposed or "
                "strided): the graph writes into this input, or into a reshape or ravel whose "
                "view-or-copy answer in NumPy depends on its layout, and eager NumPy would "
                f"write otherwise for another layout. Pass np.ascontiguousarray({node.name})")
        host.append(value)
        out.append(value if native else backend.from_host(value))
    AliasCheck(graph).check(host)
    return out


def _scalar_input(node: Node, value: Any) -> Any:
    """A NumPy scalar for an input captured with a NumPy scalar example, as a 0-d array (its
    scalar math was recorded: ``scalar_power``...); either kind given for the other is refused,
    as NumPy computes on scalars otherwise than on 0-d arrays."""
    scalar = "scalar" in node.params
    if isinstance(value, np.generic) and scalar:
        return np.asarray(value)
    kind = _type_text(node.shape, node.dtype)
    if isinstance(value, np.generic):
        raise ReplayInputError(
            f"input {node.name!r} was captured as a 0-d array {kind} and got a NumPy scalar "
            f"numpy.{type(value).__name__}, on which NumPy computes otherwise (a scalar's own "
            "*, ** and abs() round otherwise than the array loops; += rebinds it): pass "
            f"np.asarray({node.name}), or capture with a NumPy scalar example "
            f"(scope.input({node.name!r}, np.{node.dtype.name}(0))) to replay scalar math")
    if scalar and isinstance(value, np.ndarray) and value.ndim == 0:
        raise ReplayInputError(
            f"input {node.name!r} was captured as a NumPy scalar numpy.{node.dtype.name} and got "
            "a 0-d array, on which NumPy computes otherwise (a scalar's own *, ** and abs() "
            f"round otherwise than the array loops): pass {node.name}[()], the scalar")
    return value


def _check_array_type(node: Node, value: Any) -> None:
    """Refuse an ndarray subclass other than ``np.memmap`` (``np.matrix``, a masked array...):
    it may compute otherwise than the plain arrays the graph was captured for."""
    fix = subclass_fix(value)
    if fix is not None:
        raise ReplayInputError(f"input {node.name!r}: expected a numpy.ndarray "
                               f"{_type_text(node.shape, node.dtype)}, got {type_name(value)} "
                               f"(replay computes on plain arrays, and {fix})")


def resolve_seed(graph: CapturedGraph, seed: int | None) -> int:
    """The seed random ops use: ``seed``, else the graph's, else fresh entropy."""
    if seed is not None:
        return check_seed(seed)
    return graph.rng_seed if graph.rng_seed is not None else fresh_seed()


def replay_error(node: Node, args: list, err: BaseException) -> ReplayError:
    """A :class:`ReplayError` for ``err`` raised by ``node``."""
    shapes = ", ".join(_type_text(a.shape, a.dtype) if hasattr(a, "shape") and hasattr(a, "dtype")
                       else f"{len(a)} results" if isinstance(a, (list, tuple)) else repr(a)
                       for a in args)
    where = format_source(node.source) or "unknown source"
    e = ReplayError(f"replay failed at node %{node.index} ({node.op}) of {shapes or 'no args'}"
                    f", recorded at {where}: {type(err).__name__}: {err}")
    e.node = node
    return e


class ReplayResult(dict):
    """Outputs by name; ``backend`` is the name of the backend the replay ran on."""

    __slots__ = ("backend",)


def _result(names: Any, values: Any, backend: Backend, to_numpy: bool) -> ReplayResult:
    out = ReplayResult(zip(names, values))
    out.backend = backend.name
    if to_numpy:
        to_host = backend.to_host
        for name, value in out.items():
            out[name] = to_host(value)
    return out


# --- compiled replay --------------------------------------------------------------------------


def program(graph: CapturedGraph, backend: str | Backend) -> Program:
    """The compiled program of ``graph`` for ``backend``: compiled once, reused until the graph
    changes (a node added, a constant replaced: ``graph.version`` moves)."""
    return _compiled(graph, backend_of(backend))[0]


def _compiled(graph: CapturedGraph, backend: Backend) -> tuple[Program, InputCheck, bool]:
    """The program and the input check of ``graph`` for ``backend``, and whether the backend
    runs the program as it is (its ``execute`` is :class:`Backend`'s), cached on the graph per
    backend name and rebuilt when the graph changed. A backend holding results in this
    machine's memory first checks that the replay fits (:func:`check_fits`)."""
    entry = graph._compiled.get(backend.name)
    if entry is None or entry[0] != graph.version or entry[1] != len(graph.nodes):
        if backend.host_memory:
            check_fits(graph)
        entry = (graph.version, len(graph.nodes), Program(graph, backend),
                 InputCheck(graph, backend), type(backend).execute is Backend.execute)
        graph._compiled[backend.name] = entry
    return entry[2], entry[3], entry[4]


class InputCheck:
    """The graph's input shapes and dtypes as tuples, to check positional inputs fast; anything
    but an array of the backend with exactly the right type goes through :func:`check_inputs`
    for its error (or its conversion: eager tensors, NumPy scalars, host arrays)."""

    def __init__(self, graph: CapturedGraph, backend: Backend) -> None:
        self.backend = backend  # no reference to the graph: the graph holds its input checks
        self.names = tuple(graph.inputs)
        self.types = tuple((n.shape, n.dtype) for n in graph.input_nodes)
        # an array of an immutable backend has no memory layout to check
        self.c_only = tuple(backend.mutable and n.params.get("layout") == "C"
                            for n in graph.input_nodes)
        self.native = backend.is_native
        self.array_type = backend.array_type  # checked first: no call for the common case
        self._pick = picker(self.names) if self.names else None
        # an input captured as a NumPy scalar refuses a 0-d array: checked by check_inputs
        self.scalars = any("scalar" in n.params for n in graph.input_nodes)
        aliases = AliasCheck(graph)  # only a graph writing into an input has a check to make
        self.aliases = aliases if aliases.written else None

    def positional(self, graph: CapturedGraph, args: tuple) -> Any:
        """``args`` in input order, checked (a tuple, or a list after conversion)."""
        if len(args) == len(self.types) and not self.scalars:
            native, array_type = self.native, self.array_type
            for value, (shape, dtype), c_only in zip(args, self.types, self.c_only):
                if (type(value) is not array_type and not native(value)) \
                        or value.shape != shape \
                        or (value.dtype is not dtype and value.dtype != dtype) \
                        or (c_only and not value.flags.c_contiguous):
                    break
            else:
                if self.aliases is not None:
                    self.aliases.check(args)
                return args
        if len(args) != len(self.types):
            raise ReplayInputError(f"expected {len(self.types)} inputs "
                                   f"({', '.join(self.names) or 'none'}), got {len(args)}")
        return check_inputs(graph, dict(zip(self.names, args)), self.backend)

    def named(self, graph: CapturedGraph, inputs: Mapping[str, Any] | None) -> Any:
        """``inputs`` (by name) in input order, checked."""
        if self._pick is not None and inputs is not None and len(inputs) == len(self.names):
            try:
                args = self._pick(inputs)
            except (KeyError, TypeError):
                pass
            else:
                return self.positional(graph, args)
        return check_inputs(graph, inputs, self.backend)


class CompiledReplay:
    """A graph compiled for repeated replay: ``fn(x, y)`` runs it on positional inputs.

    Made by ``graph.compile()``. A call checks its inputs against precomputed shapes and dtypes,
    runs the compiled program and returns the outputs as a tuple in ``graph.outputs`` order.
    The program is rebuilt when the graph changes (``graph.version``).

    Attributes:
        graph: the graph.
        backend: the backend's name (``numpy``, ``cupy``, ``dask``, ``jax``).
    """

    def __init__(self, graph: CapturedGraph, backend: str = "auto", seed: int | None = None,
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
        self._program, self._check, self._direct = _compiled(graph, self._backend)
        self._version = graph.version
        self._length = len(graph.nodes)
        seed = self._seed if self._seed is not None else graph.rng_seed
        self._fixed_seed = 0 if not self._program.random else seed  # no random op: no seed

    def __call__(self, *inputs: Any) -> tuple:
        """Replay on ``inputs`` (in ``graph.inputs`` order); returns the outputs' tuple."""
        graph = self.graph
        if graph.version != self._version or len(graph.nodes) != self._length:
            self._refresh()
        args = self._check.positional(graph, inputs)
        seed = self._fixed_seed if self._fixed_seed is not None else fresh_seed()
        if self._direct:
            return self._program(args, seed)
        return self._backend.execute(self._program, args, seed, self._options)

    def __repr__(self) -> str:
        return (f"<CompiledReplay of {len(self.graph.inputs)} inputs, {len(self.graph.ops)} ops "
                f"on {self.backend}>")


def compile_graph(graph: CapturedGraph, backend: str = "auto", seed: int | None = None,
                  allow_violations: bool = False, **options: Any) -> CompiledReplay:
    """``graph.compile()``: see :class:`CompiledReplay`."""
    return CompiledReplay(graph, backend, seed, allow_violations, **options)


def replay(graph: CapturedGraph, inputs: Mapping[str, Any] | None = None, backend: str = "auto",
           seed: int | None = None, check_finite: bool = False,
           to_numpy: bool = False, allow_violations: bool = False,
           **options: Any) -> ReplayResult:
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
                       options)


def replay_with(graph: CapturedGraph, inputs: Mapping[str, Any] | None, backend: str | Backend,
                seed: int | None, check_finite: bool, to_numpy: bool, allow_violations: bool,
                options: Mapping[str, Any]) -> ReplayResult:
    """:func:`replay` with the backend's options as one mapping (what ``graph.replay`` calls:
    no keyword unpacking on the way)."""
    if graph.violation_records and not allow_violations:
        check_replayable(graph, allow_violations)
    engine = registry.get(backend) if type(backend) is str else backend
    if options:
        registry.check_options(engine, options)
    if check_finite:
        if options:
            raise TypeError(f"check_finite=True steps node by node and takes no backend option "
                            f"(got {', '.join(sorted(options))})")
        args = check_inputs(graph, inputs, engine)
        ex = Executor(graph, None, backend=engine, keep=False,
                      seed=resolve_seed(graph, seed), _checked=args, allow_violations=True)
        ex.check_finite = True
        ex.run()
        return ex.outputs(to_numpy)
    prog, check, direct = _compiled(graph, engine)
    args = check.named(graph, inputs)
    key = resolve_seed(graph, seed) if prog.random or seed is not None else 0
    values = prog(args, key) if direct else engine.execute(prog, args, key, options)
    return _result(prog.output_names, values, engine, to_numpy)


# --- the stepping executor ------------------------------------------------------------------


class Values(Mapping):
    """Kept values by node (``Node``, index, or input/output/constant name)."""

    def __init__(self, graph: CapturedGraph, store: dict[int, Any]) -> None:
        self._graph = graph
        self._store = store

    def __getitem__(self, ref: Any) -> Any:
        node = self._graph.node(ref)
        if node.kind == "output":
            node = node.args[0]
        try:
            return self._store[node.index]
        except KeyError:
            raise KeyError(f"no value for %{node.index}: it has not run yet, or was freed "
                           "(create the executor with keep=True)") from None

    def __iter__(self) -> Iterator[int]:
        return iter(self._store)

    def __len__(self) -> int:
        return len(self._store)


class Executor:
    """Replay one node at a time: the debugger.

    Override ``run_input``, ``run_constant``, ``run_op``, ``run_output`` or ``run_violation`` to
    change how a kind of node runs (as with ``torch.fx.Interpreter``).

    Args:
        graph: the graph.
        inputs: arrays by input name.
        backend: a backend name (``auto``, ``numpy``, ``cupy``, ``dask``, ``jax``) or a
            :class:`~capviz.backends.registry.Backend`.
        keep: keep every value (``True``) or free each after its last use (``False``).
        seed: the seed of random ops.
        allow_violations: step through a graph that has error-level violations anyway (else
            :class:`IncompleteGraphError`).

    Attributes:
        backend: the :class:`~capviz.backends.registry.Backend` it runs on.
        position: index of the next node to run (``len(graph)`` when finished).
        values: kept values, by node, index or name.
        check_finite: raise :class:`NonFiniteError` at the first non-finite op output.
    """

    def __init__(self, graph: CapturedGraph, inputs: Mapping[str, Any] | None = None,
                 backend: str | Backend = "auto", keep: bool = True, seed: int | None = None,
                 _checked: list | None = None, allow_violations: bool = False) -> None:
        check_replayable(graph, allow_violations)
        self.graph = graph
        self.backend = backend_of(backend)
        self.xp = self.backend.namespace()
        if self.backend.host_memory:
            check_fits(graph)
        args = _checked if _checked is not None else check_inputs(graph, inputs, self.backend)
        self._bound: dict[str, Callable] = {}
        self._inputs = dict(zip((n.index for n in graph.input_nodes), args))
        self.seed = resolve_seed(graph, seed)
        self.keep = keep
        self.position = 0
        self.check_finite = False
        self._store: dict[int, Any] = {}
        self.values = Values(graph, self._store)
        self._breakpoints: set[int] = set()
        self._last_use: dict[int, int] = {}
        outputs = {n.args[0].index for n in graph.output_nodes}
        for n in graph.nodes:
            for _, a in n.operands:
                if a.index not in outputs:
                    self._last_use[a.index] = n.index

    @property
    def finished(self) -> bool:
        """True when every node has run."""
        return self.position >= len(self.graph.nodes)

    def break_at(self, *refs: Any) -> None:
        """Pause :meth:`run` after these nodes (Node, index or name) have run."""
        for ref in refs:
            self._breakpoints.add(self.graph.node(ref).index)

    def clear_breakpoints(self) -> None:
        """Remove every breakpoint."""
        self._breakpoints.clear()

    def step(self) -> Node:
        """Run the next node (in program order) and return it."""
        if self.finished:
            raise StopIteration("the executor has run every node")
        node = self.graph.nodes[self.position]
        value = self.run_node(node)
        self.position += 1
        if node.kind in ("input", "constant", "op"):
            self._store[node.index] = value
            if self.check_finite and node.kind == "op":
                self._check_finite(node, value)
        if not self.keep:
            for _, a in node.operands:
                if self._last_use.get(a.index) == node.index:
                    self._store.pop(a.index, None)
        return node

    def run(self, until: Any = None) -> Node | None:
        """Run until ``until`` (a node, index, name, or ``predicate(node, value)``) has run, a
        breakpoint is hit, or the graph ends. Returns the node it stopped after, or ``None``
        when it ran to the end."""
        target = None
        predicate: Callable | None = None
        if callable(until) and not isinstance(until, Node):
            predicate = until
        elif until is not None:
            target = self.graph.node(until).index
        while not self.finished:
            node = self.step()
            if node.index == target or node.index in self._breakpoints:
                return node
            if predicate is not None and node.index in self._store \
                    and predicate(node, self._store[node.index]):
                return node
        return None

    def outputs(self, to_numpy: bool = False) -> ReplayResult:
        """The outputs by name (after the graph has run to the end)."""
        if not self.finished:
            raise RuntimeError(f"the executor stopped at %{self.position}; run() it to the end")
        values = [self.xp.asarray(self._store[n.args[0].index])
                  for n in self.graph.output_nodes]
        return _result(self.graph.outputs, values, self.backend, to_numpy)

    # --- one method per node kind ----------------------------------------------------------

    def run_node(self, node: Node) -> Any:
        """Dispatch on ``node.kind``."""
        return getattr(self, f"run_{node.kind}")(node)

    def run_input(self, node: Node) -> Any:
        return self._inputs[node.index]

    def run_constant(self, node: Node) -> Any:
        return self.backend.from_host(self.graph.constant_values[node.index])

    def run_op(self, node: Node) -> Any:
        fn = self._bound.get(node.op)
        if fn is None:
            fn = self._bound[node.op] = self.backend.bind(ops.OPS[node.op])
        args = [self._store[a.index] if isinstance(a, Node) else a for a in node.args]
        try:
            if ops.OPS[node.op].random:
                return fn(self.seed, **node.params)
            if self.check_finite:  # the check reports NaN/Inf; NumPy's warnings would repeat it
                with np.errstate(all="ignore"):
                    return fn(*args, **node.params)
            with user_warnings(lambda frame: node):  # NumPy's warnings at the user's line
                return fn(*args, **node.params)
        except CapvizError:
            raise
        except Exception as err:
            raise replay_error(node, args, err) from err

    def run_output(self, node: Node) -> Any:
        return None

    def run_violation(self, node: Node) -> Any:
        return None

    def _check_finite(self, node: Node, value: Any) -> None:
        if isinstance(value, (tuple, list)):
            return
        xp = self.xp
        value = xp.asarray(value)
        if value.dtype.kind not in "fc" or bool(xp.isfinite(value).all()):
            return
        self.graph.marks["nonfinite"] = node.index
        bad = int((~xp.isfinite(value)).sum())
        feeding = {a: self._store.get(a.index) for a in node.args if isinstance(a, Node)}
        err = NonFiniteError(
            f"first non-finite value at node %{node.index} ({node.op}, {bad} of {value.size} "
            f"elements NaN/Inf), recorded at {format_source(node.source) or 'unknown source'}; "
            "its operands are in err.inputs")
        err.node = node
        err.inputs = feeding
        err.value = value
        raise err
