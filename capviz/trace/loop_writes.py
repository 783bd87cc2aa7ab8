"""The outside arrays a function writes through a loop's name: part of a first capture's guess
of what to lift (:func:`capviz.trace.lifted.plan`).

An optimiser writes its parameters and memories through the names a loop binds to a list's
items (``for w, m in zip(self.params, self.mems): m += g * g; w -= lr * g / np.sqrt(m)``,
``for p in self.params: p -= lr * p.grad``, ``for i, w in enumerate(self.ws): w *= 0.99``).
:func:`written` reads ``function``'s statements for those loops and, for each list (or dict:
its values) whose items a loop name is written through in place, gives its label
(``self.params``, as :func:`capviz.trace.places.note` labels it) with the line of that write
and the name's place in the loop, so that a first capture lifts its items before ``fn`` runs
and runs once. A guess only: the lifted run keeps itself only where every lifted array was
written and no array state appeared that it did not lift (:func:`capviz.trace.lifted.kept`),
and the two captures run otherwise.
"""

from __future__ import annotations

import ast
from typing import Any

from capviz.trace import kept_numbers

_IN_PLACE_METHODS = frozenset(("fill", "sort", "partition", "put", "itemset", "resize"))
"""ndarray methods that write the array they are called on."""

_CACHE: dict[Any, dict[str, tuple[int, int, int]]] = {}


def written(owner: Any, function: Any) -> dict[str, tuple[int, int, int]]:
    """``{container label: (line of the loop, the loop name's place in it, line of the first
    write through it)}`` for each list or dict ``function`` (a method of ``owner``, or a plain
    function: ``owner`` ``None``) loops over and writes an item of in place through the loop's
    name (see the module docstring); ``{}`` where there is none or no source."""
    code = getattr(function, "__code__", None)
    if code is None:
        return {}
    key = (code, owner is not None)
    found = _CACHE.get(key)
    if found is None:
        if len(_CACHE) > 256:
            _CACHE.clear()
        found = _CACHE[key] = _written(code, owner is not None)
    return found


def _written(code: Any, method: bool) -> dict[str, tuple[int, int, int]]:
    tree = kept_numbers._tree(code)
    if tree is None:
        return {}
    body, start, _shift = tree
    me = kept_numbers._names(code, method)
    found: dict[str, tuple[int, int, int]] = {}
    for stmt in kept_numbers._statements(body):
        if not isinstance(stmt, ast.For):
            continue
        pairs = _bound(stmt.target, stmt.iter, me)
        if not pairs:
            continue
        names = dict(pairs)
        rebound = _rebound(stmt.body)
        for position, (name, label) in enumerate(pairs):
            if name in rebound:  # (m = m + g: the name no longer holds the item)
                continue
            line = _first_write(stmt.body, name)
            if line is not None and names.get(name) == label:
                found.setdefault(label, (stmt.lineno + start - 1, position,
                                         line + start - 1))
    return found


def _bound(target: ast.AST, source: ast.AST, me: Any) -> list[tuple[str, str]]:
    """``(loop name, container label)`` of each name ``for target in source`` binds to the
    items of a walked container: ``for p in self.params``, ``for w, m in zip(self.ws,
    self.ms)``, ``for i, w in enumerate(self.ws)``."""
    label = me.path(source)
    if label is not None:
        return [(target.id, label)] if isinstance(target, ast.Name) else []
    if not isinstance(source, ast.Call) or not isinstance(source.func, ast.Name) or \
            source.keywords or source.func.id in me.locals:
        return []
    if source.func.id == "zip" and isinstance(target, ast.Tuple) and \
            len(target.elts) == len(source.args):
        pairs = []
        for name, arg in zip(target.elts, source.args):
            pairs += _bound(name, arg, me)
        return pairs
    if source.func.id == "enumerate" and len(source.args) == 1 and \
            isinstance(target, ast.Tuple) and len(target.elts) == 2:
        return _bound(target.elts[1], source.args[0], me)
    return []


def _rebound(body: list[ast.stmt]) -> set[str]:
    """The names a statement of ``body`` binds other than by an augmented assignment (which,
    on an ndarray, writes it in place)."""
    augmented = {id(node.target) for stmt in body for node in ast.walk(stmt)
                 if isinstance(node, ast.AugAssign)}
    return {node.id for stmt in body for node in ast.walk(stmt)
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del))
            and id(node) not in augmented}


def _first_write(body: list[ast.stmt], name: str) -> int | None:
    """The line of the first statement of ``body`` that writes the array ``name`` holds in
    place: ``name += ...``, ``name[...] = ...``, ``name[...] += ...``, ``out=name``,
    ``np.copyto(name, ...)``, ``name.fill(...)``."""
    lines = []
    for stmt in body:
        for node in ast.walk(stmt):
            if _writes(node, name):
                lines.append(getattr(node, "lineno", stmt.lineno))
    return min(lines) if lines else None


def _writes(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.AugAssign):
        target = node.target
        if isinstance(target, ast.Subscript):
            target = target.value
        return isinstance(target, ast.Name) and target.id == name
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and
                   t.value.id == name for t in node.targets)
    if isinstance(node, ast.Call):
        for keyword in node.keywords:
            if keyword.arg == "out" and _names(keyword.value, name):
                return True
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr == "copyto" and node.args and _names(node.args[0], name):
                return True
            if func.attr in _IN_PLACE_METHODS and _names(func.value, name):
                return True
    return False


def _names(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name
    if isinstance(node, ast.Tuple):
        return any(_names(item, name) for item in node.elts)
    return False
