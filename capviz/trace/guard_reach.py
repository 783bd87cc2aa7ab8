"""What the code a captured function reaches can read, for its guards on Python values
(:mod:`capviz.trace.guards_python`): the names it uses, the string constants ``getattr`` and
``hasattr`` read, and the module namespaces whose globals it reads.

:func:`capviz.trace.code_reach.reach` gives the names of the code ``fn`` reaches by name; the
guards need more of it, each a way a value is read with no name of ``fn``'s own: a helper
function's globals (``_helper(x)`` reading ``K``, in ``fn``'s module or another user module
it imports, ``gcfg2.scale(x)`` reading ``gcfg2.S``), a callable object's ``__call__``
(``self(x)``), a property's getter (``self.training`` returning ``self._t``), a user class's
``__getattr__`` (every attribute of its objects is read then). :func:`reached` walks the
functions (``fn``'s, the functions the walked places hold, the methods, properties and
``__call__``/``__getattr__`` of the walked objects' classes whose names the code uses, the
functions its namespaces hold under those names, transitively, up to
:data:`code_reach.MOST_FUNCTIONS`) and sums their names.
"""

from __future__ import annotations

import builtins
import dis
import functools
import sys
import types
from collections.abc import Callable
from typing import Any

from capviz.trace import code_reach
from capviz.trace.places import Place, function_of

GLOBALS = frozenset(("globals", "locals", "vars", "eval", "exec", "modules", "import_module",
                     "__import__"))
"""Names through which code reaches a global of its module by a name built at run time
(``globals()[k]``, ``getattr(sys.modules[__name__], k)``); ``getattr(self, f"layer{i}")``
reaches an attribute, not a global (hostile review 10, finding 1: every global of the module
was guarded, a warm-up loop's ``step`` refused each replay)."""

STRUNG = frozenset(("getattr", "hasattr", "attrgetter", "__dict__", "dir", "getattr_static"))
"""Names through which code reads an attribute named by a string (``getattr(self, "p", 0.5)``,
``operator.attrgetter("p")(self)``, ``self.__dict__.get("p")``, ``"p" in dir(self)``): its
string constants are names it may read, and find absent."""

SPECIAL = ("__call__", "__getattr__", "__getattribute__")
"""The methods a class's objects run with no name of theirs in the code that uses them."""


class Reached:
    """``names`` (every global, attribute and closure name the code uses), ``strings`` (its
    string constants that are identifiers: names ``getattr`` may read), ``dynamic`` (it reads
    names built at run time: ``getattr`` of a variable, ``globals()``, ``vars``...),
    ``globals`` (it reads globals by names built at run time: :data:`GLOBALS`), ``spaces``
    (``(prefix, namespace)`` of each module whose globals it reads: ``""`` for
    ``fn``'s own, ``"gcfg2."`` for another), ``open_classes`` (the user classes with a
    ``__getattr__`` or ``__getattribute__``: any attribute of their objects may be read)."""

    __slots__ = ("built", "defaulted", "dynamic", "functions", "global_loads", "globals",
                 "names", "open_classes", "spaces", "strings", "strung", "tried", "tried_globals")

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.defaulted: set[str] = set()  # the parameters of reached functions that hold a
        #   default (def f(x, cfg=CFG): cfg["scale"] reads an item of what the default holds)
        self.strings: set[str] = set()
        self.dynamic = False
        self.globals = False
        self.global_loads: set[str] = set()  # the names it loads as globals (not attributes)
        self.spaces: list[tuple[str, dict]] = []
        self.open_classes: set[type] = set()
        self.functions: list[types.FunctionType] = []  # every function read, in order
        self.tried: set[str] = set()  # the attribute names it may read where an
        #   AttributeError is caught (try: v = self.sl / except AttributeError: review 11, #6)
        self.tried_globals: set[str] = set()  # the globals it may read where a NameError is
        self.strung = False  # it reads attributes by strings (getattr, hasattr, attrgetter)
        self.built = False  # it may read an object's attributes by names no constant of its
        #   code spells (getattr(self, f"l{i}", None), vars(self)): :func:`built_names`


def _defaulted(function: Any) -> set[str]:
    """The names of ``function``'s parameters that hold a default value."""
    code = function.__code__
    count = len(getattr(function, "__defaults__", None) or ())
    named = set(code.co_varnames[code.co_argcount - count:code.co_argcount]) if count else set()
    return named | set(getattr(function, "__kwdefaults__", None) or ())


def _cell_modules(function: Any) -> list[tuple[str, types.ModuleType]]:
    """``(name, module)`` of each user module a closure cell of ``function`` holds."""
    found = []
    code = function.__code__
    for name, cell in zip(code.co_freevars, getattr(function, "__closure__", None) or ()):
        try:
            held = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(held, types.ModuleType) and code_reach._users(held):
            found.append((name, held))
    return found


