"""Replay: run a graph on NumPy or CuPy, fast or one node at a time.

Two ways to run, like torch.fx's codegen and Interpreter:

* :class:`Program` compiles the graph once per backend into a straight-line Python function
  (``v3 = f3(v1, v2)``, ``del v1`` after its last use) and is what :func:`replay` calls. Only
  identifiers made here appear in the generated code; every op, param and literal is bound by
  name in its namespace, so no string from a graph file is ever evaluated.
* :class:`Executor` steps node by node with one overridable method per node kind, keeps values
  for inspection, and supports breakpoints; ``check_finite`` and ``compare`` use it.

An op that fails is re-raised as :class:`ReplayError` naming the node, its op, the shapes of its
operands and the user's source line.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.cupy import load_cupy
from capviz.errors import CapvizError, NonFiniteError, ReplayError, ReplayInputError
from capviz.ir import CapturedGraph, Node, format_source
from capviz.rng import check_seed, fresh_seed

# --- backends and inputs ------------------------------------------------------------------------


def namespace(backend: str) -> Any:
    """The array namespace for ``backend`` (``auto``: CuPy when it is usable, else NumPy)."""
    if backend == "numpy":
        return np
    if backend == "cupy":
        return load_cupy()
    if backend == "auto":
        from capviz.backends.cupy import cupy_available

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
        got_shape, got_dtype = tuple(value.shape), np.dtype(value.dtype)
        if got_shape != node.shape or got_dtype != node.dtype:
            raise ReplayInputError(f"input {node.name!r}: expected "
                                   f"{_type_text(node.shape, node.dtype)}, got "
                                   f"{_type_text(got_shape, got_dtype)}")
        out.append(value if xp is np else xp.asarray(value))
    return out


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


def _result(graph: CapturedGraph, values: list, xp: Any, to_numpy: bool) -> ReplayResult:
    out = ReplayResult()
    out.backend = xp.__name__
    for name, value in zip(graph.outputs, values):
        value = xp.asarray(value)
        if to_numpy and xp is not np:
            value = xp.asnumpy(value)
        out[name] = value
    return out


# --- compiled replay --------------------------------------------------------------------------


def _inline_literal(value: Any) -> str | None:
    """Source text for a literal that can sit in generated code exactly (ints, bools, finite
    floats: ``repr`` round-trips them); ``None`` for anything else (bound by name instead)."""
    if type(value) is bool or type(value) is int:
        return repr(value)
    if type(value) is float and math.isfinite(value):
        return repr(value)
    return None


class Program:
    """A graph compiled into one straight-line Python function for a backend.

    Values live in local variables; a variable is reused once the value it held is dead, and a
    dead value whose variable is not reused at once is deleted, so every intermediate is freed
    right after its last use.

    Attributes:
        source: the generated code (for reading, not for running elsewhere).
    """

    def __init__(self, graph: CapturedGraph, xp: Any) -> None:
        self.xp = xp  # no reference to the graph: the graph holds its programs
        env: dict[str, Any] = {}
        body: list[str] = []
        self.line_nodes: dict[int, Node] = {}
        outputs = {n.args[0].index for n in graph.output_nodes}
        last_use: dict[int, int] = {}
        for n in graph.nodes:
            for _, a in n.operands:
                last_use[a.index] = n.index
        dying: dict[int, list[int]] = {}
        for value, user in last_use.items():
            if value not in outputs and graph.nodes[value].kind != "constant":
                dying.setdefault(user, []).append(value)
        slot: dict[int, str] = {}
        free: list[str] = []
        count = 0

        def new_slot() -> str:
            nonlocal count
            count += 1
            return f"v{count - 1}"

        def ref(node: Node) -> str:
            return slot[node.index]

        params_line = []
        for n in graph.input_nodes:
            slot[n.index] = new_slot()
            params_line.append(slot[n.index])
        for n in graph.nodes:
            i = n.index
            if n.kind == "constant":
                value = graph.constant_values[i]
                slot[i] = f"k{i}"
                env[f"k{i}"] = value if xp is np else xp.asarray(value)
                continue
            if n.kind != "op":
                continue
            op = ops.OPS[n.op]
            if n.op == "unpack":
                expr = f"{ref(n.args[0])}[{int(n.params['index'])}]"
            else:
                env[f"f{i}"] = op.bind(xp)
                args = ["seed"] if op.random else []
                for pos, a in enumerate(n.args):
                    if isinstance(a, Node):
                        args.append(ref(a))
                        continue
                    text = _inline_literal(a)
                    if text is None:
                        text = f"l{i}_{pos}"
                        env[text] = a
                    args.append(text)
                if n.params:
                    env[f"p{i}"] = n.params
                    args.append(f"**p{i}")
                expr = f"f{i}({', '.join(args)})"
            released = [slot[v] for v in dying.get(i, ())]
            free.extend(released)
            slot[i] = free.pop() if free else new_slot()
            body.append(f"    {slot[i]} = {expr}")
            self.line_nodes[len(body) + 2] = n
            dead = [name for name in released if name != slot[i]]
            if dead:
                body.append(f"    del {', '.join(dead)}")
                self.line_nodes[len(body) + 2] = n
        outs = [ref(n.args[0]) for n in graph.output_nodes]
        head = ["def run(inputs, seed):",
                f"    {', '.join(params_line)}, = inputs" if params_line else "    pass"]
        tail = [f"    return ({', '.join(outs)}{',' if outs else ''})"]
        self.source = "\n".join(head + body + tail) + "\n"
        code = compile(self.source, f"<capviz replay {id(self):x}>", "exec")
        exec(code, env)  # noqa: S102 - generated from identifiers only; values bound in env
        self._run = env["run"]
        self._filename = code.co_filename

    def __call__(self, inputs: list, seed: int) -> tuple:
        try:
            return self._run(inputs, seed)
        except Exception as err:
            node = self._failing_node(sys.exc_info()[2])
            if node is None or isinstance(err, CapvizError):
                raise
            raise replay_error(node, [a for a in node.args if isinstance(a, Node)], err) from err

    def _failing_node(self, tb: Any) -> Node | None:
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self._filename:
                return self.line_nodes.get(tb.tb_lineno)
            tb = tb.tb_next
        return None


def program(graph: CapturedGraph, xp: Any) -> Program:
    """The compiled program of ``graph`` for ``xp`` (compiled once, then reused)."""
    key = (xp.__name__, len(graph.nodes))
    prog = graph._compiled.get(key)
    if prog is None:
        prog = Program(graph, xp)
        graph._compiled = {key: prog}
    return prog


def replay(graph: CapturedGraph, inputs: Mapping[str, Any] | None = None, backend: str = "auto",
           seed: int | None = None, check_finite: bool = False,
           to_numpy: bool = False) -> ReplayResult:
    """Run ``graph`` on ``inputs`` (a mapping by input name); return its outputs by name.

    Args:
        graph: the graph.
        inputs: arrays by input name; shape and dtype must match exactly.
        backend: ``auto`` (CuPy with a GPU, else NumPy), ``numpy`` or ``cupy``.
        seed: the seed of random ops (default: the seed of the device captured with).
        check_finite: stop at the first op whose output holds NaN or Inf
            (:class:`NonFiniteError`), and mark it in the graph.
        to_numpy: return host arrays from a CuPy replay.

    Raises:
        ReplayInputError: a missing, extra or mistyped input, naming it, expected and got.
        ReplayError: an op failed; names the node and the user's source line.
        NonFiniteError: with ``check_finite``, the first non-finite op.
    """
    xp = namespace(backend)
    args = check_inputs(graph, inputs, xp)
    key = resolve_seed(graph, seed)
    if check_finite:
        ex = Executor(graph, None, backend=xp.__name__, keep=False, seed=key, _checked=args)
        ex.check_finite = True
        ex.run()
        return ex.outputs(to_numpy)
    return _result(graph, list(program(graph, xp)(args, key)), xp, to_numpy)


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

    Attributes:
        position: index of the next node to run (``len(graph)`` when finished).
        values: kept values, by node, index or name.
        check_finite: raise :class:`NonFiniteError` at the first non-finite op output.
    """

    def __init__(self, graph: CapturedGraph, inputs: Mapping[str, Any] | None = None,
                 backend: str = "auto", keep: bool = True, seed: int | None = None,
                 _checked: list | None = None) -> None:
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
        values = [self._store[n.args[0].index] for n in self.graph.output_nodes]
        return _result(self.graph, values, self.xp, to_numpy)

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
