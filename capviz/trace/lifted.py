"""One capture pass where it is provably enough: the states lifted into the graph's signature.

:func:`capviz.capture` captures a function that writes outside arrays twice
(:mod:`capviz.trace.recapture`), because NumPy's own operators can read a state's live ndarray
unseen: before the capture's first write into it, and after it (reads that swallow the mark).
torch.export does not need a second trace: it *lifts* the buffers a program mutates into the
graph's signature, so every read of them is a read of a graph input. This module does the same
for a later capture of the same function:

1. **Which arrays.** The places that held array states when ``fn`` (the same code object, with
   the same owner: a bound method's ``self``, a callable object; kept weakly, keyed on those
   objects, never on ``id()``) was last captured whole (:func:`remember`): their labels
   (``self.W``, ``self.params[3]``), the state's name, its place, its line.
2. **No unseen reference.** Before ``fn`` runs, each such place is looked up again
   (:func:`plan`). An array is lifted only if it is a plain writeable ndarray of numbers or
   booleans that owns its memory (``a.base is None``: a view's owner could be read through
   the view) and if every reference to it is a place the walk found
   (:func:`capviz.trace.places.note`): :func:`sys.getrefcount` of the array equals the number of
   those places plus the references capviz's own notes hold (the places' records, the outside
   arrays' snapshot). A view or ``np.frombuffer`` of it holds a reference (its ``base``), and so
   does a local variable of a suspended frame, a graph that kept it by reference, a list the walk
   did not reach: each one makes the count larger, and then nothing is lifted and the capture
   takes today's two passes. The count misses weak references (``weakref.ref``,
   ``weakref.proxy``, a ``WeakValueDictionary``: ``self._ref().copy()`` would read the live
   array's start value unseen), so every weak reference to the array must be capviz's own
   (:class:`capviz.core.own_weakrefs.OwnRef`: the earlier graphs' ``state_targets`` and
   ``constant_origins``); one of anyone else's, and nothing is lifted. An alias made from
   the array's raw address (``ctypes.cast(W.ctypes.data, ...)``) holds no reference of either
   kind: where the walk finds it (an ndarray whose memory no ndarray owns, sharing the
   array's memory), nothing is lifted; where it does not (a pointer a C extension keeps),
   it is not seen, and NumPy reads through it the start value, as a constant.
3. **Every read goes through the tensor.** Each of those places is bound to the state's capture
   tensor (:func:`lift`) while ``fn`` runs: the state node is made then, with the array's value
   as its start value, so every read of the array, NumPy's own operators included
   (``np.sum(self.W * self.W)``, ``self.W.sum() > 0``), is a read of the tensor: recorded, or
   refused as any read of a tensor's value is. The live array is not touched (no NaN mark, no
   planted values), and no other reference exists through which code could read or write it.
   So the second capture has nothing left to find: what it compares are values NumPy computed
   from a live state, and none reached the capture unseen.
4. **Fall back, never guess.** When the places are put back (:func:`unlift`, before the scope
   exits, bit for bit: the same objects, ``is``-identical), the run is kept only if
   (:func:`kept`) it completed with no violation, every place still held its tensor and every
   other walked place what it held (no rebinding, no item appended or attribute added: the
   two captures decide what to take back or refuse), no lifted tensor is referenced from
   anywhere else (stored into an object the
   walk does not see), every lifted state was written, no array state appeared that was not
   lifted, no outside array was written unseen, every outside array the graph read as a
   constant is one the snapshot copied or fingerprinted (so a NumPy write to it would have
   been seen), and the graph holds no size read from data. Anything else (an exception of
   ``fn``'s, a value read, a refusal) throws the run away and the capture runs today's two
   passes, with today's refusals and messages.

5. **What tells a tensor from an ndarray.** ``fn``'s code sees a capture tensor where eager
   NumPy (and the two passes) hold an ndarray; a test of the object's kind must not choose
   otherwise unseen. ``isinstance(self.W, np.ndarray)`` (any ``isinstance`` whose fast check
   fails, an ABC's, ``self.W.__class__``) reads ``Tensor.__class__``: read from code outside
   capviz, of a tensor computed from a lifted state, it sets :attr:`Lifted.doubt` and the run
   is thrown away (:meth:`Lifted.class_read`); an input's tensor is a tensor in both runs (the
   documented trade of the inputs) and keeps the one pass. ``type(self.W)`` reads nothing
   (CPython calls it without an event), so it is found in the bytecode before anything is
   lifted (:func:`reads_type`: ``fn``'s code and the functions and methods it names,
   and the functions the walk found held, transitively); where it is found, nothing is
   lifted. Not seen: ``type`` in an installed package's code, or in code reached only through
   objects no walk reached (a function a helper returns from a table it keeps).

What it trades: a Python value the call changes outside every walked place (a counter in a
helper's module) reaches the graph as a literal, as it does in a capture with no state: the
second capture compared literals only where states were written.
"""

