"""Which reductions and products the Dask backend computes in NumPy's order, and when it may.

A node runs in NumPy's order (``reductions.accumulate``) where its float sums cannot be left to
dask.array's tree: a node a first run of the replay found
:class:`~capviz.backends.dask.overflow.OrderMatters` at (:data:`NODES`), a float16 product over
a chunked contracted axis (its partial products round to float16; and any float16 product but
a ``matmul``, whose blocks dask.array joins: it adds even one block's product into a ``+0.0``,
where NumPy's rounding of a negative float32 total below float16's smallest subnormal is
``-0.0``), and
:func:`capviz.backends.dask.moments.in_order`'s reductions. A reduction along one axis runs
NumPy's function per block with that axis and the ones after it in one chunk (:func:`blocks`:
NumPy's loop adds pairwise along a reduced axis that is innermost, row after row along one that
is not, so a block's loop must be the whole array's); other reductions and every product run on
one block.

NumPy's loop follows its operand's memory layout (a column of an F-ordered array, or of a
transposed C-ordered one, is contiguous: added pairwise where a C-ordered column is added row
after row), and a dask array has none. So the second run follows the layout NumPy gives each
value (:class:`Layouts`): an input's or constant's own (its axes' order in memory, where it is
contiguous in some order of its axes), kept through elementwise ops whose operands share it
(NumPy's ``K`` order), permuted by ``transpose``/``swapaxes``/``moveaxis``/``rollaxis``/
``matrix_transpose``, kept or lost by basic indexing and flips (read from a view of a
stand-in; a flipped axis is read in its own order, as a strided one), C order for what is
computed from C-ordered values (a flipped or strided one too: NumPy writes a new array). A
reduction of an input or constant itself runs NumPy's function on that array
(:func:`direct`); a node whose operand is laid out in another order than C runs on one block
whose array has that layout (:func:`laid_out`); a node whose operand's layout cannot be known
(a broadcast, a mix of layouts) is not computed again: its ``OrderMatters`` is the replay's
error (:func:`refusal`), naming the value whose layout decides. A strided or flipped view
reduced over several axes is not in any order of its axes either (NumPy's loop joins none of
them and reads each in its own order): where its strides are known (:class:`Standin`, through
the program's views), NumPy's function runs on a buffer with those strides
(:func:`strided_operand`). The same layouts say whether
NumPy adds a reduction pairwise or one term after another (:func:`pairwise`), which sets the
bound the checks hold a sum and a variance to.
"""

from __future__ import annotations

import operator
from contextvars import ContextVar
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.dask import contractions, moments
from capviz.backends.dask.overflow import WHOLE, OrderMatters, OutOfRange
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
    if name in traits.CONTRACT:  # float16: NumPy adds in float32 and rounds once
        return dtype == np.float16 and all(hasattr(a, "chunks") for a in args) and (
            name != "matmul"  # dask.array's sum of each block's product loses its -0.0
            or contractions.split(args, contractions.contracted(name, args, params)[0]))
    return moments.in_order(name, args[0], params)


def blocks(x: Any, axis: int) -> Any:
    """``x`` with axis ``axis`` and the ones after it in one chunk."""
    return x.rechunk({a: -1 for a in range(operator.index(axis) % x.ndim, x.ndim)})


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


LAYOUTS: ContextVar[Layouts | None] = ContextVar("capviz_dask_layouts", default=None)
"""The :class:`Layouts` of the replay being built; ``None`` outside a replay's build."""

_PERMUTE = frozenset(("transpose", "swapaxes", "moveaxis", "rollaxis", "matrix_transpose",
                      "linalg.matrix_transpose", "squeeze", "expand_dims"))
"""Views whose result is their operand's axes in another order (or with axes of length one
taken away or added)."""
_VIEWS = frozenset(("getitem", "flip", "fliplr", "flipud", "rot90", "broadcast_to",
                    "broadcast_arrays", "diagonal", "linalg.diagonal", "index", "take", "real",
                    "imag", "view", "lib.stride_tricks.sliding_window_view"))
