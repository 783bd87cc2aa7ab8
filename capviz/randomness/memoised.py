"""Memo caches a capture filled: found by what the capture wrote into them, and left as one eager
call leaves them.

Inside a capture NumPy's creation functions return capture tensors (:mod:`capviz.randomness.
creation`), so a helper that memoises a constant it builds (``causal_mask(n) = np.tril(np.ones((n,
n)))``, a window, a table of positions) keeps a capture tensor: after the scope closes that tensor
is dead, and the user's next eager call of the helper would get it and raise
``ScopeClosedError`` (review 3, finding 24; review 4, finding 12; review 5, finding 9). Memos
come in every form: ``functools.lru_cache``, a module's or a class's dict, a dict in a closure
cell, an ``OrderedDict``, a ``defaultdict``, a function attribute (``f.cache = {}``), a dict
inside a dict, a list.

Noting every dict of the user's namespaces before each capture costs what those dicts hold
(review 5, finding 10: 71.7 ms against 0.96 ms with 50 dicts of 5,000 items). So the memos are
found by the code that ran instead: :class:`Seen` is told each user frame the capture recorded an
op in or under (:attr:`capviz.trace.scopes.ScopeTracker.on_frame`: comprehensions and callers
included), and notes the containers that frame's code can name: the globals its code names
(``_MEMO``, and inside a user's module, class or function the attributes it names:
``helpers._MEMO``, ``Layer._shared``, ``mask.cache``, a function's closure cells), its closure
cells, and the attributes of its ``self`` its code names. A capture that runs no user code
naming a container pays nothing; the cost grows with the code that ran, not with the namespace.

When the scope exits, :func:`settle` looks in each noted container for the tensors of the
capture, a state's tensor aside (a lifted array stored there is
:func:`capviz.trace.lifted.discard`'s). What it leaves there is what the container held when
first met: a capture computes nothing, and a replay stores nothing into Python containers (the
graph computes the value again), so the user's next eager call finds the memo as before and
fills it with an ndarray, as an eager call does. Besides:

- an item that held an ndarray the capture stored a value over (a counter ``box["n"] =
  box["n"] + np.ones(1)``) is refused, as :mod:`capviz.trace.rebound` refuses it in the
  containers the walk reaches (every replay would repeat the first count);
- a value of the data (computed from an input, a state, a draw) cannot be known when capturing,
  and a replay cannot store it: refused, naming the container and the line that made the value
  (``kept_in_container``);
- an item the container held already when first met (a helper storing a value its caller made
  before recording anything itself) gets the value an eager call leaves there: computed with
  NumPy (:func:`capviz.trace.fold.known_value`) where it is made of NumPy's creation functions
  and literals, else removed and refused;
- an ``lru_cache`` holding a capture tensor is cleared (capviz cannot store into one): the next
  call computes the value again, as an ndarray. A cache only read keeps its entries.

Not seen: a container only a frame that recorded nothing and has no recording frame below it
names, one reached through a local variable bound to it only inside the frame, or one past
:data:`_SCAN` items (the user's next eager call then raises ``ScopeClosedError``, naming the
tensor: never a silent difference); the captured function's own containers are the walk's of
:mod:`capviz.trace.rebound`, which runs first.
"""

from __future__ import annotations

import functools
import gc
import linecache
import os
import sys
import sysconfig
import types
from typing import Any

import numpy as np

from capviz import ops
from capviz.core.source import is_user_file
from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.trace import places as walk
from capviz.trace import rebound
from capviz.trace.fold import known_value
from capviz.trace.mutation import current
from capviz.trace.recapture import line_code
from capviz.trace.tensor import Tensor

_WRAPPER = functools._lru_cache_wrapper  # type: ignore[attr-defined]
_SCAN = 100_000  # items of one container looked at (a larger one: data, not a memo)
_DEPTH = 3  # containers looked into below a noted one (CACHE["k"]["sub"]: two)
_LIBRARIES = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib",
                                                            "platlib")})

KEPT = "a capture tensor kept in a container"
"""The ``call`` of the refusal (the situation ``kept_in_container``)."""

_CODES: dict[int, tuple[Any, bool]] = {}  # code id -> (code, the user's code)


def _users(code: types.CodeType) -> bool:
    hit = _CODES.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    file = code.co_filename
    mine = is_user_file(file) and not file.startswith(_LIBRARIES)
    if len(_CODES) > 100_000:
        _CODES.clear()
    _CODES[id(code)] = (code, mine)
    return mine


_CAPTURE_RUN = (os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "capture_fn.py"), "_run")
"""The frame of ``cv.capture`` that calls the captured function (file, function name)."""