from __future__ import annotations

import collections
import gc
import sys
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.ir import Graph, Node
from capviz.core.own_weakrefs import OwnRef, only_own
from capviz.core.source import PACKAGE_DIRS, USER_FILES, user_frame
from capviz.trace import code_reach, kept_numbers, loop_writes, mutation
from capviz.trace.places import Place, function_of, tensor_in
from capviz.trace.rebound import fresh, rebindable
from capviz.trace.recapture import array_states
from capviz.trace.state import State
from capviz.trace.tensor import Tensor

_SLOTS = frozenset(("attribute", "slot", "global", "dict", "list", "cell"))
"""The kinds of :class:`~capviz.trace.places.Place` that are one reference each."""

_KINDS = "biufc"

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""function -> {owner -> :class:`_Remembered`} (:class:`_ByIdentity`): the states of the last
whole capture."""

_NO_OWNER = object()

BY_NAMER = "<named as the two captures name it>"
"""The name of a state a first capture lifts by a guess (:func:`_written`): found when
:func:`lift` makes its node, from the frames the capture sees, as a state the first of two
captures finds is named (``opt.params[3]``)."""


class _Remembered:
    """The array states of ``fn``'s last whole capture, in program order: for each, the labels
    of the places that held it, its name, its place (``Graph.state_places``) and its line."""

    __slots__ = ("states",)

    def __init__(self, states: list[tuple[tuple[str, ...], str | None, Any, Any]]) -> None:
        self.states = states


def _key(fn: Callable) -> tuple[Any, Any] | None:
    """``(function, owner)`` that a capture of ``fn`` is remembered under (the owner held
    weakly by the cache), or ``None`` where ``fn`` is not remembered (a ``functools.partial``,
    an owner that takes no weak reference)."""
    if callable(getattr(fn, "func", None)):  # functools.partial: its arguments are roots too
        return None
    owner = getattr(fn, "__self__", None)
    function = getattr(fn, "__func__", fn)
    if owner is None and not hasattr(function, "__code__"):  # a callable object
        owner, function = fn, type(fn)
    if not hasattr(function, "__code__") and not isinstance(function, type):
        return None
    try:
        weakref.ref(function)
        if owner is not None:
            weakref.ref(owner)
    except TypeError:
        return None
    return function, owner


class _ByIdentity:
    """A table keyed by an object's identity, holding the object weakly: an owner need not be
    hashable (a ``@dataclass`` model defines ``__eq__`` and so no ``__hash__``; a
    ``weakref.WeakKeyDictionary`` hashed it and every ``cv.capture(m.step)`` raised
    TypeError). An entry goes with its object."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[weakref.ref, Any]] = {}

    def get(self, obj: Any) -> Any:
        item = self._items.get(id(obj))
        return item[1] if item is not None and item[0]() is obj else None

    def __setitem__(self, obj: Any, value: Any) -> None:
        key, items = id(obj), self._items

        def gone(ref: weakref.ref) -> None:
            held = items.get(key)
            if held is not None and held[0] is ref:
                del items[key]

        items[key] = (weakref.ref(obj, gone), value)

    def pop(self, obj: Any, default: Any = None) -> Any:
        item = self._items.get(id(obj))
        if item is None or item[0]() is not obj:
            return default
        del self._items[id(obj)]
        return item[1]


def _table(function: Any, create: bool) -> Any:
    table = _CACHE.get(function)
    if table is None and create:
        table = _CACHE[function] = _ByIdentity()
    return table


