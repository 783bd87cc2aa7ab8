"""The one fix of a refused stateful step, written in the user's own names.

When NumPy's own operators read an array the capture writes (a state), the capture cannot see
the read: ``self.W -= 0.1 * g / np.sqrt(self.mem + 1e-8)`` after ``self.mem += g * g``, ``return
self.W * 2.0`` after ``self.W += g``, an RNN's ``self.h[...] = np.tanh(x @ Wx + self.h @ Wh)``.
The fix that applies to all of them is to read the array through ``cv.constant``, which inside a
capture is the state's recorded value (its read when the call starts, before the first write;
the written value after it) and outside a capture the array itself, so the same code runs
eagerly unchanged. This module writes that fix on the user's own line:

- :func:`state_expression`: how the user's code names a state, read from the statement of its
  first write (``self.mem`` in ``self.mem += g * g``, ``v`` in ``v += g``, ``self.h`` in
  ``self.h[...] = ...``, ``W`` in ``np.subtract(W, x, out=W)``);
- :func:`read_through_constant`: a statement with each read of those expressions wrapped
  (``self.W -= 0.1 * g / np.sqrt(cv.constant(self.mem) + 1e-8)``), or ``None`` when it reads
  none of them;
- :func:`fix_for_reads`: the fix line for a refusal at a line: that line rewritten, or the first
  line of the same function that reads a state, rewritten and named by its number;
- :func:`operand_fix`: for a write NumPy made with a plain operand (``v *= 0.9``), the same
  statement with the operand as a tensor of the state's dtype (``v *= cv.constant(np.float64(
  0.9))``), which the capture records as the state's write.

Everything here is text: nothing is evaluated, and a line that does not parse gives ``None``
(the caller then words a general fix).
"""

from __future__ import annotations

import ast
import linecache
import re
from collections.abc import Iterable
from typing import Any

import numpy as np


def _statement(text: str) -> ast.stmt | None:
    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return None
    return tree.body[0] if len(tree.body) == 1 else None


def _base(target: ast.AST) -> ast.AST:
    """The array a write target names: ``self.h`` of ``self.h[...]``, ``W`` of ``W[i, :]``."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return target


def _items(name: str | None) -> tuple[list[str], str | None]:
    """The container keys the state named ``name`` is held under, outermost first
    (``o.m[0]``: ``["0"]``, ``params["blocks"][3]["mW"]``: three), and the last name before
    them (``m``, ``params``)."""
    try:
        node = ast.parse(name, mode="eval").body if name else None
    except SyntaxError:
        return [], None
    keys = []
    while isinstance(node, ast.Subscript):
        keys.insert(0, ast.dump(node.slice))
        node = node.value
    return keys, _last_name(node)


def _last_name(node: ast.AST | None) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else \
        node.id if isinstance(node, ast.Name) else None


def _constant_arg(node: ast.AST) -> ast.AST | None:
    """``a`` of ``cv.constant(a)``, else ``None``."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "cv.constant" and \
            len(node.args) == 1 and not node.keywords:
        return node.args[0]
    return None


def _unwrapped(target: ast.AST) -> tuple[ast.AST, bool]:
    """``target`` with a ``cv.constant(a)`` at its base written ``a`` (``cv.constant(s)[m] *=
    -1`` writes ``s``'s state), and whether there was one."""
    layers = []
    inner = target
    while isinstance(inner, ast.Subscript):
        layers.append(inner)
        inner = inner.value
    arg = _constant_arg(inner)
    if arg is None:
        return target, False
    made = arg
    for layer in reversed(layers):
        made = ast.Subscript(made, layer.slice, ast.Store())
    return made, True


def _array(target: ast.AST, name: str | None, whole: bool) -> ast.AST:
    """The array a write target names: the whole target where the capture recorded a write
    of the whole array (``whole``: ``self.m[i] += g`` of a list's item ``self.m[i]``); else
    the container's item the state's ``name`` says it is (``self.m[i]`` of ``self.m[i][0] +=
    g`` where the state is ``o.m[0]``, ``p["mW"]`` of ``p["mW"][...] = g`` where it is
    ``params["blocks"][3]["mW"]``), else :func:`_base` (``self.h`` of ``self.h[...]``)."""
    target, wrapped = _unwrapped(target)
    if whole and not wrapped:
        return target
    keys, last = _items(name)
    layers = []  # the target's subscripts, outermost first
    inner = target
    while isinstance(inner, ast.Subscript):
        layers.append(inner)
        inner = inner.value
    mine = [ast.dump(layer.slice) for layer in reversed(layers)]  # the base's first
    depth = 0
    if keys and last is not None and _last_name(inner) == last:  # self.m[i] of o.m[0]
        depth = min(len(keys), len(layers))
    else:  # p["mW"] of params["blocks"][3]["mW"]: the same keys end the name
        depth = next((k for k in range(min(len(keys), len(mine)), 0, -1)
                      if mine[:k] == keys[len(keys) - k:]), 0)
    return layers[len(layers) - depth] if depth else inner


