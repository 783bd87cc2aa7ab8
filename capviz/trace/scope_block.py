"""The names a scope's ``with`` block uses, read from its source.

The scope form notes the outside arrays NumPy could carry a state's NaN mark into
(:mod:`capviz.trace.marked`). Walking every local and global of the frame that opened the scope
would copy or fingerprint every large array a notebook holds (a 400 MB data set: 0.9 ms ->
69-99 ms per capture, review 4, finding 6), though the block never names it. So the walk starts
from the names the block's own statements use (``m`` in ``scope.output(m.step(g))``, ``step``
for a closure), as :func:`capviz.trace.places.note` starts from the names a captured function's
code uses.
"""

from __future__ import annotations

import ast
import linecache
import types
from typing import Any

_NAMES: dict[tuple[str, int, int, int], frozenset[str] | None] = {}  # (file, its length,
#   its hash, the with line) -> the block's names (and code: _CODES)


def names(file: str, line: int | None, spaces: dict | None = None) -> frozenset[str] | None:
    """The names the statements of the ``with`` block whose header is at ``line`` of ``file``
    use, its header included; ``None`` where its source cannot be read or no ``with``
    statement is there. (``spaces``: the frame's globals, for a module loader's source.)"""
    if line is None:
        return None
    text = "".join(linecache.getlines(file, spaces))
    if not text:
        return None
    key = (file, len(text), hash(text), line)
    if key not in _NAMES:
        if len(_NAMES) > 256:
            _NAMES.clear()
        _NAMES[key] = _names(text, line)
    return _NAMES[key]


def _names(text: str, line: int) -> frozenset[str] | None:
    block = _block(text, line)
    if block is None:
        return None
    return frozenset(node.id for node in ast.walk(block) if isinstance(node, ast.Name))