def remember(fn: Callable, graph: Graph, places: list[Place]) -> None:
    """Note the array states of ``graph`` (a whole capture of ``fn``) by the places that held
    them, for a later capture of ``fn`` (:func:`plan`); forget them when a state was held by no
    walked place (nothing to lift it through)."""
    key = _key(fn)
    if key is None:
        return
    function, owner = key
    states = []
    holding = _holding(places)
    for node, root in array_states(graph):
        labels = tuple(p.label for p in holding.get(id(root), ()) if p.value is root)
        if not labels:
            states = []
            break
        states.append((labels, node.name, graph.state_places.get(node.index), node.source))
    table = _table(function, bool(states))
    if table is None:
        return
    slot = owner if owner is not None else function
    if states:
        table[slot] = _Remembered(states)
    else:
        table.pop(slot, None)


class Lifted:
    """The states a capture lifts: for each, its array, the places that hold it, its name,
    place and line; after :func:`lift`, its tensor."""

    __slots__ = ("clean", "doubt", "guessed", "held", "nodes", "places", "states", "tensors")

    def __init__(self, states: list[tuple[np.ndarray, list[Place], str | None, Any, Any]],
                 places: list[Place]) -> None:
        self.states = states
        self.places = places  # every place the walk found (trace/rebound.py)
        self.tensors: list[Tensor] = []
        self.nodes: list[Node] = []  # their state nodes (a tensor takes the node of each write)
        self.held = True  # every place still held its tensor when put back
        self.doubt = False  # the run saw what it cannot tell from the two passes' run
        self.clean: set[int] = set()  # nodes known to depend on no lifted state
        self.guessed = False  # a first capture's: its arrays guessed from fn's statements

    def class_read(self, tensor: Tensor, frame: Any) -> None:
        """``tensor.__class__`` read from ``frame`` (``isinstance(self.W, np.ndarray)``,
        ``isinstance(y, (int, float))``, an ABC's check): from code outside capviz, of a tensor
        whose value is computed from a lifted state (an ndarray in eager NumPy and in the two
        passes, a tensor here), the answer may choose another branch: the run is thrown away
        (:func:`kept`). A tensor that depends on no lifted state is the same object kind in
        both runs (an input's, a buffer's): its ``isinstance`` is the documented trade."""
        if self.doubt or frame is None or not self.nodes:
            return
        filename = frame.f_code.co_filename
        if filename.startswith(PACKAGE_DIRS) and filename not in USER_FILES:
            return  # capviz's own check (its dispatch, its walks)
        if _depends(tensor._data, {node.index for node in self.nodes}, self.clean):
            self.doubt = True

    def others(self) -> list[Place]:
        """The places that hold no lifted array: the outside arrays' snapshot looks at those
        (NumPy cannot reach a lifted one; the two captures, if they must run, note them all
        again)."""
        lifted = {id(state[0]) for state in self.states}
        return [p for p in self.places if id(p.value) not in lifted]


def plan(fn: Callable, places: list[Place], floats: bool = True) -> Lifted | None:
    """The states to lift for this capture of ``fn`` (``places``: :func:`places.note`'s), or
    ``None`` when
    ``fn`` was not captured whole before or one of its states cannot be lifted soundly (see the
    module docstring, point 2)."""
    key = _key(fn)
    numbers = kept_numbers.plan(*function_of(fn), places, floats)  # (self.sum += ...)
    if key is None:  # (no array remembered: an owner with __slots__ and no __weakref__)
        if not numbers or reads_type(fn, places):
            return None
        return Lifted([_number(*number, fn) for number in numbers], places)
    function, owner = key
    table = _table(function, False)
    remembered = None if table is None else table.get(owner if owner is not None else function)
    if remembered is None:  # a first capture: the numbers, and the arrays fn's statements
        guessed = _written(fn, places)  # write (a guess the run checks: kept())
        if not numbers and not guessed:
            return None
        if reads_type(fn, places):
            return None  # ``type(self.W)``: no hook sees it (the module docstring, point 5)
        made = Lifted([_number(*number, fn) for number in numbers] + guessed, places)
        made.guessed = True
        return made
    if reads_type(fn, places):
        return None  # ``type(self.W)``: no hook sees it (the module docstring, point 5)
    holding = _holding(places)
    by_label = {p.label: p for held in holding.values() for p in held}
    ours = _our_references(places)
    states = []
    for labels, name, place, source in remembered.states:
        first = by_label.get(labels[0])
        if first is None or not liftable(first.value, holding, ours):
            return None
        root = first.value
        states.append((root, holding[id(root)], name, place, source))
    kept = {id(place) for place, *_ in numbers}
    if any(id(p) in kept for held in holding.values() for p in held):
        return None  # (never both: a kept number is no array)
    states.extend(_number(*number, fn) for number in numbers)
    return Lifted(states, places)


