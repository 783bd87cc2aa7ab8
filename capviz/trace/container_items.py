"""The lists, dicts and deques the walk reaches (:mod:`capviz.trace.places`), given back the
items they held when the scope opened (:func:`capviz.trace.rebound.put_back`): what the call
logged into them recorded as logs of each replay (:mod:`capviz.trace.effects`), and refused
where a replay cannot repeat it (an array the capture read moved on, an accumulator made on the
first call, an array NumPy computed with no tensor logged, a slot stored over)."""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.trace import effects
from capviz.trace.effects import REBOUND
from capviz.trace.fn_lines import body, label_pattern, line_at, source_lines
from capviz.trace.mutation import current
from capviz.trace.places import DEPTH, ITEMS, Place, tensor_in
from capviz.trace.provenance import accumulates, of_data, read_by_capture
from capviz.trace.rebound_refusals import (
    NUMBER_REASON,
    STORED_REASON,
    created_reason,
    refuse_sized,
    sized_by_data,
)
from capviz.trace.recapture import line_code
from capviz.trace.tensor import Tensor


def items_back(place: Place, recorder: Any, read: set[int], left: Any = None,
                line: Any = None, outside: Any = frozenset(), fn: Any = None) -> None:
    """The items a walked list, dict or deque held when the scope opened, put back when it
    holds a tensor of ``recorder`` now (appended, or bound to an item the capture did not
    read), or a Python value the call logged (``self.log.append("step")``: logged again by
    each replay, :mod:`capviz.trace.effects`; ``line``: a line of the function). Refused when
    an array the capture read from it is no longer where it was (a deque of frames appended
    to, which drops its oldest): the graph holds the arrays it read, and eager calls move them
    on."""
    holder = place.holder
    if isinstance(holder, dict):  # (a memo the call fills: its keys are not the user's)
        place.filled = place.filled or any(key not in place.value for key in holder)
    sized = next(((k, v) for k, v in (holder.items() if isinstance(holder, dict) else
                                      enumerate(holder)) if sized_by_data(v)), None)
    if sized is not None:  # (self.d["n"] = y.shape[0] of y = x[x > 0]: review 10, #11)
        effects.set_items(holder, place.value)
        item = Place("dict" if isinstance(holder, dict) else "list", holder, sized[0],
                     f"{place.label}[{sized[0]!r}]", None)
        refuse_sized(item, sized[1], recorder, line, fn)
        return
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
        of_data(t, recorder) for v in list(holder)[len(before):]  # grew with values of the
        for t in effects.leaves(v, recorder))  # data, {"loss": l} too; not a memo of
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
                                  UserCode("other", shorten(text)), None, STORED_REASON))
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
                                  NUMBER_REASON if running else created_reason(label)))
        recorder.pending.append(("unsupported_op", REBOUND, message, source))
    elif logged is not None:  # a log: appended or set again by each replay, or refused
        effects.record(place, left, logged, recorder)


def changed(place: Place) -> list:
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


def first_line(fn: Callable | None) -> Any:
    """``(file, line, function)`` of ``fn``'s ``def`` line, or ``None``."""
    found = source_lines(fn) if fn is not None else None
    if found is None:
        return None
    code, lines, start = found
    for offset, text in enumerate(lines):  # (past its decorators)
        if text.lstrip().startswith(("def ", "async def ")):
            return line_at(code, start + offset)
    return None


def numpy_logged(place: Place, recorder: Any, source: Any, fn: Callable | None) -> None:
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
        if type(value) in (list, dict) and effects.structure(value, recorder):
            continue  # (m.setdefault(k, []).append(loss): a log, effects.py)
        tensor = tensor_in([value], recorder, DEPTH)
        if tensor is not None and type(holder) is list and key >= len(before) and \
                not effects.tested(label, tensor._data.source):
            continue  # appended to a list fn does not test: a log (self.log.append(y.sum())
            #           with y made from np.zeros), not an accumulator made on the first call
        if tensor is not None and accumulates(recorder, tensor, label):
            return key, tensor
    return None


def stored_over(place: Place, lists: dict[int, set[int]], fn: Callable | None = None
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


def kept(now: list, before: list) -> set[int]:
    """The positions of ``now`` that hold the item ``before`` held there."""
    return {k for k, item in enumerate(before) if k < len(now) and now[k] is item}
