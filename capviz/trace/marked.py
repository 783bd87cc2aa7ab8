"""An error the captured code raised while a written state's memory held the NaN mark.

The scope form writes NaN into a state's live array once the capture writes it
(:mod:`capviz.trace.state`), so NumPy's own reads of it show; code that then raises on it
(``int(W.sum())`` after ``W += t``) is refused at its line as the situation
``raised_on_mark`` (``core/violations.py``), naming the states.
"""

from __future__ import annotations

import linecache

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
