"""The Python values a capture of ``fn`` may have read from objects that outlive the call,
made guards (:mod:`capviz.core.python_guards`: what a guard is and how a replay checks it).

No hook sees Python read ``self.training`` or ``DEBUG``: CPython reads an attribute, a global
or a closure cell with no event a profiler gets. So the guards over-approximate what was read,
never under (a guard on a value the graph ignores refuses only when the user changes it; a
value read and not guarded is a silent difference): every place :func:`capviz.trace.places.note`
walked when the capture started (``self``'s attributes and the objects, lists and dicts inside
them three levels down, the globals ``fn`` names and the attributes of the user's modules it
names, its closure cells, the class attributes it names) that held a Python value
(:func:`capviz.core.python_guards.guardable`: a bool, number, str, ``None``, an enum, a tuple
of them) when the capture started, and whose path the code ``fn`` reaches can name
(:func:`capviz.trace.code_reach.reach`: every attribute and variable name on the path is a
name some function it reaches uses; a ``getattr`` there makes every name reachable), and
every attribute a walked object reads from its class (``p = 0.5`` on the class of
``self.drop``, read as ``self.p`` in ``Drop.forward``) whose name that code uses. A place
inside an object of a class whose code is not the user's (an installed package's) is guarded
whatever its name (its code is not read). Not guarded: a place the graph itself writes each
replay (a value it logs: :mod:`capviz.trace.effects`), and the values the call changes (a
counter, ``self.t += 1``), which the capture refuses (``changes_per_call``).

The value guarded is the one the place held when the capture started (the call itself
changes none, or is refused). The line that read it is the first line of ``fn`` naming the
place, else the first line of a method of the object's class naming the attribute (``self.p``
in ``Drop.forward``), else ``fn``'s ``def`` line.
"""

from __future__ import annotations

import argparse
import builtins
import dis
import enum
import functools
import itertools
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.python_guards import (
    ABSENT,
    DIGEST,
    GLOBAL_NAMES,
    METADATA,
    UNREAD,
    Digest,
    PythonGuard,
    PythonGuards,
    global_names,
    guardable,
    same,
    settable,
)
from capviz.core.references import view_fingerprint
from capviz.core.source import library_type
from capviz.trace import code_reach, effects, fresh_objects, guard_reach, guards_code
from capviz.trace import places as walk
from capviz.trace.assigned import assigned
from capviz.trace.guard_lines import Lines
from capviz.trace.guards_slots import unset_slots
from capviz.trace.places import Place, default_places, function_of

MOST_GUARDS = 1_000_000
"""The most guards one capture records (a bound against a runaway walk, not a budget: review 9,
finding 21, 5000 floats named by the code dropped the guard of ``self.training`` at 4096)."""


def _capviz_hook(value: Any) -> bool:
    """Whether ``value`` is a function of capviz's own, in place only while a capture runs (a
    hook such as the one ``np.errstate`` decorators are seen through): never the user's value,
    and gone by the time a replay checks its guards."""
    return isinstance(value, (types.FunctionType, types.BuiltinFunctionType)) and \
        str(getattr(value, "__module__", None) or "").startswith("capviz.")


