"""A read of a tensor's value on a line that logs it (``losses.append(loss.item())``,
``hist["loss"] = float(loss)``, ``ppl.append(math.exp(loss))``): the value goes into a container
of the user's, nothing branches on it. A guard (a capture with an example) would hold the
capture's value and refuse every replay on other data as "another branch" (review 8, finding
18), and a spec capture's fix ("capture with an example") leads there. The one fix that applies
is to log the tensor itself: each replay logs NumPy's scalar of its value
(:mod:`capviz.trace.effects`). :func:`logging_fix` says whether the read's line logs, and the
line as it should be written."""

from __future__ import annotations

import linecache
import re
from typing import Any

from capviz.core.guards import READS

_TARGET = r"[A-Za-z_][\w.]*(?:\[[^\]]*\])*"
_LOGS = re.compile(rf"(?<![\w.])(?:{_TARGET})\s*\.\s*(?:append|extend|appendleft|insert)\s*\(")
"""A line logging into a list or deque (``self.losses.append(``, ``hist["loss"].append(``)."""
_STORES = re.compile(rf"^\s*{_TARGET}\[[^\]]*\]\s*=(?!=)")
"""A line storing into an item (``hist["loss"] = ...``, ``losses[i] = ...``)."""
_MATH = re.compile(r"(?<![\w.])math\.(exp|log|log2|log10|log1p|expm1|sqrt|sin|cos|tan|tanh)\(")
_WRAPS = re.compile(r"(?<![\w.])(?:float|int|complex)\(")
_CASTS = re.compile(r"(?<![\w.])(?:np|numpy)\.(float16|float32|float64|int8|int16|int32|int64|"
                    r"uint8|uint16|uint32|uint64|bool_|complex64|complex128)\(")


def logging_fix(call: str, source: Any) -> str | None:
    """The line at ``source`` written to log the tensor in place of ``call``'s Python value
    (``losses.append(loss)``), where that line logs into a container; ``None`` otherwise."""
    if call not in READS or call in ("bool()", "operator.index()", ".tolist()") or not source:
        return None
    text = linecache.getline(source[0], source[1]).split("#", 1)[0].strip()
    if not text or text.startswith(("if ", "elif ", "while ", "assert ", "return ")) or \
            not (_LOGS.search(text) or _STORES.search(text)):
        return None
    return unwrapped(text)


def unwrapped(text: str) -> str:
    """Line ``text`` with each read of a Python number from a tensor taken away (``.item()``,
    ``float(...)``, ``int(...)``; ``math.exp(`` as ``np.exp(``): what keeps the tensor."""
    fixed = re.sub(r"\.item\(\s*\)", "", text)
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
