"""Violation messages, the one table of situations and fixes, and the exceptions they raise.

A violation is recorded by the recording trace (:mod:`capviz.trace.recorder`) as a
:class:`capviz.core.ir.Violation` plus a ``violation`` node; this module writes its message and
turns it into the matching :class:`capviz.core.errors.CaptureViolation` subclass.

Every capture error that is not about randomness is written from one table, :data:`SITUATIONS`,
in at most three lines::

    `params["wte"][tokens]` at gpt.py:40 in forward: an ndarray indexed by the tensor `tokens`.
    capviz cannot record it: NumPy converts the index with np.asarray, which no hook reaches, ...
    Fix: record the array first: cv.constant(params["wte"])[tokens] (outside a capture ...).

The API (small on purpose):

- :class:`Failure`: what capviz knows where it fails: the violation ``kind``, the ``call``
  (``np.asarray()``, ``float()``, ``np.unique``), the ``operand`` tensor, the user's ``source``,
  the user's ``code`` at that line (:func:`capviz.core.user_code.user_code`: ``index``,
  ``store``, ``call``, ``branch``... with its parts), the NumPy function converting (``inside``)
  and a refusal's ``reason``. :func:`failure_here` makes one at the user's current line.
- :class:`Situation`: one row: ``name``, ``kind``, ``applies(failure)``, and templates for the
  three lines (``what``, ``why``, ``fix``, over :meth:`Failure.fields`: ``{array}``, ``{key}``,
  ``{value}``, ``{callee}``, ``{first}``, ``{test}``, ``{operand}``, ``{call}``...), plus an
  ``example`` program that meets it.
- :func:`situation` picks the first row of the failure's kind that applies; :func:`explain`
  writes the message. :func:`data_read_message` and :func:`unsupported_message` do both for the
  two kinds the recorder raises.

*Adding a situation*: one ``Situation(...)`` in :data:`SITUATIONS`, above the general row of its
kind (a new kind also gets its error class in :data:`ERROR_TYPES` and a last row that applies to
every failure of it). Its ``why`` line must differ from every other row's (a test checks), and
its ``example`` must raise it: ``tests/test_messages.py`` runs every example and checks the
message (at most three lines, the user's code quoted, that row's why and fix), and
``docs/guide/messages.md`` lists the table (``python docs/gen_messages.py`` writes it; a test
fails when it is stale). Seed and frozen-random violations keep their three fixes
(:func:`seed_message`, :func:`frozen_message`).
"""

from __future__ import annotations

import ast
import dataclasses
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from capviz.core.errors import (
    CaptureViolation,
    DataReadError,
    FrozenRandomError,
    IncompleteGraphError,
    SeedViolationError,
    UnsupportedOperationError,
)
from capviz.core.guards import READS
from capviz.core.ir import Graph, Violation
from capviz.core.logged_reads import logging_fix, total_fix
from capviz.core.source import Source, format_source, source_of, user_frame
from capviz.core.user_code import UserCode, user_code

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


