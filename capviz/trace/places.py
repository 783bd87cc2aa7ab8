"""The places a captured function can rebind or fill, noted when its scope opens.

What :func:`note` walks for a function (the attributes of a bound method's ``self``, the
globals its code names, its closure cells, and inside them the items of lists and dicts and the
attributes of plain objects, three levels down: ``self.ws[0]``, ``self.d["w"]``, ``self.o.m``),
:func:`frame_places` and :func:`block_places` for the scope form, each a :class:`Place` with
what it held then and its path from what the user holds. :func:`capviz.trace.rebound.put_back`
checks them when the scope exits.
"""

from __future__ import annotations

import collections
import functools
import itertools
import sysconfig
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.source import is_user_file, library_type
from capviz.trace.recapture import call_method
from capviz.trace.tensor import Tensor


class Place:
    """One name the captured function can rebind: an object's attribute, a module global,
    a closure cell, a list or dict item; what it held when the scope opened."""

    __slots__ = ("filled", "grew", "holder", "inner", "key", "kind", "label", "left", "lifts",
                 "path", "value")

    def __init__(self, kind: str, holder: Any, key: Any, label: str, value: Any,
                 inner: bool = False) -> None:
        self.kind, self.holder, self.key, self.label, self.value = kind, holder, key, label, value
        self.inner = inner  # inside a container: refused only where the capture read its array
        self.grew = False  # a container the last run grew with tensors, then given its items
        self.filled = False  # a dict the call added keys to (a memo), then given its items
        self.left: Any = None  # the items the last run left in a container it logged Python
        #                        values into (capviz/trace/effects.py: a second run sees them)
        self.lifts: str | None = None  # rebound to a fresh array of its kind: the refusal
        #                                queued, which a lifted capture may lift (below)
        self.path: tuple | None = None  # its (anchor, steps) from what the user holds:
        #   where a replay logs (a container's: capviz/trace/effects.py) or binds (an item's)

    def get(self) -> Any:
        if self.kind in ("keys", "items"):  # (what a walked object or container held)
            return self.value
        if self.kind == "slot":
            return getattr(self.holder, self.key, self.value)
        if self.kind == "attribute":
            return vars(self.holder).get(self.key, self.value)
        if self.kind in ("global", "dict"):
            return self.holder.get(self.key, self.value)
        if self.kind == "list":
            return self.holder[self.key] if self.key < len(self.holder) else self.value
        try:
            return self.holder.cell_contents
        except ValueError:  # an empty cell
            return self.value

    def bind(self, value: Any) -> None:
        """``value`` into the place (an attribute made if it is none)."""
        if self.kind in ("keys", "slot"):
            setattr(self.holder, self.key, value)
        else:
            previous, self.value = self.value, value
            self.put_back()
            self.value = previous

    def put_back(self) -> None:
        if self.kind == "slot":
            setattr(self.holder, self.key, self.value)
        elif self.kind == "attribute":
            vars(self.holder)[self.key] = self.value
        elif self.kind in ("global", "dict", "list"):
            self.holder[self.key] = self.value
        else:
            self.holder.cell_contents = self.value



DICTS = (dict, collections.Counter, collections.OrderedDict, collections.defaultdict)
"""The dicts walked as dicts (``self.c["calls"] += 1`` on a ``Counter``: review 8, finding 6)."""
DEPTH = 3  # containers walked below an entry place (self.blocks[0].mW: two)



ITEMS = 256  # items of one list or dict walked (the rest: not looked at)



_SNAPSHOT = 10_000  # items of a list, dict or deque copied to be put back (a longer one: data)



_LEAVES = (int, float, complex, str, bytes, bool, type(None), np.ndarray, np.generic)



