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

import builtins
import collections
import dis
import types
from collections.abc import Callable
from typing import Any

from capviz.core.python_guards import guardable
from capviz.trace import guard_reach
from capviz.trace.places import Place, function_of

_CALLS = frozenset(("CALL", "CALL_FUNCTION", "CALL_METHOD", "CALL_FUNCTION_KW",
                    "CALL_FUNCTION_EX"))
_PREPARE = frozenset(("PRECALL", "KW_NAMES", "PUSH_NULL", "NOP", "RESUME", "CACHE",
                      "EXTENDED_ARG", "COPY_FREE_VARS", "MAKE_CELL"))
_LOADS = frozenset(("LOAD_FAST", "LOAD_DEREF", "LOAD_CONST", "LOAD_GLOBAL"))


class Assigned:
    """``exact`` (labels assigned a value directly: ``self.phase``) and ``under`` (``(owner
    label, name)``: the name assigned on the object at the owner's label and the objects inside
    it, by a method of it)."""

    __slots__ = ("anew", "exact", "under")

    def __init__(self) -> None:
        self.exact: set[str] = set()
        self.under: set[tuple[str, str]] = set()
        self.anew: set[str] = set()  # (labels every call stores a value capviz cannot read
        #                               the making of: set again only where it is a new list
        #                               or dict nothing else holds, self.c = self._fresh())

    def __contains__(self, label: str) -> bool:
        if label in self.exact:
            return True
        for owner, name in self.under:
            if (label == f"{owner}.{name}" or label.startswith((f"{owner}.", f"{owner}["))) \
                    and label.endswith(f".{name}"):
                return True
        return False

    def __bool__(self) -> bool:
        return bool(self.exact or self.under or self.anew)


_LISTED: dict[int, tuple[types.CodeType, tuple[dis.Instruction, ...]]] = {}  # id ->
#   (code, its listing): the code held, so that its id stays its own
_MAX_LISTED = 1024


def _instructions(code: types.CodeType) -> tuple[dis.Instruction, ...]:
    """``code``'s instructions but the preparing ones (:data:`_PREPARE`), listed once per code
    object: ``dis`` builds each instruction anew, a tenth of a millisecond for a ten-line step
    at every capture (a tuple of named tuples: no caller can change it)."""
    got = _LISTED.get(id(code))
    if got is None or got[0] is not code:
        if len(_LISTED) >= _MAX_LISTED:  # (code made on the fly: exec, lambdas in a loop)
            _LISTED.clear()
        got = _LISTED[id(code)] = (code, tuple(ins for ins in dis.get_instructions(code)
                                               if ins.opname not in _PREPARE))
    return got[1]


def assigned(fn: Callable, places: list[Place]) -> Assigned:
    """What ``fn`` assigns before it reads (see the module docstring)."""
    found = Assigned()
    function = function_of(fn)[1]
    code = getattr(function, "__code__", None)
    if code is None:
        return found
    first = _first_name(fn) or ""  # (a method's object: self)
    inputs = frozenset(code.co_varnames[1 if first else 0:code.co_argcount])  # (the captured
    #                                      arguments: their shapes and dtypes are the graph's)
    held = {p.label: p.value for p in places if p.kind not in ("keys", "items")}
    space = getattr(function, "__globals__", None) or {}
    stack: list = []  # what the straight run pushed: a chain ["self", "base"], _VALUE, _RETURNED
    method: tuple[str, Any] | None = None  # (owner label, method) of a pending call
    stored: set[str] = set()
    read: set[str] = set()  # (the names read: self.on = not self.on reads what it stores)
    instructions = _instructions(code)
    done = len(instructions)
    for at, ins in enumerate(instructions):
        op = ins.opname
        top = stack[-1] if stack else None
        if (op == "LOAD_FAST" and ins.argval == first) or _held_object(fn, ins):
            stack.append([ins.argval])  # (self, or an object a global or closure cell holds)
            continue
        if op == "LOAD_FAST" and ins.argval in inputs:  # (x.shape: the graph's, fixed)
            stack.append([ins.argval])
            continue
        if op in ("LOAD_ATTR", "LOAD_METHOD") and type(top) is list and top[0] in inputs:
            if op == "LOAD_ATTR" and len(top) == 1 and ins.argval in _SHAPES:
                top.append(ins.argval)
                continue
            done = at
            break
        if op == "LOAD_GLOBAL" and ins.arg & 1 and ins.argval == "len" and \
                "len" not in getattr(function, "__globals__", {}):
            stack.append(_LEN)
            continue
        if op in _CALLS and ins.arg == 1 and len(stack) >= 2 and stack[-2] is _LEN and \
                type(top) is list and len(top) == 1 and top[0] in inputs:
            del stack[-2:]
            stack.append(_VALUE)  # (len(x): its first dimension, the graph's)
            continue
        if op in ("LOAD_ATTR", "LOAD_METHOD") and type(top) is list:
            name = ins.argval
            if name in stored:
                done = at
                break  # (a read of what was just assigned: the rest is not straight)
            owner = ".".join(top)
            value = held.get(owner) if owner != first else _owner(fn)
            attribute = _method(value, name)
            if attribute is not None:
                method = (owner, attribute)
                stack.pop()
                continue
            top.append(name)
            read.add(name)
            continue
        if op in _CALLS and _built(ins, stack, space,  # (dict(), defaultdict(list))
                                   lambda v: _value(v, first, held)):
            continue
        if op in _CALLS:
            if method is None or ins.arg:
                done = at
                break  # (a call of anything else: it may read)
            owner, attribute = method
            names = _assigns(attribute)
            if not names:
                done = at
                break
            for name in names:
                found.under.add((owner, name))
                stored.add(name)
            method = None
            stack.append(_RETURNED)
            continue
        if op == "POP_TOP" and stack:
            stack.pop()
            continue
        if op == "LOAD_GLOBAL" and not ins.arg & 1 and ins.argval not in stored and \
                guardable(space.get(ins.argval, _UNSET)):  # (a global a guard holds: SCALE)
            stack.append(_VALUE)
            continue
        if _built(ins, stack, space, lambda v: _value(v, first, held)):  # (a constant, {},
            continue  # [x.shape[0], 2], (self.base, 3), dict(), ...)
        if op == "STORE_ATTR" and _owned(top, first, inputs) and len(stack) >= 2 and \
                ins.argval not in read and _value(stack[-2], first, held):
            found.exact.add(f"{top[0]}.{ins.argval}")  # (a constant, or computed from values
            stored.add(ins.argval)                    # the guards hold: self.base * 2.0)
            del stack[-2:]
            continue
        taken = _PURE.get(op, 0)
        if taken and len(stack) >= taken and all(_value(v, first, held)
                                                  for v in stack[-taken:]):
            del stack[-taken:]
            stack.append(_VALUE)
            continue
        done = at
        break  # (a branch, a read of anything else: the straight run ends)
    if not getattr(code, "co_exceptiontable", b""):  # (a try: a handler may skip a store)
        _stored_later(fn, places, instructions[done:], first, found)
    return found


