"""Python numbers an object keeps across calls, updated from tensors, lifted as states.

``self.sum += loss.item() * n; self.count += n; self.avg = self.sum / self.count`` (an
AverageMeter), ``self.correct += int((pred == y).sum())``, ``self.best = min(self.best,
float(loss))``: each call rebinds a Python float or int the object keeps (ruling 38 10:50,
39 14:10: lifted Python numbers). :func:`plan` finds them in the source of ``fn`` before it
runs: an attribute of ``fn``'s ``self`` that holds a ``float`` or an ``int`` (not a bool, within
int64) and that a statement of ``fn`` rebinds from its own value (``self.x += v``, ``self.x =
self.x + v``, ``self.x = min(self.x, v)``) or from such a number (``self.avg = self.sum /
self.count``), a counter alone too (``self.count += 1``: review 11, finding 11). Each becomes
a state of the graph (a 0-d float64 for a float, int64 for an int), lifted as
:mod:`capviz.trace.lifted` lifts an array: the place holds the state's tensor while
``fn`` runs, marked a Python number (NumPy's weak promotion), and the run is kept only where
:func:`capviz.trace.lifted.kept` keeps it; anything else is thrown away, and the two captures
give today's refusal. A replay reads the number the place holds when it starts (its Python type
checked) and binds the new one as that Python type (``type(m.sum) is float``).

What they compute is Python's arithmetic, not NumPy's: every operator on them is recorded as
``python_number`` (:mod:`capviz.ops.python_numbers`), which a replay runs with Python's own
operators on Python numbers (an int past int64 raises at that node, ``int / int`` is Python's
exactly rounded quotient, a division by zero raises ``ZeroDivisionError``); ``min``/``max`` of
two of them are Python's (``b if b < a else a``: NaN's order as Python's).

The reads: ``t.item()`` in such a statement gives the tensor's value as a Python number's
tensor. ``float(t)`` and ``int(t)`` must return a real float or int (CPython checks), so they
return a new one the capture knows by identity (:func:`stand_in`), which the op it is a direct
operand of (``+=``, ``min``) takes as the tensor's value; the statement's form (read from the
source) guarantees no other code sees it, and a run where one was not taken is thrown away.
"""

from __future__ import annotations

import ast
import builtins
import collections
import inspect
import re
import sys
import textwrap
import threading
import types
from typing import Any

import numpy as np

from capviz import ops
from capviz.core.source import library_type, user_frame
from capviz.trace import kept_properties, statements

INT64 = (-2 ** 63, 2 ** 63 - 1)
_READS = frozenset(("item", "float", "int"))


_PARSING = threading.Lock()
"""Held while :func:`_source_tree` parses: every first capture reads its function's statements
(7c2430d), and eight threads capturing at once raised CPython's ``SystemError: AST constructor
recursion depth mismatch`` under load (tests/test_threads.py, CI of 7720542)."""


def _source_tree(code: Any) -> tuple[ast.FunctionDef, int, int] | None:
    """The ``def`` of code object ``code``: its tree, the first line's number, and the
    indentation its source was dedented by (in bytes, as the columns of both)."""
    try:
        lines, start = inspect.getsourcelines(code)
    except (OSError, TypeError):
        return None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    first = lines[0] if lines else ""
    shift = len(first.encode()) - len(dedented.splitlines(True)[0].encode()) if dedented else 0
    try:
        with _PARSING:  # (CPython's AST constructor is not safe to run in several threads at
            tree = ast.parse(dedented)  # once: 'recursion depth mismatch', test_threads)
    except SyntaxError:
        return None
    body = tree.body[0] if tree.body else None
    if not isinstance(body, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
            body.name != code.co_name:
        return None
    return body, start, shift


class _Names:
    """How the statements of one function name the places of kept numbers, by the places'
    labels (:func:`capviz.trace.places.note`: ``self.sum``, ``self.meter.sum``,
    ``STATS.count``): ``me``, its first parameter where it is a method (``self``); an alias, a
    local name assigned once in the function from such a path and never otherwise (``m =
    self.meter``); a global's name that is no local of the function (``STATS``)."""

    __slots__ = ("aliases", "items", "locals", "me")

    def __init__(self, tree: ast.FunctionDef, code: Any, method: bool = True) -> None:
        self.me = tree.args.args[0].arg if method and tree.args.args else None
        self.locals = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
        self.aliases: dict[str, str] = {}
        stores = collections.Counter(
            node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load))
        stores.update(arg.arg for arg in ast.walk(tree.args) if isinstance(arg, ast.arg))
        self.items: set[str] = set()  # (locals assigned once from t.item(): _item_local)
        for stmt in _statements(tree):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], ast.Name) and stores[stmt.targets[0].id] == 1:
                if _is_item(stmt.value):
                    self.items.add(stmt.targets[0].id)
                    continue
                found = self.path(stmt.value, bare=True)
                if found is not None:
                    self.aliases[stmt.targets[0].id] = found

    def path(self, node: ast.AST, bare: bool = False) -> str | None:
        """The label of the place ``node`` names (``me.a.b``, ``alias.b``, ``GLOBAL.b``);
        ``bare``: a name alone too (``self``, ``STATS``)."""
        parts = []
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            if isinstance(node, ast.Attribute):
                parts.append(f".{node.attr}")
            elif isinstance(node.slice, ast.Constant) and type(node.slice.value) in (str, int):
                parts.append(f"[{node.slice.value!r}]")  # (config["t"]: a dict's item)
            else:
                return None
            node = node.value
        if not isinstance(node, ast.Name) or not (parts or bare):
            return None
        root = node.id
        if root == self.me:
            base = root
        elif root in self.aliases:
            base = self.aliases[root]
        elif root in self.locals:
            return None
        else:
            base = root  # (a global: STATS.count)
        return base + "".join(reversed(parts))


