"""The live view: an ipywidgets view that grows while a capture records.

``capture_scope(live=True)`` (or :func:`live`) attaches a :class:`LiveView` to the scope's
recorder. The recorder tells it of each node. At most every ``interval`` seconds the view takes a
snapshot of the nodes recorded so far and hands it to a worker thread, which builds the DOT,
runs the renderer and shows the snapshot in the widget as the interactive view
(:mod:`capviz.render.view`, laid out so drawn nodes keep their places; the SVG is its fallback):
the capturing code never waits for Graphviz. A snapshot is taken only once the capture has run
four times as long as rendering it is expected to take (learned from earlier renders), so
rendering costs a capture at most about a quarter of its time. A violation hands over a
snapshot at once, its node red. The widget itself appears with the first snapshot; a capture too
short for one shows its final graph when its cell ends. In a notebook the widget is displayed
through a display handle, and when the cell ends that one output is replaced by the final graph
as the interactive view, folded as any display of a graph is (its data stored once, a small
static picture inside for viewers that run no script), so the final state shows once, and
saved, executed or exported notebooks show it without widget JavaScript. Outside a notebook,
or without ipywidgets, attaching does nothing and warns once.

A render that fails with anything but a :class:`~capviz.core.errors.RenderError` (which the widget
shows) stops the view, and the failure reaches the user at once: the next recorded op, or the
scope's exit, raises a ``RenderError`` whose cause is the original exception. Nothing waits for a
worker that is gone.
"""

from __future__ import annotations

import html
import secrets
import sys
import threading
import time
import warnings
from typing import Any

from capviz.core.errors import RenderError
from capviz.core.ir import Graph, Node
from capviz.render.escape import printable

_warned = False


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython with a kernel attached)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _warn_once(why: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"capviz live view disabled: {why}", RuntimeWarning,
                      stacklevel=_user_stacklevel())


def _user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning raised from the caller at the user's line: the
    first frame outside capviz and NumPy (``capture_scope`` and ``cv.capture`` reach the live
    view through different depths)."""
    from capviz.core.source import is_user_file

    level, frame = 2, sys._getframe(2)
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        level, frame = level + 1, frame.f_back
    return level if frame is not None else 2


def snapshot(graph: Graph) -> Graph:
    """A copy of the graph's node list and records, safe to render while capture goes on."""
    copy = type(graph)()
    copy.nodes = list(graph.nodes)
    copy.constant_values = graph.constant_values
    copy.violation_records = list(graph.violation_records)
    copy.marks = dict(graph.marks)
    copy.stats = graph.stats
    copy.complete = graph.complete
    return copy


