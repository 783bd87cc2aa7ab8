"""Which values NumPy holds C-ordered, for the JAX backend's checks of sums (issue 25).

NumPy's reduction loop follows its operand's memory layout: it adds pairwise along the axis
that is innermost in memory (the last axis of a C-ordered array, or all of them when the array
is contiguous), and one row after another along any other. A jax array has no layout, so the
order NumPy adds a sum in is read from the graph: the layout NumPy gives each value
(:meth:`Layouts.of`), as the Dask backend's second run follows it
(:mod:`capviz.backends.dask.in_order`, whose rules these are), but only as far as the checks
need it, and erring one way: a value is *C* (C-contiguous), *strided* (its axes in C order of
strides, with gaps: a slice ``x[:, :3]``), or not known (``None``: a transpose, an F-ordered
input or copy, a flipped, broadcast or diagonal view, or what is computed from one). The checks
(:func:`capviz.backends.jax.cancellation._pairwise`) take a sum as pairwise only where its
operand is C, or strided along its last axis alone; anywhere else they hold it to the running
sum's bound, which every order meets (``x.T.sum(-1)``: NumPy adds ``x.T`` row by row). An input
is what the replay is given (its host array's strides: a layout is part of the compiled
program's key, so an F-ordered input traces again); a constant is its host array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz import ops
from capviz.core.ir import Node
from capviz.ops import traits

C = "C"
"""C-contiguous."""

STRIDED = "strided"
"""Axes in C order of strides, not contiguous (a slice of a C-ordered array): NumPy's loop along
its last axis adds pairwise, its loop over several axes does not (it joins contiguous axes)."""

F = "F"
"""F-contiguous and not C-contiguous (an np.asfortranarray input, a transpose ``x.T`` of a C
value): its memory is the C-ordered array of its axes reversed. Only :mod:`np.cov's form
<capviz.backends.jax.functions.covariances>` reads it; every other reader takes it as not known,
as ``None``."""

_PERMUTE = frozenset(("transpose", "swapaxes", "moveaxis", "rollaxis", "matrix_transpose",
                      "linalg.matrix_transpose", "squeeze", "expand_dims"))
"""Views whose layout is read from a stand-in of their operand's (:func:`_viewed`)."""

_VIEWS = frozenset(("getitem", "flip", "fliplr", "flipud", "rot90", "broadcast_to",
                    "broadcast_arrays", "diagonal", "linalg.diagonal", "diag", "index", "take",
                    "real", "imag", "view", "lib.stride_tricks.sliding_window_view", "meshgrid"))
"""Ops whose result may be a flipped, broadcast or diagonal view (or a gather): not known."""


_NEW_C = frozenset(("matmul", "dot", "tensordot", "linalg.tensordot"))
"""Ops whose result NumPy allocates C-ordered whatever its operands' layouts (``x.T @ w.T``, a
batch of permuted matrices: C), so a sum of it is pairwise: GPT-2's attention multiplies
pieces of a split (strided), and every layer norm after it was held to the running sum's bound
and refused (a float32 variance of 768 terms at the twelfth layer)."""


def host_layout(value: Any) -> str | None:
    """The layout of a host value: C for what is not an ndarray (a jax array, a list: NumPy's
    ``asarray`` of it is C-ordered), for 1-d and C-contiguous arrays; :data:`STRIDED` where the
    strides are positive and in C order; else ``None``."""
    if not isinstance(value, np.ndarray) or value.ndim <= 1 or value.flags.c_contiguous:
        return C
    if value.flags.f_contiguous:
        return F
    strides = [s for s, n in zip(value.strides, value.shape) if n > 1]
    if all(s > 0 for s in strides) and strides == sorted(strides, reverse=True):
        return STRIDED
    return None


