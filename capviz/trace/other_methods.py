"""The user's line where NumPy wrote an outside array in a method of another object.

``cv.capture(model.train_step)`` where ``train_step`` calls ``self.opt.update(grads)``, whose
``self.t += 1`` (a 0-d ndarray) NumPy writes without meeting a tensor, or ``ema.update(params)``
whose ``self.shadow[k] -= (1 - self.decay) * (self.shadow[k] - v)`` reads the arrays the
capture writes through NumPy (stop 35's census, finding (c)): the array's label
(``self.opt.t``, ``ema.shadow['w']``) names the object that holds it, and :func:`line` finds
the statement of that object's class that writes it in place, in the method's own names
(``self.t``, ``self.shadow[k]``), so the refusal stands at the line the user must change.

:func:`loop_items` names what such a line reads that the method takes from a container it is
given (``v`` of ``for k, v in params.items()``), which a fix may read through ``cv.constant``.

Everything here reads source text and plain attributes: nothing of the user's is called.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

from capviz.core.source import display_file, interpreters_type
from capviz.trace import recapture, state_fixes
from capviz.trace.recapture import entry_spaces

_LOOPS = ("items", "values", "zip", "enumerate")
"""The iterables whose loop targets are items of a container (``for k, v in d.items()``)."""


def line(fn: Callable, label: str) -> tuple[Any, str]:
    """``((file, line, method), code)`` of the statement of a method of the object that holds
    ``label`` (``self.opt`` of ``self.opt.t``, ``ema`` of ``ema.shadow['w']``), other than
    ``fn``'s own ``self`` and other than ``__init__``, that writes the array in place (``self.t
    += 1``, ``self.shadow[k] -= ...``), or ``(None, "")``."""
    try:
        node = ast.parse(label, mode="eval").body
    except SyntaxError:
        return None, ""
    chain = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        chain.append(node)
        node = node.value
    own = getattr(fn, "__self__", None)
    for part in chain:  # the innermost owner first (self.opt of self.opt.t)
        if not isinstance(part, ast.Attribute):
            continue
        owner = _value(part.value, fn)
        if owner is None or owner is own or inspect.ismodule(owner):
            continue
        hits = _writing(type(owner), f"self.{part.attr}")
        if hits:  # the method fn's code calls by name first (update, not reset)
            called = _names(fn)
            return next((hit for hit in hits if hit[0][2] in called), hits[0])
    return None, ""


def _names(fn: Callable) -> set[str]:
    """The attribute and global names ``fn``'s code (and the code nested in it) uses."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None) or getattr(
        vars(type(fn)).get("__call__"), "__code__", None)  # (a callable object)
    names: set[str] = set()
    stack = [code] if code is not None else []
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack += [c for c in code.co_consts if inspect.iscode(c)]
    return names


def _value(expr: ast.AST, fn: Callable) -> Any:
    """The object ``expr`` (a name, attributes, constant keys) names where ``fn`` runs, or
    ``None``."""
    if isinstance(expr, ast.Name):
        if expr.id == "self":
            return getattr(fn, "__self__", None)
        for space in entry_spaces(fn):
            if expr.id in space:
                return space[expr.id]
        return None
    if isinstance(expr, ast.Attribute):
        base = _value(expr.value, fn)
        return None if base is None else inspect.getattr_static(base, expr.attr, None)
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        base = _value(expr.value, fn)
        if type(base) in (dict, list, tuple):
            try:
                return base[expr.slice.value]
            except (KeyError, IndexError, TypeError):
                return None
    return None


def _writing(cls: type, name: str) -> list[tuple[Any, str]]:
    """For each method of ``cls`` (its MRO, ``__init__`` aside, an override before what it
    overrides), its first statement that writes the array ``name`` (``self.t``) in place."""
    hits: list[tuple[Any, str]] = []
    seen: set[str] = set()
    for klass in cls.__mro__:
        if interpreters_type(klass):
            continue
        for method, function in vars(klass).items():
            if method == "__init__" or method in seen or not inspect.isfunction(function):
                continue
            seen.add(method)
            try:
                lines, start = recapture.source_lines(function)
            except (OSError, TypeError):
                continue
            for offset, text in enumerate(lines):
                code = _body(text.strip())
                if code and state_fixes.state_expression(code) == name:
                    hits.append(((display_file(function.__code__.co_filename), start + offset,
                                  function.__code__.co_name), code))
                    break
    return hits


def _body(code: str) -> str:
    """A line's statement without its comment: the body of a one-line method too (``def
    update(self): self.t += 1``)."""
    if code.startswith("def ") and not code.endswith(":"):
        _, colon, body = code.partition("):")
        if colon and state_fixes.statement(body.strip()) is not None:
            code = body.strip()
    stmt = state_fixes.statement(code)
    return code if stmt is None else code[:stmt.end_col_offset]


def loop_items(source: Any, text: str) -> list[str]:
    """The names ``text`` (a statement of ``source``'s method) reads in its value that the
    method binds as items of a container it loops over (``v`` of ``for k, v in
    params.items()``, of ``for p, g in zip(...)``)."""
    stmt = state_fixes.statement(text)
    value = getattr(stmt, "value", None)
    if value is None:
        return []
    keys = {id(n) for sub in ast.walk(value) if isinstance(sub, ast.Subscript)
            for n in ast.walk(sub.slice)}  # (k of self.shadow[k]: a key, not an array)
    read = {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and id(n) not in keys}
    bound: list[str] = []
    for _, code in state_fixes.function_lines(source[0], source[1], source[2]):
        if not code.startswith("for ") or not code.endswith(":"):
            continue
        loop = state_fixes.statement(code + " pass")
        if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call):
            continue
        called = loop.iter.func
        name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
        if name in _LOOPS:
            bound += [n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)]
    return [name for name in dict.fromkeys(bound) if name in read]
