"""A capture tensor left in a name outside the capture: ``self.W = self.W - 0.5 * g``.

A functional update of an attribute, a global or a closure variable binds a capture tensor
there: a replay computes values and writes states in place, and cannot rebind a name, so the
graph would keep computing from the old array while eager calls move on; and the user's object
would hold a dead capture tensor after the capture. The function form notes, when the scope
opens, what the places it can see hold (:func:`note`: the attributes of a bound method's
``self``, the globals its code names, its closure cells, and inside them the items of lists and
dicts and the attributes of plain objects, three levels down: ``self.ws[0]``, ``self.d["w"]``,
``self.o.m``); when the scope exits,
:func:`put_back` puts the original object back in each place that now holds a capture tensor
and refuses it at the line of the op that made the tensor, with the in-place write as the fix.
Where the place held a plain ndarray and now holds a fresh array of its shape and dtype, the
refusal marks it (``Place.lifts``): :func:`capviz.capture` may then capture it as a *rebind
state*, bound again by each replay (:mod:`capviz.trace.rebinding`), the refusal dropped.

No capture tensor is left in a place the walk reaches: a new tuple, list or dict holding one
bound to a noted place (an LSTM's ``self.state = (h, c)``, a rotated ``self.frames =
self.frames[1:] + self.frames[:1]``) is refused the same way and the original put back; a list
or dict the walk reaches that holds one when the scope exits (``self.history.append(loss)``,
a slot ``self.frames[2] = obs * 1.0``) gets the items it held when the scope opened back; an
attribute the capture added to a walked object that holds one (``self.x = x`` in a layer's
forward) is removed. These last two are not refused (a Python side effect, docs/guide/state.md),
but a slot whose old array the capture read is, as above, and so is a dict item, an attribute
or a list slot that held an array the call stored a new value over (``bn["running_mean"] =
...``, ``self.opt.m = ...``, ``self.frames[2] = ...`` in a list that keeps its other items): a
replay could not store it.
"""

from __future__ import annotations

import collections
import functools
import inspect
import itertools
import linecache
import re
import sysconfig
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.core.source import display_file, is_user_file
from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.trace import effects, state_fixes
from capviz.trace.fold import known_value
from capviz.trace.mutation import current
from capviz.trace.recapture import CHANGES, call_method, line_code
from capviz.trace.tensor import Tensor

REBOUND = "a capture tensor bound outside the capture"
"""The ``call`` of the refusal (the situation ``rebound_to_tensor``)."""

_UPDATE = re.compile(r"^\s*(?P<target>[\w.]+(?:\[[^\]=]+\][\w.]*)*)\s*=\s*(?P=target)\s*"
                     r"(?P<op>\*\*|//|[-+*/@%])\s*(?P<rest>.+?)\s*$")


class Place:
    """One name the captured function can rebind: an object's attribute, a module global,
    a closure cell, a list or dict item; what it held when the scope opened."""

    __slots__ = ("grew", "holder", "inner", "key", "kind", "label", "lifts", "path", "value")

    def __init__(self, kind: str, holder: Any, key: Any, label: str, value: Any,
                 inner: bool = False) -> None:
        self.kind, self.holder, self.key, self.label, self.value = kind, holder, key, label, value
        self.inner = inner  # inside a container: refused only where the capture read its array
        self.grew = False  # a container the last run grew with tensors, then given its items
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


_DEPTH = 3  # containers walked below an entry place (self.blocks[0].mW: two)
_ITEMS = 256  # items of one list or dict walked (the rest: not looked at)
_SNAPSHOT = 10_000  # items of a list, dict or deque copied to be put back (a longer one: data)
_LEAVES = (int, float, complex, str, bytes, bool, type(None), np.ndarray, np.generic)


def _inside(value: Any, label: str, depth: int, seen: set[int], path: tuple | None = None
            ) -> list[Place]:
    """The places inside ``value`` (a list's or dict's items, a plain object's attributes),
    ``depth`` levels down at most, each container once; ``path``: ``value``'s own ``(anchor,
    steps)`` from what the user holds (``None``: not known), given to its places."""
    if depth <= 0 or isinstance(value, _LEAVES) or id(value) in seen:
        return []
    if type(value) is list:
        seen.add(id(value))
        items = [(i, f"{label}[{i}]", "list", item) for i, item in enumerate(value[:_ITEMS])]
        places = [Place("items", value, None, label, list(value))] \
            if len(value) <= _SNAPSHOT else []
    elif type(value) is dict:
        seen.add(id(value))
        items = [(key, f"{label}[{key!r}]", "dict", item)
                 for key, item in itertools.islice(value.items(), _ITEMS)]
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
                 for key, item in itertools.islice(vars(value).items(), _ITEMS)]
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
    for key, item in itertools.islice(before.items(), _ITEMS):
        places.append(Place("dict", value, key, f"{label}[{key!r}]", item, inner=True))
    return places


def _slots(value: Any) -> list[tuple[str, Any]]:
    """``(name, value)`` of the ``__slots__`` attributes ``value``'s classes declare and it
    has set (``[]`` for a built-in type's object)."""
    kind = type(value)
    if kind.__module__ in ("builtins", "numpy") or isinstance(value, _LEAVES):
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
    return found[:_ITEMS]


def _plain_object(value: Any) -> bool:
    """An instance of a user class with a ``__dict__`` (not a module, class or function)."""
    return (isinstance(getattr(value, "__dict__", None), dict)
            and not isinstance(value, (type, types.ModuleType, types.FunctionType,
                                       types.MethodType, types.BuiltinFunctionType)))