def _own(node: ast.AST, names: _Names) -> str | None:
    """The label of the attribute ``node`` names (``self.x``, ``self.meter.x``, ``m.x`` with
    ``m = self.meter``, ``STATS.x``)."""
    return names.path(node) if isinstance(node, (ast.Attribute, ast.Subscript)) else None


_STEP = re.compile(r"""\.(\w+)|\[('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|-?\d+)\]""")


def _parse(label: str) -> tuple[str, list[tuple[bool, Any]]] | None:
    """``(root, steps)`` of a label (``self.config['t']``: ``("self", [(True, "config"),
    (False, "t")])``); ``None`` where it is not one :meth:`_Names.path` writes."""
    root = re.match(r"[A-Za-z_]\w*", label)
    if root is None:
        return None
    steps, at = [], root.end()
    while at < len(label):
        found = _STEP.match(label, at)
        if found is None:
            return None
        steps.append((True, found.group(1)) if found.group(1) is not None else
                     (False, ast.literal_eval(found.group(2))))
        at = found.end()
    return root.group(0), steps


def _statements(tree: ast.FunctionDef) -> list[ast.stmt]:
    """The statements of ``tree``'s body, nested blocks included, not nested functions."""
    found: list[ast.stmt] = []
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.stmt):
            found.append(node)
        stack.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))
    return found


