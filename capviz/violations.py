"""Violation messages and the exceptions they raise.

A violation is recorded by the capture backend (:mod:`capviz.backends.capture`) as a
:class:`capviz.ir.Violation` plus a ``violation`` node; this module writes its message, with the
fixes, and turns it into the matching :class:`capviz.errors.CaptureViolation` subclass.
"""

from __future__ import annotations

from typing import Any

from capviz.errors import (
    CaptureViolation,
    DataReadError,
    SeedViolationError,
    UnsupportedOperationError,
)
from capviz.ir import CapturedGraph, Violation, format_source

SEED_MESSAGE = "seeding is not supported during graph capture"

SEED_FIXES = (
    "Fixes:\n"
    "  1. Seed the underlying device before entering the scope, not inside it:\n"
    "       dev.seed(42)\n"
    "       with cap.capture_scope(rng=dev) as scope: ...\n"
    "  2. Gate the seeding call so it is skipped while capturing:\n"
    "       if not cv.is_capturing(): np.random.seed(42)\n"
    "  3. Create random tensors before capture and pass them in as inputs:\n"
    "       w = cv.random.normal((4, 4))   # outside the scope\n"
    "       with cap.capture_scope() as scope: w_in = scope.input(\"w\", w.numpy())"
)

ERROR_TYPES: dict[str, type[CaptureViolation]] = {
    "seed": SeedViolationError,
    "data_read": DataReadError,
    "unsupported_op": UnsupportedOperationError,
}


def _where(source: Any) -> str:
    loc = format_source(source)
    return f" at {loc}" if loc else ""


def seed_message(call: str, source: Any) -> str:
    """Message of a ``seed`` violation."""
    return (f"{SEED_MESSAGE}: {call} was called{_where(source)} while a capture scope was "
            "recording. A capture records random ops instead of drawing them, so a reseed in the "
            "middle of it cannot be replayed.\n" + SEED_FIXES)


def data_read_message(call: str, what: str, source: Any) -> str:
    """Message of a ``data_read`` violation."""
    return (f"cannot read the value of a captured tensor during capture: {call} of {what}"
            f"{_where(source)}. Captured tensors hold no values until the graph is replayed.\n"
            "Fixes: replay the graph (graph.replay(inputs)) and read its outputs; keep "
            "data-dependent Python control flow outside the capture; use np.where(cond, a, b) "
            "for data-dependent selection. NumPy offers no hook when an ndarray is indexed by a "
            "tensor (arr[t] calls np.asarray(t)): record the array first, c = "
            "scope.constant(arr), then write c[t] or np.take(c, t, axis=0).")


def unsupported_message(call: str, source: Any, reason: str = "") -> str:
    """Message of an ``unsupported_op`` violation."""
    why = f" ({reason})" if reason else ""
    return (f"{call} is not supported by capviz{why}{_where(source)}. "
            "capviz records only the ops of its op table (cv.supported_functions() lists the "
            "NumPy functions); compute this value outside the capture and pass it in with "
            "scope.input(...) or scope.constant(...).")


def unseeded_message(op: str, source: Any) -> str:
    """Message of an ``unseeded_random`` warning."""
    return (f"random op {op} recorded{_where(source)} in a scope whose randomness has no known "
            "seed: each replay draws fresh values and none reproduces eager execution. Seed the "
            "device before the scope (dev.seed(42)) and capture with rng=dev, or pass "
            "seed= to graph.replay().")


def make_error(violation: Violation, graph: CapturedGraph | None) -> CaptureViolation:
    """The exception for a violation, carrying ``.violation`` and ``.graph``."""
    cls = ERROR_TYPES.get(violation.kind, CaptureViolation)
    err = cls(violation.message)
    err.violation = violation
    err.graph = graph
    return err


def raise_for(violation: Violation, graph: CapturedGraph | None) -> None:
    """Raise the exception for ``violation``."""
    raise make_error(violation, graph)
