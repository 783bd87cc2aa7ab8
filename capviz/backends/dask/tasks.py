"""The node whose dask array is being built, and the task functions that name it.

A replay builds one dask expression; each op's callable builds the arrays of one node of the
program (:class:`Steps` says which), and every task it makes runs its NumPy function through
:class:`Guarded`, whose error is a :class:`BlockError` naming the node, its op and the user's
line (picklable, so a cluster's worker sends it back).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.dask.shapes import is_array
from capviz.core.errors import ReplayError
from capviz.core.source import format_source

CHUNKS: ContextVar[Any] = ContextVar("capviz_dask_chunks", default="auto")
"""The ``chunks`` option of the replay being built (random ops are chunked with it)."""


NODE: ContextVar[int | None] = ContextVar("capviz_dask_node", default=None)
"""The index of the node whose step is being built (its tasks' errors name it)."""

STEPS: ContextVar[Any] = ContextVar("capviz_dask_steps", default=None)
"""The :class:`Steps` of the program being built."""


class Steps:
    """Which node each bound call builds: the program's steps run in order, so the next call of
    an op is the next step of that op."""

    def __init__(self, program: Any) -> None:
        self.nodes = [step[-1] for step in program.table if step[1] is not None]
        self.by_index = {node.index: node for node in self.nodes}
        self._k = 0

    def next(self, op_name: str) -> Any:
        nodes, k = self.nodes, self._k
        while k < len(nodes) and nodes[k].op != op_name:
            k += 1
        if k == len(nodes):
            return None
        self._k = k + 1
        return nodes[k]


class BlockError(ReplayError):
    """An op's NumPy function failed in a task: the node's index, NumPy's error, and where the
    node was recorded (picklable, so a cluster's worker sends it back). A replay turns it into
    the :class:`ReplayError` of the node; computing a lazy result (``compute=False``) raises it
    as it is, a ``ReplayError`` naming the node, its op and the user's line."""

    def __init__(self, index: int, error: BaseException, where: str = "") -> None:
        super().__init__(f"replay failed at {where or f'node %{index}'}: "
                         f"{type(error).__name__}: {error}")
        self.index = index
        self.error = error
        self.where = where

    def __reduce__(self) -> tuple:
        return type(self), (self.index, self.error, self.where)


class Guarded:
    """A task's NumPy function whose error names the node it runs for."""

    def __init__(self, fn: Callable, index: int | None) -> None:
        self.fn = fn
        self.index = index
        self.where = _where(index)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.fn(*args, **kwargs)
        except Exception as err:
            if self.index is None:
                raise
            raise BlockError(self.index, err, self.where) from err


def _where(index: int | None) -> str:
    """Node ``index`` of the program being built, its op and the user's line, as words."""
    steps = STEPS.get()
    node = None if steps is None or index is None else steps.by_index.get(index)
    if node is None:
        return ""
    return (f"node %{index} ({node.op}), recorded at "
            f"{format_source(node.source) or 'unknown source'}")


def numpy_callable(op: ops.Op) -> Callable:
    """The op's NumPy function, its errors naming the node being built."""
    return Guarded(op.bind(np), NODE.get())


class Call:
    """``fn(*args, **params)`` with the operands at ``slots`` taken from the call's arguments
    (a block, or a whole array): a picklable task function for any scheduler."""

    def __init__(self, fn: Callable, args: tuple, slots: tuple, params: dict,
                 pick: int | None = None) -> None:
        self.fn = fn
        self.args = args
        self.slots = slots
        self.params = params
        self.pick = pick

    def __call__(self, *arrays: Any) -> Any:
        args = list(self.args)
        for slot, value in zip(self.slots, arrays):
            args[slot] = value
        result = self.fn(*args, **self.params)
        return result if self.pick is None else result[self.pick]


def split_args(args: tuple) -> tuple[tuple, tuple, list]:
    """(the args with arrays replaced by ``None``, the array slots, the arrays)."""
    slots = tuple(i for i, a in enumerate(args) if is_array(a))
    template = tuple(None if i in slots else a for i, a in enumerate(args))
    return template, slots, [args[i] for i in slots]


def guard(fn: Callable) -> Callable:
    """``fn`` as a task whose error names the node being built."""
    return Guarded(fn, NODE.get())
