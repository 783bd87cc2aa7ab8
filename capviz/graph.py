"""The graph users hold: :class:`CapturedGraph`, the core :class:`~capviz.core.ir.Graph` with
the methods that print, check, save, replay, compare and draw it, and :func:`load`.

The data lives in :mod:`capviz.core.ir`, and each method is a thin call into the package doing the
work, imported from below as ``graphviz.Digraph`` composes its rendering methods: replay
(:mod:`capviz.replay`), files and the listing (:mod:`capviz.io`), comparison
(:mod:`capviz.diagnostics`). The drawing modules (:mod:`capviz.render`) are imported when first
drawn, so that ``import capviz`` does not import the ``graphviz`` package.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from capviz.core.ir import Graph
from capviz.core.violations import raise_for
from capviz.diagnostics import Stats, compare, compute_stats
from capviz.io import files
from capviz.io.nx import to_networkx
from capviz.io.printing import format_graph
from capviz.io.verify import verify_graph
from capviz.replay.plan import MIN_PLAN_BYTES, MemoryPlan, check_specs, memory_plan
from capviz.replay.run import CompiledReplay, compile_graph, replay_with
from capviz.replay.stepper import Executor

if TYPE_CHECKING:
    import graphviz
    import networkx as nx

    from capviz.render.jupyter import GraphView


class CapturedGraph(Graph):
    """A captured program: nodes in program order, constants, boundaries and violations, with
    the methods that print, check, save, replay, compare and draw it.

    Its attributes (``nodes``, ``constant_values``, ``rng_seed``, ``complete``, ``error``,
    ``version``...) and structural methods (``node``, ``users``, ``inputs``...) are those of the
    core :class:`~capviz.core.ir.Graph`; :attr:`nx` is the networkx view.
    """

    def __init__(self) -> None:
        super().__init__()
        self._nx: nx.MultiDiGraph | None = None
        self._nx_len = -1

    # --- networkx view -------------------------------------------------------------------------

    @property
    def nx(self) -> nx.MultiDiGraph:
        """The graph as a ``networkx.MultiDiGraph`` whose attributes are plain JSON values.

        Built from :attr:`nodes` on first access and cached until more nodes are added.
        """
        if self._nx is None or self._nx_len != len(self.nodes):
            self._nx = to_networkx(self)
            self._nx_len = len(self.nodes)
        return self._nx

    # --- printing, checking, saving, replay and drawing ---------------------------------------

    def __str__(self) -> str:

        return format_graph(self)

    def __repr__(self) -> str:
        state = "complete" if self.complete else "partial"
        return (f"<CapturedGraph {state}: {len(self.inputs)} inputs, {len(self.ops)} ops, "
                f"{len(self.outputs)} outputs, {len(self.violation_records)} violations>")

    def check(self) -> None:
        """Raise the first error-level violation (as its exception class), if any."""

        for v in self.violation_records:
            if v.level == "error":
                raise_for(v, self)

    def verify(self) -> None:
        """Check the structure: kinds, acyclic program order, operand shapes and dtypes, boundaries.

        Raises:
            GraphVerifyError: naming the first inconsistent node, with the listing around it.
        """

        verify_graph(self)

    def save(self, path: str) -> None:
        """Write ``path`` (JSON) and ``path + ".npz"`` (constants), atomically; never pickles.

        Raises:
            FileExistsError: ``path + ".npz"`` exists and was not written by capviz for ``path``.
        """

        files.save(self, path)

    def replay(self, inputs: Mapping[str, Any] | None = None, backend: str = "auto",
               seed: int | None = None, check_finite: bool = False,
               to_numpy: bool = False, allow_violations: bool = False,
               state: str = "write", states: Mapping[str, Any] | None = None,
               **options: Any) -> dict[str, Any]:
        """Run the graph on a backend (``numpy``, ``cupy``, ``dask``, ``jax``; ``auto``: CuPy
        with a GPU, else NumPy); see :func:`capviz.replay.run.replay`. ``options`` are the
        backend's own (Dask: ``chunks=``, ``compute=``); one it does not take is a
        ``TypeError`` naming it. A graph with error-level violations raises
        :class:`capviz.IncompleteGraphError` unless ``allow_violations``.

        A graph with states (outside arrays and generators the captured code wrote,
        ``graph.state_nodes``) reads their live values and writes the new ones back, as an
        eager call does (``state="write"``); ``state="return"`` returns them in the result's
        ``.states`` instead; ``states={name: array}`` gives the live arrays (a loaded graph
        needs them)."""
        return replay_with(self, inputs, backend, seed, check_finite, to_numpy,
                           allow_violations, options, state, states)

    def compile(self, backend: str = "auto", seed: int | None = None,
                allow_violations: bool = False, **options: Any) -> CompiledReplay:
        """The graph compiled for tight loops: ``fn = graph.compile(); y, = fn(x)``.

        A call takes the inputs positionally (in :attr:`inputs` order), checks them against
        precomputed shapes and dtypes, and returns the outputs as a tuple (in :attr:`outputs`
        order); see :class:`capviz.replay.run.CompiledReplay`.

        Raises:
            IncompleteGraphError: the graph has error-level violations (and not
                ``allow_violations``).
        """

        return compile_graph(self, backend=backend, seed=seed,
                             allow_violations=allow_violations, **options)

    def memory_plan(self, inputs_or_specs: Mapping[str, Any] | None = None,
                    min_bytes: int | None = None) -> MemoryPlan:
        """What a replay allocates: ``.peak_bytes`` and bytes per node, and which results are
        written into a dead buffer (``out=``); see :mod:`capviz.replay.plan`.

        Args:
            inputs_or_specs: arrays or ``cv.spec(...)`` by input name, checked against the
                graph's inputs (shapes are fixed at capture; the plan does not depend on them).
            min_bytes: plan only results at least this large (default: as replay does).
        """

        check_specs(self, inputs_or_specs)
        return memory_plan(self, MIN_PLAN_BYTES if min_bytes is None else min_bytes)

    def executor(self, inputs: Mapping[str, Any] | None = None, backend: str = "auto",
                 keep: bool = True, seed: int | None = None,
                 allow_violations: bool = False) -> Executor:
        """A stepping executor (the debugger); see :class:`capviz.replay.stepper.Executor`."""

        return Executor(self, inputs, backend=backend, keep=keep, seed=seed,
                        allow_violations=allow_violations)

    def compare(self, fn: Callable | None = None, inputs: Mapping[str, Any] | None = None,
                rtol: float | None = None, atol: float | None = None, backend: str = "numpy",
                against: str | None = None, allow_violations: bool = False) -> Any:
        """Find the first node whose value differs from eager ``fn`` (or another backend);
        the tolerance defaults to ``capviz.compare``'s (wider for an inexact backend)."""

        return compare(self, fn, inputs, rtol=rtol, atol=atol, backend=backend, against=against,
                       allow_violations=allow_violations)

    def compute_stats(self, inputs: Mapping[str, Any] | None = None, backend: str = "numpy",
                      seed: int | None = None,
                      allow_violations: bool = False) -> dict[int, Stats]:
        """Replay keeping every value and attach per-node statistics (shown in tooltips)."""

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

    def metric(self, name: str, inputs: Mapping[str, Any] | None = None,
               backend: str = "numpy", against: str = "jax", rounds: int = 3,
               seed: int | None = None,
               allow_violations: bool = False) -> tuple[str, dict[int, float]]:
        """A number per node, to colour the view by: ``graph.view(metric=graph.metric(...))``.

        Args:
            name: ``"time"``: seconds each op takes, the median of ``rounds`` stepping replays
                on ``backend`` (:func:`capviz.replay.per_node.node_times`); ``"bytes"``: bytes
                each op allocates in the memory plan (0 where it writes into a reused buffer or
                is a view; :meth:`memory_plan`); ``"error"``: the largest absolute difference
                of each op's value on ``backend`` and on ``against``
                (:func:`capviz.replay.per_node.node_errors`).
            inputs: arrays by input name (``time`` and ``error`` replay the graph).
            backend: the engine timed, or compared.
            against: the engine ``error`` compares with.
            rounds: replays ``time`` takes the median of.
            seed: the seed of random ops (both sides of ``error`` use the same).
            allow_violations: replay a graph that has error-level violations anyway.

        Returns:
            ``(legend title, {node index: number})``, what ``view(metric=)`` takes.

        Raises:
            ValueError: an unknown ``name``.
        """
        from capviz.replay.per_node import node_errors, node_times

        if name == "time":
            return f"time on {backend} (s)", node_times(self, inputs, backend, rounds, seed,
                                                        allow_violations)
        if name == "bytes":
            return "bytes allocated (memory plan)", dict(memory_plan(self).allocated)
        if name == "error":
            return (f"max abs error, {backend} vs {against}",
                    node_errors(self, inputs, backend, against, seed, allow_violations))
        raise ValueError(f"metric must be 'time', 'bytes' or 'error', got {name!r}")

    def view(self, values: Mapping[Any, Any] | None = None, title: str | None = None,
             budget: int | None = None, metric: Any = None) -> GraphView:
        """The interactive view (pan, zoom, open scopes, search, hover, value panel) for a
        notebook; see :mod:`capviz.render.view`.

        Args:
            values: kept values by node (``executor.values`` after ``keep=True``) for the value
                panel; without them, statistics from :meth:`compute_stats` are shown.
            title: a heading for the view.
            budget: how many boxes are drawn at first (default: the budget of
                ``capviz.render.rules.RULES``, which ``to_svg()`` uses too); whole levels of
                scopes open while they fit.
            metric: colour the nodes by a number per node, with a legend: ``"bytes"`` (each
                op's output size) or ``(name, {node: number})``; :meth:`metric` gives the
                built-in ones: per-op time of a profiled replay, bytes allocated in the memory
                plan, error against another backend.

        Returns:
            A ``GraphView``, which displays itself as self-contained HTML.
        """
        from capviz.render.jupyter import GraphView

        return GraphView(self, values=values, title=title, budget=budget, metric=metric)

    def to_html(self, path: str | None = None, values: Mapping[Any, Any] | None = None,
                title: str | None = None) -> str:
        """The interactive view as a standalone HTML page (no server, nothing fetched); written
        to ``path`` when given. Returns the page's text."""
        from capviz.render.view import to_html

        return to_html(self, path, values=values, title=title)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from capviz.render.jupyter import mimebundle

        return mimebundle(self, include, exclude)


def load(path: str) -> CapturedGraph:
    """Load a graph written by ``graph.save(path)`` (JSON and its ``.npz`` of constants; nothing
    is unpickled or evaluated).

    Raises:
        GraphFormatError: the file is not a valid capviz graph (the message says why).
    """
    return files.load(path, CapturedGraph)
