"""Python ints the capture holds as int64 nodes (a draw of one, ``random.randint``, and Python
arithmetic on such draws only: :func:`capviz.trace.state.python_operands`): their bounds, and
the refusal of a result that may leave int64, where eager Python computes the exact integer
and the graph's int64 would wrap (review 10, finding 9). One wrap is exact: a result past int64
that its expression takes only through ``+``, ``-``, ``*`` into ``% 2**k`` (an LCG), which
int64 computes modulo 2**64 (:func:`restored`)."""

from __future__ import annotations

import ast
import linecache
import sys
from types import FrameType
from typing import Any

import numpy as np

from capviz.core.ir import Node
from capviz.core.source import format_source, user_frame
from capviz.trace import statements
from capviz.trace.tensor import Tensor

INT64 = (-2 ** 63, 2 ** 63 - 1)


def python_bounds(recorder: Any) -> dict[int, tuple[int, int]]:
    """The bounds of each Python int the capture holds as an int64 node (a draw's:
    ``random.randint(1, 10)``, and arithmetic on them), by node index."""
    return recorder.__dict__.setdefault("_python_bounds", {})


_BOUNDED = {
    "add": lambda a, b: (a[0] + b[0], a[1] + b[1]),
    "subtract": lambda a, b: (a[0] - b[1], a[1] - b[0]),
    "multiply": lambda a, b: (min(x * y for x in a for y in b), max(x * y for x in a for y in b)),
    "negative": lambda a: (-a[1], -a[0]),
    "positive": lambda a: a,
    "absolute": lambda a: (0 if a[0] <= 0 <= a[1] else min(abs(a[0]), abs(a[1])),
                           max(abs(a[0]), abs(a[1]))),
}


def within_int64(recorder: Any, op: Any, args: tuple) -> None:
    """Refuse Python int arithmetic on draws of Python ints whose result may leave int64, where
    eager Python computes the exact integer and the graph's int64 would wrap
    (``random.randint(1, 10) * 2**62``: review 10, finding 9, silent); note the result's bounds
    for the next op. One wrap is exact: a result past int64 that the expression it is in takes
    only through ``+``, ``-``, ``*`` into ``% 2**k`` or ``& (2**k - 1)`` (an LCG, ``(a * x + c)
    % 2**48``): int64 computes it modulo 2**64, and 2**k divides 2**64, so the remainder is
    Python's
    (:func:`restored`)."""
    recorder.__dict__.pop("_next_wrapped", None)  # (not left by an op that failed)
    wrapped = wrapped_ints(recorder)
    ints = [a for a in args if (type(a) is Tensor and a._data.dtype is not None and
                                np.dtype(a._data.dtype).kind in "iub") or type(a) in (int, bool)]
    #        (a bool is an int to Python: True + randint(...) is checked like 1 + ...: R11 #5)
    held = [wrapped[a._data.index] for a in args
            if type(a) is Tensor and a._data.index in wrapped]
    name = getattr(op, "name", "")
    if held:  # (a wrapped value: on to its % 2**k through + - * of ints only, else refused)
        if len(ints) == len(args) and name in ("add", "subtract", "multiply", "negative",
                                               "positive"):
            recorder.__dict__["_next_bounds"] = None
            recorder.__dict__["_next_wrapped"] = held[0]
            return
        modulus = _power_of_two(args[1]) if name == "remainder" and len(args) == 2 and \
            len(ints) == 2 and type(args[0]) is Tensor and \
            args[0]._data.index in wrapped else None
        if name == "bitwise_and" and len(args) == 2 and len(ints) == 2:  # (& (2**k - 1))
            mask = [a for a in args if type(a) is int]
            modulus = _power_of_two(mask[0] + 1) if len(mask) == 1 else None
        if modulus is None:
            raise refuse_wrap(recorder, *held[0])
        recorder.__dict__["_next_bounds"] = (0, modulus - 1)
        return
    if len(ints) != len(args) or not args:
        return  # (a float among them: Python's float arithmetic, float64's)
    known = python_bounds(recorder)
    bounds = [(int(a), int(a)) if type(a) in (int, bool) else
              (0, 1) if np.dtype(a._data.dtype).kind == "b" else
              known.get(a._data.index, INT64) for a in args]
    rule = _BOUNDED.get(name)
    if rule is not None and len(bounds) == (1 if name in ("negative", "positive", "absolute")
                                            else 2):
        low, high = rule(*bounds)
    elif name in ("floor_divide", "remainder") and len(bounds) == 2 and \
            bounds[1][0] == bounds[1][1] and bounds[1][0] > 0:  # (by a known positive number:
        m = bounds[1][0]  #                                       its exact bounds)
        (a_low, a_high) = bounds[0]
        if name == "floor_divide":
            low, high = a_low // m, a_high // m
        else:
            low, high = (a_low, a_high) if 0 <= a_low and a_high < m else (0, m - 1)
    elif name in ("floor_divide", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor",
                  "minimum", "maximum", "fmod") and len(bounds) == 2:
        low, high = min(b[0] for b in bounds), max(b[1] for b in bounds)
        low, high = min(low, -abs(high)), max(high, abs(low))  # (a quotient or remainder:
    elif name in ("power", "scalar_power", "left_shift") and len(bounds) == 2:  # (within the
        #                      operands' sizes; scalar_power: a 0-d one's **, as x.sum() ** 2)
        (a_low, a_high), (b_low, b_high) = bounds
        if name != "left_shift" and b_low < 0:
            return  # (a negative power of a Python int: Python's float)
        top = max(abs(a_low), abs(a_high))
        size = top ** b_high if name != "left_shift" and b_high <= 64 else \
            top << b_high if b_high <= 64 else INT64[1] + 1
        low, high = -size, size
    else:
        return  # (a float result, or an op whose bounds are not known: int64's for the next)
    if low < INT64[0] or high > INT64[1]:
        drawn = next(a._data for a in args if type(a) is Tensor)
        if name in ("add", "subtract", "multiply", "negative") and \
                restored(user_frame(sys._getframe(1))):
            recorder.__dict__["_next_bounds"] = None
            recorder.__dict__["_next_wrapped"] = (drawn, low, high)
            return
        raise refuse_wrap(recorder, drawn, low, high)
    recorder.__dict__["_next_bounds"] = (low, high)


