"""A capture tensor left in a name outside the capture: ``self.W = self.W - 0.5 * g``.

A functional update of an attribute, a global or a closure variable binds a capture tensor
there: a replay computes values and writes states in place, and cannot rebind a name, so the
graph would keep computing from the old array while eager calls move on; and the user's object
would hold a dead capture tensor after the capture. The function form notes, when the scope
opens, what the places it can see hold (:func:`note`: the attributes of a bound method's
``self``, the globals its code names, its closure cells, and inside them the items of lists and
dicts and the attributes of plain objects, three levels down: ``self.ws[0]``, ``self.d["w"]``,
``self.o.m``); when the scope exits,
:func:`put_back` puts the original object back in each place that now holds a capture tensor
and refuses it at the line of the op that made the tensor, with the in-place write as the fix.
Where the place held a plain ndarray and now holds a fresh array of its shape and dtype, the
refusal marks it (``Place.lifts``): :func:`capviz.capture` may then capture it as a *rebind
state*, bound again by each replay (:mod:`capviz.trace.rebinding`), the refusal dropped.

No capture tensor is left in a place the walk reaches: a new tuple, list or dict holding one
bound to a noted place (an LSTM's ``self.state = (h, c)``, a rotated ``self.frames =
self.frames[1:] + self.frames[:1]``) is refused the same way and the original put back; a list
or dict the walk reaches that holds one when the scope exits (``self.history.append(loss)``,
a slot ``self.frames[2] = obs * 1.0``) gets the items it held when the scope opened back; an
attribute the capture added to a walked object that holds one (``self.x = x`` in a layer's
forward) is removed. These last two are not refused (a Python side effect, docs/guide/state.md),
but a slot whose old array the capture read is, as above, and so is a dict item, an attribute
or a list slot that held an array the call stored a new value over (``bn["running_mean"] =
...``, ``self.opt.m = ...``, ``self.frames[2] = ...`` in a list that keeps its other items): a
replay could not store it.

The walk is :mod:`capviz.trace.places`; the lines a refusal points at,
:mod:`capviz.trace.fn_lines`; what a tensor grew from, :mod:`capviz.trace.provenance`.
"""

from __future__ import annotations

import functools
import inspect
import linecache
import re
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.trace import code_reach, effects, state_fixes
from capviz.trace.fn_lines import (
    body,
    label_pattern,
    line_at,
    naming_line,
    reads_itself,
    source_lines,
    writing_line,
)
from capviz.trace.mutation import current
from capviz.trace.places import DEPTH, ITEMS, SEQUENCES, Place, anchored, function_of, tensor_in
from capviz.trace.provenance import (
    ABSENT,
    accumulates,
    made_here,
    of_data,
    reaches,
    read_by_capture,
)
from capviz.trace.recapture import CHANGES, line_code
from capviz.trace.tensor import Tensor

REBOUND = effects.REBOUND
"""The ``call`` of the refusal (the situation ``rebound_to_tensor``)."""



_UPDATE = re.compile(r"^\s*(?P<target>[\w.]+(?:\[[^\]=]+\][\w.]*)*)\s*=\s*(?P=target)\s*"
                     r"(?P<op>\*\*|//|[-+*/@%])\s*(?P<rest>.+?)\s*$")