def _inside(value: Any, label: str, depth: int, seen: set[int], path: tuple | None = None
            ) -> list[Place]:
    """The places inside ``value`` (a list's or dict's items, a plain object's attributes),
    ``depth`` levels down at most, each container once; ``path``: ``value``'s own ``(anchor,
    steps)`` from what the user holds (``None``: not known), given to its places."""
    if depth <= 0 or isinstance(value, _LEAVES) or id(value) in seen:
        return []
    if type(value) is tuple or type(value) is functools.partial:  # what they hold (no
        return _held_inside(value, label, depth, seen, path)  # place of their own: fixed)
    if type(value) is list:
        seen.add(id(value))
        items = [(i, f"{label}[{i}]", "list", item) for i, item in enumerate(value[:ITEMS])]
        places = [Place("items", value, None, label, list(value))] \
            if len(value) <= _SNAPSHOT else []
    elif type(value) in DICTS:
        seen.add(id(value))
        items = [(key, f"{label}[{key!r}]", "dict", item)
                 for key, item in itertools.islice(value.items(), ITEMS)]
        places = [Place("items", value, None, label, dict(value))] \
            if len(value) <= _SNAPSHOT else []
    elif type(value) is collections.deque:  # (frames stacked with append: no item places)
        seen.add(id(value))
        places = [Place("items", value, None, label, list(value))] \
            if len(value) <= _SNAPSHOT else []
        for place in places:
            place.path = path
        return places
    elif _plain_object(value):
        seen.add(id(value))
        items = [(key, f"{label}.{key}", "attribute", item)
                 for key, item in itertools.islice(vars(value).items(), ITEMS)]
        items += [(key, f"{label}.{key}", "slot", item) for key, item in _slots(value)]
        places = [Place("keys", value, None, label, frozenset(vars(value)))]
    elif type(value) is types.FunctionType:  # a closure kept there (self.fs[0](x)): its
        return _cells(value, label, seen) if value.__closure__ else []  # cells
    elif _slots(value):  # a __slots__ object: its slots are its attributes
        seen.add(id(value))
        items = [(key, f"{label}.{key}", "slot", item) for key, item in _slots(value)]
        places = []
    else:
        return []
    for place in places:
        place.path = path
    for key, inner, kind, item in items:
        place = Place(kind, value, key, inner, item, inner=True)
        step = (kind in ("attribute", "slot"), key)
        place.path = None if path is None else (path[0], (*path[1], step))  # (the item's own)
        places.append(place)
        places += _inside(item, inner, depth - 1, seen, place.path)
    return places



def _held_inside(value: Any, label: str, depth: int, seen: set[int], path: tuple | None
                 ) -> list[Place]:
    """The places inside what a tuple or a ``functools.partial`` holds (``def f(x, t=(m,))``,
    ``p = functools.partial(helper, m)`` in a closure cell: ``m.W``, read by the helper
    through NumPy, is guarded through them: review 12, finding 1); the tuple's items and the
    partial's arguments themselves are no places (they cannot be rebound)."""
    seen.add(id(value))
    if type(value) is tuple:
        entries = [(f"{label}[{i}]", ((False, i),), item) for i, item in enumerate(value[:ITEMS])]
    else:
        entries = [(f"{label}.func", ((True, "func"),), value.func)] + [
            (f"{label}.args[{i}]", ((True, "args"), (False, i)), item)
            for i, item in enumerate(value.args[:ITEMS])] + [
            (f"{label}.keywords[{key!r}]", ((True, "keywords"), (False, key)), item)
            for key, item in itertools.islice(value.keywords.items(), ITEMS)]
    places: list[Place] = []
    for inner, steps, item in entries:
        places += _inside(item, inner, depth - 1, seen,
                          None if path is None else (path[0], (*path[1], *steps)))
    return places


def anchored(owner: Any, step: tuple) -> tuple:
    """``(anchor, (step,))``: ``owner`` weakly where it takes a weak reference (``self``, a
    cell), else itself (a module's globals)."""
    try:
        return weakref.ref(owner), (step,)
    except TypeError:
        return owner, (step,)



def dict_places(value: dict, label: str, before: dict) -> list[Place]:
    """The places of a dict the captured code can fill outside what :func:`note` walks (a
    helper module's memo ``_MEMO``, a class's cache ``Layer._shared``), from ``before``, a
    copy of its items when the scope opened: the dict itself, given those items back at the
    exit where it holds a tensor of the capture, and each of them (:func:`put_back`)."""
    places = [Place("items", value, None, label, before)]
    for key, item in itertools.islice(before.items(), ITEMS):
        places.append(Place("dict", value, key, f"{label}[{key!r}]", item, inner=True))
    return places



def _slots(value: Any) -> list[tuple[str, Any]]:
    """``(name, value)`` of the ``__slots__`` attributes ``value``'s classes declare and it
    has set (``[]`` for a built-in type's object)."""
    kind = type(value)
    if library_type(kind) or isinstance(value, _LEAVES):
        return []
    found = []
    for klass in kind.__mro__:
        names = vars(klass).get("__slots__", ())
        for name in (names,) if isinstance(names, str) else names:
            if name in ("__dict__", "__weakref__") or name.startswith("__"):
                continue
            try:
                found.append((name, getattr(value, name)))
            except AttributeError:  # a slot not set
                continue
    return found[:ITEMS]



def _plain_object(value: Any) -> bool:
    """An instance of a user class with a ``__dict__`` (not a module, class or function)."""
    return (isinstance(getattr(value, "__dict__", None), dict)
            and not isinstance(value, (type, types.ModuleType, types.FunctionType,
                                       types.MethodType, types.BuiltinFunctionType)))



