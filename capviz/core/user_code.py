"""What the user's line is doing when capviz fails: the expression Python is running there.

:func:`user_code` reads the frame's current instruction (its source span, Python 3.11+, else the
line) and says what kind of thing it is and its parts, so that a message can quote the user's own
code (``params["wte"][tokens]``) and pick the fix for that situation
(:mod:`capviz.core.violations`):

========== =========================== ==================================================
action     the instruction             parts (source text)
========== =========================== ==================================================
``index``  ``a[k]``                    ``array``, ``key``
``store``  ``a[k] = v``                ``array``, ``key``, ``value``
``call``   ``f(x, ...)``               ``callee``, ``args`` (tuple), ``first`` (first arg),
                                       ``function`` (its ``__name__``: ``asarray`` for
                                       ``convert = np.asarray; convert(t)``), ``sequence``
``branch`` ``if c:`` / ``while c:``    ``test``
``binary`` ``a * b``...                ``left``, ``right``, ``symbol``
``other``  anything else               none
========== =========================== ==================================================
"""

from __future__ import annotations

import ast
import dis
import linecache
import types
from dataclasses import dataclass, field
from types import FrameType

MAX_TEXT = 72  # longer code is shortened with "..." in a message


@dataclass(frozen=True)
class UserCode:
    """The expression the user's frame is running (see the module docstring)."""

    action: str = "other"
    text: str = ""
    parts: dict = field(default_factory=dict)