def put_back(places: list[Place], recorder: Any, source: Any = None, fn: Callable | None = None
             ) -> list[tuple[Place, np.ndarray]]:
    """Put the original object back in every place that holds a tensor of ``recorder`` now,
    or a new tuple, list or dict holding one, each refused (queued on ``recorder.pending``) at
    the line of the op that made the tensor. A place inside a container (``self.ws[0]``) is
    refused only where the capture read the array it held (a functional update of it): a
    scratch list the function fills with its own values (``calls.append(row)``) is not a
    rebinding; its items are put back all the same, and an attribute the capture added holding
    a tensor is removed (see the module docstring).

    Returns the places given a value made of ``create`` ops only where they held no array
    (a lazily made buffer: ``if self.mask is None: self.mask = np.tril(np.ones((n, n)))``),
    with that value, as NumPy computed it (:mod:`capviz.trace.fold`): not refused, the
    original put back for now, and bound by ``cv.capture`` once it has captured ``fn``."""
    read = None
    lists: dict[int, set[int]] | None = None
    binds: list[tuple[Place, np.ndarray]] = []
    asks = functools.cache(lambda: _asks_on_path(fn, places))
    known = None  # (the ids of the walked arrays: _unexplained)
    walked = {id(p.holder) for p in places if p.kind == "items"}  # (their logs: effects.py)
    logs = {id(p.holder): (dict(p.holder) if isinstance(p.holder, dict) else list(p.holder))
            for p in places if p.kind == "items" and  # as the call left them (effects.py)
            (tensor_in(p.holder, recorder, DEPTH, every=True) is not None or
             any(not isinstance(v, (np.ndarray, np.generic)) and not effects.stand_in(v)
                 for v in _changed(p)))}
    #        (Python values or objects logged)
    line = _first_line(fn) or source  # (where a log of Python values is looked for)
    outside = {id(p.holder) for p in places if p.kind == "items"}  # (self.log.append(self.cfg))
    for place in places:
        if place.kind in ("keys", "items"):
            continue
        found = place.get()
        if found is place.value:
            continue
        if isinstance(place.value, _NUMBERS) and type(found) is not Tensor:
            if not _same_number(place.value, found):  # self.t += 1: a replay repeats t
                place.put_back()
                if recorder.others is None or not place.inner or id(place.holder) not in walked:
                    _refuse_changed(place, found, recorder, source, fn)  # (a second run's
                #   item of a container the first logged into: effects.differs compares them)
            continue
        if isinstance(found, (np.ndarray, np.generic)) and type(place.value) is np.ndarray:
            if found.dtype != place.value.dtype or found.shape != place.value.shape or \
                    type(found) is not np.ndarray or \
                    found.tobytes() != place.value.tobytes():  # (an equal copy: no difference
                _refuse_numpy(place, found, recorder, source, fn)  # a replay makes)
            continue
        if type(found) is Tensor:
            if found._trace is not recorder:
                continue
            tensor = found
            made = made_here(found, recorder, place.value)
            if made is not None:
                place.put_back()
                binds.append((place, made))
                continue
        else:
            tensor = tensor_in(found, recorder, DEPTH) if type(found) in SEQUENCES else None
            if tensor is None:
                continue
        if place.inner and type(found) is Tensor:
            if read is None:
                read = {id(ref()) for ref in recorder.graph.constant_origins.values()}
            if lists is None:  # (before any item is put back)
                lists = {id(p.holder): _kept(p.holder, p.value) for p in places
                         if p.kind == "items" and type(p.holder) is list}
            if isinstance(place.value, _NUMBERS) and place.kind in ("dict", "list") and \
                    id(place.holder) in walked and not _running(place, found, fn):
                continue  # a value logged over a number (hist["mean"] = x.mean(), a list
                #           emptied and filled): an effect of the walked container's (below)
            if type(place.value) is np.ndarray and known is None:
                known = {id(a) for p in places if type(p.value) is np.ndarray
                         for a in _bases(p.value)}
            if not read_by_capture(place.value, read) and not _stored_over(place, lists, fn) \
                    and not (type(place.value) is np.ndarray and  # (self.vs[i] = 0.9 * v - ...
                             _unexplained(recorder, found, known)) \
                    and not isinstance(place.value, _NUMBERS) \
                    and not (place.value is None and accumulates(recorder, found, place)):
                place.put_back()  # not refused: a scratch item or attribute (self.l1.x = x)
                if place.value is None and place.kind == "attribute" and place.path and \
                        of_data(found, recorder):
                    if asks():  # (hasattr/getattr on the call's path: another path later)
                        _refuse_asked(place.label, found, recorder, fn)
                        continue
                    holder = _Held(place.holder, place.label.rsplit(".", 1)[0],
                                   (place.path[0], place.path[1][:-1]))
                    effects.record_attribute(holder, place.key, found, recorder)  # set again
                continue  #                                               by each replay
        if type(found) is Tensor and place.kind == "attribute" and (
                type(place.value) is np.ndarray or place.value is None or
                type(place.value) in (int, float) or isinstance(place.value, (
                    np.floating, np.integer))):  # (self.last = x.mean(): review 8, #19)
            if read is None:
                read = {id(ref()) for ref in recorder.graph.constant_origins.values()}
            if known is None:  # (the walked arrays and the arrays they are views of)
                known = {id(a) for p in places if type(p.value) is np.ndarray
                         for a in _bases(p.value)}
            if _cache_set(place, found, recorder, fn, read, known) and not asks():
                place.put_back()  # a cache the call sets over the last one (self.x = x after
                _set_by_replays(place, found, recorder)  # an eager call): by each replay
                continue
        place.put_back()
        source = tensor._data.source
        text = line_code(linecache.getline(source[0], source[1])) if source else ""
        reason = _CONTAINER_REASON if tensor is not found else _reason(text, source) \
            if isinstance(place.value, np.ndarray) else _created_reason(place.label) \
            if place.value is None else _NUMBER_REASON if isinstance(place.value, _NUMBERS) \
            and _running(place, found, fn) else _RETURN_REASON
        message = explain(Failure("unsupported_op", REBOUND, place.label, source,
                                  UserCode("other", shorten(text)), None, reason))
        recorder.pending.append(("unsupported_op", REBOUND, message, source))
        if tensor is found and rebindable(place, found, recorder):
            place.lifts = message  # (capviz.capture may capture it lifted: trace/rebinding.py)
    for place in places:
        if place.kind == "items":
            if read is None:
                read = {id(ref()) for ref in recorder.graph.constant_origins.values()}
            _items_back(place, recorder, read, logs.get(id(place.holder)), line, outside)
            _numpy_logged(place, recorder, source, fn)
        elif place.kind == "keys":
            binds += _added_removed(place, recorder, fn, asks, source)
    return binds