def _written(fn: Callable, places: list[Place]) -> list[tuple]:
    """The states of the outside arrays a first capture of ``fn`` lifts: those ``fn``'s
    statements write in place (``self.m[...] = b1 * self.m + ...``, ``self.w -= lr * g``:
    :func:`capviz.trace.kept_numbers.written`; Adam's moments beside its step counter) or
    through a loop's name (``for w, m in zip(self.params, self.mems): m += g * g``: each item
    of the lists, :func:`capviz.trace.loop_writes.written`), each :func:`liftable` through
    the places that hold it, in the order the call first writes them; ``[]`` where one is not
    (the run lifts the numbers only where it keeps any, and is thrown away where it writes an
    array: two captures). A guess the run checks (:func:`kept`: every lifted state written,
    no array state not lifted)."""
    owner, function = function_of(fn)
    code = getattr(function, "__code__", None)
    if code is None:
        return []
    labels = kept_numbers.written(owner, function)
    loops = loop_writes.written(owner, function)
    if not labels and not loops:
        return []
    containers: dict[int, tuple[int, int, int]] = {}
    for place in places:  # (the lists and dicts a loop writes the items of, by identity)
        if place.kind == "items" and type(place.holder) in (list, dict):
            if place.label in loops:
                containers[id(place.holder)] = loops[place.label]
            elif place.label in labels:  # (self.ws[i] -= ...: a list's item by index)
                line = labels[place.label]
                containers[id(place.holder)] = (line, 0, line)
    holding = _holding(places)
    ours = _our_references(places)
    found: list[tuple[tuple, tuple]] = []
    roots: set[int] = set()
    counts: collections.Counter = collections.Counter()
    for place in places:
        if type(place.value) is not np.ndarray or place.kind not in _SLOTS:
            continue
        if place.label in labels:
            line = labels[place.label]
            order: tuple = (line, 0, 0, 0)
        elif place.kind in ("list", "dict") and id(place.holder) in containers:
            loop, position, line = containers[id(place.holder)]  # (each item in turn,
            #   as the loop writes them: self.mems[0], self.params[0], self.mems[1]...)
            order = (loop, counts[id(place.holder)], line, position)
            counts[id(place.holder)] += 1
        else:
            continue
        if id(place.value) in roots:
            continue
        # (no local name holds the array while liftable() counts its references)
        if not liftable(place.value, holding, ours):
            return []
        roots.add(id(place.value))
        found.append((order, (place.value, holding[id(place.value)], BY_NAMER,
                              place.path or _anchor(place),
                              (code.co_filename, line, code.co_name))))
        ours[id(place.value)] += 1  # (the plan's own reference)
    found.sort(key=lambda item: item[0])
    return [state for _order, state in found]


def guesses_floats(lifted: Lifted | None) -> bool:
    """Whether ``lifted`` lifts a kept int as the float the call makes of it (a guess:
    :func:`capviz.trace.kept_numbers.plan`)."""
    return lifted is not None and any(
        _is_number(holders) and type(holders[0].value) is int and root.dtype.kind == "f"
        for root, holders, *_ in lifted.states)


def has_numbers(lifted: Lifted | None) -> bool:
    """Whether ``lifted`` lifts a kept Python number (:mod:`capviz.trace.kept_numbers`)."""
    return lifted is not None and any(_is_number(holders) for _r, holders, *_ in lifted.states)


def _number(place: Place, line: int, as_float: bool, fn: Callable) -> tuple:
    """The state of a kept Python number (:mod:`capviz.trace.kept_numbers`): a 0-d array of
    its value (float64 for an int the call makes a float: ``as_float``), bound again by each
    replay at ``place`` as the Python number it is."""
    code = getattr(function_of(fn)[1], "__code__", None)
    source = None if code is None else (code.co_filename, line, code.co_name)
    return (kept_numbers.root_of(place.value, as_float), [place], None,
            place.path or _anchor(place),
            source)  # (self.meter.sum, STATS.count: followed from self / the globals)


def _anchor(place: Place) -> tuple:
    """``(anchor, steps)`` of an attribute ``place``: its object, weakly where it can be."""
    try:
        held: Any = weakref.ref(place.holder)
    except TypeError:
        held = place.holder
    return held, ((True, place.key),)


