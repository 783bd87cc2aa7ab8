"""Creation hooks: buffers the captured code makes are tensors.

While a capture is open, NumPy's creation functions called by the user's code record a
``create`` op (:mod:`capviz.ops.creation`) and return a capture tensor, so every later write
into the buffer and read of it is recorded: ``out = np.zeros((n, h)); for t in range(n):
out[t] = np.tanh(...)`` captures whole. Hooked (the table :data:`HOOKED`, shown in
``docs/numpy-coverage.md``):

- ``np.zeros``, ``ones``, ``empty``, ``full``, ``eye``, ``identity``, ``arange``, ``linspace``,
  ``logspace``, ``geomspace`` with plain arguments (Python or NumPy scalars, shapes, dtypes);
- their ``_like`` forms on an ndarray (the tensor's forms were recorded already);
- ``np.copy(a)`` and ``np.array(a)`` of an ndarray ``a`` (the copy reads the value the capture
  recorded for ``a``, a state written earlier included);
- ``np.asarray(t)``, ``np.asanyarray(t)``, ``np.array(t)`` of a tensor ``t`` and of a list
  holding tensors (:mod:`capviz.trace.conversions`: ``t`` itself, its copy or cast, a stack).

A call from code that is not the user's (capviz, NumPy, the standard library, an installed
package, C code the user's line called: ``rng.rand(3)`` calls ``np.empty`` from Cython) goes to
the original, and so does a call with a tensor or any other value among its
arguments (NumPy's own dispatch then records it or refuses it, as before). The hooks are put in
place with the randomness hooks (:mod:`capviz.randomness.hooks`: installed when the first scope
opens, removed when the last one closes, exception-safe) and each asks for the capture of the
current context (:func:`capviz.trace.context.active`), so another thread's call is NumPy's.

A name bound before the capture (``from numpy import zeros``) is rebound to the hook for the
scope's lifetime in the namespaces the scope can reach (:func:`rebind`): the captured function's
module globals, the globals of the user frames on the stack when it opens. Anywhere else the
bound name makes an ndarray, as it did before.
"""

from __future__ import annotations

import operator
import os
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterable, Set
from types import FrameType
from typing import Any

import numpy as np

from capviz import ops
from capviz.core.source import is_user_file
from capviz.ops.creation import CONVERTS, COPIES, HOOKED, LIKE
from capviz.trace import conversions, statements
from capviz.trace.context import active
from capviz.trace.tensor import Tensor

_PLAIN = (bool, int, float, complex, str, type(None), np.generic, np.dtype, type)

_LIBRARY_DIRS = tuple(sorted({os.path.join(os.path.abspath(p), "") for key in (
    "stdlib", "platstdlib", "purelib", "platlib") if (p := sysconfig.get_paths().get(key))}))
_USER_FILES: dict[str, bool] = {}