class _Collector:
    """The guards of one capture, deduplicated by label and by the place they read."""

    def __init__(self, fn: Callable, places: list[Place], graph: Any,
                 source: tuple | None = None) -> None:
        self.fn = fn
        self.fresh = False  # (collect: the function form, whose stores are analysed)
        self.found = guard_reach.reached(fn, places)
        self.logged = _logged_labels(graph)
        self.name = getattr(function_of(fn)[1], "__name__", None) or "the function"
        self.lines = Lines(fn, self.found.functions, source)
        self.guards: list[PythonGuard] = []
        self.labels: set[str] = set()
        self.read: set[tuple[int, Any]] = set()  # (id of the holder, key) of each guarded
        self.assigned: Any = None  # (what fn assigns before it reads: trace/assigned.py)
        self.renewed: tuple[str, ...] = ()  # (the label prefixes inside a container it makes
        #                                      anew each call: self.c = {"sub": {}})
        self.checked: set[int] = set()  # (arrays the graph reads itself: _checked_arrays)
        self.written: list = []  # (the arrays it writes: _written_memory)
        self.content_names: set[str] | None = None  # (contents(), computed once)
        own = function_of(fn)[1]
        self.defaults = {id(d) for d in (getattr(own, "__defaults__", None),  # (fn's own:
                                         getattr(own, "__kwdefaults__", None)) if d}  # s[0])
        self.open = tuple(f"{p.label}{sep}" for p in places if p.kind == "keys" and
                          type(p.holder) in self.found.open_classes for sep in ".[")

    def add(self, label: str, value: Any, where: tuple[Any, tuple] | None, holder: Any,
            key: Any, read: tuple[int, Any] | None = None) -> None:
        if where is None or label in self.labels or _written(label, self.logged) or \
                (self.renewed and label.startswith(self.renewed)) or \
                len(self.guards) >= MOST_GUARDS or (read is not None and read in self.read) \
                or _capviz_hook(value):
            return
        self.labels.add(label)
        if read is not None:
            self.read.add(read)
        guard = PythonGuard(label, value, where[0], where[1],
                            self.lines.reading(label, holder, key), self.name)
        now = guard.read()  # (the capture ran fn: what it left there)
        if type(value) is Digest:  # (an array: guarded where the call left it as it was)
            if same(value, now):
                self.guards.append(guard)
            return
        if self.assigned and (label in self.assigned or (  # fn assigns it before any read:
                label in self.assigned.anew and _renewed(now) and _alone(now))):  # each
            if settable(now):                         # replay assigns what it left there
                guard.value, guard.sets = now, True
                self.guards.append(guard)
            return
        if now is not value and not guardable(now, identity=True) and \
                all(now is not u for u in UNREAD):  # (a buffer fn made lazily, left
            if self.fresh and type(key) is str and where[1] and where[1][-1] == (True, key) \
                    and _alone(now) and not fresh_objects.read_anywhere(self.found, key):
                # (bound by code that never reads it: each call, setattr(m, "c", {}) in
                #  another function, not a lazy init: R11 #7)
                if settable(now):
                    guard.value, guard.sets = now, True
                    self.guards.append(guard)
                    return
                if fresh_objects.unmakeable(now):
                    raise fresh_objects.refuse_fresh(self.fn, label, holder, key, value, now)
            return  # there: self.mask = np.tril(...) where it held None)
        if now is not value and ((guard.value is not ABSENT and type(now) is type(value) and
                                  not same(value, now)) or (
                guard.value is ABSENT and all(now is not u for u in UNREAD))):
            guard.left = now  # (self.phase = "train" in fn, a slot it sets: its message says so)
        self.guards.append(guard)

    def contents(self) -> set[str]:
        """The names the code reached loads for anything but an array's ``.shape``,
        ``.ndim``, ``.dtype``, ``.size`` or ``len()`` (review 10: an array read only for its
        shape needs no digest of its values each replay: 100 MB, 12.9 ms a replay)."""
        if self.content_names is None:
            found: set[str] = set()
            codes = [f.__code__ for f in self.found.functions if hasattr(f, "__code__")]
            while codes:
                code = codes.pop()
                codes.extend(k for k in code.co_consts if isinstance(k, types.CodeType))
                found |= _content_loads(code)
            self.content_names = found
        return self.content_names

    def named(self, place: Place) -> bool:
        """Whether code ``fn`` reaches can read ``place``: the last name on its path (the
        attribute, the variable, the container of an item) is a name that code uses, or it
        lies inside an object of a user class that reads any attribute (``__getattr__``)."""
        found = self.found
        if found.dynamic or place.label.startswith("type(") or place.label.startswith(
                self.open or ("\0",)) or (place.path is not None and
                                          id(place.path[0]) in self.defaults):
            return True  # (inside fn's own default argument: def f(x, s=[2.0]): s[0])
        names = code_reach._names_of(place.label)
        if not names:
            return False
        last = names[-1].strip("<>")
        defaulted = (len(names) == 1 or names[-1].startswith("<")) and last in found.defaulted
        return last in found.names or defaulted  # (cfg["scale"] of def f(x, cfg=CFG): R13 #6)


def _bound_unnamed(c: _Collector, place: Place) -> None:
    """A fresh container or object an attribute no code names got in the call (``setattr(m,
    "c", {})`` in a helper: a store each call makes, as no code reads it): a 'sets' guard
    binding a new copy each replay, or refused where no replay can make one (R11 #7)."""
    now = place.get()
    if now is place.value or guardable(now, identity=True) or type(place.key) is not str \
            or not _alone(now) or fresh_objects.read_anywhere(c.found, place.key):
        return
    where = _path(place)
    if settable(now) and where is not None and place.label not in c.labels:
        guard = PythonGuard(place.label, now, where[0], where[1],
                            c.lines.reading(place.label, place.holder, place.key), c.name)
        guard.sets = True
        c.labels.add(place.label)
        c.guards.append(guard)
    elif fresh_objects.unmakeable(now):
        raise fresh_objects.refuse_fresh(c.fn, place.label, place.holder, place.key,
                                         place.value, now)


def _kept_numbers(graph: Any) -> set[tuple[int, str]]:
    """``(id(object), name)`` of each Python number the graph keeps as a state (a replay
    reads it and binds its new value: :mod:`capviz.trace.kept_numbers`)."""
    found = set()
    for node in getattr(graph, "state_nodes", ()):
        place = graph.state_places.get(node.index) if "python" in node.params else None
        if place is not None:
            anchor, steps = place
            owner = anchor() if isinstance(anchor, weakref.ref) else anchor
            try:  # (self.meter.sum, STATS.count: the object that holds it)
                for is_attribute, key in steps[:-1]:
                    owner = vars(owner)[key] if is_attribute else owner[key]
            except (KeyError, IndexError, TypeError):
                continue
            if owner is not None and steps:
                found.add((id(owner), steps[-1][1]))
    return found


