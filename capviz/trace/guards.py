"""Reads of values during a capture with examples: each returns the example's value and records
a ``guard`` node (see :mod:`capviz.core.guards` for what a guard holds and how a replay checks
it).

A read of a value computed from a random draw (``if random.random() < p``) is a ``data_read``
violation whatever the examples: each replay draws anew, so no guard can hold it. Without
examples (inputs given by shape and dtype), a read stays a ``data_read`` violation, and
its message says that an example array in place of the spec would have recorded a guard. A
value that leaves the tensor world whole (``np.asarray(t)``, ``t.numpy()``) is refused with or
without examples: what plain NumPy computes from it would be a constant baked from the example,
silently wrong for other inputs.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from capviz.core.guards import READS, SIZE, read_value
from capviz.core.ir import Node
from capviz.core.logged_reads import logging_fix, total_fix, updated_object
from capviz.core.source import format_source, numpy_caller, user_frame, user_source
from capviz.core.symbols import Symbol
from capviz.core.user_code import UserCode, user_code
from capviz.core.violations import (
    Failure,
    data_read_message,
    explain,
    failure_here,
    situation,
    unsupported_message,
)
from capviz.trace import fold, mutation
from capviz.trace.examples import NoExample
from capviz.trace.rebound_refusals import OWNER


def read(rec: Any, tensor: Any, call: str) -> np.ndarray:
    """``Recorder.read``: the example's value of ``tensor`` with a guard for a read of
    :data:`capviz.core.guards.READS`; otherwise a ``data_read`` violation."""
    rec.check_usable()
    node = mutation.current(rec, tensor)
    if node.kind == "constant":
        return rec.graph.constant_values[node.index].copy()
    known = fold.known_value(rec.graph, node, rec.known)
    if known is not None:  # made of constants and np.zeros(...)-like buffers only (issue 20)
        return np.array(known, copy=True)
    examples = rec.examples
    has_example = examples is not None
    owned = updated_object(user_frame(sys._getframe(1)), user_code(
        user_frame(sys._getframe(1))).text) if call in READS else None
    if owned is not None:  # (self.meter.update(loss.item()): review 9, finding 20)
        return _refuse_owned(rec, call, node, owned)
    frame = user_frame(sys._getframe(1))
    if has_example and call in READS and logging_fix(
            call, user_source(), user_code(frame).text, frame) is None and total_fix(
            call, user_source(), user_code(frame).text, _describe(node)) is None:  # (self.n +=
        #                                                                 int(t): ruling 38)
        try:  # (a value logged, losses.append(loss.item()): no guard, refused; review 8 #18)
            value = np.asarray(examples.value(node))
        except NoExample:  # an input given by its spec: refused as without examples
            has_example = False
        else:
            guard(rec, call, node, read_value(call, value), {})
            return value.copy()
    source = user_source()
    inside = numpy_caller(sys._getframe(2))
    drawn = _draw_under(node)
    if drawn is not None and _recordable(call, _describe(node), source, inside):
        drawn = None  # (table[idx] of a drawn idx: cv.constant(table)[idx] needs no value)
    if drawn is not None:  # a random draw (issue 20): each replay draws anew
        fix = ("select with np.where(<condition>, a, b)" if call == "bool()" else
               "keep it a tensor (NumPy arithmetic on it is recorded)")
        message = unsupported_message(call, source, (
            f"Python reads a value computed from a random draw ({drawn.args[0].name}."
            f"{drawn.params['method']}() at {format_source(drawn.source)}), which each replay "
            f"draws anew, so no guard can hold it; {fix}, or draw before the capture and pass "
            "the value in as an input"), user_frame(sys._getframe(1)))
    else:
        message = data_read_message(call, _describe(node), source, inside,
                                    examples=has_example)
    rec.violation("data_read", call, message, source, target=node)
    return np.zeros(node.shape, dtype=node.dtype)  # record mode: a placeholder value


def _refuse_owned(rec: Any, call: str, node: Node, owned: tuple[str, str]) -> np.ndarray:
    """Refuse a read given to a method of an object of Python values only (an AverageMeter's
    ``update``), with or without examples, with the fix that keeps the object outside."""
    owner, text = owned
    source = user_source()
    message = explain(Failure("unsupported_op", OWNER, owner, source, UserCode("other", text),
                              None, (
                                  f"the call gives it a Python number read from a tensor "
                                  f"({call}), which a replay can neither read again nor give "
                                  f"it; keep {owner} outside the captured function: return "
                                  "the value the call gives it (return out, loss), and after "
                                  f"each replay call {text} with the value the replay "
                                  "returns")))
    rec.violation("data_read", call, message, source, target=node)
    return np.zeros(node.shape, dtype=node.dtype)


RECORDABLE = frozenset((
    "index_trick", "ndarray_indexed_by_number", "ndarray_indexed", "ndarray_store",
    "numpy_copies", "sequence_to_array", "ufunc_method_of_list", "asarray_of_tensor",
    "array_of_tensor", "layout_conversion", "ndarray_dot"))
"""The data reads whose one fix records the operation without its value (an ndarray indexed
by a tensor: ``cv.constant(table)[idx]``): their message holds for a drawn value too."""


def _recordable(call: str, what: str, source: Any, inside: str | None) -> bool:
    failure = failure_here("data_read", call, what, source, inside,
                           frame=user_frame(sys._getframe(2)))
    return situation(failure).name in RECORDABLE


def _draw_under(node: Node) -> Node | None:
    """The first ``draw`` op (a draw from a live generator) ``node``'s value depends on."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if n.op == "draw" and n.kind == "op":
            return n
        for a in n.args:
            if isinstance(a, Node) and a.index not in seen:
                seen.add(a.index)
                stack.append(a)
    return None


def _describe(node: Node) -> str:
    what = node.op if node.kind == "op" else (node.name or node.kind)
    shape = ",".join(map(str, node.shape or ()))
    return f"%{node.index} ({what}, {node.dtype}[{shape}])"


def guard(rec: Any, call: str, node: Node, value: Any, params: dict) -> Node:
    """Append a guard node: ``call`` read ``node`` and gave ``value``."""
    return rec._append("guard", call, (node,), {**params, "value": value}, None, None,
                       user_source())


def resolve(rec: Any, symbol: Symbol) -> int:
    """A size symbol's number where code needs an int (``len(t)``, ``range(t.shape[0])``,
    a shape rule that cannot keep the symbol): its example length, checked by a guard (one
    per symbol)."""
    known = rec.resolved.get(symbol)
    if known is not None:
        return known
    rec.check_usable()
    length = example_length(rec, symbol)
    guard(rec, SIZE, rec.graph.nodes[symbol.origin], length, {"axis": symbol.axis})
    rec.resolved[symbol] = length
    return length


def example_length(rec: Any, symbol: Symbol) -> int:
    """The symbol's length on the capture's examples (computed once)."""
    if symbol.example is None:
        value = rec.examples.value(rec.graph.nodes[symbol.origin])
        symbol.example = int(np.shape(value)[symbol.axis])
    return symbol.example
