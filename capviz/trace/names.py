"""What the user called an array: the name a recorded constant gets when it has none.

When an ndarray is met as an operand inside a capture, :class:`Namer` looks for that very object
(``is``, never ``==``) in the module globals of the code that opened the capture, then among the
local variables of the user's frames on the stack, outermost first (the frame that opened the
capture, then each caller down to the line that used it), so the name is the one the program
started from; then in the globals of the other modules whose code is on the stack, and of the
user's modules those read (``import mymodel``), named by module path:

- a variable or argument: ``mask``;
- a path through dicts, lists, tuples and object attributes below one:
  ``params["blocks"][3]["attn"]["c_attn"]["w"]``, ``self.W``;
- a global of another module: ``mymodel.W1`` (``mymodel.BLOCKS[1]["w"]``), whether the captured
  function is that module's (``cv.capture(mymodel.layer, ...)``) or reads it (``mymodel.W1``);
- for a view made on the line (``params["wte"].T``), the name of its base with ``.T`` (a
  transpose) or ``view of ...`` (any other view).

Within one namespace the shortest path wins (breadth first). Names starting with ``_`` and
IPython's ``In``/``Out`` are skipped, and so are loop variables (the targets of a ``for`` in the
frame's code): ``for block in blocks:`` names every block's weights ``blocks[0]...``,
``blocks[1]...``, never ``block[...]`` for the first only. A loop variable still names an array it
holds itself when nothing else does.

Cost: the arrays reachable from a namespace are indexed once per capture (breadth first, at most
:data:`MAX_DEPTH` steps), so naming the next array is a dictionary lookup per namespace, and a
temporary array that has no name costs as little. The innermost frame (new at every call) is
searched by its variable names only, and indexed only for an array a loop variable holds. The
other modules are the user's (not Python's library, installed packages, NumPy or capviz), at most
:data:`MAX_MODULES`. All indexing of one capture together looks at most :data:`MAX_VISITS`
container entries (containers of more than :data:`MAX_CHILDREN` entries are data, not
parameters, and are skipped); past that, arrays are still found by variable name. An index is
taken when first needed: an array put into a container after that is found only by name.
An index keeps each array's path as a link to its parent's, and the text is made only for the
array named. Names asked from the same running frame (a loop writing many arrays) reuse its
list of frames and namespaces: the frames above it stayed suspended, so only the innermost
frame's variables (and those of frames with cells) are read again.
"""

from __future__ import annotations

import dis
import inspect
import sysconfig
import types
import weakref
from collections import deque
from types import CodeType, FrameType
from typing import Any, NamedTuple

import numpy as np

from capviz.core.source import is_user_file, library_type

MAX_DEPTH = 6
MAX_VISITS = 50_000
MAX_CHILDREN = 10_000
MAX_FRAMES = 64
MAX_MODULES = 32
_SKIP_NAMES = frozenset({"In", "Out"})
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.MethodType, types.CodeType)
_CONTAINERS = (dict, list, tuple)
_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def user_frames(frame: FrameType | None, stop: FrameType | None) -> list[FrameType]:
    """The user frames from ``frame`` up to ``stop`` (included), outermost first."""
    out: list[FrameType] = []
    f = frame
    while f is not None and len(out) < MAX_FRAMES:
        if is_user_file(f.f_code.co_filename):
            out.append(f)
        if f is stop:
            break
        f = f.f_back
    out.reverse()
    return out


def _named(name: Any) -> bool:
    return isinstance(name, str) and not name.startswith("_") and name not in _SKIP_NAMES


_LOOP_NAMES: dict[CodeType, frozenset[str]] = {}
_STORES = ("STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF")