def collect(fn: Callable, places: list[Place], graph: Any, assigns: bool = True,
            source: tuple | None = None) -> PythonGuards:
    """The guards of a complete capture of ``fn`` (``places``: :func:`capviz.trace.places.note`
    of ``fn`` when the capture started; ``graph``: the capture's graph, whose logged places
    are left out; ``assigns``: whether ``fn``'s first statements assigning a place before
    reading it make it a value each replay sets, :mod:`capviz.trace.assigned`; ``source``:
    ``(code, lines, first line)`` of its source where ``inspect`` would not find it: a scope's
    block, :mod:`capviz.trace.guards_block`)."""
    if not places and not hasattr(function_of(fn)[1], "__globals__"):
        return PythonGuards()
    places = places + deeper(places)
    c = _Collector(fn, places, graph, source)
    places = places + _helper_defaults(fn, c.found)  # (helper(v, cfg=CFG): R13 #6)
    held = _global_objects(c.found, places)  # (CFG.scale read in a helper: review 12, #8)
    if held:
        places = places + held + [p for p in deeper(held) if _unseen_kept(p)]
    c.checked = _checked_arrays(graph)
    c.written = _written_memory(graph)
    c.assigned = assigned(fn, places if assigns else [])  # (the scope's whole frame: none)
    c.fresh = assigns
    c.renewed = tuple(f"{p.label}{sep}" for p in places if p.kind not in ("keys", "items")
                      and (p.label in c.assigned.exact or (p.label in c.assigned.anew and
                                                           _alone(p.get())))
                      and _renewed(p.get())
                      for sep in ".[")  # (inside what each replay makes anew: no guard)
    kept = _kept_numbers(graph)
    for place in places:
        if kept and place.kind in ("attribute", "slot", "dict") and \
                (id(place.holder), place.key) in kept:
            continue  # (a Python number the graph keeps as a state: trace/kept_numbers.py)
        if place.kind == "keys":  # a walked object: what it reads from its class, and the
            for label, value, where, key in _class_reads(place, c.found):  # names it lacks
                c.add(label, value, where, place.holder, key)
            if c.found.built:
                _attribute_names(c, place)
            _added(c, place)
            continue
        if place.kind == "items":  # a dict's keys, a list's length
            _container(c, place)
            continue
        if isinstance(place.holder, enum.Enum) or not c.named(place):
            if place.kind == "attribute" and c.fresh:  # (setattr(m, "c", {}): R11 #7)
                _bound_unnamed(c, place)
            continue  # (an enum member's own name and value)
        if place.kind == "global" and "." not in place.label and not c.found.globals and \
                place.key not in c.found.global_loads:
            continue  # (a global named like an attribute the code reads, self.scale and a
            #           global scale: not read, review 11, finding 2)
        value = place.value
        where = _path(place)
        if c.assigned and place.kind == "attribute" and (
                place.label in c.assigned or place.label in c.assigned.anew):
            now = place.get()  # (a new Box() each call: no replay makes one, R11 #7)
            if now is not value and fresh_objects.unmakeable(now) and _alone(now):
                raise fresh_objects.refuse_fresh(c.fn, place.label, place.holder, place.key,
                                                 value, now)
            del now
        if isinstance(value, types.ModuleType):  # self.cfg = a user's config module
            if code_reach._users(value):
                c.found.spaces.append((f"{place.label}.", vars(value)))
            continue
        if guardable(value, identity=True) or (  # (self.cache = {} each call: set anew)
                c.assigned and (place.label in c.assigned or place.label in
                                c.assigned.anew) and settable(value)):
            c.add(place.label, value, where, place.holder, place.key,
                  (id(place.holder), place.key))
        elif type(value) is np.ndarray and where is not None and id(_root(value)) not in \
                c.checked and (place.kind != "global" or place.key in c.found.global_loads or
                               c.found.globals) and \
                not any(np.may_share_memory(value, w) for w in c.written):
            # an array the graph holds no value of (NumPy's reads of it are constants of it;
            # a global by a name the code loads as one, not self.W's name)
            names = code_reach._names_of(place.label)
            if names and not c.found.dynamic and names[-1].strip("<>") not in c.contents():
                c.add(place.label, (value.shape, value.dtype.str),  # (only its .shape, len(),
                      (where[0], (*where[1], METADATA)), place.holder, place.key,  # .dtype:
                      (id(place.holder), place.key))  # those are guarded, not its values)
            else:
                c.add(place.label, Digest(view_fingerprint(value)),
                      (where[0], (*where[1], DIGEST)), place.holder, place.key,
                      (id(place.holder), place.key))
        if where is not None:
            _callable_values(c, place, value, where)
    for prefix, space in c.found.spaces:  # the globals the code reaches reads
        own = prefix == ""
        every = own and c.found.globals  # (every global: its values only, not its code)
        names = [k for k in space if not k.startswith("__")] if every \
            else sorted((c.found.global_loads if own else c.found.names) & set(space))
        for name in names:
            value = space[name]
            if guardable(value, identity=not every or name in c.found.names) and \
                    not isinstance(value, types.ModuleType):
                c.add(f"{prefix}{name}", value, (space, ((False, name),)), None, name,
                      (id(space), name))
        if every:  # (globals().get(f"CFG{i}", 1.0): a CFG1 added later is read eagerly)
            c.add("globals().keys()", global_names(space), (space, (GLOBAL_NAMES,)), None,
                  None)
        for name in sorted(c.found.tried_globals - set(space) - set(vars(builtins))):
            c.add(f"{prefix}{name}", ABSENT, (space, ((False, name),)), None, name,
                  (id(space), name))  # (try: v = SCALE / except NameError: review 11, #6)
    if c.found.built:
        _module_names(c)
    _own_defaults(c, function_of(fn)[1])
    unset_slots(c, fn, places, _path)
    _memo(c, graph)
    return PythonGuards(c.guards, guards_code.collect(c.found, places, c.name))