class Layouts:
    """The layout NumPy gives each value of one trace of a program: the replay's inputs' by
    name (``inputs``), the constants' and the states' live arrays' by node index
    (``constants``, ``states``; C where not given), derived through the graph for the rest
    (:meth:`of`)."""

    def __init__(self, inputs: dict[str, str | None], constants: dict[int, str | None],
                 states: dict[int, str | None] | None = None) -> None:
        self.inputs = inputs
        self.constants = constants
        self.states = states or {}
        self._memo: dict[int, str | None] = {}

    def of(self, node: Node) -> str | None:
        """``node``'s layout: :data:`C`, :data:`STRIDED` or ``None`` (not known)."""
        if node.index not in self._memo:
            self._memo[node.index] = self._of(node)
        return self._memo[node.index]

    def _of(self, node: Node) -> str | None:
        if node.shape is not None and len(node.shape) <= 1:
            return C  # NumPy's loops take a 1-d operand's stride as it is
        if node.kind == "input":
            return self.inputs.get(node.name, C)  # C where not given
        if node.kind == "constant":
            return self.constants.get(node.index, C)
        if node.kind == "state":  # its live array's, as the replay finds it
            return self.states.get(node.index, C)
        if node.kind != "op":
            return None
        tensors = [a for a in node.args if isinstance(a, Node)]
        if node.op == "unpack" and tensors and tensors[0].op in traits.SPLIT:
            pieces = [self.of(a) for a in tensors[0].args if isinstance(a, Node)]
            # a piece of a split (q, k, v = np.split(x, 3, axis=-1)): a view, strided
            return STRIDED if pieces and all(f in (C, STRIDED) for f in pieces) else None
        if node.op == "unpack" and tensors:
            tensors = [a for a in tensors[0].args if isinstance(a, Node)]  # a new array
            return C if all(self.of(a) == C for a in tensors) else None
        if node.shape is None:
            return None
        found = [self.of(a) for a in tensors]
        if node.op in _PERMUTE or _basic_index(node):
            return _viewed(node, tensors[0], found[0]) if len(tensors) == 1 else None
        if node.op in _VIEWS:
            return None
        if node.op == "unpack" or node.op in traits.SPLIT:  # pieces of a split: views
            return STRIDED if all(f in (C, STRIDED) for f in found) else None
        if node.op in _NEW_C:
            return C
        if node.params.get("order") not in (None, "C", "K", "A") or node.op == "einsum":
            return None  # an F-ordered copy or view; an einsum may return a transposed view
        elementwise = node.op in traits.ELEMENTWISE or node.op in ops.UFUNCS
        if all(f == C for f in found):
            return C
        if elementwise and all(f in (C, STRIDED) for f in found):
            return C  # a new array in its operands' (C) order of strides
        return None


def _basic_index(node: Node) -> bool:
    """A ``getitem`` of slices, integers, ``None`` and ``...``: a view."""
    if node.op != "getitem":
        return False
    index = node.params.get("index")
    parts = index if isinstance(index, tuple) else (index,)
    return all(isinstance(p, (slice, int, type(None), type(Ellipsis))) and not isinstance(p, bool)
               for p in parts)


def _viewed(node: Node, operand: Node, layout: str | None) -> str | None:
    """The layout of view ``node`` of ``operand`` (laid out as ``layout``): the op applied to a
    stand-in whose memory is one byte (a view reads none), its result's layout read from its
    strides."""
    if layout not in (C, STRIDED) or operand.shape is None:
        return None
    shape = tuple(int(n) for n in operand.shape)
    strides = [0] * len(shape)
    step = 2 if layout == STRIDED else 1  # a gap after each element of the last axis
    for axis in reversed(range(len(shape))):
        strides[axis] = step
        step *= max(shape[axis], 1)
    stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape, strides)
    args = [stand_in if a is operand else a for a in node.args]
    try:
        result = ops.get(node.op).bind(np)(*args, **node.params)
    except Exception:  # an op this reading cannot follow: not known
        return None
    if not isinstance(result, np.ndarray) or result.base is None:
        return None  # not a view: the stand-in's values were read
    return host_layout(result)
