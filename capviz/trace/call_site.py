"""Which Python call reached a NumPy hook: ``b ** t`` or ``np.power(b, t)``, ``b * t`` or
``np.multiply(b, t)``.

A NumPy scalar's ``**`` (``np.float32(1.1) ** t``, ``pow(np.float32(1.1), t)``) does not defer
to a tensor's ``__rpow__``: NumPy hands the operands to ``np.power``, which calls the tensor's
``__array_ufunc__`` exactly as ``np.power(np.float32(1.1), t)`` would. Eagerly the two differ
when ``t`` stands for a NumPy scalar (``x.sum()``): the operator is NumPy's scalar math, the
function its array loops, and they round differently. The calling frame tells them apart: the
instruction it is running is the ``**`` operator, or a call whose source names ``pow`` or
``power``. A complex NumPy scalar's ``*`` hands on to ``np.multiply`` the same way, and its scalar
math differs from the loops too.
"""

from __future__ import annotations

import ast
import dis
import linecache
from types import FrameType
from typing import NamedTuple


class Operator(NamedTuple):
    """How one arithmetic operator shows in a frame's code."""

    opnames: frozenset[str]  # its instructions on Python 3.10
    symbols: frozenset[str]  # BINARY_OP's argrepr for it (Python 3.11+)
    names: frozenset[str]  # functions that run the operator (operator.pow, __pow__...)
    ufunc: str  # the NumPy function that runs the array loops


POWER = Operator(frozenset({"BINARY_POWER", "INPLACE_POWER"}), frozenset({"**", "**="}),
                 frozenset({"pow", "ipow", "__pow__", "__rpow__", "__ipow__"}), "power")
MULTIPLY = Operator(frozenset({"BINARY_MULTIPLY", "INPLACE_MULTIPLY"}), frozenset({"*", "*="}),
                    frozenset({"mul", "imul", "__mul__", "__rmul__", "__imul__"}), "multiply")


def power_call(frame: FrameType | None, operator: Operator = POWER) -> str | None:
    """``"operator"`` when ``frame`` is running ``**``, ``**=`` or a call of ``pow``
    (``operator.pow``, ``b.__pow__``), ``"ufunc"`` for a call of ``np.power``, ``None`` when
    its code cannot tell (a call through another name, no source); the same for ``*`` and
    ``np.multiply`` with ``operator=MULTIPLY``."""
    if frame is None:
        return None
    instruction = _current_instruction(frame)
    if instruction is None:
        return None
    name = instruction.opname
    if name in operator.opnames:  # Python 3.10
        return "operator"
    if name == "BINARY_OP":
        return "operator" if instruction.argrepr in operator.symbols else None
    if name.startswith(("CALL", "PRECALL")):  # 3.11 runs a specialized call in PRECALL
        return _called_name_kind(frame, instruction, operator)
    return None


def names_reflected(frame: FrameType | None, operator: Operator = POWER) -> bool:
    """Whether ``frame``'s code names the operator's reflected dunder (``__rpow__``,
    ``__rmul__``): the only way a tensor first reaches ``np.power``/``np.multiply`` through a
    NumPy scalar's scalar math is ``s.__rpow__(t)``, which names it (``getattr(np, name)(t,
    s)`` does not, and is the ufunc)."""
    if frame is None:
        return True
    return any(name.startswith("__r") and name in frame.f_code.co_names
               for name in operator.names)


def _current_instruction(frame: FrameType) -> dis.Instruction | None:
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset == frame.f_lasti:
            return instruction
    return None


def _called_name_kind(frame: FrameType, instruction: dis.Instruction,
                      operator: Operator) -> str | None:
    """The kind of the function a call instruction calls, read from the call's source: the
    call's own span (Python 3.11+), else the line, when every call on it names one kind."""
    lines = linecache.getlines(frame.f_code.co_filename, frame.f_globals)
    positions = getattr(instruction, "positions", None)  # Python 3.11+
    if positions is None or None in (positions.lineno, positions.end_lineno,
                                     positions.col_offset, positions.end_col_offset):
        if not 0 < frame.f_lineno <= len(lines):
            return None
        return line_call_kind(lines[frame.f_lineno - 1], operator)
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
    return _kind(call.func, operator) if isinstance(call, ast.Call) else None


def line_call_kind(line: str, operator: Operator = POWER) -> str | None:
    """The one kind of power (or ``operator``) call on a line of source (``None`` when it
    holds both kinds, neither, or does not parse alone)."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return None
    kinds = {_kind(node.func, operator) for node in ast.walk(tree)
             if isinstance(node, ast.Call)}
    kinds.discard(None)
    return kinds.pop() if len(kinds) == 1 else None


def _kind(func: ast.expr, operator: Operator) -> str | None:
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if called in operator.names:
        return "operator"
    if called == operator.ufunc:
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