def frozen_object_message(name: str, kind: str, source: Any,
                          reach: str = "the capture can reach") -> str:
    """Message of a ``frozen_random`` violation for a generator object (``rng``, a ``kind``)
    whose state changed while a capture was open (seen when the scope closed); ``reach``: where
    the object is, as the capture sees it."""
    return (f"{name} (a {kind} {reach}) was drawn from or reseeded while a capture "
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


# --- the table of situations: one message, with the one fix, per situation --------------------

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


@dataclass(frozen=True)
class Failure:
    """What capviz knows where a capture fails: the facts a :class:`Situation` is chosen by.

    Attributes:
        kind: the violation kind (``data_read``, ``unsupported_op``).
        call: what failed, as capviz calls it: the conversion (``np.asarray()``, ``float()``,
            ``operator.index()``, ``.numpy()``) or the refused call (``np.unique``).
        operand: the tensor involved as the graph shows it (``%3 (sum, float32[])``), or ``""``.
        source: ``(file, line, function)`` of the user's line.
        code: what the user's line runs there (:func:`capviz.core.user_code.user_code`).
        inside: the NumPy function whose Python code converted the tensor (``full``), if any.
        reason: for a refusal, why and what to write instead (the caller's words).
        examples: the capture has example values for the tensor read (a read that gives
            Python a value is then a guard, never a failure; an array read still fails).
    """

    kind: str
    call: str
    operand: str = ""
    source: Source | None = None
    code: UserCode = field(default_factory=UserCode)
    inside: str | None = None
    reason: str = ""
    examples: bool = False

    def fields(self) -> dict[str, str]:
        """The names a :class:`Situation`'s templates may use (``{array}``, ``{key}``...): the
        parts of the user's code, with generic stand-ins (``arr``, ``t``) where unknown."""
        parts = self.code.parts
        callee = parts.get("callee", "")
        values = {
            "code": self.code.text or self.call, "call": self.call,
            "operand": self.operand or "a captured tensor", "reason": self.reason.rstrip("."),
            "array": parts.get("array", "arr"), "key": parts.get("key", "t"),
            "value": parts.get("value", "t"), "callee": callee or "f",
            "first": parts.get("first", "t") or "t", "test": parts.get("test", "t"),
            "counter": parts.get("counter", "the counter"),
            "counter_write": parts.get("counter_write", "self.t += cv.constant(np.float64(1))"),
            "owner": callee.rpartition(".")[0] or "a",
            "copy": NUMPY_COPIES.get(self.inside or "", ""), "inside": self.inside or "",
        }
        if self.code.action == "index":
            values["joined"] = _joined(self)
        values["reason_why"], values["reason_fix"] = _split_reason(self.reason)
        values["logged"] = logging_fix(self.call, self.source, self.code.text) or "" \
            if self.kind == "data_read" else ""  # (losses.append(loss.item()): review 8 #18)
        values["totalled"] = total_fix(self.call, self.source, self.code.text,
                                       self.operand) or "" \
            if self.kind == "data_read" else ""  # (self.correct += int(...): ruling 38)
        return values


_FIX_WORDS = ("keep ", "use ", "write ", "pass ", "compute ", "take ", "record ", "call ",
              "cast ", "index ", "select ", "make ", "for ", "give ", "replay ", "move ", "apply ",
              "create ")
_GENERIC_WHY = ("capviz records only the ops of its op table (cv.supported_functions() lists the "
                "NumPy functions)")
_GENERIC_FIX = ("compute this value outside the capture and pass it in as an input (a cv.spec "
                "argument of cv.capture, or scope.input(...)), or as cv.constant(value).")


def _split_reason(reason: str) -> tuple[str, str]:
    """A refusal's reason as (why, fix): split at the first ``"; "`` followed by a fix
    (``"its output shape depends on the values; keep the shape with np.where(...)"``); a reason
    with no fix in it is all why, and no reason gives the generic advice."""
    reason = reason.strip().rstrip(".")
    if not reason:
        return _GENERIC_WHY, _GENERIC_FIX
    head, sep, tail = reason.partition("; ")
    while sep:
        if tail.startswith(_FIX_WORDS):
            return head, tail + "."
        more, sep, tail = tail.partition("; ")
        head = f"{head}; {more}"
    return reason, ""


@dataclass(frozen=True)
class Situation:
    """One row of :data:`SITUATIONS`: a kind of failure and the one fix for it.

    Attributes:
        name: a short identifier (``ndarray_indexed``), listed in the docs.
        kind: the violation kind it belongs to (``data_read``, ``unsupported_op``).
        applies: whether a :class:`Failure` is this situation (the first row that applies wins).
        what: what the user wrote, completing "`<their code>` at <their line>: ..." (a template
            over :meth:`Failure.fields`).
        why: why capviz cannot record it: one sentence, the message's second line (a template;
            its fixed words differ between rows, so a message names its situation).
        fix: the one fix, the third line after ``Fix:`` (a template; ``""``: no third line).
        example: a short program that meets the situation, for the docs and the tests: it
            defines ``f`` and captures it with ``cv.capture`` (``np`` and ``cv`` are imported).
    """

    name: str
    kind: str
    applies: Callable[[Failure], bool]
    what: str
    why: str
    fix: str
    example: str


def _call_is(*calls: str) -> Callable[[Failure], bool]:
    return lambda f: f.call in calls


def _conversion(f: Failure) -> bool:
    return f.call in ("np.asarray()", "np.array()")


def _callee(f: Failure) -> str:
    return f.code.parts.get("callee", "") if f.code.action == "call" else ""


def _called(*names: str) -> Callable[[Failure], bool]:
    """A conversion at a call of a function named one of ``names`` (``asarray`` for
    ``np.asarray(t)``, ``dot`` for ``a.dot(t)``)."""
    return lambda f: _conversion(f) and f.code.action == "call" and \
        f.code.parts.get("function") in names


_TRICKS = {"r_": "concatenate", "c_": "column_stack"}


def _trick(f: Failure) -> str | None:
    """``np.r_[...]``/``np.c_[...]`` (also ``numpy.``, or bound as ``r_``): the NumPy function
    that makes the same array of the items, or None."""
    array = f.code.parts.get("array", "")
    head, _, name = array.rpartition(".")
    return _TRICKS.get(name) if head in ("", "np", "numpy") else None


def _items(key: str) -> list[ast.expr] | None:
    try:
        node = ast.parse(f"_[{key}]", mode="eval").body
    except SyntaxError:
        return None
    index = node.slice if isinstance(node, ast.Subscript) else None
    return None if index is None else list(index.elts) if isinstance(index, ast.Tuple) \
        else [index]


def _plain_key(key: str) -> bool:
    """Whether an index has no slice (``B[:, t]``'s ``t`` is a position; ``x[:t]``'s is a
    size, which no cv.constant makes recordable)."""
    items = _items(key)
    return items is not None and not any(isinstance(i, ast.Slice) and
                                         (i.lower or i.upper or i.step) for i in items)


def _number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, complex, bool)


def _joined(f: Failure) -> str:
    """``np.r_[x, 0]`` written with recorded functions, as NumPy computes it: each item at
    least 1-d (a number as ``[n]``), all cast to the result type of the items (a Python number
    weak, as np.r_ casts them), then ``np.concatenate`` (``np.c_``: ``np.column_stack`` of its
    arrays)."""
    function = _trick(f)
    key = f.code.parts.get("key", "")
    items = _items(key)
    if function is None or items is None or any(
            isinstance(i, ast.Slice) or (isinstance(i, ast.Constant) and
                                         isinstance(i.value, str)) for i in items):
        return (f"np.concatenate([...]) of the items of `{key}`, each as np.atleast_1d(item), "
                "then .astype(np.result_type(<the items>))")
    texts = [ast.unparse(i) for i in items]
    if function == "column_stack":
        return f"np.column_stack([{', '.join(texts)}])"
    held = set(f.code.parts.get("sequences", "").split(","))  # names holding a list
    sequences = [isinstance(i, (ast.List, ast.Tuple)) or (isinstance(i, ast.Name) and
                                                           i.id in held) for i in items]
    texts = [f"np.asarray({t})" if seq else t
             for t, seq in zip(texts, sequences)]  # np.r_ makes an array of a sequence
    kind = f"np.result_type({', '.join(texts)})"
    wrapped = [f"[{t}]" if _number(i) else t if seq else f"np.atleast_1d({t})"
               for t, i, seq in zip(texts, items, sequences)]
    return f"np.concatenate([{', '.join(wrapped)}]).astype({kind})"