"""Ops whose result may be a strided, flipped or broadcast view: a layout NumPy's loops see
that no order of the axes describes."""


_FLIPS = frozenset(("flip", "fliplr", "flipud", "rot90"))
"""Views that flip axes (and ``rot90`` permutes two): read from a view of a stand-in, as basic
indexing is."""

_FRESH_C = frozenset(("matmul", "dot", "tensordot", "linalg.tensordot", "inner", "vecdot",
                      "linalg.vecdot", "matvec", "vecmat", "linalg.multi_dot", "outer",
                      "linalg.outer"))
"""Products whose result NumPy allocates in C order whatever its operands' layouts (a
transposed or strided operand too; not ``einsum``, which keeps its operands' order): the
attention scores ``q[:, i::4] @ k[:, i::4].T`` of a GPT-2 head are C-ordered, and a softmax
sum of them adds as NumPy's does (W=25s: the sound default of
``capviz/backends/cancelling.py`` makes it reach the residual add)."""


class Layouts:
    """The memory layout NumPy gives each value of a replay: its axes from the slowest to the
    fastest in memory (C order: ``0, 1, ..., n - 1``), or ``None`` where no order of the axes
    describes it. ``inputs``: the replay's host arrays by input name; ``constants``: the
    graph's constant arrays by node index."""

    def __init__(self, inputs: dict, constants: dict) -> None:
        self.inputs = inputs
        self.constants = constants
        self._memo: dict[int, tuple[tuple | None, str]] = {}
        self._standins: dict[int, Standin | None] = {}

    def standin(self, node: Node) -> Standin | None:
        """The strides NumPy's ``node`` has, where they are known (:class:`Standin`), else
        ``None``."""
        if node.index not in self._standins:
            self._standins[node.index] = self._standin(node)
        return self._standins[node.index]

    def _standin(self, node: Node) -> Standin | None:
        shape = node.shape
        if shape is None or not all(isinstance(n, (int, np.integer)) for n in shape):
            return None
        shape = tuple(int(n) for n in shape)
        order = self.order(node)[0]
        if order is None:
            return None
        host = self.inputs.get(node.name) if node.kind == "input" \
            else self.constants.get(node.index) if node.kind == "constant" else None
        if isinstance(host, np.ndarray) and host.shape == shape:  # its own strides
            if any(s % host.itemsize for s in host.strides):
                return None
            return Standin.of(shape, tuple(s // host.itemsize for s in host.strides))
        if not isinstance(order, Strided):  # contiguous in ``order``
            strides = [0] * len(shape)
            step = 1
            for axis in reversed(order):
                strides[axis] = step
                step *= max(shape[axis], 1)
            return Standin.of(shape, tuple(strides))
        operands = [a for a in node.args if isinstance(a, Node)]
        if not _a_view(node) or len(operands) != 1:
            return None
        base = self.standin(operands[0])
        if base is None:
            return None
        args = [base.view if a is operands[0] else a for a in node.args]
        try:
            result = ops.get(node.op).bind(np)(*args, **node.params)
        except Exception:  # an op this reading cannot follow: its strides are unknown
            return None
        if not isinstance(result, np.ndarray) or result.base is None or result.shape != shape:
            return None
        return Standin(result, base.root)

    def order(self, node: Node) -> tuple[tuple | None, str]:
        """(``node``'s axes in memory order, or ``None``; the value whose layout decides it,
        in words)."""
        if node.index not in self._memo:
            self._memo[node.index] = self._order(node)
        return self._memo[node.index]

    def _order(self, node: Node) -> tuple[tuple | None, str]:
        ndim = len(node.shape) if node.shape is not None else None
        c = tuple(range(ndim)) if ndim is not None else None
        if node.kind in ("input", "constant"):
            host = self.inputs.get(node.name) if node.kind == "input" \
                else self.constants.get(node.index)
            words = f"input {node.name!r}" if node.kind == "input" \
                else f"constant %{node.index}" + (f" {node.name!r}" if node.name else "")
            return _host_order(host, c), words
        words = f"the result of node %{node.index} ({node.op})"
        if ndim is None:
            return None, words
        if sum(not _one(n) for n in node.shape) <= 1:  # NumPy's loops take a 1-d operand's
            return c, words  # stride as it is; axes of length one are in no order
        if node.op in _FRESH_C and node.params.get("out") is None:
            return c, words  # a product NumPy writes into a new C-ordered array
        operands = [self.order(a) + (a,) for a in node.args if isinstance(a, Node)]
        unknown = [w for o, w, _ in operands if o is None]
        if len(operands) == 1 and _a_view(node):
            order, origin, operand = operands[0]
            if order is None:
                return None, origin
            view = _viewed(node, operand, order)
            if view is not None and isinstance(order, Strided):
                view = Strided(view)  # a view of a strided value: strided
            return (view, words) if view is not None else (None, words)
        if node.op in _VIEWS:
            return None, words
        elementwise = node.op in traits.ELEMENTWISE or isinstance(getattr(np, node.op, None),
                                                                    np.ufunc)
        asked = node.params.get("order")
        if asked in ("C", "F") and elementwise and not unknown:  # x.copy(order="F")
            return (c if asked == "C" else c[::-1]), words
        if asked not in (None, "C", "K", "A"):
            return None, words  # reshape(order="F"): a view or copy in F order
        if unknown:
            return None, unknown[0]
        if all(o == tuple(range(len(a.shape or ()))) for o, _, a in operands):
            return c, words  # computed from C-ordered values (strided ones too): C order
        # an operand broadcast along all its axes but one sets no order of two axes (NumPy's
        # iterator orders the axes by the operands whose strides along both are not 0)
        full = [(o, w, a) for o, w, a in operands if _spans(a, node.shape) > 1] \
            if elementwise else [(o, w, a) for o, w, a in operands if len(a.shape or ()) > 0]
        shared = bool(full) and all(o == full[0][0] and a.shape == node.shape
                                    for o, _, a in full)
        if elementwise and asked != "A" and shared:
            return tuple(full[0][0]), full[0][1]  # K order: the operands' common layout
        return None, next(w for o, w, a in operands if o != tuple(range(len(a.shape or ()))))


def _spans(operand: Node, shape: tuple) -> int:
    """How many axes of length more than one of ``shape`` ``operand`` has its own (not
    broadcast) values along."""
    own = tuple(operand.shape or ())
    return sum(1 for k, n in enumerate(own[::-1])
               if not _one(n) and not _one(shape[len(shape) - 1 - k]))


def _one(size: Any) -> bool:
    """Whether a size is the number 1 (a data-dependent size, a symbol of the capture whose
    comparison would record an op, is not)."""
    return isinstance(size, (int, np.integer)) and size == 1


class Standin:
    """A value's strides as NumPy has them (in elements), read from a view of one byte of
    memory (``view``, made from ``root``): where NumPy reduces a strided or flipped view over
    several axes, its loop follows those strides (it joins no axes and reads each in its own
    order), so the Dask replay runs NumPy's function on a buffer with the same strides
    (:meth:`restrided`)."""

    def __init__(self, view: np.ndarray, root: np.ndarray) -> None:
        self.view = view
        self.root = root

    @classmethod
    def of(cls, shape: tuple, strides: tuple) -> Standin:
        root = np.zeros(1, np.uint8)
        return cls(np.lib.stride_tricks.as_strided(root, shape, strides), root)

    def place(self) -> tuple[tuple, tuple, int, int, int]:
        """(shape, strides, the first element's offset, the lowest and the highest offset
        read), in elements from the stand-in's one byte of memory."""
        shape, strides = self.view.shape, self.view.strides
        first = self.view.__array_interface__["data"][0] - self.root.__array_interface__["data"][0]
        low = first + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides) if n)
        high = first + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides) if n)
        return shape, strides, first, low, high

    def layout(self) -> tuple[tuple, tuple, int, int]:
        """(shape, strides, the first element's offset in a buffer, the buffer's length), in
        elements."""
        shape, strides = self.view.shape, self.view.strides
        first = self.view.__array_interface__["data"][0] - self.root.__array_interface__["data"][0]
        if 0 in shape:
            return shape, strides, 0, 0
        low = first + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        high = first + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
        return shape, strides, first - low, high - low + 1