def updates(stmt: ast.stmt, me: _Names) -> tuple[str, ast.AST] | None:
    """``(label, value)`` where ``stmt`` rebinds the attribute of label ``label`` (``self.x``,
    ``self.meter.x``: :class:`_Names`) from its own value: ``self.x op= value``, or ``self.x =
    value`` with ``value`` reading ``self.x`` (``self.x + v``, ``min(self.x, v)``)."""
    if isinstance(stmt, ast.AugAssign):
        name = _own(stmt.target, me)
        if name is not None and isinstance(stmt.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            return name, stmt.value
        return None
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return None
    name = _own(stmt.targets[0], me)
    value = stmt.value
    if name is None:
        return None
    if any(_own(sub, me) == name for sub in ast.walk(value)):  # (self.x = self.x + v,
        return name, value                     # min(self.x, v), 0.9 * self.x + 0.1 * v)
    if any(_is_item(sub) or (isinstance(sub, ast.Name) and sub.id in me.items)
           for sub in ast.walk(value)):  # (self.val = loss.item(), self.val = val of a
        return name, value              # val = loss.item(): a number set from a tensor)
    return None


def _is_item(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
        node.func.attr == "item" and not node.args and not node.keywords


def _derived(stmt: ast.stmt, me: _Names, kept: set[str]) -> str | None:
    """``label`` where ``stmt`` is ``self.x = <an expression reading a kept number>``."""
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return None
    name = _own(stmt.targets[0], me)
    if name is None:
        return None
    if any(_own(sub, me) in kept for sub in ast.walk(stmt.value)):
        return name
    return None


def _python(value: Any) -> bool:
    return (type(value) is float) or (type(value) is int and INT64[0] <= value <= INT64[1])


def plan(owner: Any, function: Any, places: list[Any], floats: bool = True
         ) -> list[tuple[Any, int, bool]]:
    """The places (:class:`capviz.trace.places.Place`) of the kept Python numbers of
    ``function`` (a method bound to ``owner``, or a function: ``owner`` ``None``): on its own
    object, on an object it holds (``self.meter.sum += ...``, through an alias ``m =
    self.meter``), in ``__slots__``, on an object a global names (``STATS.count += 1``); each
    with the line of the statement that first rebinds it and whether it is an int lifted as
    the float the call makes of it (``floats``: guessed from the statements' form, checked by
    :func:`converts`; a run thrown away tries again without); ``[]`` where there are none."""
    if not hasattr(function, "__code__"):
        return []
    found = _tree(function.__code__)
    if found is None:
        return []
    tree, start, _shift = found
    me = _names(function.__code__, owner is not None)
    listed = _statements(tree)
    kept: dict[str, int] = {}
    helped: set[str] = set()  # (the kept numbers a helper method makes floats of)
    for stmt in listed:
        update = updates(stmt, me)
        if update is not None:
            kept.setdefault(update[0], stmt.lineno + start - 1)
        for label, as_float in _helper_updates(stmt, me, owner, function.__globals__):
            kept.setdefault(label, stmt.lineno + start - 1)  # (self.meter.update(v, n))
            if as_float:
                helped.add(label)
    if not kept:
        return []
    grown = True
    while grown:
        grown = False
        for stmt in listed:
            name = _derived(stmt, me, set(kept))
            if name is not None and name not in kept:
                kept[name] = stmt.lineno + start - 1
                grown = True
    floats = (_floats(listed, me, set(kept)) | helped) if floats else set()
    roots = {me.me: owner} if me.me is not None else {}
    plain = {name: _plain_label(name, roots, function.__globals__) for name in kept}
    lines = {plain[name]: line for name, line in reversed(kept.items())}  # (the first's)
    floats = {plain[name] for name in floats if name in plain}
    chosen = []
    for place in places:
        if place.kind in ("attribute", "slot", "dict") and place.label in lines and \
                _python(place.value):
            chosen.append((place, lines[place.label], type(place.value) is int and
                           place.label in floats))
    ours = {(id(place.holder), place.key): place.label for place, *_ in chosen}
    for name in lines:  # (self.other.sum where self.other is self.meter: one number, two
        parsed = _parse(name)  # paths; a replay after `self.other = Meter()` would update
        if parsed is None or not parsed[1]:  # one: refused)
            continue
        root, steps = parsed
        found = owner if root == me.me else function.__globals__.get(root, _ABSENT)
        holder = _step(found, steps[:-1])
        if holder is not _ABSENT and ours.get((id(holder), steps[-1][1]), name) != name:
            return []
    return chosen


def _plain_label(label: str, roots: dict[str, Any], space: dict) -> str:
    """``label`` with each step through a plain property (:mod:`capviz.trace.kept_properties`)
    replaced by the attribute it stands for (``self.s`` -> ``self._s``): the place a
    replay reads and binds."""
    parsed = _parse(label)
    if parsed is None:
        return label
    root, steps = parsed
    value = roots[root] if root in roots else space.get(root, _ABSENT)
    out = root
    for is_attribute, key in steps:
        if value is _ABSENT:
            return label
        if is_attribute and not _held_directly(value, key):
            key = kept_properties.backing(type(value), key) or key
        out += f".{key}" if is_attribute else f"[{key!r}]"
        value = _step(value, [(is_attribute, key)])
    return out


def _held_directly(value: Any, key: str) -> bool:
    own = getattr(value, "__dict__", None)
    return isinstance(own, dict) and key in own


def _method(kind: type, name: str) -> Any:
    """The plain function ``kind``'s objects call as method ``name`` where it is the user's
    (``AverageMeter.update``), else ``None``."""
    found = next((vars(k)[name] for k in kind.__mro__ if name in vars(k)), None)
    if type(found) is not types.FunctionType or library_type(kind) or \
            found.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or \
            _tree(found.__code__) is None:
        return None
    return found


def _helper_updates(stmt: ast.stmt, me: _Names, owner: Any, space: dict
                    ) -> list[tuple[str, bool]]:
    """``(label, makes a float)`` of each number a method that ``stmt`` calls on a held
    object updates on that object (``self.meter.update(loss.item(), n)`` whose ``update``
    does ``self.sum += val * n; self.count += n; self.avg = self.sum / self.count``:
    ``self.meter.sum``, ``self.meter.count``, ``self.meter.avg``), as :func:`plan` reads
    ``fn``'s own statements; one level of calls."""
    found: list[tuple[str, bool]] = []
    for call in ast.walk(stmt):
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            continue
        base = me.path(call.func.value, bare=True)
        parsed = None if base is None else _parse(base)
        if parsed is None:
            continue
        root, steps = parsed
        held = _step(owner if root == me.me else space.get(root, _ABSENT), steps)
        method = None if held is _ABSENT else _method(type(held), call.func.attr)
        if method is None:
            continue
        helper = _names(method.__code__, True)
        listed = _statements(_tree(method.__code__)[0])
        kept = {update[0] for update in map(lambda st: updates(st, helper), listed) if update}
        grown = bool(kept)
        while grown:
            grown = False
            for st in listed:
                name = _derived(st, helper, kept)
                if name is not None and name not in kept:
                    kept.add(name)
                    grown = True
        params = method.__code__.co_varnames[1:method.__code__.co_argcount]
        items = {params[k] for k, arg in enumerate(call.args) if k < len(params) and
                 (_is_item(arg) or (isinstance(arg, ast.Name) and arg.id in me.items))} | {
            kw.arg for kw in call.keywords if kw.arg is not None and (
                _is_item(kw.value) or (isinstance(kw.value, ast.Name) and
                                       kw.value.id in me.items))}  # (update(loss.item()))
        floats = _floats(listed, helper, kept, items)
        for label in kept:
            if label.startswith(f"{helper.me}.") or label.startswith(f"{helper.me}["):
                found.append((base + label[len(helper.me):], label in floats))
    return found


def _floats(listed: list[ast.stmt], me: _Names, kept: set[str],
            items: frozenset | set = frozenset()) -> set[str]:
    """The kept places a statement makes a float of, read from its form (``self.sum +=
    loss.item() * n``, ``float(t)``, a float literal, ``/``): a meter reset to the int ``0``
    is lifted as a float from its first call (:func:`converts` checks that every use of the
    int converts it to a float first, as Python's ``int + float`` does); ``items``: names
    that hold a ``t.item()`` too (a helper's parameter given one)."""
    found = set()
    for stmt in listed:
        target = stmt.target if isinstance(stmt, ast.AugAssign) else \
            stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        label = _own(target, me) if target is not None else None
        if label not in kept:
            continue
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Div):
            found.add(label)
        stack = [stmt.value]  # (its operands through Python's operators only)
        while stack:
            sub = stack.pop()
            if isinstance(sub, ast.BinOp):
                if isinstance(sub.op, ast.Div):
                    found.add(label)
                stack += [sub.left, sub.right]
            elif isinstance(sub, ast.UnaryOp):
                stack.append(sub.operand)
            elif (isinstance(sub, ast.Constant) and type(sub.value) is float) or \
                    (isinstance(sub, ast.Name) and (sub.id in me.items or sub.id in items)) or \
                    (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and
                     sub.func.attr == "item") or \
                    (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and
                     sub.func.id == "float"):
                found.add(label)
    return found


CONVERTING = frozenset(("add", "subtract", "multiply", "true_divide", "divide", "power"))
"""The operators of ``python_number`` that convert an int operand to a float when the other
is a float (Python's ``int + float``: ``float(int)`` first, exactly rounded)."""


def converts(graph: Any, nodes: list[Any]) -> bool:
    """Whether every use of each state in ``nodes`` (a kept int lifted as a float:
    ``params["from_int"]``) is a ``python_number`` whose other operand is a float and whose
    result is one: what it computes from the float is what Python computes from the int."""
    indices = {node.index for node in nodes}
    if not indices:
        return True
    for node in graph.nodes:
        args = [a for a in node.args if hasattr(a, "index")]
        if not any(a.index in indices for a in args) or node.op == "output":
            continue
        if node.op != "python_number" or node.params.get("op") not in CONVERTING or \
                node.dtype is None or np.dtype(node.dtype).kind != "f" or len(node.args) != 2:
            return False
        for a in node.args:
            if hasattr(a, "index") and a.index in indices:
                continue
            kind = type(a) if type(a) in (int, float, bool) else \
                float if np.dtype(getattr(a, "dtype", None) or "int64").kind == "f" else int
            if kind is not float:
                return False
    return True


def _step(value: Any, steps: list[tuple[bool, Any]]) -> Any:
    """``value.a['b']`` for ``steps`` ``[(True, "a"), (False, "b")]``, through instance
    dictionaries, ``__slots__`` and plain dicts only (no property, ``__getattr__`` or
    ``__getitem__`` of the user's runs); ``_ABSENT`` where one is not."""
    for is_attribute, step in steps:
        if value is _ABSENT:
            return _ABSENT
        if not is_attribute:  # (a plain dict's item, a plain list's: self.meters[0])
            value = value.get(step, _ABSENT) if type(value) is dict else \
                value[step] if type(value) is list and type(step) is int and \
                -len(value) <= step < len(value) else _ABSENT
            continue
        own = getattr(value, "__dict__", None)
        if isinstance(own, dict) and step in own:
            value = own[step]
            continue
        plain = kept_properties.backing(type(value), step)  # (self.s: self._s)
        if plain is not None and isinstance(own, dict) and plain in own:
            value = own[plain]
            continue
        slot = next((vars(k)[step] for k in type(value).__mro__ if step in vars(k)), None)
        value = slot.__get__(value) if isinstance(slot, types.MemberDescriptorType) and \
            hasattr(value, step) else _ABSENT
    return value


def written(owner: Any, function: Any) -> dict[str, int]:
    """The labels of the places whose array the statements of ``function`` (as :func:`plan`
    reads it) write in place or bind anew from its own value, each with the line that first
    does (``self.m[...] = ...``, ``self.w -= lr * g``, ``self.v[0] += ...``, ``self.m = b1 *
    self.m + (1 - b1) * g``): what a first capture that keeps numbers lifts
    beside them (an optimiser's moments beside its step counter,
    :func:`capviz.trace.lifted.plan`); a guess, which the lifted run checks."""
    found = _tree(function.__code__) if hasattr(function, "__code__") else None
    if found is None:
        return {}
    tree, start, _shift = found
    me = _names(function.__code__, owner is not None)
    labels: dict[str, int] = {}
    for stmt in _statements(tree):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
            [stmt.target] if isinstance(stmt, ast.AugAssign) else []
        for target in targets:
            inplace = isinstance(stmt, ast.AugAssign)
            if isinstance(target, ast.Subscript) and me.path(target) is None:
                target, inplace = target.value, True  # (self.m[...] =; config["m"] = ...:
            label = me.path(target)                   # a dict's item, bound anew)
            if label is not None and (inplace or (len(targets) == 1 and any(
                    me.path(sub) == label for sub in ast.walk(stmt.value)))):
                labels.setdefault(label, stmt.lineno + start - 1)  # (or rebound from its own
    return labels  # value, self.m = b1 * self.m + ...: a rebind state, trace/rebinding.py)


_NAMES: dict[tuple[Any, bool], _Names] = {}


def _names(code: Any, method: bool) -> _Names:
    key = (code, method)
    if key not in _NAMES:
        if len(_NAMES) > 256:
            _NAMES.clear()
        _NAMES[key] = _Names(_tree(code)[0], code, method)
    return _NAMES[key]


def root_of(value: Any, as_float: bool = False) -> np.ndarray:
    """The 0-d array a Python number is lifted as: float64 for a float (or an int the call
    makes a float: ``as_float``), int64 for an int."""
    return np.array(value, dtype=np.float64 if type(value) is float or as_float else np.int64)


# --- the reads in a kept statement --------------------------------------------------------------

def _statement(frame: Any) -> tuple[ast.stmt, _Names, ast.AST] | None:
    """The statement ``frame`` runs, how it names places (:class:`_Names`) and the node of the
    running instruction, where it is an update of a kept number (:func:`updates`)."""
    here = statements.instruction(frame)
    if here is None or here.positions is None or here.positions.lineno is None:
        return None
    code = frame.f_code
    if not code.co_varnames:
        return None
    found = _tree(code)
    if found is None:
        return None
    tree, start, shift = found
    me = _names(code, True)  # (labels resolved in this frame: :func:`_held`)
    pos = here.positions
    line = pos.lineno - start + 1
    for stmt in _statements(tree):
        if stmt.lineno <= line <= stmt.end_lineno and updates(stmt, me) is not None:
            for sub in ast.walk(stmt):
                if getattr(sub, "lineno", None) == line and \
                        getattr(sub, "end_lineno", None) == pos.end_lineno - start + 1 and \
                        sub.col_offset + shift == pos.col_offset and \
                        sub.end_col_offset + shift == pos.end_col_offset:
                    return stmt, me, sub
    return None


_TREES: dict[Any, Any] = {}  # code object -> _source_tree's (read once per code object)


def _tree(code: Any) -> tuple[ast.FunctionDef, int, int] | None:
    if code not in _TREES:
        if len(_TREES) > 256:
            _TREES.clear()
        _TREES[code] = _source_tree(code)
    return _TREES[code]


def _kept_target(recorder: Any, frame: Any, stmt: ast.stmt, me: _Names) -> bool:
    """Whether the place ``stmt`` rebinds holds a kept number's tensor of ``recorder``."""
    held = _held(frame, me, updates(stmt, me)[0])
    return held is not None and getattr(held, "_trace", None) is recorder and \
        held._data.index in recorder.python_nodes and \
        held._data.index in kept_nodes(recorder)


_ABSENT = object()


def _held(frame: Any, me: _Names, label: str) -> Any:
    """What the place of ``label`` holds now, read from ``frame`` through instance
    dictionaries and ``__slots__`` only (no property or ``__getattr__`` runs); ``None``
    where it cannot be read so."""
    parsed = _parse(label)
    if parsed is None:
        return None
    root, steps = parsed
    value = frame.f_locals.get(root, _ABSENT) if root == me.me else \
        frame.f_globals.get(root, _ABSENT)
    value = _step(value, steps)
    return None if value is _ABSENT else value


def kept_nodes(recorder: Any) -> set[int]:
    """The nodes of the kept numbers and of Python's arithmetic on them."""
    return recorder.__dict__.setdefault("_kept_nodes", set())


def item(tensor: Any) -> Any:
    """``tensor.item()`` where it is read in the update of a kept number (``self.sum +=
    loss.item() * n``): a Python number's tensor of its value (float64 for a float or float32
    tensor, int64 for an integer one); ``None`` otherwise (a read, as before)."""
    recorder = tensor._trace
    if not kept_nodes_active(recorder) or tensor.shape != () or \
            np.dtype(tensor.dtype).kind not in "fiu":
        return None
    frame = user_frame(sys._getframe(1))
    found = None if frame is None else _statement(frame)
    if found is None:
        if frame is None or not (_item_local(frame) or  # (l = loss.item(); self.sum += l)
                                 _item_argument(frame)):  # (self.meter.update(l.item(), n))
            return None
    elif not _kept_target(recorder, frame, found[0], found[1]) or \
            not _operands_only(found[0], found[1], found[2]):
        return None
    return _as_python(recorder, tensor, "f" if np.dtype(tensor.dtype).kind == "f" else "i")


def _item_local(frame: Any) -> bool:
    """Whether ``frame`` runs ``name = t.item()`` (the call the statement's whole value) where
    ``name`` is a local assigned there only and read only as an operand of updates of kept
    numbers (``l = loss.item(); self.meter.sum += l * n``: through Python's operators,
    ``min``/``max``/``abs`` only, as :func:`_operands_only`): its value goes to no other code
    (review 12, finding 4: refused at every replay, 'another branch'). The update's target
    not kept, the tensor stays there and the lifted run is thrown away."""
    here = statements.instruction(frame)
    found = _tree(frame.f_code)
    if here is None or here.positions is None or here.positions.lineno is None or \
            found is None:
        return False
    tree, start, shift = found
    me = _names(frame.f_code, True)
    pos = here.positions
    line = pos.lineno - start + 1
    listed = _statements(tree)
    stmt = next((st for st in listed if isinstance(st, ast.Assign) and st.lineno == line), None)
    if stmt is None or len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
        return False
    call = stmt.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and
            call.func.attr == "item" and not call.args and not call.keywords and
            call.lineno == line and call.col_offset + shift == pos.col_offset and
            call.end_col_offset + shift == pos.end_col_offset):
        return False
    name = stmt.targets[0].id
    if name == me.me or name in me.aliases:
        return False
    stores = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and
              node.id == name and not isinstance(node.ctx, ast.Load)]
    if len(stores) != 1 or any(arg.arg == name for arg in ast.walk(tree.args)
                               if isinstance(arg, ast.arg)):
        return False
    loads = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and
             node.id == name and isinstance(node.ctx, ast.Load)]
    for node in loads:
        owner = next((st for st in listed if updates(st, me) is not None and
                      any(sub is node for sub in ast.walk(st))), None)
        if owner is None or not _operands_only(owner, me, node):
            return False
    return bool(loads)


