"""The statement a user frame runs, read from its source: the instruction at ``f_lasti``, the
text it was compiled from (``co_positions``), and the value of a plain expression of it (names,
attributes, subscripts with plain keys) read again from the frame's namespaces, with no code
compiled or evaluated. Used where NumPy gives capviz no other way to know what the user wrote:
``a[idx] = t`` into an ndarray (:mod:`capviz.trace.state`), and whether a hooked NumPy function
was called by the user's line itself or by C code it called (``rng.rand(3)`` calls
``np.empty`` from Cython: :mod:`capviz.randomness.creation`)."""

from __future__ import annotations

import ast
import bisect
import dis
import linecache
import operator
from types import CodeType, FrameType
from typing import Any

_INSTRUCTIONS: dict[CodeType, tuple[list[int], list[dis.Instruction]]] = {}
_SAFE = (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Slice, ast.Tuple, ast.Load,
         ast.UnaryOp, ast.BinOp, ast.USub, ast.UAdd, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)


def instruction(frame: FrameType) -> dis.Instruction | None:
    """The instruction ``frame`` is running (cached per code object). ``f_lasti`` may point at
    one of the instruction's inline cache entries (a call in progress on CPython 3.11): the
    instruction is the last one at or before it."""
    code = frame.f_code
    table = _INSTRUCTIONS.get(code)
    if table is None:
        if len(_INSTRUCTIONS) > 1024:
            _INSTRUCTIONS.clear()
        listed = list(dis.get_instructions(code))
        table = _INSTRUCTIONS[code] = ([i.offset for i in listed], listed)
    offsets, listed = table
    k = bisect.bisect_right(offsets, frame.f_lasti) - 1
    return listed[k] if k >= 0 else None


def text_at(frame: FrameType, here: dis.Instruction) -> str | None:
    """The source text instruction ``here`` of ``frame`` was compiled from, or ``None``."""
    pos = here.positions
    if pos is None or pos.lineno is None or pos.col_offset is None:
        return None
    lines = linecache.getlines(frame.f_code.co_filename, frame.f_globals)
    if not lines or pos.end_lineno > len(lines):
        return None
    chunk = lines[pos.lineno - 1:pos.end_lineno]
    if len(chunk) == 1:
        return chunk[0].encode()[pos.col_offset:pos.end_col_offset].decode()
    chunk[-1] = chunk[-1].encode()[:pos.end_col_offset].decode()
    chunk[0] = chunk[0].encode()[pos.col_offset:].decode()
    return "".join(chunk)




def plain(tree: ast.AST) -> bool:
    """Whether every part of ``tree`` is one :func:`value` reads (no call, no comprehension)."""
    return all(isinstance(n, _SAFE) for n in ast.walk(tree))


_AUGMENTS: dict[tuple[int, int], tuple[CodeType, bool]] = {}  # (id(code), offset) -> (code,
#   the answer): keyed by id, which a code object's hash (of all its constants) costs more
#   than; the code kept in the value, so the id is its own