def state_expression(text: str, name: str | None = None, whole: bool = False) -> str | None:
    """The expression naming the array that the statement ``text`` writes (its first write of
    the state named ``name``; ``whole``: a write of the whole array, no index of it): an
    augmented or subscripted assignment's target, or a NumPy call's ``out=``; the array a
    NumPy call writes in place (``np.copyto(dst, ..)``, ``np.add.at(a, ..)``, ``np.put(a,
    ..)``, ``a.put(..)``, ``a.fill(..)``); an item of a list or dict where the state is one
    (``self.m[i]``, see :func:`_array`); ``a`` where the line writes ``cv.constant(a)`` (its
    write goes to ``a``'s state)."""
    return _state_expression(_statement(text), name, whole)


_IN_PLACE_FIRST = ("copyto", "put", "putmask", "place", "put_along_axis", "fill_diagonal")
"""NumPy functions that write their first argument in place (``np.copyto(dst, src)``)."""
_IN_PLACE_METHODS = ("put", "fill", "sort", "partition", "itemset")
"""ndarray methods that write the array in place (``a.put(i, v)``)."""


_META = frozenset({"shape", "dtype", "ndim", "size", "itemsize", "nbytes", "strides"})
"""An array's attributes that are not its values (``self.h.shape``: no cv.constant needed)."""


def _writes_first(called: str) -> bool:
    """Whether the NumPy function ``called`` (as the line spells it) writes its first argument
    in place (``np.copyto``, ``np.add.at``, ``np.put``)."""
    head, _, last = called.rpartition(".")
    return (last in _IN_PLACE_FIRST and head in ("", "np", "numpy")) or \
        (last == "at" and head.startswith(("np.", "numpy.")))


def _state_expression(stmt: ast.stmt | None, name: str | None, whole: bool) -> str | None:
    if isinstance(stmt, ast.AugAssign):
        return ast.unparse(_array(stmt.target, name, whole))
    if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Subscript):
        return ast.unparse(_array(stmt.targets[0], name, False))
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if _writes_first(ast.unparse(func)) and stmt.value.args:  # np.add.at(a, idx, v)
            return ast.unparse(_array(stmt.value.args[0], name, whole))
        if isinstance(func, ast.Attribute) and func.attr in _IN_PLACE_METHODS and \
                not ast.unparse(func.value).startswith(("np", "numpy", "random")):
            return ast.unparse(_array(func.value, name, whole))  # a.put(i, v), a.fill(0)
        for keyword in stmt.value.keywords:
            if keyword.arg == "out":
                out = keyword.value
                if isinstance(out, ast.Tuple) and out.elts:
                    out = out.elts[0]
                return ast.unparse(_array(out, name, whole))
    return None


def listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``; past three ``a, b, c and 97 more`` (a reason names
    at most three states: review 4, finding 13); a name repeated (``self.m[i]`` of each
    state of a list) once."""
    names = list(dict.fromkeys(names))
    if len(names) > 3:
        return f"{', '.join(names[:3])} and {len(names) - 3} more"
    return " and ".join(names) if len(names) < 3 else f"{names[0]}, {names[1]} and {names[2]}"


class _Reads(ast.NodeVisitor):
    """The spans (start, end columns) of each read of one of ``names``, outermost first."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.spans: list[tuple[int, int]] = []

    def visit_Call(self, node: ast.Call) -> None:
        called = ast.unparse(node.func)
        if called == "cv.constant":  # (already read through cv.constant)
            return
        if called == "len" and len(node.args) == 1 and ast.unparse(node.args[0]) in self.names:
            return  # its length, not its values
        args = list(node.args)
        if args and _writes_first(called):  # np.add.at(a, ..): a is written, not read
            args = args[1:]
        self.visit(node.func)
        for arg in args:
            self.visit(arg)
        for keyword in node.keywords:
            if keyword.arg != "out":  # out=a: written, not read
                self.visit(keyword.value)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _META and ast.unparse(node.value) in self.names:
            return  # self.h.shape: not its values
        self._maybe(node)

    def _maybe(self, node: ast.expr) -> None:
        if isinstance(getattr(node, "ctx", None), ast.Load) and ast.unparse(node) in self.names:
            self.spans.append((node.col_offset, node.end_col_offset or node.col_offset))
        else:
            self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        self._maybe(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:  # a list's item: self.m[i]
        self._maybe(node)


def read_through_constant(text: str, names: Iterable[str]) -> str | None:
    """``text`` (one statement) with each read of an expression in ``names`` wrapped in
    ``cv.constant(...)``, the rest as the user wrote it; a write target stays as written.
    ``None``: no read of them."""
    line = text.strip()
    stmt = _statement(line)
    names = {n for n in names if n}
    if stmt is None or not names or "\n" in line:
        return None
    line = line[:stmt.end_col_offset]  # (without a comment)
    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, (ast.Name, ast.Attribute)):
        return None  # h = self.h: another name of the same array, no read of its values
    reads = _Reads(names)
    if isinstance(stmt, (ast.AugAssign, ast.Assign)):
        reads.visit(stmt.value)
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            if isinstance(target, ast.Subscript):  # its index may read one too
                reads.visit(target.slice)
    elif isinstance(stmt, (ast.Return, ast.Expr)) and stmt.value is not None:
        reads.visit(stmt.value)
    else:
        return None
    for start, end in sorted(reads.spans, reverse=True):
        line = f"{line[:start]}cv.constant({line[start:end]}){line[end:]}"
    return line if reads.spans else None


def in_place(text: str, source: Any = None) -> str | None:
    """A rebinding ``T = expr`` (``self.h = np.tanh(x @ Wx + self.h @ Wh)``) as the in-place
    write that captures: ``T[...] = expr`` with ``expr``'s reads of ``T`` through
    ``cv.constant`` (the value the capture records for it: the state's read before this
    write). ``None``: not such a statement."""
    line = text.strip()
    stmt = _statement(line)
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or \
            not isinstance(stmt.targets[0], (ast.Name, ast.Attribute, ast.Subscript)):
        return None
    key = getattr(stmt.targets[0], "slice", None)  # (a dict's item, review 8 #7: bn["mean"])
    if key is not None and not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return None
    target = line[stmt.targets[0].col_offset:stmt.targets[0].end_col_offset]
    value = line[stmt.value.col_offset:stmt.value.end_col_offset]
    written = read_through_constant(f"{target}[...] = {value}", [ast.unparse(stmt.targets[0])])
    made = written or f"{target}[...] = {value}"
    note = f" ({constant_note([target])})" if written else ""
    later = []
    if source:  # the function's later reads of it through NumPy: in the same fix
        for number, line_text in _function_lines(source[0], source[1], source[2]):
            wrapped = read_through_constant(line_text, [target]) if number > source[1] else None
            if wrapped is not None:
                later.append(f" and line {number} as {wrapped}")
    return f"{made}{''.join(later[:3])}, which the capture records as a state{note}"


def dict_in_place(text: str) -> str | None:
    """A dict of arrays bound anew (``self.bn = {"mean": 0.9 * self.bn["mean"] + 0.1 * h,
    "var": self.bn["var"]}``) as the in-place writes of its items that capture (``self.bn[
    "mean"][...] = 0.9 * cv.constant(self.bn["mean"]) + 0.1 * h``: review 8, finding 7, told
    "keep each value in an ndarray written in place (self.h[...] = h)"); an item bound to
    itself is left out. ``None``: not such a statement."""
    line = text.strip()
    stmt = _statement(line)
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or \
            not isinstance(stmt.targets[0], (ast.Name, ast.Attribute)) or \
            not isinstance(stmt.value, ast.Dict) or \
            not all(isinstance(k, ast.Constant) for k in stmt.value.keys):
        return None
    target = ast.unparse(stmt.targets[0])
    edits = []
    for key, value in zip(stmt.value.keys, stmt.value.values):
        shown = ast.get_source_segment(line, key) or repr(key.value)
        item = f"{target}[{shown}]"
        if ast.unparse(value) == ast.unparse(ast.parse(item, mode="eval").body):
            continue  # ("var": self.bn["var"]: the same array)
        made = f"{item}[...] = {ast.get_source_segment(line, value) or ast.unparse(value)}"
        edits.append(read_through_constant(made, [ast.unparse(ast.parse(item, mode="eval")
                                                             .body)]) or made)
    return "; ".join(edits) or None


