"""Guards on Python values: the flags and hyperparameters a capture read from objects that
outlive the call, checked when each replay starts (TorchDynamo's guards).

A captured graph is the program for the Python values its code read: ``if self.training:``
chose a branch, ``x * (1.0 - self.p)`` baked a literal, ``range(self.n_layers)`` a loop
count. The user changes them between calls (``model.training = False``, ``opt.lr = 1e-4``,
a module's ``DEBUG = True``), and a replay, which runs no Python, would compute the old
behaviour silently. So a capture records, for each such value it may have read (what
:mod:`capviz.trace.guards_python` finds: over-approximated, never under), a
:class:`PythonGuard`: its place name as the code spells it (``self.training``,
``type(self).scale``, ``DEBUG``, ``<p>`` for a closure cell), the path from what the user
holds to it (the object held weakly), its value, and the user's line that read it. Every
replay (``graph.replay``, a compiled replay, an executor) reads each place again first
(:func:`check`) and raises :class:`~capviz.core.errors.GuardError` where one differs, naming
the place, both values, the line and the fix; an object freed since is not checked (nothing can
call the eager code on it). A loaded graph keeps its guards as data with no live object to read
(:attr:`PythonGuard.live` ``False``): they are listed, not checked, and ``cv.load`` warns
(:class:`~capviz.core.errors.UncheckedGuardWarning`).
"""

from __future__ import annotations

import collections
import copy
import enum
import functools
import math
import operator
import os
import types
import weakref
from typing import Any

import numpy as np

from capviz.core import code_guards
from capviz.core.errors import GuardError
from capviz.core.references import view_fingerprint
from capviz.core.source import format_source

SCALARS = (bool, int, float, complex, str, bytes, type(None))
"""The Python values a guard holds as they are (and tuples of them, enums, NumPy scalars)."""

MOST_ITEMS = 64
"""The longest tuple guarded whole (a longer one is data, not a flag)."""


IDENTITIES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, np.ufunc, type,
              functools.partial)
"""The values a guard holds by identity: a function, a class or a dtype's type, a ufunc (an
activation ``self.act = np.tanh``, ``self.dt = np.float32``, a helper monkeypatched)."""


def guardable(value: Any, depth: int = 2, identity: bool = False) -> bool:
    """Whether ``value`` is a Python value a guard holds: ``None``, a bool, number, str or
    bytes, an enum member, a NumPy scalar or dtype, or a tuple of them (two levels; a named
    tuple too); with ``identity``, also one of :data:`IDENTITIES`."""
    kind = type(value)
    if kind in SCALARS or isinstance(value, (enum.Enum, np.dtype)):
        return True
    if isinstance(value, np.generic):
        return value.dtype.kind in "biufcSU"
    if isinstance(value, tuple) and depth > 0 and len(value) <= MOST_ITEMS:
        return all(guardable(item, depth - 1) for item in value)
    return identity and isinstance(value, IDENTITIES)


def settable(value: Any, depth: int = 3) -> bool:
    """Whether ``value`` is what a guard that :attr:`PythonGuard.sets` can assign: a value a
    guard holds (:func:`guardable`), or a list, dict, set, tuple, deque or one of the dicts of
    :mod:`collections` of them, three levels at most, :data:`MOST_ITEMS` items each
    (``self.cache = {}`` each call, ``self.cfg = {"n": 3, "sub": {}}``,
    ``defaultdict(list)``), which it assigns as a new copy at each replay, as each call makes a
    new one (review 10, finding 3)."""
    if guardable(value):
        return True
    if depth <= 0 or not isinstance(value, _CONTAINERS) or len(value) > MOST_ITEMS:
        return False
    if isinstance(value, collections.defaultdict) and value.default_factory not in (
            None, list, dict, set, int, float):
        return False
    if isinstance(value, dict):
        return all(guardable(k) and settable(v, depth - 1) for k, v in value.items())
    return all(settable(item, depth - 1) for item in value)


_CONTAINERS = (list, dict, set, tuple, collections.deque)


ABSENT = type("Absent", (), {"__repr__": lambda self: "absent", "__slots__": ()})()
"""The value of a guard on an attribute the object did not have (``hasattr(self, "scale")``,
``getattr(self, "p", 0.5)``): any value there now refuses."""