def shorten(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def user_code(frame: FrameType | None) -> UserCode:
    """What ``frame`` (a user frame) is running, or an empty :class:`UserCode`."""
    if frame is None:
        return UserCode()
    try:
        instruction = _instruction(frame)
        lines = linecache.getlines(frame.f_code.co_filename, frame.f_globals)
    except Exception:  # no code to read (a frame of exec'd text without lines)
        return UserCode()
    if instruction is None or not lines:
        return UserCode()
    name = instruction.opname
    span = _span(lines, instruction, frame.f_lineno)
    if name.startswith("BINARY_SUBSCR"):
        return _sequences(_subscript("index", span), frame)
    if name.startswith("STORE_SUBSCR"):
        return _store(lines, frame.f_lineno, span)
    if name.startswith(("CALL", "PRECALL")):
        return _call(span, frame)
    if name.startswith(("POP_JUMP", "JUMP_IF")):
        return _branch(span)
    if name.startswith("BINARY_OP"):
        return _binary(span, instruction.argrepr)
    return UserCode("other", shorten(span))


def _instruction(frame: FrameType) -> dis.Instruction | None:
    """The instruction running at ``frame``: the last one at or before ``f_lasti`` (a call
    made from an instruction's inline cache points into the cache)."""
    found = None
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset > frame.f_lasti:
            break
        found = instruction
    return found


def _span(lines: list[str], instruction: dis.Instruction, line: int) -> str:
    """The source text of ``instruction`` (its positions), else its whole line."""
    pos = getattr(instruction, "positions", None)
    if pos is None or None in (pos.lineno, pos.end_lineno, pos.col_offset, pos.end_col_offset):
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""
    text = [s.encode() for s in lines[pos.lineno - 1:pos.end_lineno]]  # columns count bytes
    if not text:
        return ""
    if len(text) == 1:
        return text[0][pos.col_offset:pos.end_col_offset].decode(errors="replace")
    text[-1] = text[-1][:pos.end_col_offset]
    text[0] = text[0][pos.col_offset:]
    return b"".join(text).decode(errors="replace")


def _parse(text: str) -> ast.AST | None:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None


def _segment(text: str, node: ast.AST) -> str:
    return shorten(ast.get_source_segment(text.strip(), node) or ast.unparse(node))


def _sequences(code: UserCode, frame: FrameType) -> UserCode:
    """``code`` with ``parts["sequences"]``: the names among the items of its index that hold a
    list or a tuple in ``frame`` (``np.r_[x, LST]``: NumPy makes an array of ``LST``)."""
    key = code.parts.get("key")
    if not key:
        return code
    try:
        index = ast.parse(f"_[{key}]", mode="eval").body.slice  # type: ignore[attr-defined]
    except (SyntaxError, AttributeError):
        return code
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    names = [i.id for i in items if isinstance(i, ast.Name)]
    held = [n for n in names
            if isinstance(frame.f_locals.get(n, frame.f_globals.get(n)), (list, tuple))]
    if held:
        code.parts["sequences"] = ",".join(held)
    return code


def _subscript(action: str, span: str) -> UserCode:
    node = _parse(span)
    if not isinstance(node, ast.Subscript):
        return UserCode(action, shorten(span))
    return UserCode(action, shorten(span), {"array": _segment(span, node.value),
                                            "key": _segment(span, node.slice)})


def _store(lines: list[str], line: int, span: str) -> UserCode:
    """``a[k] = v`` (the statement on the line) or ``a[k] op= v``."""
    statement = lines[line - 1].strip() if 0 < line <= len(lines) else span
    try:
        tree = ast.parse(statement).body
    except SyntaxError:
        return _subscript("store", span)
    node = tree[0] if len(tree) == 1 else None
    target = None
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
    elif isinstance(node, ast.AugAssign):
        target = node.target
    if not isinstance(target, ast.Subscript):
        return _subscript("store", span)
    return UserCode("store", shorten(statement), {
        "array": _segment(statement, target.value), "key": _segment(statement, target.slice),
        "value": _segment(statement, node.value)})


def _call(span: str, frame: FrameType) -> UserCode:
    node = _parse(span)
    if not isinstance(node, ast.Call):
        return UserCode("call", shorten(span))
    args = tuple(_segment(span, a) for a in node.args)
    callee = _segment(span, node.func)
    parts = {"callee": callee, "args": args, "first": args[0] if args else "",
             "function": _function_name(node.func, frame) or callee.rpartition(".")[2]}
    first = node.args[0] if node.args else None
    parts["sequence"] = isinstance(first, (ast.List, ast.Tuple))  # np.array([t1, t2])
    return UserCode("call", shorten(span), parts)


def _branch(span: str) -> UserCode:
    head = span.strip().splitlines()[0] if span.strip() else ""
    for keyword in ("if ", "elif ", "while ", "assert "):
        if head.startswith(keyword):
            test = head[len(keyword):].rstrip().rstrip(":").split(",")[0]
            return UserCode("branch", shorten(head.rstrip(":")), {"test": shorten(test)})
    return UserCode("branch", shorten(head), {"test": shorten(head)})


def _binary(span: str, symbol: str) -> UserCode:
    node = _parse(span)
    if not isinstance(node, ast.BinOp):
        return UserCode("binary", shorten(span), {"symbol": symbol})
    return UserCode("binary", shorten(span), {"left": _segment(span, node.left),
                                              "right": _segment(span, node.right),
                                              "symbol": symbol})


def _function_name(func: ast.expr, frame: FrameType) -> str | None:
    """The ``__name__`` of the function a call names, found without running user code: a
    variable of the frame (or a builtin), then attributes of modules only (``np.linalg.norm``);
    ``None`` when the name leads elsewhere (``self.fn``, ``obj.method``)."""
    chain: list[str] = []
    while isinstance(func, ast.Attribute):
        chain.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    missing = object()
    obj = frame.f_locals.get(func.id, missing)
    if obj is missing:
        obj = frame.f_globals.get(func.id, missing)
    if obj is missing:
        obj = frame.f_builtins.get(func.id, missing)
    for attr in reversed(chain):
        if not isinstance(obj, types.ModuleType):
            return None
        obj = getattr(obj, attr, missing)
    name = getattr(obj, "__name__", None) if obj is not missing else None
    return name if isinstance(name, str) else None
