"""The scope form's NaN mark: an error the captured code raised while a written state's memory
held it, and the outside arrays NumPy carried it into.

The scope form writes NaN into a state's live array once the capture writes it
(:mod:`capviz.trace.state`), so NumPy's own reads of it show; code that then raises on it
(``int(W.sum())`` after ``W += t``) is refused at its line as the situation
``raised_on_mark`` (``core/violations.py``), naming the states. The error is also an instance of
the exception the code raised (:func:`catchable_as`), since capviz cannot tell ``int()`` of a
NaN from the function's own ``raise ValueError(...)``: ``except ValueError`` in the user's code
catches it as an eager call's would (review 3, finding 20).

NumPy's own operators can carry the mark into another outside array (``self.W += self.v`` after
``self.v -= lr * g``: review 3, finding 1; ``W += v`` with both closure cells of the stepped
function: review 4, finding 6). So at the first mark :func:`note_marked` notes the arrays the
``with`` block can reach by name (:func:`capviz.trace.places.block_places`: the names its
statements use, where the frame that opened it binds them, and inside them; a function among
them by its ``self``, globals and closure cells, and the functions its code names, two levels),
copies the small ones, and copies the large ones too, the smallest first, until those copies
reach :data:`COPY_BYTES` (the weights before a data set a notebook holds); when the scope exits
:func:`refuse_marked` puts back every one that is no state and changed since, and refuses the
first at the exit, naming it. One past the budget is only fingerprinted
(:func:`capviz.core.references.fingerprint`): it is refused all the same, and the message says
it holds what NumPy wrote (capviz's mark where it was carried) and could not be put back. A
scope that writes no state pays nothing; what NumPy wrote before the first mark, and arrays
only a function further down reaches, are not seen (the scope form's residue,
docs/guide/state.md). The frame's every local and global is noted too (the block's names
alone missed a weight reached three helpers down, or from a scope opened in the user's own
context manager, and left it holding the mark: hostile review 5, finding 3), so a stateful
scope in a notebook fingerprints the notebook's large arrays at its first mark (a 400 MB data
set: about 60-90 ms); one past the budget is fingerprinted, never copied.
"""

from __future__ import annotations

import linecache
from typing import Any

import numpy as np

from capviz.core.errors import CapvizError
from capviz.core.references import fingerprint
from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.trace import outside_writes, recapture, scope_block
from capviz.trace import places as walk
from capviz.trace.recapture import shown
from capviz.trace.recorder import Recorder
from capviz.trace.state import poisoned, root_of

COPY_BYTES = 256 << 20
"""At most this many bytes of the large arrays the scope's block reaches are copied at the first
mark, the smallest first (the weights before a data set); the rest are fingerprinted."""


class Kept:
    """The large arrays :func:`note_marked` copied: each with its copy and fingerprint."""

    __slots__ = ("arrays",)

    def __init__(self) -> None:
        self.arrays: list[tuple[str, np.ndarray, np.ndarray, bytes]] = []

    def put_back(self, states: set[int]) -> list[outside_writes.Written]:
        """Each one that is no state (``states``: ids of their arrays) whose fingerprint
        changed, given its copy back."""
        written = []
        for label, array, copy, digest in self.arrays:
            if id(root_of(array)) in states or fingerprint(array) == digest:
                continue
            made = array.copy()
            array[...] = copy
            written.append(outside_writes.Written(label, array, copy, made))
        return written


def _keep(snapshot: outside_writes.Snapshot, states: dict) -> Kept:
    """Move the large arrays ``snapshot`` watches into a :class:`Kept`, copied, the smallest
    first, until the copies reach :data:`COPY_BYTES` (a state's array, ``states``, is not:
    its memory holds the mark, and the scope's exit gives it its values back)."""
    kept = Kept()
    total = 0
    for item in sorted(snapshot.watched, key=lambda item: item[1].nbytes):
        label, array, digest = item
        if id(root_of(array)) in states:
            continue
        if total + array.nbytes > COPY_BYTES:
            break
        total += array.nbytes
        kept.arrays.append((label, array, array.copy(order="K"), digest))
        snapshot.watched.remove(item)
    return kept


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