def same(recorded: Any, now: Any) -> bool:
    """Whether ``now`` is the recorded value: of the same type and exactly equal (``-0.0`` is
    not ``0.0``, NaN is NaN, ``1`` is not ``1.0`` nor ``True``), item by item for tuples, an
    enum member by identity, a NumPy scalar by dtype and bits."""
    if now is recorded:
        return True
    kind = type(recorded)
    if type(now) is not kind:
        return False
    if kind is float:
        if math.isnan(recorded):
            return math.isnan(now)
        return recorded == now and math.copysign(1.0, recorded) == math.copysign(1.0, now)
    if kind is complex:
        return same(recorded.real, now.real) and same(recorded.imag, now.imag)
    if issubclass(kind, tuple):
        return len(recorded) == len(now) and all(map(same, recorded, now))
    if isinstance(recorded, enum.Enum):
        return False  # (members are compared by identity, above)
    if isinstance(recorded, np.generic):
        return recorded.dtype == now.dtype and recorded.tobytes() == now.tobytes()
    return bool(recorded == now)


_GONE = object()
"""What :meth:`PythonGuard.read` gives where the object the path starts from was freed."""
_MISSING = object()
"""What :meth:`PythonGuard.read` gives where the path leads nowhere now (an attribute
deleted, a key removed)."""
UNREAD = (_GONE, _MISSING)
"""What :meth:`PythonGuard.read` gives where it read no value."""


class Digest(bytes):
    """What an array guard holds: the :func:`capviz.core.references.view_fingerprint` of an
    ndarray the capture's NumPy read outside the graph (``np.linalg.norm(self.W)``, whose
    result the graph holds as a constant: review 9, finding 19's derived rows; review 10,
    finding 4). Its place's path ends in the step :data:`DIGEST`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return _DIGEST_TEXT


_DIGEST_TEXT = "<its values when captured>"
DIGEST = (None, "digest")
"""The last step of an array guard's path: the fingerprint of the array there."""
NAMES = ((True, "__dict__"), (None, "keys"))
"""The last steps of the guard of an object's attribute names (code that reads attributes by
names it builds at run time: :func:`capviz.trace.guard_reach.built_names`)."""
GLOBAL_NAMES = (None, "names")
"""The last step of the guard of the names a module's globals bind to Python values
(:func:`global_names`), where the code reads its globals by names it builds at run time
(``globals().get(f"CFG{i}", 1.0)``): a ``CFG1`` added after the capture refuses the replay."""
METADATA = (None, "meta")
"""The last step of the guard of an array the code read only for its ``.shape``, ``len()``,
``.dtype``: ``(shape, dtype.str)`` of the array there (its values are not read)."""


class PythonGuard:
    """One Python value a capture read from an object that outlives the call.

    Attributes:
        label: the place as the code spells it (``self.training``, ``self.cfg['lr']``,
            ``type(self).scale``, ``DEBUG``, ``<p>`` for a closure cell).
        value: the value it held when the capture ran.
        source: ``(file, line, function)`` of the user's line that read it (``None``: not
            found; the captured function's ``def`` line is given then).
        fn: the captured function's name.
        live: whether the guard can read the place (``False`` on a loaded graph).
    """

    __slots__ = ("anchor", "fn", "label", "left", "optional", "sets", "source", "steps",
                 "value")

    def __init__(self, label: str, value: Any, anchor: Any, steps: tuple, source: Any,
                 fn: str) -> None:
        self.label, self.value, self.steps, self.source, self.fn = label, value, steps, \
            source, fn
        self.anchor = anchor  # a weak reference, a module's globals, a class, a cell, None
        self.sets = False  # a value the call assigns before it reads anything: each replay
        #                    assigns it (capviz/trace/assigned.py), nothing is checked
        self.left: Any = _MISSING  # the value the captured call itself left there, where it
        #                            set another (self.phase = "train"): its message says so
        self.optional = False  # nothing there is right too: a memo's entry the call adds
        #                        when it finds none (its replays add it: trace/effects.py)

    @property
    def live(self) -> bool:
        return self.anchor is not None

    def read(self) -> Any:
        """The value the place holds now (``_GONE``: its object was freed; ``_MISSING``: the
        path leads nowhere)."""
        owner = self.anchor
        if type(owner) is weakref.ref:
            owner = owner()
            if owner is None:
                return _GONE
        try:
            for is_attribute, key in self.steps:
                if is_attribute is None:  # a container's keys or length, an array's digest
                    owner = tuple(owner) if key == "keys" else len(owner) if key == "len" \
                        else _digest(owner) if key == "digest" else global_names(owner) \
                        if key == "names" else _meta(owner)
                elif is_attribute:
                    owner = getattr(owner, key)
                else:
                    owner = owner[key]
        except (AttributeError, KeyError, IndexError, TypeError, ValueError):
            return _MISSING
        return owner

    def write(self) -> None:
        """Assign the value to the place, as the call does (a guard that :attr:`sets`)."""
        owner = self.anchor
        if type(owner) is weakref.ref:
            owner = owner()
        if owner is None or not self.steps:
            return
        try:
            for is_attribute, key in self.steps[:-1]:
                owner = getattr(owner, key) if is_attribute else owner[key]
            is_attribute, key = self.steps[-1]
            value = self.value
            if not guardable(value):  # (a new list or dict, as each call makes one)
                value = copy.deepcopy(value)
            if is_attribute:
                setattr(owner, key, value)
            else:
                owner[key] = value
        except (AttributeError, KeyError, IndexError, TypeError):
            return  # (the path leads nowhere now: the call would fail there too)

    def __repr__(self) -> str:
        return f"<PythonGuard {self.label} == {shown(self.value)}>"