def _function(fn: Callable) -> tuple[Any, Any]:
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
    owner, function = _function(fn)
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
            places += _inside(value, f"{first}.{key}", _DEPTH, seen,
                              anchored(owner, (True, key)))
    if owner is not None and not isinstance(owner, types.ModuleType):
        seen.add(id(owner))
        for key, value in _slots(owner):  # (class Model: __slots__ = ("W",))
            places.append(Place("slot", owner, key, f"{first}.{key}", value))
            places += _inside(value, f"{first}.{key}", _DEPTH, seen,
                              anchored(owner, (True, key)))
    if owner is not None and code is not None:
        places += _named_holders(owner, first, code, seen)
    parameters = code.co_varnames[:code.co_argcount] if code is not None else ()
    for label, value in _bound_arguments(fn, parameters):  # functools.partial(step, model)
        places += _inside(value, label, _DEPTH + 1, seen)
    if code is None:
        return places
    space = getattr(function, "__globals__", None)
    if isinstance(space, dict):
        for name in code.co_names:
            if name in space:
                places.append(Place("global", space, name, name, space[name]))
                places += _inside(space[name], name, _DEPTH, seen, (space, ((False, name),)))
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
        places += _inside(value, name, _DEPTH, seen, (cell, ((True, "cell_contents"),)))
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
    if kind.__module__ not in ("builtins", "numpy") and not isinstance(owner, types.ModuleType):
        for key in sorted(names & set(vars(kind))):
            value = vars(kind)[key]
            if type(value) is np.ndarray:
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
    that hold ndarrays, as places (``nonlocal acc; acc = acc + x`` rebinds one: hostile
    review 7, finding 7)."""
    if id(function) in seen:
        return []
    seen.add(id(function))
    places = []
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
        try:
            held = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if type(held) is np.ndarray:
            place = Place("cell", cell, name, f"{label}.<{name}>", held)
            place.path = (cell, ((True, "cell_contents"),))
            places.append(place)
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
            places += _inside(value, name, _DEPTH, seen)
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
        elif not isinstance(value, _OPAQUE):
            places.append(Place("dict", space, name, name, value))
            places += _inside(value, name, _DEPTH, seen)
    return places


def _called_places(fn: Any, seen: set[int], depth: int) -> list[Place]:
    """:func:`note` of ``fn``, and of the functions its code names in its module (``step``
    calling ``update``, which names the global ``W``), ``depth`` levels of them."""
    if id(fn) in seen or depth <= 0:
        return []
    seen.add(id(fn))
    places = note(fn)
    function = _function(fn)[1]
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
    for key, value in itertools.islice(list(space.items()), _ITEMS):
        if key.startswith("_") or isinstance(value, _OPAQUE):
            continue
        places.append(Place("global", space, key, f"{label}.{key}", value, inner=True))
        places += _inside(value, f"{label}.{key}", _DEPTH - 1, seen)
    return places


_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
_LIBRARY_DIRS = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib",
                                                               "purelib", "platlib")})


def put_back(places: list[Place], recorder: Any, source: Any = None, fn: Callable | None = None
             ) -> list[tuple[Place, np.ndarray]]:
    """Put the original object back in every place that holds a tensor of ``recorder`` now,
    or a new tuple, list or dict holding one, each refused (queued on ``recorder.pending``) at
    the line of the op that made the tensor. A place inside a container (``self.ws[0]``) is
    refused only where the capture read the array it held (a functional update of it): a
    scratch list the function fills with its own values (``calls.append(row)``) is not a
    rebinding; its items are put back all the same, and an attribute the capture added holding
    a tensor is removed (see the module docstring).

    Returns the places given a value made of ``create`` ops only where they held no array
    (a lazily made buffer: ``if self.mask is None: self.mask = np.tril(np.ones((n, n)))``),
    with that value, as NumPy computed it (:mod:`capviz.trace.fold`): not refused, the
    original put back for now, and bound by ``cv.capture`` once it has captured ``fn``."""
    read = None
    lists: dict[int, set[int]] | None = None
    binds: list[tuple[Place, np.ndarray]] = []
    walked = {id(p.holder) for p in places if p.kind == "items"}  # (their logs: effects.py)
    logs = {id(p.holder): (dict(p.holder) if type(p.holder) is dict else list(p.holder))
            for p in places if p.kind == "items" and  # as the call left them (effects.py)
            _tensor_in(p.holder, recorder, _DEPTH, every=True) is not None}
    for place in places:
        if place.kind in ("keys", "items"):
            continue
        found = place.get()
        if found is place.value:
            continue
        if isinstance(place.value, _NUMBERS) and type(found) is not Tensor:
            if not _same_number(place.value, found):  # self.t += 1: a replay repeats t
                place.put_back()
                _refuse_changed(place, found, recorder, source, fn)
            continue
        if isinstance(found, (np.ndarray, np.generic)) and type(place.value) is np.ndarray:
            if found.dtype != place.value.dtype or found.shape != place.value.shape or \
                    type(found) is not np.ndarray or \
                    found.tobytes() != place.value.tobytes():  # (an equal copy: no difference
                _refuse_numpy(place, found, recorder, source, fn)  # a replay makes)
            continue
        if type(found) is Tensor:
            if found._trace is not recorder:
                continue
            tensor = found
            made = _made_here(found, recorder, place.value)
            if made is not None:
                place.put_back()
                binds.append((place, made))
                continue
        else:
            tensor = _tensor_in(found, recorder, _DEPTH) if type(found) in _SEQUENCES else None
            if tensor is None:
                continue
        if place.inner and type(found) is Tensor:
            if read is None:
                read = {id(ref()) for ref in recorder.graph.constant_origins.values()}
            if lists is None:  # (before any item is put back)
                lists = {id(p.holder): _kept(p.holder, p.value) for p in places
                         if p.kind == "items" and type(p.holder) is list}
            if isinstance(place.value, _NUMBERS) and place.kind in ("dict", "list") and \
                    id(place.holder) in walked and not _reads_itself(_line_of(found),
                                                                     place.label):
                continue  # a value logged over a number (hist["mean"] = x.mean(), a list
                #           emptied and filled): an effect of the walked container's (below)
            if not _read_by_capture(place.value, read) and not _stored_over(place, lists) \
                    and not isinstance(place.value, _NUMBERS) \
                    and not (place.value is None and _accumulates(recorder, found, place)):
                place.put_back()  # not refused: a scratch item or attribute (self.l1.x = x)
                if place.value is None and place.kind == "attribute" and place.path and \
                        _of_data(found, recorder) and not _asks_for(place.holder, fn):
                    holder = _Held(place.holder, place.label.rsplit(".", 1)[0],
                                   (place.path[0], place.path[1][:-1]))
                    effects.record_attribute(holder, place.key, found, recorder)  # set again
                continue  #                                               by each replay
        place.put_back()
        source = tensor._data.source
        text = line_code(linecache.getline(source[0], source[1])) if source else ""
        reason = _CONTAINER_REASON if tensor is not found else _reason(text, source) \
            if isinstance(place.value, np.ndarray) else _created_reason(place.label) \
            if place.value is None else _NUMBER_REASON if isinstance(place.value, _NUMBERS) \
            and _reads_itself(text, place.label) else _RETURN_REASON
        message = explain(Failure("unsupported_op", REBOUND, place.label, source,
                                  UserCode("other", shorten(text)), None, reason))
        recorder.pending.append(("unsupported_op", REBOUND, message, source))
        if tensor is found and rebindable(place, found, recorder):
            place.lifts = message  # (capviz.capture may capture it lifted: trace/rebinding.py)
    for place in places:
        if place.kind == "items":
            if read is None:
                read = {id(ref()) for ref in recorder.graph.constant_origins.values()}
            _items_back(place, recorder, read, logs.get(id(place.holder)))
            _numpy_logged(place, recorder, source, fn)
        elif place.kind == "keys":
            binds += _added_removed(place, recorder, fn)
    return binds


REBINDABLE = frozenset(("attribute", "slot", "global", "dict", "list", "cell"))
"""The kinds of :class:`Place` a replay can bind a new array to (one reference each)."""


def rebindable(place: Place, tensor: Tensor, recorder: Any) -> bool:
    """Whether ``place``, which held a plain ndarray, was rebound to ``tensor``, a fresh array
    of the same shape and dtype computed by the capture (``self.W = self.W - lr * g``,
    ``BN_PARAM["running_mean"] = m * running_mean + (1 - m) * mean``): a replay can bind the
    new value there as an eager call does (:mod:`capviz.trace.rebinding`)."""
    held = place.value
    if place.kind not in REBINDABLE or type(held) is not np.ndarray or not held.ndim or \
            type(tensor) is not Tensor or tensor._trace is not recorder:
        return False  # (a 0-d array: eager may bind NumPy's scalar, a replay an array)
    node = current(recorder, tensor)
    if node.kind != "op" or node.shape != held.shape or node.dtype != held.dtype:
        return False
    return fresh(node)  # a fresh array, never a view of an operand (what eager binds)


def fresh(node: Any) -> bool:
    """Whether op ``node``'s result is an array NumPy allocates, never a view of an operand."""
    op = ops.OPS.get(node.op)
    return op is not None and (op.out or op.random or node.op in _FRESH)