def _helper_defaults(fn: Callable, found: guard_reach.Reached) -> list[Place]:
    """The places inside the list and dict defaults of the functions the code of ``fn``
    reaches besides its own (``def helper(v, cfg=CFG)`` that ``fn`` calls: an item of ``CFG``
    changed after the capture was read by no replay, hostile review 13, finding 6)."""
    own = function_of(fn)[1]
    found_places: list[Place] = []
    for function in found.functions:
        if function is not own and type(function) is types.FunctionType and (
                function.__defaults__ or function.__kwdefaults__):
            found_places += default_places(function, function.__name__)
    return found_places


def _own_defaults(c: _Collector, function: Any) -> None:
    """The guards of ``fn``'s own default arguments (``def step(x, s=2.0)``,
    ``lambda x, *, flag=True: ...``) where they hold Python values: ``step.__defaults__ =
    (5.0,)`` or ``step.__kwdefaults__["flag"] = False`` after the capture changes what an eager
    call computes (silent before: each replay computed with the captured value)."""
    if type(function) is not types.FunctionType:
        return
    name = function.__qualname__ if "<" not in function.__qualname__ else function.__name__
    place = Place("attribute", function, "__defaults__", name, function)
    _callable_values(c, place, function, (_weakly(function), ()))


def _module_names(c: _Collector) -> None:
    """Where the code reads attributes by names it builds at run time, the guard of the names
    each other user module it reaches holds (``getattr(cfg, f"lr_{i}", None)`` of an imported
    settings module: ``cfg.lr_2`` added later was read by no replay, silent), as the call left
    them; ``fn``'s own module's are not (a notebook's globals grow with every cell)."""
    for prefix, space in c.found.spaces:
        module = sys.modules.get(space.get("__name__", "")) if prefix else None
        if module is None or getattr(module, "__dict__", None) is not space:
            continue
        c.add(f"{prefix[:-1]}.__dict__.keys()", tuple(space),
              (_weakly(module), ((True, "__dict__"), (None, "keys"))), module, "__dict__",
              (id(space), "__dict__"))


def _global_objects(found: guard_reach.Reached, places: list[Place]) -> list[Place]:
    """The globals the code reached loads that hold an ndarray, and the places inside the
    objects, dicts and lists they hold (``CFG.scale``, ``DCFG["scale"]``, ``W`` read in a
    helper, an inline lambda, a nested ``def`` or a comprehension, of ``fn``'s module or
    another user module) that the walk of
    :func:`capviz.trace.places.note` did not enter (it walks the globals ``fn``'s own code
    names): review 12, finding 8, silent: ``def temperature(): return CONFIG.temperature``,
    ``CONFIG.temperature`` changed between replays, was read by no guard."""
    have = {(id(p.holder), p.key) for p in places if p.kind == "global"}
    seen = {id(p.holder) for p in places if p.kind in ("keys", "items")}
    made: list[Place] = []
    for prefix, space in found.spaces:
        own = prefix == ""
        names = (found.global_loads if own else found.names) & set(space)
        if own and found.globals:  # (globals()["CFG"].scale: the code's strings name it)
            names |= found.strings & set(space)
        for name in sorted(names):
            value = space[name]
            if isinstance(value, type) and code_reach._users(value):  # (named by fn or
                made += _class_places(found, f"{prefix}{name}", value,  # not: the capture's
                                      (space, ((False, name),)), seen, 3)  # walk enters no
                continue  #                                                   class)
            if (id(space), name) in have or guardable(value, identity=True) or \
                    isinstance(value, types.ModuleType) or id(value) in seen or \
                    _library_object(value):
                continue
            inside = [p for p in walk._inside(value, f"{prefix}{name}", walk.DEPTH, seen,
                                              (space, ((False, name),))) if _unseen_kept(p)]
            if inside or type(value) is np.ndarray:  # (an array: its digest, np.linalg.norm(W)
                #                                       in a helper)
                place = Place("global", space, name, f"{prefix}{name}", value)
                place.path = (space, ((False, name),))
                made += [place, *inside]
    return made


def _class_places(found: guard_reach.Reached, label: str, klass: type, where: tuple,
                  seen: set[int], depth: int) -> list[Place]:
    """The places of what a user's class used as a namespace of settings holds under the names
    the reached code uses (``class Config: scale = 2.0`` read as ``Config.scale``, its
    ``opts = {...}``, a nested ``class Sub``, a base's value: review 12, finding 13, silent),
    read through the class: its Python values (guarded as attributes are), and the places
    inside its dicts, lists and objects (no keys or length guard of theirs: a memo)."""
    anchor, steps = where
    made: list[Place] = []
    if depth <= 0 or id(klass) in seen:
        return made
    seen.add(id(klass))
    keys = {key for base in klass.__mro__ if base is not object and code_reach._users(base)
            for key in vars(base)}
    for key in sorted(k for k in keys if not k.startswith("__") and k in found.names):
        try:
            value = getattr(klass, key)
        except AttributeError:
            continue
        path = (anchor, (*steps, (True, key)))
        if isinstance(value, type):
            if code_reach._users(value):
                made += _class_places(found, f"{label}.{key}", value, path, seen, depth - 1)
            continue
        if guardable(value) or type(value) is np.ndarray:
            place = Place("attribute", klass, key, f"{label}.{key}", value)
            place.path = path
            made.append(place)
        elif not callable(value) and not isinstance(value, (property, types.ModuleType)):
            made += [p for p in walk._inside(value, f"{label}.{key}", walk.DEPTH, seen, path)
                     if _unseen_kept(p)]
    return made


