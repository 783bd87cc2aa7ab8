"""The interactive view as self-contained HTML: ``graph.view()``, ``graph.to_html(path)`` and the
``text/html`` part of a graph's notebook display.

One fragment serves every place: a ``<div class="capviz-view">`` holding inline CSS, the graph
as JSON (:mod:`capviz.render.view_data`), and the view's script (``static/view.js``, shipped in
the wheel and inlined here). Nothing is fetched from the network and no server, kernel or widget
extension is needed, so the same output works in JupyterLab, Notebook 7, VS Code, an nbconvert
HTML export opened from disk, and a standalone page. Where scripts do not run (a static notebook
viewer), the fragment shows its fallback: the static SVG when one is given.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from capviz.core.ir import Graph
from capviz.render.rules import DEFAULT_KIND_STYLE, KIND_STYLES, RULES, KindStyle
from capviz.render.view_data import script_json, view_data

DEFAULT_BUDGET = RULES.budget  # boxes drawn at first: whole levels open while they fit
# dagre (static/dagre.min.js, MIT, static/dagre.LICENSE.txt) kept out of the page's globals
_DAGRE_OPEN = "if (!window.CapvizDagre) (function () {\n"
_DAGRE_CLOSE = "\nwindow.CapvizDagre = dagre;\n})();"


@cache
def _asset(name: str) -> str:
    return resources.files("capviz.render").joinpath("static", name).read_text(encoding="utf-8")


_DARK = ('body[data-jp-theme-light="false"] .capviz-view', ".capviz-view.cv-dark")


def _kind_rule(selector: str, style: KindStyle) -> str:
    light = f".capviz-view {selector} > .cv-shape"
    dark = ", ".join(f"{d} {selector} > .cv-shape" for d in _DARK)
    return (f"{light} {{ fill: {style.fill}; stroke: {style.stroke}; stroke-width: 1.2; }}\n"
            f"{dark} {{ fill: {style.dark_fill}; stroke: {style.dark_stroke}; }}\n")


@cache
def kind_css() -> str:
    """The colours of every node kind (:data:`capviz.render.rules.KIND_STYLES`), light and
    dark: the view styles a node by its kind from this data, so a new kind needs no script."""
    rules = [_kind_rule("g.cv-node", DEFAULT_KIND_STYLE)]
    rules += [_kind_rule(f"g.cv-kind-{name}", style) for name, style in KIND_STYLES.items()]
    return "".join(rules)


def _script_safe(code: str) -> str:
    """Our own script and CSS never contain ``</`` or ``<!--``; checked, not assumed."""
    if "</" in code or "<!--" in code:
        raise ValueError("a capviz static asset contains '</' or '<!--'")
    return code


def fragment(graph: Graph, values: Mapping[Any, Any] | None = None,
             title: str | None = None, budget: int = DEFAULT_BUDGET,
             fallback_svg: str | None = None, live: bool = False, key: str = "",
             page: bool = False) -> str:
    """The view as one HTML element (for a notebook output or inside a page).

    Args:
        graph: the graph.
        values: kept values by node (``executor.values``) for the value panel.
        title: a heading shown in the status line.
        budget: how many boxes are drawn at first.
        fallback_svg: static SVG shown where scripts do not run (removed when the view starts).
        live: lay out for streaming: nodes keep their place as more are appended.
        key: identifies a live view across updates (its zoom and open scopes are kept).
        page: fill the browser window (standalone page).
    """
    data = view_data(graph, values=values, title=title, budget=budget, live=live)
    css = _script_safe(kind_css() + _asset("view.css"))
    js = _script_safe(_asset("view.js"))
    dagre = _script_safe(_asset("dagre.min.js"))
    fallback = fallback_svg if fallback_svg is not None else (
        "<p>capviz view: this output needs JavaScript; "
        f"{html.escape(repr(graph))}</p>")
    classes = "capviz-view cv-page" if page else "capviz-view"
    # one JSON script per field: the browser parses (and the page reads) them in short steps
    fields = "".join(f'<script type="application/json" class="cv-data" data-field="{field}">'
                     f"{script_json(value)}</script>" for field, value in data.items())
    return (f'<div class="{classes}" data-key="{html.escape(key, quote=True)}">'
            f"<style>{css}</style>"
            f'<div class="cv-fallback">{fallback}</div>'
            f"{fields}"
            f"<script>{_DAGRE_OPEN}{dagre}{_DAGRE_CLOSE}\n{js}\nwindow.CapvizView.boot(document.currentScript.parentElement);</script>"
            "</div>")


def to_html(graph: Graph, path: str | os.PathLike | None = None,
            values: Mapping[Any, Any] | None = None, title: str | None = None,
            budget: int = DEFAULT_BUDGET) -> str:
    """A standalone HTML page with the interactive view; written to ``path`` when given."""
    heading = title or "capviz graph"
    body = fragment(graph, values=values, title=title, budget=budget, page=True)
    text = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(heading)}</title>"
            "<style>html,body{margin:0;padding:0}</style></head>"
            f"<body>{body}</body></html>\n")
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return text


class GraphView:
    """What ``graph.view()`` returns: displays as the interactive view in a notebook, with the
    static SVG beside it (and inside it as the fallback) for viewers that run no scripts.

    Attributes:
        graph: the graph shown.
    """

    def __init__(self, graph: Graph, values: Mapping[Any, Any] | None = None,
                 title: str | None = None, budget: int | None = None) -> None:
        self.graph = graph
        self.values = values
        self.title = title
        self.budget = DEFAULT_BUDGET if budget is None else budget

    def html(self, fallback_svg: str | None = None) -> str:
        """The view as an HTML fragment (``text/html``)."""
        return fragment(self.graph, values=self.values, title=self.title, budget=self.budget,
                        fallback_svg=fallback_svg)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from capviz.core.errors import RenderError
        from capviz.render.svg import to_svg

        bundle = {"text/plain": repr(self.graph)}
        svg = None
        try:
            svg = bundle["image/svg+xml"] = to_svg(self.graph)
        except RenderError as err:
            bundle["text/plain"] += f"\n(no SVG: {err})"
        bundle["text/html"] = self.html(fallback_svg=svg)
        return bundle