_FRESH = frozenset(("create", "copy", "astype", "where", "clip", "concatenate", "stack", "dot",
                    "roll", "zeros_like", "ones_like", "full_like", "setitem", "index_put",
                    "mean"))
"""Ops with no ``out`` whose result NumPy always allocates (as replay/plan.py's FRESH_OPS)."""

_NUMBERS = (bool, int, float, complex, np.generic)


def _same_number(before: Any, now: Any) -> bool:
    if type(before) is not type(now):
        return False
    try:
        return bool(before == now) or (before != before and now != now)  # (NaN is NaN)
    except (TypeError, ValueError):
        return False


def _refuse_changed(place: Place, now: Any, recorder: Any, source: Any,
                    fn: Callable | None) -> None:
    """Refuse a Python number the call changed (``self.t += 1`` with no array state, review 3
    finding 25), at the line of ``fn`` that writes it, else at ``source`` (the capture's
    line): a replay repeats what the capture computed from its value, and does not change
    it."""
    reason = (f"the call changes {place.label} ({place.value!r} -> {now!r}) every time it "
              "runs, and the capture put it back")
    where, text = writing_line(fn, place.label) if fn is not None else (None, "")
    if where is None and fn is not None:  # changed by a call (next(self.sched) moves
        where, text = naming_line(fn, place.label)  # self.sched.i): the line naming its owner
    if where is not None:
        source = where
    message = explain(Failure("unsupported_op", CHANGES, place.label, source,
                              UserCode("other", shorten(text)), None, reason))
    recorder.pending.append(("unsupported_op", CHANGES, message, source))


BY_NUMPY = "an array NumPy computed bound outside the capture"
"""The ``call`` of the situation ``rebound_by_numpy``."""