def liftable(root: Any, holding: dict[int, list[Place]], ours: collections.Counter) -> bool:
    """Whether ``root`` may be lifted (see the module docstring, point 2): a plain writeable
    ndarray of numbers or booleans that owns its memory, every reference to which is one of
    the walked places that hold it (``holding[id(root)]``) or one of capviz's own notes
    (``ours[id(root)]``)."""
    if type(root) is not np.ndarray or root.base is not None or \
            not root.flags.writeable or root.dtype.kind not in _KINDS:
        return False
    holders = holding.get(id(root), ())
    if sys.getrefcount(root) != _FIXED + len(holders) + ours[id(root)]:
        return False  # a reference no walked place explains: NumPy could read it unseen
    if not only_own(root):
        return False  # a weak reference of the user's: NumPy could read it unseen too
    foreign = getattr(ours, "foreign", None)  # (a count made elsewhere has none)
    return not foreign or not any(np.may_share_memory(root, other) for other in foreign)


_FIXED = 2  # sys.getrefcount's argument and the parameter ``root`` of liftable()


def reads_type(fn: Callable, places: list[Place]) -> bool:
    """Whether code that ``fn`` reaches calls the builtin ``type`` (``type(self.W) is
    np.ndarray``), which no hook can see (CPython calls it without an event, and reads no
    attribute of the object): found in the bytecode (:func:`capviz.trace.code_reach.reach`:
    ``fn``'s code, the functions and methods it names and the functions the walk found held,
    transitively). Not seen: installed packages' code, and code reached only through objects
    no walk reached."""
    return code_reach.reach(fn, places).calls_type


def _holding(places: list[Place]) -> dict[int, list[Place]]:
    """The places that are one reference each (an attribute, a list slot...), by the ``id``
    of what they hold (alive meanwhile: the places hold it)."""
    holding: dict[int, list[Place]] = {}
    for p in places:
        if p.kind in _SLOTS:
            held = holding.get(id(p.value))
            if held is None:
                holding[id(p.value)] = [p]
            else:
                held.append(p)
    return holding


class _Ours(collections.Counter):
    """:func:`_our_references`'s count, and ``foreign``: the walked ndarrays whose memory no
    ndarray owns (``np.frombuffer`` of bytes, an array made from a raw pointer,
    ``ctypes.cast(W.ctypes.data, ...)``), which hold no reference to an array whose memory
    they may read: :func:`liftable` refuses an array whose memory one of them may share."""

    foreign: list[np.ndarray]


def _our_references(places: list[Place]) -> _Ours:
    """How many references to each object (by ``id``, the objects alive meanwhile) capviz's
    own notes hold: each place's record of what it held, the copies of walked lists and dicts.
    (The outside arrays' snapshot is taken after the plan, of the arrays not lifted.)"""
    counts = _Ours()
    foreign = counts.foreign = []
    ndarray = np.ndarray
    for p in places:
        if p.kind == "items":
            items = p.value.values() if type(p.value) is dict else p.value
            counts.update(map(id, items))
        elif p.kind != "keys":
            value = p.value
            counts[id(value)] += 1
            if type(value) is ndarray and value.base is not None and \
                    not isinstance(_owner(value).base, (ndarray, type(None))):
                foreign.append(value)
    return counts


def lift(recorder: Any, lifted: Lifted) -> None:
    """Make each lifted array a state of ``recorder``'s graph (its node, its start value, its
    tensor) and bind the places that hold it to that tensor (called once the inputs are
    declared, before ``fn`` runs)."""
    graph = recorder.graph
    recorder.lifted = lifted  # (its tensors' class reads: Tensor.__class__)
    frame = user_frame(sys._getframe())
    if recorder.examples is not None:  # (a branch on a lifted state: decided by two passes)
        recorder.examples.states_known = False
    numbers: list[Node] = []
    for root, holders, name, place, source in lifted.states:
        if name is None:  # a rebound place (trace/rebinding.py): named as a constant of
            name, place = _rebind_place(recorder, root, holders[0], place, frame)  # it is
        elif name is BY_NAMER:  # a first capture's guess: named as the two captures name it
            name = recorder.namer.find_place(root, recorder.namer.frames(
                frame, recorder.scopes.entry), placed=False)[0] or holders[0].label
        node = recorder._append("state", None, (), {}, tuple(root.shape), root.dtype, source,
                                name, frame=frame)
        if _is_number(holders):  # a kept Python number (kept_numbers): written back so
            node.params["python"] = "float" if root.dtype.kind == "f" else "int"
            if type(holders[0].value) is int and root.dtype.kind == "f":
                node.params["from_int"] = True  # (a meter reset to 0: read as Python's float)
            numbers.append(node)
        graph.state_values[node.index] = root.copy("K")
        ref = OwnRef(root)
        graph.state_targets[node.index] = ref
        if place is not None:
            graph.state_places[node.index] = place
        tensor = Tensor(node, recorder)
        recorder.states[id(root)] = State(ref, node, tensor)
        lifted.tensors.append(tensor)
        lifted.nodes.append(node)
        for holder in holders:
            kind = holder.kind
            if kind == "list" or kind == "dict" or kind == "global":
                holder.holder[holder.key] = tensor  # (Place.bind's work, inline: 100 states)
            elif kind == "attribute":
                vars(holder.holder)[holder.key] = tensor
            else:
                holder.bind(tensor)
    if numbers:
        kept_numbers.start(recorder, numbers)


