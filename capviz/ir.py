"""The graph model: one :class:`Node` type with a fixed set of kinds, and :class:`CapturedGraph`.

A graph is a list of nodes in program order. Each node's ``index`` is its position in that list,
its id in :attr:`CapturedGraph.nx` and its ``order`` attribute, so ids never depend on ``id()``
and the same program always gives the same graph.

Node kinds:

``input``      a declared graph input (``name``, ``shape``, ``dtype``).
``constant``   a recorded value (an ndarray met during capture, or ``scope.constant``).
``op``         one op of :mod:`capviz.ops`; ``args`` holds operand nodes and static literals.
``output``     a declared graph output (``name``); its one arg is the node it returns.
``violation``  something the capture could not represent (see :class:`Violation`).

Printing (:mod:`capviz.printing`), saving (:mod:`capviz.serialize`), replay
(:mod:`capviz.executor`) and drawing (:mod:`capviz.render`) live in their own modules; the methods
of :class:`CapturedGraph` that reach them are thin facades that import them when called.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import graphviz
    import networkx as nx

    from capviz.diagnostics import Stats
    from capviz.executor import CompiledReplay, Executor
    from capviz.render.view import GraphView
    from capviz.replay_plan import MemoryPlan

KINDS = ("input", "constant", "op", "output", "violation")
Source = tuple  # (file, line, function)


_DTYPE_NAMES: dict[np.dtype, str] = {}


def dtype_name(dtype: np.dtype | None) -> str | None:
    """``np.dtype("float32")`` -> ``"float32"`` (cached: ``dtype.name`` is slow)."""
    if dtype is None:
        return None
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = np.dtype(dtype).name
    return name


def format_source(source: Source | None) -> str | None:
    """``("model.py", 12, "forward")`` -> ``"model.py:12 in forward"``."""
    if source is None:
        return None
    file, line, func = source
    return f"{file}:{line} in {func}"


class Node:
    """One node of a captured graph.

    Attributes:
        index: position in program order; also the node id in ``graph.nx``.
        kind: one of ``input``, ``constant``, ``op``, ``output``, ``violation``.
        op: the op name for ``op`` nodes, the violation kind for ``violation`` nodes.
        args: operands: :class:`Node` objects (tensor operands, one edge each) and static literals.
        params: keyword parameters of the op (static values).
        shape: the output shape (``None`` for multi-output ops and for violations/outputs).
        dtype: the output dtype as a ``numpy.dtype`` (or ``None``).
        source: ``(file, line, function)`` of the user's code that made the node.
        scope: the name-scope path (``"block1/attn"``), ``""`` at top level.
        name: the user's name for inputs, outputs and named constants.
    """

    __slots__ = (
        "__weakref__",
        "args",
        "dtype",
        "index",
        "kind",
        "name",
        "op",
        "params",
        "scope",
        "shape",
        "source",
    )

    def __init__(self, index: int, kind: str, op: str | None, args: tuple, params: dict,
                 shape: tuple | None, dtype: np.dtype | None, source: Source | None,
                 scope: str = "", name: str | None = None) -> None:
        self.index = index
        self.kind = kind
        self.op = op
        self.args = args
        self.params = params
        self.shape = shape
        self.dtype = dtype
        self.source = source
        self.scope = scope
        self.name = name

    @property
    def operands(self) -> list[tuple[int, Node]]:
        """``(argument position, node)`` for each tensor operand."""
        return [(i, a) for i, a in enumerate(self.args) if isinstance(a, Node)]

    @property
    def location(self) -> str | None:
        """The user's source as ``file:line in function``."""
        return format_source(self.source)

    def __repr__(self) -> str:
        what = self.op if self.kind in ("op", "violation") else self.name
        return f"<Node %{self.index} {self.kind} {what}>"

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """A node is no array: NumPy meets one only when code outside capviz read a capture
        tensor's ``_data`` as if it were an ndarray's, as ``numpy.ma`` does for
        ``masked_array + t``. Refused by name, at the user's line."""
        from capviz.errors import UnsupportedOperationError

        raise UnsupportedOperationError(
            f"a capture tensor ({self.dtype}{list(self.shape or ())}) met code that reads its "
            f"internals as an ndarray{_outside_line()}: numpy.ma does this for a masked array "
            "combined with a tensor (masked_array + t), and a masked array cannot be recorded "
            "(its masked elements are left out of results). Pass plain arrays: "
            "m.filled(value) + t, or np.where(m.mask, fill, m.data) and the mask as a "
            "boolean array")


