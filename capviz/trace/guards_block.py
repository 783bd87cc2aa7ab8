"""The guards of the scope form (``with cap.capture_scope() as scope: ...``) on the Python values
its block reads from objects that outlive it (lead ruling 38, 10:50: it reads them as a
captured function does, and its graph had none: ``m.eval()`` or a module flag changed between
replays replayed the old program, silently).

The block is read as :mod:`capviz.trace.guards_python` reads a captured function: its
statements, compiled as a function of the frame's module namespace
(:func:`capviz.trace.scope_block.function`: never called), give the names it uses and the
functions it reaches; the places are the names it uses that the frame that opened the scope
binds, and what :func:`capviz.trace.places.block_places` walks inside them, noted when the
scope opens. Where the block's source cannot be read (``python -c``, ``exec``), the frame's
whole code stands for it and every local and global of the frame is a place: more guards,
never fewer (a value the frame's code names outside the block refuses a replay when changed),
and no value is taken as one the block assigns before reading it (its first statements are
not the frame code's).
"""

from __future__ import annotations

import functools
import os
import sys
import types
import weakref
from typing import Any

from capviz.core.python_guards import PythonGuards
from capviz.core.source import display_file
from capviz.trace import guards_python, scope_block
from capviz.trace import places as walk


class Block:
    """What the guards of one scope need, noted when it opens: ``fn`` (the block as a
    function, or the frame's code), ``places`` (with the values they held then), ``whole``
    (``fn`` is the frame's whole code: its source was not found)."""

    __slots__ = ("fn", "places", "source", "whole")

    def __init__(self, fn: types.FunctionType, places: list, whole: bool,
                 source: tuple | None) -> None:
        self.fn = fn
        self.places = places
        self.whole = whole
        self.source = source  # (code, lines, first line) of the block


def note(frame: types.FrameType | None, line: int | None) -> Block | None:
    """The block of the scope opened at ``line`` of ``frame`` (``None``: no frame: a scope
    entered by a function that has returned reads nothing of the user's by name)."""
    if frame is None or line is None:
        return None
    code = frame.f_code
    label = f"the with block at {os.path.basename(display_file(code.co_filename))}:{line}"
    made = scope_block.function(code.co_filename, line, frame.f_globals, code.co_name)
    whole = made is None
    source = None
    if made is None:  # (no source text: the frame's code, never called, read for its names)
        fn = types.FunctionType(code, frame.f_globals, code.co_name, None, tuple(
            types.CellType() for _ in code.co_freevars) or None)
        places = walk.frame_places(frame)
    else:
        fn, lines = made
        source = (fn.__code__, lines, fn.__code__.co_firstlineno)
        names = scope_block.names(code.co_filename, line, frame.f_globals)
        if names is not None:  # (not `scope` of `as scope`, `x = ...`: the block's own)
            names = names - scope_block.own(code.co_filename, line, frame.f_globals)
        places = walk.block_places(frame, names)
        for name in sorted(names or ()):  # the functions it calls by a name of the frame's
            space = frame.f_locals if name in frame.f_locals else frame.f_globals  # (their
            value = space.get(name)  # code is read for the names it uses: a closure's cell)
            if isinstance(value, (types.FunctionType, types.MethodType, functools.partial)):
                places.append(walk.Place("dict", space, name, name, value))
    fn.__name__ = label
    places = [p for p in places if not _capviz_object(p.value) and not _capviz_object(p.holder)]
    if frame.f_locals is not frame.f_globals:  # (a function's frame: its locals read live)
        live = Locals(frame)
        for place in places:
            if place.holder is live.space:
                place.holder = live
            if place.path is not None and place.path[0] is live.space:
                place.path = (live, place.path[1])
        live.space = None
    return Block(fn, places, whole, source)


class Locals:
    """The locals of the function frame that opened a scope, as its guards read them: what
    the frame binds now while it runs (``lr = 0.2`` between two replays in the same function:
    a snapshot of its locals would not see it; review 10's r10_scope.py ``local_before``),
    what it bound last once it has returned (nothing can bind them then). Holds the frame's
    code, the id of its locals' dict and weak references where they can be made (a graph
    keeps no user's object alive), never the frame."""

    __slots__ = ("__weakref__", "code", "kept", "key", "space")

    def __init__(self, frame: types.FrameType) -> None:
        self.code = frame.f_code
        self.space = frame.f_locals  # (for note(): dropped once the places are moved here)
        self.key = id(self.space)
        self.kept: dict[str, Any] = {}
        for name, value in self.space.items():
            try:
                self.kept[name] = (weakref.ref(value), True)
            except TypeError:
                self.kept[name] = (value, False)

    def __getitem__(self, name: str) -> Any:
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code is self.code and id(frame.f_locals) == self.key:  # (read anew)
                return frame.f_locals[name]
            frame = frame.f_back
        value, weak = self.kept[name]
        if weak:
            value = value()
            if value is None:
                raise KeyError(name)
        return value


def _capviz_object(value: Any) -> bool:
    """A tensor, graph or scope of capviz's (one an earlier capture left in a name the block
    uses, its recorder inside): nothing the user's code reads a Python value from."""
    module = getattr(type(value), "__module__", None) or ""
    return module.startswith("capviz.") and module != "capviz.models"


def collect(block: Block, graph: Any) -> PythonGuards:
    """The guards of the complete capture ``graph`` of ``block``."""
    return guards_python.collect(block.fn, block.places, graph, assigns=not block.whole,
                                 source=block.source)
