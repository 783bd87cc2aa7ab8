"""What a violation is linked to, in every picture (the static SVG and the interactive view).

A violation is drawn linked to what it affects, never to the node before it in program order
(an arrow from an unrelated node reads as "this caused it"). :func:`capviz.io.nx.violation_links`
gives the links the graph itself holds: ``reads`` (the tensor a data read read), ``affects``
(the random ops a seed changes) and ``after`` (the program-order placement, which pictures use
only to place the violation, drawn invisible). This module adds the readers of a frozen draw:

A ``frozen_random`` violation (``np.random.rand(4)`` in a scope with
``global_random="violation"``) returns NumPy's values, which enter the graph later as a
constant, on the line that first uses them. That constant is the draw's value when it is

- first read on the draw's own line (``y = x * np.random.rand(4)``), or
- named after the variable the draw's line assigns (``noise = np.random.rand(4)...`` and the
  constant ``noise``), recorded after the draw,

and the violation is linked (``affects``) to each op that reads it.
"""

from __future__ import annotations

import linecache
import re

from capviz.core.ir import Graph, Node
from capviz.io.nx import violation_links

_TARGET = re.compile(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")  # "noise = ...", "noise: T = ..."


def assigned_name(source: tuple | None) -> str | None:
    """The plain name a source line assigns (``noise`` for ``noise = np.random.rand(4)``), or
    ``None`` when the line assigns no single name or cannot be read."""
    if source is None or not isinstance(source[1], int):
        return None
    found = _TARGET.match(linecache.getline(str(source[0]), source[1]))
    return found.group(1) if found else None


def frozen_readers(graph: Graph) -> list[tuple[int, int, str]]:
    """``(violation, reader, "affects")`` for each op reading a frozen draw's value."""
    draws = [n for n in graph.nodes if n.kind == "violation" and n.op == "frozen_random"]
    if not draws:
        return []
    users: dict[int, list[Node]] = {}
    for n in graph.nodes:
        for _, a in n.operands:
            users.setdefault(a.index, []).append(n)
    constants = [n for n in graph.nodes if n.kind == "constant"]
    links = []
    for draw in draws:
        name = assigned_name(draw.source)
        line = tuple(draw.source[:2]) if draw.source is not None else None
        for c in constants:
            if c.index < draw.index:
                continue
            same_line = line is not None and c.source is not None and tuple(c.source[:2]) == line
            if same_line or (name is not None and c.name == name):
                links += [(draw.index, r.index, "affects") for r in users.get(c.index, ())]
    return links


def violation_edges(graph: Graph) -> list[tuple[int, int, str]]:
    """Every violation link of the graph (:func:`capviz.io.nx.violation_links`) and the readers
    of each frozen draw (:func:`frozen_readers`)."""
    if not graph.violation_records:
        return []
    return violation_links(graph) + frozen_readers(graph)