def _refuse_numpy(place: Place, found: np.ndarray, recorder: Any, source: Any,
                  fn: Callable | None) -> None:
    """Put back the array ``place`` held, which the call rebound to ``found``, an array NumPy
    computed with no tensor (``self.W = self.W * 0.99``, ``np.roll(self.W, 1)``, a swap):
    the capture ran the update once and no replay would (hostile review 7, finding 8).
    Refused at the line of ``fn`` that binds it (else ``source``); marked to be captured as
    a rebind state (:mod:`capviz.trace.rebinding`: lifted, the name holds a tensor, so the
    update is recorded) where the new array has the old one's shape and dtype."""
    place.put_back()
    where, text = writing_line(fn, place.label) if fn is not None else (None, "")
    if where is None and fn is not None:  # (self.W, self.V = self.V, self.W)
        where, text = writing_line(fn, place.label, unpacked=True)
    fix = f"or pass {place.label} as an input and return its new value"
    match = re.match(rf"^\s*{_label_pattern(place.label)}\s*=(?!=)(?P<rest>.*)$", text)
    if match and re.search(rf"(?<![\w.]){_label_pattern(place.label)}(?!\w)",
                           match["rest"]):
        new = re.sub(rf"(?<![\w.]){_label_pattern(place.label)}(?![\w(])",
                     f"cv.constant({place.label})", match["rest"].strip(), count=1)
        fix = f"compute it from a tensor, which the capture records: {place.label} = {new}, {fix}"
    else:
        fix = f"compute it from a tensor (cv.constant({place.label})), which the capture " \
              f"records, {fix}"
    reason = (f"it held {_shown(place.value)} when the call started and NumPy made it "
              f"{_shown(found)}")
    message = explain(Failure("unsupported_op", BY_NUMPY, place.label, where or source,
                              UserCode("other", shorten(text)), None, f"{reason}; {fix}"))
    recorder.pending.append(("unsupported_op", BY_NUMPY, message, where or source))
    if place.kind in REBINDABLE and type(found) is np.ndarray and \
            found.shape == place.value.shape and found.dtype == place.value.dtype:
        place.lifts = message


def _shown(value: np.ndarray) -> str:
    text = np.array2string(value, threshold=6, precision=6)
    return shorten(f"{text} ({value.dtype}{list(value.shape)})", 60)


def _of_data(tensor: Tensor, recorder: Any) -> bool:
    """Whether ``tensor`` is computed from the data: an input, a state, a constant read from an
    outside array (not a buffer of constants only, a memo: hostile review 6, finding 25)."""
    graph = recorder.graph
    stack, seen = [current(recorder, tensor)], set()
    while stack:
        n = stack.pop()
        if n.index in seen:
            continue
        seen.add(n.index)
        if n.kind in ("input", "state") or (n.kind == "constant" and
                                            n.index in graph.constant_origins):
            return True
        stack.extend(a for a in n.args if type(a) is type(n))
    return False


def _made_here(tensor: Tensor, recorder: Any, held: Any) -> np.ndarray | None:
    """The value of ``tensor`` where it is an array made of ``create`` ops and constants that
    read no outside array, bound where no array was (``held``: ``None`` or no attribute),
    else ``None``."""
    if held is not None and held is not _ABSENT:
        return None
    graph = recorder.graph
    node = current(recorder, tensor)
    stack, seen = [node], set()
    while stack:  # (a constant read from an outside array: a value of this call)
        n = stack.pop()
        if n.index in seen:
            continue
        seen.add(n.index)
        if n.kind == "constant" and n.index in graph.constant_origins:
            return None
        stack.extend(a for a in n.args if type(a) is type(n))
    value = known_value(graph, node, recorder.known)
    if type(value) is not np.ndarray or not value.ndim:
        return None
    return value.copy(order="K")


_ABSENT = object()  # (an attribute the capture added: no value before it)


_SEQUENCES = (tuple, list, dict, collections.deque)
_RETURN_REASON = ("the capture put the original object back, and a replay can return a value "
                  "but not bind it to a name; keep it a result: return it (return out, loss) "
                  "and set the attribute from what the replay returns")
def _line_of(tensor: Tensor) -> str:
    source = tensor._data.source
    return line_code(linecache.getline(source[0], source[1])) if source else ""


def _reads_itself(text: str, label: str) -> bool:
    """Whether line ``text`` reads ``label`` right of its ``=`` (``ema = 0.9 * ema + ...``:
    a running value, not a result logged there)."""
    _, equals, right = text.partition("=")
    return bool(equals) and re.search(rf"(?<![\w.]){_label_pattern(label)}(?!\w)",
                                      right) is not None


_NUMBER_REASON = (
    "the capture put the number back, and a replay computes the new one but cannot store it "
    "there, so every replay would start from the same number; keep it in a 0-d ndarray made "
    "before the capture and written in place (ema = np.zeros(()); ema[...] = 0.9 * ema + "
    "0.1 * x.sum()), which the capture records as a state")
_CONTAINER_REASON = (
    "the capture put the original object back, and a replay cannot bind a new tuple or list "
    "to a name; keep each value in an ndarray written in place (self.h[...] = h), which the "
    "capture records as a state, or return them")


def _tensor_in(value: Any, recorder: Any, depth: int, every: bool = False) -> Tensor | None:
    """A tensor of ``recorder`` inside tuple, list or dict ``value`` (``depth`` levels; the
    first :data:`_ITEMS` items of each, or ``every`` item of ``value`` itself)."""
    items = value.values() if type(value) is dict else value
    for item in items if every else itertools.islice(items, _ITEMS):
        if type(item) is Tensor:
            if item._trace is recorder:
                return item
        elif depth > 1 and type(item) in _SEQUENCES:
            found = _tensor_in(item, recorder, depth - 1)
            if found is not None:
                return found
    return None