def _guardable(f: Failure) -> bool:
    """A read that gives Python a value, which a capture with example values records as a
    guard (:data:`capviz.core.guards.READS`)."""
    return f.call in READS


def _ufunc_method_of_list(f: Failure) -> bool:
    method = _callee(f).rpartition(".")[2]
    return _conversion(f) and method in ("reduce", "accumulate", "reduceat", "outer") and \
        bool(f.code.parts.get("sequence"))


_NO_VALUE = "a captured tensor has no value until the graph is replayed"

SITUATIONS: list[Situation] = [
    Situation(
        "index_trick", "data_read",
        lambda f: _conversion(f) and f.code.action == "index" and _trick(f) is not None,
        "{array} converts the tensors of `{key}` to ndarrays",
        "capviz cannot record it: the Python code of {array}[...] converts each item with "
        f"np.array, which no hook reaches, and {_NO_VALUE}.",
        "write {joined}: the same values and dtype, recorded.",
        "def f(x):\n    return np.r_[x, 0]\n\ncv.capture(f, cv.spec(3, \"float32\"))"),
    Situation(
        "ndarray_indexed_by_number", "data_read",
        lambda f: f.call == "operator.index()" and f.code.action == "index" and
        _plain_key(f.code.parts.get("key", "")),
        "an ndarray or a list indexed by the 0-d tensor {operand} in `{key}`",
        "capviz cannot record it: NumPy converts an integer index with operator.index, which "
        f"no hook reaches, and {_NO_VALUE}.",
        "record the array first: cv.constant({array})[{key}] (outside a capture cv.constant "
        "returns the array itself).",
        "B = np.arange(15.0).reshape(3, 5)\n\ndef f(obs):\n    return B[:, obs[0]]\n\n"
        "cv.capture(f, cv.spec(4, \"int64\"))"),
    Situation(
        "ndarray_indexed", "data_read",
        lambda f: _conversion(f) and f.code.action == "index",
        "an ndarray indexed by the tensor `{key}`",
        "capviz cannot record it: NumPy converts the index with np.asarray, which no hook "
        f"reaches, and {_NO_VALUE}.",
        "record the array first: cv.constant({array})[{key}] (outside a capture cv.constant "
        "returns the array itself).",
        "TABLE = np.eye(4)\n\ndef f(labels):\n    return TABLE[labels]\n\n"
        "cv.capture(f, cv.spec((3,), \"int64\"))"),
    Situation(
        "ndarray_store", "data_read", lambda f: f.code.action == "store",
        "stores the tensor `{value}` into the ndarray `{array}`",
        f"capviz cannot record it: an ndarray holds values, and {_NO_VALUE} (NumPy reads it "
        "with {call}).",
        "record the buffer first and write into that tensor: b = cv.constant({array}); "
        "b[{key}] = {value}",
        # an ndarray from outside is a state the capture writes (capviz/trace/state.py); an
        # ndarray subclass such as a memmap is not
        "buf = np.memmap(\"buf.dat\", np.float64, \"w+\", shape=(3,))\n\n"
        "def f(x):\n    buf[0] = x.sum()\n    return x\n\n"
        "cv.capture(f, cv.spec((3,), \"float64\"))"),
    Situation(
        "numpy_copies", "data_read", lambda f: _conversion(f) and f.inside in NUMPY_COPIES,
        "np.{inside} copies a tensor into a new ndarray",
        "capviz cannot record it: np.{inside}'s own Python code converts the tensor with "
        f"np.asarray, and {_NO_VALUE}.",
        "{copy}.",
        "def f(x):\n    return np.full(3, x[0])\n\ncv.capture(f, cv.spec(5, \"float64\"))"),
    Situation(
        "sequence_to_array", "data_read",
        lambda f: _called("array", "asarray", "asanyarray")(f) and
        bool(f.code.parts.get("sequence")),
        "makes an ndarray of a list holding tensors",
        "capviz cannot record it: np.array converts each tensor of a list with np.asarray, and "
        f"{_NO_VALUE}.",
        "np.stack({first}) makes the same array (values and dtype) as a tensor.",
        "def f(a, b):\n    return np.array([a, b], order=\"F\")\n\n"
        "cv.capture(f, cv.spec(3), cv.spec(3))"),
    Situation(
        "ufunc_method_of_list", "data_read", _ufunc_method_of_list,
        "a ufunc method given a list holding tensors",
        "capviz cannot record it: the ufunc method converts the list with np.asarray, and "
        f"{_NO_VALUE}.",
        "{callee}(np.stack({first})): NumPy converts the list exactly as np.stack does, the "
        "same values and dtype.",
        "def f(a, b):\n    return np.maximum.reduce([a, b])\n\n"
        "cv.capture(f, cv.spec(3), cv.spec(3))"),
    Situation(
        "numpy_converts", "data_read", lambda f: _conversion(f) and bool(f.inside),
        "np.{inside}'s own Python code converts a tensor to an ndarray",
        "capviz cannot record it: NumPy calls np.asarray on the tensor (often while making an "
        f"array of a nested list of tensors), and {_NO_VALUE}.",
        "pass tensors, not lists of them: np.stack([t1, t2]) for np.array([t1, t2]).",
        "def f(x):\n    return np.poly([[x[0], x[1]], [x[1], x[0]]])\n\n"
        "cv.capture(f, cv.spec(2, \"float64\"))"),
    Situation(
        "array_from_example", "data_read",
        lambda f: f.examples and not _guardable(f) and not f.call.startswith("format("),
        "takes the values of {operand} out of the capture as an array ({call})",
        "capviz cannot record it: plain NumPy would compute from the example's values a "
        "constant that is wrong for any other input.",
        "keep it a tensor (np.asarray(t) is t itself); reads that give Python a value, "
        "bool(t), int(t), float(t), t.item(), t.tolist(), are recorded as guards.",
        "def f(x):\n    return x * np.asarray(x, order=\"F\").sum()\n\n"
        "cv.capture(f, np.ones(3))"),
    Situation(
        "asarray_of_tensor", "data_read", _called("asarray", "asanyarray"),
        "converts the tensor `{first}` to an ndarray",
        f"capviz cannot record it: np.asarray makes an ndarray, which holds values, and "
        f"{_NO_VALUE}.",
        "keep the tensor: np.asarray(t) is t itself, np.asarray(t, dtype) is "
        "t.astype(dtype, copy=False).",
        "def f(x):\n    return np.asarray(x, order=\"F\") * 2\n\ncv.capture(f, cv.spec(3))"),
    Situation(
        "array_of_tensor", "data_read", _called("array"),
        "copies the tensor `{first}` into an ndarray",
        f"capviz cannot record it: np.array makes an ndarray, which holds values, and "
        f"{_NO_VALUE}.",
        "keep the tensor: np.array(t) is t.copy(), np.array(t, dtype) is t.astype(dtype).",
        "def f(x):\n    return np.array(x, order=\"F\") * 2\n\ncv.capture(f, cv.spec(3))"),
    Situation(
        "layout_conversion", "data_read",
        _called("ascontiguousarray", "asfortranarray", "require"),
        "converts the tensor `{first}` to an ndarray of a given layout",
        "capviz cannot record it: {callee} makes an ndarray, which holds values, and a "
        "captured tensor has none until replay (and no memory layout to ask for).",
        "use {first} itself, or {first}.copy() for a C-ordered copy.",
        "def f(x):\n    return np.ascontiguousarray(x).sum()\n\ncv.capture(f, cv.spec(3))"),
    Situation(
        "ndarray_dot", "data_read", _called("dot"),
        "the ndarray method `{callee}` given the tensor `{first}`",
        "capviz cannot record it: ndarray.dot converts its argument with np.asarray, and "
        f"{_NO_VALUE}.",
        "np.dot({owner}, {first}), or {owner} @ {first}.",
        "W = np.ones((3, 3))\n\ndef f(x):\n    return W.dot(x)\n\ncv.capture(f, cv.spec(3))"),
    Situation(
        "size_from_data", "data_read", _call_is("operator.index()"),
        "uses the value of {operand} as a count, size or position",
        "capviz cannot record it: a graph's shapes cannot depend on its data, and "
        f"{_NO_VALUE}.",
        "take sizes from shapes (x.shape[0]), pass the size in as a Python int, or capture "
        "with an example array instead of a spec: the size is then recorded as a guard.",
        "def f(lengths):\n    return np.zeros(lengths.max())\n\n"
        "cv.capture(f, cv.spec(3, \"int64\"))"),
    Situation(
        "branch_on_value", "data_read", lambda f: f.code.action == "branch",
        "branches on the value of `{test}`",
        f"capviz cannot record it: Python needs True or False now, and {_NO_VALUE}.",
        "select with np.where({test}, a, b), or capture with an example array instead of a "
        "spec (cv.capture(f, x)): the branch taken is then recorded as a guard.",
        "def f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n\n"
        "cv.capture(f, cv.spec(3))"),
    Situation(
        "format_value", "data_read", lambda f: f.call.startswith("format("),
        "formats the value of {operand}",
        f"capviz cannot record it: formatting needs the number, and {_NO_VALUE}.",
        "return the tensor from the captured function and format the replay's output: "
        "graph.replay(inputs)[\"out\"].",
        "def f(x):\n    print(f\"{x.sum():.3f}\")\n    return x\n\ncv.capture(f, cv.spec(3))"),
    Situation(
        "value_function", "data_read",
        lambda f: f.call.startswith("np.") and not _conversion(f),
        "{call} needs the values of its tensors",
        f"capviz cannot record it: {{call}} answers from values, and {_NO_VALUE}.",
        "compute it on the replay's outputs, outside the capture: "
        "graph.replay(inputs)[\"out\"].",
        "def f(x):\n    assert np.allclose(x, 0)\n    return x\n\ncv.capture(f, cv.spec(3))"),
    Situation(
        "totalled_value_read", "data_read", lambda f: bool(f.fields()["totalled"]),
        "updates a Python number the object keeps with the value of {operand} ({call})",
        "capviz cannot record it: a Python number read from a tensor here is fixed when the "
        "capture runs (a replay updates a number the object keeps from t.item() in Python's "
        "operators, or float(t) / int(t) taken as they are by +=, min or max), so every replay "
        "would leave it as the capture found it.",
        "{totalled}.",
        "class Acc:\n    def __init__(self):\n        self.total = 0.0\n\n"
        "    def f(self, x):\n        self.total += float(x.sum()) * 2\n        return x\n\n"
        "cv.capture(Acc().f, cv.spec(3))"),
    Situation(
        "logged_value_read", "data_read", lambda f: bool(f.fields()["logged"]),
        "logs the value of {operand} as a Python number ({call})",
        "capviz cannot record it: a Python number read from a tensor is fixed when the capture "
        "runs, so a replay would log the capture's number (a guard on it would refuse every "
        "replay on other data).",
        "{logged}.",
        "losses = []\n\ndef f(x):\n    losses.append(x.sum().item())\n    return x\n\n"
        "cv.capture(f, cv.spec(3))"),
    Situation(
        "value_without_example", "data_read", _guardable,
        "reads the value of {operand} ({call})",
        "capviz cannot record it: Python needs the value now, and this input was given by "
        "its shape and dtype only.",
        "capture with an example array instead of a spec (cv.capture(f, x) with x an array): "
        "the capture reads the example's value and records a guard that every replay checks.",
        "def f(x):\n    return float(x.sum()) * x\n\ncv.capture(f, cv.spec(3))"),
    Situation(
        "read_value", "data_read", lambda f: True,
        "reads the value of {operand} ({call})",
        f"capviz cannot record it: the graph records operations, and {_NO_VALUE}.",
        "return the tensor from the captured function and read it after replay: "
        "graph.replay(inputs)[\"out\"].",
        "def f(x):\n    return x * x.numpy().sum()\n\ncv.capture(f, cv.spec(3))"),
    Situation(
        "computed_from_state", "unsupported_op", _call_is("a value NumPy computed from a state"),
        "NumPy's own operators computed {operand} from an array the capture writes, outside the "
        "capture's sight",
        "capviz cannot record it: NumPy's own operators or Python code computed it while the "
        "capture ran, so every replay would reuse it where a call computes it again "
        "({reason_why}).",
        "{reason_fix}",
        "W = np.ones(3)\n\ndef f(x):\n    reg = np.sum(W * W)\n"
        "    np.subtract(W, x, out=W)\n    return x * reg\n\n"
        "cv.capture(f, cv.spec(3, \"float64\"))"),
    Situation(
        "returned_from_state", "unsupported_op",
        _call_is("a returned value NumPy computed from a state"),
        "the returned value was computed by NumPy's own operators from {array}, an array the "
        "capture writes",
        "capviz cannot record it: NumPy read the array's memory outside the capture's sight, "
        "so every replay would return the value of this call ({reason_why}).",
        "{reason_fix}",
        "W = np.zeros(3)\n\ndef f(g):\n    np.add(W, g, out=W)\n    return W * 2.0\n\n"
        "cv.capture(f, cv.spec(3, \"float64\"))"),
    Situation(
        "written_outside", "unsupported_op", _call_is("an outside array NumPy wrote unseen"),
        "NumPy's own operators wrote the outside ndarray {array}, a write no state of the "
        "graph records",
        "capviz cannot record it: NumPy changed the array's memory without meeting a tensor, "
        "so no hook saw the write and no replay would make it ({reason_why}).",
        "{reason_fix}",
        "calls = np.zeros(1)\n\ndef f(x):\n    np.add(calls, 1, out=calls)\n"
        "    return x * 2.0\n\n"
        "cv.capture(f, cv.spec(3, \"float64\"))"),
    Situation(
        "read_from_made_buffer", "unsupported_op",
        _call_is("a value NumPy read from a buffer the call made"),
        "NumPy read {array}, an ndarray the captured code made and wrote, from its memory",
        "capviz cannot record it: the capture records the writes into the buffer, but NumPy's "
        "own read of its memory does not see them, so every replay would use other values "
        "({reason_why}).",
        "{reason_fix}",
        "def f(x):\n    h = np.array([0.0, 0.0])\n    h[0] = x[0] * 2\n"
        "    h[1] = h[0] + x[1]  # NumPy reads h[0]\n    return h\n\n"
        "cv.capture(f, cv.spec(2, \"float64\"))"),
    Situation(
        "changed_in_shared_memory", "unsupported_op",
        _call_is("an outside array in shared memory that changed"),
        "the outside ndarray {array}, in shared memory, changed while the capture ran",
        "capviz cannot record it: another process may have written it, which no hook or clock "
        "of this process sees, so capviz left it as it is, but a write of the captured code "
        "that no hook sees would not be replayed ({reason_why}).",
        "{reason_fix}",
        "import mmap\n\nbuf = np.frombuffer(mmap.mmap(-1, 24), np.float64)  # shared memory\n\n"
        "def step(x):\n    buf[0] = 1.0  # NumPy's own write\n    return x * 2.0\n\n"
        "def f():\n    return cv.capture(step, cv.spec(3, \"float64\"))\n\nf()"),
    Situation(
        "changed_by_thread", "unsupported_op",
        _call_is("an outside array another thread may have written"),
        "the outside ndarray {array} changed while the capture ran, and other threads ran too",
        "capviz cannot record it: the captured code never names it, so capviz takes the change "
        "for another thread's and left it as that thread made it, but a write of the captured "
        "code that no hook sees would not be replayed ({reason_why}).",
        "{reason_fix}",
        "import threading\n\nready, filled = threading.Event(), threading.Event()\n\n"
        "def loader():\n    ready.wait()\n    m.buf[0] = 1.0  # another thread's write\n"
        "    filled.set()\n\n"
        "def handshake():\n    ready.set()\n    filled.wait()\n\n"
        "class Model:\n    def __init__(self):\n        self.buf = np.zeros(3)\n\n"
        "    def step(self, x):\n        handshake()  # the loader writes m.buf now\n"
        "        return x * 2.0\n\n"
        "m = Model()\nthreading.Thread(target=loader).start()\n\n"
        "def f():\n    return cv.capture(m.step, cv.spec(3, \"float64\"))\n\nf()"),
    Situation(
        "written_by_numpy", "unsupported_op",
        _call_is("a write NumPy made into an outside array"),
        "NumPy's own operators wrote the ndarray {array} while the capture ran",
        "capviz cannot record it: a write that meets no tensor reaches no hook, so the "
        "capture ran it once and no replay would make it ({reason_why}).",
        "{reason_fix}",
        "import collections\n\nts = collections.deque([np.zeros(1)])\nW = np.ones(3)\n\n"
        "def f(x):\n    np.add(ts[0], 1, out=ts[0])\n"
        "    np.subtract(W, x / ts[0], out=W)\n    return x * 1.0\n\n"
        "cv.capture(f, cv.spec(3, \"float64\"))"),
    Situation(
        "grows_per_call", "unsupported_op",
        _call_is("a list the call grows"),
        "{operand} is a list that grows at every call, read here",
        "capviz cannot record it: Python code read a list the function appends to (its "
        "length, an item, an iteration), which every call changes, and a replay would "
        "use what this capture read every time ({reason_why}).",
        "pass what this line reads as an input (an argument of the captured function), or "
        "keep the count in an ndarray written with a tensor.",
        "LOG = []\nW = np.ones(3)\n\ndef f(x):\n    LOG.append(1)\n"
        "    lr = 0.0 if len(LOG) < 2 else 0.1\n    np.subtract(W, lr * x, out=W)\n"
        "    return x * 1.0\n\ncv.capture(f, cv.spec(3, \"float64\"))"),
    Situation(
        "path_from_python", "unsupported_op",
        _call_is("a path chosen from a Python value the call changes"),
        "the captured code recorded other operations here when the function ran again, after "
        "its first run grew {operand}",
        "capviz cannot record it: Python chose what to compute from a value the call changes (a "
        "list or dict the function appends to, read by its length or items) or from values "
        "NumPy read in an array the capture writes, and a replay follows the one path recorded "
        "({reason_why}).",
        "keep the choice out of the captured function: compute it before the call and pass it "
        "as an input (an argument of the captured function).",
        "HIST = []\nW = np.ones(3)\n\ndef odd():\n    return len(HIST) % 2\n\n"
        "def f(x):\n    HIST.append(1)\n"
        "    if odd():\n        np.subtract(W, x, out=W)\n    else:\n"
        "        np.add(W, x, out=W)\n    return x * 1.0\n\n"
        "cv.capture(f, cv.spec(3, \"float64\"))"),
    Situation(
        "path_from_state", "unsupported_op", _call_is("a path chosen from a state's values"),
        "the captured code recorded other operations here when {operand} held other values",
        "capviz cannot record it: Python chose what to compute from values NumPy read in an "
        "array the capture writes, and a replay follows the one path recorded "
        "({reason_why}).",
        "keep the choice in the graph: compute the condition from tensors and select with "
        "np.where(cond, a, b), or pass the array as an input.",
        "W = np.ones(3)\n\ndef f(x):\n    top = W.max()\n"
        "    y = x * 2.0 if top > 1 else x + top\n    np.subtract(W, y, out=W)\n"
        "    return y\n\ncv.capture(f, cv.spec(3, \"float64\"))"),
    Situation(
        "next_of_outside_iterator", "unsupported_op",
        _call_is("the next item of an iterator that outlives the call"),
        "{operand} is an iterator that outlives the call, and the call takes its next item",
        "capviz cannot record it: no hook sees next(), so the capture ran it once and kept "
        "the item it took, which every replay would use where a call takes the next one "
        "({reason_why}).",
        "take the item outside the captured function and pass it as an input (an argument "
        "of the captured function).",
        "import itertools\n\nclass C:\n    def __init__(self):\n"
        "        self.steps = itertools.count(1)\n\n"
        "    def f(self, x):\n        return x * next(self.steps)\n\n"
        "cv.capture(C().f, cv.spec(3, \"float64\"))"),
    Situation(
        "cached_property_filled", "unsupported_op",
        _call_is("a functools.cached_property the call fills"),
        "{operand} is a functools.cached_property, which this call computes and caches",
        "capviz cannot record it: a first call computes it and caches it in the object, a "
        "later call reads the cache, and a replay runs no Python to fill it ({reason_why}).",
        "call the function once before capturing it, so that the capture reads the cached "
        "{operand}, as every later call does.",
        "import functools\n\n\nclass C:\n    def __init__(self):\n        self.W = np.ones(3)\n\n"
        "    @functools.cached_property\n    def norm(self):\n"
        "        return np.linalg.norm(self.W)\n\n"
        "    def f(self, x):\n        return x / self.norm\n\n\n"
        "cv.capture(C().f, cv.spec(3, \"float64\"))"),
    Situation(
        "changes_per_call", "unsupported_op",
        _call_is("a Python number that changes from call to call"),
        "{operand} is a Python number that changes from call to call",
        "capviz cannot record it: Python code computed it from a value the call changes (a "
        "counter, self.t += 1) or from values NumPy read in an array the capture writes, and "
        "a replay would use this one every time ({reason_why}).",
        "pass it as an input (an argument of the captured function), or keep {counter} in "
        "an ndarray written with a tensor ({counter_write}).",
        "class C:\n    def __init__(self):\n        self.t = 0\n        self.W = np.ones(3)\n\n"
        "    def f(self, x):\n        self.t += 1\n"
        "        np.subtract(self.W, x / self.t, out=self.W)\n        return x * 1.0\n\n"
        "cv.capture(C().f, cv.spec(3, \"float64\"))"),
    Situation(
        "second_run_failed", "unsupported_op",
        _call_is("a second run of the captured function"),
        "the second run of the captured function failed here, with {operand} holding other "
        "values",
        "capviz cannot record it: capviz captures a function twice when it writes an outside "
        "array, to find what NumPy computes from it, and the second run raised {reason_why}; "
        "either this line uses a value computed from {operand}, or the function cannot run "
        "twice (it consumes an iterator, a flag, a file).",
        "if the line reads the array, compute it from tensors or pass the array as an input; "
        "if the function consumes something, pass that as an input (the batch as an argument "
        "of the function), so that it can run twice.",
        "import io\n\nW = np.ones(3)\nLINES = io.StringIO(\"1.5\\n\")\n\ndef f(x):\n"
        "    s = float(LINES.readline())\n    np.add(W, x, out=W)\n    return x * s\n\n"
        "cv.capture(f, cv.spec(3, \"float64\"))"),
    Situation(
        "rebound_to_tensor", "unsupported_op",
        _call_is("a capture tensor bound outside the capture"),
        "{operand} is rebound to a value of the capture",
        "capviz cannot record it: a replay computes values, writes arrays in place and binds "
        "a new array only to a name that held an array of its shape and dtype that nothing "
        "else holds, so it would compute from the old array every time ({reason_why}).",
        "{reason_fix}",
        "class C:\n    def __init__(self):\n        self.W = np.ones(3)\n\n"
        "    def f(self, g):\n        self.W = self.W - 0.5 * g\n        return g * 1.0\n\n"
        "c = C()\nfirst = c.W  # the old array, held here too\n"
        "cv.capture(c.f, cv.spec(3, \"float64\"))"),
    Situation(
        "rebound_by_numpy", "unsupported_op",
        _call_is("an array NumPy computed bound outside the capture"),
        "{operand} is rebound to an array NumPy computed without the capture",
        "capviz cannot record it: NumPy computed the new array from arrays outside the capture "
        "and met no tensor, so no hook saw it, the capture put the old array back, and no "
        "replay would bind a new one ({reason_why}).",
        "{reason_fix}",
        "class C:\n    def __init__(self):\n        self.W = np.ones(3)\n\n"
        "    def f(self, g):\n        self.W = self.W * 0.99\n        return g * self.W\n\n"
        "c = C()\nfirst = c.W  # the old array, held here too\n"
        "cv.capture(c.f, cv.spec(3, \"float64\"))"),
    Situation(
        "kept_in_container", "unsupported_op",
        _call_is("a capture tensor kept in a container"),
        "{operand} keeps a value of the capture",
        "capviz cannot record it: the value is computed from the data (an input, a state, a "
        "draw, an array from outside), so the capture cannot know what a call leaves in that "
        "list, dict or cache, and a replay cannot store into one ({reason_why}).",
        "return the value and store what the replay returns, or keep it in an ndarray the call "
        "writes in place (buf[...] = value), which the capture records as a state.",
        "import functools\n\n\ndef f(cache, x):\n    cache.append(x * 2.0)\n"
        "    return x + 1.0\n\n\ncv.capture(functools.partial(f, []), cv.spec(3, \"float64\"))"),
    Situation(
        "logged_python_value", "unsupported_op",
        _call_is("a Python value logged by the call"),
        "{operand} is given a Python value that a replay would not log as the call does",
        "capviz replays a Python value the call logs as the value the capture logged, the same "
        "at every replay, and {reason_why}.",
        "log it outside the captured function, after each replay, or log a value the capture "
        "computes from the data (a tensor: x.sum()).",
        "import time\n\nSTAMPS = []\n\n\ndef f(x):\n    STAMPS.append(time.perf_counter())\n"
        "    return x + 1.0\n\ncv.capture(f, cv.spec(3, \"float64\"))"),
    Situation(
        "updated_by_method", "unsupported_op",
        _call_is("an attribute of an object the call updates by its method"),
        "{operand} is updated by a method of its object, which the call calls",
        "capviz cannot record it: a replay computes values and cannot update a Python object "
        "from them, so each replay would leave the object as the capture found it "
        "({reason_why}).",
        "{reason_fix}",
        "class Meter:\n    def __init__(self):\n        self.sum = 0.0\n        self.count = 0\n\n"
        "    def update(self, v):\n        self.sum += v\n        self.count += 1\n\n\n"
        "METER = Meter()\n\n\ndef f(x):\n    METER.update(x.sum())\n    return x + 1.0\n\n"
        "cv.capture(f, cv.spec(3, \"float64\"))"),
    Situation(
        "logged_twice", "unsupported_op", _call_is("one list or dict the call logs twice"),
        "{operand} is given one list or dict holding values of the capture that the call logs "
        "{reason_why}",
        "capviz cannot log it as the call does: each replay builds what it logs anew, so it "
        "would log two lists or dicts where the call logs one object twice.",
        "log a new one each time (the second a copy: dict(rec), list(rec)), or log it once.",
        "A, B = [], []\n\n\ndef f(x):\n    rec = {\"loss\": x.sum()}\n    A.append(rec)\n"
        "    B.append(rec)\n    return x + 1.0\n\ncv.capture(f, cv.spec(3, \"float64\"))"),
    Situation(
        "made_at_key", "unsupported_op",
        _call_is("a list or dict the call makes at a key it asks for"),
        "{operand} is given a new list or dict at a key that held nothing, and later calls add "
        "to it",
        "capviz cannot log it as the calls do: each replay would make it anew where a later "
        "call adds to the one the first call made ({reason_why}).",
        "{reason_fix}",
        "HIST = {}\n\n\ndef f(x):\n    HIST.setdefault(\"loss\", []).append(x.sum())\n"
        "    return x + 1.0\n\ncv.capture(f, cv.spec(3, \"float64\"))"),
    Situation(
        "logged_read_number", "unsupported_op",
        _call_is("a number read from a tensor logged by the call"),
        "{operand} is given a Python number read from a tensor",
        "capviz cannot log it as the call does: {reason_why}.",
        "{reason_fix}",
        "LOSSES = []\n\n\ndef f(x):\n    loss = x.sum()\n    value = loss.item()\n"
        "    LOSSES.append(value)\n    return x + 1.0\n\ncv.capture(f, np.ones(3))"),
    Situation(
        "raised_on_mark", "unsupported_op",
        _call_is("an error raised while a state held the capture's NaN mark"),
        "raised an error while {operand} held the capture's NaN mark",
        "capviz cannot record it: after the capture's first write into {operand} its memory "
        "holds a NaN mark until the capture ends, so what NumPy computes from it there is NaN, "
        "and this line raised {reason_why} (if that error is not about {operand}, it is the "
        "function's own: see its cause).",
        "make the read meet a tensor, so the capture records it (read the written array through "
        "an op with a tensor), or compute the number from a replay's outputs.",
        "W = np.ones(3)\n\ndef f(x):\n    np.add(W, x, out=W)\n    return x * int(W.sum())\n\n"
        "with cv.CaptureDevice().capture_scope() as scope:  # one capture: the NaN mark\n"
        "    scope.output(f(scope.input(\"x\", (3,), \"float64\")))"),
    Situation(
        "stored_plain", "unsupported_op",
        _call_is("a write NumPy made into an array the capture wrote"),
        "NumPy's own operators wrote {array} after the capture's write into it",
        "capviz cannot record it: the line gives NumPy the ndarray itself, not the tensor the "
        "capture records for it, so NumPy wrote its memory unseen and no replay would make "
        "that write ({reason_why}).",
        "{reason_fix}",
        "class C:\n    def __init__(self):\n        self.W = np.linspace(-1.0, 1.0, 4)\n\n"
        "    def f(self, g):\n        self.W -= 0.1 * g\n"
        "        np.clip(self.W, -0.5, 0.5, out=self.W)\n        return g * 1.0\n\n"
        "cv.capture(C().f, cv.spec(4, \"float64\"))"),
    Situation(
        "refused_call", "unsupported_op", lambda f: True,
        "{call} is not supported by capviz",
        "capviz cannot record it: {reason_why}.",
        "{reason_fix}",
        "def f(x):\n    return np.unique(x)\n\ncv.capture(f, cv.spec(4))"),
]
"""Every situation of a failed capture, in the order they are tried (specific before general;
the last row of each kind applies to every failure of that kind)."""