def _item_argument(frame: Any) -> bool:
    """Whether ``frame`` runs ``t.item()`` as an argument of a call of a method of a held
    object (``self.meter.update(loss.item(), n)``, :func:`_helper_updates`) whose parameter
    it binds is read only as an operand of updates of numbers that object keeps (``self.sum
    += val * n``, as :func:`_operands_only`) and bound nowhere else: its value goes to no
    other code. The update's target not kept, the tensor stays there and the lifted run is
    thrown away."""
    here = statements.instruction(frame)
    found = _tree(frame.f_code)
    if here is None or here.positions is None or here.positions.lineno is None or \
            found is None:
        return False
    tree, start, shift = found
    me = _names(frame.f_code, True)
    pos = here.positions
    line = pos.lineno - start + 1
    for stmt in _statements(tree):
        if not stmt.lineno <= line <= stmt.end_lineno:
            continue
        for call in ast.walk(stmt):
            if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
                continue
            bound = [(k, arg) for k, arg in enumerate(call.args)] + \
                [(kw.arg, kw.value) for kw in call.keywords if kw.arg is not None]
            at = next((k for k, arg in bound if _is_item(arg) and arg.lineno == line and
                       arg.col_offset + shift == pos.col_offset and
                       arg.end_col_offset + shift == pos.end_col_offset), None)
            if at is None:
                continue
            base = me.path(call.func.value, bare=True)
            parsed = None if base is None else _parse(base)
            if parsed is None or any(isinstance(a, ast.Starred) for a in call.args):
                return False
            root, steps = parsed
            held = _step(frame.f_locals.get(root, _ABSENT) if root == me.me else
                         frame.f_globals.get(root, _ABSENT), steps)
            method = None if held is _ABSENT else _method(type(held), call.func.attr)
            if method is None:
                return False
            names = method.__code__.co_varnames[1:method.__code__.co_argcount +
                                                method.__code__.co_kwonlyargcount]
            param = names[at] if type(at) is int and at < method.__code__.co_argcount - 1 \
                else at if at in names else None
            return param is not None and _operand_parameter(method, param)
    return False