def _items_back(place: Place, recorder: Any, read: set[int], left: Any = None) -> None:
    """The items a walked list, dict or deque held when the scope opened, put back when it
    holds a tensor of ``recorder`` now (appended, or bound to an item the capture did not
    read). Refused when an array the capture read from it is no longer where it was (a deque
    of frames appended to, which drops its oldest): the graph holds the arrays it read, and
    eager calls move them on."""
    holder = place.holder
    tensor = _tensor_in(holder, recorder, _DEPTH, every=True)  # (past the walked items too)
    if tensor is None and left is not None:  # (its items put back already: a list emptied
        tensor = _tensor_in(left, recorder, _DEPTH, every=True)  # and filled, slots set)
    if tensor is None:
        return
    before = place.value
    grown = _grown(holder, before, recorder, place.label)
    place.grew = type(holder) is not dict and any(  # (recapture.grown: a list read after it
        type(v) is Tensor and v._trace is recorder and _of_data(v, recorder)
        for v in list(holder)[len(before):])  # grew with values of the data, not a memo of
    #                                           constants: if not DEQ: DEQ.append(np.tril(..)))
    logged = None if grown is not None or left is None else effects.logged(
        place, left, recorder, lambda t: _of_data(t, recorder))  # (left: as the call left it)
    if type(holder) is dict:
        moved = any(holder.get(key, holder) is not item for key, item in before.items()
                    if _read_by_capture(item, read))
        holder.clear()
        holder.update(before)
    else:
        now = list(holder)
        moved = any(k >= len(now) or now[k] is not item for k, item in enumerate(before)
                    if _read_by_capture(item, read))
        if type(holder) is list:
            holder[:] = before
        else:
            holder.clear()
            holder.extend(before)
    if moved:
        source = tensor._data.source
        text = line_code(linecache.getline(source[0], source[1])) if source else ""
        message = explain(Failure("unsupported_op", REBOUND, place.label, source,
                                  UserCode("other", shorten(text)), None, _STORED_REASON))
        recorder.pending.append(("unsupported_op", REBOUND, message, source))
    elif grown is not None:
        key, tensor = grown
        label = f"{place.label}[{key!r}]"
        source = tensor._data.source
        text = line_code(linecache.getline(source[0], source[1])) if source else ""
        message = explain(Failure("unsupported_op", REBOUND, label, source,
                                  UserCode("other", shorten(text)), None,
                                  _created_reason(label)))
        recorder.pending.append(("unsupported_op", REBOUND, message, source))
    elif logged is not None:  # a log: appended or set again by each replay, or refused
        effects.record(place, left, logged, recorder)


def _numpy_logged(place: Place, recorder: Any, source: Any, fn: Callable | None) -> None:
    """Refuse, at the line of ``fn`` that logs it, an ndarray NumPy computed with no tensor
    that the call put in walked container ``place.holder`` (``self.log.append(self.W * 1.0)``
    after ``self.W -= ...``, ``.copy()``, a view: hostile review 7, finding 17: the capture left
    the second pass's planted values there, and no replay logs), and give it its items back."""
    holder, before = place.holder, place.value
    if type(holder) is dict:
        new = [v for k, v in holder.items() if before.get(k, place) is not v]
    else:
        now, k = list(holder), 0
        while k < min(len(now), len(before)) and now[k] is before[k]:
            k += 1
        new = now[k:] if len(now) != len(before) or k < len(now) else []
    if not any(isinstance(v, (np.ndarray, np.generic)) and type(v) is not Tensor for v in new):
        return
    if type(holder) is dict:
        holder.clear()
        holder.update(before)
    elif type(holder) is list:
        holder[:] = before
    else:
        holder.clear()
        holder.extend(before)
    where, text = None, ""
    found = _source_lines(fn) if fn is not None else None
    if found is not None:
        code, lines, start = found
        logging = re.compile(effects.logging_pattern(place.label))
        for offset, line in enumerate(lines[1:], 1):
            if logging.search(line_code(line)):
                where, text = _at(code, start + offset), line_code(line)
                break
    message = explain(Failure("unsupported_op", effects.KEPT, place.label, where or source,
                              UserCode("other", shorten(text)), None, (
                                  "NumPy computed the value it logs there without a tensor, "
                                  "so no replay logs it, and the capture put the items "
                                  "back")))
    recorder.pending.append(("unsupported_op", effects.KEPT, message, where or source))


def _grown(holder: Any, before: Any, recorder: Any, label: str) -> tuple[Any, Tensor] | None:
    """An item the capture put where ``holder`` held nothing or ``None`` (``before``: its items
    when the scope opened) whose value grew from the data out of a buffer the capture made
    (:func:`grew_from_made`):
    an accumulator made on the first call (``if "s" not in self.stats: self.stats["s"] =
    np.zeros(3)``, then ``self.stats["s"] += x``), which a later call finds and adds to, where
    every replay starts again from the zeros (review 6, finding 15: silent). ``(key, tensor)``,
    or ``None``. A value logged there (``self.history.append(loss)``) grows from no such
    buffer: put back, not refused (a Python side effect)."""
    if type(holder) is dict:
        items = [(k, v) for k, v in holder.items() if before.get(k) is None]
    elif type(holder) is list:
        items = [(k, v) for k, v in enumerate(holder) if k >= len(before) or before[k] is None]
    else:
        return None
    for key, value in items[:_ITEMS]:
        tensor = _tensor_in([value], recorder, _DEPTH)
        if tensor is not None and _accumulates(recorder, tensor, label):
            return key, tensor
    return None