def situation(failure: Failure) -> Situation:
    """The first row of :data:`SITUATIONS` of ``failure.kind`` that applies to ``failure``."""
    for row in SITUATIONS:
        if row.kind == failure.kind and row.applies(failure):
            return row
    raise LookupError(f"no situation of kind {failure.kind!r} (the last row of a kind applies "
                      "to every failure)")


def explain(failure: Failure, row: Situation | None = None) -> str:
    """The message of ``failure``: at most three lines (what the user wrote, at their line;
    why capviz cannot record it; the one fix)."""
    row = row or situation(failure)
    values = failure.fields()
    where = format_source(failure.source)
    head = f"`{failure.code.text}`" if failure.code.text else failure.call
    what = row.what.format_map(values)
    if failure.operand and "{operand}" not in row.what and "{call}" not in row.what \
            and failure.kind == "data_read":
        what += f" ({failure.call} of {failure.operand})"
    lines = [f"{head}{f' at {where}' if where else ''}: {what}.",
             row.why.format_map(values)]
    fix = row.fix.format_map(values)
    if fix:
        lines.append("Fix: " + fix)
    return "\n".join(lines)


def failure_here(kind: str, call: str, operand: str = "", source: Source | None = None,
                 inside: str | None = None, reason: str = "",
                 frame: FrameType | None = None) -> Failure:
    """A :class:`Failure` at the user's line: ``frame`` (else the innermost frame outside capviz
    and NumPy) gives the code; ``source`` defaults to that frame's."""
    if frame is None:
        frame = user_frame(sys._getframe(1))
    if source is None:
        source = source_of(frame)
    return Failure(kind, call, operand, source, user_code(frame), inside, reason)


