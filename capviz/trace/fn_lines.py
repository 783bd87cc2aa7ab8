"""The lines of a captured function that read, name or write a place (``self.log``,
``bn["running_mean"]``), found in its source: where a refusal about that place points."""

from __future__ import annotations

import dis
import re
import types
from collections.abc import Callable
from typing import Any

from capviz.core.source import display_file
from capviz.trace import recapture
from capviz.trace.places import function_of
from capviz.trace.recapture import line_code


def label_pattern(label: str) -> str:
    """A regular expression of the path ``label`` as code may spell it: a string key written
    with either quote (``self.stats['n']`` is ``self.stats["n"]`` in the user's line: hostile
    review 6, finding 8, the refusal fell back to the ``cv.capture`` line)."""
    parts = re.split(r"\[('(?:[^'\\]|\\.)*')\]", label)
    pattern = []
    for k, part in enumerate(parts):
        if k % 2 == 0:
            pattern.append(re.escape(part))
        else:
            text = part[1:-1]
            pattern.append(rf"\[\s*(?:'{re.escape(text)}'|\"{re.escape(text)}\")\s*\]")
    return "".join(pattern)



_GROWING = r"\.(?:append|extend|appendleft|extendleft|insert)\("
"""The calls that grow a list or deque without reading it."""



def source_lines(fn: Callable) -> tuple[Any, list[str], int] | None:
    """``(code, lines, first line number)`` of ``fn``'s function, or ``None`` (no source)."""
    function = function_of(fn)[1]
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    try:
        lines, start = recapture.source_lines(function)
    except (OSError, TypeError):
        return None
    return code, lines, start



def line_at(code: Any, line: int) -> tuple[str, int, str]:
    """The ``(file, line, function)`` source of ``line`` in ``code``'s function."""
    return display_file(code.co_filename), line, code.co_name



def reading_line(fn: Callable, label: str) -> tuple[Any, str]:
    """``((file, line, function), code)`` of the first line of ``fn`` that reads the list or
    dict at path ``label`` (its length, an item, an iteration, its truth: anything but a call
    that grows it, ``label.append(...)``, or a store into an item), or ``(None, "")``, also
    where a line of ``fn`` empties it (``label.clear()``, ``label[:] = ...``)."""
    found = source_lines(fn)
    if found is None:  # no source text (python -c, exec, <stdin>): its bytecode (review 9 #13)
        code = getattr(function_of(fn)[1], "__code__", None)
        if code is None or not code_reads(code, label):
            return None, ""
        return line_at(code, code.co_firstlineno), ""
    code, lines, start = found
    name = label_pattern(label)
    mention = re.compile(rf"(?<![\w.]){name}(?!\w)")
    growing = re.compile(rf"(?<![\w.]){name}{_GROWING}")
    stored = re.compile(rf"^(?<![\w.]){name}\s*\[[^\]]*\]\s*=(?!=)")
    cleared = re.compile(rf"(?<![\w.]){name}\.clear\(\s*\)|^{name}\s*\[\s*:\s*\]\s*=(?!=)"
                         rf"|^del\s+{name}\s*\[\s*:\s*\]")
    statements = body(lines)  # (a one-line def's too: def step(self, x): self.log.append(...))
    if any(cleared.search(text) for _, text in statements):
        return None, ""  # a scratch list each call empties (self.acts.clear()): its reads
        #                  see this call's items only (hostile review 6, finding 23)
    for offset, text in statements:  # (not the def line, but a body on it)
        rest = stored.sub("", growing.sub("(", text))
        if mention.search(rest) and not _message_only(text, lines[offset + 1:]):
            return line_at(code, start + offset), text
    return None, ""


_GROWS = frozenset(("append", "extend", "appendleft", "extendleft", "insert"))
_LOADS = frozenset(("LOAD_ATTR", "LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_FAST",
                    "LOAD_CLASSDEREF"))


def code_reads(code: Any, label: str) -> bool:
    """Whether ``code`` (or a function or comprehension it holds) uses the list or dict at
    ``label`` (by its last name: ``hist`` of ``self.hist``) other than to grow it
    (``.append(...)``) or store an item with a constant key: for a function with no source
    text, whose lines cannot be read. Conservative: any other use reads it."""
    name = re.sub(r"\[.*$", "", label).rsplit(".", 1)[-1]
    instructions = list(dis.get_instructions(code))
    for k, ins in enumerate(instructions):
        if ins.opname not in _LOADS or ins.argval != name:
            continue
        after = instructions[k + 1:k + 3]
        if after and after[0].opname in ("LOAD_METHOD", "LOAD_ATTR") and \
                after[0].argval in _GROWS:
            continue
        if len(after) == 2 and after[0].opname == "LOAD_CONST" and \
                after[1].opname == "STORE_SUBSCR":
            continue
        return True
    return any(code_reads(const, label) for const in code.co_consts
               if isinstance(const, types.CodeType))


_ONE_LINER = re.compile(r"^\s*(?:async\s+)?def\s+\w+\s*\(.*\)\s*(?:->[^:]*)?:"
                        r"\s*(?P<body>[^#\s].*)$")