_VALUE, _RETURNED, _LEN, _UNSET = "value", "returned", "len", object()
_SHAPES = frozenset(("shape", "ndim", "dtype", "size"))
"""What a straight run may read of a captured argument: the graph fixes them (a replay with
another shape or dtype is refused), so a value computed from them is the same each replay
(``self.n = x.shape[0]``, ``len(x)``: review 10, finding 7)."""
_PURE = {"BINARY_OP": 2, "BINARY_SUBSCR": 2, "COMPARE_OP": 2, "UNARY_NEGATIVE": 1,
         "UNARY_NOT": 1, "UNARY_INVERT": 1}
"""The operations of a straight run on the values it loaded (how many they take; a tuple, its
argument), which compute a Python value from them and read nothing else."""
_MAKERS = (dict, list, set, tuple, frozenset, collections.OrderedDict, collections.defaultdict,
           collections.deque, collections.Counter)
"""The types whose call with values makes a new container of them (``dict()``,
``defaultdict(list)``): a value each call makes anew."""
_MAKER, _COLLECTIONS = "maker", "collections"


def _built(ins: dis.Instruction, stack: list, space: dict,
           valued: Callable[[Any], bool] = lambda v: v is _VALUE) -> bool:
    """Apply ``ins`` to ``stack`` where it makes a value of the values on it only (a constant, a
    list, tuple, set or dict built of them, a call of one of :data:`_MAKERS`); ``False``
    (``stack`` untouched) where it does not."""
    op, arg = ins.opname, ins.arg or 0
    if op == "LOAD_CONST":
        stack.append(_VALUE)
        return True
    if op == "LOAD_GLOBAL":
        value = space.get(ins.argval, vars(builtins).get(ins.argval, _UNSET))
        if value is collections:
            stack.append(_COLLECTIONS)  # (collections.defaultdict(list))
            return True
        if not any(value is maker for maker in _MAKERS):
            return False
        stack.append(_MAKER if arg & 1 else _VALUE)  # (list as defaultdict's factory)
        return True
    if op in ("LOAD_ATTR", "LOAD_METHOD") and stack and stack[-1] is _COLLECTIONS:
        if not any(getattr(collections, ins.argval, None) is m for m in _MAKERS):
            return False
        stack[-1] = _MAKER
        return True
    if op in _CALLS:
        if len(stack) < arg + 1 or stack[-arg - 1] is not _MAKER or \
                not all(valued(v) for v in stack[len(stack) - arg:]):
            return False
        del stack[-arg - 1:]
        stack.append(_VALUE)
        return True
    taken = {"BUILD_LIST": arg, "BUILD_SET": arg, "BUILD_TUPLE": arg, "BUILD_MAP": 2 * arg,
             "BUILD_CONST_KEY_MAP": arg + 1, "LIST_EXTEND": 2, "SET_UPDATE": 2,
             "DICT_UPDATE": 2, "LIST_TO_TUPLE": 1}.get(op)
    if taken is None or len(stack) < taken or \
            not all(valued(v) for v in stack[len(stack) - taken:]):
        return False
    del stack[len(stack) - taken:]
    stack.append(_VALUE)
    return True