def reached(fn: Callable, places: list[Place]) -> Reached:
    """What the code ``fn`` reaches can read (see the module docstring)."""
    found = Reached()
    owner, function = function_of(fn)
    reach = code_reach.reach(fn, places)
    found.names |= reach.names
    found.dynamic = reach.dynamic
    classes = {type(p.value) for p in places} | {type(p.holder) for p in places
                                                 if p.kind in ("keys", "attribute")}
    if owner is not None:
        classes.add(type(owner))
    classes = {c for c in classes if code_reach._users(c)}
    todo = [function] if isinstance(function, types.FunctionType) else []
    todo += code_reach._held_functions(places)
    for place in places:  # (functools.partial held: its function)
        if isinstance(place.value, functools.partial):
            inner = getattr(place.value.func, "__func__", place.value.func)
            if isinstance(inner, types.FunctionType):
                todo.append(inner)
    own = getattr(function, "__globals__", None)
    spaces: dict[int, tuple[str, dict]] = {}
    if isinstance(own, dict):
        spaces[id(own)] = ("", own)
    seen: set[Any] = set()
    calls = False  # (a call made where an AttributeError is caught)
    modules_seen: set[str] = set()
    done_classes: set[tuple[type, str]] = set()
    while True:
        while todo and len(seen) < code_reach.MOST_FUNCTIONS:
            each = todo.pop()
            code = getattr(each, "__code__", None)
            if code is None or code in seen:
                continue
            seen.add(code)
            found.functions.append(each)
            _loads, loaded, named, _catching, texts = code_reach._summary(code)
            found.names |= named
            found.global_loads |= loaded
            found.strings |= texts
            tried_names, tried_globals, tried_calls = tried(code)
            found.tried |= tried_names
            found.tried_globals |= tried_globals
            calls = calls or tried_calls
            found.built = found.built or built_names(code)
            found.defaulted |= _defaulted(each)
            todo += default_functions(each)  # (lambda x, fn=helper: fn(m, x): review 12, #1)
            space = getattr(each, "__globals__", None)
            if isinstance(space, dict) and id(space) not in spaces:
                module = space.get("__name__", "")
                spaces[id(space)] = (f"{module}.", space)
            for name, held in _cell_modules(each):  # (a module a closure holds: H.layer(x))
                if id(vars(held)) not in spaces:
                    spaces[id(vars(held))] = (f"{name}.", vars(held))
        grew = False
        for cls in list(classes):  # the methods they may run, by the names the code uses
            for name in (*SPECIAL, *found.names):
                if (cls, name) in done_classes:
                    continue
                value = _attribute(cls, name)
                if value is None:
                    continue
                done_classes.add((cls, name))
                if name in SPECIAL[1:]:
                    found.open_classes.add(cls)
                for inner in _functions(value):
                    todo.append(inner)
                    grew = True
        for key, (_prefix, space) in list(spaces.items()):  # the functions its globals hold
            for name in found.names & set(space):
                value = space[name]
                if (key, name) in done_classes:
                    continue
                done_classes.add((key, name))
                if isinstance(value, types.FunctionType) and code_reach._users(value):
                    todo.append(value)
                    grew = True
                elif isinstance(value, type) and code_reach._users(value):
                    classes.add(value)
                    grew = True
                elif isinstance(value, types.ModuleType) and code_reach._users(value) and \
                        id(vars(value)) not in spaces:  # import helpers as H; H.layer(x)
                    spaces[id(vars(value))] = (f"{name}.", vars(value))
                    grew = True
        for name in found.names - modules_seen:  # a user module imported in the code
            module = sys.modules.get(name)
            modules_seen.add(name)
            if isinstance(module, types.ModuleType) and code_reach._users(module) and \
                    id(vars(module)) not in spaces:
                spaces[id(vars(module))] = (f"{name}.", vars(module))
                grew = True
        if not grew or len(seen) >= code_reach.MOST_FUNCTIONS:
            break
    found.spaces = list(spaces.values())
    if calls:  # (raised in a function called there: any name read is caught there too)
        found.tried |= found.names
        found.tried_globals |= found.global_loads
    found.strung = not found.names.isdisjoint(STRUNG)
    if found.strung:
        for place in places:  # (names held as data: for n in NAMES: getattr(self, n, 0.5),
            held = place.value if type(place.value) is tuple else (place.value,)  # R11 #6)
            found.strings.update(s for s in held if type(s) is str and s.isidentifier())
        found.names |= found.strings  # (getattr(self, "p", 0.5): "p" is read)
    found.dynamic = found.dynamic or bool(found.names & code_reach.DYNAMIC)
    found.globals = bool(found.names & GLOBALS)
    return found


