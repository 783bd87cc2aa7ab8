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
:mod:`capviz.trace.fn_lines`; what a tensor grew from, :mod:`capviz.trace.provenance`; the
refusals and their fixes, :mod:`capviz.trace.rebound_refusals`; the walked lists, dicts and
deques given their items back, :mod:`capviz.trace.container_items`; the attributes the call
adds or sets anew (caches set by each replay, or refused), :mod:`capviz.trace.attribute_caches`.
"""

from __future__ import annotations

import functools
import linecache
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.core.python_guards import guardable
from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.trace import effects, item_caches, state_fixes
from capviz.trace.assigned import assigned
from capviz.trace.attribute_caches import (
    Held,
    added_removed,
    asks_on_path,
    bases,
    cache_set,
    set_by_replays,
    unexplained,
)
from capviz.trace.container_items import (
    changed,
    first_line,
    items_back,
    kept,
    numpy_logged,
    stored_over,
)
from capviz.trace.fn_lines import code_reads, reads_itself, source_lines, writing_line
from capviz.trace.mutation import current
from capviz.trace.places import (
    DEPTH,
    NUMBERS,
    REBINDABLE,
    SEQUENCES,
    Place,
    function_of,
    tensor_in,
)
from capviz.trace.provenance import accumulates, made_here, of_data, read_by_capture
from capviz.trace.rebound_refusals import (
    CONTAINER_REASON,
    NUMBER_REASON,
    RETURN_REASON,
    created_reason,
    in_place_reason,
    owner_fix,
    refuse_asked,
    refuse_changed,
    refuse_numpy,
    refuse_owner,
    refuse_sized,
    sized_by_data,
)
from capviz.trace.recapture import line_code
from capviz.trace.tensor import Tensor

REBOUND = effects.REBOUND
"""The ``call`` of the refusal (the situation ``rebound_to_tensor``)."""


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
    asks = functools.cache(lambda: asks_on_path(fn, places))
    sets = functools.cache(lambda: assigned(fn, places))  # (what fn assigns before reading)
    known = None  # (the ids of the walked arrays: unexplained)
    walked = {id(p.holder) for p in places if p.kind == "items"}  # (their logs: effects.py)
    logs = {id(p.holder): (dict(p.holder) if isinstance(p.holder, dict) else list(p.holder))
            for p in places if p.kind == "items" and  # as the call left them (effects.py)
            (tensor_in(p.holder, recorder, DEPTH, every=True) is not None or
             any(not isinstance(v, (np.ndarray, np.generic)) and not effects.stand_in(v)
                 for v in changed(p)))}
    #        (Python values or objects logged)
    line = first_line(fn) or source  # (where a log of Python values is looked for)
    outside = {id(p.holder) for p in places if p.kind == "items"}  # (self.log.append(self.cfg))
    for place in places:
        if place.kind in ("keys", "items"):
            continue
        found = place.get()
        if found is place.value:
            continue
        if sized_by_data(found):  # (self.n = y.shape[0] of y = x[x > 0]: review 10, #11)
            place.put_back()
            refuse_sized(place, found, recorder, source, fn)
            continue
        if isinstance(place.value, NUMBERS) and type(found) is not Tensor:
            if not _same_number(place.value, found):  # self.t += 1: a replay repeats t
                if fn is not None and guardable(found) and place.kind == "attribute" and \
                        place.label in sets():  # (self.called = True, self.model.train():
                    continue  # each replay assigns it, as the call: review 9, finding 22)
                place.put_back()
                if recorder.others is None or not place.inner or id(place.holder) not in walked:
                    refuse_changed(place, found, recorder, source, fn)  # (a second run's
                #   item of a container the first logged into: logged_runs.differs compares them)
            continue
        if isinstance(found, (np.ndarray, np.generic)) and type(place.value) is np.ndarray:
            if found.dtype != place.value.dtype or found.shape != place.value.shape or \
                    type(found) is not np.ndarray or \
                    found.tobytes() != place.value.tobytes():  # (an equal copy: no difference
                refuse_numpy(place, found, recorder, source, fn)  # a replay makes)
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
            if place.kind == "dict" and id(place.holder) in walked and type(found) is tuple \
                    and effects.structure(found, recorder):
                continue  # (hist["pair"] = (step, loss) over the last call's: logged, effects)
        if place.inner and type(found) is Tensor:
            if read is None:
                read = {id(ref()) for ref in recorder.graph.constant_origins.values()}
            if lists is None:  # (before any item is put back)
                lists = {id(p.holder): kept(p.holder, p.value) for p in places
                         if p.kind == "items" and type(p.holder) is list}
            if isinstance(place.value, NUMBERS) and place.kind in ("dict", "list") and \
                    id(place.holder) in walked and not _running(place, found, fn):
                continue  # a value logged over a number (hist["mean"] = x.mean(), a list
                #           emptied and filled): an effect of the walked container's (below)
            if type(place.value) is np.ndarray and known is None:
                known = {id(a) for p in places if type(p.value) is np.ndarray
                         for a in bases(p.value)}
            if not read_by_capture(place.value, read) and not stored_over(place, lists, fn) \
                    and not (type(place.value) is np.ndarray and  # (self.vs[i] = 0.9 * v - ...
                             unexplained(recorder, found, known)) \
                    and not isinstance(place.value, NUMBERS) \
                    and not (place.value is None and accumulates(recorder, found, place)):
                place.put_back()  # not refused: a scratch item or attribute (self.l1.x = x)
                if place.value is None and place.kind == "attribute" and place.path and \
                        of_data(found, recorder):
                    if asks():  # (hasattr/getattr on the call's path: another path later)
                        refuse_asked(place.label, found, recorder, fn)
                        continue
                    holder = Held(place.holder, place.label.rsplit(".", 1)[0],
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
                         for a in bases(p.value)}
            if cache_set(place, found, recorder, fn, read, known, places) and not asks():
                place.put_back()  # a cache the call sets over the last one (self.x = x after
                set_by_replays(place, found, recorder)  # an eager call): by each replay
                continue
        if type(found) is Tensor and place.kind == "dict" and type(place.value) is np.ndarray:
            if read is None:  # (self.cache["x"] = x after an eager call: item_caches.py)
                read = {id(ref()) for ref in recorder.graph.constant_origins.values()}
            if known is None:
                known = {id(a) for p in places if type(p.value) is np.ndarray
                         for a in bases(p.value)}
            if item_caches.item_cache_set(place, found, recorder, fn, read, known):
                place.put_back()
                item_caches.set_by_replays(place, found, recorder, fn)
                continue
        place.put_back()
        owned = owner_fix(place, fn) if place.kind == "attribute" and tensor is found \
            and (place.value is None or isinstance(place.value, NUMBERS)) else None
        if owned is not None:  # (an AverageMeter's self.sum += loss, in its update method)
            refuse_owner(place.label, owned, "the call binds a value of the capture to it, and "
                         "the capture put the original back", recorder)
            continue
        source = tensor._data.source
        if tensor._data.kind == "input" and fn is not None:  # (an input's own line is the
            source = writing_line(fn, place.label)[0] or source  # caller's cv.capture line)
        text = line_code(linecache.getline(source[0], source[1])) if source else ""
        reason = CONTAINER_REASON if tensor is not found else in_place_reason(text, source) \
            if isinstance(place.value, np.ndarray) else created_reason(place.label) \
            if place.value is None else NUMBER_REASON if isinstance(place.value, NUMBERS) \
            and _running(place, found, fn) else RETURN_REASON
        items = state_fixes.dict_in_place(text) if reason is CONTAINER_REASON and \
            type(found) is dict and type(place.value) is dict else None
        if items is not None:  # (self.bn = {"mean": ...}: its arrays in place, review 8, #7)
            reason = ("the capture put the original dict back, and a replay cannot bind a new "
                      f"dict to a name; write its arrays in place: {items}, which the capture "
                      "records as states")
        message = explain(Failure("unsupported_op", REBOUND, place.label, source,
                                  UserCode("other", shorten(text)), None, reason))
        recorder.pending.append(("unsupported_op", REBOUND, message, source))
        if tensor is found and rebindable(place, found, recorder):
            place.lifts = message  # (capviz.capture may capture it lifted: trace/rebinding.py)
    for place in places:
        if place.kind == "items":
            if read is None:
                read = {id(ref()) for ref in recorder.graph.constant_origins.values()}
            items_back(place, recorder, read, logs.get(id(place.holder)), line, outside, fn)
            numpy_logged(place, recorder, source, fn)
        elif place.kind == "keys":
            binds += added_removed(place, recorder, fn, asks, source)
    return binds


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


def _same_number(before: Any, now: Any) -> bool:
    if type(before) is not type(now):
        return False
    try:
        return bool(before == now) or (before != before and now != now)  # (NaN is NaN)
    except (TypeError, ValueError):
        return False


def _line_of(tensor: Tensor) -> str:
    source = tensor._data.source
    return line_code(linecache.getline(source[0], source[1])) if source else ""


def _running(place: Place, tensor: Tensor, fn: Callable | None) -> bool:
    """Whether the call stores a running value at ``place`` (a number a tensor was added to:
    :func:`capviz.trace.fn_lines.reads_itself` of the line that made ``tensor`` or of the line
    of ``fn`` that writes the place)."""
    if reads_itself(_line_of(tensor), place.label):
        return True
    if fn is not None and source_lines(fn) is None:  # no source text: its bytecode reads the
        code = getattr(function_of(fn)[1], "__code__", None)  # item, or not (review 9 #13)
        return code is None or code_reads(code, place.label)
    return fn is not None and reads_itself(writing_line(fn, place.label)[1], place.label)
