"""The refusals of :func:`capviz.trace.rebound.put_back`, each at the user's line with the fix
that applies: a number the call changed, an array NumPy computed bound outside the capture, a
capture tensor (or a tuple, list or dict of them) left in a name, an attribute the code asks
about, a class attribute shadowed."""

from __future__ import annotations

import functools
import linecache
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.symbols import Symbol
from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.trace import code_reach, effects, state_fixes
from capviz.trace.effects import REBOUND
from capviz.trace.fn_lines import (
    body,
    label_pattern,
    line_at,
    naming_line,
    source_lines,
    writing_line,
)
from capviz.trace.places import REBINDABLE, Place
from capviz.trace.recapture import CHANGES, line_code
from capviz.trace.tensor import Tensor

_UPDATE = re.compile(r"^\s*(?P<target>[\w.]+(?:\[[^\]=]+\][\w.]*)*)\s*=\s*(?P=target)\s*"
                     r"(?P<op>\*\*|//|[-+*/@%])\s*(?P<rest>.+?)\s*$")


OWNER = "an attribute of an object the call updates by its method"
"""The ``call`` of the situation ``updated_by_method`` (an AverageMeter's ``self.sum += v``)."""


CACHED = "a functools.cached_property the call fills"
"""The ``call`` of the situation ``cached_property_filled`` (R12 #2)."""


def _cached_property(place: Place) -> bool:
    """Whether attribute ``place`` is a ``functools.cached_property`` of its object's class
    (the call's first read computes it and stores it in the object's ``__dict__``)."""
    kind = type(place.holder)
    found = next((vars(k)[place.key] for k in kind.__mro__ if place.key in vars(k)), None)
    return isinstance(found, functools.cached_property)


def _reading_line(fn: Callable, label: str) -> tuple[Any, str]:
    """``((file, line, function), code)`` of the first line of ``fn`` naming ``label``."""
    found = source_lines(fn)
    if found is None:
        return None, ""
    code, lines, start = found
    name = re.compile(rf"(?<![\w.]){label_pattern(label)}(?![\w])")
    return next(((line_at(code, start + offset), text) for offset, text in body(lines)
                 if name.search(text)), (None, ""))


def owner_fix(place: Place, fn: Callable | None) -> tuple[Any, str, str, str] | None:
    """``(where, text, owner, fix)`` where attribute ``place`` belongs to an object of Python
    values only (no array: not an optimiser, whose counter has its own fix) that a line of
    ``fn`` calls a method of (``self.meter.update(loss)`` for ``self.meter.sum``, an
    AverageMeter's running sum and count), which no replay can update: the fix keeps the
    object outside the captured function, updated from what each replay returns."""
    label = place.label
    owner = label.rsplit(".", 1)[0]
    if fn is None or owner in ("self", label) or "[" in owner or \
            not hasattr(place.holder, "__dict__") or not all(
                v is None or type(v) in (bool, int, float, str, Tensor) or
                isinstance(v, np.generic) for v in vars(place.holder).values()):
        return None
    where, text = naming_line(fn, label)
    called = re.search(rf"(?<![\w.]){label_pattern(owner)}\.\w+\s*\(", text or "")
    if where is None or called is None:
        return None
    depth, end = 1, called.end()
    while end < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        end += 1
    call = text[called.start():end]
    fix = (f"keep {owner} outside the captured function: return the value the call gives it "
           f"(return out, loss), and after each replay call {call} with the value the replay "
           "returns")
    return where, text, owner, fix


def refuse_owner(label: str, found: tuple, why: str, recorder: Any) -> None:
    """Refuse attribute ``label`` of an object the call updates by its method, at the line of
    ``fn`` that calls it, with :func:`owner_fix`'s fix (``found``)."""
    where, text, _owner, fix = found
    message = explain(Failure("unsupported_op", OWNER, label, where,
                              UserCode("other", shorten(text)), None, f"{why}; {fix}"))
    recorder.pending.append(("unsupported_op", OWNER, message, where))