def _operand_parameter(method: Any, name: str) -> bool:
    """Whether parameter ``name`` of ``method`` is bound nowhere in it and read only as an
    operand of its updates of kept numbers (:func:`_operands_only`)."""
    tree = _tree(method.__code__)[0]
    helper = _names(method.__code__, True)
    if any(isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load)
           for node in ast.walk(tree)):
        return False
    loads = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and
             node.id == name and isinstance(node.ctx, ast.Load)]
    listed = _statements(tree)
    for node in loads:
        owner = next((st for st in listed if updates(st, helper) is not None and
                      any(sub is node for sub in ast.walk(st))), None)
        if owner is None or not _operands_only(owner, helper, node):
            return False
    return bool(loads)


def kept_nodes_active(recorder: Any) -> bool:
    return bool(recorder.__dict__.get("_kept_nodes"))


def _as_python(recorder: Any, tensor: Any, kind: str) -> Any:
    dtype = "float64" if kind == "f" else "int64"
    node = tensor._data
    if np.dtype(node.dtype).kind == "u" and kind == "i" and np.dtype(node.dtype).itemsize == 8:
        return None  # (a uint64 past int64: Python's int is exact, int64 is not)
    made = type(tensor)(recorder.record(ops.OPS["astype"], (node,), {"dtype": dtype}), recorder)
    recorder.python_nodes.add(made._data.index)
    kept_nodes(recorder).add(made._data.index)
    return made


