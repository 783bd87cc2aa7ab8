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

import enum
import inspect
import re
import types
import weakref
from collections.abc import Callable
from typing import Any

from capviz.core.python_guards import PythonGuard, PythonGuards, guardable
from capviz.trace import code_reach
from capviz.trace.fn_lines import body, label_pattern, line_at, source_lines
from capviz.trace.places import Place, function_of

MOST_GUARDS = 4096
"""The most guards one capture records (past it: the first ones, in the walk's order)."""


def collect(fn: Callable, places: list[Place], graph: Any) -> PythonGuards:
    """The guards of a complete capture of ``fn`` (``places``: :func:`capviz.trace.places.note`
    of ``fn`` when the capture started; ``graph``: the capture's graph, whose logged places
    are left out)."""
    if not places:
        return PythonGuards()
    reach = code_reach.reach(fn, places)
    logged = _logged_labels(graph)
    name = getattr(function_of(fn)[1], "__name__", None) or "the function"
    lines = _Lines(fn)
    guards: list[PythonGuard] = []
    seen: set[str] = set()
    for place in places:
        if len(guards) >= MOST_GUARDS:
            break
        if place.kind == "keys":  # a walked object: what it reads from its class
            guards += [g for g in _class_reads(place, reach, seen, lines, name)
                       if not _written(g.label, logged)]
            continue
        if place.kind == "items" or place.label in seen or not guardable(place.value):
            continue
        if _written(place.label, logged) or \
                isinstance(place.holder, enum.Enum):  # (an enum member's own name and value)
            continue
        if not _named(place, reach):
            continue
        where = _path(place)
        if where is None:
            continue
        seen.add(place.label)
        guards.append(PythonGuard(place.label, place.value, where[0], where[1],
                                  lines.reading(place.label, place.holder, place.key), name))
    return PythonGuards(guards[:MOST_GUARDS])


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


def _named(place: Place, reach: code_reach.Reach) -> bool:
    """Whether code ``fn`` reaches can read ``place``: its path's names are all used there,
    or it lies inside an object whose class's code is not read (not the user's)."""
    if reach.dynamic or place.label.startswith("type("):  # (named by the code: places.py)
        return True
    holder = place.holder
    if place.kind in ("attribute", "slot") and not isinstance(holder, type) and \
            not code_reach._users(type(holder)):
        return True
    names = [step.strip("<>") for step in code_reach._names_of(place.label)]
    return all(step in reach.names for step in names)


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


def _class_reads(place: Place, reach: code_reach.Reach, seen: set[str], lines: _Lines,
                 name: str) -> list[PythonGuard]:
    """The guards of the attributes walked object ``place.holder`` reads from its class
    (``self.p`` where ``p = 0.5`` is the class's), read through the object (an attribute the
    user sets on it later shadows the class's: the guard sees that too)."""
    obj = place.holder
    kind = type(obj)
    if kind.__module__ in ("builtins", "numpy") or isinstance(obj, (types.ModuleType,
                                                                     enum.Enum)):
        return []
    if place.path is None:
        where = (_weakly(obj), ())
    else:
        where = place.path
        if where[1] and where[1][-1] == (True, ""):
            where = (where[0], ())
    own = place.value  # the names of its attributes
    users = code_reach._users(kind)
    found = []
    for klass in kind.__mro__:
        if klass is object:
            break
        for key, value in list(vars(klass).items()):
            if key.startswith("__") or key in own or not guardable(value):
                continue
            label = f"{place.label}.{key}"
            if label in seen or (users and not reach.dynamic and key not in reach.names):
                continue
            seen.add(label)
            found.append(PythonGuard(label, value, where[0], (*where[1], (True, key)),
                                     lines.reading(label, obj, key), name))
    return found


class _Lines:
    """The lines of ``fn`` and of its objects' classes, read once, searched for the line that
    reads a place."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        found = source_lines(fn)
        self.own = None if found is None else (found[0], found[2], body(found[1]))
        self.classes: dict[type, list] = {}

    def reading(self, label: str, holder: Any, key: Any) -> Any:
        """``(file, line, function)`` of the first line that names ``label`` in ``fn``, else
        names attribute ``key`` in a method of ``holder``'s class, else ``fn``'s ``def``."""
        if self.own is not None:
            code, start, statements = self.own
            mention = re.compile(rf"(?<![\w.]){label_pattern(label)}(?![\w])")
            for offset, text in statements:
                if mention.search(text):
                    return line_at(code, start + offset)
        if type(key) is str and holder is not None and not isinstance(
                holder, (dict, list, types.ModuleType)):
            attribute = re.compile(rf"\.{re.escape(key)}(?![\w])")
            stored = re.compile(rf"^[\w.]*\.{re.escape(key)}\s*=(?!=)")  # (a write: not it)
            for code, start, statements in self._methods(
                    holder if isinstance(holder, type) else type(holder)):
                for offset, text in statements:
                    if attribute.search(text) and not stored.search(text):
                        return line_at(code, start + offset)
        if self.own is not None:
            code, start, _ = self.own
            return line_at(code, start)
        return None

    def _methods(self, kind: type) -> list:
        found = self.classes.get(kind)
        if found is None:
            found = self.classes[kind] = []
            if code_reach._users(kind):
                for function in code_reach._functions_of(kind):
                    try:
                        lines, start = inspect.getsourcelines(function)
                    except (OSError, TypeError):
                        continue
                    found.append((function.__code__, start, body(lines)))
                found.sort(key=lambda f: f[0].co_name == "__init__")  # (it sets, others read)
        return found