def _function_lines(path: str, line: int, name: str | None = None) -> list[tuple[int, str]]:
    """The numbered lines of the function ``name`` around ``line`` of ``path``: from the nearest
    ``def`` above it to the next line indented as little as that ``def`` (``[]`` where that
    ``def`` is not ``name``'s: a lambda, a module's code)."""
    lines = linecache.getlines(path)
    if not 0 < line <= len(lines):
        return []
    start = line - 1
    while start > 0 and not lines[start].lstrip().startswith(("def ", "async def ")):
        start -= 1
    if name is not None and not re.match(rf"\s*(async\s+)?def\s+{re.escape(name)}\b",
                                         lines[start]):
        return []
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or
                                len(lines[end]) - len(lines[end].lstrip()) > indent):
        end += 1
    out = []
    for i in range(start + 1, end):
        text = lines[i].strip()
        if text:
            out += [(i + 1, part) for part in _simple_statements(text)]
    return out


def _simple_statements(text: str) -> list[str]:
    """The statements of one line: ``[text]``, or each of several simple statements it holds
    (``self.m *= 0.9; self.m += 0.1 * h``: review 8, finding 21, a fix for the reads in ``mh =
    self.m / ...; sh = ...`` was not found, and the one quoted did not apply)."""
    if ";" not in text:
        return [text]
    try:
        body = ast.parse(text).body
    except SyntaxError:
        return [text]
    if len(body) < 2 or any(isinstance(stmt, _COMPOUND) for stmt in body):
        return [text]
    return [text[stmt.col_offset:stmt.end_col_offset] for stmt in body]


_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef, ast.ClassDef,
             ast.AsyncFor, ast.AsyncWith, ast.AsyncFunctionDef)


function_lines = _function_lines  # (public: trace/rebound.py reads the tests of a container)
statement = _statement  # (public: trace/other_methods.py parses a method's lines)
simple_statements = _simple_statements  # (public: trace/outside_writes.py, a; b on a line)


def fix_for_reads(source: Any, names: Iterable[str], after: int = 0) -> str | None:
    """The fix for a value NumPy computed from the states named ``names`` (as the user's code
    names them), refused at ``source`` (``(file, line, function)``): its line with the reads
    wrapped in ``cv.constant``, and each other line of the function after line ``after`` that
    reads one through NumPy (``mh = self.m / ...`` before ``self.W -= 0.01 * mh / ...``, a
    ``return self.h * 1.0`` after it), by number: all the edits at once, so that the fix
    applied captures. ``None`` when no line reads one."""
    names = [n for n in names if n]
    if not source or not names:
        return None
    path, line = source[0], source[1]
    own, first, last = read_through_constant(linecache.getline(path, line), names), line, line
    if own is None:  # a statement over several lines (p -= a / (\n np.sqrt(v) + eps)), or
        for first, last, text in _statements(_function_lines(path, line, source[2])):  # one
            if first <= line <= last:  # of several on the line (a; b: review 8, finding 21)
                several = first == last and len(_simple_statements(
                    linecache.getline(path, line).strip())) > 1
                own = read_through_constant(text, names) if first < last or several else None
                if own is not None or not several:
                    break
    edits = [] if own is None else \
        [f"`{own}`" if first == last else f"lines {first}-{last} as `{own}`"]
    edits += other_reads(source, names, after, skip=range(first, last + 1))
    if not edits:
        return None
    shown = edits[:4]
    return "write " + ", and ".join(shown)


def fix_at_call(graph: Any, source: Any, names: Iterable[str]) -> str | None:
    """The fix for a value NumPy computed at ``source`` in a helper the captured function
    calls, whose lines read no state by the function's names (``cumulative_sum =
    np.cumsum(weights)`` in ``systematic_resample(self.weights)``, stop 35's particle
    filter): the function's line that calls the helper with a state, its reads wrapped
    (``idx = systematic_resample(cv.constant(self.weights))``); ``None`` where no such line
    is found. The function's lines are those of its states' writes."""
    names = [n for n in names if n]
    if not source or not names or not source[2] or source[2].startswith("<"):
        return None
    called = re.compile(rf"(?<![\w.]){re.escape(source[2])}\s*\(|\.{re.escape(source[2])}\s*\(")
    seen = set()
    for node in graph.state_nodes:
        where = node.source
        if not where or (where[0], where[2]) in seen or where[2] == source[2]:
            continue
        seen.add((where[0], where[2]))
        for first, last, text in _statements(_function_lines(where[0], where[1], where[2])):
            if called.search(text):
                made = read_through_constant(text, names)
                if made is not None:
                    at = f"line {first}" if first == last else f"lines {first}-{last}"
                    return f"write {at} as `{made}`"
    return None


