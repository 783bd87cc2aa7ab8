"""The code a captured function reaches by name, read from its bytecode (no call is run).

Two questions about ``fn`` have no run-time hook to answer them:

* can its code ask an object's identity (the builtin ``type``, ``type(self.W) is np.ndarray``;
  ``id``, a dict keyed by ``id(p)``; ``object.__repr__``)? CPython 3.11 calls them with no
  event a profiler sees, and they read no attribute of the object, so a lifted pass
  (:mod:`capviz.trace.lifted`) cannot see them answer otherwise for a lifted tensor. Found
  conservatively: the name used anywhere (``builtins.type``, an attribute ``.id``), a global,
  a default argument, a closure cell or a ``functools.partial`` holding the builtin;
* can its code name an outside array (``self.buf``)? An array that changed during the capture
  while other threads ran, on a path none of whose names ``fn``'s code uses, is another thread's
  write, not ``fn``'s (:mod:`capviz.trace.outside_writes`).

:func:`reach` reads, once per code object, the bytecode of ``fn``, of the functions, lambdas
and comprehensions defined in it, of the functions it names as globals, of the methods it names
of its owner's class and of the classes of the objects the walk found (``self.layer.forward``),
and of the functions it names in the user's own modules it names (``helpers.update(self)``),
and of the user's functions the walk found held in a place (``self.f = pick``), transitively,
up to :data:`MOST_FUNCTIONS` functions (past it: taken as asking identities); where that
code builds a name at run time (``getattr``...), every function of those classes and modules.
Not read: NumPy's, capviz's and the installed packages' code, and code reached only through
objects no walk reached (a function a helper returns from a table it keeps). A name read or
written dynamically (``getattr``, ``setattr``, ``vars``, ``__dict__``, ``globals``, ``eval``,
``exec``...) makes every name reachable.
"""

from __future__ import annotations

import builtins
import dis
import functools
import os
import re
import sys
import sysconfig
import types
import weakref
from collections.abc import Callable
from typing import Any

from capviz.core.source import interpreters_type
from capviz.trace import recapture

MOST_FUNCTIONS = 256
"""The most functions one :func:`reach` reads (past it: what it found so far)."""

DYNAMIC = frozenset(("getattr", "setattr", "delattr", "vars", "__dict__", "globals", "locals",
                     "eval", "exec", "attrgetter", "__getattribute__", "__setattr__"))
"""Names through which code reaches an attribute or a global it does not name."""

IDENTITY = frozenset(("type", "id", "__repr__", "__hash__", "__sizeof__", "__builtins__",
                      "getsizeof", "getrefcount", "getweakrefcount", "getweakrefs",
                      "__array_priority__", "__doc__"))
"""Names whose use may ask a lifted tensor's identity, which no hook sees (``object.__hash__``
of a state keys a dict as its ``id`` does; ``__sizeof__`` and ``sys.getsizeof`` count an
ndarray's data; the reference counts; an ndarray's data attributes a tensor answers otherwise,
``__array_priority__``; a lookup in ``__builtins__`` by a name built at run time may be
``type``: hostile review 6, finding 2). Where the code reads attributes by name (``getattr``,
``hasattr``...), its string constants count as names too."""

ARRAY_ONLY = frozenset((
    "__array_interface__", "__array_struct__", "__array_finalize__", "__array_wrap__",
    "__array_namespace__", "__dlpack__", "__dlpack_device__", "__setstate__", "__complex__",
    "__contains__", "__delitem__", "base", "byteswap", "ctypes", "data", "dump", "dumps",
    "flags", "flat", "getfield", "resize", "setfield", "setflags", "strides", "to_device",
    "tofile", "__class_getitem__", "memoryview", "bytes", "bytearray", "frombuffer", "complex"))