def _local_of_a_caller(frame: types.FrameType, name: str, value: Any) -> bool:
    """Whether closure variable ``name`` of ``frame`` is a local of a frame ``cv.capture``'s
    call of the captured function started (``calls = []`` in the captured function, appended to
    by a nested ``row_function``): it dies with that call, so it is no memo. A cell of a frame
    below that call (the code that called ``cv.capture``: its locals outlive the capture), of a
    function that has returned (a factory's accumulator), or of the scope form's frame stays
    noted."""
    caller = frame.f_back
    while caller is not None:
        code = caller.f_code
        if (code.co_filename, code.co_name) == _CAPTURE_RUN:
            return False
        if name in code.co_cellvars and caller.f_locals.get(name) is value:
            return _under_capture(caller)
        caller = caller.f_back
    return False


def _under_capture(frame: types.FrameType) -> bool:
    below = frame.f_back
    while below is not None:
        if (below.f_code.co_filename, below.f_code.co_name) == _CAPTURE_RUN:
            return True
        below = below.f_back
    return False


class Seen:
    """The containers and ``lru_cache`` wrappers the user's code that ran in a capture can name
    (see the module docstring); :meth:`frame` is told each user frame."""

    __slots__ = ("containers", "looked", "spaces", "wrappers")

    def __init__(self) -> None:
        self.containers: dict[int, tuple[str, Any, Any]] = {}  # id -> (label, it, its items)
        self.wrappers: dict[int, Any] = {}
        self.looked: set[int] = set()  # ids of the functions, classes, objects looked into
        self.spaces: set[tuple[int, int]] = set()  # (code, globals) pairs looked at

    def frame(self, frame: types.FrameType) -> None:
        """Note what ``frame``'s code can name (a frame of capviz, NumPy or a library: none)."""
        code = frame.f_code
        if not _users(code):
            return
        names = code.co_names
        space = frame.f_globals
        key = (id(code), id(space))
        if key not in self.spaces:
            self.spaces.add(key)
            for name in names:
                value = space.get(name)
                if value is not None:
                    self._note(value, name, names, 2)
        if code.co_freevars or (code.co_argcount and code.co_varnames[0] in ("self", "cls")):
            local = frame.f_locals
            for name in code.co_freevars:
                value = local.get(name)
                if not _local_of_a_caller(frame, name, value):
                    self._note(value, name, names, 2)
            if code.co_argcount and code.co_varnames[0] in ("self", "cls"):
                first = code.co_varnames[0]
                self._note(local.get(first), first, names, 2)

    def _note(self, value: Any, label: str, names: tuple, depth: int) -> None:
        kind = type(value)
        if kind is dict or kind is list or isinstance(value, (dict, list)):
            self._container(value, label, _DEPTH)
            return
        if kind is _WRAPPER:
            if id(value) not in self.wrappers:
                self.wrappers[id(value)] = (value, value.cache_info().misses)
            return
        if depth <= 0 or value is None or isinstance(value, _LEAVES) or id(value) in self.looked:
            return
        if kind in (staticmethod, classmethod, types.MethodType):
            self._note(value.__func__, label, names, depth)
            return
        if kind is functools.partial:
            self._note(value.func, label, names, depth)
            return
        self.looked.add(id(value))
        if kind is types.FunctionType:
            if not _users(value.__code__):
                return
            self._container(vars(value), f"{label}.__dict__", 1)  # step.acc = np.zeros(3)
            for key, item in list(vars(value).items()):  # f.cache = {}
                if not key.startswith("__"):
                    self._note(item, f"{label}.{key}", names, depth - 1)
            for name, cell in zip(value.__code__.co_freevars, value.__closure__ or ()):
                try:
                    item = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                self._note(item, name, names, depth - 1)
        elif kind is types.ModuleType:
            if _user_module(value):
                space = vars(value)
                for name in names:
                    if name in space:
                        self._note(space[name], f"{label}.{name}", names, depth - 1)
        elif isinstance(value, type):
            if _user_class(value):
                self._attributes(value, label, names, depth)
        elif _user_class(kind):  # an object: the attributes its code names, its class's too
            attributes = getattr(value, "__dict__", None)
            if isinstance(attributes, dict):
                for name in names:
                    if name in attributes:
                        self._note(attributes[name], f"{label}.{name}", names, depth - 1)
            self._attributes(kind, label, names, depth)

    def _container(self, value: Any, label: str, depth: int) -> None:
        """Note dict or list ``value`` with a copy of its items, and the dicts and lists inside
        it, ``depth`` levels (one past :data:`_SCAN` items: not noted)."""
        if id(value) in self.containers or len(value) > _SCAN:
            return
        items = dict(value) if isinstance(value, dict) else list(value)
        self.containers[id(value)] = (label, value, items)
        if depth > 1:
            for key, item in (items.items() if type(items) is dict else enumerate(items)):
                if isinstance(item, (dict, list)):
                    self._container(item, f"{label}[{key!r}]", depth - 1)

    def _attributes(self, klass: type, label: str, names: tuple, depth: int) -> None:
        """The attributes of user class ``klass`` (its bases' too) that ``names`` names."""
        for base in klass.__mro__:
            if not _user_class(base):
                continue
            space = vars(base)
            for name in names:
                if name in space:
                    self._note(space[name], f"{base.__name__}.{name}", names, depth - 1)


