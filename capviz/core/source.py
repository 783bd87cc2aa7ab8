"""Where the user's code is: the first frame outside capviz and NumPy, its file as a person
recognises it (a notebook cell shows as ``In [3]``), and a node's source as text."""

from __future__ import annotations

import builtins
import linecache
import os
import sys
from types import FrameType

import numpy as np

Source = tuple  # (file, line, function)


def format_source(source: Source | None) -> str | None:
    """``("model.py", 12, "forward")`` -> ``"model.py:12 in forward"``."""
    if source is None:
        return None
    file, line, func = source
    return f"{file}:{line} in {func}"


PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
PACKAGE_DIRS = tuple(dict.fromkeys((PACKAGE_DIR, os.path.dirname(os.path.dirname(__file__))
                                    + os.sep)))
"""capviz's folder as :data:`PACKAGE_DIR` and as its code objects' file names spell it: imported
through a path that is not normal (``sys.path.insert(0, "..")`` in a notebook), they read
``/work/nb/../capviz/...``, which is capviz's own code all the same."""
NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
SKIP_DIRS = (*PACKAGE_DIRS, NUMPY_DIR, "<frozen ")
USER_FILES = frozenset(os.path.join(d, "models.py") for d in PACKAGE_DIRS)  # (its example code)


def is_user_file(filename: str) -> bool:
    """True for code that is neither capviz's (its example models excepted) nor NumPy's."""
    return not filename.startswith(SKIP_DIRS) or filename in USER_FILES


_HEAP_TYPE = 1 << 9  # (Py_TPFLAGS_HEAPTYPE: a type made at run time, a class statement's)


def interpreters_type(kind: type) -> bool:
    """Whether ``kind`` is one of the interpreter's own types (``int``, ``list``, ``NoneType``,
    ``ExceptionGroup``). Decided by what the type is, not by its ``__module__`` alone: a class a
    user's ``exec(src, {})`` makes reads ``__module__ == "builtins"`` (the namespace has no
    ``__name__``, so the class statement finds the builtins' one) and is the user's (review 9,
    finding 24: taken for the interpreter's, its objects got no guards)."""
    if getattr(kind, "__module__", None) != "builtins":
        return False
    if not kind.__flags__ & _HEAP_TYPE:  # (a static type: the interpreter's C code)
        return True
    return getattr(builtins, kind.__name__, None) is kind


def library_type(kind: type) -> bool:
    """Whether ``kind`` is a built-in type of the interpreter's or NumPy's (its objects hold no
    attribute the user set): the test the walks make before reading an object's attributes."""
    return getattr(kind, "__module__", None) == "numpy" or interpreters_type(kind)


def numpy_caller(frame: FrameType | None) -> str | None:
    """The NumPy function running on the user's behalf at ``frame``: the name of the innermost
    frame outside capviz when it is NumPy's Python code (``full`` for ``np.full(shape, t)``)."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(PACKAGE_DIRS) or filename in USER_FILES:
            return frame.f_code.co_name if filename.startswith(NUMPY_DIR) else None
        frame = frame.f_back
    return None


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost frame at or above ``frame`` outside capviz and NumPy."""
    skip = SKIP_DIRS
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(skip) or filename in USER_FILES:
            return frame
        frame = frame.f_back
    return None


# --- file names a person recognises -----------------------------------------------------------

_PLAIN_FILES: set[str] = set()


def display_file(filename: str) -> str:
    """``filename``, or ``In [3]`` for code compiled from a notebook cell.

    IPython names a cell's code after a temporary file (ipykernel: ``/tmp/ipykernel_N/M.py``)
    and keeps the execution count of each such name in ``shell.compile._filename_map``. The
    cell's lines are registered in :mod:`linecache` under the new name too, so warnings and
    tracebacks that show ``In [3]`` still print the line.
    """
    if filename in _PLAIN_FILES:
        return filename
    count = _cell_number(filename)
    if count is None:
        if not filename.startswith("<") or "ipython-input" not in filename:
            _PLAIN_FILES.add(filename)
        return filename
    name = f"In [{count}]"
    if name not in linecache.cache and filename in linecache.cache:
        linecache.cache[name] = linecache.cache[filename]
    return name


def _cell_number(filename: str) -> int | None:
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if get is not None else None
    names = getattr(getattr(shell, "compile", None), "_filename_map", None)
    if not isinstance(names, dict):
        return None
    count = names.get(filename)
    return count if isinstance(count, int) else None


def source_of(frame: FrameType | None) -> tuple | None:
    """``(file, line, function)`` of ``frame`` (file as :func:`display_file` gives it)."""
    if frame is None:
        return None
    code = frame.f_code
    return (display_file(code.co_filename), frame.f_lineno, code.co_name)


def user_source() -> tuple | None:
    """``(file, line, function)`` of the innermost frame outside capviz and NumPy (a notebook
    cell's file shows as ``In [3]``)."""
    return source_of(user_frame(sys._getframe(1)))


def outside_line() -> str:
    """`` at file:line`` of the innermost frame outside capviz and NumPy (or ``""``)."""
    frame = user_frame(sys._getframe(2))
    return "" if frame is None else f" at {frame.f_code.co_filename}:{frame.f_lineno}"