def stand_in(tensor: Any, call: str) -> Any:
    """``float(t)`` / ``int(t)`` where it is a direct operand of the update of a kept number
    (``self.correct += int(...)``, ``min(self.best, float(loss))``): a new Python number the
    capture takes, by identity, as ``t``'s value (:func:`taken`); ``None`` otherwise."""
    recorder = tensor._trace
    if not kept_nodes_active(recorder) or tensor.shape != () or \
            np.dtype(tensor.dtype).kind not in ("iub" if call == "int()" else "fiu"):
        # (int() of a float: Python truncates exactly or raises for NaN and inf: not int64's)
        return None
    frame = user_frame(sys._getframe(1))
    found = None if frame is None else _statement(frame)
    if found is None:
        return None
    stmt, me, node = found
    if not _kept_target(recorder, frame, stmt, me) or not _direct(stmt, me, node):
        return None
    kind = "f" if call == "float()" else "i"
    value = _as_python(recorder, tensor, kind)
    if value is None:
        return None
    number = float("0.5") if kind == "f" else int("4611686018427387905")  # (a new object)
    standing(recorder)[id(number)] = (number, value)
    return number


def _operands_only(stmt: ast.stmt, me: str, node: ast.AST) -> bool:
    """Whether ``node`` (``t.item()``) reaches the update's value through Python's operators
    (one comparison included) and ``min``/``max``/``abs`` only: its value goes to no other
    code (a helper that could keep it where no walk looks)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
            node.func.attr == "item" and not node.args and not node.keywords) and \
            not isinstance(node, ast.Name):  # (a local holding one: _item_local)
        return False
    value = updates(stmt, me)[1]
    parents = {id(child): sub for sub in ast.walk(stmt) for child in ast.iter_child_nodes(sub)}
    while node is not value:
        parent = parents.get(id(node))
        if parent is None:
            return False
        if not (isinstance(parent, (ast.BinOp, ast.UnaryOp)) or (
                isinstance(parent, ast.Compare) and len(parent.ops) == 1) or (
                isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and
                parent.func.id in ("min", "max", "abs") and node in parent.args)):
            return False
        node = parent
    return True


def _direct(stmt: ast.stmt, me: str, node: ast.AST) -> bool:
    """Whether ``node`` is a call ``float(...)`` / ``int(...)`` that the update takes
    directly: its value (``self.n += int(...)``) or an operand of ``min``/``max`` or of the
    operator whose result it is (not inside a call of other code, which could keep it)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
            node.func.id in ("float", "int") and len(node.args) == 1 and not node.keywords):
        return False
    _name, value = updates(stmt, me)
    if value is node:
        return True
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.BinOp) and (sub.left is node or sub.right is node):
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and \
                sub.func.id in ("min", "max") and node in sub.args and len(sub.args) == 2:
            return True
    return False