def refuse_wrap(recorder: Any, drawn: Node, low: int, high: int) -> Exception:
    return recorder.refuse_here(f"Python int arithmetic on a draw at "
                                f"{format_source(drawn.source)}", (
        f"Python computes it as an exact integer (between {low} and {high} here), and the "
        "graph holds a Python int drawn in the call as an int64, which would wrap past "
        "2**63 - 1; keep it within int64, or reduce it in the same expression with % 2**k "
        "or & (2**k - 1) (k <= 62), which int64 computes exactly"))


def wrapped_ints(recorder: Any) -> dict[int, tuple[Node, int, int]]:
    """The Python-int nodes whose int64 wrapped past 2**63 - 1, on their way to a ``% 2**k``
    (:func:`restored`): each one's draw and exact bounds, for the refusal of any other use."""
    return recorder.__dict__.setdefault("_wrapped_ints", {})


def _power_of_two(value: Any) -> int | None:
    """``value`` where it is a Python int 2**k, 1 <= k <= 62, else ``None``."""
    if type(value) is int and 2 <= value <= 2 ** 62 and value & (value - 1) == 0:
        return value
    return None


_TREES: dict[str, tuple[list[str], ast.AST | None]] = {}


def restored(frame: FrameType | None) -> bool:
    """Whether the op ``frame`` runs (a ``BINARY_OP``) is, in its expression, an operand of
    ``+``, ``-``, ``*`` and unary ``-`` only, up to the left operand of ``% 2**k`` or ``&
    (2**k - 1)`` (k <= 62, written as a number, ``2 ** k`` or a name holding one): its int64
    result, wrapped modulo 2**64, is then taken by that remainder alone, which is Python's
    exact one (the LCG's ``(a * x + c) % 2**48``).
    Read from the source by the instruction's position; ``False`` where that is not found."""
    if frame is None:
        return False
    here = statements.instruction(frame)
    if here is None or here.opname not in ("BINARY_OP", "UNARY_NEGATIVE") or \
            here.positions is None or here.positions.lineno is None:
        return False
    filename = frame.f_code.co_filename
    lines = linecache.getlines(filename, frame.f_globals)
    kept = _TREES.get(filename)
    if kept is None or kept[0] is not lines:
        try:
            tree = ast.parse("".join(lines)) if lines else None
        except (SyntaxError, ValueError):
            tree = None
        if len(_TREES) > 64:
            _TREES.clear()
        kept = _TREES[filename] = (lines, tree)
    tree = kept[1]
    if tree is None:
        return False
    pos = here.positions
    want = (pos.lineno, pos.col_offset, pos.end_lineno, pos.end_col_offset)
    parents: dict[int, ast.AST] = {}
    found = None
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
        if isinstance(node, (ast.BinOp, ast.UnaryOp)) and (
                node.lineno, node.col_offset, node.end_lineno, node.end_col_offset) == want:
            found = node
    node = found
    if node is None:
        return False
    ring = (ast.Add, ast.Sub, ast.Mult)
    while True:
        parent = parents.get(id(node))
        if (isinstance(parent, ast.BinOp) and isinstance(parent.op, ring)) or (
                isinstance(parent, ast.UnaryOp) and isinstance(parent.op, (ast.USub, ast.UAdd))):
            node = parent
            continue
        if not isinstance(parent, ast.BinOp) or parent.left is not node:
            return False
        divisor = _literal(parent.right, frame)
        if isinstance(parent.op, ast.Mod):
            return _power_of_two(divisor) is not None
        return isinstance(parent.op, ast.BitAnd) and type(divisor) is int and \
            _power_of_two(divisor + 1) is not None


def _literal(node: ast.AST, frame: FrameType) -> Any:
    """The int ``node`` is: a literal (``2 ** 48``, ``281474976710656``, ``2 ** 48 - 1``), or
    a name the frame holds an int in (``M48``: a global the call reads, which its guard
    checks at every replay), else ``None``."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        held = frame.f_locals.get(node.id, frame.f_globals.get(node.id))
        return held if type(held) is int else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.Sub)):
        a, b = _literal(node.left, frame), _literal(node.right, frame)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Sub):
            return a - b
        return a ** b if 0 <= b <= 64 else None
    return None