def restrided(values: np.ndarray, layout: tuple) -> np.ndarray:
    """``values`` copied into a new buffer as a view with ``layout``'s strides
    (:meth:`Standin.layout`)."""
    shape, strides, first, length = layout
    buffer = np.empty(length, values.dtype)
    view = np.lib.stride_tricks.as_strided(buffer[first:], shape,
                                           tuple(s * values.itemsize for s in strides))
    view[...] = values
    return view


class Strided(tuple):
    """A memory order (axes from the slowest to the fastest) of a value that is not contiguous
    in it (a stepped or partial slice): NumPy's loop along one axis adds as on a contiguous
    array of that order, its loop over several axes does not (it joins contiguous axes)."""


def _host_order(host: Any, c: tuple | None) -> tuple | None:
    """A host array's axes in memory order (:class:`Strided` where it is not contiguous in
    it, or flipped; C order for what is not an ndarray), or ``None`` (a broadcast array).

    A flipped axis (a negative stride, ``x[::-1]``) is read in its own order, not memory's:
    NumPy's reduction adds it as it adds a copy (``x[:, ::-1].sum(-1)`` is
    ``x[:, ::-1].copy().sum(-1)``, not ``x.sum(-1)``), and its elementwise ops write a result
    with positive strides in the same order of the axes (``np.exp(x[::-1])`` is C-contiguous):
    the order of the strides' magnitudes, :class:`Strided` (no loop joins its axes)."""
    if not isinstance(host, np.ndarray) or host.ndim <= 1 or host.flags.c_contiguous:
        return c
    strides = [s if n > 1 else 0 for s, n in zip(host.strides, host.shape)]
    if any(s == 0 for s, n in zip(strides, host.shape) if n > 1):
        return None
    flipped = any(s < 0 for s in strides)
    order = tuple(int(a) for a in np.argsort([-abs(s) for s in strides], kind="stable"))
    if not flipped and host.transpose(order).flags.c_contiguous:
        return order
    return Strided(order)


