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

import dis
import inspect
import linecache
import re
import types
from typing import Any

import numpy as np

from capviz.core.guards import READS

_CALLS = re.compile(r"\.\s*(?:append|extend|appendleft|insert)\s*\(")
"""A call logging into a list or deque (``losses.append(``, ``d.setdefault(k, []).append(``)."""
_PRINTS = re.compile(r"(?<![\w.])print\s*\(")
_EXTENDS = re.compile(r"^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])*\s*\+=\s*(?=[\[(])")
"""``self.hist += [loss.item()]``: the list extended by a list or tuple."""
_STORES = re.compile(r"^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])*\[[^\]]*\]\s*=(?!=)\s*")
"""A line storing into an item (``hist["loss"] = ...``, ``losses[i] = ...``): its right side."""
_EXPLICIT = re.compile(r"^(?:(?:float|int|bool|complex|math\.\w+|(?:np|numpy)\.\w+)\(.*\)|"
                       r".*\.(?:item|tolist)\(\s*\))$")
"""A read the user wrote (``float(loss)``, ``loss.item()``, ``math.exp(loss)``), not a truth test
or a size Python asked for."""
_MATH = re.compile(r"(?<![\w.])math\.(exp|log|log2|log10|log1p|expm1|sqrt|sin|cos|tan|tanh)\(")
_WRAPS = re.compile(r"(?<![\w.])(?:float|int|complex|bool)\(")
_CASTS = re.compile(r"(?<![\w.])(?:np|numpy)\.(float16|float32|float64|int8|int16|int32|int64|"
                    r"uint8|uint16|uint32|uint64|bool_|complex64|complex128)\(")


def logging_fix(call: str, source: Any, code: str = "", frame: Any = None) -> str | None:
    """The fix for ``call``'s read (its expression: ``code``) at ``source`` where it is a value
    the line logs into a container (the line written to log the tensor), or prints; ``None``
    where the line does not, or the read is a size or an index of what it logs."""
    if call not in READS or call == "operator.index()" or not source or not code or \
            not _EXPLICIT.match(code.strip()):
        return None  # (a truth test, x * 2 if np.any(x > c) else x - 1: a branch, a guard)
    line = linecache.getline(source[0], source[1]).rstrip("\n")
    at = line.find(code)
    if at < 0 or line.find(code, at + 1) >= 0:
        return None  # (not seen once on the line: the statement goes on, or is read twice)
    text, at = _statement(line, at)
    spans = [(m.end(), _closing(text, m.end())) for m in _CALLS.finditer(text)
             if not _made_here(text[:m.start()], frame)]
    extended = _extends(text)
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


_TOTAL = re.compile(r"^\s*(?P<target>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\s*(?P<op>[-+*])=(?!=)"
                    r"\s*(?P<rest>.+?)\s*$")
_BEST = re.compile(r"^\s*(?P<target>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\s*=\s*(?P<pick>min|max)\("
                   r"\s*(?P=target)\s*,\s*(?P<rest>.+?)\s*\)\s*$")