def other_reads(source: Any, names: Iterable[str], after: int = 0,
                skip: Iterable[int] = ()) -> list[str]:
    """``line N as `...` `` for each statement of ``source``'s function after line ``after``,
    other than ``source``'s line (and ``skip``), that reads one of ``names`` through NumPy,
    with the reads wrapped (``lines N-M as `...` `` for one over several lines)."""
    edits = []
    skipped = {source[1], *skip}
    for first, last, text in _statements(_function_lines(source[0], source[1], source[2])):
        if first > after and not skipped & set(range(first, last + 1)):
            made = read_through_constant(text, names)
            if made is not None:
                where = f"line {first}" if first == last else f"lines {first}-{last}"
                edits.append(f"{where} as `{made}`")
    return edits


def _statements(lines: list[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """``(first, last, text)`` of the simple statements among numbered stripped ``lines``: a
    statement over several lines joined into one (at most 8; a line that parses alone after
    lines that do not, ``if x:  # why``, is one by itself); block headers (``for ...:``) left
    out."""
    out: list[tuple[int, int, str]] = []
    pending: list[tuple[int, str]] = []
    for number, text in lines:
        text = text.removesuffix("\\").rstrip()
        alone = _statement(text) is not None
        if pending:
            pending.append((number, text))
            joined = "".join(t if k == 0 or pending[k - 1][1].endswith(("(", "[", "{")) else
                             f" {t}" for k, (_, t) in enumerate(pending))
            if _statement(joined) is not None:
                out.append((pending[0][0], number, joined))
                pending = []
                continue
            if not alone and len(pending) < 8:
                continue
            pending = []
        if alone:
            out.append((number, number, text))
        elif not text.endswith(":"):
            pending = [(number, text)]
    return out

def constant_note(names: Iterable[str], made: str = "") -> str:
    """Why the rewrite works, naming the first expression the rewrite ``made`` wraps (else the
    first of ``names``)."""
    names = list(names)
    first = next((n for n in names if f"cv.constant({n})" in made), names[0])
    return (f"cv.constant({first}) is the value the capture records for it, before and after "
            f"its write, and {first} itself outside a capture")


def _scalar_text(operand: ast.AST, dtype: np.dtype) -> str:
    """``operand`` as a tensor of ``dtype`` (``cv.constant(np.float32(1 - self.momentum))``):
    a Python number is weak in NumPy (``a32 *= 0.9`` computes in float32) but
    ``cv.constant(0.9)`` inside a capture is a float64 tensor, so an untyped wrap of a number
    replays float64 arithmetic where the eager call, given the number itself, computes in
    float32 (a silent difference; stop 35, W=20w). Only a NumPy call's result (``np.exp(..)``,
    a NumPy object, as strong outside a capture as inside) is wrapped as it is."""
    text = ast.unparse(operand)
    numpy_made = isinstance(operand, ast.Call) and \
        ast.unparse(operand.func).startswith(("np.", "numpy.", "cv."))
    if numpy_made:
        return f"cv.constant({text})"
    return f"cv.constant(np.{np.dtype(dtype).name}({text}))"


def operand_fix(text: str, dtype: np.dtype) -> str | None:
    """For NumPy's write ``text`` with a plain operand (``v *= 0.9``, ``np.multiply(v, 0.9,
    out=v)``): the statement with the operand a tensor of ``dtype`` (``v *= cv.constant(
    np.float64(0.9))``), so that the write meets a tensor and is recorded. ``None``: not such a
    statement."""
    stmt = _statement(text)
    if isinstance(stmt, ast.AugAssign):
        target = ast.unparse(stmt.target)
        op = _OPS.get(type(stmt.op))
        if op is None:
            return None
        return f"{target} {op}= {_scalar_text(stmt.value, dtype)}"
    return None


_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
        ast.Mod: "%", ast.Pow: "**"}


def numpy_write_before(source: Any, name: str, names: Iterable[str] = ()
                       ) -> tuple[int, str] | None:
    """The last statement before ``source``'s line in its function that writes ``name`` (or
    one of ``names``, its other names) with NumPy's own operators (an augmented assignment to
    it, ``u[1:-1] = ...``, ``out=u``, ``np.copyto(u, ..)``...): ``(line, text)``, or ``None``."""
    if not source or not name:
        return None
    names = {name, *names}
    found = None
    for number, text in _function_lines(source[0], source[1], source[2]):
        if number > source[1]:
            break
        stmt = _statement(text)
        if stmt is None:
            continue
        if number == source[1] and not (isinstance(stmt, ast.AugAssign) and
                                        _writes_plain(stmt)):
            continue  # (the write's own line: only a write of literals before it there,
            #            self.m *= 0.9; self.m += 0.1 * h, is NumPy's)
        if (isinstance(stmt, ast.AugAssign) and ast.unparse(_base(stmt.target)) in names) or \
                _state_expression(stmt, None, False) in names:
            found = (number, text[:stmt.end_col_offset])
    return found


def numpy_write_between(read: Any, array: Any, write: Any = None) -> str | None:
    """Where NumPy's own operators wrote ``array`` after the capture read it at ``read`` (a
    constant made before the capture's first write, ``h = x * self.W; self.W *= (1 - 1e-2);
    self.W -= 0.1 * h``: hostile review 8, finding 8), and the fix, as the rest of a refusal's
    reason: ``line N (`self.W *= (1 - 1e-2)`), which no replay makes; write it with a tensor,
    which the capture records as a state: `self.W *= cv.constant(np.float64(1 - 1e-2))```;
    ``None`` where no such statement of ``read``'s function, before ``write`` (the capture's
    write's source), is found."""
    if not read or not isinstance(array, np.ndarray) or not write or write[0] != read[0]:
        return None
    lines = _function_lines(read[0], read[1], read[2])
    reading = linecache.getline(read[0], read[1])
    for number, text in lines:
        if number <= read[1]:
            continue
        if number >= write[1]:
            break
        stmt = _statement(text)
        if not isinstance(stmt, ast.AugAssign):
            continue
        target = ast.unparse(_base(stmt.target))
        if not re.search(rf"(?<![\w.]){re.escape(target)}(?![\w(])", reading):
            continue  # (the array the read names, written: not another one)
        fix = operand_fix(text, array.dtype)
        if fix is not None and _writes_plain(stmt):
            return (f"line {number} (`{text}`), a write no replay makes; write it with a "
                    f"tensor, which the capture records as a state: `{fix}`")
    return None


def _writes_plain(stmt: ast.AugAssign) -> bool:
    """Whether augmented assignment ``stmt`` writes with an operand of number literals only
    (``*= (1 - 1e-2)``: NumPy's own write, no tensor met; a name may be a tensor)."""
    return all(isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator,
                              ast.unaryop)) for n in ast.walk(stmt.value))