_MADE = frozenset({"create", "copy", "zeros_like", "ones_like", "full_like"})


def _accumulates(recorder: Any, tensor: Tensor, where: Any) -> bool:
    """Whether ``tensor``, put where a walked place held nothing or ``None`` (``where``: the
    place, or its container's label), is an accumulator made on the first call: it grew from
    a buffer the capture made (:func:`grew_from_made`), or it is a value of the data and the
    function that made it tests whether the container holds it yet (``"s" not in
    self.stats``, ``acc[0] is None``, ``self.buf.get(k)``, ``hasattr(self.stats, ...)``, an
    ``except KeyError``: the
    first call stores a copy, the later ones add to it; review 6, finding 15). Whatever this
    call's results read: a later call's may read it (``out = x if "s" not in d else x + d["s"]``:
    review 6 on 1b2de65), and a running mean kept in a dict (CS231n's
    ``bn_param["running_mean"]``) moves with eager calls, never with replays."""
    grew, data = _growth(recorder, tensor)
    if grew and data:
        return True
    if not data:
        return False
    label = where.label.rsplit("[", 1)[0] if isinstance(where, Place) else where
    source = tensor._data.source
    if not source or not label:
        return False
    name = re.escape(label)
    tested = re.compile(rf"\bin\s+{name}\b(?!\s*\[)|{name}\s*\[[^\]]*\]\s+is\s+(?:not\s+)?None"
                        rf"|\b{name}\.(?:get|setdefault)\(|hasattr\(\s*{name}\b"
                        rf"|\bnot\s+{name}\s*:|\bexcept\b.*\b(?:KeyError|IndexError|LookupError)\b")
    return any(tested.search(text) for _, text in
               state_fixes.function_lines(source[0], source[1], source[2]))


def grew_from_made(recorder: Any, tensor: Tensor) -> bool:
    """Whether ``tensor`` grew from a buffer made in the capture (an op takes the result of
    NumPy's creation functions or a copy: ``np.zeros(3)`` then ``+= x``, ``x.copy()`` then
    ``+= x``) and from the data (an input, a state, a draw)."""
    grew, data = _growth(recorder, tensor)
    return grew and data


def _growth(recorder: Any, tensor: Tensor) -> tuple[bool, bool]:
    """(grew from a buffer made in the capture, computed from the data) of ``tensor``."""
    grew = data = False
    stack, seen = [current(recorder, tensor)], set()
    while stack and len(seen) < 4096:
        node = stack.pop()
        if node.index in seen:
            continue
        seen.add(node.index)
        args = [a for a in node.args if type(a) is type(node)]
        if node.kind == "op":
            grew = grew or any(a.kind == "op" and a.op in _MADE for a in args)
            op = ops.OPS.get(node.op)
            data = data or (op is not None and op.random)
        elif node.kind != "constant":
            data = True
        if grew and data:
            break
        stack.extend(args)
    return grew, data


_STORED_REASON = (
    "the capture read arrays from it that a value of the capture then moved on, put back what "
    "it held, and a replay cannot store into it; keep the values in one ndarray written in "
    "place (buf[...] = np.concatenate([buf[1:], x[None]])), or pass them and return the new "
    "ones")


class _Held:
    """The object holding an attribute, as :func:`capviz.trace.effects.record_attribute`
    takes it: the object, its label and its path."""

    __slots__ = ("holder", "label", "path")

    def __init__(self, holder: Any, label: str, path: tuple) -> None:
        self.holder, self.label, self.path = holder, label, path


_ASKS = re.compile(r"\b(?:getattr|hasattr|vars)\s*\(|AttributeError|__dict__")


def _asks_for(holder: Any, fn: Callable | None) -> bool:
    """Whether the class of ``holder`` or ``fn`` asks whether an attribute exists
    (``getattr(self, "prev", x)``, ``hasattr``, ``except AttributeError``, ``vars``): a later
    call may then read what the last one set, which the graph cannot (or the source is not
    found)."""
    try:
        text = inspect.getsource(type(holder))
    except (OSError, TypeError):
        return True
    found = _source_lines(fn) if fn is not None else None
    if found is not None:
        text += "".join(found[1])
    return _ASKS.search(text) is not None


def _added_removed(place: Place, recorder: Any, fn: Callable | None = None
                   ) -> list[tuple[Place, np.ndarray]]:
    """The attributes the capture added to a walked object that hold a tensor of
    ``recorder`` (``self.x = x``), removed; those holding an array made of ``create`` ops
    (:func:`_made_here`), with their values, to bind once ``fn`` is captured."""
    attributes = vars(place.holder)
    binds = []
    shadowed = vars(type(place.holder))
    for key in [k for k in attributes if k not in place.value]:
        value = attributes[key]
        if type(value) is Tensor and value._trace is recorder and \
                type(shadowed.get(key)) is np.ndarray:  # (over the class's array it read)
            del attributes[key]
            _refuse_shadowing(place, key, value, recorder)
        elif type(value) is Tensor and value._trace is recorder:
            made = _made_here(value, recorder, _ABSENT)
            if made is not None:
                binds.append((Place("keys", place.holder, key, f"{place.label}.{key}", None),
                              made))
            elif place.path is not None and _of_data(value, recorder) and \
                    not _asks_for(place.holder, fn):
                effects.record_attribute(place, key, value, recorder)  # self.x = x: set again
            del attributes[key]  #                                     by each replay
        elif type(value) in _SEQUENCES and _tensor_in(value, recorder, _DEPTH) is not None:
            items = value.values() if type(value) is dict else value
            made = [t for t in items if type(t) is Tensor and t._trace is recorder
                    and t._data.kind == "op"]  # (its line: one the function computed)
            tensor = made[0] if made else _tensor_in(value, recorder, _DEPTH)
            del attributes[key]  # (self.cache = (x, out): no replay builds it; review 7 #35)
            if _of_data(tensor, recorder):
                _refuse_kept(f"{place.label}.{key}", tensor, recorder)
    return binds


