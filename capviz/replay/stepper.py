"""The stepping executor (the debugger): one node at a time, one overridable method per node
kind, as ``torch.fx.Interpreter``; values kept for inspection, breakpoints, ``check_finite``."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.registry import Backend, host_array, replay_error
from capviz.core.errors import CapvizError, NonFiniteError
from capviz.core.guards import check
from capviz.core.ir import Graph, Node
from capviz.core.python_guards import check as check_python
from capviz.core.references import check_unchanged
from capviz.core.source import format_source
from capviz.core.violations import check_replayable
from capviz.replay.inputs import ReplayResult, backend_of, check_inputs, resolve_seed, result
from capviz.replay.plan import check_fits
from capviz.replay.state import live
from capviz.replay.warnings import user_warnings

# --- the stepping executor ------------------------------------------------------------------


class Values(Mapping):
    """Kept values by node (``Node``, index, or input/output/constant name)."""

    def __init__(self, graph: Graph, store: dict[int, Any]) -> None:
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

    def __init__(self, graph: Graph, inputs: Mapping[str, Any] | None = None,
                 backend: str | Backend = "auto", keep: bool = True, seed: int | None = None,
                 _checked: list | None = None, allow_violations: bool = False) -> None:
        check_replayable(graph, allow_violations)
        check_unchanged(graph)
        if graph.python_guards:  # (the Python values the capture read: self.training...)
            check_python(graph.python_guards)
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
        if node.kind in ("input", "constant", "op", "state"):
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
        return result(self.graph.outputs, values, self.backend, to_numpy)

    # --- one method per node kind ----------------------------------------------------------

    def run_node(self, node: Node) -> Any:
        """Dispatch on ``node.kind``."""
        return getattr(self, f"run_{node.kind}")(node)

    def run_state(self, node: Node) -> Any:
        """A state's live value (:mod:`capviz.replay.state`): stepping reads it and writes
        nothing back (a generator is drawn from a copy)."""
        value = live(self.graph, node, None)
        return copy.deepcopy(value) if node.dtype is None else self.backend.from_host(value)

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

    def run_guard(self, node: Node) -> Any:
        """Check the guard on its operand's value (:class:`GuardError` when it differs)."""
        check(node, host_array(self._store[node.args[0].index]))
        return None

    def _check_finite(self, node: Node, value: Any) -> None:
        xp = self.xp
        parts = [xp.asarray(v) for v in _parts(value)]
        inexact = [v for v in parts if v.dtype.kind in "fc"]
        bad = sum(int((~xp.isfinite(v)).sum()) for v in inexact)
        if not bad:
            return
        size = sum(int(v.size) for v in parts)
        feeding = {a: self._store.get(a.index) for a in node.args if isinstance(a, Node)}
        operands = [(k, a) for k, a in enumerate(node.args) if isinstance(a, Node)
                    and not _finite(xp, self._store.get(a.index))]
        sources = self._nonfinite_sources(node)
        marks = self.graph.marks
        marks["nonfinite"] = node.index
        for mark, found in (("nonfinite_operand", operands and operands[0][1].index),
                            ("nonfinite_source", sources and sources[0].index)):
            if found or found == 0:
                marks[mark] = found
            else:
                marks.pop(mark, None)
        if operands:
            which = "; ".join(f"operand {k} (%{a.index} {_what(a)}) holds NaN/Inf"
                              for k, a in operands)
        else:
            which = f"its operands are finite: {node.op} made the NaN/Inf"
        if sources:
            which += "; non-finite from the start: " + ", ".join(
                f"%{s.index} {_what(s)}" for s in sources)
        err = NonFiniteError(
            f"first non-finite value at node %{node.index} ({node.op}, {bad} of {size} "
            f"elements NaN/Inf) in scope {node.scope or '(top level)'}, recorded at "
            f"{format_source(node.source) or 'unknown source'}; {which}; its operands are in "
            "err.inputs")
        err.node = node
        err.inputs = feeding
        err.value = value
        err.scope = node.scope
        err.operands = [k for k, _ in operands]
        err.sources = sources
        raise err

    def _nonfinite_sources(self, node: Node) -> list[Node]:
        """The inputs and constants upstream of ``node`` that hold NaN or Inf, in program
        order: where a non-finite value came from when no op made it."""
        seen, stack, found = {node.index}, [node], []
        while stack:
            for a in stack.pop().args:
                if not isinstance(a, Node) or a.index in seen:
                    continue
                seen.add(a.index)
                stack.append(a)
                if a.kind == "input":
                    held = self._inputs.get(a.index)
                elif a.kind == "constant":
                    held = self.graph.constant_values.get(a.index)
                else:
                    continue
                if not _finite(self.xp, held):
                    found.append(a)
        return sorted(found, key=lambda n: n.index)


def _parts(value: Any) -> list[Any]:
    """The arrays a value holds: itself, or the parts of a multi-output op's tuple
    (``np.split``, ``divmod``), so that the op that made a NaN is the one reported, not the
    ``unpack`` after it."""
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        return [v for part in value for v in _parts(part)]
    return [value]


def _finite(xp: Any, value: Any) -> bool:
    """Whether a value holds no NaN or Inf (non-float values are finite)."""
    for part in _parts(value):
        part = xp.asarray(part)
        if part.dtype.kind in "fc" and not bool(xp.isfinite(part).all()):
            return False
    return True


def _what(node: Node) -> str:
    """``x`` (an input's name), ``w`` (a constant's), ``subtract`` (an op's)."""
    if node.kind in ("input", "constant", "output") and node.name:
        return f"{node.name} ({node.kind})"
    return node.op or node.kind