class LiveView:
    """A widget showing a graph while it is captured.

    Args:
        graph: the graph being recorded.
        interval: least time between two renders while recording, in seconds.
        display: show the widget (and, at the end, the static SVG) in the notebook.
        background: render on a worker thread (``True`` in a notebook); ``False`` renders on the
            capturing thread, which tests use for determinism.

    Attributes:
        widget: the ``ipywidgets.VBox`` (status line over the graph).
        status: the status ``ipywidgets.HTML`` (ops so far, violations, elapsed).
        image: the ``ipywidgets.Output`` showing the latest snapshot as the interactive view
            (``text/html``, laid out for streaming), with its SVG beside it.
        svg: the latest SVG (``None`` when the renderer failed); html: the latest view.
        renders: how many renders finished; ``ops``/``violations``: counts so far.
    """

    def __init__(self, graph: Graph, interval: float = 0.25, display: bool = True,
                 background: bool = True, **render_options: Any) -> None:
        import ipywidgets

        self.graph = graph
        self.interval = interval
        self.render_options = render_options
        self.background = background
        self.display = display
        self.per_node = 5e-6  # seconds to render one node; refined after each render
        self.svg: str | None = None
        self.html: str | None = None  # the latest interactive view (text/html)
        self.key = f"live-{secrets.token_hex(6)}"  # the page keeps this view's state under it
        self.ops = 0
        self.violations = 0
        self.renders = 0
        self.started = time.monotonic()
        self._next = self.started + interval
        self._lock = threading.Lock()
        self._pending: tuple[Graph, str] | None = None
        self._wake = threading.Condition(self._lock)
        self._busy = False
        self._closed = False
        self._worker: threading.Thread | None = None
        self.failure: BaseException | None = None  # what stopped the view, if anything
        self._reported = False
        self._widgets = ipywidgets
        self.widget: Any = None
        self.handle: Any = None
        if not display:
            self._ensure_widget()

    def _ensure_widget(self) -> None:
        """Create the widget (and, in a notebook, display it with a handle for the final SVG)."""
        if self.widget is not None:
            return
        self.status = self._widgets.HTML(value=self._status_text("recording"))
        # an Output widget renders its outputs trusted, so the view's script runs in it
        self.image = self._widgets.Output()
        self.widget = self._widgets.VBox([self.status, self.image])
        if self.display:
            from IPython.display import display as show

            # one output: the widget while recording, replaced by the final view at the end
            self.handle = show(self.widget, display_id=True)

    def _status_text(self, state: str, ops: int | None = None,
                     violations: int | None = None) -> str:
        elapsed = time.monotonic() - self.started
        ops = self.ops if ops is None else ops
        violations = self.violations if violations is None else violations
        colour = "#dc2626" if violations else "#374151"
        return (f'<span style="font-family:monospace;color:{colour}">capviz {html.escape(state)}'
                f": {ops} ops, {violations} violations, {elapsed:.2f} s</span>")

    # --- recorder callbacks (the capturing thread) -------------------------------------------

    def node_added(self, node: Node) -> None:
        if self.failure is not None:
            self._report_failure()
            return
        if node.kind == "op":
            self.ops += 1
        now = time.monotonic()
        if now >= self._next:
            expected = self.per_node * len(self.graph.nodes)
            if now - self.started >= 4 * expected:
                self._submit("recording")
            else:
                self._next = self.started + 4 * expected

    def violation(self, node: Node) -> None:
        if self.failure is not None:
            self._report_failure()
            return
        self.violations += 1
        self._submit("recording")

    def _report_failure(self) -> None:
        """Raise the render failure once, as a ``RenderError`` caused by it; afterwards the
        stopped view ignores the capture."""
        if self._reported:
            return
        self._reported = True
        cause = self.failure
        err = RenderError(f"the live view stopped: rendering the graph failed with "
                          f"{type(cause).__name__}: {printable(str(cause))}")
        err.graph = self.graph
        raise err from cause

    def _submit(self, state: str, final: bool = False) -> None:
        self._ensure_widget()
        graph = self.graph if final else snapshot(self.graph)
        self._next = time.monotonic() + self.interval
        if not self.background:
            self._render_or_stop(graph, state)
            self._raise_failure()
            return
        with self._lock:
            self._pending = (graph, state)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="capviz-live",
                                                daemon=True)
                self._worker.start()
            self._wake.notify()

    # --- rendering (the worker thread) ---------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._lock:
                while self._pending is None and not self._closed:
                    self._wake.wait()
                if self._pending is None:
                    return
                graph, state = self._pending
                self._pending = None
                self._busy = True
            try:
                self._render_or_stop(graph, state)
            finally:
                with self._lock:
                    self._busy = False
                    self._wake.notify_all()
            if self.failure is not None:
                return

    def _render_or_stop(self, graph: Graph, state: str) -> None:
        """Render; any failure stops the view and is kept on ``failure`` for the capturing
        thread to raise."""
        try:
            self._render(graph, state)
        except BaseException as err:
            with self._lock:
                self.failure = err
                self._closed = True
                self._pending = None
                self._wake.notify_all()

    def _raise_failure(self) -> None:
        if self.failure is not None:
            self._report_failure()

    def _render(self, graph: Graph, state: str) -> None:
        from capviz.render.svg import to_svg

        start = time.monotonic()
        try:
            svg = to_svg(graph, **self.render_options)
            self.svg = svg
        except RenderError as err:  # the interactive view still draws; the error is its fallback
            self.svg = None
            svg = f"<pre>{html.escape(printable(str(err)))}</pre>"
        self.html = self._view_html(graph, state, svg)
        data = {"text/html": self.html, "text/plain": repr(graph)}
        if self.svg:
            data["image/svg+xml"] = self.svg
        self.image.outputs = ({"output_type": "display_data", "data": data, "metadata": {}},)
        self.renders += 1
        end = time.monotonic()
        self.per_node = (end - start) / max(1, len(graph.nodes))
        self._next = max(self._next, end + 4 * (end - start))
        # the counts the drawn snapshot holds, so the status line and the view agree
        self.status.value = self._status_text(state, sum(n.kind == "op" for n in graph.nodes),
                                              len(graph.violation_records))

    def _view_html(self, graph: Graph, state: str, fallback: str | None) -> str:
        """The interactive view of a snapshot, laid out for streaming: nodes keep their places
        as more arrive, and the page keeps its zoom and open scopes across updates (``key``)."""
        from capviz.render.view import fragment

        return fragment(graph, title=f"capviz {state}", fallback_svg=fallback, live=True,
                        key=self.key)

    def _final_bundle(self, graph: Graph, state: str) -> dict[str, str]:
        """The cell's one output once the capture ends: the graph displayed as a graph is (its
        view folded by the same rules, the data stored once), titled with the final state."""
        from capviz.render.jupyter import mimebundle

        return mimebundle(graph, title=f"capviz {state}")

    def refresh(self, graph: Graph | None = None) -> None:
        """Draw ``graph`` (default: the view's graph) again, e.g. after ``graph.compute_stats``
        put statistics in its tooltips, or after the debugger marked a node."""
        if graph is not None:
            self.graph = graph
        self._submit("done" if self.graph.complete else "recording", final=True)
        if self.background:
            self.wait()

    def wait(self, timeout: float = 60.0) -> None:
        """Block until every render handed over so far has finished."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while (self._pending is not None or self._busy) and self.failure is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RenderError(f"the live view did not finish rendering in {timeout} s")
                self._wake.wait(left)
        self._raise_failure()

    def finish(self, graph: Graph) -> None:
        """Render the final graph; in a notebook, leave it as a static SVG output before the
        cell ends (the capturing code goes on meanwhile)."""
        self.graph = graph
        state = "done" if graph.complete else f"failed: {type(graph.error).__name__}"
        if self.failure is not None:  # the view stopped: say why (once), draw nothing more
            self.close()
            self._raise_failure()
            return
        if not self.display:
            self._submit(state, final=True)
            if self.background:
                self.wait()
                self.close()
            return
        started = self.widget is not None
        if started:  # a long capture: its watcher sees the final graph at once
            self._submit(state, final=True)
        from IPython import get_ipython

        shell = get_ipython()

        def publish(*_: Any) -> None:
            if shell is not None:
                shell.events.unregister("post_run_cell", publish)
            if not started:
                self._submit(state, final=True)
            self.wait()
            self.close()
            self.handle.update(self._final_bundle(graph, state), raw=True)

        if shell is None:
            publish()
        else:
            shell.events.register("post_run_cell", publish)

    def close(self) -> None:
        """Stop the worker thread (once it has finished what it was given); idempotent."""
        with self._lock:
            self._closed = True
            self._wake.notify_all()


def attach(scope: Any, force: bool = False, **options: Any) -> LiveView | None:
    """Attach a live view to an entered capture scope (``None`` outside a notebook).

    ``force=True`` attaches outside a notebook too, rendering on the capturing thread and
    displaying nothing (for tests and scripts that read the widget's state).
    """
    notebook = in_notebook()
    if not force and not notebook:
        _warn_once("not running in a Jupyter kernel")
        return None
    options.setdefault("display", notebook)
    options.setdefault("background", notebook)
    try:
        view = LiveView(scope.graph, **options)
    except ImportError:
        _warn_once("ipywidgets is not installed")
        return None
    scope.recorder.listener = view
    scope.view = view
    return view


def live(scope: Any, **options: Any) -> LiveView | None:
    """Show a live view of an entered capture scope (what ``capture_scope(live=True)`` does).

    Returns the :class:`LiveView`, or ``None`` (with one warning) outside a notebook.
    """
    return attach(scope, **options)
