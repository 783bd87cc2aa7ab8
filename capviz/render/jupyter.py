"""Jupyter display: ``CapturedGraph._repr_mimebundle_``.

The bundle holds the interactive view (``text/html``, see :mod:`capviz.render.view`), the static
SVG (``image/svg+xml``) and the text listing (``text/plain``). A notebook front end shows the
richest it can: the view where scripts run (JupyterLab, Notebook 7, VS Code, nbconvert HTML), the
SVG in static viewers. The view's HTML also carries the SVG as its fallback, shown where the HTML
is displayed but its scripts are stripped.
"""

from __future__ import annotations

from typing import Any

from capviz.core.errors import RenderError
from capviz.core.ir import Graph

MIME_TYPES = ("text/html", "image/svg+xml", "text/plain")


def mimebundle(graph: Graph, include: Any = None, exclude: Any = None) -> dict[str, str]:
    """``{"text/html": ..., "image/svg+xml": ..., "text/plain": ...}``, honouring
    ``include``/``exclude``."""
    from capviz.render.svg import to_svg

    wanted = set(MIME_TYPES)
    if include:
        wanted &= set(include)
    if exclude:
        wanted -= set(exclude)
    bundle: dict[str, str] = {}
    if "text/plain" in wanted:
        bundle["text/plain"] = str(graph)
    svg = None
    if wanted & {"image/svg+xml", "text/html"}:
        try:
            svg = to_svg(graph)
        except RenderError as err:
            bundle["text/plain"] = f"{bundle.get('text/plain', repr(graph))}\n(no SVG: {err})"
    if svg is not None and "image/svg+xml" in wanted:
        bundle["image/svg+xml"] = svg
    if "text/html" in wanted:
        from capviz.render.view import fragment

        bundle["text/html"] = fragment(graph, fallback_svg=svg)
    return bundle