def _is_number(holders: list[Place]) -> bool:
    return len(holders) == 1 and holders[0].kind in ("attribute", "slot", "dict") and \
        type(holders[0].value) in (float, int)


def _rebind_place(recorder: Any, root: np.ndarray, held: Place, place: Any, frame: Any
                  ) -> tuple[str, Any]:
    """The name (as a constant of it is named) and place (``Graph.state_places``) of a
    rebound place's state: the function's own access path to it (``self`` then ``.bn`` then
    ``["rm"]``: the walk's), which a replay follows again each time, so that a holder the
    user replaced (``model.bn = {...}``) is the one read and bound, as eagerly (hostile
    review 7, finding 10); ``place`` (one step from the holder) for a place the function
    names itself (``self.W``, a global, a cell); ``None`` where no such path is found (then
    nothing is bound again: the run is thrown away, the first capture's refusal stands)."""
    namer = recorder.namer
    name = namer.find_place(root, namer.frames(frame, recorder.scopes.entry), placed=False)[0]
    name = name or held.label
    if not held.inner:
        return name, place  # fn's own name for it: self.W, a global, a cell
    if held.path is not None and _leads_to(held.path, held):
        return name, held.path  # fn's own access path, from self, a global or a cell: not
    #                             another name that reaches it (OPT = model.opt: hostile
    #                             review 7, finding 21), followed again by each replay
    return name, None


def _leads_to(place: tuple, held: Place) -> bool:
    """Whether path ``place`` leads to ``held``'s container and key."""
    anchor, steps = place
    owner = anchor() if type(anchor) is weakref.ref else anchor
    try:
        for is_attribute, key in steps[:-1]:
            owner = getattr(owner, key) if is_attribute else owner[key]
    except Exception:
        return False
    is_attribute, key = steps[-1]
    if held.kind == "cell":
        return False
    return owner is held.holder and key == held.key and \
        is_attribute == (held.kind in ("attribute", "slot"))


def _depends(node: Any, lifted: set[int], clean: set[int]) -> bool:
    """Whether ``node``'s value is computed from one of the ``lifted`` state nodes (made
    before ``fn`` ran: an earlier node cannot depend on them); ``clean``: the nodes known not
    to, grown by each walk that finds none (a loop's isinstance costs each node once)."""
    if type(node) is not Node:
        return True  # (not a node of the graph: not decided here)
    first = min(lifted)
    stack, seen = [node], set()
    while stack:
        node = stack.pop()
        index = node.index
        if index in lifted:
            return True
        if index < first or index in seen or index in clean:
            continue
        seen.add(index)
        stack.extend(arg for arg in node.args if type(arg) is Node)
    clean |= seen
    return False


def unlift(lifted: Lifted, recorder: Any) -> None:
    """Put every lifted array back in its places (``is``-identical), noting whether each still
    held its tensor and no other walked place got a tensor of ``recorder`` (called before the
    scope exits, also when ``fn`` raised)."""
    recorder.lifted = None
    recorder.lifted_tensors = {id(t) for t in lifted.tensors}  # (_logs: none of them logged)
    if recorder.__dict__.get("_kept_nodes") is not None and not kept_numbers.stop(recorder):
        lifted.held = False  # (a float(t) no op took: Python computed with it, unseen)
    for (root, holders, *_), tensor in zip(lifted.states, lifted.tensors):
        if _is_number(holders):  # a kept Python number: rebound to its new value's tensor
            if not _rebound_number(holders[0], root, tensor, recorder):
                lifted.held = False
            holders[0].put_back()
            continue
        if len(holders) == 1 and _rebound(holders[0], root, tensor, recorder):
            holders[0].put_back()  # (a rebind state: trace/rebinding.py)
            continue
        for holder in holders:
            kind = holder.kind
            if kind == "list" and holder.key < len(holder.holder):  # (inline, as in lift)
                if holder.holder[holder.key] is not tensor:
                    lifted.held = False
                holder.holder[holder.key] = root
                continue
            if holder.get() is not tensor:
                lifted.held = False
            holder.put_back()
    if lifted.held and _tensor_stored(lifted.places, recorder):
        lifted.held = False