_ENDS = ("JUMP", "FOR_ITER", "RETURN", "RAISE", "YIELD", "SEND", "SETUP", "BEFORE_WITH")
"""The instructions past which a store may not run on every call."""


def _value(item: Any, first: str, held: dict) -> bool:
    """Whether ``item`` of the straight run's stack is a Python value a guard holds: a constant
    or a value computed from ones, or a chain of attributes of the first argument to a place
    the walk noted holding a Python number, str, ``None`` or a tuple of them."""
    if item is _VALUE:
        return True
    if type(item) is not list or len(item) < 2:
        return False
    if len(item) == 2 and item[1] in _SHAPES and f"{item[0]}.{item[1]}" not in held:
        return True  # (an argument's shape, ndim, dtype or size)
    label = ".".join(item)
    return label in held and guardable(held[label])


def _stored_later(fn: Callable, places: list[Place], rest: tuple, first: str,
                  found: Assigned) -> None:
    """Add to ``found.exact`` each constant ``fn`` stores on its first argument after its
    straight run and before any branch, loop or return (``y = self.f(x); self.called = True``:
    run by every call, review 9, finding 22), where no code ``fn`` reaches reads that name
    (so no value of it is read before the store)."""
    candidates = []
    space = getattr(function_of(fn)[1], "__globals__", None) or {}
    stack: list = []  # (constants and what is built of them only: anything else empties it)
    for ins in rest:
        if any(word in ins.opname for word in _ENDS):
            break
        if (ins.opname == "LOAD_FAST" and ins.argval == first) or _held_object(fn, ins):
            stack.append([ins.argval])
        elif ins.opname == "STORE_ATTR" and stack and type(stack[-1]) is list and \
                len(stack[-1]) == 1:  # (a constant; else any value: self.c = self._fresh())
            made = len(stack) >= 2 and stack[-2] is _VALUE
            candidates.append((stack[-1][0], ins.argval, made, ins.offset))
            stack.clear()
        elif not _built(ins, stack, space):
            stack.clear()
    if not candidates:
        return
    reach = guard_reach.reached(fn, places)
    if reach.dynamic or reach.open_classes:
        return
    own = getattr(function_of(fn)[1], "__code__", None)
    first_read: dict[str, int] = {}  # (where fn's own code first reads each name)
    loaded: set[str] = set()  # (the names any other code it reaches reads, or code in fn's)
    for function in reach.functions:
        todo = [function.__code__]
        while todo:
            code = todo.pop()
            for ins in dis.get_instructions(code):
                if ins.opname in ("LOAD_ATTR", "LOAD_METHOD", "LOAD_NAME", "DELETE_ATTR"):
                    if code is own:
                        first_read.setdefault(ins.argval, ins.offset)
                    else:
                        loaded.add(ins.argval)
            todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    for owner, name, made, at in candidates:  # (read by fn only after the store: the value
        if name not in loaded and name not in reach.strings and \
                first_read.get(name, at + 1) > at:  # it reads is the one the call stored)
            (found.exact if made else found.anew).add(f"{owner}.{name}")


def _held_object(fn: Callable, ins: dis.Instruction) -> bool:
    """Whether ``ins`` loads a user's object a global or a closure cell of ``fn`` holds (``o``
    of ``o.c = {}``: its attributes are places as ``self``'s are)."""
    if ins.opname == "LOAD_DEREF":
        function = function_of(fn)[1]
        code, cells = getattr(function, "__code__", None), getattr(function, "__closure__", None)
        if code is None or not cells or ins.argval not in code.co_freevars:
            return False
        try:
            value = cells[code.co_freevars.index(ins.argval)].cell_contents
        except ValueError:
            return False
    elif ins.opname == "LOAD_GLOBAL" and not ins.arg & 1:
        value = (getattr(function_of(fn)[1], "__globals__", None) or {}).get(ins.argval, _UNSET)
    else:
        return False
    return hasattr(value, "__dict__") and not isinstance(
        value, (type, types.ModuleType, types.FunctionType, types.MethodType))


def _owned(top: Any, first: str, inputs: frozenset) -> bool:
    """Whether ``top`` is a one-name chain whose attributes are places: ``self``, or an object
    a global or closure cell holds (not a captured argument)."""
    return type(top) is list and len(top) == 1 and top[0] not in inputs


def _first_name(fn: Callable) -> str | None:
    """The name of the first argument of the function under bound method ``fn`` (its object's),
    ``None`` where ``fn`` is no bound method."""
    owner, function = function_of(fn)
    code = getattr(function, "__code__", None)
    if owner is None or code is None or not code.co_varnames:
        return None
    return code.co_varnames[0]


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
