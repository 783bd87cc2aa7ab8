"""An error the captured code raised while a written state's memory held the NaN mark.

The scope form writes NaN into a state's live array once the capture writes it
(:mod:`capviz.trace.state`), so NumPy's own reads of it show; code that then raises on it
(``int(W.sum())`` after ``W += t``) is refused at its line as the situation
``raised_on_mark`` (``core/violations.py``), naming the states. The error is also an instance of
the exception the code raised (:func:`catchable_as`), since capviz cannot tell ``int()`` of a
NaN from the function's own ``raise ValueError(...)``: ``except ValueError`` in the user's code
catches it as an eager call's would (review 3, finding 20).
"""

from __future__ import annotations

import linecache
from typing import Any

from capviz.core.errors import CapvizError
from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.trace import recapture
from capviz.trace.recorder import Recorder

MARKED = "an error raised while a state held the capture's NaN mark"
"""The ``call`` of the situation ``raised_on_mark``."""


def raised_on_mark(recorder: Recorder, exc: BaseException) -> BaseException | None:
    """``exc``, raised by the captured code (not capviz) while a written state's memory held
    the NaN mark (``int(W.sum())`` after ``W += t``), recorded as the refusal of that line,
    naming the states; ``exc`` itself when recorded (``None`` when it is no such error)."""
    if not isinstance(exc, Exception) or isinstance(exc, CapvizError):
        return None
    names = [s.node.name or "an ndarray from outside" for s in recorder.states.values()
             if s.poisoned and not s.filled]
    if not names:
        return None
    source = recapture.raised_at(exc)
    text = str(exc).splitlines()[0] if str(exc) else ""
    raised = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    message = explain(Failure("unsupported_op", MARKED, " and ".join(names), source,
                              UserCode("other", shorten(recapture.line_code(
                                  linecache.getline(source[0], source[1])) if source else "")),
                              None, raised))
    recorder.violation("unsupported_op", MARKED, message, source, raise_now=False)
    return exc


_BOTH: dict[tuple[type, type], type] = {}


def _as_refusal(error: BaseException) -> tuple:
    """Pickle a refusal made catchable as the function's error as the refusal alone (its class
    made at run time is not importable)."""
    base = type(error).__mro__[1]
    return (base, error.args, dict(vars(error)) or None)


def catchable_as(error: BaseException, exc: BaseException) -> None:
    """Make the refusal ``error`` an instance of ``exc``'s type too (a class derived from both,
    made once per pair), so that an ``except`` clause for what the function raised catches it;
    left as it is where the two types cannot be combined (their layouts differ in C, as
    ``OSError``'s does)."""
    key = (type(error), type(exc))
    both: Any = _BOTH.get(key)
    if both is None:
        try:
            both = type(type(error).__name__, key, {"__module__": type(error).__module__,
                                                    "__doc__": type(error).__doc__,
                                                    "__reduce__": _as_refusal})
        except TypeError:
            return
        _BOTH[key] = both
    try:
        error.__class__ = both
    except TypeError:
        return
