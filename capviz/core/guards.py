"""Guards: the values a capture read, and the check every replay makes of them.

A capture given example values answers ``bool(t)``, ``int(t)``, ``float(t)``, ``t.item()``,
``t.tolist()``, ``operator.index(t)``, ``round(t)`` and ``len()`` of a data-dependent size with
the example's value, and records a ``guard`` node: the read (its ``op``, the call as the user
wrote it), the tensor it read (its one operand), the value it returned (``params["value"]``) and
the user's line. The code after the read ran with that value, so the graph is the program for
inputs that give the same value; a replay computes the read again and raises
:class:`~capviz.core.errors.GuardError` when it differs.

The reads are a table (:data:`READS`): the call's text, the conversion of the tensor's value
(a host array) to what Python received. The same function converts at capture and at replay.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.errors import GuardError
from capviz.core.source import format_source

SIZE = "len()"
"""The read of a data-dependent length (``len(t)``, ``t.shape[0]`` used as an int): its guard
has ``params["axis"]`` and reads the shape of its operand, not the values."""


def _index(value: np.ndarray) -> int:
    return operator.index(value[()])


def _round(value: np.ndarray) -> Any:
    return round(value[()])


def _is_integer(value: np.ndarray) -> bool:
    return bool(value[()].is_integer())


READS: dict[str, Callable[[Any], Any]] = {
    "bool()": bool,
    "float()": float,
    "int()": int,
    "complex()": complex,
    ".item()": lambda value: value.item(),
    ".tolist()": lambda value: value.tolist(),
    "operator.index()": _index,
    "round()": _round,
    ".is_integer()": _is_integer,
}
"""A read recorded as a guard (its call's text) -> the conversion of the host value."""


def read_value(call: str, value: Any, params: dict | None = None) -> Any:
    """What the read ``call`` returns for host array ``value`` (for :data:`SIZE`, the length
    of axis ``params["axis"]``)."""
    if call == SIZE:
        return int(np.shape(value)[params["axis"]])
    return READS[call](np.asarray(value))


def same(recorded: Any, got: Any) -> bool:
    """Whether a read gave the recorded value: exactly (``-0.0`` is not ``0.0``, NaN is NaN),
    element by element for lists, and of the same Python type."""
    if type(recorded) is not type(got):
        return False
    if isinstance(recorded, list):
        return len(recorded) == len(got) and all(map(same, recorded, got))
    if isinstance(recorded, float):
        if math.isnan(recorded):
            return math.isnan(got)
        return recorded == got and math.copysign(1.0, recorded) == math.copysign(1.0, got)
    if isinstance(recorded, complex):
        return same(recorded.real, got.real) and same(recorded.imag, got.imag)
    return recorded == got


def short(value: Any, limit: int = 80) -> str:
    """A value as a message shows it (long lists cut)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def describe(node: Any) -> str:
    """``bool() of %4`` / ``len() of axis 0 of %7``: what a guard read."""
    target = node.args[0]
    where = f"axis {node.params['axis']} of " if node.op == SIZE else ""
    return f"{node.op} of {where}%{target.index}"


def guard_error(node: Any, got: Any) -> GuardError:
    """The error of guard ``node`` whose read gave ``got`` on a replay's inputs."""
    recorded = node.params["value"]
    where = format_source(node.source) or "unknown source"
    err = GuardError(
        f"these inputs take another branch than the capture's examples: guard %{node.index} "
        f"({describe(node)}), recorded at {where}, read {short(recorded)} when captured and "
        f"{short(got)} now, so the recorded ops are not what the code runs on these inputs. "
        "Fix: capture again with an example that takes this branch (the graph is one branch "
        "of the code), or write the branch on the data with np.where(cond, a, b), which a "
        "graph holds whole")
    err.node = node
    err.recorded = recorded
    err.got = got
    return err


def check(node: Any, value: Any) -> None:
    """Raise :class:`GuardError` unless the read of guard ``node`` on host ``value`` gives
    the recorded value."""
    got = read_value(node.op, value, node.params)
    if not same(node.params["value"], got):
        raise guard_error(node, got)


def check_all(guards: Any, values: Any) -> None:
    """Check every guard on its value (host arrays, in program order, as a backend that runs
    them in its compiled program returns them); the first that differs raises
    :class:`GuardError`."""
    for node, value in zip(guards, values):
        check(node, value)