def _viewed(node: Node, operand: Node, order: tuple) -> tuple | None:
    """The memory order of ``node``, a view of ``operand`` laid out in ``order``: the op applied
    to a stand-in of that layout whose memory is one byte (a view reads none), its result's
    layout read from its strides (``None``: strided, flipped or broadcast)."""
    shape = tuple(operand.shape)
    strides = [0] * len(shape)
    step = 1
    for axis in reversed(order):
        strides[axis] = step
        step *= max(int(shape[axis]), 1)
    stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape, strides)
    args = [stand_in if a is operand else a for a in node.args]
    try:
        result = ops.get(node.op).bind(np)(*args, **node.params)
    except Exception:  # an op this reading cannot follow: its layout is unknown
        return None
    if not isinstance(result, np.ndarray) or result.base is None:
        return None  # not a view: the stand-in's values were read
    return _host_order(result, tuple(range(result.ndim)))


def _a_view(node: Node) -> bool:
    """Whether ``node`` is an axis permutation or a basic index (slices, integers, ``None``,
    ``...``): a view of its one tensor operand that reads no data."""
    if node.op in _PERMUTE or node.op in _FLIPS:
        return True
    index = node.params.get("index") if node.op == "getitem" else None
    parts = index if isinstance(index, tuple) else (index,)
    return node.op == "getitem" and all(
        isinstance(p, (slice, int, type(None), type(Ellipsis))) and not isinstance(p, bool)
        for p in parts)


