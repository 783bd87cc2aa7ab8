"""The live view: an ipywidgets view that grows while a capture records.

``capture_scope(live=True)`` (or :func:`live`) attaches a :class:`LiveView` to the scope's
recorder. The recorder tells it of each node; the view re-renders from a snapshot at most every
``interval`` seconds, and at least four render-durations apart, so rendering never costs a capture
more than about a quarter of its time. A violation renders at once, its node red. On scope exit
the final graph is drawn and also left as a static ``image/svg+xml`` output (through a display
handle), so saved or exported notebooks show it without widget JavaScript. Outside a notebook, or
without ipywidgets, attaching does nothing and warns once.
"""

from __future__ import annotations

import html
import time
import warnings
from typing import Any

from capviz.errors import RenderError
from capviz.ir import CapturedGraph, Node

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
        warnings.warn(f"capviz live view disabled: {why}", RuntimeWarning, stacklevel=4)


class LiveView:
    """A widget showing a graph while it is captured.

    Attributes:
        widget: the ``ipywidgets.VBox`` (status line over the SVG).
        status: the status ``ipywidgets.HTML`` (ops so far, violations, elapsed).
        image: the ``ipywidgets.HTML`` holding the latest SVG.
        renders: how many times the graph was rendered.
        ops: ops recorded so far; ``violations``: violations so far.
    """

    def __init__(self, graph: CapturedGraph, interval: float = 0.25, display: bool = True,
                 **render_options: Any) -> None:
        import ipywidgets

        self.graph = graph
        self.interval = interval
        self.render_options = render_options
        self.ops = 0
        self.violations = 0
        self.renders = 0
        self.started = time.monotonic()
        self._next = self.started + interval
        self.status = ipywidgets.HTML(value=self._status_text("recording"))
        self.image = ipywidgets.HTML(value="")
        self.widget = ipywidgets.VBox([self.status, self.image])
        self.handle: Any = None
        if display:
            from IPython.display import display as show

            show(self.widget)
            self.handle = show({"text/plain": "capviz: capture in progress"}, raw=True,
                               display_id=True)

    def _status_text(self, state: str) -> str:
        elapsed = time.monotonic() - self.started
        colour = "#dc2626" if self.violations else "#374151"
        return (f'<span style="font-family:monospace;color:{colour}">capviz {html.escape(state)}'
                f": {self.ops} ops, {self.violations} violations, {elapsed:.2f} s</span>")

    # --- recorder callbacks --------------------------------------------------------------------

    def node_added(self, node: Node) -> None:
        if node.kind == "op":
            self.ops += 1
        now = time.monotonic()
        if now >= self._next:
            self.render("recording")

    def violation(self, node: Node) -> None:
        self.violations += 1
        self.render("recording")

    def render(self, state: str) -> None:
        """Draw the graph now (from the nodes recorded so far)."""
        from capviz.render.svg import to_svg

        start = time.monotonic()
        try:
            svg = to_svg(self.graph, **self.render_options)
            self.image.value = svg
        except RenderError as err:
            self.image.value = f"<pre>{html.escape(str(err))}</pre>"
        self.renders += 1
        end = time.monotonic()
        self._next = end + max(self.interval, 4 * (end - start))
        self.status.value = self._status_text(state)

    def finish(self, graph: CapturedGraph) -> None:
        """Draw the final graph and leave it as a static SVG output."""
        self.graph = graph
        state = "done" if graph.complete else f"failed: {type(graph.error).__name__}"
        self.render(state)
        if self.handle is not None:
            from capviz.render.jupyter import mimebundle

            self.handle.update(mimebundle(graph), raw=True)


def attach(scope: Any, force: bool = False, **options: Any) -> LiveView | None:
    """Attach a live view to an entered capture scope (``None`` outside a notebook)."""
    if not force and not in_notebook():
        _warn_once("not running in a Jupyter kernel")
        return None
    try:
        view = LiveView(scope.graph, display=not force or in_notebook(), **options)
    except ImportError:
        _warn_once("ipywidgets is not installed")
        return None
    scope.recorder.listener = view
    scope.view = view
    return view


def live(scope: Any, **options: Any) -> LiveView | None:
    """Show a live view of an active capture scope (what ``capture_scope(live=True)`` does)."""
    return attach(scope, **options)
