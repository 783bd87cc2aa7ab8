"""A read of a tensor's value on a line that logs it (``losses.append(loss.item())``,
``hist["loss"] = float(loss)``, ``ppl.append(math.exp(loss))``, ``self.hist += [loss.item()]``):
the value goes into a container of the user's, nothing branches on it. A guard (a capture with
an example) would hold the capture's value and refuse every replay on other data as "another
branch" (review 8, finding 18), and a spec capture's fix ("capture with an example") leads
there. The one fix that applies is to log the tensor itself: each replay logs NumPy's scalar of
its value (:mod:`capviz.trace.effects`). :func:`logging_fix` says whether the read is the value
a line logs (not a size or an index inside it: ``hist.append(x[:int(n)])`` reads ``n`` for a
slice; review 9, finding 9), and the fix."""

from __future__ import annotations

import linecache
import re
from typing import Any

from capviz.core.guards import READS

_CALLS = re.compile(r"\.\s*(?:append|extend|appendleft|insert)\s*\(")
"""A call logging into a list or deque (``losses.append(``, ``d.setdefault(k, []).append(``)."""
_PRINTS = re.compile(r"(?<![\w.])print\s*\(")
_EXTENDS = re.compile(r"^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])*\s*\+=\s*(?=[\[(])")
"""``self.hist += [loss.item()]``: the list extended by a list or tuple."""
_STORES = re.compile(r"^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])*\[[^\]]*\]\s*=(?!=)\s*")
"""A line storing into an item (``hist["loss"] = ...``, ``losses[i] = ...``): its right side."""
_MATH = re.compile(r"(?<![\w.])math\.(exp|log|log2|log10|log1p|expm1|sqrt|sin|cos|tan|tanh)\(")
_WRAPS = re.compile(r"(?<![\w.])(?:float|int|complex|bool)\(")
_CASTS = re.compile(r"(?<![\w.])(?:np|numpy)\.(float16|float32|float64|int8|int16|int32|int64|"
                    r"uint8|uint16|uint32|uint64|bool_|complex64|complex128)\(")


def logging_fix(call: str, source: Any, code: str = "") -> str | None:
    """The fix for ``call``'s read (its expression: ``code``) at ``source`` where it is a value
    the line logs into a container (the line written to log the tensor), or prints; ``None``
    where the line does not, or the read is a size or an index of what it logs."""
    if call not in READS or call == "operator.index()" or not source or not code:
        return None
    line = linecache.getline(source[0], source[1]).rstrip("\n")
    at = line.find(code)
    if at < 0 or line.find(code, at + 1) >= 0:
        return None  # (not seen once on the line: the statement goes on, or is read twice)
    text, at = _statement(line, at)
    spans = [(m.end(), _closing(text, m.end())) for m in _CALLS.finditer(text)]
    extended = _EXTENDS.match(text)
    stored = _STORES.match(text)
    spans += [(m.end(), len(text)) for m in (extended, stored) if m is not None]
    if any(start <= at and (end is None or at + len(code) <= end) and
           not _subscripted(text, start, at) for start, end in spans):
        fixed = unwrapped(text.strip())
        if extended is not None:  # (self.hist += [loss] reads the list it grows: extend it)
            target, _, value = fixed.partition("+=")
            fixed = f"{target.strip()}.extend({value.strip()})"
        return f"log the tensor itself: {fixed} ({_LOGS_AS.get(call, _SCALAR)})"
    printed = next((m for m in _PRINTS.finditer(text) if m.end() <= at and
                    (_closing(text, m.end()) or len(text)) >= at + len(code)), None)
    if printed is not None and not _subscripted(text, printed.end(), at):
        return ("print after the replay: return the value from the function (return out, "
                "loss) and print the replay's value of it (a capture's print runs once, when "
                "it is captured)")
    return None


_SCALAR = ("each replay logs NumPy's scalar of its value, np.float64, which is a float; take "
           "float() of it after the replay where a Python float is needed")
_LOGS_AS = {
    ".tolist()": "each replay logs a new ndarray of its values; take .tolist() of it after the "
                 "replay where a list is needed",
    "bool()": "each replay logs NumPy's bool, np.bool_; take bool() of it after the replay where "
              "a Python bool is needed",
    "int()": "each replay logs NumPy's integer scalar; take int() of it after the replay where a "
             "Python int is needed",
}

_DEF = re.compile(r"^\s*(?:async\s+)?def\s+\w+\s*\(.*?\)\s*(?:->[^:]+)?:\s*")


def _statement(line: str, at: int) -> tuple[str, int]:
    """The statement of ``line`` holding position ``at`` (``a; b`` split, a one-line def's
    ``def f(x):`` left out), with ``at`` in it."""
    start = 0
    for part in line.split(";"):
        end = start + len(part)
        if start <= at < end:
            head = _DEF.match(part)
            cut = head.end() if head is not None and head.end() <= at - start else 0
            return part[cut:], at - start - cut
        start = end + 1
    return line, at


def kept(line: str, call: str) -> str:
    """The statement of ``line`` that reads a Python number with ``call`` (``value =
    loss.item()``), written to keep the tensor (``value = loss``)."""
    at = line.find(call[:-1] if call.startswith(".") else call[:-1] + "(")
    return unwrapped(_statement(line, max(at, 0))[0].strip())


def _subscripted(text: str, start: int, at: int) -> bool:
    """Whether position ``at`` of ``text`` lies inside a subscript (``x[: int(n)]``) opened at
    or after ``start``: a size or an index, not the value logged."""
    opened = []
    for k in range(start, at):
        if text[k] == "[":
            before = text[:k].rstrip()
            opened.append(bool(before) and (before[-1].isalnum() or before[-1] in "_])"))
        elif text[k] == "]" and opened:
            opened.pop()
    return any(opened)


def unwrapped(text: str) -> str:
    """Line ``text`` with each read of a Python number from a tensor taken away (``.item()``,
    ``.tolist()``, ``float(...)``, ``int(...)``, ``bool(...)``; ``math.exp(`` as ``np.exp(``,
    ``np.float32(v)`` as ``v.astype(np.float32)``): what keeps the tensor."""
    fixed = re.sub(r"\.(?:item|tolist)\(\s*\)", "", text)
    fixed = _MATH.sub(lambda m: f"np.{m[1]}(", fixed)
    while True:
        found = _WRAPS.search(fixed)
        if found is None:
            break
        inner = _closing(fixed, found.end())
        if inner is None:
            break
        fixed = fixed[:found.start()] + fixed[found.end():inner] + fixed[inner + 1:]
    while True:  # np.float32(loss): loss.astype(np.float32), NumPy's scalar as well
        found = _CASTS.search(fixed)
        inner = None if found is None else _closing(fixed, found.end())
        if inner is None:
            break
        value = fixed[found.end():inner].strip()
        value = value if re.fullmatch(r"[\w.]+(?:\([^()]*\))*", value) else f"({value})"
        fixed = f"{fixed[:found.start()]}{value}.astype(np.{found[1]}){fixed[inner + 1:]}"
    return fixed


def _closing(text: str, start: int) -> int | None:
    """The index of the ``)`` closing the parenthesis opened just before ``start``."""
    depth = 1
    for k in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return k
    return None