def total_fix(call: str, source: Any, code: str = "", operand: str = "") -> str | None:
    """The fix for ``call``'s read (its expression: ``code``) at ``source`` where the line adds
    it to (or takes the least or greatest of it and) a Python number an object keeps across
    calls: ``self.correct += int((pred == y).sum())``, ``self.best = min(self.best,
    float(loss))``: the number kept in a 0-d array the tensor itself is written into, which the
    capture records as a state (ruling 38 10:50's lifted numbers: refused with the fix that
    works); ``None`` where the line is no such update."""
    if call not in READS or call == "operator.index()" or not source or not code or \
            not _EXPLICIT.match(code.strip()):
        return None
    line = linecache.getline(source[0], source[1]).rstrip("\n")
    at = line.find(code)
    if at < 0 or line.find(code, at + 1) >= 0:
        return None
    text, at = _statement(line, at)
    if _extends(text):
        return None  # (self.hist += [loss.item()]: a log, logging_fix's)
    item = _item_for(call, code, operand)
    local = _LOCAL.match(text)
    if local is not None and item is not None and local["rest"].strip() == code.strip():
        target = _updated_by(local["name"], source, text)  # (v = float(loss); self.t += v:
        if target is None:                                 # review 12, finding 4)
            return None
        return (f"write {local['name']} = {item} for {code.strip()} (a replay updates {target} "
                "from it in Python's operators, as the call does)")
    total, best = _TOTAL.match(text), _BEST.match(text)
    found = total or best
    if found is None or at < found.start("rest") or at + len(code) > found.end("rest"):
        return None
    target, value = found["target"], unwrapped(found["rest"])
    if item is not None and value != code.strip():  # (self.total += float(loss) * n: R12 #3)
        rest = found["rest"].replace(code.strip(), item, 1)
        written = f"{target} {total['op']}= {rest}" if total is not None else \
            f"{target} = {best['pick']}({target}, {rest})"
        return (f"write {item} for {code.strip()}: {written} (a replay updates {target} from "
                ".item() in Python's operators, as the call does)")
    if value.startswith("(") and _closing(value, 1) == len(value) - 1:
        value = value[1:-1]  # (((pred == y).sum()): the whole value, unwrapped)
    as_float = ", dtype=float" if call == "float()" or (call == ".item()" and re.search(
        r"\(\w+, float", operand)) else ""  # (a meter reset to 0: an int,
    before = f"{target} = np.array({target}{as_float}) before the capture"  # which += float
    #                                               cannot update as an int64 array)
    if total is not None:
        return (f"keep {target} in a 0-d array and {total['op']}= the tensor itself: {before}, "
                f"then {target} {total['op']}= {value} (the capture records it as a state)")
    side = "<" if best["pick"] == "min" else ">"  # (Python's min(a, b): b if b < a else a,
    #                                              NaN and -0.0 alike: not np.minimum / fmin)
    return (f"keep {target} in a 0-d array written with the tensor itself: {before}, then "
            f"{target}[...] = np.where({value} {side} {target}, {value}, {target}) (the capture "
            "records it as a state)")


_LOCAL = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*=(?!=)\s*(?P<rest>.+?)\s*$")
_WRAPPED = re.compile(r"^(?:float|int)\((?P<inner>.+)\)$")
_CHAIN = re.compile(r"[A-Za-z_][\w.]*(?:\([^()]*\))*")


def _item_for(call: str, code: str, operand: str) -> str | None:
    """``loss.item()`` for the read ``float(loss)`` (``int(n)``) where ``.item()`` gives the
    same Python number (a float tensor's ``float()``, an integer tensor's ``int()``: its dtype
    read from ``operand``, ``%2 (mean, float64[])``), else ``None``."""
    wrapped = _WRAPPED.match(code.strip())
    dtype = re.search(r",\s*(\w+)\[", operand or "")
    if wrapped is None or dtype is None or call not in ("float()", "int()"):
        return None
    try:
        kind = np.dtype(dtype.group(1)).kind
    except TypeError:
        return None
    if kind not in ("f" if call == "float()" else "iu"):
        return None
    inner = wrapped["inner"].strip()
    return f"{inner}.item()" if _CHAIN.fullmatch(inner) else f"({inner}).item()"


def _updated_by(name: str, source: Any, text: str) -> str | None:
    """The target of the update of a kept number (``self.total += v``, ``self.best =
    min(self.best, v)``) that local ``name`` assigned on ``source``'s line (``text``) is read by,
    where every later line of its block that names it is one (read from the source)."""
    indent = len(text) - len(text.lstrip())
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
    target = None
    number = source[1] + 1
    while True:
        line = linecache.getline(source[0], number)
        if not line:
            break
        number += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if len(line) - len(line.lstrip()) < indent:
            break
        if not pattern.search(line):
            continue
        found = _TOTAL.match(line.rstrip("\n")) or _BEST.match(line.rstrip("\n"))
        if found is None or pattern.search(found["target"]) or \
                not pattern.search(found["rest"]):
            return None
        target = target or found["target"]
    return target


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


_METHOD = re.compile(r"(?<![\w.])(?P<owner>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\.(?P<method>\w+)\s*\(")
_PLAIN = (type(None), bool, int, float, complex, str)