class Shown:
    """A loaded guard's value JSON does not hold (an enum member, bytes): its text."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def shown(value: Any) -> str:
    """A value as a message shows it (``np.float32(0.1)`` as NumPy writes it, a function by its
    qualified name; long text cut)."""
    if isinstance(value, (types.FunctionType, types.MethodType)):
        return f"<function {value.__qualname__}>"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class PythonGuards(list):
    """A graph's guards (a list of :class:`PythonGuard`) with the plan :func:`check` runs,
    built once per graph (:func:`_plan`): the guards' paths merged into one tree per object
    they start from, so that a replay reads each object on the way once however many guards
    pass through it (``self._modules['body']`` once for its 40 guards), each read a C-level
    getter (``operator.attrgetter("a.b")``, ``itemgetter``), an object's guarded attributes or
    items read by one getter, and the values compared by identity first (a value the user did
    not touch is the same object), by :func:`same` only where one is not. Where a value
    differs or a read fails, the guards are read again one by one, in their order, for the
    first that differs, the shortest paths first (:func:`_check_each`)."""

    __slots__ = ("_plan", "_sets", "codes")

    def __init__(self, guards: Any = (), codes: tuple = ()) -> None:
        super().__init__(guards)
        self._plan: tuple | None = None
        self._sets: list | None = None
        self.codes = codes  # (the code the capture ran: capviz.core.code_guards, not listed)

    def __bool__(self) -> bool:
        return bool(len(self) or self.codes)

    def plan(self) -> tuple[list[tuple], list[PythonGuard]]:
        if self._plan is None:
            self._plan = _plan(self)
            self._sets = [g for g in self if g.sets and g.anchor is not None]
        return self._plan

    def sets(self) -> list:
        self.plan()
        return self._sets

    def replan(self) -> None:
        """Forget the plan: the next check builds it again (after a guard's value or path is
        changed in place; a change to the list itself does this)."""
        self._plan = self._sets = None


def _replanning(name: str) -> Any:
    method = getattr(list, name)

    def changed(self: PythonGuards, *args: Any, **kwargs: Any) -> Any:
        self._plan = self._sets = None  # (the plan holds the guards it was built from)
        return method(self, *args, **kwargs)

    changed.__name__ = name
    return changed


for _name in ("append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse",
              "__setitem__", "__delitem__", "__iadd__", "__imul__"):
    setattr(PythonGuards, _name, _replanning(_name))

_STEP, _STEP_KEYS, _ONE, _SOME = 0, 1, 2, 3
"""The kinds of a plan's op: a read kept in a register for the reads below it; the same with
the keys of what it read compared (``self._modules``, then its keys); one guarded value
compared; several compared (a getter of several names, a container's keys)."""


class _Node:
    """An object on the guards' paths: the steps to the objects below it, and the guards that
    read a value from it (their last step)."""

    __slots__ = ("below", "leaves")

    def __init__(self) -> None:
        self.below: dict[tuple, _Node] = {}
        self.leaves: list[tuple[tuple, PythonGuard]] = []


def _plan(guards: list[PythonGuard]) -> tuple[list[tuple], list[PythonGuard]]:
    """``(anchor, weak, ops, size)`` per object the live guards' paths start from: ``ops`` in
    the order the tree is walked, ``(kind, getter, source register, register or values)``,
    register 0 holding the anchor and ``size`` registers in all (see :class:`PythonGuards`);
    and the guards read by themselves (on an absent attribute, or with no path)."""
    trees: dict[int, tuple[Any, _Node]] = {}
    alone = []
    for guard in guards:
        if guard.anchor is None or guard.sets:
            continue
        if not guard.steps or guard.optional or (guard.value is ABSENT and
                                                  _absence(guard.steps[-1]) is None):
            alone.append(guard)  # (read by itself)
            continue
        node = trees.setdefault(id(guard.anchor), (guard.anchor, _Node()))[1]
        for step in guard.steps[:-1]:
            node = node.below.setdefault(step, _Node())
        node.leaves.append((guard.steps[-1], guard))
    plan = []
    for anchor, root in trees.values():
        ops: list[tuple] = []
        size = _emit(root, 0, ops, 1)
        plan.append((anchor, type(anchor) is weakref.ref, ops, size))
    return plan, alone


def _emit(node: _Node, register: int, ops: list, size: int, fused: Any = None) -> int:
    """Append the ops reading ``node``'s guarded values and the objects below it (held in
    ``register``) to ``ops``; the registers used from ``size`` on. A run of attributes with
    nothing guarded on the way is one getter (``attrgetter("cfg.inner")``); the keys of an
    object are compared by the op that read it (guard ``fused``)."""
    names, items = [], []
    for (kind, key), guard in node.leaves:
        if guard is fused:
            continue
        if guard.value is ABSENT:  # (asked without raising: an exception costs a microsecond)
            ops.append((_ONE, _absence((kind, key)), register, _MISSING))
        elif kind is None:  # a container's keys (a tuple), its length, an array's digest
            if key == "keys":
                ops.append((_SOME, tuple, register, guard.value))
            elif key == "digest":
                ops.append((_ONE, _digest, register, guard.value))
            elif key == "meta":
                ops.append((_ONE, _meta, register, guard.value))
            elif key == "names":
                ops.append((_ONE, global_names, register, guard.value))
            else:
                ops.append((_ONE, len, register, guard.value))
        elif kind and type(key) is str and "." not in key:
            names.append((key, guard.value))
        elif not kind and _hashable(key):
            items.append((key, guard.value))
        else:
            ops.append((_ONE, _reader(kind, key), register, guard.value))
    for many, make in ((names, operator.attrgetter), (items, operator.itemgetter)):
        if len(many) == 1:
            ops.append((_ONE, make(many[0][0]), register, many[0][1]))
        elif many:
            ops.append((_SOME, make(*(k for k, _ in many)), register,
                        tuple(v for _, v in many)))
    for (kind, key), below in node.below.items():
        path = [key]
        while kind is True and type(key) is str and "." not in key and not below.leaves \
                and len(below.below) == 1:  # (nothing read on the way: one getter)
            (next_kind, next_key), deeper = next(iter(below.below.items()))
            if next_kind is not True or type(next_key) is not str or "." in next_key:
                break
            path.append(next_key)
            below = deeper
        if kind is True and type(key) is str and "." not in key:
            getter = operator.attrgetter(".".join(path))
        elif kind is False and _hashable(key):
            getter = operator.itemgetter(key)
        else:
            getter = _reader(kind, key)
        keys = next((guard for (k, name), guard in below.leaves if k is None and
                     name == "keys"), None)
        if keys is not None:
            ops.append((_STEP_KEYS, getter, register, (size, keys.value)))
        else:
            ops.append((_STEP, getter, register, size))
        size = _emit(below, size, ops, size + 1, keys)
    return size


def _absence(step: tuple) -> Any:
    """The getter of a guard on an absent attribute or dict item (``hasattr(self, "cache")``,
    ``getattr(self, "p", 0.5)``) that gives ``_MISSING`` where the place holds nothing, as
    :meth:`PythonGuard.read` does, without raising (``None``: a step it does not read)."""
    kind, key = step
    if kind is True and type(key) is str:
        return lambda owner: getattr(owner, key, _MISSING)
    if kind is False and _hashable(key):
        return lambda owner: owner.get(key, _MISSING) if type(owner) is dict else owner[key]
    return None


def global_names(space: Any) -> Any:
    """What the guard of a module's global names (:data:`GLOBAL_NAMES`) reads: the names
    ``space`` binds to a value a guard holds (:func:`guardable`: a setting, not a function, a
    class, an array or a notebook's capviz objects), but those starting with ``_`` (a
    notebook's ``_i3``, ``_3`` history grows with every cell)."""
    if type(space) is not dict:
        return _MISSING
    return tuple(sorted(k for k, v in list(space.items())
                        if type(k) is str and not k.startswith("_") and guardable(v)))


def _meta(owner: Any) -> Any:
    """What the guard of an array read only for its shape (:data:`METADATA`) reads."""
    return (owner.shape, owner.dtype.str) if type(owner) is np.ndarray else _MISSING


def _digest(owner: Any) -> Any:
    """What an array guard's last step (:data:`DIGEST`) reads."""
    return Digest(view_fingerprint(owner)) if type(owner) is np.ndarray else _MISSING


def _hashable(key: Any) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


def _reader(kind: Any, key: Any) -> Any:
    """The getter of one step as :meth:`PythonGuard.read` takes it."""
    if kind:
        return lambda owner: getattr(owner, key)
    return lambda owner: owner[key]


def check(guards: list[PythonGuard]) -> None:
    """Read every live guard's place; raise :class:`GuardError` for the first that holds
    another value than when the capture ran, or whose code was changed in place since
    (:mod:`capviz.core.code_guards`)."""
    if type(guards) is PythonGuards:
        code_guards.check(guards.codes)
        (plan, alone), sets = guards.plan(), guards.sets()
    else:
        (plan, alone), sets = _plan(guards), [g for g in guards if g.sets and
                                              g.anchor is not None]
    if not _verified(plan, alone):  # (a value differs: the first guard that does)
        _check_each(guards)
    for guard in sets:  # what the call assigns before it reads (self.model.train()): as it
        guard.write()    # does, once every check passed


def _verified(plan: list[tuple], alone: list[PythonGuard]) -> bool:
    """Whether every guard of ``plan`` and ``alone`` reads its value (by identity, else
    :func:`same`); ``False`` where one does not or a read fails (:func:`_check_each` says
    which)."""
    is_ = operator.is_
    try:
        for anchor, weak, ops, size in plan:
            owner = anchor() if weak else anchor
            if owner is None:  # freed: nothing can call the eager code on it
                continue
            held = [owner] * size
            for kind, getter, source, then in ops:
                now = getter(held[source])
                if kind is _STEP:
                    held[then] = now
                    continue
                if kind is _STEP_KEYS:
                    held[then[0]] = now
                    now, then = tuple(now), then[1]
                elif kind is _ONE:
                    if now is not then and not same(then, now):
                        return False
                    continue
                if len(now) != len(then) or (not all(map(is_, now, then)) and
                                             not all(map(same, then, now))):
                    return False
        for guard in alone:
            now = guard.read()
            if now is not guard.value and now is not _GONE and (
                    now is not _MISSING or (guard.value is not ABSENT and
                                            not guard.optional)):
                return False
    except Exception:  # (a place that holds nothing now, or whose read raises: read again
        return False   # one by one, where it raises or is named)
    return True


def _check_each(guards: list[PythonGuard]) -> None:
    """Read the live guards one by one, the shortest paths first (``self.training`` before
    ``self._modules['body'].training``: ``model.eval()`` changed both); raise for the first
    that differs."""
    for guard in sorted(guards, key=lambda guard: len(guard.steps)):
        if guard.anchor is None or guard.sets:
            continue
        now = guard.read()
        if now is guard.value or now is _GONE or (now is _MISSING and (
                guard.value is ABSENT or guard.optional)):
            continue
        if now is _MISSING or not same(guard.value, now):
            raise guard_error(guard, now)


BLOCK = "the with block at "
"""How a guard of the scope form names what was captured (``the with block at nb.py:12``)."""


def guard_error(guard: PythonGuard, now: Any) -> GuardError:
    """The refusal of a replay after the user changed the value at ``guard``'s place."""
    where = format_source(guard.source) or "its line not found"
    what = "holds nothing" if now is _MISSING else f"is {shown(now)}"
    if guard.value is ABSENT:
        what = f"holds {shown(now)}"
    block = guard.fn.startswith(BLOCK)  # (the scope form: trace/guards_block.py)
    if guard.steps[-1:] == (DIGEST,):
        return _array_error(guard, now, block)
    if guard.steps[-2:] == NAMES and now is not _MISSING:
        return _names_error(guard, now, block)
    if guard.steps[-1:] == (GLOBAL_NAMES,) and now is not _MISSING:
        return _global_names_error(guard, now, block)
    if guard.steps[-1:] == ((None, "keys"),) and guard.label.endswith(".keys()") and \
            type(guard.value) is tuple and type(now) is tuple:
        return _keys_error(guard, now, block)
    if guard.left is not _MISSING and now is not _MISSING and same(guard.left, now):
        program = f"{guard.label} absent" if guard.value is ABSENT else shown(guard.value)
        err = GuardError(
            f"{guard.label} was {shown(guard.value)} when {guard.fn} was captured (read at "
            f"{where}), and {guard.fn} set it to {shown(now)}, which a replay does not do (it "
            f"runs no Python), so the graph is the program for {program}.\nFix: "
            f"{'run' if block else 'call'} {guard.fn} once before capturing it, so that the "
            "capture starts from the value it leaves")
        err.recorded, err.got, err.place, err.source = guard.value, now, guard.label, \
            guard.source
        return err
    err = GuardError(
        f"{guard.label} was {shown(guard.value)} when {guard.fn} was captured (read at "
        f"{where}) and {what} now, so the graph computes what the code did with the old "
        f"value.\nFix: capture {guard.fn} again after changing {guard.label} (a graph per "
        "value: keep one for each)" + ("" if block or guard.label.startswith("type(") else
                                       ", or pass it to the function as an argument (an "
                                       "input the graph reads)"))
    err.recorded = guard.value
    err.got = None if now is _MISSING else now
    err.place = guard.label
    err.source = guard.source
    return err


def _names_error(guard: PythonGuard, now: Any, block: bool) -> GuardError:
    """The refusal of a replay after the user added or deleted an attribute of an object
    whose attributes the code reads by names it builds at run time."""
    where = format_source(guard.source) or "its line not found"
    owner = guard.label[:-len(".__dict__.keys()")]
    added, gone = _changes(guard.value, now)
    what = ", ".join([f"{owner}.{n} added" for n in added] +
                     [f"{owner}.{n} deleted" for n in gone]) or f"{owner}'s attributes reordered"
    return _refusal(guard, now, (
        f"{what} since {guard.fn} was captured, whose code reads attributes by names it builds "
        f"at run time (getattr(obj, f\"l{{i}}\"), vars(obj); read at {where}), so the graph is the "
        f"program for the attributes {owner} had then.\nFix: capture {guard.fn} again after "
        f"changing the attributes of {owner} (a graph per set of attributes: keep one for each)"))


def _keys_error(guard: PythonGuard, now: tuple, block: bool) -> GuardError:
    """The refusal of a replay after the user added or deleted a key of a dict the code reads
    (``self.stats["acc"] = 0.0`` between calls: review 12, finding 14)."""
    where = format_source(guard.source) or "its line not found"
    owner = guard.label[:-len(".keys()")]
    added, gone = _changes(guard.value, now)
    what = ", ".join([f"{owner}[{k!r}] added" for k in added] +
                     [f"{owner}[{k!r}] deleted" for k in gone]) or f"{owner}'s keys reordered"
    return _refusal(guard, now, (
        f"{what} since {guard.fn} was captured, whose code reads {owner} (read at {where}), so "
        f"the graph is the program for the keys {owner} had then.\nFix: "
        f"capture {guard.fn} again after changing the keys of {owner} "
        "(a graph per set of keys: keep one for each)"))


def _global_names_error(guard: PythonGuard, now: Any, block: bool) -> GuardError:
    """The refusal of a replay after the user added or deleted a global setting of a module
    whose globals the code reads by names it builds at run time (``globals()[f"CFG{i}"]``)."""
    where = format_source(guard.source) or "its line not found"
    added, gone = _changes(guard.value, now)
    what = " and ".join(part for part in (
        ", ".join(added) + (" added" if added else ""),
        ", ".join(gone) + (" deleted" if gone else "")) if part.strip())
    return _refusal(guard, now, (
        f"global {what} since {guard.fn} was captured, whose code reads globals by names it "
        f"builds at run time (read at {where}), so the graph is the program for the globals "
        f"there were then.\nFix: capture {guard.fn} again after "
        f"changing the globals (a graph per set of globals: keep one for each)"))


def _changes(recorded: Any, now: Any) -> tuple[list, list]:
    """The names (or keys) ``now`` holds that ``recorded`` did not, and those it lost."""
    return [n for n in now if n not in recorded], [n for n in recorded if n not in now]


def _refusal(guard: PythonGuard, now: Any, message: str) -> GuardError:
    """The :class:`GuardError` of ``guard``, whose place holds ``now``."""
    err = GuardError(message)
    err.recorded, err.got, err.place, err.source = guard.value, now, guard.label, guard.source
    return err


def _array_error(guard: PythonGuard, now: Any, block: bool) -> GuardError:
    """The refusal of a replay after the user changed (or rebound) an array the capture's NumPy
    read outside the graph."""
    where = format_source(guard.source) or "its line not found"
    what = f"array {guard.label} holds other values than" if isinstance(now, Digest) else \
        f"{guard.label} holds no array now, and held one"
    fix = f"capture {guard.fn} again after changing {guard.label}" if block else (
        f"call graph.changed() to capture {guard.fn} again from the live objects, or pass "
        f"{guard.label} to the function as an argument (an input the graph reads)")
    err = GuardError(
        f"{what} when {guard.fn} was captured, and the graph holds values NumPy computed from "
        f"it outside the graph (read at {where}: np.linalg.norm, .mean(), float() of it are "
        f"computed by the capture, not by each replay).\nFix: {fix}")
    err.recorded, err.got, err.place, err.source = guard.value, now, guard.label, guard.source
    return err


def listing(guards: list[PythonGuard]) -> list[str]:
    """``str(graph)``'s lines of the guards: ``guard self.training == True  # read at
    model.py:12 in forward`` (the file's name, as the listing shows a node's)."""
    lines = []
    for guard in guards:
        source = guard.source
        where = "its line not found" if source is None else \
            f"{os.path.basename(source[0])}:{source[1]} in {source[2]}"
        if guard.sets:
            lines.append(f"set {guard.label} = {shown(guard.value)}  # as {guard.fn} does "
                         f"before reading it, at {where}")
        else:
            lines.append(f"guard {guard.label} == {shown(guard.value)}  # read at {where}")
    return lines


def changed_sources(guards: list[PythonGuard]) -> list[PythonGuard]:
    """The array guards (:class:`Digest`) among ``guards`` whose array holds other values now
    or is no longer there (for ``graph.changed()``: the derived constants are stale)."""
    stale = []
    for guard in guards:
        if guard.anchor is None and repr(guard.value) == _DIGEST_TEXT:  # (a loaded graph's:
            stale.append(guard)  # its array cannot be read, ruling 38 10:51: refused)
        elif type(guard.value) is Digest and guard.anchor is not None:
            now = guard.read()
            if now is not _GONE and not same(guard.value, now):
                stale.append(guard)
    return stale


def stale_source_error(guard: PythonGuard) -> GuardError:
    """``graph.changed()``'s refusal where it cannot capture again (the scope form, a graph
    made by hand): the array ``guard`` reads changed, and values derived from it are baked."""
    where = format_source(guard.source) or "its line not found"
    err = GuardError(
        f"graph.changed() cannot take the new values of array {guard.label}: the graph holds "
        f"values NumPy computed from it outside the graph when {guard.fn} was captured (read "
        f"at {where}), and it holds no function to capture again.\nFix: capture {guard.fn} "
        f"again after changing {guard.label}")
    err.recorded, err.got, err.place, err.source = guard.value, None, guard.label, guard.source
    return err