def default_functions(function: Any, depth: int = 3) -> list[types.FunctionType]:
    """The user's functions ``function``'s default arguments hold (``lambda x, m=m,
    fn=helper: fn(m, x)``, ``def f(x, *, fn=helper)``, ``t=(helper,)``, a ``functools.
    partial`` or bound method there), inside tuples, lists and dicts ``depth`` levels down:
    code the call may run, whose reads are guarded (review 12, finding 1, silent: a helper
    reading ``m.W`` through NumPy, reached only through a default, was not)."""
    found: list[types.FunctionType] = []
    todo = list(getattr(function, "__defaults__", None) or ()) + list(
        (getattr(function, "__kwdefaults__", None) or {}).values())
    todo = [(value, depth) for value in todo]
    while todo:
        value, left = todo.pop()
        if isinstance(value, functools.partial):
            todo += [(v, left - 1) for v in (value.func, *value.args,
                                               *value.keywords.values())] if left > 0 else []
            continue
        value = getattr(value, "__func__", value) if isinstance(value, types.MethodType) \
            else value
        if isinstance(value, types.FunctionType):
            if code_reach._users(value):
                found.append(value)
        elif left > 0 and type(value) in (tuple, list):
            todo += [(v, left - 1) for v in value[:256]]
        elif left > 0 and type(value) is dict:
            todo += [(v, left - 1) for v in list(value.values())[:256]]
    return found


def _attribute(cls: type, name: str) -> Any:
    """What class ``cls`` (its MRO, the user's classes of it) holds as ``name``, without running
    a descriptor (``None``: nothing)."""
    for klass in cls.__mro__:
        if klass is object:
            break
        value = vars(klass).get(name)
        if value is not None:
            return value
    return None


def _functions(value: Any) -> list[types.FunctionType]:
    """The user's functions a class attribute runs: a method, a static or class method's
    function, a property's getter."""
    if isinstance(value, property):
        value = value.fget
    value = getattr(value, "__func__", value)
    if isinstance(value, types.FunctionType) and code_reach._users(value):
        return [value]
    return []


_LOADS_ATTR = frozenset(("LOAD_ATTR", "LOAD_METHOD"))
_CALLS = frozenset(("CALL", "CALL_FUNCTION", "CALL_FUNCTION_EX", "CALL_METHOD", "CALL_FUNCTION_KW"))
_TRIED: dict[Any, tuple[frozenset, bool]] = {}


def tried(code: types.CodeType) -> tuple[frozenset, frozenset, bool]:
    """``(attributes, globals, calls)``: the attribute names ``code`` (and the code objects
    defined in it) loads where an AttributeError raised is caught, the global names it loads
    where a NameError is, and whether a call is made where either is (raised in the function
    it calls, it is caught too)."""
    found = _TRIED.get(code)
    if found is not None:
        return found
    names: set[str] = set()
    loaded: set[str] = set()
    calls = False
    stack = [code]
    while stack:
        each = stack.pop()
        stack.extend(c for c in each.co_consts if isinstance(c, types.CodeType))
        ops = list(dis.get_instructions(each))
        entries = getattr(dis.Bytecode(each), "exception_entries", None)
        if entries is None:  # (Python 3.10: blocks set up by SETUP_FINALLY / SETUP_WITH)
            if any(op.opname.startswith("SETUP_") for op in ops):
                names.update(op.argval for op in ops if op.opname in _LOADS_ATTR)
                loaded.update(op.argval for op in ops if op.opname in _LOADS_GLOBAL)
                calls = True
            continue
        where = {op.offset: i for i, op in enumerate(ops)}
        for entry in entries:
            caught = _handler(ops, where.get(entry.target))
            if not caught:
                continue
            for op in ops:
                if entry.start <= op.offset < entry.end:
                    if op.opname in _LOADS_ATTR and AttributeError in caught:
                        names.add(op.argval)
                    elif op.opname in _LOADS_GLOBAL and NameError in caught:
                        loaded.add(op.argval)
                    elif op.opname in _CALLS and "call" in caught:
                        calls = True
    found = (frozenset(names), frozenset(loaded), calls)
    if len(_TRIED) < 4096:
        _TRIED[code] = found
    return found


_LOADS_GLOBAL = frozenset(("LOAD_GLOBAL", "LOAD_NAME"))

_BY_NAME = frozenset(("getattr", "hasattr", "getattr_static", "attrgetter"))
"""The functions that read an attribute by a string: with a constant string, the name is one
of the code's strings (:attr:`Reached.strings`); with any other, any name."""
_LISTING = frozenset(("vars", "__dict__", "dir", "__dir__", "__getattribute__", "getmembers",
                      "getmembers_static"))