def refuse_changed(place: Place, now: Any, recorder: Any, source: Any,
                   fn: Callable | None) -> None:
    """Refuse a Python number the call changed (``self.t += 1`` with no array state, review 3
    finding 25), at the line of ``fn`` that writes it, else at ``source`` (the capture's
    line): a replay repeats what the capture computed from its value, and does not change
    it."""
    if place.kind == "attribute" and _cached_property(place):
        where, text = _reading_line(fn, place.label) if fn is not None else (None, "")
        message = explain(Failure(
            "unsupported_op", CACHED, place.label, where or source,
            UserCode("other", shorten(text)), None,
            f"the capture's call cached {now!r} there, and the capture put back what it held"))
        recorder.pending.append(("unsupported_op", CACHED, message, where or source))
        return
    reason = (f"the call changes {place.label} ({place.value!r} -> {now!r}) every time it "
              "runs, and the capture put it back")
    owned = owner_fix(place, fn) if place.kind == "attribute" else None
    if owned is not None:  # (an AverageMeter's self.count += n, in its update method)
        refuse_owner(place.label, owned, reason, recorder)
        return
    where, text = writing_line(fn, place.label) if fn is not None else (None, "")
    if where is None and fn is not None:  # changed by a call (next(self.sched) moves
        where, text = naming_line(fn, place.label)  # self.sched.i): the line naming its owner
    if where is None and fn is not None:  # written through another name (a partial's
        where, text = code_reach.writer_of(fn, place.label) or (None, "")  # st["n"] += 1)
    if where is not None:
        source = where
    parts = {}
    rate = isinstance(place.value, (float, np.floating))  # (a count may feed Python's math:
    update = _UPDATE.match(text) if rate else None  # passing it is the fix that works there)
    written = None if update is None or update["target"] != place.label else \
        state_fixes.operand_fix(f"{update['target']} {update['op']}= {update['rest']}",
                                np.asarray(place.value).dtype)
    if written is None and rate and \
            re.match(rf"^{label_pattern(place.label)}\s*(?:\*\*|//|[-+*/%])=(?!=)", text):
        written = state_fixes.operand_fix(text, np.asarray(place.value).dtype)
    if written is not None:  # (review 8, finding 23: the example named self.t for self.lr)
        parts["counter"], parts["counter_write"] = place.label, (  # (review 9, finding 4:
            f"{place.label} = np.array({place.label}) before the capture, then {written}")
    message = explain(Failure("unsupported_op", CHANGES, place.label, source,
                              UserCode("other", shorten(text), parts), None, reason))
    recorder.pending.append(("unsupported_op", CHANGES, message, source))


def sized_by_data(value: Any, depth: int = 3) -> bool:
    """Whether ``value`` is, or a tuple, list or dict holds, the length of a result whose size
    depends on the data (a :class:`~capviz.core.symbols.Symbol`: ``y.shape[0]`` of ``y =
    x[x > 0]``, ``np.unique(x).size``)."""
    if type(value) is Symbol:
        return True
    if depth <= 0 or type(value) not in (tuple, list, dict):
        return False
    items = value.values() if type(value) is dict else value
    return any(sized_by_data(item, depth - 1) for item in list(items)[:256])


def refuse_sized(place: Place, found: Any, recorder: Any, source: Any,
                 fn: Callable | None) -> None:
    """Refuse a size the data decides that the call stored outside (``self.n = y.shape[0]``
    of ``y = x[x > 0]``: review 10, finding 11, silent: the capture left its size symbol there
    and no replay stored the replay's length), at the line of ``fn`` that stores it."""
    where, text = writing_line(fn, place.label) if fn is not None else (None, "")
    reason = ("it holds the length of a result whose size depends on the data, which a replay "
              "does not store (it runs no Python), and the capture put back what it held; "
              "take it from what each replay returns: return the result it measures (return "
              "out, y) and read its length there")
    message = explain(Failure("unsupported_op", REBOUND, place.label, where or source,
                              UserCode("other", shorten(text)), None, reason))
    recorder.pending.append(("unsupported_op", REBOUND, message, where or source))