def updated_object(frame: Any, code: str) -> tuple[str, str] | None:
    """``(owner, call)`` where read ``code`` on ``frame``'s line is an argument of a method of
    an object of Python values only (``self.meter.update(loss.item())``: an AverageMeter; review
    9, finding 20): no replay can update it, whatever the capture reads. The owner is found by
    name and attribute, read statically (no property runs)."""
    if frame is None or not code:
        return None
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).rstrip("\n")
    at = line.find(code)
    if at < 0:
        return None
    for found in _METHOD.finditer(line):
        end = _closing(line, found.end())
        if not found.end() <= at or end is None or at + len(code) > end:
            continue
        names = found["owner"].split(".")
        space = frame.f_locals if names[0] in frame.f_locals else frame.f_globals
        if names[0] not in space:
            continue
        value = space[names[0]]
        try:
            for name in names[1:]:
                value = inspect.getattr_static(value, name)
        except AttributeError:
            continue
        held = getattr(value, "__dict__", None)
        if isinstance(value, (type, types.ModuleType, types.FunctionType)) or \
                not isinstance(held, dict) or not held or \
                not all(isinstance(v, _PLAIN) or isinstance(v, np.generic) for v in held.values()):
            continue
        method = inspect.getattr_static(type(value), found["method"], None)
        code = getattr(method, "__code__", None)
        if code is None or not any(ins.opname == "STORE_ATTR" and ins.argval in held
                                   for ins in dis.get_instructions(code)):
            continue  # (a method that only computes: the read is a guard as before)
        return found["owner"], line[found.start():end + 1]
    return None


def kept(line: str, call: str) -> str:
    """The statement of ``line`` that reads a Python number with ``call`` (``value =
    loss.item()``), written to keep the tensor (``value = loss``)."""
    at = line.find(call[:-1] if call.startswith(".") else call[:-1] + "(")
    return unwrapped(_statement(line, max(at, 0))[0].strip())


def _made_here(target: str, frame: Any) -> bool:
    """Whether the list a call appends to (``target``: the text before ``.append(``) is a local
    of ``frame`` the function made (``out = []``; no parameter, nothing outside): it dies with
    the call, so what is appended to it is no log (review 9: the property test's
    ``out.append(x * float(x.sum() > c))``)."""
    name = re.search(r"([A-Za-z_]\w*)\s*$", target)
    if frame is None or name is None or not re.fullmatch(r"\s*[A-Za-z_]\w*\s*", target):
        return False
    code = frame.f_code
    parameters = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return name[1] in frame.f_locals and name[1] not in parameters and \
        name[1] not in code.co_cellvars


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
        value = fixed[found.end():inner].strip()
        value = value if re.fullmatch(r"[\w.]+(?:\([^()]*\)|\[[^\]]*\])*", value) else f"({value})"
        fixed = fixed[:found.start()] + value + fixed[inner + 1:]
    while True:  # np.float32(loss): loss.astype(np.float32), NumPy's scalar as well
        found = _CASTS.search(fixed)
        inner = None if found is None else _closing(fixed, found.end())
        if inner is None:
            break
        value = fixed[found.end():inner].strip()
        value = value if re.fullmatch(r"[\w.]+(?:\([^()]*\))*", value) else f"({value})"
        fixed = f"{fixed[:found.start()]}{value}.astype(np.{found[1]}){fixed[inner + 1:]}"
    return fixed


def _extends(text: str) -> re.Match | None:
    """``_EXTENDS``'s match where the value added is a list or tuple display and nothing else
    (``self.hist += [loss.item()]``), not a number in parentheses (``self.sum += (x **
    2).mean().item()``: an update of a number, R11 #10, which was refused as a log with a fix
    calling ``.extend`` on a float)."""
    found = _EXTENDS.match(text)
    if found is None:
        return None
    rest = text[found.end():].rstrip()
    depth = 0
    for k, char in enumerate(rest):
        depth += 1 if char in "([{" else -1 if char in ")]}" else 0
        if depth == 0:
            return found if k == len(rest) - 1 else None
    return None


def _closing(text: str, start: int) -> int | None:
    """The index of the ``)`` closing the parenthesis opened just before ``start``."""
    depth = 1
    for k in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return k
    return None