_CONTAINERS = (*walk.DICTS, list, tuple, functools.partial, types.FunctionType, np.ndarray,
               types.SimpleNamespace, argparse.Namespace)


def _library_object(value: Any) -> bool:
    """Whether global ``value`` is an object of a class that is not the user's: capviz's own
    (the ``CaptureDevice`` and the ``Tensor`` a notebook cell's ``with`` leaves in the
    module's globals), a widget, a library's client. :func:`_global_objects` walks no
    further into it: its attributes are the library's state, which no replay reads and no
    user edit between replays sets (walking a cell's ``cap`` and ``h`` made places over the
    live capture's state: tests/test_browser.py's live view failed 3 runs in 4 after
    216a677)."""
    kind = type(value)
    if kind in _CONTAINERS:
        return False
    return _foreign(kind)


def _unseen_kept(place: Place) -> bool:
    """Whether a place :func:`_global_objects` found is guarded: not a container's keys or
    length, nor an item holding ``None`` (a memo or a log a helper fills, which the capture's
    walk did not see and no replay logs: its keys, and the ``None`` a ``defaultdict`` read
    left, change with the user's next call, which would then refuse every replay)."""
    return place.kind != "items" and not (place.kind in ("dict", "list") and
                                          place.value is None)


def _root(value: np.ndarray) -> np.ndarray:
    while isinstance(value.base, np.ndarray):
        value = value.base
    return value


_METADATA = frozenset(("shape", "ndim", "dtype", "size", "nbytes", "itemsize"))
_LOADS: dict[Any, frozenset] = {}


def _content_loads(code: Any) -> frozenset:
    """The names ``code`` loads other than right before ``.shape`` / ``.ndim`` / ``.dtype`` /
    ``.size`` or as ``len()``'s one argument (kept per code object)."""
    found = _LOADS.get(code)
    if found is not None:
        return found
    names = set()
    ops = list(dis.get_instructions(code))
    for i, op in enumerate(ops):
        if not op.opname.startswith("LOAD_") or type(op.argval) is not str:
            continue
        after = ops[i + 1] if i + 1 < len(ops) else None
        if after is not None and after.opname in ("LOAD_ATTR", "LOAD_METHOD") and \
                after.argval in _METADATA:
            continue
        if after is not None and after.opname in ("PRECALL", "CALL") and after.arg == 1 and \
                any(o.opname == "LOAD_GLOBAL" and o.argval == "len" for o in ops[max(0, i - 2):i]):
            continue
        names.add(op.argval)
    found = frozenset(names)
    if len(_LOADS) < 4096:
        _LOADS[code] = found
    return found


def _checked_arrays(graph: Any) -> set[int]:
    """The ids of the root arrays whose values the graph reads or writes itself: its states'
    targets, its constants kept by reference and the arrays its small constants were copied
    from (checked at each replay by :mod:`capviz.core.references`). Any other array a place
    holds is one the code read, if at all, through NumPy outside the graph
    (``np.linalg.norm(self.W)``: review 9, finding 19's derived rows, review 10, finding 4,
    silent): guarded by its fingerprint (:class:`capviz.core.python_guards.Digest`)."""
    found: set[int] = set()
    for ref in list(graph.state_targets.values()) + list(graph.constant_origins.values()):
        target = ref() if callable(ref) else None
        if isinstance(target, np.ndarray):
            found.add(id(_root(target)))
    for value in graph.constant_values.values():
        if isinstance(value, np.ndarray):
            found.add(id(_root(value)))
    return found


def _written_memory(graph: Any) -> list[np.ndarray]:
    """The arrays the graph writes (its states' targets): an array sharing their memory by
    other means than a view (a ctypes alias of a state's address) changes with each replay,
    as with each call: no guard of its own."""
    found = []
    for ref in graph.state_targets.values():
        target = ref() if callable(ref) else None
        if isinstance(target, np.ndarray):
            found.append(target)
    return found


DEEPER = 8
"""The levels :func:`deeper` walks below the walk of :func:`capviz.trace.places.note`."""
MOST_DEEPER = 1_000_000
ENTRIES = 65_536
"""The entries of one object, list or dict :func:`deeper` walks (past them: not guarded, a
list of more Python values than that is data, not a hyperparameter: docs/guide/state.md)."""
"""The most places :func:`deeper` makes."""


def deeper(places: list[Place]) -> list[Place]:
    """The places below the walk of :func:`capviz.trace.places.note`, which stops three
    levels down (``self._modules["body"]._modules["0"]._modules["drop"].p`` of a module tree
    is six): the objects, dicts and lists its places hold that it did not walk, walked
    :data:`DEEPER` levels more for the guards (each with its path from what the user holds)."""
    seen = {id(p.holder) for p in places}
    found: list[Place] = []
    for place in places:  # a user's dict or list subclass places.py walked as an object
        holder = place.holder  # (class Layers(dict), 20p's finding: its items unwalked)
        if place.kind == "keys" and isinstance(holder, (dict, list)) and \
                type(holder) not in (list, *walk.DICTS) and _plain_items(holder):
            seen.discard(id(holder))
            path = place.path if place.path is not None else (_weakly(holder), ())
            if path[1] and path[1][-1] == (True, ""):
                path = (path[0], ())
            _walk(holder, place.label, path, DEEPER, seen, found)
    for place in places:
        if place.kind in ("keys", "items") and place.path is not None:  # (past the 256
            _rest(place, seen, found)                # entries places.py walks of one)
            continue
        if place.kind in ("keys", "items") or id(place.value) in seen or \
                isinstance(place.value, walk._LEAVES):
            continue
        where = _path(place)
        if where is not None:
            _walk(place.value, place.label, where, DEEPER, seen, found)
    return found