BY_NUMPY = "an array NumPy computed bound outside the capture"
"""The ``call`` of the situation ``rebound_by_numpy``."""


def refuse_numpy(place: Place, found: np.ndarray, recorder: Any, source: Any,
                  fn: Callable | None) -> None:
    """Put back the array ``place`` held, which the call rebound to ``found``, an array NumPy
    computed with no tensor (``self.W = self.W * 0.99``, ``np.roll(self.W, 1)``, a swap):
    the capture ran the update once and no replay would (hostile review 7, finding 8).
    Refused at the line of ``fn`` that binds it (else ``source``); marked to be captured as
    a rebind state (:mod:`capviz.trace.rebinding`: lifted, the name holds a tensor, so the
    update is recorded) where the new array has the old one's shape and dtype."""
    place.put_back()
    where, text = writing_line(fn, place.label) if fn is not None else (None, "")
    if where is None and fn is not None:  # (self.W, self.V = self.V, self.W)
        where, text = writing_line(fn, place.label, unpacked=True)
    fix = f"or pass {place.label} as an input and return its new value"
    match = re.match(rf"^\s*{label_pattern(place.label)}\s*=(?!=)(?P<rest>.*)$", text)
    update = _UPDATE.match(text) if type(place.value) is np.ndarray and \
        place.value.ndim == 0 and not isinstance(found, np.ndarray) else None
    written = None if update is None else state_fixes.operand_fix(
        f"{update['target']} {update['op']}= {update['rest']}", place.value.dtype)
    if written is not None:  # (self.lr = self.lr * 0.99 on a 0-d array: NumPy's scalar,
        #  which no replay binds; in place, a state: review 7, finding 25's lr decay)
        fix = (f"keep it a 0-d array and write it with a tensor, which the capture records "
               f"as a state: {written}, {fix}")
    elif match and re.search(rf"(?<![\w.]){label_pattern(place.label)}(?!\w)",
                           match["rest"]):
        new = re.sub(rf"(?<![\w.]){label_pattern(place.label)}(?![\w(])",
                     f"cv.constant({place.label})", match["rest"].strip(), count=1)
        fix = f"compute it from a tensor, which the capture records: {place.label} = {new}, {fix}"
    else:
        fix = f"compute it from a tensor (cv.constant({place.label})), which the capture " \
              f"records, {fix}"
    reason = (f"it held {_shown(place.value)} when the call started and NumPy made it "
              f"{_shown(found)}")
    message = explain(Failure("unsupported_op", BY_NUMPY, place.label, where or source,
                              UserCode("other", shorten(text)), None, f"{reason}; {fix}"))
    recorder.pending.append(("unsupported_op", BY_NUMPY, message, where or source))
    if place.kind in REBINDABLE and type(found) is np.ndarray and \
            found.shape == place.value.shape and found.dtype == place.value.dtype:
        place.lifts = message


def _shown(value: np.ndarray) -> str:
    text = np.array2string(value, threshold=6, precision=6)
    return shorten(f"{text} ({value.dtype}{list(value.shape)})", 60)


RETURN_REASON = ("the capture put the original object back, and a replay can return a value "
                  "but not bind it to a name; keep it a result: return it (return out, loss) "
                  "and set the attribute from what the replay returns")


NUMBER_REASON = effects.RUNNING


CONTAINER_REASON = (
    "the capture put the original object back, and a replay cannot bind a new tuple or list "
    "to a name; keep each value in an ndarray written in place (self.h[...] = h), which the "
    "capture records as a state, or return them")


STORED_REASON = (
    "the capture read arrays from it that a value of the capture then moved on, put back what "
    "it held, and a replay cannot store into it; keep the values in one ndarray written in "
    "place (buf[...] = np.concatenate([buf[1:], x[None]])), or pass them and return the new "
    "ones")