def note_marked(recorder: Recorder, line: int | None = None) -> None:
    """At the scope form's first NaN mark: note the outside arrays the ``with`` block whose
    header is at ``line`` of the frame that opened the scope can reach, once (see the module
    docstring)."""
    if recorder.marked_outside is not None:
        return
    frame = recorder.scopes.entry
    names = None if frame is None else scope_block.names(frame.f_code.co_filename, line,
                                                         frame.f_globals)
    places = walk.block_places(frame, names)  # (the closure cells of the functions it names)
    if names is not None:  # and every local and global: the block's names missed a weight three
        places += walk.frame_places(frame)  # helpers down, or one a scope opened in the
    snapshot = outside_writes.note(places)     # user's own context manager left all NaN (R5 #3)
    recorder.marked_outside = (snapshot, _keep(snapshot, recorder.states))


def refuse_marked(recorder: Recorder, source: Any) -> None:
    """When the scope exits, after the states' values are back: put back every array
    :func:`note_marked` noted that is no state (nor a view of one) and that NumPy changed,
    and queue the refusal of the first on ``recorder.pending``, at ``source``."""
    noted, recorder.marked_outside = recorder.marked_outside, None
    if noted is None:
        return
    snapshot, kept = noted
    states = {id(s.ref()) for s in recorder.states.values() if s.ref() is not None}
    snapshot.noted = [item for item in snapshot.noted if id(root_of(item[1])) not in states]
    snapshot.watched = [item for item in snapshot.watched
                        if id(root_of(item[1])) not in states]
    written = kept.put_back(states) + snapshot.put_back()
    if not written:
        return
    first = written[0]
    label = first.label
    names = _names([s.node.name or "an outside ndarray" for s in recorder.states.values()])
    if first.before is None:
        carried = (f"NumPy computed it from {names}, which held capviz's NaN mark once the "
                   "capture wrote it, so it holds that mark now" if poisoned(first.made)
                   else "NumPy changed it")
        happened = (f"{carried}: it is too large ({outside_writes.mib(first.array)}; the scope "
                    f"form copies {COPY_BYTES >> 20} MiB of arrays) for the capture to have "
                    "kept a copy of, so it could not put it back; set it back from a copy of "
                    "your own")
    elif poisoned(first.made):
        happened = (f"NumPy computed it from {names}, which held capviz's NaN mark once the "
                    f"capture wrote it, so it held {shown(first.before)} when the capture "
                    f"wrote {names} and NumPy made it {shown(first.made)}")
    else:
        happened = (f"it held {shown(first.before)} when the capture wrote {names} and NumPy "
                    f"made it {shown(first.made)}")
    others = [w.label for w in written[1:]]
    also = f"; NumPy also wrote {_names(others)}" if others else ""
    back = "" if first.before is None else "; the capture put it back"
    state = next((s.node.name for s in recorder.states.values() if s.node.name), "v")
    fix = (f"write {label} from tensors: read {state} through cv.constant once the capture "
           f"wrote it ({label} += cv.constant({state}) for {label} += {state}), or pass "
           f"{label} as an input and return its new value")
    reason = f"{happened}{also}{back}; {fix}"
    message = explain(Failure("unsupported_op", outside_writes.OUTSIDE, label, source,
                              UserCode("other", "", {"array": label}), None, reason))
    recorder.pending.append(("unsupported_op", outside_writes.OUTSIDE, message, source))


def _names(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``; past three: ``a, b, c and 7 more``."""
    if len(names) > 3:
        return f"{', '.join(names[:3])} and {len(names) - 3} more"
    return " and ".join(names) if len(names) < 3 else f"{names[0]}, {names[1]} and {names[2]}"