def augments_local(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs an augmented assignment to a local variable (``mem += d * d``:
    an in-place ``BINARY_OP`` whose result is stored by ``STORE_FAST``; cached per
    instruction)."""
    if frame is None:
        return False
    code = frame.f_code
    key = (id(code), frame.f_lasti)
    got = _AUGMENTS.get(key)
    if got is not None and got[0] is code:
        return got[1]
    found = False
    here = instruction(frame)
    if here is not None and here.opname == "BINARY_OP" and here.argrepr.endswith("="):
        offsets, listed = _INSTRUCTIONS[code]
        k = bisect.bisect_left(offsets, here.offset) + 1
        found = k < len(listed) and listed[k].opname == "STORE_FAST"
    if len(_AUGMENTS) > 4096:
        _AUGMENTS.clear()
    _AUGMENTS[key] = (code, found)
    return found


_CALLEES: dict[tuple[CodeType, int], ast.AST | None] = {}


def callee(frame: FrameType) -> ast.AST | None:
    """The function expression of the call ``frame`` is making (``np.zeros`` of
    ``np.zeros((n, h))``) when it is plain, else ``None`` (cached per instruction)."""
    key = (frame.f_code, frame.f_lasti)
    if key in _CALLEES:
        return _CALLEES[key]
    found = None
    here = instruction(frame)
    if here is not None and here.opname.startswith("CALL"):
        text = text_at(frame, here)
        try:
            tree = ast.parse(text.strip(), mode="eval").body if text else None
        except SyntaxError:
            tree = None
        if isinstance(tree, ast.Call) and plain(tree.func):
            found = tree.func
        elif text is None:  # code compiled from a string: the instruction that loaded it
            found = _loaded_callee(frame, here)
    if len(_CALLEES) > 4096:
        _CALLEES.clear()
    _CALLEES[key] = found
    return found


_LOADS = {"LOAD_GLOBAL": ast.Name, "LOAD_NAME": ast.Name, "LOAD_FAST": ast.Name,
          "LOAD_DEREF": ast.Name, "LOAD_ATTR": ast.Attribute, "LOAD_METHOD": ast.Attribute}


def _loaded_callee(frame: FrameType, call: dis.Instruction) -> ast.AST | None:
    """Without the source: the callee as the last load starting where the call starts (its
    positions), a name read again, or for an attribute its name alone (``_.zeros``)."""
    pos = call.positions
    if pos is None or pos.lineno is None:
        return None
    offsets, listed = _INSTRUCTIONS[frame.f_code]
    best = None
    for ins in listed[:offsets.index(call.offset)]:
        p = ins.positions
        if ins.opname in _LOADS and p is not None and (p.lineno, p.col_offset) == (
                pos.lineno, pos.col_offset) and (best is None or (p.end_lineno,
                p.end_col_offset) >= (best.positions.end_lineno, best.positions.end_col_offset)):
            best = ins
    if best is None:
        return None
    name = str(best.argval)
    if _LOADS[best.opname] is ast.Name:
        return ast.Name(id=name, ctx=ast.Load())
    return ast.Attribute(value=ast.Name(id="_", ctx=ast.Load()), attr=name, ctx=ast.Load())


def calls(frame: FrameType | None, function: Any) -> bool:
    """Whether ``frame``'s current call is of ``function`` itself (its callee expression
    reads ``function`` again), not of something that calls it from C code."""
    if frame is None:
        return False
    func = callee(frame)
    if func is None:
        return False
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            and func.value.id == "_":  # known by its attribute name only
        return func.attr == getattr(function, "__name__", None)
    try:
        return value(func, (frame.f_locals, frame.f_globals, frame.f_builtins)) is function
    except Exception:  # a name unbound meanwhile: not a direct call
        return False
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def value(node: ast.AST, spaces: tuple) -> Any:
    """The value of a target expression made of :data:`_SAFE` nodes, read from the frame's
    namespaces (no code is compiled or evaluated)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        for space in spaces:
            if node.id in space:
                return space[node.id]
        raise NameError(node.id)
    if isinstance(node, ast.Attribute):
        return getattr(value(node.value, spaces), node.attr)
    if isinstance(node, ast.Subscript):
        return value(node.value, spaces)[value(node.slice, spaces)]
    if isinstance(node, ast.Tuple):
        return tuple(value(e, spaces) for e in node.elts)
    if isinstance(node, ast.Slice):
        return slice(*(None if part is None else value(part, spaces)
                       for part in (node.lower, node.upper, node.step)))
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](value(node.operand, spaces))
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](value(node.left, spaces), value(node.right, spaces))
    raise TypeError(f"not a plain target: {type(node).__name__}")




_STACK_BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv}


def stored_target(frame: FrameType, here: dis.Instruction) -> tuple[Any, Any] | None:
    """``(container, key)`` of the ``STORE_SUBSCR`` ``here`` read again from the bytecode
    (for code compiled from a string, without source): the instructions inside the target's
    positions run on a stack of names, attributes, plain subscripts and slices; ``None`` when
    another instruction is met."""
    pos = here.positions
    if pos is None or pos.lineno is None or pos.lineno != pos.end_lineno:
        return None
    offsets, listed = _INSTRUCTIONS[frame.f_code]
    spaces = (frame.f_locals, frame.f_globals, frame.f_builtins)
    stack: list[Any] = []
    try:
        for ins in listed[:offsets.index(here.offset)]:
            p = ins.positions
            if p is None or p.lineno != pos.lineno or p.col_offset is None \
                    or p.col_offset < pos.col_offset or p.end_col_offset > pos.end_col_offset:
                continue
            name = ins.opname
            if name in ("LOAD_FAST", "LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF"):
                stack.append(value(ast.Name(id=str(ins.argval), ctx=ast.Load()), spaces))
            elif name == "LOAD_CONST":
                stack.append(ins.argval)
            elif name in ("LOAD_ATTR", "LOAD_METHOD"):
                stack.append(getattr(stack.pop(), str(ins.argval)))
            elif name == "BINARY_SUBSCR":
                key = stack.pop()
                stack.append(stack.pop()[key])
            elif name == "BUILD_SLICE":
                parts = [stack.pop() for _ in range(ins.arg)][::-1]
                stack.append(slice(*parts))
            elif name == "BUILD_TUPLE":
                items = [stack.pop() for _ in range(ins.arg)][::-1] if ins.arg else []
                stack.append(tuple(items))
            elif name == "BINARY_OP" and ins.argrepr in _STACK_BINARY:
                right = stack.pop()
                stack.append(_STACK_BINARY[ins.argrepr](stack.pop(), right))
            elif name == "UNARY_NEGATIVE":
                stack.append(-stack.pop())
            elif name not in ("RESUME", "NOP", "CACHE", "PUSH_NULL"):
                return None
    except Exception:  # not a target that reads again
        return None
    return (stack[-2], stack[-1]) if len(stack) == 2 else None
