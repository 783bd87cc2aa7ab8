"""Jupyter display: ``CapturedGraph._repr_mimebundle_``, and :class:`GraphView` (``graph.view()``).

A display stores the graph once, compactly: ``text/html`` holds the interactive view (its data
packed, see :mod:`capviz.render.view`) with a small static picture inside it (the top levels
as an SVG image, :data:`capviz.render.rules.RULES` ``overview`` boxes) and a hint to trust the
notebook, shown where scripts do not run: an untrusted notebook (JupyterLab sanitizes the HTML
and keeps the image), a static viewer. ``text/plain`` is the listing of a small graph, the
one-line summary of a large one. The full
static SVG (``image/svg+xml``) and the listing are there when asked for by ``include``; they
are not stored in every display (they were three more copies of the graph: 450 KB for a
459-op GPT, now under 120 KB in all).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capviz.core.errors import RenderError
from capviz.core.ir import Graph
from capviz.render.rules import RULES
from capviz.render.view import DEFAULT_BUDGET, fragment

MIME_TYPES = ("text/html", "text/plain")  # stored by default
ON_REQUEST = ("image/svg+xml",)  # given when ``include`` names it


LISTING_MAX = 4000  # characters of listing a display stores; a larger graph stores its summary


def plain_text(graph: Graph) -> str:
    """The listing of a small graph; the one-line summary of a large one (``print(graph)``
    shows its listing)."""
    listing = str(graph)
    if len(listing) <= LISTING_MAX:
        return listing
    return f"{graph!r}\n(print(graph) shows its listing of {len(graph.nodes)} nodes)"


def mimebundle(graph: Graph, include: Any = None, exclude: Any = None,
               values: Mapping[Any, Any] | None = None, title: str | None = None,
               budget: int = RULES.budget, metric: Any = None) -> dict[str, str]:
    """``{"text/html": ..., "text/plain": ...}`` (and ``image/svg+xml`` when ``include`` names
    it), honouring ``include``/``exclude``."""
    from capviz.render.svg import to_svg

    wanted = set(include) & set(MIME_TYPES + ON_REQUEST) if include else set(MIME_TYPES)
    if exclude:
        wanted -= set(exclude)
    bundle: dict[str, str] = {}
    if "text/plain" in wanted:
        bundle["text/plain"] = plain_text(graph)
    if "image/svg+xml" in wanted:
        try:
            bundle["image/svg+xml"] = to_svg(graph, budget=budget)
        except RenderError as err:
            bundle["text/plain"] = f"{bundle.get('text/plain', repr(graph))}\n(no SVG: {err})"
    if "text/html" in wanted:
        try:
            overview = to_svg(graph, budget=RULES.overview)
        except RenderError:
            overview = None
        bundle["text/html"] = fragment(graph, values=values, title=title, budget=budget,
                                       fallback_svg=overview, metric=metric)
    return bundle


class GraphView:
    """What ``graph.view()`` returns: displays as the interactive view in a notebook, with the
    static SVG beside it (and inside it as the fallback) for viewers that run no scripts.

    Attributes:
        graph: the graph shown.
    """

    def __init__(self, graph: Graph, values: Mapping[Any, Any] | None = None,
                 title: str | None = None, budget: int | None = None,
                 metric: Any = None) -> None:
        self.graph = graph
        self.metric = metric
        self.values = values
        self.title = title
        self.budget = DEFAULT_BUDGET if budget is None else budget

    def html(self, fallback_svg: str | None = None) -> str:
        """The view as an HTML fragment (``text/html``)."""
        return fragment(self.graph, values=self.values, title=self.title, budget=self.budget,
                        fallback_svg=fallback_svg, metric=self.metric)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return mimebundle(self.graph, include, exclude, values=self.values, title=self.title,
                          budget=self.budget, metric=self.metric)