"""The ndarray's attributes a capture tensor lacks (every one: tests/test_lifted_silent.py
checks it) and the builtins that read an ndarray's buffer, which a tensor does not expose: an
error a lifted tensor raises there, caught by the user's code (``try``, ``with
contextlib.suppress``, ``hasattr``, ``getattr`` with a default), takes another branch unseen
(hostile review 6, finding 2: ``self.W.__array_interface__`` and ``memoryview(self.W)`` in a
``try``). Where the code reached catches errors and names one of these, it is taken as asking."""

CATCHERS = frozenset(("hasattr", "getattr"))
"""Builtins that catch the AttributeError of the attribute they read."""

_IDENTITY_BUILTINS = (type, id, object.__repr__, object.__hash__, object.__sizeof__)

_INSTALLED = tuple(os.path.realpath(sysconfig.get_paths()[key]) + os.sep
                   for key in ("stdlib", "platstdlib", "purelib", "platlib"))
_CAPVIZ = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

_SUMMARIES: dict[types.CodeType, tuple[bool, frozenset, frozenset, bool, frozenset]] = {}
_MOST_SUMMARIES = 4096


class Reach:
    """What the code ``fn`` reaches by name does: ``calls_type`` (it loads the builtin
    ``type``), ``names`` (every global, attribute and closure name it uses), ``dynamic``
    (it uses one of :data:`DYNAMIC`)."""

    __slots__ = ("calls_type", "dynamic", "names")

    def __init__(self, calls_type: bool, names: frozenset, dynamic: bool) -> None:
        self.calls_type, self.names, self.dynamic = calls_type, names, dynamic

    def may_name(self, label: str) -> bool:
        """Whether this code can reach the place ``label`` (``self.sub.buf``,
        ``self.opt['m']``, ``W_GLOBAL``, a closure cell's name) by the names it uses: every
        attribute or variable name on the path (items are reached by index or iteration)."""
        if self.dynamic:
            return True
        steps = _names_of(label)
        return all(step in self.names for step in steps)


def _names_of(label: str) -> list[str]:
    """The attribute and variable names on the path ``label`` (its first name is ``self``
    for an owner's attribute: not a name the code must use)."""
    names, depth, word = [], 0, []
    for char in label + ".":
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif depth == 0 and char == ".":
            if word:
                names.append("".join(word))
            word = []
        elif depth == 0:
            word.append(char)
    return names[1:] if names and names[0] == "self" else names


def reach(fn: Callable, places: list[Any]) -> Reach:
    """What the code ``fn`` reaches by name does (see the module docstring); ``places``:
    :func:`capviz.trace.places.note` of ``fn``, whose objects' classes' methods are read."""
    function = getattr(fn, "__func__", fn)
    owner = getattr(fn, "__self__", None)
    if not isinstance(function, types.FunctionType):
        owner, function = fn, _static(type(fn), "__call__")
        if not isinstance(function, types.FunctionType):
            return Reach(False, frozenset(), True)  # (nothing to read: every name)
    classes = {type(owner)} if owner is not None else set()
    classes.update({type(p.value) for p in places})
    classes = {cls for cls in classes if _users(cls)}
    modules: set[types.ModuleType] = set()
    names: set[str] = set()
    calls_type = catches = builtins_named = False
    strings: set[str] = set()  # the string constants (names read by getattr...)
    todo, seen = [function, *_held_functions(places)], set()
    expanded = False
    while todo and len(seen) < MOST_FUNCTIONS:
        function = todo.pop()
        code = function.__code__
        if code in seen:
            continue
        seen.add(code)
        loads_type, globals_named, named, catching, texts = _summary(code)
        names |= named
        strings |= texts
        catches = catches or catching
        where = function.__globals__
        calls_type = calls_type or loads_type or _holds_identity(function, todo)
        for name in globals_named:
            value = where.get(name)
            if isinstance(value, functools.partial):  # (is_arr = partial(check, np.ndarray))
                value = value.func
            if any(value is b for b in _IDENTITY_BUILTINS):  # (T = type; T(self.W))
                calls_type = True
            elif value is builtins:  # (getattr(builtins, "ty" + "pe"): see below)
                builtins_named = True
            elif isinstance(value, types.FunctionType):
                todo.append(value)
            elif isinstance(value, type) and _users(value):
                classes.add(value)
            elif isinstance(value, types.ModuleType) and _users(value):
                modules.add(value)
        for name in named:
            for cls in classes:
                value = _static(cls, name)
                if isinstance(value, types.FunctionType):
                    todo.append(value)
            for module in modules:
                value = vars(module).get(name)
                if isinstance(value, types.FunctionType):
                    todo.append(value)
        if not todo and not expanded and not names.isdisjoint(DYNAMIC):
            expanded = True  # a name built at run time: every function of those classes
            todo = [f for cls in classes for f in _functions_of(cls)]
            todo += [f for module in modules for f in vars(module).values()
                     if isinstance(f, types.FunctionType)]
    if todo and len(seen) >= MOST_FUNCTIONS:
        calls_type = True  # (not read to the end: taken as asking, two passes decide)
    dynamic = not names.isdisjoint(DYNAMIC)
    read = names  # the names read, with the strings getattr(self.W, "__array_priority__") reads
    if dynamic or not names.isdisjoint(CATCHERS):
        read = names | strings
    if builtins_named and dynamic:  # a builtin looked up by a name built at run time
        calls_type = True
    if (catches or not names.isdisjoint(CATCHERS)) and not read.isdisjoint(ARRAY_ONLY):
        calls_type = True  # an ndarray's attribute or buffer, its error caught
    calls_type = calls_type or not read.isdisjoint(IDENTITY)
    return Reach(calls_type, frozenset(names), dynamic)


