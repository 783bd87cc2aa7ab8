"""Violation messages and the exceptions they raise.

A violation is recorded by the recording trace (:mod:`capviz.trace.recorder`) as a
:class:`capviz.core.ir.Violation` plus a ``violation`` node; this module writes its message, with
the fixes, and turns it into the matching :class:`capviz.core.errors.CaptureViolation` subclass.
"""

from __future__ import annotations

from typing import Any

from capviz.core.errors import (
    CaptureViolation,
    DataReadError,
    FrozenRandomError,
    IncompleteGraphError,
    SeedViolationError,
    UnsupportedOperationError,
)
from capviz.core.ir import Graph, Violation
from capviz.core.source import format_source

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
    "frozen_random": FrozenRandomError,
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


def frozen_message(call: str, generator: str, source: Any, reason: str = "") -> str:
    """Message of a ``frozen_random`` violation (``generator``: whose global generator)."""
    record = ("  3. Let the scope record NumPy's global-generator draws as capviz random ops:\n"
              "       cap.capture_scope(global_random=\"record\")   # or cv.capture(..., "
              "global_random=\"record\")\n"
              "     (rand, randn, random, random_sample, uniform, normal, standard_normal; the "
              "numbers then come from capviz's Philox generator, not NumPy's)")
    if reason:
        record = f"  (global_random=\"record\" does not help here: {reason})"
    return (f"{call} drew from {generator} global generator{_where(source)} while a capture "
            "scope was recording: the values drawn now would be frozen into the graph as a "
            "constant, and every replay would reuse them (a dropout mask that never changes).\n"
            "Fixes:\n"
            "  1. Use capviz's random ops, which replay fresh, reproducible draws:\n"
            "       mask = cv.random.bernoulli(x.shape, p=0.9)   # or cv.random.uniform, "
            "cv.random.normal\n"
            "  2. Make the draw before the capture and pass it in as an input:\n"
            "       noise = np.random.rand(4, 4)   # outside the scope\n"
            "       with cap.capture_scope() as scope: n = scope.input(\"noise\", noise)\n"
            + record)


def frozen_object_message(name: str, kind: str, source: Any) -> str:
    """Message of a ``frozen_random`` violation for a generator object (``rng``, a ``kind``)
    whose state changed while a capture was open (seen when the scope closed)."""
    return (f"{name} (a {kind} the capture can reach) was drawn from or reseeded while a capture "
            f"scope was recording: its state changed between the scope's entry and its exit"
            f"{_where(source)}. The values drawn now would be frozen into the graph as a "
            "constant, and every replay would reuse them, where eager code draws fresh values "
            "on each call. (A draw from an object cannot be hooked, so capviz cannot say which "
            "line drew.)\n"
            "Fixes:\n"
            "  1. Use capviz's random ops, which replay fresh, reproducible draws:\n"
            "       noise = cv.random.normal(x.shape, dtype=x.dtype)   # or cv.random.uniform, "
            "cv.random.bernoulli\n"
            "  2. Make the draw before the capture and pass it in as an input:\n"
            f"       noise = {_same_draw(name, kind)}   # outside the scope\n"
            "       with cap.capture_scope() as scope: n = scope.input(\"noise\", noise)")


def _same_draw(name: str, kind: str) -> str:
    if kind in ("np.random.Generator", "np.random.RandomState"):
        return f"{name}.standard_normal(shape)"
    return f"np.array(<the same draws from {name}>)"


# NumPy functions that convert a tensor argument to an ndarray in their Python code (no hook
# capviz can record), and what to write instead (the same values and dtype)
NUMPY_COPIES = {
    "full": ("np.full(shape, t) copies t into a new ndarray; write np.broadcast_to(t, "
             "shape).copy(), or np.broadcast_to(t, shape).astype(dtype) for np.full(shape, t, "
             "dtype): the same values and dtype"),
    "full_like": ("np.full_like(a, t) with an ndarray a copies t into a new ndarray; record a "
                  "first, np.full_like(cv.constant(a), t), or write np.broadcast_to(t, "
                  "a.shape).astype(a.dtype): the same values and dtype"),
}


def data_read_message(call: str, what: str, source: Any, inside: str | None = None) -> str:
    """Message of a ``data_read`` violation (``inside``: the NumPy function that converted the
    tensor, see :data:`NUMPY_COPIES`)."""
    copies = f" NumPy's np.{inside} makes it: {NUMPY_COPIES[inside]}." if inside in NUMPY_COPIES \
        else ""
    return (f"cannot read the value of a captured tensor during capture: {call} of {what}"
            f"{_where(source)}.{copies} Captured tensors hold no values until the graph is "
            "replayed.\n"
            "Fixes: replay the graph (graph.replay(inputs)) and read its outputs; keep "
            "data-dependent Python control flow outside the capture; use np.where(cond, a, b) "
            "for data-dependent selection. NumPy offers no hook when an ndarray is indexed by a "
            "tensor (arr[t] calls np.asarray(t)): record the array first, c = "
            "cv.constant(arr), then write c[t]."
            + _CONVERSIONS.get(call, ""))