_LEAVES = (int, float, complex, str, bytes, bool, np.ndarray, np.generic, Tensor)


@functools.lru_cache(maxsize=4096)
def _user_class(klass: type) -> bool:
    """Whether ``klass`` is defined in a user's file or a notebook (``__main__``)."""
    name = getattr(klass, "__module__", None) or ""
    if name in ("builtins", "numpy") or not isinstance(name, str):
        return False
    module = sys.modules.get(name)
    return module is not None and (name == "__main__" or _user_module(module))


def _user_module(module: types.ModuleType) -> bool:
    file = getattr(module, "__file__", None)
    return isinstance(file, str) and is_user_file(file) and not file.startswith(_LIBRARIES)


def settle(seen: Seen, recorder: Any, source: Any) -> None:
    """Give each container ``seen`` noted that holds a tensor of ``recorder`` the items it held
    when first seen (an item the capture stored before that: the value an eager call leaves),
    and clear each ``lru_cache`` holding one; a value of the data refused on
    ``recorder.pending`` (see the module docstring)."""
    states = None
    for label, container, before in list(seen.containers.values()):
        found = _held(container, recorder, seen.containers)
        if not found:
            continue
        if states is None:
            states = {id(s.tensor) for s in recorder.states.values()}
        if any(id(t) in states for _, t in found):  # a lifted state's: lifted.discard's
            continue
        data = [(key, t) for key, t in found if _of_data(recorder, t)]
        if data:
            key, tensor = data[0]
            _refuse(f"{label}[{key!r}]", label, tensor, recorder, source)
        rebound.put_back(_places(container, label, before, found), recorder, source)
        _restore(container, before)
        _left(container, label, recorder, source, seen.containers)
    for wrapper, misses in seen.wrappers.values():
        if wrapper.cache_info().misses != misses or _holds(wrapper, recorder):
            wrapper.cache_clear()


def _held(container: Any, recorder: Any, noted: Any = ()) -> list[tuple[Any, Tensor]]:
    """``(key, tensor)`` of each tensor of ``recorder`` an item of ``container`` is or holds
    (:func:`_inside`; a dict or list noted on its own, ``noted``, is looked at on its own)."""
    if len(container) > _SCAN:
        return []
    items = container.items() if isinstance(container, dict) else enumerate(container)
    found = []
    for key, value in list(items):
        if type(value) is Tensor:
            if value._trace is recorder:
                found.append((key, value))
        elif id(value) not in noted:
            found += [(key, t) for t in _inside(value, recorder, _DEPTH, noted)]
    return found


def _plain(value: Any) -> bool:
    """An object with a ``__dict__`` of its own (not a module, class or function)."""
    return isinstance(getattr(value, "__dict__", None), dict) and not isinstance(
        value, (type, types.ModuleType, types.FunctionType, types.MethodType,
                types.BuiltinFunctionType, functools.partial))


def _inside(value: Any, recorder: Any, depth: int, noted: Any = ()) -> list[Tensor]:
    """The tensors of ``recorder`` ``value`` is or holds in its tuples (a namedtuple's too),
    lists and dicts, and in the attributes of a plain object (a ``SimpleNamespace``, a
    dataclass), ``depth`` levels down (what a memo or an ``lru_cache`` keeps: review 6,
    finding 10)."""
    if type(value) is Tensor:
        return [value] if value._trace is recorder else []
    if depth <= 0 or isinstance(value, _LEAVES) or id(value) in noted:
        return []
    if isinstance(value, (tuple, list)):
        items: Any = value[:_SCAN]
    elif isinstance(value, dict):
        items = list(value.values()) if len(value) <= _SCAN else ()
    elif _plain(value):
        items = list(vars(value).values())[:_SCAN]
    else:
        return []
    return [t for item in items for t in _inside(item, recorder, depth - 1, noted)]


