"""What a capture tensor left in a place grew from: the data (an input, a state, an outside
array read), a buffer the capture made (``np.zeros`` then ``+=``), or constants only (a memo);
the questions :func:`capviz.trace.rebound.put_back` asks of each tensor it finds."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.trace import state_fixes
from capviz.trace.fold import known_value
from capviz.trace.mutation import current
from capviz.trace.places import Place
from capviz.trace.tensor import Tensor


def reaches(recorder: Any, tensor: Tensor, found: Callable[[Any], bool]) -> bool:
    """Whether ``tensor``'s node, or any node it is computed from, is one ``found`` accepts
    (a walk of the recorded graph back from the tensor's current node)."""
    stack, seen = [current(recorder, tensor)], set()
    while stack:
        n = stack.pop()
        if n.index in seen:
            continue
        seen.add(n.index)
        if found(n):
            return True
        stack.extend(a for a in n.args if type(a) is type(n))
    return False


def of_data(tensor: Tensor, recorder: Any) -> bool:
    """Whether ``tensor`` is computed from the data: an input, a state, a constant read from an
    outside array (not a buffer of constants only, a memo: hostile review 6, finding 25)."""
    origins = recorder.graph.constant_origins
    return reaches(recorder, tensor, lambda n: n.kind in ("input", "state") or (
        n.kind == "constant" and n.index in origins))



def made_here(tensor: Tensor, recorder: Any, held: Any) -> np.ndarray | None:
    """The value of ``tensor`` where it is an array made of ``create`` ops and constants that
    read no outside array, bound where no array was (``held``: ``None`` or no attribute),
    else ``None``."""
    if held is not None and held is not ABSENT:
        return None
    graph = recorder.graph
    node = current(recorder, tensor)
    stack, seen = [node], set()
    while stack:  # (a constant read from an outside array: a value of this call)
        n = stack.pop()
        if n.index in seen:
            continue
        seen.add(n.index)
        if n.kind == "constant" and n.index in graph.constant_origins:
            return None
        stack.extend(a for a in n.args if type(a) is type(n))
    value = known_value(graph, node, recorder.known)
    if type(value) is not np.ndarray or not value.ndim:
        return None
    return value.copy(order="K")



ABSENT = object()  # (an attribute the capture added: no value before it)



_MADE = frozenset({"create", "copy", "zeros_like", "ones_like", "full_like"})



def accumulates(recorder: Any, tensor: Tensor, where: Any) -> bool:
    """Whether ``tensor``, put where a walked place held nothing or ``None`` (``where``: the
    place, or its container's label), is an accumulator made on the first call: it grew from
    a buffer the capture made (:func:`grew_from_made`), or it is a value of the data and the
    function that made it tests whether the container holds it yet (``"s" not in
    self.stats``, ``acc[0] is None``, ``self.buf.get(k)``, ``hasattr(self.stats, ...)``, an
    ``except KeyError``: the
    first call stores a copy, the later ones add to it; review 6, finding 15). Whatever this
    call's results read: a later call's may read it (``out = x if "s" not in d else x + d["s"]``:
    review 6 on 1b2de65), and a running mean kept in a dict (CS231n's
    ``bn_param["running_mean"]``) moves with eager calls, never with replays."""
    grew, data = _growth(recorder, tensor)
    if grew and data:
        return True
    if not data:
        return False
    label = where.label.rsplit("[", 1)[0] if isinstance(where, Place) else where
    source = tensor._data.source
    if not source or not label:
        return False
    name = re.escape(label)
    tested = re.compile(rf"\bin\s+{name}\b(?!\s*\[)|{name}\s*\[[^\]]*\]\s+is\s+(?:not\s+)?None"
                        rf"|\b{name}\.(?:get|setdefault)\(|hasattr\(\s*{name}\b"
                        rf"|\bnot\s+{name}\s*:|\bexcept\b.*\b(?:KeyError|IndexError|LookupError)\b")
    return any(tested.search(text) for _, text in
               state_fixes.function_lines(source[0], source[1], source[2]))



def grew_from_made(recorder: Any, tensor: Tensor) -> bool:
    """Whether ``tensor`` grew from a buffer made in the capture (an op takes the result of
    NumPy's creation functions or a copy: ``np.zeros(3)`` then ``+= x``, ``x.copy()`` then
    ``+= x``) and from the data (an input, a state, a draw)."""
    grew, data = _growth(recorder, tensor)
    return grew and data



def _growth(recorder: Any, tensor: Tensor) -> tuple[bool, bool]:
    """(grew from a buffer made in the capture, computed from the data) of ``tensor``."""
    grew = data = False
    stack, seen = [current(recorder, tensor)], set()
    while stack and len(seen) < 4096:
        node = stack.pop()
        if node.index in seen:
            continue
        seen.add(node.index)
        args = [a for a in node.args if type(a) is type(node)]
        if node.kind == "op":
            grew = grew or any(a.kind == "op" and a.op in _MADE for a in args)
            op = ops.OPS.get(node.op)
            data = data or (op is not None and op.random)
        elif node.kind != "constant":
            data = True
        if grew and data:
            break
        stack.extend(args)
    return grew, data



def read_by_capture(value: Any, read: set[int]) -> bool:
    """Whether ``value`` is an ndarray whose memory the capture read as a constant."""
    if not isinstance(value, np.ndarray):
        return False
    root = value
    while isinstance(root.base, np.ndarray):
        root = root.base
    return id(root) in read
