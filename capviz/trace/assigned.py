"""The Python values a captured function assigns before it reads anything: no guard holds
them; each replay assigns them as the call does (review 9, finding 17).

``def train_step(self, x): self.model.train(); return self.model(x) * 2.0`` sets
``self.model.training = True`` (and its children's) before any line reads it, so the value the
place held before the call does not matter: a guard on it refused every replay after an eager
``model.eval()`` between steps, where the call computes what the graph does. Dynamo guards only
what a frame reads before it writes; capviz sees no read, so it reads the order from ``fn``'s
bytecode: the straight run of its first statements, before any branch, any read of such a
name, and any call but one to a method that assigns names of its object without reading them
first (``train(self): self.training = True``, found in the method's own bytecode). What that
run assigns, a constant to ``self.phase`` or a method's names on its object (``self.model`` and
the objects inside it: ``train`` recursing into children assigns the same name there), is
:func:`assigned`'s. A replay writes the value the capture left there, as the call would
(:attr:`capviz.core.python_guards.PythonGuard.sets`), so the user's object ends as after a call.
"""

from __future__ import annotations

import dis
import types
from collections.abc import Callable
from typing import Any

from capviz.trace.places import Place, function_of

_CALLS = frozenset(("CALL", "CALL_FUNCTION", "CALL_METHOD", "CALL_FUNCTION_KW",
                    "CALL_FUNCTION_EX"))
_PREPARE = frozenset(("PRECALL", "KW_NAMES", "PUSH_NULL", "NOP", "RESUME", "CACHE",
                      "EXTENDED_ARG"))
_LOADS = frozenset(("LOAD_FAST", "LOAD_DEREF", "LOAD_CONST", "LOAD_GLOBAL"))


class Assigned:
    """``exact`` (labels assigned a value directly: ``self.phase``) and ``under`` (``(owner
    label, name)``: the name assigned on the object at the owner's label and the objects inside
    it, by a method of it)."""

    __slots__ = ("exact", "under")

    def __init__(self) -> None:
        self.exact: set[str] = set()
        self.under: set[tuple[str, str]] = set()

    def __contains__(self, label: str) -> bool:
        if label in self.exact:
            return True
        for owner, name in self.under:
            if (label == f"{owner}.{name}" or label.startswith((f"{owner}.", f"{owner}["))) \
                    and label.endswith(f".{name}"):
                return True
        return False

    def __bool__(self) -> bool:
        return bool(self.exact or self.under)


def assigned(fn: Callable, places: list[Place]) -> Assigned:
    """What ``fn`` assigns before it reads (see the module docstring)."""
    found = Assigned()
    function = function_of(fn)[1]
    code = getattr(function, "__code__", None)
    if code is None:
        return found
    first = code.co_varnames[0] if code.co_varnames else ""
    held = {p.label: p.value for p in places if p.kind not in ("keys", "items")}
    chain: list[str] | None = None  # the attribute path on the stack: ["self", "model"]
    method: tuple[str, Any] | None = None  # (owner label, method) of a pending call
    stored: set[str] = set()
    for ins in dis.get_instructions(code):
        op = ins.opname
        if op in _PREPARE:
            continue
        if op == "LOAD_FAST" and ins.argval == first:
            chain = [first]
            continue
        if op in ("LOAD_ATTR", "LOAD_METHOD") and chain is not None:
            name = ins.argval
            if name in stored:
                break  # (a read of what was just assigned: the rest is not straight)
            owner = ".".join(chain)
            value = held.get(owner) if owner != first else _owner(fn)
            attribute = _method(value, name)
            if attribute is not None:
                method = (owner, attribute)
                chain = None
                continue
            chain.append(name)
            continue
        if op in _CALLS:
            if method is None or ins.arg:
                break  # (a call of anything else: it may read)
            owner, attribute = method
            names = _assigns(attribute)
            if not names:
                break
            for name in names:
                found.under.add((owner, name))
                stored.add(name)
            method = None
            continue
        if op == "POP_TOP":
            chain = None
            continue
        if op == "LOAD_CONST":
            continue
        if op == "STORE_ATTR" and chain == [first]:
            found.exact.add(f"{first}.{ins.argval}")
            stored.add(ins.argval)
            chain = None
            continue
        break  # (a branch, a read of anything else: the straight run ends)
    return found


def _owner(fn: Callable) -> Any:
    owner, _function = function_of(fn)
    return owner


def _method(value: Any, name: str) -> types.FunctionType | None:
    """The user's function ``name`` of ``value``'s class (``None``: no such method)."""
    if value is None:
        return None
    for klass in type(value).__mro__:
        attribute = vars(klass).get(name)
        if attribute is not None:
            return attribute if isinstance(attribute, types.FunctionType) else None
    return None


def _assigns(function: types.FunctionType) -> set[str]:
    """The names ``function`` assigns on its first argument with a constant or another
    argument before reading them (``self.training = mode``), where it reads none first; a
    loop over its children calling itself is allowed (``for m in self._modules.values():
    m.train(mode)``)."""
    code = function.__code__
    first = code.co_varnames[0] if code.co_varnames else ""
    names: set[str] = set()
    loaded: set[str] = set()
    previous: list[dis.Instruction] = []
    for ins in dis.get_instructions(code):
        if ins.opname == "STORE_ATTR" and ins.argval in loaded:
            return set()  # (read before it is assigned: self.t = self.t + 1)
        if ins.opname in ("LOAD_ATTR", "LOAD_METHOD"):
            loaded.add(ins.argval)
        if ins.opname == "STORE_ATTR":
            if len(previous) >= 2 and previous[-1].opname == "LOAD_FAST" and \
                    previous[-1].argval == first and previous[-2].opname in _LOADS and \
                    previous[-2].argval != first:
                names.add(ins.argval)
            else:
                return set()
        elif ins.opname == "LOAD_ATTR" and ins.argval in names:
            return set()
        if ins.opname not in _PREPARE:
            previous.append(ins)
    return names
