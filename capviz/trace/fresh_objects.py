"""A new object of a kind no replay can make, bound to an outliving place by a store every call
makes: refused by name (hostile review 11, finding 7; ruling 39 14:25).

``self.c = Box()`` (a user class), a dataclass, ``types.SimpleNamespace()``, ``bytearray(2)``:
each eager call binds a new object, which code may keep and write into after the call. A
'sets' guard (:class:`capviz.core.python_guards.PythonGuard`) makes a new copy of a Python
container at each replay (:func:`capviz.core.python_guards.settable`), but it cannot make a
new object of a user's class (a copy may not be what its constructor makes), so every replay
would leave the capture's one object there: the same object each call, silently. Refused at
the storing line, the place given back what it held.
"""

from __future__ import annotations

import dis
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.errors import UnsupportedOperationError
from capviz.core.python_guards import ABSENT, guardable, settable
from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.trace.fn_lines import writing_line

CALL = "a new object bound each call"
"""The ``call`` of the refusal."""


def unmakeable(value: Any) -> bool:
    """Whether ``value`` is an object a 'sets' guard cannot make anew: not a value a guard
    holds (a number, a str, a function...), not a container of them it copies, not an array,
    a module or a class."""
    return not (guardable(value, identity=True) or settable(value) or
                isinstance(value, (np.ndarray, np.generic, types.ModuleType, type)) or
                callable(value) or str(getattr(type(value), "__module__", "") or "").startswith(
                    "capviz."))


def read_anywhere(found: Any, key: str) -> bool:
    """Whether code the call reaches (``found``: :func:`capviz.trace.guard_reach.reached`)
    may read attribute ``key``: loads it (``self.c``, ``self.c.get``), or calls ``getattr`` /
    ``hasattr`` / ``vars`` / ``dir`` (or reads ``__dict__``) where it names ``key`` as a string
    or builds a name. A store no code reads (``setattr(m, "c", {})``: a store, not a read) is
    one each call makes, not a lazy init (``if self.c is None: self.c = {}`` reads it)."""
    codes = [f.__code__ for f in getattr(found, "functions", ()) if hasattr(f, "__code__")]
    while codes:
        code = codes.pop()
        codes.extend(k for k in code.co_consts if isinstance(k, types.CodeType))
        dynamic = bool(_DYNAMIC & set(code.co_names))
        if key not in code.co_names and key not in code.co_consts and not dynamic:
            continue
        for op in dis.get_instructions(code):
            if op.argval == key and op.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                return True
            if dynamic and ((op.opname == "LOAD_CONST" and op.argval == key) or
                            op.opname in ("BUILD_STRING", "FORMAT_VALUE", "BINARY_OP")):
                return True  # (getattr(self, "c"), getattr(self, f"layer{i}"))
    return False


_DYNAMIC = frozenset(("getattr", "hasattr", "vars", "__dict__", "delattr", "dir"))


def refuse_fresh(fn: Callable, label: str, holder: Any, key: Any, before: Any,
                 made: Any) -> UnsupportedOperationError:
    """Put back what attribute ``key`` of ``holder`` held before the call (``before``) and
    the refusal of the new object ``made`` the call bound there, at the line of ``fn`` that
    binds it."""
    try:
        if before is ABSENT:
            delattr(holder, key)
        else:
            setattr(holder, key, before)
    except (AttributeError, TypeError):
        pass
    where, text = writing_line(fn, label)
    kind = type(made).__name__
    if where is None:  # (bound by a helper fn calls: named at fn's def, the store quoted)
        code = getattr(getattr(fn, "__func__", fn), "__code__", None)
        if code is not None:
            where, text = (code.co_filename, code.co_firstlineno, code.co_name), \
                f"{label} = {kind}(...)"
    reason = (f"each call binds a new {kind} there, and a replay binds no new one (it cannot "
              f"make a {kind}: it would leave the capture's one object, the same each call); "
              f"make it outside the captured function and bind it before each replay: "
              f"{label} = {kind}(...)")
    message = explain(Failure("unsupported_op", CALL, label, where,
                              UserCode("other", shorten(text)), None, reason))
    return UnsupportedOperationError(message)
