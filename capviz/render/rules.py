"""The folding rules every picture of a graph follows, defined once.

The static SVG (:mod:`capviz.render.model`, drawn by :mod:`capviz.render.dot`) and the
interactive view (:mod:`capviz.render.view_data`, drawn by ``static/view.js``) fold the same
graph the same way because both take their decisions from the outline that
:func:`capviz.render.model.outline` builds with these numbers; the view receives the decisions
(its boxes, folds, groups and which of them start open) in its JSON and decides nothing of its
own. docs/guide/rendering.md, "What is drawn", states the rules in words.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Rules:
    """Thresholds of what a picture folds.

    Attributes:
        budget: boxes drawn at first: whole levels of the scope tree open, top down, while the
            drawing stays within it (``to_svg()``, ``graph.view()`` and the CLI's default).
        fold_min: consecutive identical sibling scopes (same name up to the call number, same
            structure) that fold into one ``name × N`` box.
        chunk: a box holding more items than this shows them in program-order groups of this
            many (groups of groups when there are more than this many groups).
        aside_degree: a node read by more items than this is set aside: its readers show a
            small stub naming it instead of an edge.
        max_annotations: constant lines shown on one op; more become ``+N more constants``.
        overview: boxes drawn in the static picture a notebook display carries for viewers that
            run no script (an untrusted notebook, a static viewer): small, the top levels.
        canvas_at: the interactive view draws on a ``<canvas>`` (not as SVG elements) once it
            draws more nodes than this (an SVG of 1,000 nodes pans at ~10 frames a second in a
            software-rendered Chromium; the canvas at 60 with 50,000).
        worker_at: the view lays out a graph of more nodes than this in a Web Worker.
    """

    budget: int = 160
    fold_min: int = 3
    chunk: int = 48
    aside_degree: int = 12
    max_annotations: int = 3
    overview: int = 24
    canvas_at: int = 800
    worker_at: int = 2000


RULES = Rules()


@dataclasses.dataclass(frozen=True)
class KindStyle:
    """How the nodes of one kind are drawn, by the static SVG and the interactive view alike.

    A new node kind needs one entry in :data:`KIND_STYLES` and nothing else: the view reads the
    shapes and colours from its data and its generated style sheet (no script change), and DOT
    maps the shape to Graphviz's.

    Attributes:
        shape: ``round`` (a rounded box), ``box``, ``store`` (a cylinder: a value that lives
            across steps), ``hexagon``, ``diamond`` or ``octagon``.
        fill: fill colour on a light background.
        stroke: outline colour on a light background.
        dark_fill: fill colour on a dark background (JupyterLab Dark).
        dark_stroke: outline colour on a dark background.
    """

    shape: str
    fill: str
    stroke: str
    dark_fill: str
    dark_stroke: str


# in this order: a kind's position is its code in the view's data (input 0 ... violation 4)
KIND_STYLES: dict[str, KindStyle] = {
    "input": KindStyle("round", "#dbeafe", "#1d4ed8", "#172554", "#93c5fd"),
    "constant": KindStyle("box", "#f3f4f6", "#6b7280", "#1f2937", "#9ca3af"),
    "op": KindStyle("round", "#ffffff", "#374151", "#111827", "#9ca3af"),
    "output": KindStyle("round", "#dcfce7", "#15803d", "#052e16", "#86efac"),
    "violation": KindStyle("box", "#fee2e2", "#dc2626", "#450a0a", "#f87171"),
    # state (issue 20): buffers and generators written in place, drawn as a store
    "state": KindStyle("store", "#fef9c3", "#a16207", "#422006", "#facc15"),
    # guard (issue 21): a value read during capture that the replay checks, a decision
    "guard": KindStyle("hexagon", "#e0f2fe", "#0369a1", "#082f49", "#38bdf8"),
}
DEFAULT_KIND_STYLE = KIND_STYLES["op"]


def kind_style(kind: str) -> KindStyle:
    """The style of a node kind (an op's for a kind not listed)."""
    return KIND_STYLES.get(kind, DEFAULT_KIND_STYLE)