def _outside_line() -> str:
    """`` at file:line`` of the innermost frame outside capviz and NumPy (or ``""``)."""
    skip = (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(np.__file__))
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(skip):
        frame = frame.f_back
    return "" if frame is None else f" at {frame.f_code.co_filename}:{frame.f_lineno}"


@dataclasses.dataclass
class Violation:
    """A thing the capture could not represent faithfully.

    Attributes:
        kind: ``seed``, ``frozen_random``, ``data_read``, ``unsupported_op`` or
            ``unseeded_random``.
        level: ``error`` or ``warning``.
        message: the full message, with the fixes.
        call: the API that caused it (``np.random.seed``, ``float()``...).
        source: ``(file, line, function)`` of the user's code.
        order: the index of its node in the graph.
    """

    kind: str
    level: str
    message: str
    call: str
    source: Source | None
    order: int

    @property
    def location(self) -> str | None:
        """The user's source as ``file:line in function``."""
        return format_source(self.source)


VIOLATION_LEVELS = {"seed": "error", "frozen_random": "error", "data_read": "error",
                    "unsupported_op": "error", "unseeded_random": "warning"}


def _import_executor() -> Any:
    """The replay layer (above this one), imported when first used; ``graph.replay`` looks it
    up in ``sys.modules`` after that, since an ``import`` statement per call costs a
    microsecond, a third of a tiny replay's fixed cost."""
    import capviz.executor

    return capviz.executor


class ConstantValues(dict):
    """The constants' values by node index; replacing or removing one moves the graph's
    ``version``, so a compiled replay never runs with an old value."""

    def __init__(self, graph: CapturedGraph) -> None:
        super().__init__()
        self._graph = weakref.ref(graph)  # a graph is freed without the cycle collector

    def _changed(self, result: Any = None) -> Any:
        graph = self._graph()
        if graph is not None:
            graph.version += 1
        return result

    def __setitem__(self, key: int, value: Any) -> None:
        super().__setitem__(key, value)
        self._changed()

    def __delitem__(self, key: int) -> None:
        super().__delitem__(key)
        self._changed()

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._changed(super().update(*args, **kwargs))

    def pop(self, *args: Any) -> Any:
        return self._changed(super().pop(*args))

    def popitem(self) -> tuple:
        return self._changed(super().popitem())

    def setdefault(self, key: int, default: Any = None) -> Any:
        return self._changed(super().setdefault(key, default))

    def clear(self) -> None:
        self._changed(super().clear())

    def __ior__(self, other: Any) -> ConstantValues:
        self.update(other)
        return self


