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
    """

    budget: int = 160
    fold_min: int = 3
    chunk: int = 48
    aside_degree: int = 12
    max_annotations: int = 3


RULES = Rules()
