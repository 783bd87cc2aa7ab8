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

_NAMES: dict[tuple[str, int, int, int], frozenset[str] | None] = {}  # (file, its length,
#   its hash, the with line) -> the block's names


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
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    found = [node for node in ast.walk(tree)
             if isinstance(node, (ast.With, ast.AsyncWith))
             and node.lineno <= line <= _header_end(node)]
    if not found:
        return None
    block = max(found, key=lambda node: node.lineno)  # the innermost header on that line
    return frozenset(node.id for node in ast.walk(block) if isinstance(node, ast.Name))


def _header_end(node: ast.With | ast.AsyncWith) -> int:
    """The last line of ``node``'s header (``with a as b, c as d:``)."""
    ends = [item.context_expr.end_lineno or node.lineno for item in node.items]
    ends += [item.optional_vars.end_lineno or node.lineno for item in node.items
             if item.optional_vars is not None]
    return max(ends)