REBINDABLE = frozenset(("attribute", "slot", "global", "dict", "list", "cell"))
"""The kinds of :class:`Place` a replay can bind a new array to (one reference each)."""



def rebindable(place: Place, tensor: Tensor, recorder: Any) -> bool:
    """Whether ``place``, which held a plain ndarray, was rebound to ``tensor``, a fresh array
    of the same shape and dtype computed by the capture (``self.W = self.W - lr * g``,
    ``BN_PARAM["running_mean"] = m * running_mean + (1 - m) * mean``): a replay can bind the
    new value there as an eager call does (:mod:`capviz.trace.rebinding`)."""
    held = place.value
    if place.kind not in REBINDABLE or type(held) is not np.ndarray or not held.ndim or \
            type(tensor) is not Tensor or tensor._trace is not recorder:
        return False  # (a 0-d array: eager may bind NumPy's scalar, a replay an array)
    node = current(recorder, tensor)
    if node.kind != "op" or node.shape != held.shape or node.dtype != held.dtype:
        return False
    return fresh(node)  # a fresh array, never a view of an operand (what eager binds)



def fresh(node: Any) -> bool:
    """Whether op ``node``'s result is an array NumPy allocates, never a view of an operand."""
    op = ops.OPS.get(node.op)
    return op is not None and (op.out or op.random or node.op in _FRESH)



_FRESH = frozenset(("create", "copy", "astype", "where", "clip", "concatenate", "stack", "dot",
                    "roll", "zeros_like", "ones_like", "full_like", "setitem", "index_put",
                    "mean"))
"""Ops with no ``out`` whose result NumPy always allocates (as replay/plan.py's FRESH_OPS)."""



_NUMBERS = (bool, int, float, complex, np.generic)



def _same_number(before: Any, now: Any) -> bool:
    if type(before) is not type(now):
        return False
    try:
        return bool(before == now) or (before != before and now != now)  # (NaN is NaN)
    except (TypeError, ValueError):
        return False