def _walk(value: Any, label: str, where: tuple, depth: int, seen: set[int],
          found: list[Place]) -> None:
    if depth <= 0 or id(value) in seen or len(found) >= MOST_DEEPER or \
            isinstance(value, walk._LEAVES):
        return
    anchor, steps = where
    if isinstance(value, list) and _plain_items(value):  # (a user's subclass too: 20p's
        items = [(i, f"{label}[{i}]", "list", False, item)  # finding, class Layers(dict))
                 for i, item in enumerate(list.__getitem__(value, slice(0, ENTRIES)))]
        own = Place("items", value, None, label, list(value))
    elif isinstance(value, dict) and _plain_items(value):
        items = [(key, f"{label}[{key!r}]", "dict", False, item)
                 for key, item in itertools.islice(dict.items(value), ENTRIES)]
        own = Place("items", value, None, label, dict(value))
    elif walk._plain_object(value) and not isinstance(value, enum.Enum):
        items = [(key, f"{label}.{key}", "attribute", True, item)
                 for key, item in itertools.islice(vars(value).items(), ENTRIES)]
        own = Place("keys", value, None, label, frozenset(vars(value)))
    else:
        return
    if isinstance(value, list) and type(value) is not list:  # (a list subclass: the objects
        own = None  # it holds, not its length or plain values, which no replay logs: a
        items = [i for i in items if not guardable(i[4], identity=True)]  # list subclass
    if own is not None:  # the call appends to, test_lifted.py's RUNS; a dict subclass whole)
        seen.add(id(value))
        own.path = where
        found.append(own)
    seen.add(id(value))
    for key, inner, kind, is_attribute, item in items:
        place = Place(kind, value, key, inner, item, inner=True)
        place.path = (anchor, (*steps, (is_attribute, key)))
        found.append(place)
        _walk(item, inner, place.path, depth - 1, seen, found)


def _plain_items(value: Any) -> bool:
    """A list or dict, or a user's subclass of one that reads its items as they are (no
    ``__getitem__`` of its own: its items are what a path's ``[key]`` reads)."""
    kind = type(value)
    if kind in (list, *walk.DICTS):
        return True
    base = list if isinstance(value, list) else dict
    return not library_type(kind) and all(
        getattr(kind, name) is getattr(base, name) for name in ("__getitem__", "__iter__"))


def _rest(place: Place, seen: set[int], found: list[Place]) -> None:
    """The entries past the first :data:`capviz.trace.places.ITEMS` of an object, list or dict
    places.py walked (``self.cfg.c299`` of 300 attributes, review 9, finding 21), as places
    walked as :func:`_walk` walks."""
    holder = place.holder
    anchor, steps = place.path
    if steps and steps[-1] == (True, ""):  # (fn's own object)
        steps = ()
    if type(holder) is list and len(holder) > walk.ITEMS:
        entries = [(i, f"{place.label}[{i}]", "list", False, item)
                   for i, item in enumerate(holder[walk.ITEMS:ENTRIES], walk.ITEMS)]
    elif type(holder) in walk.DICTS and len(holder) > walk.ITEMS:
        entries = [(key, f"{place.label}[{key!r}]", "dict", False, item) for key, item in
                   itertools.islice(holder.items(), walk.ITEMS, ENTRIES)]
    elif place.kind == "keys" and walk._plain_object(holder) and \
            len(vars(holder)) > walk.ITEMS:
        entries = [(key, f"{place.label}.{key}", "attribute", True, item) for key, item in
                   itertools.islice(vars(holder).items(), walk.ITEMS, ENTRIES)]
    else:
        return
    for key, inner, kind, is_attribute, item in entries:
        each = Place(kind, holder, key, inner, item, inner=True)
        each.path = (anchor, (*steps, (is_attribute, key)))
        found.append(each)
        _walk(item, inner, each.path, DEEPER, seen, found)


def _container(c: _Collector, place: Place) -> None:
    """The guard of a walked dict's keys or list's length (``"s" in self.cfg``, ``for l in
    self.layers``), as the capture left it, where the code names it and no replay writes it."""
    holder = place.holder
    if not isinstance(holder, (dict, list)) or _written(f"{place.label}[", c.logged) or \
            place.filled or not c.named(place):
        return  # (a dict the call fills, a memo: its keys are the call's own writes)
    if place.path is not None:
        anchor, steps = place.path
    else:
        anchor, steps = _weakly(holder), ()
    if c.renewed and place.label.startswith(c.renewed):
        return  # (inside a container each replay makes anew)
    if c.assigned and (place.label in c.assigned or place.label in c.assigned.anew):
        now = PythonGuard(place.label, None, anchor, steps, None, "").read()
        if settable(now) and (place.label in c.assigned or (_renewed(now) and _alone(now))):
            return  # (self.cache = {} each call: a new one set by each replay)
    if isinstance(holder, dict):
        c.add(f"{place.label}.keys()", tuple(holder), (anchor, (*steps, (None, "keys"))),
              holder, None)
    else:
        c.add(f"len({place.label})", len(holder), (anchor, (*steps, (None, "len"))), holder,
              None)