# NumPy converts a tensor with np.asarray (no hook capviz can record) in these ndarray methods too
_CONVERTED = (" The same conversion happens in `np.array([t1, t2])` (write np.stack([t1, t2])), "
              "in a ufunc method given a list or tuple of tensors, `np.maximum.reduce([a, b, c])` "
              "or `np.add.accumulate((a, b))` (write np.maximum.reduce(np.stack([a, b, c])): "
              "NumPy converts the list exactly as np.stack does, same values and dtype), "
              "in `np.ascontiguousarray(t)`, `np.asfortranarray(t)`, `np.require(t)` and "
              "`np.asanyarray(t)` (use t itself, or t.copy() for a C-ordered copy), "
              "in `buf[...] = t` on an ndarray `buf` (write into a recorded buffer instead: "
              "b = cv.constant(buf); b[...] = t) and in `a.dot(t)` (write np.dot(a, t) or "
              "a @ t).")
# What to write instead of converting a tensor to an ndarray, keeping it a tensor (exact: the
# same values and dtype as NumPy's conversion)
# NumPy stores a tensor into an ndarray's element by converting it (float(t), int(t), bool(t))
_ELEMENT = (" If this is NumPy storing t into an ndarray (`buf[i] = t`, `buf.fill(t)`), make the "
            "buffer a tensor: buf = cv.constant(np.zeros(n)), or np.zeros_like(t, shape=n).")
# Python and NumPy call __index__ for a count, size or position: range(t), x[:t], [0] * t
_COUNT = (" Python calls it to use t as a count, size or position (`range(t)`, `x[:t]`, "
          "`[0] * t`, `np.zeros((n, t))`): these depend on the data, and a graph's shapes "
          "cannot; take sizes from shapes (x.shape[0]) or pass the size in as a Python int.")
_CONVERSIONS = {
    "operator.index()": _COUNT,
    "float()": _ELEMENT,
    "int()": _ELEMENT,
    "bool()": _ELEMENT,
    "np.asarray()": (" To keep a tensor: np.asarray(t) is t itself, np.asarray(t, dtype) is "
                     "t.astype(dtype, copy=False)." + _CONVERTED),
    "np.array()": (" To keep a tensor: np.array(t) is t.copy(), np.array(t, dtype) is "
                   "t.astype(dtype)." + _CONVERTED),
}


def unsupported_message(call: str, source: Any, reason: str = "") -> str:
    """Message of an ``unsupported_op`` violation."""
    why = f" ({reason})" if reason else ""
    return (f"{call} is not supported by capviz{why}{_where(source)}. "
            "capviz records only the ops of its op table (cv.supported_functions() lists the "
            "NumPy functions); compute this value outside the capture and pass it in as an "
            "input (a cv.spec argument of cv.capture, or scope.input(...)) or as "
            "cv.constant(value).")


def unseeded_message(op: str, source: Any) -> str:
    """Message of an ``unseeded_random`` warning."""
    return (f"random op {op} recorded{_where(source)} in a scope whose randomness has no known "
            "seed: each replay draws fresh values and none reproduces eager execution. Seed the "
            "device before the scope (dev.seed(42)) and capture with rng=dev, or pass "
            "seed= to graph.replay().")


def check_replayable(graph: Graph, allow_violations: bool) -> None:
    """Refuse to replay a graph with error-level violations unless ``allow_violations``.

    Raises:
        IncompleteGraphError: listing each violation (kind, call, where).
    """
    if allow_violations:
        return
    errors = [v for v in graph.violation_records if v.level == "error"]
    if not errors:
        return
    shown = errors[:10]
    lines = [f"  %{v.order} {v.kind}: {v.call}{_where(v.source)}" for v in shown]
    if len(errors) > len(shown):
        lines.append(f"  ... and {len(errors) - len(shown)} more")
    err = IncompleteGraphError(
        f"the graph has {len(errors)} error-level violation(s), so a replay would not compute "
        "what the captured code did:\n" + "\n".join(lines) + "\nFix the capture (each "
        "violation's message has the fixes), or replay anyway with allow_violations=True.")
    err.violations = errors
    err.graph = graph
    raise err


def make_error(violation: Violation, graph: Graph | None) -> CaptureViolation:
    """The exception for a violation, carrying ``.violation`` and ``.graph``."""
    cls = ERROR_TYPES.get(violation.kind, CaptureViolation)
    err = cls(violation.message)
    err.violation = violation
    err.graph = graph
    return err


def raise_for(violation: Violation, graph: Graph | None) -> None:
    """Raise the exception for ``violation``."""
    raise make_error(violation, graph)
