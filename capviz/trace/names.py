"""What the user called an array: the name a recorded constant gets when it has none.

When an ndarray is met as an operand inside a capture, :class:`Namer` looks for that very object
(``is``, never ``==``) in the module globals of the code that opened the capture, then among the
local variables of the user's frames on the stack, outermost first (the frame that opened the
capture, then each caller down to the line that used it), so the name is the one the program
started from:

- a variable or argument: ``mask``;
- a path through dicts, lists, tuples and object attributes below one:
  ``params["blocks"][3]["attn"]["c_attn"]["w"]``, ``self.W``;
- for a view made on the line (``params["wte"].T``), the name of its base with ``.T`` (a
  transpose) or ``view of ...`` (any other view).

Within one namespace the shortest path wins (breadth first). Names starting with ``_`` and
IPython's ``In``/``Out`` are skipped.

Cost: the arrays reachable from a namespace are indexed once per capture (breadth first, at most
:data:`MAX_DEPTH` steps), so naming the next array is a dictionary lookup per namespace, and a
temporary array that has no name costs as little. The innermost frame (new at every call) is
only searched by its variable names. All indexing of one capture together looks at most
:data:`MAX_VISITS` container entries (containers of more than :data:`MAX_CHILDREN` entries are
data, not parameters, and are skipped); past that, arrays are still found by variable name. An index
is taken when first needed: an array put into a container after that is found only by name.
"""

from __future__ import annotations

import types
from collections import deque
from types import FrameType
from typing import Any

import numpy as np

from capviz.core.source import is_user_file

MAX_DEPTH = 6
MAX_VISITS = 50_000
MAX_CHILDREN = 10_000
MAX_FRAMES = 64
_SKIP_NAMES = frozenset({"In", "Out"})
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.MethodType, types.CodeType)
_CONTAINERS = (dict, list, tuple)


def user_frames(frame: FrameType | None, stop: FrameType | None) -> list[FrameType]:
    """The user frames from ``frame`` up to ``stop`` (included), outermost first."""
    out: list[FrameType] = []
    f = frame
    while f is not None and len(out) < MAX_FRAMES:
        if is_user_file(f.f_code.co_filename):
            out.append(f)
        if f is stop:
            break
        f = f.f_back
    out.reverse()
    return out


def _named(name: Any) -> bool:
    return isinstance(name, str) and not name.startswith("_") and name not in _SKIP_NAMES


class Namer:
    """Finds what the user called arrays, for one capture (see the module docstring)."""

    def __init__(self) -> None:
        self.indexes: dict[int, tuple[dict, dict[int, tuple[Any, str]]]] = {}
        self.visits = 0

    def find(self, value: Any, frames: list[FrameType]) -> str | None:
        """The name or path of ``value`` from ``frames`` (outermost first), or ``None``."""
        if not frames:
            return None
        spaces = [frames[0].f_globals] + [f.f_locals for f in frames]
        found = self._lookup(value, spaces)
        if found is not None:
            return found
        base = getattr(value, "base", None)
        if isinstance(base, np.ndarray) and isinstance(value, np.ndarray):  # a view on the line
            found = self._lookup(base, spaces)
            if found is not None:
                transposed = value.shape == base.shape[::-1] and \
                    value.strides == base.strides[::-1]
                return f"{found}.T" if transposed else f"view of {found}"
        return None

    def release(self) -> None:
        """Forget the indexes (and the references they hold); called when the capture ends."""
        self.indexes = {}

    def _lookup(self, value: Any, spaces: list[dict]) -> str | None:
        last = len(spaces) - 1
        for k, namespace in enumerate(spaces):
            for name, v in list(namespace.items()):
                if v is value and _named(name):
                    return name
            if k == last and last > 0:
                break  # the innermost frame: new at each call, searched by name only
            hit = self._index(namespace).get(id(value))
            if hit is not None and hit[0] is value:
                return hit[1]
        return None

    def _index(self, namespace: dict) -> dict[int, tuple[Any, str]]:
        """``{id(array): (array, path)}`` for the arrays below ``namespace`` (built once)."""
        got = self.indexes.get(id(namespace))
        if got is not None and got[0] is namespace:
            return got[1]
        index: dict[int, tuple[Any, str]] = {}
        queue: deque[tuple[Any, str, int]] = deque(
            (v, name, 1) for name, v in list(namespace.items()) if _named(name))
        seen: set[int] = set()
        while queue and self.visits < MAX_VISITS:
            obj, path, depth = queue.popleft()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if type(obj) is np.ndarray:
                index.setdefault(id(obj), (obj, path))
                continue
            if depth > MAX_DEPTH:
                continue
            children = _children(obj)
            self.visits += len(children)
            for step, child in children:
                if type(child) is np.ndarray or isinstance(child, _CONTAINERS) or \
                        _has_attributes(child):
                    queue.append((child, path + step, depth + 1))
        self.indexes[id(namespace)] = (namespace, index)
        return index


def _has_attributes(obj: Any) -> bool:
    return isinstance(getattr(obj, "__dict__", None), dict) and not isinstance(obj, _OPAQUE) \
        and type(obj).__module__ not in ("builtins", "numpy")


def _children(obj: Any) -> list[tuple[str, Any]]:
    """``(path step, child)`` for a container or a plain object's attributes."""
    if isinstance(obj, _CONTAINERS) and len(obj) > MAX_CHILDREN:
        return []  # a data list, not a tree of parameters
    if isinstance(obj, dict):
        return [(_key_text(k), v) for k, v in list(obj.items())]
    if isinstance(obj, (list, tuple)):
        return [(f"[{i}]", v) for i, v in enumerate(obj)]
    if _has_attributes(obj):
        return [(f".{k}", v) for k, v in list(vars(obj).items()) if _named(k)]
    return []


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return '["' + key.replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return f"[{key!r}]"