def _places(container: Any, label: str, before: Any, found: list) -> list[walk.Place]:
    """The places :func:`capviz.trace.rebound.put_back` puts back: each item that held an
    ndarray (in ``before``, the items when first met) the capture stored a value over, refused
    there as for the containers the walk reaches (a counter ``box["n"] = box["n"] +
    np.ones(1)`` would replay its first value every time)."""
    kind = "dict" if isinstance(container, dict) else "list"
    places = []
    for key in {key for key, _ in found}:
        held = before.get(key) if kind == "dict" else \
            before[key] if key < len(before) else None
        if isinstance(held, np.ndarray):
            places.append(walk.Place(kind, container, key, f"{label}[{key!r}]", held,
                                        inner=True))
    return places


def _restore(container: Any, before: Any) -> None:
    """``before``'s items back into ``container`` (a dict's order kept: an ``OrderedDict``)."""
    if isinstance(container, dict):
        if len(container) != len(before) or any(
                a is not b or v is not before[b] for (a, v), b in zip(container.items(), before)):
            container.clear()
            container.update(before)
    else:
        container[:] = before


def _left(container: Any, label: str, recorder: Any, source: Any, noted: Any) -> None:
    """The tensors of ``recorder`` still in ``container`` once its items are back (it held
    them when first met: a helper stored a value its caller made before recording anything
    itself): the value an eager call leaves where they are made of NumPy's creation functions
    and literals, computed with NumPy (a tensor, or a tuple or list of them); else removed and
    refused."""
    removed = []
    for key, tensor in _held(container, recorder, noted):
        if key in removed:
            continue
        value = container[key]
        plain = type(value) is Tensor or type(value) in (tuple, list)
        items = (value,) if type(value) is Tensor else value if plain else ()
        made = {id(t): _eager(t, recorder) for t in items
                if type(t) is Tensor and t._trace is recorder}
        if not plain or len(made) != len(_inside(value, recorder, _DEPTH)) \
                or any(m is None for m in made.values()):
            _refuse(f"{label}[{key!r}]", label, tensor, recorder, source)
            removed.append(key)
        elif type(value) is Tensor:
            container[key] = made[id(value)]
        else:
            container[key] = type(value)(made.get(id(t), t) if type(t) is Tensor else t
                                         for t in value)
    for key in sorted(removed, reverse=True) if isinstance(container, list) else removed:
        del container[key]


def _of_data(recorder: Any, tensor: Tensor, outside: bool = False) -> bool:
    """Whether ``tensor`` is computed from the data (an input, a state, a draw; with
    ``outside``, an outside array read as a constant too): not from NumPy's creation
    functions and constants alone."""
    stack = [current(recorder, tensor)]
    seen: set[int] = set()
    origins = recorder.graph.constant_origins if outside else {}
    while stack:
        node = stack.pop()
        if node.index in seen:
            continue
        if node.kind == "constant":
            if node.index in origins:
                return True
            continue
        seen.add(node.index)
        op = ops.OPS.get(node.op) if node.kind == "op" else None
        if (op is None and node.op != "unpack") or (op is not None and op.random) \
                or len(seen) > 4096:
            return True
        stack.extend(a for a in node.args if type(a) is type(node))
    return False


def _eager(tensor: Tensor, recorder: Any) -> Any:
    """The value an eager call gives where ``tensor`` is made of NumPy's creation functions
    and literals, computed with NumPy; ``None`` where it is a value of the data or reads an
    outside array (which a later call may find changed)."""
    if _of_data(recorder, tensor, outside=True):
        return None
    value = known_value(recorder.graph, current(recorder, tensor), recorder.known)
    if type(value) is np.ndarray:
        return value.copy(order="K")
    return value if isinstance(value, np.generic) else None


def _refuse(label: str, container: str, tensor: Tensor, recorder: Any, source: Any) -> None:
    made = tensor._data.source or source
    text = line_code(linecache.getline(made[0], made[1])) if made else ""
    reason = f"the capture removed it from {container}"
    message = explain(Failure("unsupported_op", KEPT, label, made,
                              UserCode("other", shorten(text)), None, reason))
    recorder.pending.append(("unsupported_op", KEPT, message, made))


def _holds(wrapper: Any, recorder: Any) -> bool:
    """Whether ``lru_cache`` ``wrapper`` holds a tensor of ``recorder`` (a result, or one in
    the tuples, lists and dicts it returned); its cache's entries are what the garbage
    collector sees it hold (bounded), or hold in its dict (unbounded)."""
    return any(_inside(item, recorder, _DEPTH + 1) for item in gc.get_referents(wrapper))
