"""A name rebound to a new array each call, replayed as a state the replay binds again.

``self.W = self.W - lr * g`` or CS231n's ``bn_param["running_mean"] = m * running_mean + (1 -
m) * mean`` binds a new ndarray to a name every call; the old array is left as it was. A
capture cannot rebind a name by itself (it puts the original back:
:mod:`capviz.trace.rebound`), so, as torch.export lifts the buffers a program mutates into its
signature (``buffers_to_mutate``), such a place becomes a **rebind state** of the graph: a
``state`` node with ``params["rebind"]``, whose output is the new value. A replay reads the
array the place holds when it starts and, once every op has run, binds the new value (a
fresh array) to the place, as an eager call does; the old array is not written
(:mod:`capviz.replay.state`).

How :func:`capviz.capture` gets there, never guessing:

1. The first capture runs as before; :func:`capviz.trace.rebound.put_back` refuses the
   rebinding and marks the place (``Place.lifts``) where it held a plain ndarray and now
   holds a fresh array of its shape and dtype computed by the capture
   (:func:`capviz.trace.rebound.rebindable`).
2. If that capture's only errors are such rebindings, :func:`plan` lifts those places and the
   first capture's array states (:mod:`capviz.trace.lifted`: each array must be one that
   only walked places reference, so that every read of it, NumPy's own operators included,
   is a read of its tensor), and ``fn`` is captured lifted, **twice**: the two graphs must be
   the same program (:func:`difference`), as the two captures of a first capture must be:
   a Python value the call changes (a schedule's ``next()``, a step count) would make them
   differ, and is refused at its line.
3. Anything else (an array referenced from elsewhere, a run the lifted capture throws away, a
   view, another dtype) keeps the first capture's refusal and its message.

A loaded graph (no live places) takes the arrays with ``states=``; a replay then returns the
new values in ``result.states`` and leaves the given arrays as they are, as an eager call
leaves the old array.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from capviz.core.ir import Graph
from capviz.core.violations import CaptureViolation, make_error
from capviz.trace import lifted, recapture
from capviz.trace.effects import KEPT
from capviz.trace.places import Place
from capviz.trace.rebound import REBOUND


def marked(places: list[Place]) -> list[Place]:
    """The places the last capture refused as rebound to a fresh array of their kind."""
    return [p for p in places if p.lifts is not None]


def only_rebinding(graph: Graph | None, found: list[Place]) -> bool:
    """Whether every error of ``graph`` (a refused first capture) is the refusal of one of
    the rebound places ``found``."""
    if graph is None or not found or not graph.violation_records:
        return False
    messages = {p.lifts for p in found}
    return all(v.message in messages for v in graph.violation_records if v.level == "error")


def blamed(error: BaseException, graph: Graph | None, places: list[Place]) -> BaseException:
    """The refusal a first capture raises: ``error`` (its first), unless that is a rebinding
    a lifted capture would have taken and another error stood in the way (``self.lr =
    self.lr * 0.99`` beside ``self.bn["m"] = ...``: hostile review 7, finding 25, the message
    blamed the rebinding, which captures alone): then that other error."""
    found = {p.lifts for p in marked(places)}
    if not found or graph is None or str(error) not in found:
        return error
    for record in graph.violation_records:  # (not a container's refusal the rebinding of
        if record.level == "error" and record.message not in found \
                and record.call not in (REBOUND, KEPT):  # one of its items made)
            return make_error(record, graph)
    return error


def anchor(place: Place) -> tuple:
    """``(anchor, steps)`` of ``place`` (as ``Graph.state_places`` holds them): the object
    holding the name, weakly where it takes a weak reference, and the one step to the name."""
    holder = place.holder
    try:
        held: Any = weakref.ref(holder)
    except TypeError:  # a dict, a list, a module's namespace: kept
        held = holder
    if place.kind == "cell":
        return held, ((True, "cell_contents"),)
    return held, ((place.kind in ("attribute", "slot"), place.key),)


def plan(graph: Graph | None, places: list[Place], found: list[Place], fn: Any = None,
         more: Graph | None = None) -> lifted.Lifted | None:
    """The states to lift for a capture of ``fn`` that binds the rebound places ``found``
    again: those places' arrays and the array states of ``graph`` (the refused capture), each
    through the places that hold it; ``None`` where one cannot be lifted soundly
    (:func:`capviz.trace.lifted.liftable`), or where code ``fn`` reaches asks what no hook
    sees of an array (``type(self.W)``, ``object.__hash__``, ``sys.getsizeof``...:
    :func:`capviz.trace.lifted.reads_type`, as a later capture asks; hostile review 7,
    finding 12). ``more``: a lifted capture of ``fn`` thrown away for an array state this
    plan did not lift, whose array states are lifted too."""
    if graph is None or (fn is not None and lifted.reads_type(fn, places)):
        return None
    holding = lifted._holding(places)
    ours = lifted._our_references(places)
    states = []
    roots: set[int] = set()
    # (no local name holds an array while liftable() counts its references)
    for place in found:
        if id(place.value) in roots or not lifted.liftable(place.value, holding, ours):
            return None
        roots.add(id(place.value))
        source = None
        for record in graph.violation_records:
            if record.message == place.lifts:
                source = record.source
        states.append((place.value, holding[id(place.value)], None, anchor(place), source))
    for made in (graph,) if more is None else (graph, more):
        for node in made.state_nodes:
            ref = made.state_targets.get(node.index)
            if "of" in node.params or not isinstance(ref, weakref.ref) or \
                    type(ref()) is not np.ndarray or id(ref()) in roots:
                continue
            holders = [p for p in holding.get(id(ref()), ()) if p.value is ref()]
            if not holders or not lifted.liftable(ref(), holding, ours):
                return None
            roots.add(id(ref()))
            states.append((ref(), holders, node.name, made.state_places.get(node.index),
                           node.source))
    return lifted.Lifted(states, places)


def difference(one: Graph, two: Graph) -> CaptureViolation | None:
    """The refusal, recorded on ``one``, of what ``two`` (a second lifted capture of the same
    function) records otherwise: a Python value the call changes from one run to the next
    (a schedule's ``next()``, a count), which the graph would freeze; ``None`` when they are
    the same program."""
    found = recapture.first_difference(one, two)
    if found is None:
        return None
    node, what, _one, _two = found
    if what == "path":
        return recapture.refuse(one, node, recapture.PYTHON_PATH, "the call", (
            "when the function runs a second time, the capture records another program from "
            "here on"))
    return recapture.refuse(one, node, recapture.CHANGES, "the number this line uses", (
        "it differs when the function runs a second time"))