def _rebound(place: Place, root: np.ndarray, tensor: Tensor, recorder: Any) -> bool:
    """Whether the one place holding lifted ``root`` now holds another tensor of
    ``recorder``, a fresh array of its shape and dtype (``self.W = self.W - lr * g``), and
    ``root``'s own tensor was not written in place: its state becomes a *rebind state*
    (``params["rebind"]``), whose final value is that tensor, which a replay binds to the
    place as eager code binds its new array (:mod:`capviz.trace.rebinding`)."""
    found = place.get()
    if found is tensor or type(found) is not Tensor or not rebindable(place, found, recorder):
        return False
    state = recorder.states.get(id(root))
    if state is None or state.tensor is not tensor or \
            mutation.current(recorder, tensor) is not state.node or \
            state.node.index not in recorder.graph.state_places:
        return False  # (written in place too: the old array moves as well, eagerly; or no
    #                   path from what the user holds: _rebind_place)
    state.node.params["rebind"] = True
    state.tensor = found  # (its final value: :func:`capviz.trace.state.final_values`)
    return True


def _rebound_number(place: Place, root: np.ndarray, tensor: Tensor, recorder: Any) -> bool:
    """Whether the place of a kept Python number (lifted as ``root``) holds a new Python
    number's tensor of ``recorder`` of ``root``'s dtype (``self.count += 0.5`` makes an int a
    float: not replayed): its state becomes a rebind state whose final value is that tensor."""
    found = place.get()
    if found is tensor or type(found) is not Tensor or found._trace is not recorder or \
            found._data.index not in kept_numbers.kept_nodes(recorder) or found.shape != () \
            or found.dtype != root.dtype:
        return False
    state = recorder.states.get(id(root))
    if state is None or state.tensor is not tensor or \
            mutation.current(recorder, tensor) is not state.node:
        return False
    state.node.params["rebind"] = True
    state.tensor = found
    return True


def _tensor_stored(places: list[Place], recorder: Any) -> bool:
    """Whether a walked place holds a capture tensor of ``recorder`` it did not hold when
    noted (an attribute bound or added, an item appended or stored: ``self.last = self.W``,
    ``self.history.append(self.W)``), which :func:`capviz.trace.rebound.put_back` takes back
    or refuses where the two captures would have left an ndarray: those decide it. Other
    Python side effects (``self.calls.append(1)``) are the same in both."""
    walked = {id(p.holder) for p in places if p.kind == "items"}
    for p in places:
        kind = p.kind
        if (kind == "dict" or kind == "list") and type(p.value) is not np.ndarray and \
                id(p.holder) in walked:
            continue  # (an item of a walked list or dict that held no array (None, the last
            #           call's logged number): its container's check below, which takes a
            #           log of fresh values: self.hist["last"] = loss; an item that held an
            #           array and was bound a new one is a rebinding the two passes decide:
            #           hostile review 8, finding 27)
        if kind == "items":
            now, before = p.holder, p.value
            if type(now) is dict:
                changed = len(now) != len(before) or any(now.get(k, p) is not v
                                                         for k, v in before.items())
            else:
                changed = len(now) != len(before) or any(a is not b
                                                         for a, b in zip(now, before))
            if changed and _holds(now, recorder, every=True) and not _logs(p, recorder):
                return True
        elif kind == "keys":
            held = vars(p.holder)
            if any(_holds(held[key], recorder) for key in held.keys() - p.value):
                return True
        else:
            now = p.get()
            if now is not p.value and _holds(now, recorder):
                return True
    return False


