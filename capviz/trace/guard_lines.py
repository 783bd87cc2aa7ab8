"""The user's line that read each place a guard of :mod:`capviz.trace.guards_python` holds: the
first line of ``fn`` naming the place, else the first line of a function the code reaches or of a
method of the object's class naming the attribute, else ``fn``'s ``def`` line (with no source
text, the line of the first instruction loading the name)."""

from __future__ import annotations

import dis
import linecache
import re
import types
from collections.abc import Callable
from typing import Any

from capviz.trace import code_reach, recapture
from capviz.trace.fn_lines import body, label_pattern, line_at
from capviz.trace.places import function_of


class Lines:
    """The lines of ``fn``, of the functions the code it reaches runs and of its objects'
    classes, each read once when first searched, searched for the line that reads a place."""

    def __init__(self, fn: Callable, functions: list, source: tuple | None = None) -> None:
        self.own = _source_of(function_of(fn)[1]) if source is None else \
            (source[0], source[2], body(source[1]))
        self.sources: dict[Any, tuple | None] = {}
        if source is not None:  # (a scope's block: inspect would not find its lines)
            self.sources[function_of(fn)[1]] = self.own
        self.code = getattr(function_of(fn)[1], "__code__", None)
        self.functions = functions  # (the reached ones: helpers, properties, __call__...)
        self.classes: dict[type, list] = {}
        self.loads: dict[Any, dict[str, int]] = {}  # code -> the first line loading each name

    def reading(self, label: str, holder: Any, key: Any) -> Any:
        """``(file, line, function)`` of the first line that names ``label`` in ``fn`` (the
        container of ``len(...)``, ``.keys()``), else names ``key`` (an attribute, a global)
        in ``fn``, in a function the code reaches or in a method of ``holder``'s class (a
        line that writes it skipped), else ``fn``'s ``def`` line."""
        shaped = _DERIVED.match(label)  # (len(self.layers): the line naming self.layers)
        inner = label if shaped is None else next(g for g in shaped.groups() if g)
        if self.own is not None:
            mention = re.compile(rf"(?<![\w.]){label_pattern(inner)}(?![\w])")
            written = re.compile(rf"^{label_pattern(inner)}\s*=(?!=)")  # (a write: not it)
            found = _first(self.own, mention, written)
            if found is not None:
                return found
        if type(key) is str and key.isidentifier() and inner == label:
            named = re.compile(rf"(?<![\w]){re.escape(key)}(?![\w])")
            stored = re.compile(rf"^[\w.]*(?<![\w]){re.escape(key)}\s*=(?!=)")  # (a write)
            sources = [self.own] if self.own is not None else []
            sources += [self._source(f) for f in self.functions]
            if holder is not None and not isinstance(holder, (dict, list, types.ModuleType)):
                sources += self._methods(holder if isinstance(holder, type) else type(holder))
            for source in sources:
                found = source and _first(source, named, stored)
                if found is not None:
                    return found
        if self.own is not None:
            code, start, _ = self.own
            return line_at(code, start)
        return self._loading(key if type(key) is str and inner == label else None)

    def _loading(self, key: str | None) -> Any:
        """With no source text for ``fn`` (``exec(src, {})``, ``python -c``: review 9, finding
        24): the line of the first instruction of ``fn`` or a function its code reaches that
        loads the name ``key``, else ``fn``'s ``def`` line (its code's first line)."""
        codes = [code for code in (getattr(f, "__code__", None) for f in self.functions)
                 if code is not None]
        if self.code is not None:
            codes.insert(0, self.code)
        for code in codes if key is not None else ():
            loads = self.loads.get(code)
            if loads is None:
                loads = self.loads[code] = {}
                for instruction in dis.get_instructions(code):
                    if instruction.opname.startswith("LOAD_") and \
                            instruction.positions is not None and \
                            instruction.positions.lineno and type(instruction.argval) is str:
                        loads.setdefault(instruction.argval, instruction.positions.lineno)
            if key in loads:
                return line_at(code, loads[key])
        return None if self.code is None else line_at(self.code, self.code.co_firstlineno)

    def _source(self, function: Any) -> tuple | None:
        if function not in self.sources:
            self.sources[function] = _source_of(function)
        return self.sources[function]

    def _methods(self, kind: type) -> list:
        found = self.classes.get(kind)
        if found is None:
            found = self.classes[kind] = []
            if code_reach._users(kind):
                for function in code_reach._functions_of(kind):
                    source = self._source(function)
                    if source is not None:
                        found.append(source)
                found.sort(key=lambda f: f[0].co_name == "__init__")  # (it sets, others read)
        return found


_SOURCES: dict[Any, tuple] = {}  # code -> (its file's lines as read, its source or None)


def _source_of(function: Any) -> tuple | None:
    """``(code, first line, statements)`` of ``function``'s source, or ``None``; kept per code
    object while its file's lines (:mod:`linecache`) are the ones read (a capture in a loop
    reads each function once)."""
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    now = linecache.cache.get(code.co_filename)
    kept = _SOURCES.get(code)
    if kept is not None and now is not None and kept[0] is now:
        return kept[1]
    try:
        lines, start = recapture.source_lines(function)
    except (OSError, TypeError):
        found = None
    else:  # (lines of another file where the code's has none: exec'd code named like a
        found = (code, start, body(lines)) if any(  # module whose loader gives its source)
            f"def {code.co_name}" in line or "lambda" in line for line in lines[:8]) else None
    if len(_SOURCES) > 4096:
        _SOURCES.clear()
    _SOURCES[code] = (linecache.cache.get(code.co_filename), found)
    return found


_DERIVED = re.compile(r"^(?:len\((.+)\)|(.+)\.keys\(\)"
                      r"|(.+)\.(?:__defaults__|args|keywords\[.+\]))$")
"""A guard's label derived from a place's: its length, keys, a held function's defaults."""


def _first(source: tuple, pattern: Any, stored: Any = None) -> Any:
    """The source of the first statement of ``source`` ``(code, start, statements)`` that
    ``pattern`` finds (and ``stored``, a write, does not), or ``None``."""
    code, start, statements = source
    for offset, text in statements:
        for part in text.split(";"):  # (a; b on one line: a write of it is not a read)
            if pattern.search(part) and (stored is None or not stored.search(part.strip())):
                return line_at(code, start + offset)
    return None
