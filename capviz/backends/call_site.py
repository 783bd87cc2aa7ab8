"""Which Python call reached a NumPy hook: ``b ** t`` or ``np.power(b, t)``.

A NumPy scalar's ``**`` (``np.float32(1.1) ** t``, ``pow(np.float32(1.1), t)``) does not defer
to a tensor's ``__rpow__``: NumPy hands the operands to ``np.power``, which calls the tensor's
``__array_ufunc__`` exactly as ``np.power(np.float32(1.1), t)`` would. Eagerly the two differ
when ``t`` stands for a NumPy scalar (``x.sum()``): the operator is NumPy's scalar math, the
function its array loops, and they round differently. The calling frame tells them apart: the
instruction it is running is the ``**`` operator, or a call whose source names ``pow`` or
``power``.
"""

from __future__ import annotations

import ast
import dis
import linecache
from types import FrameType

_POWER_OPERATORS = frozenset({"**", "**="})
_OPERATOR_NAMES = frozenset({"pow", "__pow__", "__rpow__", "__ipow__"})


def power_call(frame: FrameType | None) -> str | None:
    """``"operator"`` when ``frame`` is running ``**``, ``**=`` or a call of ``pow``
    (``operator.pow``, ``b.__pow__``), ``"ufunc"`` for a call of ``np.power``, ``None`` when
    its code cannot tell (a call through another name, no source)."""
    if frame is None:
        return None
    instruction = _current_instruction(frame)
    if instruction is None:
        return None
    name = instruction.opname
    if name in ("BINARY_POWER", "INPLACE_POWER"):  # Python 3.10
        return "operator"
    if name == "BINARY_OP":
        return "operator" if instruction.argrepr in _POWER_OPERATORS else None
    if name.startswith(("CALL", "PRECALL")):  # 3.11 runs a specialized call in PRECALL
        return _called_name_kind(frame, instruction)
    return None


def _current_instruction(frame: FrameType) -> dis.Instruction | None:
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset == frame.f_lasti:
            return instruction
    return None


def _called_name_kind(frame: FrameType, instruction: dis.Instruction) -> str | None:
    """The kind of the function a call instruction calls, read from the call's source: the
    call's own span (Python 3.11+), else the line, when every call on it names one kind."""
    lines = linecache.getlines(frame.f_code.co_filename, frame.f_globals)
    positions = getattr(instruction, "positions", None)  # Python 3.11+
    if positions is None or None in (positions.lineno, positions.end_lineno,
                                     positions.col_offset, positions.end_col_offset):
        if not 0 < frame.f_lineno <= len(lines):
            return None
        return line_call_kind(lines[frame.f_lineno - 1])
    text = lines[positions.lineno - 1:positions.end_lineno]
    if not text:
        return None
    encoded = [line.encode() for line in text]  # column offsets count UTF-8 bytes
    encoded[-1] = encoded[-1][:positions.end_col_offset]
    encoded[0] = encoded[0][positions.col_offset:]
    try:
        call = ast.parse(b"".join(encoded).decode(), mode="eval").body
    except (SyntaxError, UnicodeDecodeError):
        return None
    return _kind(call.func) if isinstance(call, ast.Call) else None


def line_call_kind(line: str) -> str | None:
    """The one kind of power call on a line of source (``None`` when it holds both kinds,
    neither, or does not parse alone)."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return None
    kinds = {_kind(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    kinds.discard(None)
    return kinds.pop() if len(kinds) == 1 else None


def _kind(func: ast.expr) -> str | None:
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if called in _OPERATOR_NAMES:
        return "operator"
    if called == "power":
        return "ufunc"
    return None


def augmented_subscript(frame: FrameType | None) -> bool:
    """True when ``frame`` is reading ``x[key]`` for an augmented assignment ``x[key] op= v``:
    Python duplicates ``x`` and ``key`` (``COPY 2`` twice; ``DUP_TOP_TWO`` on Python 3.10)
    right before the read, to store the result back with them.

    The running instruction is the last one at or before ``f_lasti``: once specialized
    (``BINARY_SUBSCR_GETITEM``) the call is made from the instruction's last inline cache entry.
    """
    if frame is None:
        return False
    previous: list[str] = []
    current = None
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset > frame.f_lasti:
            break
        if current is not None:
            previous.append(f"{current.opname} {current.arg}")
        current = instruction
    if current is None:
        return False
    subscript = current.opname == "BINARY_SUBSCR" or (
        current.opname == "BINARY_OP" and current.argrepr == "[]")
    return subscript and (previous[-2:] == ["COPY 2", "COPY 2"]
                          or previous[-1:] == ["DUP_TOP_TWO None"])