def loop_names(code: CodeType) -> frozenset[str]:
    """The variables ``code`` binds in a ``for`` (``block`` in ``for block in blocks:``, ``k``
    and ``v`` in ``for k, v in ...``), read from its bytecode once per code object."""
    found = _LOOP_NAMES.get(code)
    if found is not None:
        return found
    names: set[str] = set()
    pending = 0  # how many stores after FOR_ITER (an UNPACK_SEQUENCE adds its count)
    for instruction in dis.get_instructions(code):
        if instruction.opname == "FOR_ITER":
            pending = 1
        elif pending and instruction.opname in ("UNPACK_SEQUENCE", "UNPACK_EX"):
            pending += (instruction.arg or 0) - 1 if instruction.opname == "UNPACK_SEQUENCE" \
                else (instruction.arg or 0) % 256 + (instruction.arg or 0) // 256
        elif pending and instruction.opname in _STORES:
            names.add(instruction.argval)
            pending -= 1
        elif pending and instruction.opname not in ("EXTENDED_ARG", "CACHE"):
            pending = 0
    _LOOP_NAMES[code] = found = frozenset(names)
    return found


_LIBRARY_DIRS = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib",
                                                               "purelib", "platlib")})


def _user_module(module: types.ModuleType) -> bool:
    """A module of the user's code: a file that is not capviz's, NumPy's, Python's own library
    or an installed package's."""
    file = getattr(module, "__file__", None)
    return isinstance(file, str) and is_user_file(file) and not file.startswith(_LIBRARY_DIRS)


_USER_MODULES: dict[int, tuple[types.ModuleType, bool]] = {}  # id -> (module, _user_module)


def _imported(namespace: dict) -> list[dict]:
    """The globals of the user's modules that ``namespace`` holds (``import mymodel``)."""
    found = []
    for v in list(namespace.values()):
        if type(v) is not types.ModuleType and not isinstance(v, types.ModuleType):
            continue
        known = _USER_MODULES.get(id(v))
        if known is None or known[0] is not v:
            known = _USER_MODULES[id(v)] = (v, _user_module(v))
        if known[1]:
            found.append(vars(v))
    return found


def _module_prefix(namespace: dict) -> str:
    name = namespace.get("__name__")
    return "" if not isinstance(name, str) or name == "__main__" else f"{name}."


class Space(NamedTuple):
    """A namespace names are looked for in: a name found there is ``prefix + path``."""

    namespace: dict
    prefix: str  # "mymodel." for another module's globals
    loops: frozenset[str]  # its loop variables, no roots of a path
    by_name_only: bool  # the innermost frame (new at each call): no index
    module: bool = False  # a module's globals (lives as long as the module), not a frame's


