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
    reason = (f"each call binds a new {kind} there, and a replay binds no new one (it cannot "
              f"make a {kind}: it would leave the capture's one object, the same each call); "
              f"make it outside the captured function and bind it before each replay: "
              f"{label} = {kind}(...)")
    message = explain(Failure("unsupported_op", CALL, label, where,
                              UserCode("other", shorten(text)), None, reason))
    return UnsupportedOperationError(message)