def _holds_identity(function: types.FunctionType, todo: list) -> bool:
    """Whether ``function``'s default arguments or closure cells hold ``type``/``id``
    (``def step(self, x, _type=type)``); the functions they hold (a decorator's wrapped
    function) are added to ``todo``."""
    held = [*(function.__defaults__ or ()), *(function.__kwdefaults__ or {}).values()]
    for cell in function.__closure__ or ():
        try:
            held.append(cell.cell_contents)
        except ValueError:  # (an empty cell)
            continue
    found = False
    for value in held:
        if isinstance(value, functools.partial):
            value = value.func
        if any(value is b for b in _IDENTITY_BUILTINS):
            found = True
        elif isinstance(value, types.FunctionType):
            todo.append(value)
    return found


def _held_functions(places: list[Any]) -> list[types.FunctionType]:
    """The user's functions the walk found held in a place (``self.f = pick``, a closure
    cell, a list of handlers), bound methods' and ``functools.partial``'s included."""
    found = []
    for place in places:
        value = place.value
        kind = type(value)
        if kind is functools.partial:
            value = value.func
            kind = type(value)
        if kind is types.MethodType:
            value = value.__func__
            kind = type(value)
        if kind is types.FunctionType and _users(value):
            found.append(value)
    return found


def _functions_of(cls: type) -> list[types.FunctionType]:
    """Every function a user's class ``cls`` and its user bases define."""
    found = []
    for klass in cls.__mro__:
        if klass is object or not _users(klass):
            continue
        for value in vars(klass).values():
            value = getattr(value, "__func__", value)  # a static or class method
            if isinstance(value, types.FunctionType):
                found.append(value)
    return found


def _users(obj: Any) -> bool:
    """Whether a class, function or module is the user's own code (not capviz's, NumPy's, the
    standard library's or an installed package's), decided by where its code's file is (lead
    ruling 38, 10:50), never by a module name alone: a class or function whose functions were
    compiled from a file is judged by that file (one of them in a user's file: the user's,
    so a method a library decorator wraps does not make its class the library's); one whose
    code has no file (``"<string>"``) by its module where that module holds it, else it is the
    user's (``exec(src, {})`` names the module ``builtins``, review 9, finding 24;
    ``exec(src, {"__name__": "json"})`` borrows a module's name, review 10, finding 6);
    remembered per file."""
    if isinstance(obj, types.ModuleType):
        filename = getattr(obj, "__file__", None)
        return _by_file(filename) if filename else obj.__name__ == "__main__"
    if isinstance(obj, type):
        try:
            known = _CLASSES.get(obj)
        except TypeError:  # (not weakly referable)
            return _judged(obj)
        if known is None or known[0] != len(vars(obj)):
            known = (len(vars(obj)), _judged(obj))
            if len(_CLASSES) < 65_536:
                _CLASSES[obj] = known
        return known[1]
    return _judged(obj)


_CLASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # class -> (its attributes'
#                                                                    count, _users)


def _judged(obj: Any) -> bool:
    files = _code_files(obj)
    real = [f for f in files if not f.startswith("<")]
    if real:
        return any(map(_by_file, real))
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    if module is builtins:
        return not (isinstance(obj, type) and interpreters_type(obj))
    if module is None or (files and not _holds(module, obj)):
        return bool(files) or module is not None
    filename = getattr(module, "__file__", None)
    return _by_file(filename) if filename else module.__name__ == "__main__"


def _by_file(filename: str) -> bool:
    known = _USERS.get(filename)
    if known is None:
        real = os.path.realpath(filename)
        known = _USERS[filename] = not real.startswith(_INSTALLED) and \
            not real.startswith(_CAPVIZ)
    return known


def _code_files(obj: Any) -> list[str]:
    """The files the code of function ``obj``, or of the functions class ``obj`` defines, was
    compiled from (a decorator's wrapper unwrapped)."""
    values = [obj] if not isinstance(obj, type) else list(vars(obj).values())
    files = []
    for value in values:
        value = getattr(value, "__func__", value)
        if isinstance(value, property):
            value = value.fget
        for _ in range(8):
            inner = getattr(value, "__wrapped__", None) if isinstance(
                value, types.FunctionType) else None
            if inner is None:
                break
            value = inner
        code = getattr(value, "__code__", None)
        if isinstance(code, types.CodeType):
            files.append(code.co_filename)
    return files


def _holds(module: types.ModuleType, obj: Any) -> bool:
    """Whether ``module`` holds ``obj`` by its qualified name (a class or function defined in
    a function of it, ``<locals>``, is taken as held)."""
    qualified = getattr(obj, "__qualname__", None)
    if not isinstance(qualified, str) or "<locals>" in qualified:
        return True
    found: Any = module
    for part in qualified.split("."):
        found = getattr(found, part, None)
    return found is obj


_USERS: dict[str, bool] = {}


def _static(cls: type, name: str) -> Any:
    """The function ``name`` of class ``cls`` (a static or class method's too), looked up
    without running a descriptor; ``None`` for anything else."""
    for klass in cls.__mro__:
        value = klass.__dict__.get(name)
        if value is not None:
            return getattr(value, "__func__", value)
    return None


def _summary(code: types.CodeType) -> tuple[bool, frozenset, frozenset, bool, frozenset]:
    """Of ``code`` and the code objects defined in it: whether it loads the global ``type``,
    the global names it loads, every name it uses (globals, attributes, closure cells), and
    whether it catches exceptions (a ``try`` or ``with`` block: an exception table), and its
    string constants that could name an attribute."""
    summary = _SUMMARIES.get(code)
    if summary is not None:
        return summary
    globals_named: set[str] = set()
    named: set[str] = set()
    catching = False
    texts: set[str] = set()
    stack = [code]
    while stack:
        each = stack.pop()
        named.update(each.co_names, each.co_freevars, each.co_cellvars)
        catching = catching or bool(getattr(each, "co_exceptiontable", b"\0"))
        texts.update(c for c in each.co_consts if type(c) is str and c.isidentifier())
        for instruction in dis.get_instructions(each):
            if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                globals_named.add(instruction.argval)
        stack.extend(c for c in each.co_consts if isinstance(c, types.CodeType))
    summary = (not IDENTITY.isdisjoint(named) or not IDENTITY.isdisjoint(globals_named),
               frozenset(globals_named), frozenset(named), catching, frozenset(texts))
    if len(_SUMMARIES) < _MOST_SUMMARIES:
        _SUMMARIES[code] = summary
    return summary