def _refuse_changed(place: Place, now: Any, recorder: Any, source: Any,
                    fn: Callable | None) -> None:
    """Refuse a Python number the call changed (``self.t += 1`` with no array state, review 3
    finding 25), at the line of ``fn`` that writes it, else at ``source`` (the capture's
    line): a replay repeats what the capture computed from its value, and does not change
    it."""
    reason = (f"the call changes {place.label} ({place.value!r} -> {now!r}) every time it "
              "runs, and the capture put it back")
    where, text = writing_line(fn, place.label) if fn is not None else (None, "")
    if where is None and fn is not None:  # changed by a call (next(self.sched) moves
        where, text = naming_line(fn, place.label)  # self.sched.i): the line naming its owner
    if where is not None:
        source = where
    message = explain(Failure("unsupported_op", CHANGES, place.label, source,
                              UserCode("other", shorten(text)), None, reason))
    recorder.pending.append(("unsupported_op", CHANGES, message, source))



BY_NUMPY = "an array NumPy computed bound outside the capture"
"""The ``call`` of the situation ``rebound_by_numpy``."""



def _refuse_numpy(place: Place, found: np.ndarray, recorder: Any, source: Any,
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



_RETURN_REASON = ("the capture put the original object back, and a replay can return a value "
                  "but not bind it to a name; keep it a result: return it (return out, loss) "
                  "and set the attribute from what the replay returns")



def _line_of(tensor: Tensor) -> str:
    source = tensor._data.source
    return line_code(linecache.getline(source[0], source[1])) if source else ""



def _running(place: Place, tensor: Tensor, fn: Callable | None) -> bool:
    """Whether the call stores a running value at ``place`` (a number a tensor was added to:
    :func:`capviz.trace.fn_lines.reads_itself` of the line that made ``tensor`` or of the line
    of ``fn`` that writes the place)."""
    if reads_itself(_line_of(tensor), place.label):
        return True
    return fn is not None and reads_itself(writing_line(fn, place.label)[1], place.label)



_NUMBER_REASON = effects.RUNNING



_CONTAINER_REASON = (
    "the capture put the original object back, and a replay cannot bind a new tuple or list "
    "to a name; keep each value in an ndarray written in place (self.h[...] = h), which the "
    "capture records as a state, or return them")



def _items_back(place: Place, recorder: Any, read: set[int], left: Any = None,
                line: Any = None, outside: Any = frozenset()) -> None:
    """The items a walked list, dict or deque held when the scope opened, put back when it
    holds a tensor of ``recorder`` now (appended, or bound to an item the capture did not
    read), or a Python value the call logged (``self.log.append("step")``: logged again by
    each replay, :mod:`capviz.trace.effects`; ``line``: a line of the function). Refused when
    an array the capture read from it is no longer where it was (a deque of frames appended
    to, which drops its oldest): the graph holds the arrays it read, and eager calls move them
    on."""
    holder = place.holder
    tensor = tensor_in(holder, recorder, DEPTH, every=True)  # (past the walked items too)
    if tensor is None and left is not None:  # (its items put back already: a list emptied
        tensor = tensor_in(left, recorder, DEPTH, every=True)  # and filled, slots set)
    if tensor is None:
        if left is not None:  # Python values only (a log of them)
            _values_back(place, recorder, left, line, outside)
        return
    before = place.value
    grown = _grown(holder, before, recorder, place.label)
    place.grew = not isinstance(holder, dict) and any(  # (recapture.grown: a list read after it
        type(v) is Tensor and v._trace is recorder and of_data(v, recorder)
        for v in list(holder)[len(before):])  # grew with values of the data, not a memo of
    #                                           constants: if not DEQ: DEQ.append(np.tril(..)))
    logged = None if grown is not None or left is None else effects.logged(
        place, left, recorder, lambda t: of_data(t, recorder), line, outside)  # (left: as
    #                                                                  the call left it)
    if isinstance(holder, dict):
        moved = any(holder.get(key, holder) is not item for key, item in before.items()
                    if read_by_capture(item, read))
        holder.clear()
        holder.update(before)
    else:
        now = list(holder)
        moved = any(k >= len(now) or now[k] is not item for k, item in enumerate(before)
                    if read_by_capture(item, read))
        if type(holder) is list:
            holder[:] = before
        else:
            holder.clear()
            holder.extend(before)
    if moved:
        source = tensor._data.source
        text = line_code(linecache.getline(source[0], source[1])) if source else ""
        message = explain(Failure("unsupported_op", REBOUND, place.label, source,
                                  UserCode("other", shorten(text)), None, _STORED_REASON))
        recorder.pending.append(("unsupported_op", REBOUND, message, source))
    elif grown is not None:
        key, tensor = grown
        label = f"{place.label}[{key!r}]"
        source = tensor._data.source
        text = line_code(linecache.getline(source[0], source[1])) if source else ""
        running = current(recorder, tensor).shape == () and \
            effects.accumulated(label, tensor, line)  # (m["loss"] = m.get(...) + v; an array:
        #                                               one eager call makes it a rebind state)
        message = explain(Failure("unsupported_op", REBOUND, label, source,
                                  UserCode("other", shorten(text)), None,
                                  _NUMBER_REASON if running else _created_reason(label)))
        recorder.pending.append(("unsupported_op", REBOUND, message, source))
    elif logged is not None:  # a log: appended or set again by each replay, or refused
        effects.record(place, left, logged, recorder)



def _changed(place: Place) -> list:
    """The items walked container ``place.holder`` holds now that it did not hold there when
    the scope opened (``place.value``: its items then)."""
    holder, before = place.holder, place.value
    if isinstance(holder, dict):
        return [v for k, v in holder.items() if before.get(k, place) is not v]
    now = list(holder)
    return [v for k, v in enumerate(now) if k >= len(before) or before[k] is not v]


def _values_back(place: Place, recorder: Any, left: Any, line: Any,
                 outside: Any = frozenset()) -> None:
    """Give walked container ``place.holder``, which the call logged Python values into and
    no tensor, the items it held, and record the values as logs of each replay, or refuse
    what a replay cannot repeat (:func:`capviz.trace.effects.logged`)."""
    found = effects.logged(place, left, recorder, lambda _t: True, line, outside)
    if found is None:
        return
    place.grew = not isinstance(place.holder, dict) and isinstance(found, list)  # (a line reading
    place.left = left  # it is refused: len(self.log); a second run starts from what it left)
    effects.set_items(place.holder, place.value)
    effects.record(place, left, found, recorder, line)


def _first_line(fn: Callable | None) -> Any:
    """``(file, line, function)`` of ``fn``'s ``def`` line, or ``None``."""
    found = source_lines(fn) if fn is not None else None
    if found is None:
        return None
    code, lines, start = found
    for offset, text in enumerate(lines):  # (past its decorators)
        if text.lstrip().startswith(("def ", "async def ")):
            return line_at(code, start + offset)
    return None


def _numpy_logged(place: Place, recorder: Any, source: Any, fn: Callable | None) -> None:
    """Refuse, at the line of ``fn`` that logs it, an ndarray NumPy computed with no tensor
    that the call put in walked container ``place.holder`` (``self.log.append(self.W * 1.0)``
    after ``self.W -= ...``, ``.copy()``, a view: hostile review 7, finding 17: the capture left
    the second pass's planted values there, and no replay logs), and give it its items back."""
    holder, before = place.holder, place.value
    if isinstance(holder, dict):
        new = [v for k, v in holder.items() if before.get(k, place) is not v]
    else:
        now, k = list(holder), 0
        while k < min(len(now), len(before)) and now[k] is before[k]:
            k += 1
        new = now[k:] if len(now) != len(before) or k < len(now) else []
    if not any(isinstance(v, (np.ndarray, np.generic)) and type(v) is not Tensor for v in new):
        return
    if isinstance(holder, dict):
        holder.clear()
        holder.update(before)
    elif type(holder) is list:
        holder[:] = before
    else:
        holder.clear()
        holder.extend(before)
    where, text = None, ""
    found = source_lines(fn) if fn is not None else None
    if found is not None:
        code, lines, start = found
        logging = re.compile(effects.logging_pattern(place.label))
        for offset, line in enumerate(lines[1:], 1):
            if logging.search(line_code(line)):
                where, text = line_at(code, start + offset), line_code(line)
                break
    message = explain(Failure("unsupported_op", effects.KEPT, place.label, where or source,
                              UserCode("other", shorten(text)), None, (
                                  "NumPy computed the value it logs there without a tensor, "
                                  "so no replay logs it, and the capture put the items "
                                  "back")))
    recorder.pending.append(("unsupported_op", effects.KEPT, message, where or source))



def _grown(holder: Any, before: Any, recorder: Any, label: str) -> tuple[Any, Tensor] | None:
    """An item the capture put where ``holder`` held nothing or ``None`` (``before``: its items
    when the scope opened) whose value grew from the data out of a buffer the capture made
    (:func:`grew_from_made`):
    an accumulator made on the first call (``if "s" not in self.stats: self.stats["s"] =
    np.zeros(3)``, then ``self.stats["s"] += x``), which a later call finds and adds to, where
    every replay starts again from the zeros (review 6, finding 15: silent). ``(key, tensor)``,
    or ``None``. A value logged there (``self.history.append(loss)``) grows from no such
    buffer: put back, not refused (a Python side effect)."""
    if isinstance(holder, dict):
        items = [(k, v) for k, v in holder.items() if before.get(k) is None]
    elif type(holder) is list:
        items = [(k, v) for k, v in enumerate(holder) if k >= len(before) or before[k] is None]
    else:
        return None
    for key, value in items[:ITEMS]:
        tensor = tensor_in([value], recorder, DEPTH)
        if tensor is not None and type(holder) is list and key >= len(before) and \
                not effects.tested(label, tensor._data.source):
            continue  # appended to a list fn does not test: a log (self.log.append(y.sum())
            #           with y made from np.zeros), not an accumulator made on the first call
        if tensor is not None and accumulates(recorder, tensor, label):
            return key, tensor
    return None



_STORED_REASON = (
    "the capture read arrays from it that a value of the capture then moved on, put back what "
    "it held, and a replay cannot store into it; keep the values in one ndarray written in "
    "place (buf[...] = np.concatenate([buf[1:], x[None]])), or pass them and return the new "
    "ones")



class _Held:
    """The object holding an attribute, as :func:`capviz.trace.effects.record_attribute`
    takes it: the object, its label and its path."""

    __slots__ = ("holder", "label", "path")

    def __init__(self, holder: Any, label: str, path: tuple) -> None:
        self.holder, self.label, self.path = holder, label, path



_ASKING = frozenset(("getattr", "hasattr", "vars", "AttributeError", "__dict__"))


def _asks_on_path(fn: Callable | None, places: list[Place]) -> bool:
    """Whether the code ``fn`` runs can ask whether an attribute exists (``getattr(self,
    "prev", None)``, ``hasattr``, ``except AttributeError``, ``vars``, ``__dict__``: read from
    the bytecode it reaches, :mod:`capviz.trace.code_reach`): a later call may then take
    another path once a replay sets what the last one set (taken as asking where ``fn`` is
    not known). Another method of the class that asks (a ``backward`` testing ``hasattr(self,
    "x")``) is not on the path: it sees what each replay sets, as after each call."""
    if fn is None:
        return True
    return not _ASKING.isdisjoint(code_reach.reach(fn, places).names)


def _refuse_asked(label: str, tensor: Tensor, recorder: Any, fn: Callable | None) -> None:
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


def _cache_set(place: Place, tensor: Tensor, recorder: Any, fn: Callable | None,
               read: set[int], known: set[int] = frozenset()) -> bool:
    """Whether the call sets attribute ``place`` (which held an ndarray) to ``tensor``, a value
    of the data, and no line of ``fn``, of a method of the object or a function of its module
    ``fn`` names, mentions the attribute but to set it (NumPy may read the array it held with
    no tensor: ``0.9 * self.m``, which the graph keeps): a cache each call sets anew
    (``self.x = x`` in a layer's forward after an eager call: review 8, finding 3), which each
    replay can set as the call does."""
    if not of_data(tensor, recorder) or read_by_capture(place.value, read) or fn is None \
            or _unexplained(recorder, tensor, known):
        return False
    found = source_lines(fn)
    if found is None:
        return False
    texts = [text for _, text in body(found[1])]  # (a one-line def's too)
    owner, space = type(place.holder), getattr(function_of(fn)[1], "__globals__", {})
    for name in found[0].co_names:  # (a method or a function of its module reading it)
        helper = getattr(owner, name, None) if name not in space else space[name]
        if isinstance(helper, (types.FunctionType, types.MethodType)):
            try:
                texts += [text for _, text in body(inspect.getsourcelines(helper)[0])]
            except (OSError, TypeError):
                return False
    reading = re.compile(rf"\.{re.escape(place.key)}\b(?!\s*=(?!=))")
    return not any(reading.search(part) for text in texts for part in text.split(";"))


def _bases(array: np.ndarray) -> list[np.ndarray]:
    found = [array]
    while isinstance(found[-1].base, np.ndarray):
        found.append(found[-1].base)
    return found


def _unexplained(recorder: Any, tensor: Tensor, known: set[int]) -> bool:
    """Whether ``tensor`` is computed from an array constant that is no array the walk found
    (``known``: their ids), an array NumPy made with no tensor (``0.9 * self.W`` in a method of
    another object: the old value, baked in; W=20c's census, 05:12, silent): a value no replay
    can be trusted to set."""
    origins = recorder.graph.constant_origins
    return reaches(recorder, tensor, lambda n: n.kind == "constant" and n.shape not in ((), None)
                   and (n.index not in origins or id(origins[n.index]()) not in known))


def _set_by_replays(place: Place, tensor: Tensor, recorder: Any) -> None:
    """An effect output setting attribute ``place`` to ``tensor``'s value after each replay."""
    if place.path is not None:
        anchor, steps = place.path[0], place.path[1][:-1]
    else:  # (an attribute of fn's own object)
        anchor, steps = anchored(place.holder, (True, place.key))[0], ()
    holder = _Held(place.holder, place.label.rsplit(".", 1)[0], (anchor, steps))
    effects.record_attribute(holder, place.key, tensor, recorder)



def _added_removed(place: Place, recorder: Any, fn: Callable | None = None,
                   asks: Callable[[], bool] | None = None, source: Any = None
                   ) -> list[tuple[Place, np.ndarray]]:
    """The attributes the capture added to a walked object that hold a tensor of
    ``recorder`` (``self.x = x``), removed and set by each replay (refused where the code the
    call runs asks whether they exist: ``asks``); those holding an array made of ``create``
    ops (:func:`made_here`), with their values, to bind once ``fn`` is captured."""
    attributes = vars(place.holder)
    binds = []
    shadowed = vars(type(place.holder))
    for key in [k for k in attributes if k not in place.value]:
        value = attributes[key]
        if type(value) is Tensor and value._trace is recorder and \
                type(shadowed.get(key)) is np.ndarray:  # (over the class's array it read)
            del attributes[key]
            _refuse_shadowing(place, key, value, recorder)
        elif type(value) is Tensor and value._trace is recorder:
            made = made_here(value, recorder, ABSENT)
            if made is not None:
                binds.append((Place("keys", place.holder, key, f"{place.label}.{key}", None),
                              made))
            elif of_data(value, recorder):
                if asks is None or asks() or place.path is None:  # (if not hasattr(self,
                    _refuse_asked(f"{place.label}.{key}", value, recorder, fn)  # "cache"))
                else:
                    effects.record_attribute(place, key, value, recorder)  # self.x = x: set
            del attributes[key]  #                                       again by each replay
        elif type(value) in SEQUENCES and tensor_in(value, recorder, DEPTH) is not None:
            items = value.values() if isinstance(value, dict) else value
            made = [t for t in items if type(t) is Tensor and t._trace is recorder
                    and t._data.kind == "op"]  # (its line: one the function computed)
            tensor = made[0] if made else tensor_in(value, recorder, DEPTH)
            del attributes[key]  # (self.cache = (x, out): no replay builds it; review 7 #35)
            if of_data(tensor, recorder):
                _refuse_kept(f"{place.label}.{key}", tensor, recorder)
        elif isinstance(value, _NUMBERS) and type(value) is not bool:  # self.count =
            del attributes[key]  # getattr(self, "count", 0) + 1, a function's f.n: a number
            added = Place("attribute", place.holder, key, f"{place.label}.{key}", None)
            _refuse_changed(added, value, recorder, source, fn)  # each call changes, which
    return binds  #                 the capture made once (hostile review 8, finding 1: Q19)



def _refuse_kept(label: str, tensor: Tensor, recorder: Any) -> None:
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
                              UserCode("other", shorten(text)), None, _CONTAINER_REASON))
    recorder.pending.append(("unsupported_op", REBOUND, message, where))



