"""What is exact on an inexact backend, per node: a property of a value, not of its dtype.

An inexact backend (JAX, Dask: ``backend.exact`` is false) may round a float result otherwise
than NumPy (a fused multiply-add, its own ``exp``, another order of additions), within
``backend.tolerance_for(dtype)``. An integer or a boolean is exact when it is computed from exact
values, and inexact when it is computed from such floats: ``np.exp(x).astype(np.int64)`` is 4
on JAX where NumPy gives 5 for a value that rounds across the integer, and ``a >= b`` flips
where ``a`` and ``b`` are that close. No tolerance covers that: an integer off by one or a flipped
boolean is a different result. So:

* :func:`inexact_nodes` says which values an inexact backend may compute otherwise: every float
  or complex result of an op that computes (arithmetic, functions, reductions, products, normal
  draws), and every value computed from one, whatever its dtype; inputs, constants, uniform and
  bernoulli draws, and ops that only move, select or compare exact values keep them exact;
* :func:`warn_inexact_outputs` warns once per compiled program when a replay on an inexact
  backend returns integer or boolean outputs that are inexact so (``cv.InexactResultWarning``,
  naming each output and the float op it comes from);
* ``graph.compare`` compares integers and booleans exactly and, where one differs, says that it
  was computed from inexact floats (``capviz/diagnostics.py``).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import numpy as np

from capviz.core.errors import InexactResultWarning
from capviz.core.ir import Graph, Node
from capviz.core.source import format_source
from capviz.ops import traits
from capviz.replay import steps

# ops whose result elements are operand elements (moved, selected, compared or converted): exact
# when their operands are, whatever the dtype
_KEEPS = (traits.MOVE | traits.SPLIT | traits.SELECT | traits.GATHER
          | {"unpack", "astype", "copy", "where", "clip", "sort", "argsort", "maximum",
             "minimum", "fmax", "fmin", "negative", "positive", "absolute", "sign",
             "zeros_like", "ones_like", "full_like", "random_uniform", "random_bernoulli"})


def inexact_nodes(graph: Graph, backend: Any = None) -> dict[int, Node]:
    """The values an inexact backend may compute otherwise than NumPy, by node index, each with
    the float op it was first computed from (see the module docstring). ``backend``: one whose
    ``rounds`` names the only ops it rounds otherwise (Dask: sums and products); ``None``: any
    op computing a float may (JAX)."""
    rounds = getattr(backend, "rounds", None)
    inexact: dict[int, Node] = {}
    for node in graph.nodes:
        if node.kind != "op":
            continue
        origin = None
        for a in node.args:
            if isinstance(a, Node) and a.index in inexact:
                origin = inexact[a.index]
                break
        if origin is None and node.op not in _KEEPS and (rounds is None or node.op in rounds):
            dtype = node.dtype
            if dtype is None or np.dtype(dtype).kind in "fc" or node.op in traits.FLOATS_INSIDE:
                origin = node  # a computed float (or several results: conservatively inexact)
        if origin is not None:
            inexact[node.index] = origin
    return inexact


def inexact_integer_outputs(graph: Graph, backend: Any = None) -> list[tuple[Node, Node]]:
    """The integer and boolean outputs an inexact backend may compute otherwise, and the float
    ones read from a step of such a value (:mod:`capviz.replay.steps`: ``np.floor(np.exp(x))``,
    ``np.mean(np.exp(x) >= t)``, a row gathered by ``np.argmax`` of one): ``(output node, the
    float op it comes from)`` each, the step itself for a float output."""
    inexact = inexact_nodes(graph, backend)
    found = []
    for out in graph.output_nodes:
        value = out.args[0]
        if value.dtype is not None and np.dtype(value.dtype).kind in "biu" \
                and value.index in inexact:
            found.append((out, inexact[value.index]))
    found += [(out, step) for out, step, _ in steps.stepped_float_outputs(graph, inexact)]
    return found


def origin_text(origin: Node) -> str:
    """``%3 (exp, recorded at model.py:12 in f)``."""
    where = format_source(origin.source)
    return f"%{origin.index} ({origin.op}{', recorded at ' + where if where else ''})"


def _user_level() -> int:
    """The ``stacklevel`` of the first caller outside capviz (the user's replay call)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("capviz"):
        frame, level = frame.f_back, level + 1
    return level


def warn_inexact_outputs(graph: Graph, backend: Any) -> None:
    """On an inexact backend, warn (:class:`capviz.InexactResultWarning`) naming the integer
    and boolean outputs computed from its inexact floats, and the float ones read from a step
    of such a value (:mod:`capviz.replay.steps`); nothing otherwise."""
    if backend.exact:
        return
    found = inexact_integer_outputs(graph, backend)
    if not found:
        return
    names = ", ".join(f"{out.name!r} ({np.dtype(out.dtype)}, from {origin_text(origin)})"
                      for out, origin in found)
    warnings.warn(
        f"the {backend.name} backend rounds floats otherwise than NumPy, and the integer, "
        f"boolean or stepped outputs {names} are computed from such floats: they may differ "
        "from NumPy's by more than any tolerance (an integer off by one, a boolean flipped, a "
        "float read from a rounding, a comparison or an index of such a value off by its "
        "step). Replay with backend='numpy' for NumPy's exact values, or find where with "
        f"graph.compare(inputs, against={backend.name!r})",
        InexactResultWarning, stacklevel=_user_level())