def _refuse_kept(label: str, tensor: Tensor, recorder: Any) -> None:
    """Refuse a tuple, list or dict of values of the capture the call bound to a new attribute
    (a layer's ``self.cache = (x, out)``), which no replay builds, at the line that made it."""
    source = tensor._data.source
    where, text = source, ""
    if source:
        for line, code in state_fixes.function_lines(source[0], source[1], source[2]):
            if re.search(rf"(?<![\w.]){re.escape(label.split('.', 1)[-1])}\s*=(?!=)", code) \
                    or re.search(rf"\.{re.escape(label.rsplit('.', 1)[-1])}\s*=(?!=)", code):
                where, text = (source[0], line, source[2]), line_code(code)
                break
    message = explain(Failure("unsupported_op", REBOUND, label, where,
                              UserCode("other", shorten(text)), None, _CONTAINER_REASON))
    recorder.pending.append(("unsupported_op", REBOUND, message, where))


def _refuse_shadowing(place: Place, key: str, tensor: Tensor, recorder: Any) -> None:
    """Refuse an instance attribute the call bound over its class's array (``self.W = self.W
    - 0.1 * x`` with ``W`` a class attribute: the first call makes the instance's, which later
    calls read; hostile review 7, finding 13, silent)."""
    label = f"{place.label}.{key}"
    source = tensor._data.source
    text = line_code(linecache.getline(source[0], source[1])) if source else ""
    reason = (f"the call binds it over the class attribute {type(place.holder).__name__}.{key},"
              " which later calls stop reading, and the capture removed it; create "
              f"{label} in __init__ (an array of its own: {label} = "
              f"{type(place.holder).__name__}.{key}.copy()), so that the call rebinds or "
              "writes it as a state")
    message = explain(Failure("unsupported_op", REBOUND, label, source,
                              UserCode("other", shorten(text)), None, reason))
    recorder.pending.append(("unsupported_op", REBOUND, message, source))


def _stored_over(place: Place, lists: dict[int, set[int]]) -> bool:
    """Whether the call stored a value over the array a place inside a container held, which a
    replay cannot store (``bn["running_mean"] = m * running_mean + ...``, ``self.opt.m = ...``,
    ``self.frames[2] = obs * 1.0``; the hostile review 3, finding 34): a dict item or an
    attribute that held an ndarray, or a list item that did where the list still holds another
    item where it held it (``lists``: those positions, per list; a slot written, not a scratch
    list emptied and filled again: ``calls.clear(); calls.append(row)``)."""
    if not isinstance(place.value, np.ndarray):
        return False
    if place.kind != "list":
        return True
    return bool(lists.get(id(place.holder), set()) - {place.key})


def _kept(now: list, before: list) -> set[int]:
    """The positions of ``now`` that hold the item ``before`` held there."""
    return {k for k, item in enumerate(before) if k < len(now) and now[k] is item}


def _read_by_capture(value: Any, read: set[int]) -> bool:
    """Whether ``value`` is an ndarray whose memory the capture read as a constant."""
    if not isinstance(value, np.ndarray):
        return False
    root = value
    while isinstance(root.base, np.ndarray):
        root = root.base
    return id(root) in read


def _reason(text: str, source: Any = None) -> str:
    """Why, and the fix: the line as an in-place write where it is ``a = a <op> b``."""
    why = "the capture put the original object back"
    match = _UPDATE.match(text)
    if match is None:
        in_place = state_fixes.in_place(text, source)
        if in_place is not None:  # self.h = f(self.h): the one form that captures
            return f"{why}; write the new value into the array in place: {in_place}"
        return (f"{why}; write the new value into the array in place (a[...] = value, or "
                "a -= d), which the capture records as a state, or return it")
    return (f"{why}; write in place: {match['target']} {match['op']}= {match['rest']} (the "
            "capture records it as a state)")


def _created_reason(label: str) -> str:
    """Why, and the fix, for a place that held None and the call bound a new array to (lazy
    creation: ``if self.v is None: self.v = np.zeros_like(self.W)``)."""
    return ("the capture put None back, and a replay cannot create an attribute or bind a "
            f"name; create {label} before the capture (in __init__, or by one eager call), so "
            "that the call writes it in place, which the capture records as a state")


def _label_pattern(label: str) -> str:
    """A regular expression of the path ``label`` as code may spell it: a string key written
    with either quote (``self.stats['n']`` is ``self.stats["n"]`` in the user's line: hostile
    review 6, finding 8, the refusal fell back to the ``cv.capture`` line)."""
    parts = re.split(r"\[('(?:[^'\\]|\\.)*')\]", label)
    pattern = []
    for k, part in enumerate(parts):
        if k % 2 == 0:
            pattern.append(re.escape(part))
        else:
            text = part[1:-1]
            pattern.append(rf"\[\s*(?:'{re.escape(text)}'|\"{re.escape(text)}\")\s*\]")
    return "".join(pattern)