def numpy_write_fix(graph: Any, node: Any, others: Iterable[Any] = ()) -> tuple[Any, str]:
    """Where NumPy wrote state ``node`` before the capture's first write to it, and the fix:
    ``((file, line, function), fix)``: the user's statement (the refusal's line), with its
    operand a tensor (``v *= cv.constant(np.float64(0.9))``) or its reads of the array through
    ``cv.constant`` (``u[1:-1] = cv.constant(u)[1:-1] + ...``, ``self.cache_k[:-1] =
    cv.constant(self.cache_k)[1:].copy()``: stop 35's census), and those of ``others`` (states
    NumPy wrote so too: ``self.cache_v[:-1] = ...``) by line, all at once; ``(None, fix)`` with
    the general form of it where no such statement is found."""
    exprs = expressions(graph, [node])
    found = numpy_write_before(node.source, exprs[0], exprs) if exprs else None
    made = operand_fix(found[1], node.dtype) if found else None
    if found and made is not None:
        more = _more_writes(graph, others, node.source, found[0])
        return (node.source[0], found[0], node.source[2]), (
            f"write line {found[0]} (`{found[1]}`) with a tensor, which the capture records "
            f"as a state: `{made}`{more} (outside a capture cv.constant returns the value "
            "itself).")
    made = _plain_fix(found[1], exprs, node.dtype) if found else None
    if found and made is not None:
        wrapped = any(f"cv.constant({name})" in made for name in exprs)
        why = constant_note(exprs, made) if wrapped else \
            "outside a capture cv.constant returns the value itself"
        more = _more_writes(graph, others, node.source, found[0])
        states = "states" if more else "a state"
        return (node.source[0], found[0], node.source[2]), (
            f"write `{made}`{more}, which the capture records as {states} ({why}).")
    name = exprs[0] if exprs else "a"
    return None, (f"write it with a tensor, which the capture records as a state: {name} *= "
                  f"cv.constant(np.{np.dtype(node.dtype).name}(0.9)) for {name} *= 0.9 "
                  "(outside a capture cv.constant returns the value itself).")