def data_read_message(call: str, what: str, source: Any, inside: str | None = None,
                      frame: FrameType | None = None, examples: bool = False) -> str:
    """Message of a ``data_read`` violation: ``call`` read tensor ``what`` (as the graph shows
    it) at ``source``; ``inside``: the NumPy function that converted the tensor; ``examples``:
    the capture has example values for it (see :attr:`Failure.examples`)."""
    if frame is None:
        frame = user_frame(sys._getframe(1))
    failure = failure_here("data_read", call, what, source, inside, frame=frame)
    if examples:
        failure = dataclasses.replace(failure, examples=True)
    return explain(failure)


def unsupported_message(call: str, source: Any, reason: str = "",
                        frame: FrameType | None = None) -> str:
    """Message of an ``unsupported_op`` violation (``reason``: why, and what to write)."""
    if frame is None:
        frame = user_frame(sys._getframe(1))
    return explain(failure_here("unsupported_op", call, "", source, reason=reason, frame=frame))


def catalogue() -> str:
    """The situations as Markdown, for ``docs/guide/messages.md`` (``docs/gen_messages.py``)."""
    out = []
    for row in SITUATIONS:
        fix = row.fix or "(given by the refusal)"
        out += [f"### `{row.name}` ({row.kind})", "",
                f"- **what you wrote:** {row.what}",
                f"- **why:** {row.why}",
                f"- **fix:** {fix}", "",
                "```python", "try:", textwrap.indent(row.example, "    "),
                f"except cv.{ERROR_TYPES[row.kind].__name__} as err:",
                "    what, why, *fix = str(err).splitlines()",
                f"    assert why.startswith({row.why.split('{')[0]!r})", "```", ""]
    return "\n".join(out)


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


def bound_draw_message(generator: str, example: str, source: Any) -> str:
    """A draw from a global generator through a name bound before the capture that the scope
    could not rebind (its state changed with no hooked call): not a reseed, its own message."""
    return (f"{generator} changed with no call capviz saw{_where(source)}: a draw through a "
            f"function bound before the capture ({example} where the scope cannot rebind it), "
            "or an assignment to its state; no replay would repeat it.\n"
            "Fix: call it through its module (np.random.rand(...)), or bind it at the top of "
            "the captured function's module, where the scope rebinds it")