def standing(recorder: Any) -> dict[int, tuple[Any, Any]]:
    """The numbers :func:`stand_in` gave, not yet taken, by ``id``."""
    return recorder.__dict__.setdefault("_stand_ins", {})


def taken(recorder: Any, args: tuple) -> tuple:
    """``args`` with each number :func:`stand_in` gave replaced by its tensor."""
    found = recorder.__dict__.get("_stand_ins")
    if not found:
        return args
    out = list(args)
    for k, a in enumerate(args):
        if type(a) in (float, int):
            held = found.get(id(a))
            if held is not None and held[0] is a:
                out[k] = held[1]
                del found[id(a)]
    return tuple(out)


# --- Python's min and max of kept numbers ------------------------------------------------------

_MIN, _MAX = builtins.min, builtins.max
_LOCK = threading.Lock()
_ACTIVE: list[Any] = []  # the recorders of the lifted runs holding kept numbers


def _picked(args: tuple, pick: str) -> Any:
    """Python's ``min(a, b)`` (``b if b < a else a``) or ``max`` of two kept numbers as a
    tensor; ``None`` where they are not such (the builtin runs)."""
    for recorder in list(_ACTIVE):
        a, b = taken(recorder, args)
        kinds = [_kind(x, recorder) for x in (a, b)]
        if None in kinds or not any(k[1] for k in kinds) or kinds[0][0] != kinds[1][0]:
            continue
        less = (b < a) if pick == "min" else (b > a)
        return np.where(less, b, a)
    return None