def _block(text: str, line: int) -> ast.With | ast.AsyncWith | None:
    """The innermost ``with`` statement of ``text`` whose header holds ``line``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    found = [node for node in ast.walk(tree)
             if isinstance(node, (ast.With, ast.AsyncWith))
             and node.lineno <= line <= _header_end(node)]
    if not found:
        return None
    return max(found, key=lambda node: node.lineno)  # the innermost header on that line


def function(file: str, line: int | None, spaces: dict, name: str
             ) -> tuple[types.FunctionType, list[str]] | None:
    """The statements of the ``with`` block whose header is at ``line`` of ``file`` (its
    header included) as a function of the module namespace ``spaces``, its code named
    ``name`` and its lines those of ``file`` (what the guards of the scope form read, as they
    read a captured function: :mod:`capviz.trace.guards_block`); ``None`` where its source
    cannot be read; and its lines, from its header's first. Never called, only read (its
    names, the functions it reaches, its lines). The names the frame binds are its globals
    (read by name as the block reads them)."""
    if line is None:
        return None
    text = "".join(linecache.getlines(file, spaces))
    if not text:
        return None
    key = (file, len(text), hash(text), line, name)
    if key not in _CODES:
        if len(_CODES) > 256:
            _CODES.clear()
        _CODES[key] = _compiled(text, line, file, name)
    made = _CODES[key]
    return None if made is None else (types.FunctionType(made[0], spaces, name), made[1])


_CODES: dict[tuple, Any] = {}  # (as _NAMES, and its code's name) -> the block's code and lines


def _compiled(text: str, line: int, file: str, name: str
              ) -> tuple[types.CodeType, list[str]] | None:
    block = _block(text, line)
    if block is None:
        return None
    header = [ast.copy_location(ast.Expr(item.context_expr) if item.optional_vars is None
                                else ast.Assign([item.optional_vars], item.context_expr),
                                item.context_expr) for item in block.items]
    loose = _Loose()
    body = [loose.visit(statement) for statement in [*header, *block.body]]
    names = loose.names | {node.id for statement in block.body for node in ast.walk(statement)
                           if isinstance(node, ast.Name)}  # (the frame's, the block's own
    names -= targets(block)                                # but its `as` targets: globals)
    if names:
        body.insert(0, ast.copy_location(ast.Global(names=sorted(names)), block))
    made = ast.FunctionDef(name=name, args=ast.arguments(posonlyargs=[], args=[], vararg=None,
                                                         kwonlyargs=[], kw_defaults=[],
                                                         kwarg=None, defaults=[]),
                           body=body, decorator_list=[], returns=None, type_comment=None)
    ast.copy_location(made, block)
    made = ast.AsyncFunctionDef(**{f: getattr(made, f) for f in made._fields}) if any(
        isinstance(node, (ast.Await, ast.AsyncFor, ast.AsyncWith)) for node in
        ast.walk(ast.Module(body=body, type_ignores=[]))) else made
    ast.copy_location(made, block)
    tree = ast.fix_missing_locations(ast.Module(body=[made], type_ignores=[]))
    try:
        code = compile(tree, file, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, TypeError):
        return None
    inner = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    return inner, text.splitlines(keepends=True)[block.lineno - 1:block.end_lineno]


def targets(block: ast.With | ast.AsyncWith) -> set[str]:
    """The names the header of ``block`` binds (``scope`` of ``with ... as scope``)."""
    return {node.id for item in block.items if item.optional_vars is not None
            for node in ast.walk(item.optional_vars) if isinstance(node, ast.Name)}


def own(file: str, line: int | None, spaces: dict | None = None) -> frozenset[str]:
    """The names the ``with`` block at ``line`` of ``file`` binds before it reads them (the
    header's ``as`` targets, ``x = scope.input(...)``): the block's own, not values it read
    from outside (what they held before the block opened, a tensor of an earlier capture, is
    nothing it reads)."""
    text = "".join(linecache.getlines(file, spaces)) if line is not None else ""
    if not text:
        return frozenset()
    key = (file, len(text), hash(text), line, None)
    if key not in _CODES:  # (its entry: the names; the block's code is under its name's key)
        if len(_CODES) > 256:
            _CODES.clear()
        _CODES[key] = _own(text, line)
    return _CODES[key]


def _own(text: str, line: int) -> frozenset[str]:
    block = _block(text, line)
    if block is None:
        return frozenset()
    first: dict[str, bool] = {}
    for name, stored in _events(block):
        first.setdefault(name, stored)
    return frozenset(name for name, stored in first.items() if stored)


def _events(node: ast.AST):
    """``(name, stored)`` of each use of a name under ``node``, in the order Python runs them
    (an assignment's value before its targets; ``n += 1`` reads ``n``)."""
    if isinstance(node, ast.Name):
        yield node.id, isinstance(node.ctx, ast.Store)
        return
    if isinstance(node, ast.AugAssign):
        if isinstance(node.target, ast.Name):
            yield node.target.id, False
        yield from _events(node.value)
        yield from _events(node.target)
        return
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
        if node.value is not None:
            yield from _events(node.value)
        for target in getattr(node, "targets", None) or [node.target]:
            yield from _events(target)
        return
    if isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            yield from _events(item.context_expr)
            if item.optional_vars is not None:
                yield from _events(item.optional_vars)
        for statement in node.body:
            yield from _events(statement)
        return
    for child in ast.iter_child_nodes(node):
        yield from _events(child)


class _Loose(ast.NodeTransformer):
    """A ``with`` block's statements made legal in a function of their own: a ``break`` or
    ``continue`` of the loop around the block -> ``pass``; its ``global`` and ``nonlocal``
    statements taken out (:attr:`names`: declared global once, first)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Break(self, node: ast.AST) -> ast.AST:
        return ast.copy_location(ast.Pass(), node)

    def visit_Continue(self, node: ast.AST) -> ast.AST:
        return self.visit_Break(node)

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> ast.AST:
        self.names.update(node.names)
        return ast.copy_location(ast.Pass(), node)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> ast.AST:
        return self.visit_Global(node)

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, _OWN_SCOPES):  # (a function or class the block defines, a loop
            return node                     # it runs: their own break, continue, global)
        return super().generic_visit(node)


_OWN_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.For,
               ast.While, ast.AsyncFor)


def _header_end(node: ast.With | ast.AsyncWith) -> int:
    """The last line of ``node``'s header (``with a as b, c as d:``)."""
    ends = [item.context_expr.end_lineno or node.lineno for item in node.items]
    ends += [item.optional_vars.end_lineno or node.lineno for item in node.items
             if item.optional_vars is not None]
    return max(ends)