_GROWING = r"\.(?:append|extend|appendleft|extendleft|insert)\("
"""The calls that grow a list or deque without reading it."""


def _source_lines(fn: Callable) -> tuple[Any, list[str], int] | None:
    """``(code, lines, first line number)`` of ``fn``'s function, or ``None`` (no source)."""
    function = _function(fn)[1]
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    try:
        lines, start = inspect.getsourcelines(function)
    except (OSError, TypeError):
        return None
    return code, lines, start


def _at(code: Any, line: int) -> tuple[str, int, str]:
    """The ``(file, line, function)`` source of ``line`` in ``code``'s function."""
    return display_file(code.co_filename), line, code.co_name


def reading_line(fn: Callable, label: str) -> tuple[Any, str]:
    """``((file, line, function), code)`` of the first line of ``fn`` that reads the list or
    dict at path ``label`` (its length, an item, an iteration, its truth: anything but a call
    that grows it, ``label.append(...)``, or a store into an item), or ``(None, "")``, also
    where a line of ``fn`` empties it (``label.clear()``, ``label[:] = ...``)."""
    found = _source_lines(fn)
    if found is None:
        return None, ""
    code, lines, start = found
    name = _label_pattern(label)
    mention = re.compile(rf"(?<![\w.]){name}(?!\w)")
    growing = re.compile(rf"(?<![\w.]){name}{_GROWING}")
    stored = re.compile(rf"^(?<![\w.]){name}\s*\[[^\]]*\]\s*=(?!=)")
    cleared = re.compile(rf"(?<![\w.]){name}\.clear\(\s*\)|^{name}\s*\[\s*:\s*\]\s*=(?!=)"
                         rf"|^del\s+{name}\s*\[\s*:\s*\]")
    if any(cleared.search(line_code(line)) for line in lines[1:]):
        return None, ""  # a scratch list each call empties (self.acts.clear()): its reads
        #                  see this call's items only (hostile review 6, finding 23)
    for offset, line in enumerate(lines[1:], 1):  # (not the def line)
        text = line_code(line)
        rest = stored.sub("", growing.sub("(", text))
        if mention.search(rest) and not _message_only(text, lines[offset + 1:]):
            return _at(code, start + offset), text
    return None, ""


_MESSAGE_ONLY = re.compile(
    r"^(?!.*:=)(?:_\s*=\s*(?:f?[\"'].*|str\(.*\)|repr\(.*\))"
    r"|(?:print|warnings\.warn|logging\.\w+|(?:self\.)?_?log(?:ger)?\.(?:debug|info|warning|"
    r"error|critical|exception|log))\(.*\))\s*$")
"""A line whose value reaches no number of the capture: a message made and dropped (``_ =
f"step {len(self.log)}"``), printed or logged (``print(...)``, ``logger.info(...)``); a read
of a grown list there changes no value the graph keeps (hostile review 6, listreads.py LogLen,
refused since 1620fb3). A walrus (``:=``) keeps the value: not such a line."""


def _message_only(text: str, after: list[str]) -> bool:
    """Whether line ``text`` is :data:`_MESSAGE_ONLY`, and where it binds ``_``, no line
    ``after`` it reads ``_`` (``self.W -= 0.001 * len(_) * x``: a number from the message,
    hostile review 7, finding 16)."""
    if not _MESSAGE_ONLY.match(text):
        return False
    return not text.startswith("_") or not any(
        _UNDERSCORE.search(line_code(line)) for line in after)


_UNDERSCORE = re.compile(r"(?<![\w.'\"])_(?![\w'\"])")


def naming_line(fn: Callable, label: str) -> tuple[Any, str]:
    """``((file, line, function), code)`` of the first line of ``fn`` that names the longest
    owner on the path ``label`` (``self.sched`` of ``self.sched.i``, which ``next(self.sched)``
    changes in a method of another object: hostile review 6, finding 8), or ``(None, "")``."""
    found = _source_lines(fn)
    if found is None:
        return None, ""
    code, lines, start = found
    owners = [label[:k] for k in range(len(label), 0, -1)
              if k == len(label) or label[k] in ".["]
    for owner in owners[1:]:
        if owner == "self":
            break
        name = re.compile(rf"(?<![\w.]){_label_pattern(owner)}(?![\w])")
        for offset, line in enumerate(lines[1:], 1):  # (not the def line)
            text = line_code(line)
            if name.search(text):
                return _at(code, start + offset), text
    return None, ""


def writing_line(fn: Callable, label: str, unpacked: bool = False) -> tuple[Any, str]:
    """``((file, line, function), code)`` of the first line of ``fn`` that writes ``label``
    (``label op= ...``, ``label[...] = ...``, ``out=label``; ``unpacked``: also one of the
    targets of ``a, label = ...``), or ``(None, "")``."""
    found = _source_lines(fn)
    if found is None:
        return None, ""
    code, lines, start = found
    name = _label_pattern(label)
    target = re.compile(rf"^{name}\s*(?:\[.*\]\s*)?(?:\*\*|//|>>|<<|[-+*/%@&|^])?=(?!=)"
                        rf"|\bout\s*=\s*\(?{name}\b(?![.\[])" + (
                            rf"|^[^=]*,\s*{name}\s*(?:,[^=]*)?=(?!=)"
                            rf"|^\(?{name}\s*,[^=]*=(?!=)" if unpacked else ""))
    for offset, line in enumerate(lines):
        text = line_code(line)
        if target.search(text):
            return _at(code, start + offset), text
    return None, ""
