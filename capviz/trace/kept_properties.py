"""Plain properties over a kept Python number: ``s`` whose getter is ``return self._s`` and
whose setter is ``self._s = value`` and nothing else (the usual way to expose a number an
object keeps). ``self.s += v`` reads and binds ``self._s`` only, so the kept number is
``self._s`` (:mod:`capviz.trace.kept_numbers` follows ``self.s`` there); a property that
does anything else (a check, a conversion, a second attribute) is not followed."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

from capviz.core.source import library_type

_FOUND: dict[Any, str | None] = {}  # property -> the attribute it stands for (None: not plain)


def backing(kind: type, name: str) -> str | None:
    """The instance attribute that property ``name`` of class ``kind`` reads and binds where
    it is plain (see the module docstring), else ``None``."""
    if library_type(kind):
        return None
    prop = next((vars(k)[name] for k in kind.__mro__ if name in vars(k)), None)
    if type(prop) is not property or prop.fget is None or prop.fset is None or \
            prop.fdel is not None:
        return None
    if prop not in _FOUND:
        if len(_FOUND) > 256:
            _FOUND.clear()
        got, put = _getter(prop.fget), _setter(prop.fset)
        _FOUND[prop] = got if got is not None and got == put and got != name else None
    return _FOUND[prop]


def _tree(function: Any) -> ast.FunctionDef | None:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    body = tree.body[0] if tree.body else None
    return body if isinstance(body, ast.FunctionDef) else None


def _body(tree: ast.FunctionDef) -> list[ast.stmt]:
    """Its statements, a docstring left out."""
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
            type(body[0].value.value) is str:
        body = body[1:]
    return body


def _getter(function: Any) -> str | None:
    """``x`` where ``function`` is ``def s(self): return self.x``."""
    tree = _tree(function)
    if tree is None or len(tree.args.args) != 1 or tree.args.vararg or tree.args.kwarg:
        return None
    body = _body(tree)
    me = tree.args.args[0].arg
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return None
    return _attribute_of(body[0].value, me)


def _setter(function: Any) -> str | None:
    """``x`` where ``function`` is ``def s(self, value): self.x = value``."""
    tree = _tree(function)
    if tree is None or len(tree.args.args) != 2 or tree.args.vararg or tree.args.kwarg:
        return None
    body = _body(tree)
    me, value = (a.arg for a in tree.args.args)
    if len(body) != 1 or not isinstance(body[0], ast.Assign) or len(body[0].targets) != 1 or \
            not isinstance(body[0].value, ast.Name) or body[0].value.id != value:
        return None
    return _attribute_of(body[0].targets[0], me)


def _attribute_of(node: Any, me: str) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == me:
        return node.attr
    return None