def _memo(c: _Collector, graph: Any) -> None:
    """The entries a replay sets in a dict the call fills when it finds one missing (a memo:
    ``if "s" not in self.memo: self.memo["s"] = 2.0``, logged by each replay,
    :mod:`capviz.trace.effects`), each a guard that nothing there is right for too
    (:attr:`capviz.core.python_guards.PythonGuard.optional`): an entry the user put there with
    another value between replays, which an eager call reads instead of setting it, refuses
    the replay (silent before: the replay set the capture's value over it)."""
    for logged in graph.logged_values:
        if logged.kind != "set" or logged.path is None or not guardable(logged.value) or not (
                effects.tested(logged.name, logged.source) or any(  # (or a helper it calls:
                    effects.tested(logged.name, (f.__code__.co_filename,  # R10 #12)
                                                 f.__code__.co_firstlineno, f.__code__.co_name))
                    for f in c.found.functions if hasattr(f, "__code__"))):
            continue
        label = f"{logged.name}[{logged.key!r}]"
        if label in c.labels or len(c.guards) >= MOST_GUARDS:
            continue
        c.labels.add(label)
        anchor, steps = logged.path
        guard = PythonGuard(label, logged.value, anchor, (*steps, (False, logged.key)),
                            logged.source, c.name)
        guard.optional = True
        c.guards.append(guard)


def _callable_values(c: _Collector, place: Place, value: Any, where: tuple) -> None:
    """The guards of what a held function computes with besides its code: a function's
    default arguments (``lambda x, s=2.0: x * s``), a ``functools.partial``'s arguments."""
    anchor, steps = where
    if isinstance(value, types.FunctionType):
        defaults = value.__defaults__
        if defaults and guardable(defaults):
            c.add(f"{place.label}.__defaults__", defaults,
                  (anchor, (*steps, (True, "__defaults__"))), value, "__defaults__")
        for key, item in (value.__kwdefaults__ or {}).items():  # (def f(x, *, s=2.0))
            if guardable(item):
                c.add(f"{place.label}.__kwdefaults__[{key!r}]", item,
                      (anchor, (*steps, (True, "__kwdefaults__"), (False, key))), value, key)
    elif isinstance(value, functools.partial):
        if value.args and guardable(value.args):
            c.add(f"{place.label}.args", value.args, (anchor, (*steps, (True, "args"))),
                  value, "args")
        for key, item in (value.keywords or {}).items():
            if guardable(item):
                c.add(f"{place.label}.keywords[{key!r}]", item,
                      (anchor, (*steps, (True, "keywords"), (False, key))), value, key)


def _logged_labels(graph: Any) -> tuple[str, ...]:
    """The labels a replay of ``graph`` writes, as prefixes: ``label[`` of each container it
    logs into (its items change), ``label.key`` of each attribute it sets (a layer's cache,
    ``self.x = x``, where the class holds ``x = None``)."""
    labels = {f"{v.name}[" for v in graph.logged_values}
    for node in graph.effect_outputs:
        if node.params.get("effect") == "attr":
            labels.update((f"{node.name}.{node.params['key']}.",
                           f"{node.name}.{node.params['key']}["))
            labels.add(f"{node.name}.{node.params['key']}")
        elif node.name:
            labels.add(f"{node.name}[")
    return tuple(labels)


def _written(label: str, logged: tuple[str, ...]) -> bool:
    """Whether a replay writes the place ``label`` (:func:`_logged_labels`)."""
    return any(label == prefix or (prefix[-1] in ".[" and label.startswith(prefix))
               for prefix in logged)


def _alone(value: Any) -> bool:
    """Whether only the place it was read from (and the callers' frames) holds ``value``: a
    new object the call made (``self._fresh()``'s dict), not one held elsewhere too
    (``self.c = self.proto``: eager binds that same object each call)."""
    return sys.getrefcount(value) <= _ALONE


_ALONE = 4  # (the place, the caller's name for it, this function's argument, getrefcount's)


def _renewed(value: Any) -> bool:
    """Whether ``value`` is a container a 'sets' guard assigns anew each replay."""
    return not guardable(value) and settable(value)


def _anchored(place: Place, holder: Any) -> tuple[Any, tuple]:
    """``(anchor, steps)`` by which a guard reaches walked object ``holder`` again: the place's
    path from what the user holds (its last ``(True, "")`` step, the object itself, dropped),
    else a weak reference to the object itself."""
    if place.path is None:
        return _weakly(holder), ()
    anchor, steps = place.path
    return anchor, (() if steps and steps[-1] == (True, "") else steps)


def _foreign(kind: type) -> bool:
    """Whether class ``kind`` is not the user's own (a library's, NumPy's, the interpreter's
    or capviz's): the walks read no attribute of its objects as the user's settings."""
    return library_type(kind) or not code_reach._users(kind)


