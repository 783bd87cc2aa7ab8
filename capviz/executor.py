"""Replay: run a graph on NumPy or CuPy, fast or one node at a time.

Two ways to run, like torch.fx's GraphModule and Interpreter:

* :class:`capviz.replay_program.Program` compiles the graph once per backend into a table of
  steps run by one tight loop, with the memory plan of :mod:`capviz.replay_plan` (results
  written into dead buffers with ``out=``); :func:`replay` and :class:`CompiledReplay`
  (``graph.compile()``) run it. Nothing from a graph file is ever evaluated.
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
from capviz.backends.cupy import cupy_available, load_cupy
from capviz.errors import CapvizError, NonFiniteError, ReplayError, ReplayInputError
from capviz.ir import CapturedGraph, Node, format_source
from capviz.replay_program import Program, picker
from capviz.replay_warnings import user_warnings
from capviz.rng import check_seed, fresh_seed
from capviz.violations import check_replayable

# --- backends and inputs ------------------------------------------------------------------------


def namespace(backend: str) -> Any:
    """The array namespace for ``backend`` (``auto``: CuPy when it is usable, else NumPy)."""
    if backend == "numpy":
        return np
    if backend == "cupy":
        return load_cupy()
    if backend == "auto":
        return load_cupy() if cupy_available() else np
    raise ValueError(f"unknown backend {backend!r}; expected 'auto', 'numpy' or 'cupy'")


def _type_text(shape: Any, dtype: Any) -> str:
    return f"{np.dtype(dtype)}[{','.join(map(str, shape))}]"


def check_inputs(graph: CapturedGraph, inputs: Mapping[str, Any] | None, xp: Any) -> list[Any]:
    """Validate replay inputs; return them as arrays of ``xp`` in graph input order."""
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
    out = []
    for node in graph.input_nodes:
        value = inputs[node.name]
        if isinstance(value, Tensor):
            if not hasattr(value._backend, "xp"):
                raise ReplayInputError(f"input {node.name!r} is a capture tensor, which has no "
                                       "value; pass an array "
                                       f"{_type_text(node.shape, node.dtype)}")
            value = value._data
        is_gpu = hasattr(value, "__cuda_array_interface__")
        if isinstance(value, np.generic):
            value = np.asarray(value)
        if not (isinstance(value, np.ndarray) or is_gpu):
            raise ReplayInputError(f"input {node.name!r} must be an array "
                                   f"{_type_text(node.shape, node.dtype)}, got "
                                   f"{type(value).__name__} (wrap it with np.asarray first)")
        if is_gpu and xp is np:
            library = type(value).__module__.split(".")[0]
            raise ReplayInputError(f"input {node.name!r} is a {library} GPU "
                                   "array but the replay runs on NumPy; pass a NumPy array or "
                                   "replay with backend='cupy'")
        _check_array_type(node, value)
        got_shape, got_dtype = tuple(value.shape), np.dtype(value.dtype)
        if got_shape != node.shape or got_dtype != node.dtype:
            raise ReplayInputError(f"input {node.name!r}: expected "
                                   f"{_type_text(node.shape, node.dtype)}, got "
                                   f"{_type_text(got_shape, got_dtype)}")
        if node.params.get("layout") == "C" and not value.flags.c_contiguous:
            raise ReplayInputError(
                f"input {node.name!r}: expected a C-contiguous array (the layout it was "
                "captured with), got a non-C-contiguous one (Fortran-ordered, transposed or "
                "strided): the graph writes into this input, or into a reshape or ravel whose "
                "view-or-copy answer in NumPy depends on its layout, and eager NumPy would "
                f"write otherwise for another layout. Pass np.ascontiguousarray({node.name})")
        out.append(value if xp is np else xp.asarray(value))
    return out


def _check_array_type(node: Node, value: Any) -> None:
    """Refuse an ndarray subclass other than ``np.memmap`` (``np.matrix``, a masked array...):
    it may compute otherwise than the plain arrays the graph was captured for."""
    from capviz.backends.capture import subclass_fix, type_name

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
    """Outputs by name; ``backend`` says where the replay ran (``numpy`` or ``cupy``)."""

    backend: str = "numpy"


def _result(names: Any, values: Any, xp: Any, to_numpy: bool) -> ReplayResult:
    out = ReplayResult(zip(names, values))
    if xp is not np:  # "numpy" is the class default
        out.backend = xp.__name__
    if to_numpy and xp is not np:
        for name, value in out.items():
            out[name] = xp.asnumpy(value)
    return out


# --- compiled replay --------------------------------------------------------------------------


def program(graph: CapturedGraph, xp: Any) -> Program:
    """The compiled program of ``graph`` for ``xp``: compiled once, reused until the graph
    changes (a node added, a constant replaced: ``graph.version`` moves)."""
    return _compiled(graph, xp)[0]


def _compiled(graph: CapturedGraph, xp: Any) -> tuple[Program, InputCheck]:
    """The program and the input check of ``graph`` for ``xp``, cached on the graph per
    namespace and rebuilt when the graph changed."""
    entry = graph._compiled.get(xp.__name__)
    if entry is None or entry[0] != graph.version or entry[1] != len(graph.nodes):
        entry = (graph.version, len(graph.nodes), Program(graph, xp), InputCheck(graph, xp))
        graph._compiled[xp.__name__] = entry
    return entry[2], entry[3]


class InputCheck:
    """The graph's input shapes and dtypes as tuples, to check positional inputs fast; anything
    but an ndarray of exactly the right type goes through :func:`check_inputs` for its error
    (or its conversion: eager tensors, NumPy scalars, host arrays for CuPy)."""

    def __init__(self, graph: CapturedGraph, xp: Any) -> None:
        self.xp = xp  # no reference to the graph: the graph holds its input checks
        self.names = tuple(graph.inputs)
        self.types = tuple((n.shape, n.dtype) for n in graph.input_nodes)
        self.c_only = tuple(n.params.get("layout") == "C" for n in graph.input_nodes)
        self.array_type = np.ndarray if xp is np else xp.ndarray
        self._pick = picker(self.names) if self.names else None

    def positional(self, graph: CapturedGraph, args: tuple) -> Any:
        """``args`` in input order, checked (a tuple, or a list after conversion)."""
        if len(args) == len(self.types):
            array_type = self.array_type
            for value, (shape, dtype), c_only in zip(args, self.types, self.c_only):
                if type(value) is not array_type or value.shape != shape \
                        or (value.dtype is not dtype and value.dtype != dtype) \
                        or (c_only and not value.flags.c_contiguous):
                    break
            else:
                return args
        if len(args) != len(self.types):
            raise ReplayInputError(f"expected {len(self.types)} inputs "
                                   f"({', '.join(self.names) or 'none'}), got {len(args)}")
        return check_inputs(graph, dict(zip(self.names, args)), self.xp)

    def named(self, graph: CapturedGraph, inputs: Mapping[str, Any] | None) -> Any:
        """``inputs`` (by name) in input order, checked."""
        if self._pick is not None and inputs is not None and len(inputs) == len(self.names):
            try:
                args = self._pick(inputs)
            except (KeyError, TypeError):
                pass
            else:
                return self.positional(graph, args)
        return check_inputs(graph, inputs, self.xp)


class CompiledReplay:
    """A graph compiled for repeated replay: ``fn(x, y)`` runs it on positional inputs.

    Made by ``graph.compile()``. A call checks its inputs against precomputed shapes and dtypes,
    runs the compiled program and returns the outputs as a tuple in ``graph.outputs`` order.
    The program is rebuilt when the graph changes (``graph.version``).

    Attributes:
        graph: the graph.
        backend: ``numpy`` or ``cupy``.
    """

    def __init__(self, graph: CapturedGraph, backend: str = "auto", seed: int | None = None,
                 allow_violations: bool = False) -> None:
        self.graph = graph
        self._xp = namespace(backend)
        self.backend = self._xp.__name__
        self._allow = allow_violations
        self._seed = None if seed is None else check_seed(seed)
        self._refresh()

    def _refresh(self) -> None:
        graph = self.graph
        check_replayable(graph, self._allow)
        self._program, self._check = _compiled(graph, self._xp)
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
        return self._program(args, seed)

    def __repr__(self) -> str:
        return (f"<CompiledReplay of {len(self.graph.inputs)} inputs, {len(self.graph.ops)} ops "
                f"on {self.backend}>")


def compile_graph(graph: CapturedGraph, backend: str = "auto", seed: int | None = None,
                  allow_violations: bool = False) -> CompiledReplay:
    """``graph.compile()``: see :class:`CompiledReplay`."""
    return CompiledReplay(graph, backend, seed, allow_violations)


def replay(graph: CapturedGraph, inputs: Mapping[str, Any] | None = None, backend: str = "auto",
           seed: int | None = None, check_finite: bool = False,
           to_numpy: bool = False, allow_violations: bool = False) -> ReplayResult:
    """Run ``graph`` on ``inputs`` (a mapping by input name); return its outputs by name.

    Args:
        graph: the graph.
        inputs: arrays by input name; shape and dtype must match exactly.
        backend: ``auto`` (CuPy with a GPU, else NumPy), ``numpy`` or ``cupy``.
        seed: the seed of random ops (default: the seed of the device captured with).
        check_finite: stop at the first op whose output holds NaN or Inf
            (:class:`NonFiniteError`), and mark it in the graph.
        to_numpy: return host arrays from a CuPy replay.
        allow_violations: replay a graph that has error-level violations anyway.

    Raises:
        IncompleteGraphError: the graph has error-level violations (and not
            ``allow_violations``): it would not compute what the captured code did.
        ReplayInputError: a missing, extra or mistyped input, naming it, expected and got.
        ReplayError: an op failed; names the node and the user's source line.
        NonFiniteError: with ``check_finite``, the first non-finite op.
    """
    if graph.violation_records and not allow_violations:
        check_replayable(graph, allow_violations)
    xp = namespace(backend)
    if check_finite:
        args = check_inputs(graph, inputs, xp)
        ex = Executor(graph, None, backend=xp.__name__, keep=False,
                      seed=resolve_seed(graph, seed), _checked=args, allow_violations=True)
        ex.check_finite = True
        ex.run()
        return ex.outputs(to_numpy)
    prog, check = _compiled(graph, xp)
    args = check.named(graph, inputs)
    key = resolve_seed(graph, seed) if prog.random or seed is not None else 0
    return _result(prog.output_names, prog(args, key), xp, to_numpy)


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
        backend: ``auto``, ``numpy`` or ``cupy``.
        keep: keep every value (``True``) or free each after its last use (``False``).
        seed: the seed of random ops.
        allow_violations: step through a graph that has error-level violations anyway (else
            :class:`IncompleteGraphError`).

    Attributes:
        position: index of the next node to run (``len(graph)`` when finished).
        values: kept values, by node, index or name.
        check_finite: raise :class:`NonFiniteError` at the first non-finite op output.
    """

    def __init__(self, graph: CapturedGraph, inputs: Mapping[str, Any] | None = None,
                 backend: str = "auto", keep: bool = True, seed: int | None = None,
                 _checked: list | None = None, allow_violations: bool = False) -> None:
        check_replayable(graph, allow_violations)
        self.graph = graph
        self.xp = namespace(backend)
        args = _checked if _checked is not None else check_inputs(graph, inputs, self.xp)
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
        return _result(self.graph.outputs, values, self.xp, to_numpy)

    # --- one method per node kind ----------------------------------------------------------

    def run_node(self, node: Node) -> Any:
        """Dispatch on ``node.kind``."""
        return getattr(self, f"run_{node.kind}")(node)

    def run_input(self, node: Node) -> Any:
        return self._inputs[node.index]

    def run_constant(self, node: Node) -> Any:
        value = self.graph.constant_values[node.index]
        return value if self.xp is np else self.xp.asarray(value)

    def run_op(self, node: Node) -> Any:
        op = ops.OPS[node.op]
        args = [self._store[a.index] if isinstance(a, Node) else a for a in node.args]
        try:
            if op.random:
                return op.bind(self.xp)(self.seed, **node.params)
            if self.check_finite:  # the check reports NaN/Inf; NumPy's warnings would repeat it
                with np.errstate(all="ignore"):
                    return op.bind(self.xp)(*args, **node.params)
            with user_warnings(lambda frame: node):  # NumPy's warnings at the user's line
                return op.bind(self.xp)(*args, **node.params)
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