"""The names through which code reads or lists an object's attributes as data (by any name:
``object.__getattribute__(self, name)``, ``inspect.getmembers(self)``)."""
_SIMPLE = frozenset(("LOAD_FAST", "LOAD_DEREF", "LOAD_GLOBAL", "LOAD_NAME"))
_BUILT: dict[Any, bool] = {}


def built_names(code: types.CodeType) -> bool:
    """Whether ``code`` (or a code object defined in it) may read an object's attributes by a
    name no string constant of it spells: a ``getattr``, ``hasattr``, ``getattr_static`` or
    ``attrgetter`` whose name is anything but a string constant (``getattr(self, f"l{i}",
    None)``, ``hasattr(self, name)``), or any use of :data:`_LISTING` (``vars``,
    ``__dict__``, ``dir``, ``__getattribute__``, ``inspect.getmembers``: an object's attributes
    listed or read by key). Such code finds an attribute the user adds
    later, under any name: where it does, the guards hold each walked object's attribute
    names (:func:`capviz.trace.guards_python.collect`). Read from the bytecode: a call
    whose name argument is not a plain string constant right after a plain receiver counts
    as built (an unsure reading over-guards, never under)."""
    found = _BUILT.get(code)
    if found is not None:
        return found
    found = False
    stack = [code]
    while stack and not found:
        each = stack.pop()
        stack.extend(c for c in each.co_consts if isinstance(c, types.CodeType))
        ops = list(dis.get_instructions(each))
        for i, op in enumerate(ops):
            name = op.argval if op.opname.startswith("LOAD_") else None
            if name in _LISTING or (name in _BY_NAME and not _constant_name(ops, i, name)):
                found = True
                break
    if len(_BUILT) < 4096:
        _BUILT[code] = found
    return found


def _constant_name(ops: list, at: int, function: str) -> bool:
    """Whether the call of ``function`` loaded at ``ops[at]`` reads a name spelled by a string
    constant: ``getattr(<a name>[.<attribute>...], "<constant>"[, <a name or constant>])``,
    ``attrgetter("<constant>")``."""
    j = at + 1
    if function != "attrgetter":
        if j >= len(ops) or ops[j].opname not in _SIMPLE:
            return False
        j += 1
        while j < len(ops) and ops[j].opname == "LOAD_ATTR":
            j += 1
    if j >= len(ops) or ops[j].opname != "LOAD_CONST" or type(ops[j].argval) is not str:
        return False
    j += 1
    if j < len(ops) and (ops[j].opname in _SIMPLE or ops[j].opname == "LOAD_CONST"):
        j += 1  # (a default)
    while j < len(ops) and ops[j].opname in ("PRECALL", "KW_NAMES"):
        j += 1
    return j < len(ops) and ops[j].opname in _CALLS


def _handler(ops: list, at: int | None) -> frozenset:
    """What the handler at ``ops[at]`` may catch of ``AttributeError``, ``NameError`` (a bare
    ``except``, one of them or a base of it, a class not built in) and whether it catches them
    from a call (``"call"``: not a ``with`` block's, whose ``__exit__`` may swallow them too,
    ``contextlib.suppress``, but around the whole computation in ``np.errstate``); empty where
    it is no handler (a cleanup) or catches other errors only."""
    both = frozenset((AttributeError, NameError))
    if at is None or ops[at].opname != "PUSH_EXC_INFO":
        return frozenset()
    if at + 1 < len(ops) and ops[at + 1].opname == "WITH_EXCEPT_START":
        return both
    matched: list[tuple[str, Any]] = []
    for i in range(at + 1, len(ops)):
        op = ops[i]
        if op.opname == "CHECK_EXC_MATCH":
            j = i - 1
            while j > at and ops[j].opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_ATTR",
                                                "LOAD_DEREF", "LOAD_FAST", "BUILD_TUPLE"):
                if ops[j].opname != "BUILD_TUPLE":
                    matched.append((ops[j].opname, ops[j].argval))
                j -= 1
        elif op.opname == "RERAISE":
            if op.arg != 0:  # (the handler's cleanup first: a bare except clause)
                return both | {"call"}
            break
    caught: set[Any] = set()
    for opname, name in matched:
        value = getattr(builtins, name, None) if opname in _LOADS_GLOBAL else None
        if not (isinstance(value, type) and issubclass(value, BaseException)):
            return both | {"call"}  # (a class not built in, or not known: any)
        caught.update(error for error in both if issubclass(error, value))
    return frozenset(caught | ({"call"} if caught else set()))