class CapturedGraph:
    """A captured program: nodes in program order, constants, boundaries and violations.

    Attributes:
        nodes: every node, in program order.
        constant_values: the recorded value of each constant node, by node index.
        constant_origins: for a constant copied from a user's ndarray, a weak reference to that
            array, by node index (a replay refuses an input that shares its memory when the
            graph writes into that input; not saved with the graph).
        rng_seed: the seed random ops replay with by default (``None``: unknown, fresh entropy).
        marks: nodes flagged by the debugger (``{"nonfinite": index, "diverged": index}``).
        stats: per-node statistics set by :meth:`set_stats`, shown in tooltips.
        complete: ``False`` while recording and for the partial graph of a failed capture.
        error: the error that ended a failed capture, if any.
        version: moves on every change a compiled replay depends on (a node added through
            :meth:`add`, a constant set or removed); call :meth:`changed` after editing a
            node or a constant's array in place.
    """

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.version = 0
        self.constant_values: dict[int, Any] = ConstantValues(self)
        self.constant_origins: dict[int, Any] = {}
        self.violation_records: list[Violation] = []
        self.rng_seed: int | None = None
        self.marks: dict[str, int] = {}
        self.stats: dict[int, dict[str, float]] = {}
        self.complete = False
        self.error: BaseException | None = None
        self._nx: nx.MultiDiGraph | None = None
        self._nx_len = -1
        self._compiled: dict[Any, Any] = {}

    # --- structure ------------------------------------------------------------------------------

    def add(self, node: Node) -> Node:
        """Append a node (its ``index`` must be the next position)."""
        self.nodes.append(node)
        self.version += 1
        return node

    def changed(self) -> None:
        """Say the graph was edited in place (a node's fields, a constant's array): compiled
        replays are rebuilt at their next call."""
        self.version += 1

    def _of_kind(self, kind: str) -> list[Node]:
        return [n for n in self.nodes if n.kind == kind]

    @property
    def input_nodes(self) -> list[Node]:
        """Input nodes in declaration order."""
        return self._of_kind("input")

    @property
    def output_nodes(self) -> list[Node]:
        """Output nodes in declaration order."""
        return self._of_kind("output")

    @property
    def inputs(self) -> list[str]:
        """Input names in declaration order."""
        return [n.name for n in self.input_nodes]

    @property
    def outputs(self) -> list[str]:
        """Output names in declaration order."""
        return [n.name for n in self.output_nodes]

    @property
    def ops(self) -> list[Node]:
        """Op nodes in program order."""
        return self._of_kind("op")

    @property
    def constants(self) -> list[Node]:
        """Constant nodes in program order."""
        return self._of_kind("constant")

    @property
    def violations(self) -> list[Violation]:
        """Violations in program order."""
        return list(self.violation_records)

    def node(self, ref: int | str | Node) -> Node:
        """Find a node by index, by input/output/constant name, or return the node itself."""
        if isinstance(ref, Node):
            return ref
        if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool):
            if 0 <= ref < len(self.nodes):
                return self.nodes[ref]
            raise KeyError(f"graph has no node %{ref} (it has {len(self.nodes)} nodes)")
        for n in self.nodes:
            if n.name == ref and n.kind in ("input", "output", "constant"):
                return n
        raise KeyError(f"graph has no input, output or constant named {ref!r}")

    def users(self) -> dict[int, list[Node]]:
        """For each node index, the nodes that take it as an operand."""
        out: dict[int, list[Node]] = {}
        for n in self.nodes:
            for _, a in n.operands:
                out.setdefault(a.index, []).append(n)
        return out

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    # --- networkx view -------------------------------------------------------------------------

    @property
    def nx(self) -> nx.MultiDiGraph:
        """The graph as a ``networkx.MultiDiGraph`` whose attributes are plain JSON values.

        Built from :attr:`nodes` on first access and cached until more nodes are added.
        """
        if self._nx is None or self._nx_len != len(self.nodes):
            from capviz.serialize import to_networkx

            self._nx = to_networkx(self)
            self._nx_len = len(self.nodes)
        return self._nx

    # --- facades onto higher layers ------------------------------------------------------------

    def __str__(self) -> str:
        from capviz.printing import format_graph

        return format_graph(self)

    def __repr__(self) -> str:
        state = "complete" if self.complete else "partial"
        return (f"<CapturedGraph {state}: {len(self.inputs)} inputs, {len(self.ops)} ops, "
                f"{len(self.outputs)} outputs, {len(self.violation_records)} violations>")

    def check(self) -> None:
        """Raise the first error-level violation (as its exception class), if any."""
        from capviz.violations import raise_for

        for v in self.violation_records:
            if v.level == "error":
                raise_for(v, self)

    def verify(self) -> None:
        """Check the structure: kinds, acyclic program order, operand shapes and dtypes, boundaries.

        Raises:
            GraphVerifyError: naming the first inconsistent node, with the listing around it.
        """
        from capviz.verify import verify_graph

        verify_graph(self)

    def save(self, path: str) -> None:
        """Write ``path`` (JSON) and ``path + ".npz"`` (constants), atomically; never pickles.

        Raises:
            FileExistsError: ``path + ".npz"`` exists and was not written by capviz for ``path``.
        """
        from capviz.serialize import save

        save(self, path)

    def replay(self, inputs: Mapping[str, Any] | None = None, backend: str = "auto",
               seed: int | None = None, check_finite: bool = False,
               to_numpy: bool = False, allow_violations: bool = False,
               **options: Any) -> dict[str, Any]:
        """Run the graph on a backend (``numpy``, ``cupy``, ``dask``, ``jax``; ``auto``: CuPy
        with a GPU, else NumPy); see :func:`capviz.executor.replay`. ``options`` are the
        backend's own (Dask: ``chunks=``, ``compute=``); one it does not take is a
        ``TypeError`` naming it. A graph with error-level violations raises
        :class:`capviz.IncompleteGraphError` unless ``allow_violations``."""
        executor = sys.modules.get("capviz.executor") or _import_executor()
        return executor.replay_with(self, inputs, backend, seed, check_finite, to_numpy,
                                    allow_violations, options)

    def compile(self, backend: str = "auto", seed: int | None = None,
                allow_violations: bool = False, **options: Any) -> CompiledReplay:
        """The graph compiled for tight loops: ``fn = graph.compile(); y, = fn(x)``.

        A call takes the inputs positionally (in :attr:`inputs` order), checks them against
        precomputed shapes and dtypes, and returns the outputs as a tuple (in :attr:`outputs`
        order); see :class:`capviz.executor.CompiledReplay`.

        Raises:
            IncompleteGraphError: the graph has error-level violations (and not
                ``allow_violations``).
        """
        from capviz.executor import compile_graph

        return compile_graph(self, backend=backend, seed=seed,
                             allow_violations=allow_violations, **options)

    def memory_plan(self, inputs_or_specs: Mapping[str, Any] | None = None,
                    min_bytes: int | None = None) -> MemoryPlan:
        """What a replay allocates: ``.peak_bytes`` and bytes per node, and which results are
        written into a dead buffer (``out=``); see :mod:`capviz.replay_plan`.

        Args:
            inputs_or_specs: arrays or ``cv.spec(...)`` by input name, checked against the
                graph's inputs (shapes are fixed at capture; the plan does not depend on them).
            min_bytes: plan only results at least this large (default: as replay does).
        """
        from capviz.replay_plan import MIN_PLAN_BYTES, check_specs, memory_plan

        check_specs(self, inputs_or_specs)
        return memory_plan(self, MIN_PLAN_BYTES if min_bytes is None else min_bytes)

    def executor(self, inputs: Mapping[str, Any] | None = None, backend: str = "auto",
                 keep: bool = True, seed: int | None = None,
                 allow_violations: bool = False) -> Executor:
        """A stepping executor (the debugger); see :class:`capviz.executor.Executor`."""
        from capviz.executor import Executor

        return Executor(self, inputs, backend=backend, keep=keep, seed=seed,
                        allow_violations=allow_violations)

    def compare(self, fn: Callable | None = None, inputs: Mapping[str, Any] | None = None,
                rtol: float | None = None, atol: float | None = None, backend: str = "numpy",
                against: str | None = None, allow_violations: bool = False) -> Any:
        """Find the first node whose value differs from eager ``fn`` (or another backend);
        the tolerance defaults to ``capviz.compare``'s (wider for an inexact backend)."""
        from capviz.diagnostics import compare

        return compare(self, fn, inputs, rtol=rtol, atol=atol, backend=backend, against=against,
                       allow_violations=allow_violations)

    def compute_stats(self, inputs: Mapping[str, Any] | None = None, backend: str = "numpy",
                      seed: int | None = None,
                      allow_violations: bool = False) -> dict[int, Stats]:
        """Replay keeping every value and attach per-node statistics (shown in tooltips)."""
        from capviz.diagnostics import compute_stats

        return compute_stats(self, inputs, backend=backend, seed=seed,
                             allow_violations=allow_violations)

    def to_dot(self, **options: Any) -> graphviz.Digraph:
        """The graph as a ``graphviz.Digraph`` (no subprocess); see :mod:`capviz.render.dot`."""
        from capviz.render.dot import to_dot

        return to_dot(self, **options)

    def to_svg(self, path: str | None = None, **options: Any) -> str:
        """Render SVG text (and write it to ``path`` if given); see :mod:`capviz.render.svg`."""
        from capviz.render.svg import to_svg

        return to_svg(self, path, **options)

    def view(self, values: Mapping[Any, Any] | None = None, title: str | None = None,
             budget: int | None = None) -> GraphView:
        """The interactive view (pan, zoom, open scopes, search, hover, value panel) for a
        notebook; see :mod:`capviz.render.view`.

        Args:
            values: kept values by node (``executor.values`` after ``keep=True``) for the value
                panel; without them, statistics from :meth:`compute_stats` are shown.
            title: a heading for the view.
            budget: how many boxes are drawn at first (default: the budget of
                ``capviz.render.rules.RULES``, which ``to_svg()`` uses too); whole levels of
                scopes open while they fit.

        Returns:
            A ``GraphView``, which displays itself as self-contained HTML.
        """
        from capviz.render.view import GraphView

        return GraphView(self, values=values, title=title, budget=budget)

    def to_html(self, path: str | None = None, values: Mapping[Any, Any] | None = None,
                title: str | None = None) -> str:
        """The interactive view as a standalone HTML page (no server, nothing fetched); written
        to ``path`` when given. Returns the page's text."""
        from capviz.render.view import to_html

        return to_html(self, path, values=values, title=title)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from capviz.render.jupyter import mimebundle

        return mimebundle(self, include, exclude)