class Namer:
    """Finds what the user called arrays, for one capture (see the module docstring)."""

    def __init__(self) -> None:
        self.indexes: dict[int, tuple[dict, dict[int, tuple[Any, Any]]]] = {}
        self.ready: dict[int, dict[int, tuple[Any, Any]]] = {}  # id(namespace) -> its index
        #   (the namespace is alive, and so its id its own, while ``indexes`` holds it)
        self.parents: dict[int, tuple[Any, str, tuple]] = {}  # id(link) -> (link, its path,
        #   its steps) of the links whose children were named (see _path)
        self.imports: dict[int, tuple[dict, list[dict]]] = {}  # id(globals) -> its modules
        self.spaces: dict[tuple, tuple] = {}  # the last frames' spaces (see _spaces)
        self.chain: tuple | None = None  # the last (frame, stop, user_frames) (see frames)
        self.visits = 0

    def frames(self, frame: FrameType | None, stop: FrameType | None) -> list[FrameType]:
        """:func:`user_frames` of ``frame`` up to ``stop``; the same list as the last call's
        when ``frame`` is the same running frame (a plain function's: not a generator or
        coroutine, which another caller may resume): the frames above a running frame do not
        change, so a loop writing many arrays walks the stack once."""
        last = self.chain
        if last is not None and last[0] is frame and last[1] is stop and frame is not None \
                and not frame.f_code.co_flags & _RESUMABLE:
            return last[2]
        found = user_frames(frame, stop)
        self.chain = (frame, stop, found)
        return found

    def find(self, value: Any, frames: list[FrameType]) -> str | None:
        """The name or path of ``value`` from ``frames`` (outermost first), or ``None``."""
        return self.find_place(value, frames, False)[0]

    def find_place(self, value: Any, frames: list[FrameType], placed: bool = True
                   ) -> tuple[str | None, tuple | None]:
        """:meth:`find`'s name of ``value`` and, when ``placed``, where it is held
        (:meth:`_place`, from the same lookup; ``None`` for a name that is not a path from a
        namespace: a view's, a loop variable's)."""
        if not frames:
            return None, None
        spaces = self._spaces(frames)
        hit = self._hit(value, spaces)
        if hit is not None:
            space, link = hit
            path, steps = self._path(link)
            return space.prefix + path, self._place(space, steps) if placed else None
        base = getattr(value, "base", None)
        if isinstance(base, np.ndarray) and isinstance(value, np.ndarray):
            found = self._lookup(base, spaces)  # a view made on the line
            if found is not None:
                transposed = value.shape == base.shape[::-1] and \
                    value.strides == base.strides[::-1]
                return (f"{found}.T" if transposed else f"view of {found}"), None
        # an array a loop variable holds, and nothing else names
        return self._loop_held(value, frames, spaces), None

    def _loop_held(self, value: Any, frames: list[FrameType], spaces: list[Space]) -> str | None:
        """The name of an array a loop variable holds: its path in the innermost frame, where
        the loop's list may be (``weights[2]`` for ``for w in weights``, indexed only now), else
        the loop variable itself."""
        held = [name for frame in frames for name in loop_names(frame.f_code)
                if frame.f_locals.get(name) is value and _named(name)]
        if not held:
            return None
        for space in spaces:
            if space.by_name_only:
                hit = self._index(space.namespace, space.loops).get(id(value))
                if hit is not None and hit[0] is value:
                    return path_of(hit[1])
        return held[0]

    def _spaces(self, frames: list[FrameType]) -> list[Space]:
        """:meth:`_find_spaces`, kept for the next lookup from the same frames (each frame's
        ``f_locals`` read again, which brings its variables up to date).

        ``frames`` the very list of the last lookup (:meth:`frames`: the same running
        innermost frame) means the outer frames stayed suspended since: their variables are
        as they were, but for cells (``nonlocal``), so only the innermost frame and frames
        with cells are read again."""
        got = self.spaces.get(id(frames))
        if got is not None and got[0] is frames:
            for f, known in got[3]:
                if f.f_locals is not known:  # (3.13: a new proxy)
                    got = None
                    break
            if got is not None:
                return got[1]
        key = tuple(map(id, frames))
        got = self.spaces.get(key)
        if got is not None and all(a is b for a, b in zip(got[0], frames)):
            for f in frames:
                if f.f_locals is not got[2][id(f)]:  # (3.13: a new proxy)
                    got = None
                    break
        if got is None:
            spaces = self._find_spaces(frames)
            got = (frames, spaces, {id(f): f.f_locals for f in frames})
        fresh = [(f, got[2][id(f)]) for k, f in enumerate(frames) if k == len(frames) - 1
                 or f.f_code.co_cellvars or f.f_code.co_freevars]  # (frame, its locals)
        got = (frames, got[1], got[2], fresh)
        self.spaces = {key: got, id(frames): got}  # the last frames only: they hold them alive
        return got[1]

    def _find_spaces(self, frames: list[FrameType]) -> list[Space]:
        """Where names are looked for, in order: the opening frame's globals, each frame's
        locals (the innermost by name only), then the other modules' globals."""
        first = frames[0]
        outer = first.f_globals
        spaces = [Space(outer, "", loop_names(first.f_code) if first.f_locals is outer
                        else frozenset(), False, True)]
        spaces += [Space(f.f_locals, "", loop_names(f.f_code), k == len(frames) - 1 and k > 0,
                         f.f_locals is f.f_globals) for k, f in enumerate(frames)]
        modules = list({id(f.f_globals): f.f_globals for f in frames}.values())
        for namespace in modules[:]:  # import mymodel (globals: looked at once per capture)
            modules += self._imported(namespace)
        for f in frames:
            if f.f_locals is not f.f_globals:
                modules += _imported(f.f_locals)
        seen = {id(outer)}
        for namespace in modules:
            if id(namespace) not in seen and len(seen) <= MAX_MODULES:
                seen.add(id(namespace))
                spaces.append(Space(namespace, _module_prefix(namespace), frozenset(), False,
                                    True))
        return spaces

    def _imported(self, namespace: dict) -> list[dict]:
        """:func:`_imported` of module globals ``namespace``, found once per capture (a module
        imported while the capture runs is not looked for)."""
        got = self.imports.get(id(namespace))
        if got is None or got[0] is not namespace:
            got = self.imports[id(namespace)] = (namespace, _imported(namespace))
        return got[1]

    def release(self) -> None:
        """Forget the indexes (and the references they hold); called when the capture ends."""
        self.indexes = {}
        self.ready = {}
        self.parents = {}
        self.imports = {}
        self.spaces = {}
        self.chain = None

    def _path(self, link: Any) -> tuple[str, tuple]:
        """:func:`path_of` of an index ``link``, and its steps ``((is_attribute, key), ...)``,
        the root name first; a parent's are kept for its next child (an optimiser's arrays are
        items of a few lists)."""
        if type(link) is not tuple:
            return link, ((False, link),)
        parent, kind, key = link
        got = self.parents.get(id(parent))
        if got is None or got[0] is not parent:
            got = self.parents[id(parent)] = (parent, *self._path(parent))
        step = _key_text(key) if kind is _ITEM_OF_DICT else f"[{key}]" \
            if kind is _ITEM_OF_SEQUENCE else f".{key}"
        return got[1] + step, (*got[2], (kind == _ATTRIBUTE, key))

    @staticmethod
    def _place(space: Space, steps: tuple) -> tuple | None:
        """Where the value found in ``space`` at ``steps`` (its link's, :meth:`_path`) is
        held: ``(anchor, steps)``, with ``steps`` ``((is_attribute, key), ...)`` leading
        from ``anchor`` to it, or ``None`` when no owner can be kept without keeping the value
        alive.

        ``anchor`` is a module's globals (kept strongly: it lives as long as the module), else
        a weak reference to the first object of the path that takes one (``self`` in
        ``self.m``, ``model`` in ``model.layers[0].m``): a path held only by a frame's variables
        and plain dicts and lists (``params["w"]`` with ``params`` a function's local) has
        none. A replay follows the path again to see that it still holds the array
        (:func:`capviz.replay.state.check_places`)."""
        if space.module:
            return space.namespace, steps
        owner = space.namespace.get(steps[0][1])
        for k in range(1, len(steps)):
            try:
                return weakref.ref(owner), steps[k:]
            except TypeError:  # a dict, a list: follow the path further
                pass
            try:
                owner = getattr(owner, steps[k][1]) if steps[k][0] else owner[steps[k][1]]
            except Exception:
                return None
        return None

    def _lookup(self, value: Any, spaces: list[Space]) -> str | None:
        hit = self._hit(value, spaces)
        return None if hit is None else hit[0].prefix + path_of(hit[1])

    def _hit(self, value: Any, spaces: list[Space]) -> tuple[Space, Any] | None:
        """The space ``value`` is found in and its index link there (a name, for a value the
        space holds itself)."""
        key = id(value)
        ready = self.ready
        for space in spaces:
            namespace = space.namespace
            # whether value itself is one of the namespace's values: ids compared in C, which
            # runs no code, so the dict cannot change meanwhile (every value is alive, so an
            # equal id is the same object)
            if key in map(id, namespace.values()):
                for name, v in list(namespace.items()):
                    if v is value and _named(name) and name not in space.loops:
                        return space, name
            if space.by_name_only:
                continue  # the innermost frame: new at each call, searched by name only
            index = ready.get(id(namespace))
            if index is None:
                index = self._index(namespace, space.loops)
            hit = index.get(key)
            if hit is not None and hit[0] is value:
                return space, hit[1]
        return None

    def _index(self, namespace: dict, loops: frozenset[str] = frozenset()
               ) -> dict[int, tuple[Any, Any]]:
        """``{id(array): (array, link)}`` for the arrays below ``namespace`` (built once; the
        loop variables ``loops`` are no roots; :func:`path_of` gives a link's path)."""
        got = self.indexes.get(id(namespace))
        if got is not None and got[0] is namespace:
            return got[1]
        visits = self.visits
        index = self._walk(namespace, loops, True)
        if self.visits >= MAX_VISITS:  # the walk stopped early: which arrays it reached
            self.visits = visits        # depends on the queue's order, so walk it exactly
            index = self._walk(namespace, loops, False)
        self.indexes[id(namespace)] = (namespace, index)
        self.ready[id(namespace)] = index
        return index

    def _walk(self, namespace: dict, loops: frozenset[str], early: bool
              ) -> dict[int, tuple[Any, Any]]:
        """The index of :meth:`_index`, breadth first. ``early``: an array is indexed when it
        is met, not when the queue reaches it (the same index when the walk is not cut short
        by :data:`MAX_VISITS`: the queue is first in, first out)."""
        index: dict[int, tuple[Any, Any]] = {}
        queue: deque[tuple[Any, Any, int]] = deque()
        seen: set[int] = set()
        ndarray = np.ndarray
        for name, v in list(namespace.items()):
            if _named(name) and name not in loops and not isinstance(v, types.ModuleType):
                if early and type(v) is ndarray:
                    index.setdefault(id(v), (v, name))
                else:
                    queue.append((v, name, 1))
        while queue and self.visits < MAX_VISITS:
            obj, link, depth = queue.popleft()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if type(obj) is ndarray:
                index.setdefault(id(obj), (obj, link))
                continue
            if depth > MAX_DEPTH:
                continue
            kind, children = _children(obj)
            self.visits += len(children)
            for key, child in children:
                if type(child) is ndarray:
                    if early:
                        index.setdefault(id(child), (child, (link, kind, key)))
                    else:
                        queue.append((child, (link, kind, key), depth + 1))
                elif isinstance(child, _CONTAINERS) or _has_attributes(child):
                    queue.append((child, (link, kind, key), depth + 1))
        return index