def operand_orders(node: Node, restrided: bool = False) -> tuple[list[tuple | None], str | None]:
    """The memory order of each tensor operand of ``node`` (``None`` for C order), and the
    value whose layout cannot be known, in words, or ``None``: see :data:`LAYOUTS`. A strided
    operand is known for a reduction along one axis (see :class:`Strided`), and with
    ``restrided`` over several where its strides are (:func:`strided_operand`: the order
    returned is the :class:`Strided` one)."""
    layouts = LAYOUTS.get()
    along_one_axis = node.op not in traits.CONTRACT and isinstance(node.params.get("axis"), int)
    if restrided and strided_operand(node) is not None:
        return [layouts.order(node.args[0])[0]], None
    orders: list[tuple | None] = []
    for a in node.args:
        if not isinstance(a, Node):
            continue
        order, words = layouts.order(a) if layouts is not None else (None, "")
        if layouts is None:
            order = None
        elif order is None or (isinstance(order, Strided) and not along_one_axis):
            return [], words
        orders.append(None if order is None or order == tuple(range(len(order)))
                      else tuple(order))
    return orders, None


def strided_operand(node: Node | None) -> Standin | None:
    """The strides of the one tensor operand of ``node``, a reduction over several axes of a
    strided or flipped view (``x[::-1].sum()``, ``np.rot90(x).mean(axis=(0, 1))``), where they
    are known: NumPy's function on a buffer with those strides adds as NumPy's loop does
    (every reduction is NumPy's own, on one block); else ``None``."""
    layouts = LAYOUTS.get()
    if layouts is None or node is None or node.op in traits.CONTRACT \
            or isinstance(node.params.get("axis"), int) or not node.args:
        return None
    operand = node.args[0]
    if not isinstance(operand, Node) or any(isinstance(a, Node) for a in node.args[1:]) \
            or any(isinstance(v, Node) for v in node.params.values()):
        return None
    if not isinstance(layouts.order(operand)[0], Strided):
        return None
    return layouts.standin(operand)


def operand_standins(node: Node | None) -> list | None:
    """The strides of each tensor operand of product ``node`` (a :class:`Standin`'s
    :meth:`~Standin.layout`, or ``None`` for a C-contiguous one) where one is not C-contiguous
    and every one is known: NumPy's product of a strided view is not its BLAS's product of a
    contiguous copy (``x[:, ::2] @ ones`` of float32 values near 1e3 in one chunk, the hostile
    review 8's finding 25), so it runs as NumPy's function on buffers with NumPy's strides;
    else ``None``."""
    layouts = LAYOUTS.get()
    if layouts is None or node is None:
        return None
    tensors = [a for a in node.args if isinstance(a, Node)]
    roots = [_root(a) for a in tensors]
    if len(set(roots)) != len(roots):  # views of one buffer (x @ x.T: NumPy's syrk)
        return _one_buffer(layouts, tensors)
    found: list = []
    for a in tensors:
        order = layouts.order(a)[0]
        if order is None:
            return None
        if not isinstance(order, Strided) and order == tuple(range(len(order))):
            found.append(None)
            continue
        standin = layouts.standin(a)
        if standin is None:
            return None
        found.append(standin.layout())
    return found if any(f is not None for f in found) else None