def _refuse_shadowing(place: Place, key: str, tensor: Tensor, recorder: Any) -> None:
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



def _stored_over(place: Place, lists: dict[int, set[int]], fn: Callable | None = None
                 ) -> bool:
    """Whether the call stored a value over the array a place inside a container held, which a
    replay cannot store (``bn["running_mean"] = m * running_mean + ...``, ``self.opt.m = ...``,
    ``self.frames[2] = obs * 1.0``; the hostile review 3, finding 34): a dict item or an
    attribute that held an ndarray, or a list item that did where the list still holds another
    item where it held it (``lists``: those positions, per list; a slot written, not a scratch
    list emptied and filled again: ``calls.clear(); calls.append(row)``), or where a line of
    ``fn`` stores into an item of the list from a read of it (``self.vs[i] = 0.9 *
    self.vs[i] - lr * g``: CS231n's momentum over a list, which NumPy may compute from the old
    array with no tensor; review 8, finding 22: silent, refilled from the capture's value)."""
    if not isinstance(place.value, np.ndarray):
        return False
    if place.kind != "list":
        return True
    if lists.get(id(place.holder), set()) - {place.key}:
        return True
    return _slot_updated(place.label.rsplit("[", 1)[0], fn)


def _slot_updated(label: str, fn: Callable | None) -> bool:
    """Whether a statement of ``fn`` stores into an item of the list at ``label`` in place or
    from a read of the list (``label[i] = 0.9 * label[i] + ...``, ``label[0] += x``)."""
    found = source_lines(fn) if fn is not None else None
    if found is None:
        return False
    name = label_pattern(label)
    store = re.compile(rf"(?:^|:\s*){name}\s*\[[^\]]*\]\s*(?:\*\*|//|>>|<<|[-+*/%@&|^])?=(?!=)"
                       rf"(?P<right>.*)$")
    for _, text in body(found[1]):
        for part in text.split(";"):
            match = store.search(part.strip())
            if match and (not match.group(0).split("[", 1)[1].split("]", 1)[1].lstrip()
                          .startswith("=") or re.search(rf"(?<![\w.]){name}(?!\w)",
                                                        match["right"])):
                return True
    return False



def _kept(now: list, before: list) -> set[int]:
    """The positions of ``now`` that hold the item ``before`` held there."""
    return {k for k, item in enumerate(before) if k < len(now) and now[k] is item}



def _reason(text: str, source: Any = None) -> str:
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



def _created_reason(label: str) -> str:
    """Why, and the fix, for a place that held None and the call bound a new array to (lazy
    creation: ``if self.v is None: self.v = np.zeros_like(self.W)``)."""
    return ("the capture put None back, and a replay cannot create an attribute or bind a "
            f"name; create {label} before the capture (in __init__, or by one eager call), so "
            "that the call writes it in place, which the capture records as a state")