def _added(c: _Collector, place: Place) -> None:
    """A guard that :attr:`~capviz.core.python_guards.PythonGuard.sets` each attribute the call
    added to walked object ``place.holder`` with a Python value by a store every call makes
    (``self.initialized = True``: :func:`capviz.trace.assigned.assigned`), so that each replay
    sets it as the call does, also after the user deleted or reset it (review 9, finding 22)."""
    holder = place.holder
    if not c.assigned or not hasattr(holder, "__dict__") or type(place.value) is not frozenset:
        return
    anchor, steps = _anchored(place, holder)
    for key, now in list(vars(holder).items()):
        label = f"{place.label}.{key}"
        if key in place.value or label in c.labels or label not in c.assigned or \
                not settable(now):
            continue
        guard = PythonGuard(label, now, anchor, (*steps, (True, key)),
                            c.lines.reading(label, holder, key), c.name)
        guard.sets = True
        c.labels.add(label)
        c.guards.append(guard)


def _path(place: Place) -> tuple[Any, tuple] | None:
    """``(anchor, steps)`` leading to ``place`` from what the user holds: its own path where
    the walk knew it, else its holder (weakly where it takes a weak reference) and one step."""
    if place.path is not None:
        anchor, steps = place.path
        if steps and steps[-1] == (True, "cell_contents") and place.kind != "cell":
            return None  # (a path to the cell that holds the place: not its own)
        return anchor, steps
    if place.kind in ("attribute", "slot"):
        return _weakly(place.holder), ((True, place.key),)
    if place.kind == "cell":
        return place.holder, ((True, "cell_contents"),)
    if place.kind in ("global", "dict", "list"):
        return place.holder, ((False, place.key),)
    return None


def _weakly(obj: Any) -> Any:
    try:
        return weakref.ref(obj)
    except TypeError:
        return obj


def _attribute_names(c: _Collector, place: Place) -> None:
    """Where the code reads attributes by names it builds at run time (``getattr(self,
    f"l{i}", None)``, ``vars(self)``: :func:`capviz.trace.guard_reach.built_names`), the
    guard of walked object ``place.holder``'s attribute names, as the call left them, and of
    the names its user classes hold (a name the object lacks falls through to them: a class
    attribute, a ``__getattr__``): an attribute the user adds or deletes later, under any
    name, refuses the replay (silent before: the loop over ``l0, l1, ...`` replayed the layers
    it found; the names cannot be listed to guard each one absent, as a ``__slots__``
    object's are). A ``types.SimpleNamespace`` or an ``argparse.Namespace`` (a config or a
    set of layers) is guarded as a user's object (review 12, finding 7)."""
    obj = place.holder
    kind = type(obj)
    if (kind not in _NAMESPACES and _foreign(kind)) or \
            isinstance(obj, (types.ModuleType, enum.Enum, type)) or \
            type(getattr(obj, "__dict__", None)) is not dict:
        return
    anchor, steps = _anchored(place, obj)
    c.add(f"{place.label}.__dict__.keys()", tuple(vars(obj)),
          (anchor, (*steps, (True, "__dict__"), (None, "keys"))), obj, "__dict__")
    for i, klass in enumerate(kind.__mro__):
        if klass is object or _foreign(klass):
            continue
        label = f"type({place.label})" if i == 0 else f"type({place.label}).__mro__[{i}]"
        c.add(f"{label}.__dict__.keys()", tuple(vars(klass)),
              (anchor, (*steps, (True, "__class__"), (True, "__mro__"), (False, i),
                        (True, "__dict__"), (None, "keys"))), klass, "__dict__",
              (id(klass), "__dict__"))


_NAMESPACES = (types.SimpleNamespace, argparse.Namespace)


def _class_reads(place: Place, found: guard_reach.Reached
                 ) -> list[tuple[str, Any, tuple, str]]:
    """``(label, value, (anchor, steps), name)`` of what walked object ``place.holder`` reads
    from its class (``self.p`` where ``p = 0.5`` is the class's), read through the object (an
    attribute the user sets on it later shadows the class's: the guard sees that too), and of
    each name ``getattr`` or ``hasattr`` may read that it lacks (:data:`ABSENT`: any value
    there later refuses)."""
    obj = place.holder
    kind = type(obj)
    if library_type(kind) or isinstance(obj, (types.ModuleType,
                                                                     enum.Enum)):
        return []
    anchor, steps = _anchored(place, obj)
    own = place.value  # the names of its attributes
    users = code_reach._users(kind)
    opened = kind in found.open_classes
    found_here = []
    held: set[str] = set()
    called = None  # (a method of its class the code names)
    for klass in kind.__mro__:
        if klass is object:
            break
        for key, value in list(vars(klass).items()):
            if called is None and not key.startswith("__") and key not in own and \
                    isinstance(value, (types.FunctionType, staticmethod)) and \
                    (key in found.names or found.dynamic or opened):
                called = key
            held.add(key)
            if key.startswith("__") or key in own or not guardable(value):
                continue
            if users and not found.dynamic and not opened and key not in found.names:
                continue
            found_here.append((f"{place.label}.{key}", value, (anchor, (*steps, (True, key))),
                               key))
    if called is not None and users and steps:  # (self.meter = Doubled() after the capture:
        found_here.append((f"type({place.label})", kind,  # the eager call runs the new class's
                           (anchor, (*steps, (True, "__class__"))), called))  # code; not fn's own
    absent = set(found.tried)  # (names read where an AttributeError is caught: R11 #6)
    if found.strung:
        absent |= found.strings
    if users and not opened and absent:
        for key in sorted(absent - own - held):
            if key.isidentifier() and not key.startswith("__"):
                found_here.append((f"{place.label}.{key}", ABSENT,
                                   (anchor, (*steps, (True, key))), key))
    return found_here