"""A ``def`` line holding its body (``def step(self, x): self.log.append(1); return x``)."""



_MESSAGE_ONLY = re.compile(
    r"^(?!.*:=)(?:_\s*=\s*(?:f?[\"'].*|str\(.*\)|repr\(.*\))"
    r"|(?:print|warnings\.warn|logging\.\w+|(?:self\.)?_?log(?:ger)?\.(?:debug|info|warning|"
    r"error|critical|exception|log))\(.*\))\s*$")
"""A line whose value reaches no number of the capture: a message made and dropped (``_ =
f"step {len(self.log)}"``), printed or logged (``print(...)``, ``logger.info(...)``); a read
of a grown list there changes no value the graph keeps (hostile review 6, listreads.py LogLen,
refused since 1620fb3). A walrus (``:=``) keeps the value: not such a line."""



def _message_only(text: str, after: list[str]) -> bool:
    """Whether line ``text`` is :data:`_MESSAGE_ONLY`, and where it binds ``_``, no line
    ``after`` it reads ``_`` (``self.W -= 0.001 * len(_) * x``: a number from the message,
    hostile review 7, finding 16)."""
    if not _MESSAGE_ONLY.match(text):
        return False
    return not text.startswith("_") or not any(
        _UNDERSCORE.search(line_code(line)) for line in after)



_UNDERSCORE = re.compile(r"(?<![\w.'\"])_(?![\w'\"])")



def naming_line(fn: Callable, label: str) -> tuple[Any, str]:
    """``((file, line, function), code)`` of the first line of ``fn`` that names the longest
    owner on the path ``label`` (``self.sched`` of ``self.sched.i``, which ``next(self.sched)``
    changes in a method of another object: hostile review 6, finding 8), or ``(None, "")``."""
    found = source_lines(fn)
    if found is None:
        return None, ""
    code, lines, start = found
    owners = [label[:k] for k in range(len(label), 0, -1)
              if k == len(label) or label[k] in ".["]
    for owner in owners[1:]:
        if owner == "self":
            break
        name = re.compile(rf"(?<![\w.]){label_pattern(owner)}(?![\w])")
        for offset, text in body(lines):
            if name.search(text):
                return line_at(code, start + offset), text
    return None, ""


def body(lines: list[str]) -> list[tuple[int, str]]:
    """``(offset, code)`` of the lines of a function's source after its ``def`` line, and of the
    body a one-line ``def`` holds (``def step(self, x): self.log.append(1); return x``)."""
    body = [(offset, line_code(line)) for offset, line in enumerate(lines[1:], 1)]
    one_line = _ONE_LINER.match(lines[0]) if lines else None
    if one_line is not None:
        body.insert(0, (0, one_line["body"].strip()))
    return body



def writing_line(fn: Callable, label: str, unpacked: bool = False) -> tuple[Any, str]:
    """``((file, line, function), code)`` of the first line of ``fn`` that writes ``label``
    (``label op= ...``, ``label[...] = ...``, ``out=label``; ``unpacked``: also one of the
    targets of ``a, label = ...``), or ``(None, "")``."""
    found = source_lines(fn)
    if found is None:
        return None, ""
    code, lines, start = found
    name = label_pattern(label)
    target = re.compile(rf"^{name}\s*(?:\[.*\]\s*)?(?:\*\*|//|>>|<<|[-+*/%@&|^])?=(?!=)"
                        rf"|\bout\s*=\s*\(?{name}\b(?![.\[])" + (
                            rf"|^[^=]*,\s*{name}\s*(?:,[^=]*)?=(?!=)"
                            rf"|^\(?{name}\s*,[^=]*=(?!=)" if unpacked else ""))
    for offset, text in body(lines):
        if any(target.search(part.strip()) for part in text.split(";")):  # (a; b on one line)
            return line_at(code, start + offset), text
    return None, ""


def reads_itself(text: str, label: str) -> bool:
    """Whether a statement of line ``text`` updates ``label`` in place (``m["loss"] += loss``)
    or reads it, or the container holding it, right of its ``=`` (``ema = 0.9 * ema + ...``,
    ``m["loss"] = m.get("loss", 0.0) + loss``): a running value, not a result logged there
    (review 8, finding 13: silent)."""
    name = label_pattern(label)
    holder = label_pattern(label.rsplit("[", 1)[0]) if label.endswith("]") else None
    one_line = _ONE_LINER.match(text)
    if one_line is not None:  # (def step(self, x): m["loss"] += x.sum(); return x)
        text = one_line["body"]
    for part in text.split(";"):
        part = part.strip()
        if re.search(rf"(?:^|:\s*){name}\s*(?:\*\*|//|>>|<<|[-+*/%@&|^])=(?!=)", part):
            return True  # (if k: m["loss"] += v too)
        _, equals, right = part.partition("=")
        if equals and (re.search(rf"(?<![\w.]){name}(?!\w)", right) or (
                holder and re.search(rf"(?<![\w.]){holder}(?![\w\[])", right))):
            return True
    return False