def path_of(link: Any) -> str:
    """The path text of an index entry's ``link``: a root name, or ``(parent's link, kind,
    key)`` (the text is made only for the array that is named)."""
    steps = []
    while type(link) is tuple:
        link, kind, key = link
        steps.append(_key_text(key) if kind is _ITEM_OF_DICT else f"[{key}]"
                     if kind is _ITEM_OF_SEQUENCE else f".{key}")
    return link + "".join(reversed(steps))


def _has_attributes(obj: Any) -> bool:
    return isinstance(getattr(obj, "__dict__", None), dict) and not isinstance(obj, _OPAQUE) \
        and not library_type(type(obj)) \
        and not type(obj).__module__.startswith("capviz.")  # (a graph the user holds: its
    #                                                        own references are not names)


_ITEM_OF_DICT, _ITEM_OF_SEQUENCE, _ATTRIBUTE = "dict", "sequence", "attribute"


def _children(obj: Any) -> tuple[str, list[tuple[Any, Any]]]:
    """The kind of step (a dict's key, a list's position, an attribute) and ``(key, child)``
    for a container or a plain object's attributes."""
    if isinstance(obj, _CONTAINERS) and len(obj) > MAX_CHILDREN:
        return _ATTRIBUTE, []  # a data list, not a tree of parameters
    if isinstance(obj, dict):
        return _ITEM_OF_DICT, list(obj.items())
    if isinstance(obj, (list, tuple)):
        return _ITEM_OF_SEQUENCE, list(enumerate(obj))
    if _has_attributes(obj):
        return _ATTRIBUTE, [(k, v) for k, v in list(vars(obj).items()) if _named(k)]
    return _ATTRIBUTE, []


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return '["' + key.replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return f"[{key!r}]"