def _logs(place: Place, recorder: Any) -> bool:
    """Whether the walked list, deque or dict ``place.holder`` holds, past what it held, only
    fresh arrays the capture computed, none a lifted state's tensor or a view of one
    (``self.losses.append(loss)``): logs :mod:`capviz.trace.effects` replays, as the two
    passes would (hostile review 7, finding 25: a rebinding and a log in one step refused);
    the state itself logged, or a view of it, is left to the two passes (which refuse it)."""
    now, before = place.holder, place.value
    if type(now) is dict:
        new = [v for k, v in now.items() if before.get(k, place) is not v]
    else:
        new = list(now)[len(before):] if all(a is b for a, b in zip(now, before)) else list(now)
    lifted = recorder.lifted_tensors
    for value in new:
        if type(value) is not Tensor or value._trace is not recorder or id(value) in lifted:
            if _holds(value, recorder):
                return False
            continue
        node = mutation.current(recorder, value)
        if node.kind != "op" or not fresh(node):
            return False
    return True


def _holds(value: Any, recorder: Any, every: bool = False) -> bool:
    if type(value) is Tensor:
        return value._trace is recorder
    if type(value) in _CONTAINERS:
        return tensor_in(value, recorder, 3, every) is not None
    return False


_CONTAINERS = (tuple, list, dict, collections.deque)


def kept(graph: Graph, lifted: Lifted, noted: Any, outputs: list) -> bool:
    """Whether the lifted capture ``graph`` stands (see the module docstring, point 4);
    ``outputs``: the scope's declared outputs (a lifted tensor ``fn`` returned is held there)."""
    if not graph.complete or graph.violation_records or not lifted.held or graph.symbols \
            or lifted.doubt:
        return False
    returned = collections.Counter(id(out.value) for out in outputs)
    for tensor in lifted.tensors:  # a reference left elsewhere: stored where no walk looks
        if sys.getrefcount(tensor) != _HELD + returned[id(tensor)]:
            return False
    if not kept_numbers.converts(graph, [n for n in lifted.nodes if "from_int" in n.params]):
        return False  # (an int lifted as a float that a use would not make a float first)
    nodes = {node.index for node in lifted.nodes}
    for index, ref in graph.state_targets.items():
        if isinstance(ref, weakref.ref) and index not in nodes:  # a state not lifted
            return False
    written = {node.params["state"] for node in graph.nodes
               if node.kind == "output" and "state" in node.params
               and node.args[0].index != node.params["state"]}
    if not nodes <= written:
        return False
    copied = {id(entry[1]) for entries in (noted.noted, noted.watched) for entry in entries}
    for ref in graph.constant_origins.values():
        root = ref()
        if root is not None and id(_owner(root)) not in copied:
            return False
    for node in lifted.nodes:  # (a float every use of which an int would become first: a
        if node.params.get("python") == "float" and "from_int" not in node.params and \
                kept_numbers.converts(graph, [node]):  # reset to int 0 between replays is
            node.params["from_int"] = True             # read as Python reads it)
    return True


_HELD = 3  # sys.getrefcount's argument, the loop variable, ``lifted.tensors``


def unlifted(graph: Graph, lifted: Lifted) -> bool:
    """Whether the lifted capture ``graph`` is complete with no violation and made an array
    state that ``lifted`` did not lift: an array the capture that planned the lift did not see
    written (:func:`capviz.capture_fn._capture_lifted`)."""
    if not graph.complete or graph.violation_records or graph.symbols:
        return False
    nodes = {node.index for node in lifted.nodes}
    return any(isinstance(ref, weakref.ref) and index not in nodes and
               type(ref()) is np.ndarray for index, ref in graph.state_targets.items())


def discard(lifted: Lifted) -> None:
    """A lifted run thrown away: a lifted tensor ``fn`` stored where no walk looks (a list or
    dict of a helper's module: ``CACHE.append(self.W)``) gets its array back there, as the call
    left it when it stored the array itself."""
    for (root, *_), tensor in zip(lifted.states, lifted.tensors):
        if sys.getrefcount(tensor) <= _HELD:
            continue
        for holder in gc.get_referrers(tensor):
            if holder is lifted.tensors:
                continue
            if type(holder) is list:
                for k, item in enumerate(holder):
                    if item is tensor:
                        holder[k] = root
            elif type(holder) is dict:
                for key in [k for k, item in holder.items() if item is tensor]:
                    holder[key] = root


def _owner(array: Any) -> Any:
    while isinstance(getattr(array, "base", None), np.ndarray):
        array = array.base
    return array