def _one_buffer(layouts: Layouts, tensors: list) -> list | None:
    """Each tensor operand's place in one buffer, where they are all views of one value and one
    of them is strided (``v @ v.T`` of ``v = x[:, ::2]``: NumPy's product reads one buffer, the
    hostile review 8's finding 25), as ``("buffer", shape, strides, first, low, length)``
    (elements; :func:`restrided_together`); else ``None`` (``x @ x.T`` of a contiguous ``x``
    is left as it was)."""
    standins = [layouts.standin(a) for a in tensors]
    if any(s is None for s in standins) or len({id(s.root) for s in standins}) != 1 \
            or not any(isinstance(layouts.order(a)[0], Strided) for a in tensors):
        return None
    places = [s.place() for s in standins]
    low = min(p[3] for p in places)
    high = max(p[4] for p in places)
    return [("buffer", shape, strides, first - low, high - low + 1)
            for shape, strides, first, _, _ in places]


def restrided_together(values: list, layouts: list) -> list:
    """``values`` written into one new buffer at the places ``layouts`` give
    (:func:`_one_buffer`): views of it, as NumPy's operands are views of one value."""
    length = layouts[0][4]
    buffer = np.empty(length, values[0].dtype)
    views = []
    for value, (_, shape, strides, first, _) in zip(values, layouts):
        view = np.lib.stride_tricks.as_strided(
            buffer[first:], shape, tuple(s * value.itemsize for s in strides))
        view[...] = value
        views.append(view)
    return views


def _root(node: Node) -> int:
    """The index of the value ``node`` is a view of (through :func:`_a_view` ops), or its own."""
    while node.kind == "op" and _a_view(node):
        operands = [a for a in node.args if isinstance(a, Node)]
        if len(operands) != 1:
            break
        node = operands[0]
    return node.index


def pairwise(node: Node | None, axes: tuple) -> bool:
    """Whether NumPy adds each output of reduction ``node`` over ``axes`` (normalized) pairwise:
    along its inner loop, the reduced axes the last ones in its operand's memory order (all of
    them, for a contiguous operand; a ``trace``'s diagonal), as :data:`LAYOUTS` knows it
    (axes of length one do not count). Else NumPy keeps a running sum, one term after another
    (row after row; ``einsum``'s own loops), or the layout is unknown: ``False``."""
    if node is None or node.op == "einsum":
        return False
    if node.op == "trace":
        return True
    operand = next((a for a in node.args if isinstance(a, Node)), None)
    if operand is None or operand.shape is None:
        return False
    shape = tuple(operand.shape)
    if len(shape) < 2:
        return True
    layouts = LAYOUTS.get()
    order = layouts.order(operand)[0] if layouts is not None else tuple(range(len(shape)))
    if order is None:
        return False
    inner = [a for a in order if shape[a] != 1]
    reduced = {a for a in axes if shape[a] != 1}
    if not reduced:
        return True
    if isinstance(order, Strided):  # not contiguous: a loop over several axes does not join
        return reduced == {inner[-1]}
    return reduced == set(inner[len(inner) - len(reduced):])


def laid_out(x: Any, order: tuple | None) -> Any:
    """Dask array ``x`` as one block whose array is laid out in memory in ``order`` (``None``:
    ``x`` itself)."""
    if order is None:
        return x
    inverse = tuple(int(a) for a in np.argsort(order))
    return x.transpose(order).rechunk(-1).transpose(inverse)


def refusal(error: OrderMatters, source: str) -> OrderMatters:
    """The replay's error where NumPy's order follows ``source``'s memory layout."""
    text, _, fixes = str(error).partition("; replay with")
    if isinstance(error, OutOfRange):  # a block of one chunk is tested and refused again
        return OutOfRange(
            f"{text}; NumPy's cast loop follows the memory layout of {source}, which is not "
            "C-contiguous, and a dask array has none: replay with backend='numpy'")
    chunks = WHOLE if WHOLE in fixes else "chunks= that keep the reduced axes in one chunk"
    return OrderMatters(
        f"{text}; NumPy's order of addition follows the memory layout of {source}, which is not "
        f"C-contiguous, and a dask array has none: replay with backend='numpy', or with {chunks}")