def user_call(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs the user's code: not capviz's, NumPy's, the standard library's or
    an installed package's (cached per file)."""
    if frame is None:
        return False
    filename = frame.f_code.co_filename
    known = _USER_FILES.get(filename)
    if known is None:
        known = is_user_file(filename) and not os.path.abspath(filename).startswith(
            _LIBRARY_DIRS) and not filename.startswith("<frozen")
        if len(_USER_FILES) > 4096:
            _USER_FILES.clear()
        _USER_FILES[filename] = known
    return known


def plain(value: Any) -> bool:
    """Whether ``value`` is plain Python or NumPy data (numbers, strings, dtypes, sequences of
    them): what a creation or draw keeps as a static parameter."""
    if isinstance(value, (tuple, list)):
        return all(plain(v) for v in value)
    return isinstance(value, _PLAIN)


def static(value: Any) -> Any:
    """A plain argument as the graph keeps it: dtypes by name, sequences as tuples."""
    if isinstance(value, (np.dtype, type)):
        return np.dtype(value).name
    if isinstance(value, list | tuple):
        return tuple(static(v) for v in value)
    return value


_NAMES = {"zeros": ("shape", "dtype", "order"), "ones": ("shape", "dtype", "order"),
          "empty": ("shape", "dtype", "order"), "full": ("shape", "fill_value", "dtype", "order"),
          "eye": ("N", "M", "k", "dtype", "order"), "identity": ("n", "dtype")}
_FIRST = {"zeros": 1, "ones": 1, "empty": 1, "full": 2, "eye": 1, "identity": 1}


def _create(recorder: Any, function: str, args: tuple, kwargs: dict) -> Tensor | None:
    if not plain(args) or not plain(list(kwargs.values())) or "like" in kwargs \
            or "device" in kwargs:
        return None
    names = _NAMES.get(function)
    if names is not None:  # the size (and fill) stay positional, the rest by keyword
        first = _FIRST[function]
        bound = dict(zip(names, args))
        if len(args) > len(names) or bound.keys() & kwargs.keys() \
                or len(args) + sum(k in names[:first] for k in kwargs) < first:
            return None  # NumPy's TypeError
        kwargs = {k: v for k, v in bound.items() if k not in names[:first]} | kwargs
        args = tuple(bound.get(k, kwargs.pop(k, None)) for k in names[:first])
        if not kwargs.keys() <= set(names):
            return None
    params = {"function": function, "args": static(args),
              "kwargs": {k: static(v) for k, v in kwargs.items()}}
    return recorder.apply(ops.OPS["create"], (), params)


def _like(recorder: Any, name: str, args: tuple, kwargs: dict) -> Tensor | None:
    """``np.zeros_like(a, dtype=None, order="K", subok=True, shape=None)`` of an ndarray ``a``:
    a ``create`` of ``a``'s shape, dtype and memory order."""
    if not args or type(args[0]) is not np.ndarray or not kwargs.keys() <= {
            "dtype", "order", "subok", "shape", "fill_value"}:
        return None
    proto = args[0]
    rest = list(args[1:])
    fill = () if name != "full_like" else (kwargs.pop("fill_value") if "fill_value" in kwargs
                                          else rest.pop(0),)
    names = ("dtype", "order", "subok", "shape")
    given = dict(zip(names, rest)) | kwargs
    if not plain(list(given.values())) or not plain(fill):
        return None
    order = given.get("order", "K")
    if order in ("K", "A", None):
        order = "F" if proto.flags.f_contiguous and not proto.flags.c_contiguous else "C"
    shape = given.get("shape")
    dtype = given.get("dtype") if given.get("dtype") is not None else proto.dtype
    if name == "full_like":
        dtype = np.full_like(np.ones(1, proto.dtype), fill[0], dtype=given.get("dtype")).dtype
    call = (proto.shape if shape is None else shape, *fill)
    return _create(recorder, name[:-len("_like")], call, {"dtype": dtype, "order": order})


def _copy(recorder: Any, name: str, args: tuple, kwargs: dict) -> Tensor | None:
    """``np.copy(a)`` / ``np.array(a)`` of an ndarray ``a``: the recorded value of ``a``
    copied (``np.array(a, dtype)``: cast)."""
    if not args or type(args[0]) is not np.ndarray:
        return None
    allowed = {"order"} if name == "copy" else {"dtype", "copy"}
    if len(args) > (1 if name == "copy" else 2) or not kwargs.keys() <= allowed:
        return None
    dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
    if kwargs.get("copy", True) is not True or kwargs.get("order", "K") not in ("K", "C"):
        return None
    tensor = Tensor(recorder.operand(args[0]), recorder)
    made = np.copy(tensor)
    return made if dtype is None else made.astype(dtype)


def make(recorder: Any, name: str, args: tuple, kwargs: dict) -> Tensor | None:
    """The tensor ``np.<name>(*args, **kwargs)`` makes in ``recorder``'s capture, or ``None``
    when the call is NumPy's to run (an argument that is not plain)."""
    if name in LIKE:
        return _like(recorder, name, args, dict(kwargs))
    if name in CONVERTS or (name == "array" and args and type(args[0]) is not np.ndarray):
        return conversions.convert(name, args, kwargs)  # a tensor, or a list holding tensors
    if name in COPIES:
        return _copy(recorder, name, args, kwargs)
    return _create(recorder, name, args, kwargs)


_getframe = sys._getframe
_busy = threading.local()  # set while a hook records: NumPy calls made meanwhile are NumPy's


def hook(name: str, original: Callable) -> Callable:
    """The stand-in for ``np.<name>`` while a capture is open."""

    def hooked(*args: Any, **kwargs: Any) -> Any:
        frame = _getframe(1)  # capviz's and NumPy's own calls leave at the first test
        user = _USER_FILES.get(frame.f_code.co_filename)
        if user is None:
            user = user_call(frame)
        if user and not getattr(_busy, "on", False):
            recorder = active()  # the user's line itself calls it (C code it called,
            if recorder is not None and statements.calls(frame, hooked):  # np.empty: no)
                _busy.on = True
                try:
                    made = make(recorder, name, args, kwargs)
                finally:
                    _busy.on = False
                if made is not None:
                    return made
        return original(*args, **kwargs)

    hooked.__wrapped__ = original  # type: ignore[attr-defined]
    hooked.__name__ = getattr(original, "__name__", name)
    hooked.__qualname__ = getattr(original, "__qualname__", name)
    hooked.__doc__ = getattr(original, "__doc__", None)
    return hooked


_HOOKS: dict[tuple[str, int], Callable] = {}  # (name, id(original)) -> its hook, made once
_originals = operator.attrgetter(*HOOKED)  # NumPy's functions now, in one C call


class Plan:
    """The creation hooks to put in ``numpy``'s namespace, all at once
    (:func:`capviz.randomness.hooks.install`): ``hooks`` and ``originals`` by name, ``ids``
    the ids of the originals."""

    __slots__ = ("hooks", "ids", "originals")

    def __init__(self, originals: dict[str, Any], hooks: dict[str, Callable]) -> None:
        self.originals, self.hooks = originals, hooks
        self.ids = frozenset(id(f) for f in originals.values() if callable(f))


NO_HOOKS = Plan({}, {})
"""A plan that hooks nothing (``benchmarks/state.py`` measures the hooks' cost against it)."""

_PLAN: list = [(), NO_HOOKS]  # the originals the plan was made for, and the plan


def plan() -> Plan:
    """The hooks of every function of :data:`HOOKED`, each made once per original; its
    ``__wrapped__`` finds the original's handler in :data:`capviz.trace.dispatch.HANDLED`.
    Made again only when one of NumPy's functions is another object than it was for the last
    plan (a patch of ``np.zeros``); every capture reads the names once, in one C call."""
    originals = _originals(np)
    if originals == _PLAN[0]:  # (a tuple compares its items by identity first)
        return _PLAN[1]
    hooks = {}
    for name, original in zip(HOOKED, originals):
        hooked = _HOOKS.get((name, id(original)))
        if hooked is None or hooked.__wrapped__ is not original:
            hooked = _HOOKS[(name, id(original))] = hook(name, original)
        hooks[name] = hooked
    made = Plan(dict(zip(HOOKED, originals)), hooks)
    _PLAN[:] = [originals, made]
    return made


def rebind(namespaces: Iterable[dict], replacements: Callable[[], dict[int, Any]],
           candidates: Set[int]) -> list[tuple]:
    """Put ``replacements()[id(value)]`` in place of each value of ``namespaces`` that has one
    (a name bound before the capture, ``from numpy import zeros``); returns what
    :func:`restore` undoes. Each namespace is looked at once, and only a namespace holding a
    value whose id is among ``candidates`` (the ids of the hooked functions) item by item."""
    done: list[tuple] = []
    seen: set[int] = set()
    for space in namespaces:
        if id(space) in seen:
            continue
        seen.add(id(space))
        if candidates.isdisjoint(map(id, list(space.values()))):
            continue  # the usual case: nothing bound before the capture (one pass in C)
        made = replacements()
        for key, value in list(space.items()):
            new = made.get(id(value))
            if new is not None and new[0] is value:
                done.append((space, key, value, new[1]))
                space[key] = new[1]
    return done


def restore(done: list[tuple]) -> None:
    """Undo :func:`rebind` (a name the user rebound meanwhile is left as they set it)."""
    while done:
        space, key, original, new = done.pop()
        if space.get(key) is new:
            space[key] = original
