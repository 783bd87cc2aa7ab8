"""Which reductions and products the Dask backend computes in NumPy's order, and when it may.

A node runs in NumPy's order (``backend.accumulate``) where its float sums cannot be left to
dask.array's tree: a node a first run of the replay found
:class:`~capviz.backends.dask.overflow.OrderMatters` at (:data:`NODES`), a float16 product over
a chunked contracted axis (its partial products round to float16), and
:func:`capviz.backends.dask.moments.in_order`'s reductions. A reduction along one axis runs
NumPy's function per block with that axis and the ones after it in one chunk (:func:`blocks`:
NumPy's loop adds pairwise along a reduced axis that is innermost, row after row along one that
is not, so a block's loop must be the whole array's); other reductions and every product run on
one block.

That is NumPy's order for C-ordered operands only. NumPy's loop follows an operand's memory
layout (a column of an F-ordered array is contiguous: added pairwise where a C-ordered one is
added row after row), and a dask array has none. A reduction of an input or constant itself
runs NumPy's function on that array, in its own layout (:func:`direct`); any other node whose
operands come from an input or constant of two or more axes that is not C-contiguous is not
computed again: its ``OrderMatters`` is the replay's error (:func:`refusal`), naming that
array.
"""

from __future__ import annotations

import operator
from contextvars import ContextVar
from typing import Any

import numpy as np

from capviz.backends.dask import contractions, moments
from capviz.backends.dask.overflow import OrderMatters
from capviz.core.ir import Node
from capviz.ops import traits

NODES: ContextVar[dict | None] = ContextVar("capviz_dask_in_order", default=None)
"""The nodes a run of the replay being built found ``OrderMatters`` at, built in NumPy's order:
each with the host array its reduction reads directly (an input or constant, reduced in its own
memory layout), or ``None``; ``None`` outside a replay's build."""


def wanted(name: str, args: tuple, params: dict, dtype: np.dtype, index: int | None) -> bool:
    """Whether node ``index``, reduction or product ``name`` of ``args`` with a result of
    ``dtype``, must add in NumPy's order (see the module docstring)."""
    if index in (NODES.get() or ()):
        return True
    if name in traits.CONTRACT:
        return dtype == np.float16 and all(hasattr(a, "chunks") for a in args) \
            and contractions.split(args, contractions.contracted(name, args, params)[0])
    return moments.in_order(name, args[0], params)


def blocks(x: Any, axis: int) -> Any:
    """``x`` with axis ``axis`` and the ones after it in one chunk."""
    return x.rechunk({a: -1 for a in range(operator.index(axis) % x.ndim, x.ndim)})


def _not_c_ordered(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.ndim > 1 and not value.flags.c_contiguous


def direct(node: Node, inputs: dict, constants: dict) -> Any:
    """The host array that reduction ``node`` reads directly (its operand an input or a
    constant), or ``None``: reduced in its own memory layout, it is NumPy's sum whatever the
    layout."""
    operand = node.args[0] if node.args and node.op not in traits.CONTRACT else None
    if not isinstance(operand, Node):
        return None
    if operand.kind == "input":
        return inputs.get(operand.name)
    return constants.get(operand.index) if operand.kind == "constant" else None


def strided_source(node: Node, inputs: dict, constants: dict) -> str | None:
    """The first input or constant upstream of ``node`` that is not C-ordered (two or more
    axes), in words, or ``None``. ``inputs``: the replay's host arrays by input name;
    ``constants``: the graph's constant arrays by node index."""
    seen: set[int] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if n.index in seen:
            continue
        seen.add(n.index)
        if n.kind == "input" and _not_c_ordered(inputs.get(n.name)):
            return f"input {n.name!r}"
        if n.kind == "constant" and _not_c_ordered(constants.get(n.index)):
            return f"constant %{n.index}" + (f" {n.name!r}" if n.name else "")
        todo.extend(a for a in n.args if isinstance(a, Node))
    return None


def refusal(error: OrderMatters, source: str) -> OrderMatters:
    """The replay's error where NumPy's order follows ``source``'s memory layout."""
    text = str(error).split("; replay with", 1)[0]
    return OrderMatters(
        f"{text}; NumPy's order of addition follows the memory layout of {source}, which is not "
        "C-contiguous, and a dask array has none: replay with backend='numpy', or with chunks= "
        "that keep the reduced axes in one chunk")