def refuse_asked(label: str, tensor: Tensor, recorder: Any, fn: Callable | None) -> None:
    """Refuse an attribute the call sets (``self.prev = out``) where the code it runs asks
    whether it exists (review 7's item, silent before: removed, and no replay set it)."""
    where, text = writing_line(fn, label) if fn is not None else (None, "")
    if where is None:
        where = tensor._data.source
        text = line_code(linecache.getline(where[0], where[1])) if where else ""
    reason = (f"the code the call runs asks whether {label} exists (hasattr, getattr, vars), "
              "and a later call takes the path it exists on, which this capture did not "
              f"record; create {label} before the capture, by one eager call")
    message = explain(Failure("unsupported_op", REBOUND, label, where,
                              UserCode("other", shorten(text)), None, reason))
    recorder.pending.append(("unsupported_op", REBOUND, message, where))


def refuse_kept(label: str, tensor: Tensor, recorder: Any) -> None:
    """Refuse a tuple, list or dict of values of the capture the call bound to a new attribute
    (a layer's ``self.cache = (x, out)``), which no replay builds, at the line that made it."""
    source = tensor._data.source
    where, text = source, ""
    if source:
        for line, code in state_fixes.function_lines(source[0], source[1], source[2]):
            if re.search(rf"(?<![\w.]){re.escape(label.split('.', 1)[-1])}\s*=(?!=)", code) \
                    or re.search(rf"\.{re.escape(label.rsplit('.', 1)[-1])}\s*=(?!=)", code):
                where, text = (source[0], line, source[2]), line_code(code)
                break
    message = explain(Failure("unsupported_op", REBOUND, label, where,
                              UserCode("other", shorten(text)), None, CONTAINER_REASON))
    recorder.pending.append(("unsupported_op", REBOUND, message, where))


def refuse_shadowing(place: Place, key: str, tensor: Tensor, recorder: Any) -> None:
    """Refuse an instance attribute the call bound over its class's array (``self.W = self.W
    - 0.1 * x`` with ``W`` a class attribute: the first call makes the instance's, which later
    calls read; hostile review 7, finding 13, silent)."""
    label = f"{place.label}.{key}"
    source = tensor._data.source
    text = line_code(linecache.getline(source[0], source[1])) if source else ""
    reason = (f"the call binds it over the class attribute {type(place.holder).__name__}.{key},"
              " which later calls stop reading, and the capture removed it; create "
              f"{label} in __init__ (an array of its own: {label} = "
              f"{type(place.holder).__name__}.{key}.copy()), so that the call rebinds or "
              "writes it as a state")
    message = explain(Failure("unsupported_op", REBOUND, label, source,
                              UserCode("other", shorten(text)), None, reason))
    recorder.pending.append(("unsupported_op", REBOUND, message, source))


def in_place_reason(text: str, source: Any = None) -> str:
    """Why, and the fix: the line as an in-place write where it is ``a = a <op> b``."""
    why = "the capture put the original object back"
    match = _UPDATE.match(text)
    if match is None:
        in_place = state_fixes.in_place(text, source)
        if in_place is not None:  # self.h = f(self.h): the one form that captures
            return f"{why}; write the new value into the array in place: {in_place}"
        return (f"{why}; write the new value into the array in place (a[...] = value, or "
                "a -= d), which the capture records as a state, or return it")
    return (f"{why}; write in place: {match['target']} {match['op']}= {match['rest']} (the "
            "capture records it as a state)")


def created_reason(label: str) -> str:
    """Why, and the fix, for a place that held None and the call bound a new array to (lazy
    creation: ``if self.v is None: self.v = np.zeros_like(self.W)``)."""
    return ("the capture put None back, and a replay cannot create an attribute or bind a "
            f"name; create {label} before the capture (in __init__, or by one eager call), so "
            "that the call writes it in place, which the capture records as a state")
