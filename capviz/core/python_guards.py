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

import enum
import functools
import math
import operator
import os
import types
import weakref
from typing import Any

import numpy as np

from capviz.core.errors import GuardError
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

    __slots__ = ("anchor", "fn", "label", "left", "sets", "source", "steps", "value")

    def __init__(self, label: str, value: Any, anchor: Any, steps: tuple, source: Any,
                 fn: str) -> None:
        self.label, self.value, self.steps, self.source, self.fn = label, value, steps, \
            source, fn
        self.anchor = anchor  # a weak reference, a module's globals, a class, a cell, None
        self.sets = False  # a value the call assigns before it reads anything: each replay
        #                    assigns it (capviz/trace/assigned.py), nothing is checked
        self.left: Any = _MISSING  # the value the captured call itself left there, where it
        #                            set another (self.phase = "train"): its message says so

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
                if is_attribute is None:  # a container's keys or length
                    owner = tuple(owner) if key == "keys" else len(owner)
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
            if is_attribute:
                setattr(owner, key, self.value)
            else:
                owner[key] = self.value
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
    """A graph's guards (a list of :class:`PythonGuard`) with the plan :func:`check` runs:
    the guards grouped by the object their paths start from, each group read by one C-level
    getter (``operator.attrgetter("cfg.c0", "cfg.c1", ...)``, ``itemgetter`` for a module's
    globals) and compared by identity with the values captured (a value the user did not
    touch is the same object); only where one differs are its guards compared one by one."""

    __slots__ = ("_plan", "_sets")

    def __init__(self, guards: Any = ()) -> None:
        super().__init__(guards)
        self._plan: list | None = None
        self._sets: list | None = None

    def plan(self) -> list:
        if self._plan is None:
            self._plan = _plan(self)
            self._sets = [g for g in self if g.sets and g.anchor is not None]
        return self._plan

    def sets(self) -> list:
        self.plan()
        return self._sets


def _plan(guards: list[PythonGuard]) -> list[tuple]:
    """``(anchor, getter, values, members)`` per group of live guards (see
    :class:`PythonGuards`); a guard whose path is neither attributes only nor one item of a
    dict is a group of its own, read by :meth:`PythonGuard.read`."""
    groups: dict[tuple, tuple] = {}
    alone = []
    for guard in guards:
        if guard.anchor is None or guard.sets:
            continue
        steps = guard.steps
        if guard.value is ABSENT:  # (its getter raises: read by itself)
            alone.append((guard.anchor, None, (guard.value,), [guard]))
            continue
        if steps and all(is_attribute is True and type(key) is str and key.isidentifier()
                         for is_attribute, key in steps):  # (grouped by the owner's path)
            key, name = (id(guard.anchor), ".".join(k for _, k in steps[:-1])), steps[-1][1]
        elif len(steps) == 1 and steps[0][0] is False and type(guard.anchor) is dict:
            key, name = (id(guard.anchor), None), steps[0][1]
        else:
            alone.append((guard.anchor, None, (guard.value,), [guard]))
            continue
        group = groups.setdefault(key, (guard.anchor, [], [], []))
        group[1].append(name)
        group[2].append(guard.value)
        group[3].append(guard)
    plan = []
    for (_, owner), (anchor, names, values, members) in groups.items():
        getter = (operator.itemgetter if owner is None else operator.attrgetter)(*names)
        plan.append((anchor, _getter(getter, len(names) == 1, owner), tuple(values), members))
    return plan + alone


def _getter(getter: Any, one: bool, owner: str | None) -> Any:
    """``getter`` applied to the object at path ``owner`` from the anchor (``""``, ``None``:
    the anchor itself), its value made a tuple where it reads ``one`` name."""
    if owner:
        follow = operator.attrgetter(owner)
        if one:
            return lambda anchor: (getter(follow(anchor)),)
        return lambda anchor: getter(follow(anchor))
    if one:
        return lambda anchor: (getter(anchor),)
    return getter


def check(guards: list[PythonGuard]) -> None:
    """Read every live guard's place; raise :class:`GuardError` for the first that holds
    another value than when the capture ran."""
    if type(guards) is PythonGuards:
        plan, sets = guards.plan(), guards.sets()
    else:
        plan, sets = _plan(guards), [g for g in guards if g.sets and g.anchor is not None]
    for anchor, getter, values, members in plan:
        if getter is not None:
            owner = anchor() if type(anchor) is weakref.ref else anchor
            if owner is None:  # freed: nothing can call the eager code on it
                continue
            try:
                now = getter(owner)
            except Exception:  # (a place that holds nothing now: found below)
                now = None
            if now is not None and all(map(operator.is_, now, values)):
                continue
        for guard in members:  # one by one: the first that differs
            now = guard.read()
            if now is guard.value or now is _GONE or (now is _MISSING and guard.value is
                                                      ABSENT):
                continue
            if now is _MISSING or not same(guard.value, now):
                raise guard_error(guard, now)
    for guard in sets:  # what the call assigns before it reads (self.model.train()): as it
        guard.write()    # does, once every check passed


def guard_error(guard: PythonGuard, now: Any) -> GuardError:
    """The refusal of a replay after the user changed the value at ``guard``'s place."""
    where = format_source(guard.source) or "its line not found"
    what = "holds nothing" if now is _MISSING else f"is {shown(now)}"
    if guard.value is ABSENT:
        what = f"holds {shown(now)}"
    if guard.left is not _MISSING and now is not _MISSING and same(guard.left, now):
        err = GuardError(
            f"{guard.label} was {shown(guard.value)} when {guard.fn} was captured (read at "
            f"{where}), and {guard.fn} set it to {shown(now)}, which a replay does not do (it "
            f"runs no Python), so the graph is the program for {shown(guard.value)}.\nFix: "
            f"call {guard.fn} once before capturing it, so that the capture starts from the "
            "value it leaves")
        err.recorded, err.got, err.place, err.source = guard.value, now, guard.label, \
            guard.source
        return err
    err = GuardError(
        f"{guard.label} was {shown(guard.value)} when {guard.fn} was captured (read at "
        f"{where}) and {what} now, so the graph computes what the code did with the old "
        f"value.\nFix: capture {guard.fn} again after changing {guard.label} (a graph per "
        "value: keep one for each), or pass it to the function as an argument (an input "
        "the graph reads)")
    err.recorded = guard.value
    err.got = None if now is _MISSING else now
    err.place = guard.label
    err.source = guard.source
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
