"""Outside arrays NumPy wrote while ``cv.capture(fn)`` ran, that no state of the graph explains.

NumPy's own operators on an outside ndarray that meet no tensor (``self.n += 1.0``,
``np.add(self.calls, 1, out=self.calls)``, ``self.buf[0] = 2.0``) write its memory and reach
no hook: the capture runs the write once, the graph has no trace of it, and no replay makes it
(review 2, finding 3 and d10). A state the captured code writes with a tensor is the graph's
and is put back when the scope exits (:mod:`capviz.trace.state`); so after the function form's
captures every outside array holds the value it held before the call, unless NumPy wrote it
unseen: an array no state names, or a state NumPy wrote before the capture's first write to it
(``self.m *= 0.9; self.m += t``: the graph would start from NumPy's value).

So before the first capture :func:`note` copies the ndarrays the function can reach by name
(where :func:`capviz.trace.rebound.note` looks: a bound method's ``self`` attributes, the
globals its code names, its closure cells, and the lists, dicts and plain objects inside them,
three levels down, 256 items each), and after each capture :meth:`Snapshot.put_back` compares
them with their copies, puts back every one that differs, and says which:
:func:`refuse` refuses the first on the graph, naming it, at the line of ``fn`` that writes
it (else the ``cv.capture`` line), with the write through a tensor as the fix.

The bound: an array is copied when it is a plain writeable ndarray of numbers or booleans of
less than :data:`~capviz.core.references.REFERENCE_BYTES` (1 MiB, where capviz starts keeping a
constant by reference), and until the copies reach :data:`TOTAL_BYTES`. Counters, step sizes,
statistics and small buffers are covered; a larger array (a weight), one past the budget, a
tuple's item, and an array only a called function names are not looked at: the second capture
still refuses one of them that a graph node read (:mod:`capviz.trace.recapture`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.ir import Graph
from capviz.core.references import REFERENCE_BYTES
from capviz.core.source import display_file
from capviz.core.violations import CaptureViolation
from capviz.trace import rebound, recapture
from capviz.trace.recapture import line_code, shown
from capviz.trace.state import root_of

TOTAL_BYTES = 16 << 20
"""At most this many bytes of outside arrays are copied per capture (the arrays met first)."""

_KINDS = "biufc"

OUTSIDE = "an outside array NumPy wrote unseen"
"""The ``call`` of the refusal (the situation ``written_outside``)."""


class Written:
    """An outside array NumPy wrote: where the function holds it, what it held, what NumPy
    made of it (the array itself holds its old value again)."""

    __slots__ = ("array", "before", "label", "made")

    def __init__(self, label: str, array: np.ndarray, before: np.ndarray,
                 made: np.ndarray) -> None:
        self.label, self.array, self.before, self.made = label, array, before, made


class Snapshot:
    """The small outside arrays a function can reach by name, with copies of their values."""

    __slots__ = ("noted",)

    def __init__(self, noted: list[tuple[str, np.ndarray, bytes]]) -> None:
        self.noted = noted

    def put_back(self) -> list[Written]:
        """Every noted array whose bits differ from its copy, each given its copy back."""
        written = []
        for label, array, saved in self.noted:
            if array.tobytes() == saved:
                continue
            made = array.copy()
            before = np.frombuffer(saved, array.dtype).reshape(array.shape)
            array[...] = before
            written.append(Written(label, array, before, made))
        return written


def note(places: list[rebound.Place]) -> Snapshot:
    """The ndarrays among ``places`` (:func:`capviz.trace.rebound.note` of the function: what
    it can reach by name, see the module docstring), copied as bytes. (A read-only array is
    copied too: testing its flag costs more than its copy.)"""
    noted: list[tuple[str, np.ndarray, bytes]] = []
    seen: set[int] = set()
    total = 0
    ndarray = np.ndarray
    for place in places:
        value = place.value
        if type(value) is not ndarray or id(value) in seen:
            continue
        seen.add(id(value))
        size = value.nbytes
        if size >= REFERENCE_BYTES or total + size > TOTAL_BYTES \
                or value.dtype.kind not in _KINDS:
            continue
        total += size
        noted.append((place.label, value, value.tobytes()))
    return Snapshot(noted)


def refuse(graph: Graph, written: list[Written], fn: Callable, caller: Any
           ) -> CaptureViolation:
    """Refuse the first of ``written`` on ``graph`` (recorded, the graph no longer complete),
    at the line of ``fn`` that writes it, else at ``caller`` (the ``cv.capture`` line)."""
    first = written[0]
    label = first.label
    source, text = _writing_line(fn, label)
    if source is None:
        source = caller
    state = _state_node(graph, first.array)
    if state is not None:
        happened = (f"NumPy wrote it before the capture's first write to it, so the graph "
                    f"would start from the value NumPy made ({shown(first.made)}) where a call "
                    f"starts from {shown(first.before)}")
    else:
        happened = (f"it held {shown(first.before)} when the call started and NumPy made it "
                    f"{shown(first.made)}")
    others = [w.label for w in written[1:]]
    also = f"; NumPy also wrote {', '.join(others)}" if others else ""
    reason = (f"{happened}{also}; the capture put it back; {_fix(label, text, first.array)}")
    node = state if state is not None else graph.nodes[-1]
    return recapture.refuse(graph, node, OUTSIDE, label, reason, array=label, source=source)


def _state_node(graph: Graph, array: np.ndarray) -> Any:
    """The state node of ``array``'s memory, if the graph writes it."""
    root = root_of(array)
    for index, ref in graph.state_targets.items():
        node = graph.nodes[index]
        if "of" not in node.params and callable(ref) and ref() is root:
            return node
    return None


def _fix(label: str, text: str, array: np.ndarray) -> str:
    """The write through a tensor: the user's line rewritten where it is ``label <op>= value``
    (``self.n += cv.constant(np.float64(1.0))``), else the form of it."""
    kind = array.dtype.name
    match = re.match(rf"^{re.escape(label)}\s*(?P<op>\*\*|//|>>|<<|[-+*/%@&|^])=\s*(?P<v>.+)$",
                     text)
    if match is not None and not match["v"].startswith("cv.constant("):
        write = f"{label} {match['op']}= cv.constant(np.{kind}({match['v']}))"
    else:
        write = f"{label} += cv.constant(np.{kind}(1)) for {label} += 1"
    return (f"write it with a tensor, which the capture records as a state: {write}, or pass "
            "it as an input and return its new value")


def _writing_line(fn: Callable, label: str) -> tuple[Any, str]:
    """``((file, line, function), code)`` of the first line of ``fn`` that writes ``label``
    (``label op= ...``, ``label[...] = ...``, ``out=label``), or ``(None, "")``."""
    function = rebound._function(fn)[1]
    code = getattr(function, "__code__", None)
    if code is None:
        return None, ""
    try:
        lines, start = inspect.getsourcelines(function)
    except (OSError, TypeError):
        return None, ""
    name = re.escape(label)
    target = re.compile(rf"^{name}\s*(?:\[.*\]\s*)?(?:\*\*|//|>>|<<|[-+*/%@&|^])?=(?!=)"
                        rf"|\bout\s*=\s*\(?{name}\b(?![.\[])")
    for offset, line in enumerate(lines):
        text = line_code(line)
        if target.search(text):
            return (display_file(code.co_filename), start + offset, code.co_name), text
    return None, ""