def _kind(x: Any, recorder: Any) -> tuple[str, bool] | None:
    if type(x) is float:
        return "f", False
    if type(x) is int:
        return "i", False
    data = getattr(x, "_data", None)
    if getattr(x, "_trace", None) is recorder and data is not None and \
            data.index in kept_nodes(recorder) and data.dtype is not None:
        kind = np.dtype(data.dtype).kind
        return ("f" if kind == "f" else "i" if kind in "iu" else "?"), True
    return None


def _min(*args: Any, **kwargs: Any) -> Any:
    if len(args) == 2 and not kwargs and _ACTIVE:
        found = _picked(args, "min")
        if found is not None:
            return found
    return _MIN(*args, **kwargs)


def _max(*args: Any, **kwargs: Any) -> Any:
    if len(args) == 2 and not kwargs and _ACTIVE:
        found = _picked(args, "max")
        if found is not None:
            return found
    return _MAX(*args, **kwargs)


def start(recorder: Any, nodes: list[Any]) -> None:
    """Mark the kept numbers' state ``nodes`` and let ``min``/``max`` take them."""
    kept_nodes(recorder).update(node.index for node in nodes)
    recorder.python_nodes.update(node.index for node in nodes)
    with _LOCK:
        _ACTIVE.append(recorder)
        builtins.min, builtins.max = _min, _max


def stop(recorder: Any) -> bool:
    """Undo :func:`start`; whether every number :func:`stand_in` gave was taken."""
    with _LOCK:
        if recorder in _ACTIVE:
            _ACTIVE.remove(recorder)
        if not _ACTIVE:
            builtins.min, builtins.max = _MIN, _MAX
    return not recorder.__dict__.get("_stand_ins")