def function_of(fn: Callable) -> tuple[Any, Any]:
    """``(self or None, the plain function)`` of a bound method, a ``functools.partial``, a
    function, or a callable object (its class's ``__call__``, ``self`` the object)."""
    while callable(getattr(fn, "func", None)):  # functools.partial
        fn = fn.func
    owner = getattr(fn, "__self__", None)
    function = getattr(fn, "__func__", fn)
    if owner is None and not hasattr(function, "__code__") and _plain_object(fn):
        call = call_method(fn)
        if call is not None and hasattr(call, "__code__"):
            return fn, call
    return owner, function



def note(fn: Callable | None) -> list[Place]:
    """The places ``fn`` can rebind, with what each holds now."""
    if fn is None:
        return []
    owner, function = function_of(fn)
    code = getattr(function, "__code__", None)
    places: list[Place] = []
    seen: set[int] = set()
    first = code.co_varnames[0] if code is not None and code.co_varnames else "self"
    if owner is not None and isinstance(getattr(owner, "__dict__", None), dict):
        seen.add(id(owner))
        places.append(Place("keys", owner, None, first, frozenset(vars(owner))))
        places[-1].path = anchored(owner, (True, ""))[0], ()  # (the object itself)
        for key, value in list(vars(owner).items()):
            places.append(Place("attribute", owner, key, f"{first}.{key}", value))
            places += _inside(value, f"{first}.{key}", DEPTH, seen,
                              anchored(owner, (True, key)))
    if owner is not None and not isinstance(owner, types.ModuleType):
        seen.add(id(owner))
        for key, value in _slots(owner):  # (class Model: __slots__ = ("W",))
            places.append(Place("slot", owner, key, f"{first}.{key}", value))
            places += _inside(value, f"{first}.{key}", DEPTH, seen,
                              anchored(owner, (True, key)))
    if owner is not None and code is not None:
        places += _named_holders(owner, first, code, seen)
    parameters = code.co_varnames[:code.co_argcount] if code is not None else ()
    for label, value in _bound_arguments(fn, parameters):  # functools.partial(step, model)
        places += _inside(value, label, DEPTH + 1, seen)
    if code is None:
        return places
    places += _defaults(function, None, seen)
    if type(function) is types.FunctionType:  # its attributes (f.n = getattr(f, "n", 0) + 1,
        name = function.__name__               # a counter: hostile review 8, finding 1, Q19)
        places.append(Place("keys", function, None, name, frozenset(vars(function))))
        for key, value in list(vars(function).items()):
            if isinstance(value, _COUNTS) or type(value) in (list, dict):
                places.append(Place("attribute", function, key, f"{name}.{key}", value))
                places += _inside(value, f"{name}.{key}", DEPTH, seen)
    space = getattr(function, "__globals__", None)
    if isinstance(space, dict):
        for name in code.co_names:
            if name in space:
                places.append(Place("global", space, name, name, space[name]))
                places += _inside(space[name], name, DEPTH, seen, (space, ((False, name),)))
                if type(space[name]) is types.FunctionType and space[name].__closure__:
                    places += _cells(space[name], name, seen)  # ACC = make_acc(); ACC(x)
                if type(space[name]) is types.ModuleType:  # import params; params.W = ...
                    places += _module_places(space[name], name, seen)
    for name, cell in zip(code.co_freevars, getattr(function, "__closure__", None) or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        places.append(Place("cell", cell, name, name, value))
        places += _inside(value, name, DEPTH, seen, (cell, ((True, "cell_contents"),)))
    return places



def _named_holders(owner: Any, first: str, code: Any, seen: set[int]) -> list[Place]:
    """The ndarrays the code of ``fn`` can rebind past the walk of ``owner``'s own attributes
    (hostile review 7, findings 13 and 7: silent, and the capture left its tensor there): the
    class attributes of ``owner``'s class it names (``type(self).CW = type(self).CW - 0.1 *
    x``, ``self.W`` read from the class before an instance attribute shadows it), the
    attributes it names of a module ``owner`` holds (``self.cfg.W = ...``), and the closure
    cells of a function ``owner`` holds that it names (``self.f(x)`` with ``nonlocal acc; acc =
    acc + x`` in ``f``)."""
    names = set(code.co_names)
    places: list[Place] = []
    kind = type(owner)
    if not library_type(kind) and not isinstance(owner, types.ModuleType):
        for key in sorted(names & set(vars(kind))):
            value = vars(kind)[key]
            if type(value) is np.ndarray or isinstance(value, _COUNTS):  # (type(self).calls
                #  += 1: a counter each call changes; hostile review 8, finding 1)
                place = Place("slot", kind, key, f"type({first}).{key}", value, inner=True)
                place.path = anchored(kind, (True, key))
                places.append(place)
    for attribute, value in list(vars(owner).items()) if isinstance(
            getattr(owner, "__dict__", None), dict) else ():
        if type(value) is types.FunctionType and attribute in names:
            places += _cells(value, f"{first}.{attribute}", seen)  # self.f(x): its nonlocal
            continue
        if type(value) is not types.ModuleType or id(value) in seen:
            continue
        seen.add(id(value))
        for key in sorted(names & set(vars(value))):
            if type(vars(value)[key]) is np.ndarray:
                place = Place("global", vars(value), key, f"{first}.{attribute}.{key}",
                              vars(value)[key], inner=True)
                place.path = anchored(value, (True, key))
                places.append(place)
    return places



def _cells(function: types.FunctionType, label: str, seen: set[int]) -> list[Place]:
    """The closure cells of ``function`` (one ``fn`` calls: ``self.f(x)``, a global ``ACC``)
    that hold ndarrays, Python numbers or containers, as places (``nonlocal acc; acc = acc +
    x`` rebinds one: hostile review 7, finding 7; ``nonlocal n; n += 1``, ``box[0] += 1``, a
    counter each call changes, which a replay would repeat: hostile review 8, finding 1),
    and the mutable defaults of its parameters (:func:`_defaults`)."""
    if id(function) in seen:
        return []
    seen.add(id(function))
    places = _defaults(function, label, seen)
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
        try:
            held = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if type(held) is np.ndarray or isinstance(held, _COUNTS) or type(held) in (list, dict):
            place = Place("cell", cell, name, f"{label}.<{name}>", held)
            place.path = (cell, ((True, "cell_contents"),))
            places.append(place)
            places += _inside(held, f"{label}.<{name}>", DEPTH, seen, place.path)
    return places


_COUNTS = (bool, int, float, complex, np.generic)
"""The Python and NumPy numbers a counter or a schedule holds."""


def default_places(function: Any, label: str) -> list[Place]:
    """The places inside the list and dict defaults of ``function``'s parameters, labelled
    ``label.<cfg>["scale"]`` (a helper the captured code calls: :func:`_defaults`)."""
    return _defaults(function, label, set())


def _defaults(function: Any, label: str | None, seen: set[int]) -> list[Place]:
    """The places inside the mutable defaults of ``function``'s parameters (``def step(self,
    x, _c=[0]): _c[0] += 1``: a counter each call changes; hostile review 8, finding 1),
    labelled by the parameter's name (``_c[0]``, as the code names it) for ``fn``'s own
    function (``label`` ``None``), else ``label.<_c>[0]``."""
    code = getattr(function, "__code__", None)
    if code is None:
        return []
    defaults = getattr(function, "__defaults__", None) or ()
    named = code.co_varnames[code.co_argcount - len(defaults):code.co_argcount]
    pairs = list(zip(named, defaults)) + list((getattr(function, "__kwdefaults__", None)
                                                or {}).items())
    places: list[Place] = []
    paths = [(defaults, ((False, i),)) for i in range(len(named))] + [  # (the tuple, the
        (function.__kwdefaults__, ((False, key),)) for key in (  # dict itself, as a cell is
            getattr(function, "__kwdefaults__", None) or {})]      # for a closure's value)
    for (name, value), path in zip(pairs, paths):
        if label is None:  # fn's own: every default, as its closure cells (lambda x, m=m:
            places += _inside(value, name, DEPTH, seen, path)  # m.scale: review 11, #3)
        elif type(value) in (list, dict):
            places += _inside(value, f"{label}.<{name}>", DEPTH, seen)
    return places



def frame_places(frame: types.FrameType | None) -> list[Place]:
    """The places the frame that opened a scope reaches: its locals and globals (one
    namespace at a module's top level), and inside them what :func:`note` walks (``m.W``,
    ``params["W"]``); used by :mod:`capviz.trace.outside_writes` for the scope form."""
    if frame is None:
        return []
    spaces = [frame.f_locals]
    if frame.f_globals is not spaces[0]:
        spaces.append(frame.f_globals)
    places: list[Place] = []
    seen: set[int] = set()
    for space in spaces:
        for name, value in list(space.items()):
            if name.startswith("__") or isinstance(value, _OPAQUE):
                continue
            places.append(Place("dict", space, name, name, value))
            places += _inside(value, name, DEPTH, seen)
    return places



def block_places(frame: types.FrameType | None, names: frozenset[str] | None
                 ) -> list[Place]:
    """The places a scope's ``with`` block can reach by name: each of ``names`` (the names the
    block's statements use, :func:`capviz.trace.scope_block.names`) that ``frame`` binds, and
    inside it what :func:`note` walks; a function, method or callable object among them is
    walked as :func:`note` walks a captured function (its ``self``'s attributes, the globals
    its code names, its closure cells), a user's module by its attributes. ``names`` ``None``
    (the block's source unknown): every local and global, as :func:`frame_places`."""
    if names is None:
        return frame_places(frame)
    if frame is None:
        return []
    places: list[Place] = []
    seen: set[int] = set()
    for name in sorted(names):
        space = frame.f_locals if name in frame.f_locals else frame.f_globals
        if name not in space or name.startswith("__"):
            continue
        value = space[name]
        if type(value) is types.ModuleType:
            places += _module_places(value, name, seen)
        elif isinstance(value, (types.FunctionType, types.MethodType, functools.partial)):
            places += _called_places(value, seen, 2)  # its closure cells, globals, self
        elif not isinstance(value, _OPAQUE):  # (with its path from the frame's namespace: a
            places.append(Place("dict", space, name, name, value))  # guard reads m.sub.k
            places += _inside(value, name, DEPTH, seen, (space, ((False, name),)))  # anew)
    return places



def _called_places(fn: Any, seen: set[int], depth: int) -> list[Place]:
    """:func:`note` of ``fn``, and of the functions its code names in its module (``step``
    calling ``update``, which names the global ``W``), ``depth`` levels of them."""
    if id(fn) in seen or depth <= 0:
        return []
    seen.add(id(fn))
    places = note(fn)
    function = function_of(fn)[1]
    space = getattr(function, "__globals__", None)
    code = getattr(function, "__code__", None)
    if isinstance(space, dict) and code is not None:
        for name in code.co_names:
            inner = space.get(name)
            if type(inner) is types.FunctionType:
                places += _called_places(inner, seen, depth - 1)
    return places



def _bound_arguments(fn: Any, parameters: tuple) -> list[tuple[str, Any]]:
    """``(label, value)`` of the arguments a ``functools.partial`` (nested ones too) binds:
    positional ones labelled by the function's ``parameters``, keywords by their names."""
    positional: tuple = ()
    keywords: dict = {}
    while callable(getattr(fn, "func", None)) and isinstance(getattr(fn, "args", None), tuple):
        positional = fn.args + positional  # (an inner partial's come first)
        keywords = {**(getattr(fn, "keywords", None) or {}), **keywords}
        fn = fn.func
    found = [(parameters[k] if k < len(parameters) else f"args[{k}]", value)
             for k, value in enumerate(positional)]
    return found + [(str(key), value) for key, value in keywords.items()]



def _module_places(module: types.ModuleType, label: str, seen: set[int]) -> list[Place]:
    """The attributes of a user's module the function names (``params.W``), as places inside
    it (refused where the capture read the array they held)."""
    file = getattr(module, "__file__", None)
    if id(module) in seen or not isinstance(file, str) or not is_user_file(file) \
            or file.startswith(_LIBRARY_DIRS):
        return []
    seen.add(id(module))
    space = vars(module)
    places = []
    for key, value in itertools.islice(list(space.items()), ITEMS):
        if key.startswith("_") or isinstance(value, _OPAQUE):
            continue
        places.append(Place("global", space, key, f"{label}.{key}", value, inner=True))
        places += _inside(value, f"{label}.{key}", DEPTH - 1, seen)
    return places



_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)



_LIBRARY_DIRS = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib",
                                                               "purelib", "platlib")})



SEQUENCES = (tuple, list, dict, collections.deque)


REBINDABLE = frozenset(("attribute", "slot", "global", "dict", "list", "cell"))
"""The kinds of :class:`Place` a replay can bind a new array to (one reference each)."""


NUMBERS = (bool, int, float, complex, np.generic)



def tensor_in(value: Any, recorder: Any, depth: int, every: bool = False) -> Tensor | None:
    """A tensor of ``recorder`` inside tuple, list or dict ``value`` (``depth`` levels; the
    first :data:`ITEMS` items of each, or ``every`` item of ``value`` itself)."""
    items = value.values() if isinstance(value, dict) else value
    for item in items if every else itertools.islice(items, ITEMS):
        if type(item) is Tensor:
            if item._trace is recorder:
                return item
        elif depth > 1 and type(item) in SEQUENCES:
            found = tensor_in(item, recorder, depth - 1)
            if found is not None:
                return found
    return None