def _more_writes(graph: Any, others: Iterable[Any], source: Any, line: int) -> str:
    """``, and line N as `...` `` for each of the states ``others`` NumPy wrote before the
    capture's first write by a statement of ``source``'s file (not ``line``, the one quoted;
    each statement once: the states of a loop's items share theirs), at most three."""
    edits = []
    for other in others:
        exprs = expressions(graph, [other])
        where = other.source
        if not exprs or not where or where[0] != source[0]:
            continue
        found = numpy_write_before(where, exprs[0], exprs)
        if found is None or found[0] == line:
            continue
        made = operand_fix(found[1], other.dtype) or _plain_fix(found[1], exprs, other.dtype)
        if made is not None and f", and line {found[0]} as `{made}`" not in edits:
            edits.append(f", and line {found[0]} as `{made}`")
    return "".join(edits[:3])


def expressions(graph: Any, states: Iterable[Any]) -> list[str]:
    """How the user's code names each of ``states`` (state nodes of ``graph``), read from the
    line of its first write (the state's own line, else the line of the first op that takes
    it); a state whose lines name none is left out."""
    out: list[str] = []
    for node in states:
        users = [user for user in graph.nodes[node.index + 1:]
                 if any(arg is node for arg in user.args)]
        lines = [node.source] + [user.source for user in users]
        for source in lines:
            if not source:
                continue
            whole = not any(user.op in _INDEXED for user in users  # (no index of it written
                            if user.source == source)             # there: self.m[i] += g)
            name = next((made for part in
                         _simple_statements(linecache.getline(source[0], source[1]).strip())
                         if (made := state_expression(part, node.name, whole))), None)
            if name:
                for alias in [name, *_aliases(source, name)]:
                    if alias not in out:
                        out.append(alias)
                break
    return out


_INDEXED = frozenset({"getitem", "setitem", "index_put", "put", "put_along_axis", "ufunc_at",
                      "putmask", "advanced_index_put", "advanced_ufunc_at", "fill_diagonal"})
"""The ops of a read or write of an index of an array (a state written there is ``self.h`` of
``self.h[...] = ...``, not ``self.h[...]``)."""


def _aliases(source: Any, name: str) -> list[str]:
    """Other names of the array ``name`` in the function of ``source``: ``self.h`` for ``h``
    after ``h = self.h``, and the other way round."""
    out = []
    for _, text in _function_lines(source[0], source[1], source[2]):
        stmt = _statement(text)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.value, (ast.Name, ast.Attribute)) and \
                isinstance(stmt.targets[0], (ast.Name, ast.Attribute)):
            left, right = ast.unparse(stmt.targets[0]), ast.unparse(stmt.value)
            if name in (left, right):
                out.append(right if left == name else left)
    return out


def plain_write(graph: Any, node: Any) -> tuple[Any, str, str]:
    """Where NumPy wrote state ``node``'s array after the capture's write, and the fix (review
    3, finding 2): ``(source, the line, reason)`` for the first line of its function after the
    state's first write that writes the array with NumPy's own operators
    (``np.clip(self.W, lo, hi, out=self.W)``, ``self.W[...] = np.clip(self.W, lo, hi)``,
    ``self.W[0] = 1.0``, ``self.W *= 0.5``), with that line rewritten so the write meets the
    state's tensor (``np.clip(cv.constant(self.W), lo, hi, out=self.W)``); ``(None, "",
    reason)`` with the general form where no such line is found."""
    exprs = expressions(graph, [node])
    first = node.source
    found = None
    if exprs and first:
        recorded = _recorded_writes(graph, node)  # (a line already fixed: R5 #15)
        for number, text in _function_lines(first[0], first[1], first[2]):
            if number > first[1] and number not in recorded \
                    and state_expression(text) in exprs:
                found = (number, text)
                break
    if found is not None:  # (without a comment)
        stmt = _statement(found[1])
        found = (found[0], found[1] if stmt is None else found[1][:stmt.end_col_offset])
    made = None if found is None else _plain_fix(found[1], exprs, node.dtype)
    if found is None or made is None:
        name = exprs[0] if exprs else "W"
        return None, "", (
            f"the capture put back the value it records; give NumPy the tensor: "
            f"np.clip(cv.constant({name}), lo, hi, out={name}), {name}[...] = "
            f"np.f(cv.constant({name})), {name}[i] = cv.constant(np.float64(1.0))")
    source = (first[0], found[0], first[2])
    at = f"line {first[1]}"
    masked = _masked_write(found[1], exprs)
    if masked is not None:  # self.v[spikes] = v_reset: the mask NumPy computed from self.v too
        edits = [f"`{masked}`", *other_reads(source, exprs)][:4]
        return source, found[1], (
            f"the capture's write into it is at {at}, and the capture put back the value it "
            f"records; write {', and '.join(edits)}: cv.constant({exprs[0]}) is that value as a "
            f"tensor, and {exprs[0]} itself outside a capture")
    operand = re.search(r"cv\.constant\(([^()]*(?:\([^()]*\))?)\)", made)
    why = (f"cv.constant({exprs[0]}) is that value as a tensor, and {exprs[0]} itself outside "
           "a capture") if f"cv.constant({exprs[0]})" in made or operand is None else (
        f"cv.constant({operand[1]}) is that {'number' if operand[1].startswith('np.') else 'value'}"
        f" as a tensor of {exprs[0]}'s dtype, so the capture records the write, and the "
        f"{'number' if operand[1].startswith('np.') else 'value'} itself outside a capture")
    return source, found[1], (
        f"the capture's write into it is at {at}, and the capture put back the value it "
        f"records; write `{made}`: {why}")