# --- the line that writes a place through another name -----------------------------------------

def writer_of(fn: Callable, label: str) -> tuple[tuple[str, int, str], str] | None:
    """``((file, line, function), code)`` of the first statement, in ``fn``'s code or in a
    user's function it reaches (one its owner holds: a ``functools.partial``, a bound method,
    a callable object; a global it names), that writes the last step of the place ``label``
    through any name (``st["n"] += 1`` in the partial ``self.bump`` of ``bump(self.state)``
    for ``self.state['n']``; ``f.n = getattr(f, "n", 0) + 1`` for ``step.n``, fn's own
    function): where a number the call changes is written when no line names its path
    (review 8, finding 2: the caller's ``cv.capture`` line was named). ``None``: none found."""
    step = re.search(r"(?:\.(\w+)|\[('(?:[^'\\]|\\.)*'|\"[^\"]*\"|-?\d+)\])$", label)
    if step is None:
        return None
    if step[1]:
        key = re.escape(step[1])
        target = re.compile(rf"(?<![\w.])\w+(?:\.\w+)*\.{key}\s*(?:\*\*|//|[-+*/%@&|^])?=(?!=)"
                            rf"|\bsetattr\(\s*\w+\s*,\s*['\"]{key}['\"]")
    else:
        text = step[2].strip("'\"")
        key = rf"(?:'{re.escape(text)}'|\"{re.escape(text)}\")" if not text.lstrip("-") \
            .isdigit() else re.escape(text)
        target = re.compile(rf"(?<![\w.])\w+(?:\.\w+)*\s*\[\s*{key}\s*\]\s*"
                            rf"(?:\*\*|//|[-+*/%@&|^])?=(?!=)")
    for function in _reached(fn):
        try:
            lines, start = recapture.source_lines(function)
        except (OSError, TypeError):
            continue
        for offset, line in enumerate(lines):
            code = line.split("#", 1)[0].strip()
            one_line = _DEF.match(code)
            if one_line is not None:  # (a def line: its body, where it holds one)
                code = one_line["body"]
            if any(target.search(part.strip()) for part in code.split(";")):
                source = (function.__code__.co_filename, start + offset,
                          function.__code__.co_name)
                return source, code
    return None


_DEF = re.compile(r"^(?:async\s+)?def\s+\w+\s*\(.*\)\s*(?:->[^:]*)?:\s*(?P<body>.*)$")


def _reached(fn: Callable) -> list[types.FunctionType]:
    """``fn``'s function, then the user's functions its owner's attributes hold (a partial's,
    a bound method's, a callable object's ``__call__``) and the functions it names as
    globals, one level, in that order."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    owner = getattr(fn, "__self__", None)
    function = getattr(fn, "__func__", fn)
    if not isinstance(function, types.FunctionType):
        owner, function = fn, _static(type(fn), "__call__")
    if not isinstance(function, types.FunctionType):
        return []
    found = [function]
    held = list(vars(owner).values()) if hasattr(owner, "__dict__") and \
        not isinstance(owner, (type, types.ModuleType)) else []
    held += [function.__globals__.get(name)
             for name in _summary(function.__code__)[1]]
    for value in held:
        while isinstance(value, functools.partial):
            value = value.func
        value = getattr(value, "__func__", value)
        if not isinstance(value, types.FunctionType) and value is not None and \
                not isinstance(value, type) and _users(type(value)):
            value = _static(type(value), "__call__")
        if isinstance(value, types.FunctionType) and value not in found and \
                _users_function(value):
            found.append(value)
    return found


def _users_function(function: types.FunctionType) -> bool:
    real = os.path.realpath(function.__code__.co_filename)
    return not real.startswith(_INSTALLED) and not real.startswith(_CAPVIZ)
