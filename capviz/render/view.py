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

import base64
import gzip
import html
import json
import os
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from capviz.core.ir import Graph
from capviz.render.rules import DEFAULT_KIND_STYLE, KIND_STYLES, RULES, KindStyle
from capviz.render.view_data import view_data

DEFAULT_BUDGET = RULES.budget  # boxes drawn at first: whole levels open while they fit
# dagre (static/dagre.min.js, MIT, static/dagre.LICENSE.txt) kept out of the page's globals, in
# a factory: the page calls it once, and the layout Web Worker is made from its source text
_DAGRE_OPEN = "window.CapvizDagreFactory = function () {\n"
_DAGRE_CLOSE = ("\nreturn dagre;\n};\n"
                "if (!window.CapvizDagre) window.CapvizDagre = window.CapvizDagreFactory();")


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


LOADER = """(function (root) {
  if (!root) return;
  function go() { window.CapvizView.boot(root); }
  if (window.CapvizView) { go(); return; }
  var bin = atob(root.querySelector("script.cv-code").textContent.trim());
  var bytes = new Uint8Array(bin.length);
  for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  new Response(stream).text().then(function (code) {
    if (!window.CapvizView) {
      var script = document.createElement("script");
      script.textContent = code;
      (document.head || document.body).appendChild(script);
    }
    go();
  }, function (err) { root.setAttribute("data-error", String(err)); });
})(document.currentScript && document.currentScript.parentElement);"""

HINT = ("Trust this notebook to open the interactive view (JupyterLab: File \u25b8 Trust "
        "Notebook; or <code>jupyter trust NOTEBOOK.ipynb</code>).")


def _packed(text: str) -> str:
    """gzip, then base64: what the page inflates with ``DecompressionStream``."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), 9, mtime=0)).decode("ascii")


@cache
def code_blob() -> str:
    """The view's script (dagre, the style sheet, ``view.js``), packed once per process."""
    css = kind_css() + _asset("view.css")
    code = (f"{_DAGRE_OPEN}{_asset('dagre.min.js')}{_DAGRE_CLOSE}\n"
            f"window.CapvizCSS = {json.dumps(css)};\n{_asset('view.js')}")
    return _packed(code)


def data_blob(data: Mapping[str, Any]) -> str:
    """The view's data (:func:`capviz.render.view_data.view_data`) as packed JSON; every
    string is escaped to ASCII, so a lone surrogate or ``</script>`` in a name is inert."""
    return _packed(json.dumps(data, separators=(",", ":"), allow_nan=False))


def read_data(fragment_html: str) -> dict[str, Any]:
    """The data a view fragment carries (the inverse of :func:`data_blob`, for tests and
    tools that read a saved notebook)."""
    packed = fragment_html.split('class="cv-data cv-blob">', 1)[1].split("<", 1)[0]
    return json.loads(gzip.decompress(base64.b64decode(packed)))


def picture(svg: str | None, graph: Graph, hint: bool = True) -> str:
    """What shows where no script runs: the static SVG as an image (an ``<img>`` with a data
    URI, which JupyterLab's sanitizer keeps in an untrusted notebook, where it drops inline
    SVG and scripts) and a one-line hint to trust the notebook for the interactive view."""
    if svg is None:
        image = f"<p>capviz view: this output needs JavaScript; {html.escape(repr(graph))}</p>"
    else:
        uri = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
        image = (f'<img class="cv-picture" alt="{html.escape(repr(graph), quote=True)}" '
                 f'src="{uri}">')
    return f'{image}<p class="cv-hint">{HINT}</p>' if hint else image


def fragment(graph: Graph, values: Mapping[Any, Any] | None = None,
             title: str | None = None, budget: int = DEFAULT_BUDGET,
             fallback_svg: str | None = None, live: bool = False, key: str = "",
             page: bool = False, metric: Any = None, canvas_at: int = RULES.canvas_at,
             worker_at: int = RULES.worker_at) -> str:
    """The view as one HTML element (for a notebook output or inside a page).

    The data is stored once, packed (gzip and base64, about a tenth of the JSON), beside the
    packed script; a small loader unpacks and starts the view. Where scripts do not run, the
    element shows ``fallback_svg`` as an image and a hint to trust the notebook.

    Args:
        graph: the graph.
        values: kept values by node (``executor.values``) for the value panel.
        title: a heading shown in the status line.
        budget: how many boxes are drawn at first.
        fallback_svg: static SVG shown where scripts do not run (removed when the view starts).
        live: lay out for streaming: nodes keep their place as more are appended.
        key: identifies a live view across updates (its zoom and open scopes are kept).
        page: fill the browser window (standalone page).
        metric: colour nodes by a number per node, with a legend (see
            :func:`capviz.render.view_data.view_data`).
        canvas_at: past this many drawn nodes the view draws on a ``<canvas>``
            (``RULES.canvas_at``; 0 draws every graph on a canvas).
        worker_at: a graph of more nodes is laid out in a Web Worker (``RULES.worker_at``).
    """
    data = view_data(graph, values=values, title=title, budget=budget, live=live, metric=metric,
                     canvas_at=canvas_at, worker_at=worker_at)
    classes = "capviz-view cv-page" if page else "capviz-view"
    return (f'<div class="{classes}" data-key="{html.escape(key, quote=True)}">'
            f'<div class="cv-fallback">{picture(fallback_svg, graph, hint=not page)}</div>'
            f'<script type="application/octet-stream" class="cv-data cv-code">{code_blob()}'
            "</script>"
            f'<script type="application/octet-stream" class="cv-data cv-blob">'
            f"{data_blob(data)}</script>"
            f"<script>{_script_safe(LOADER)}</script>"
            "</div>")


def to_html(graph: Graph, path: str | os.PathLike | None = None,
            values: Mapping[Any, Any] | None = None, title: str | None = None,
            budget: int = DEFAULT_BUDGET, metric: Any = None,
            canvas_at: int = RULES.canvas_at, worker_at: int = RULES.worker_at) -> str:
    """A standalone HTML page with the interactive view; written to ``path`` when given
    (``canvas_at``, ``worker_at``: see :func:`fragment`)."""
    heading = title or "capviz graph"
    body = fragment(graph, values=values, title=title, budget=budget, page=True, metric=metric,
                    canvas_at=canvas_at, worker_at=worker_at)
    text = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(heading)}</title>"
            "<style>html,body{margin:0;padding:0}</style></head>"
            f"<body>{body}</body></html>\n")
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return text