def _recorded_writes(graph: Any, node: Any) -> set[int]:
    """The lines of ``node``'s file where the capture recorded an op computed from that state
    (``np.clip(cv.constant(self.W), lo, hi, out=self.W)``, a fix applied: the capture saw the
    line, so NumPy did not write the array unseen there): the refusal names the next line
    that writes it (two clips in a row: hostile review 5, finding 15, quoted the fixed line
    again)."""
    reached = {node.index}
    lines = set()
    kind = type(node)
    for later in graph.nodes[node.index + 1:]:
        if any(type(a) is kind and a.index in reached for a in later.args):
            reached.add(later.index)
            if later.source and later.source[0] == node.source[0]:
                lines.add(later.source[1])
    return lines


def _masked_write(text: str, exprs: list[str]) -> str | None:
    """``cv.constant(self.v)[spikes] = self.v_reset`` for NumPy's write ``self.v[spikes] =
    self.v_reset`` of state ``self.v`` (one of ``exprs``) at an index that is not a literal (a
    mask or positions the call computed, maybe from the state: a tensor once its reads are
    through cv.constant, which an ndarray cannot be indexed by; the write into
    ``cv.constant(a)`` writes ``a``'s state); ``None`` for another statement (``self.W[0] =
    1.0``, a value that reads the state: :func:`_plain_fix`)."""
    stmt = _statement(text)
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or \
            not isinstance(stmt.targets[0], ast.Subscript) or \
            read_through_constant(text, exprs) is not None:
        return None
    target = stmt.targets[0]
    if ast.unparse(target.value) not in exprs or _literal(target.slice):
        return None
    line = text.strip()[:stmt.end_col_offset]
    value = line[stmt.value.col_offset:stmt.value.end_col_offset]
    return f"cv.constant({ast.unparse(target.value)})[{ast.unparse(target.slice)}] = {value}"


def _literal(index: ast.AST) -> bool:
    """Whether an index is made of literals only (``0``, ``1:-1``, ``..., 2``)."""
    return all(isinstance(n, (ast.Constant, ast.Slice, ast.Tuple, ast.UnaryOp, ast.unaryop,
                              ast.expr_context))
               for n in ast.walk(index))


def _plain_fix(text: str, exprs: list[str], dtype: Any) -> str | None:
    """``text``, NumPy's write of one of ``exprs`` after the capture's, rewritten so that the
    write meets the state's tensor, or ``None``."""
    stmt = _statement(text)
    made = read_through_constant(text, exprs)
    if isinstance(stmt, ast.AugAssign):  # (self.W /= np.linalg.norm(self.W): the read wrapped,
        return made or operand_fix(text, dtype)  # not the norm NumPy computes: R6 #11)
    if made is not None:  # out=, np.copyto's destination: NumPy writes the array itself
        for name in exprs:
            made = made.replace(f"out=cv.constant({name})", f"out={name}")
            made = re.sub(rf"\bcopyto\(cv\.constant\({re.escape(name)}\),",
                          f"copyto({name},", made)
        return made
    if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Subscript):
        line = text.strip()[:stmt.end_col_offset]
        value = line[stmt.value.col_offset:stmt.value.end_col_offset]
        target = line[:stmt.targets[0].end_col_offset]
        return f"{target} = {_scalar_text(stmt.value, dtype) if value else value}"
    return None
