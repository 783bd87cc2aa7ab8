"""Views: which ops return a view of their operand in NumPy, and how a write goes back.

The recorder calls :data:`VIEWS` after an op whose result may share its operand's memory. The
rule of each view op (:data:`VIEW_RULES`) gives the :class:`~capviz.trace.mutation.Step` from
the operand to the view: the op that re-derives the view from a new value of its operand, and the
inverse that turns a write into the view into a write into the operand (a basic index: a
``setitem`` into the parent; an axis permutation: the inverse transpose; a flip: the same flip;
reshape, squeeze, expand_dims: a reshape back). A view NumPy makes read-only raises NumPy's error
when written; a view without an inverse here is refused by name when written, and still follows
writes to its base.

Whether ``reshape`` and ``ravel`` return a view depends on memory layout. Each tensor of a
storage carries a stand-in of its strides in a C-contiguous buffer of one-byte elements (no
memory: ``as_strided`` over one byte, never read), and NumPy's own ``reshape(..., copy=False)``
on it says whether eager NumPy copies. Where capture does not know the layout (a buffer made from
operands of unknown layout), the reshape is *uncertain*: a write through it, or into its base
while it lives, is refused by name. Inputs are assumed C-contiguous: a reshape or ravel decided
from that assumption is noted on the buffer's :class:`~capviz.trace.mutation.Storage`
(``decided``), and a write into such a buffer marks the inputs it rested on as needing a
C-contiguous array at replay (:func:`~capviz.trace.mutation.require_c_layout`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from capviz import ops
from capviz.core.errors import UnsupportedOperationError
from capviz.core.ir import Node
from capviz.core.source import user_source
from capviz.core.symbols import has_symbol
from capviz.trace import mutation
from capviz.trace.mutation import Alias, Step, Storage, is_numpy_scalar, record
from capviz.trace.tensor import Tensor

_VOID = np.dtype([])


def _write_refusal(call: str) -> Callable[[], Exception]:
    def make() -> Exception:
        return UnsupportedOperationError(
            f"writing through the result of {call} is not supported in a capture (in NumPy it "
            "is a view of its operand, and this write cannot be recorded through it); write into "
            "the base tensor instead, or take a copy first (.copy())")

    return make


def _read_only() -> Exception:
    return ValueError("assignment destination is read-only")


def _is_basic(index: tuple) -> bool:
    return all(k is None or k is Ellipsis or type(k) in (int, slice) for k in index)


def _setitem_inverse(index: tuple) -> Callable:
    def inverse(rec: Any, parent: Node, value: Node) -> Node:
        return record(rec, ops.OPS["setitem"], (parent, value), {"index": index})

    return inverse


def _reshape_back(rec: Any, parent: Node, value: Node) -> Node:
    return record(rec, ops.OPS["reshape"], (value,), {"shape": tuple(parent.shape)})


def _getitem_rule(parent: Node, out: Node, params: dict, layout: Any) -> Any:
    index = params["index"]
    if not _is_basic(index):
        return None  # advanced indexing copies
    if not out.shape and Ellipsis not in index:
        return None  # NumPy returns a scalar (a copy), not a 0-d view
    return (Step(ops.OPS["getitem"], params, _setitem_inverse(index)),
            None if layout is None else layout[index])


def _transpose_rule(parent: Node, out: Node, params: dict, layout: Any) -> Any:
    ndim = len(parent.shape)
    axes = params.get("axes")
    axes = tuple(reversed(range(ndim))) if axes is None else \
        tuple(int(a) % ndim for a in ((axes,) if isinstance(axes, int) else axes))
    back = tuple(int(i) for i in np.argsort(axes))

    def inverse(rec: Any, parent: Node, value: Node) -> Node:
        return record(rec, ops.OPS["transpose"], (value,), {"axes": back})

    return (Step(ops.OPS["transpose"], params, inverse),
            None if layout is None else layout.transpose(axes))


def _swapaxes_rule(parent: Node, out: Node, params: dict, layout: Any) -> Any:
    def inverse(rec: Any, parent: Node, value: Node) -> Node:
        return record(rec, ops.OPS["swapaxes"], (value,), params)

    return (Step(ops.OPS["swapaxes"], params, inverse),
            None if layout is None else layout.swapaxes(params["axis1"], params["axis2"]))


def _dims_rule(name: str, on_layout: Callable) -> Callable:
    """expand_dims, squeeze: always a view; undone by a reshape to the parent's shape."""

    def rule(parent: Node, out: Node, params: dict, layout: Any) -> Any:
        return (Step(ops.OPS[name], params, _reshape_back),
                None if layout is None else on_layout(layout, params))

    return rule


def _reshape_back_f(rec: Any, parent: Node, value: Node) -> Node:
    return record(rec, ops.OPS["reshape"], (value,), {"shape": tuple(parent.shape),
                                                      "order": "F"})


def _reshape_rule(parent: Node, out: Node, params: dict, layout: Any) -> Any:
    order = params.get("order", "C")
    step = Step(ops.OPS["reshape"], params, _reshape_back if order == "C" else _reshape_back_f)
    if layout is None:
        return step, UNCERTAIN
    try:
        return step, np.reshape(layout, out.shape, order=order, copy=False)
    except ValueError:
        return None  # NumPy copies: this layout cannot be reshaped in place


def _ravel_rule(parent: Node, out: Node, params: dict, layout: Any) -> Any:
    step = Step(ops.OPS["ravel"], params, _reshape_back)
    if layout is None or params.get("order", "C") != "C":
        return step, UNCERTAIN
    if not layout.flags.c_contiguous:
        return None  # ravel copies unless its operand is C-contiguous
    return step, layout.reshape(-1)


def _permutation_rule(name: str) -> Callable:
    """An op that only permutes axes (moveaxis, rollaxis, matrix_transpose...): its permutation
    is read off the op run on a zero-byte dummy whose axis lengths are their own positions, and
    a write goes back through the inverse transpose."""

    def rule(parent: Node, out: Node, params: dict, layout: Any) -> Any:
        ndim = len(parent.shape)
        probe = np.empty(tuple(range(2, ndim + 2)), _VOID)
        perm = tuple(d - 2 for d in ops.OPS[name].bind(np)(probe, **params).shape)
        back = tuple(int(i) for i in np.argsort(perm))

        def inverse(rec: Any, parent: Node, value: Node) -> Node:
            return record(rec, ops.OPS["transpose"], (value,), {"axes": back})

        return (Step(ops.OPS[name], params, inverse),
                None if layout is None else layout.transpose(perm))

    return rule


def _involution_rule(name: str) -> Callable:
    """An op that is its own inverse (flip, fliplr, flipud): a write goes back through it."""

    def rule(parent: Node, out: Node, params: dict, layout: Any) -> Any:
        op = ops.OPS[name]

        def inverse(rec: Any, parent: Node, value: Node) -> Node:
            return record(rec, op, (value,), params)

        return (Step(op, params, inverse),
                None if layout is None else op.bind(np)(layout, **params))

    return rule


def _read_only_rule(name: str, on_layout: Callable | None = None) -> Callable:
    """A read-only view in NumPy (writing raises its ValueError); it follows writes to its base."""

    def rule(parent: Node, out: Node, params: dict, layout: Any) -> Any:
        view = None if layout is None or on_layout is None else on_layout(layout, params)
        # sliding_window_view(writeable=True): NumPy writes through overlapping windows
        refusal = _write_refusal(f"np.{name}(..., writeable=True)") \
            if params.get("writeable") else _read_only
        return Step(ops.OPS[name], params, None, refusal), view

    return rule


def _diag_rule(parent: Node, out: Node, params: dict, layout: Any) -> Any:
    if len(parent.shape) != 2:
        return None  # np.diag of a 1-d array builds a new 2-d array
    return _read_only_rule("diag")(parent, out, params, layout)


def _forward_only_rule(name: str) -> Callable:
    """A writable view in NumPy that capture re-derives after writes to its base but cannot
    write through (a named error)."""

    def rule(parent: Node, out: Node, params: dict, layout: Any) -> Any:
        if len(out.args) != 1:
            return _maybe_view_rule(name)(parent, out, params, layout)
        return Step(ops.OPS[name], params, None, _write_refusal(f"np.{name}")), None

    return rule


def _maybe_view_rule(name: str) -> Callable:
    """An op that returns a view or a copy depending on things capture does not track."""

    def rule(parent: Node, out: Node, params: dict, layout: Any) -> Any:
        if len(out.operands) > 1:
            return None  # a product of several operands is a new array
        return Step(ops.OPS[name], params, None), UNCERTAIN

    return rule


UNCERTAIN = "uncertain"

#: Ops whose result is a view of their first operand in NumPy, by op name: ``rule(parent,
#: out, params, layout) -> (Step, layout) | None`` (``None``: this call copies). An op that
#: returns a view must be listed here, or a write through it (or into its base) is not seen.
VIEW_RULES: dict[str, Callable] = {
    "getitem": _getitem_rule,
    "transpose": _transpose_rule,
    "swapaxes": _swapaxes_rule,
    "reshape": _reshape_rule,
    "ravel": _ravel_rule,
    "expand_dims": _dims_rule("expand_dims", lambda lay, p: np.expand_dims(lay, p["axis"])),
    "squeeze": _dims_rule("squeeze", lambda lay, p: np.squeeze(lay, p.get("axis"))),
    "broadcast_to": _read_only_rule(
        "broadcast_to", lambda lay, p: np.broadcast_to(lay, p["shape"])),
    "diagonal": _read_only_rule("diagonal"),
    "linalg.diagonal": _read_only_rule("linalg.diagonal"),
    "diag": _diag_rule,
    "lib.stride_tricks.sliding_window_view": _read_only_rule(
        "lib.stride_tricks.sliding_window_view"),
    "einsum": _maybe_view_rule("einsum"),
}
READ_ONLY = frozenset(("broadcast_to", "diagonal", "linalg.diagonal", "diag",
                       "lib.stride_tricks.sliding_window_view"))
"""View ops whose result NumPy makes read-only (a write raises its ValueError)."""


def read_only_array(node: Node, op: ops.Op, params: dict) -> Alias:
    """The alias of a read-only 0-d array NumPy made from a NumPy scalar
    (``np.broadcast_to(x[1], ())``): its own storage, whose writes raise NumPy's ValueError."""
    step = Step(op, params, None, _read_only)
    return Alias(Storage(node), (step,), (node, node), None)


for _name in ("moveaxis", "rollaxis", "matrix_transpose", "linalg.matrix_transpose",
              "permute_dims"):
    VIEW_RULES[_name] = _permutation_rule(_name)
for _name in ("flip", "fliplr", "flipud"):
    VIEW_RULES[_name] = _involution_rule(_name)
for _name in ("rot90", "real", "imag", "atleast_1d", "atleast_2d", "atleast_3d",
              "lib.stride_tricks.as_strided", "view"):
    VIEW_RULES[_name] = _forward_only_rule(_name)


def base_alias(rec: Any, base: Tensor) -> Alias:
    """The alias of ``base``, a view's operand: made (the root of its own storage) the first
    time a view is taken of it."""
    alias = base._alias
    if alias is None:
        layout, assumes = _root_layout(rec, base._data)
        alias = Alias(Storage(base._data, assumes), (), (base._data,), layout)
        base._alias = alias
    return alias


def track_view(rec: Any, op: ops.Op, args: tuple, params: dict, out: Tensor) -> None:
    """After a view op: make ``out`` share the storage of its operand ``args[0]``."""
    base = args[0]
    if type(base) is not Tensor or base._trace is not rec:
        _foreign_view(op, out)
        return
    if is_numpy_scalar(base):
        return  # indexing a NumPy scalar gives a new array
    alias = base_alias(rec, base)
    if op.name == "view":
        _check_resizing_view(rec, base._data, params, alias)
    made = VIEW_RULES[op.name](base._data, out._data, params, alias.layout)
    storage = alias.storage
    depends = storage.assumes if op.name in LAYOUT_DECISIONS and alias.layout is not None \
        else frozenset()
    if depends:  # this view-or-copy decision read the inputs' assumed C layout
        storage.decided |= depends
    if made is None:
        if depends:  # a copy here, a view of the base with another input layout
            _layout_dependent_copy(out, depends)
        return
    step, layout = made
    uncertain = layout is UNCERTAIN
    if uncertain:
        layout = None
        step.refusal = _uncertain_refusal(op.name)
    out._alias = Alias(alias.storage, alias.steps + (step,), alias.path + (out._data,), layout)
    rec.layouts[out._data.index] = layout
    if storage.assumes:
        rec.layout_inputs[out._data.index] = storage.assumes
    if uncertain:
        alias.storage.uncertain.append(weakref.ref(out))


def _check_resizing_view(rec: Any, base: Node, params: dict, alias: Alias) -> None:
    """NumPy's rule for ``t.view(dtype)`` to another item size: the last axis must be
    contiguous (unless it has one element, or the array none). Where the stand-in layout says
    it is not (``x.T.view(np.int64)``), NumPy's ValueError at the user's line; where it is only
    because inputs were assumed C-contiguous, those inputs need a C-contiguous array at replay
    (an engine without memory layouts, JAX, would compute what NumPy refuses); where capture
    does not know the layout, a refusal by name."""
    shape = tuple(base.shape)
    if np.dtype(params["dtype"]).itemsize == np.dtype(base.dtype).itemsize or not shape \
            or has_symbol(shape) or shape[-1] == 1 or 0 in shape:
        return  # same size, or NumPy's own error (0-d) from the op's rule, or no constraint
    layout = alias.layout
    if layout is None:
        raise mutation.refused_here(rec, UnsupportedOperationError(
            f"t.view({params['dtype']}) changes the item size, which NumPy allows only when the "
            "last axis is contiguous, and capture does not know the memory layout NumPy gives "
            "this operand (computed from transposed or strided values); write "
            f"t.copy().view({params['dtype']}) (a C-ordered copy)"))
    if layout.strides[-1] != 1:
        raise rec._located(ops.rule_error("view", [base], params, ValueError(
            "To change to a dtype of a different size, the last axis must be contiguous")),
            user_source())
    if alias.storage.assumes:
        mutation.require_c_layout(rec, alias.storage.assumes)


#: View ops whose view-or-copy answer depends on the operand's memory layout.
LAYOUT_DECISIONS = frozenset(("reshape", "ravel"))


def _layout_dependent_copy(out: Tensor, depends: frozenset) -> None:
    """``out`` is a fresh C-ordered copy only because the inputs ``depends`` were assumed
    C-contiguous: give it a buffer of its own whose writes mark those inputs (see
    :func:`capviz.trace.mutation.require_c_layout`)."""
    shape = tuple(out._data.shape)
    storage = Storage(out._data, depends)
    storage.decided = depends
    layout = as_strided(np.zeros(1, np.uint8), shape, _c_strides(shape))
    out._alias = Alias(storage, (), (out._data,), layout)


def _foreign_view(op: ops.Op, out: Tensor) -> None:
    """A view of an ndarray met in the capture: NumPy would write into that array's memory."""
    step = Step(op, {}, None, _write_refusal(f"np.{op.name} of an ndarray"))
    out._alias = Alias(Storage(out._data), (step,), (out._data, out._data), None)


def _uncertain_refusal(name: str) -> Callable[[], Exception]:
    def make() -> Exception:
        return UnsupportedOperationError(
            f"this write goes through a {name} that NumPy makes a view or a copy depending on "
            "the memory layout of its operand, which capture does not know here; write "
            f"`.copy()` after the {name} for a copy, or write into the base tensor")

    return make


def track_split(rec: Any, op: ops.Op, args: tuple, params: dict, pieces: tuple) -> None:
    """``np.split`` / ``np.array_split``: each piece is a view, a slice along ``axis``."""
    base = args[0]
    ndim = len(np.shape(base)) if type(base) is not Tensor else base.ndim
    axis = params.get("axis", 0) % ndim
    length = (np.shape(base) if type(base) is not Tensor else base.shape)[axis]
    sections = params["indices_or_sections"]
    if isinstance(sections, int):
        each, extra = divmod(length, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = [0, *np.cumsum(sizes).tolist()]
    else:
        bounds = [0, *sections, length]
    getitem = ops.OPS["getitem"]
    for i, piece in enumerate(pieces):
        index = (slice(None),) * axis + (slice(int(bounds[i]), int(bounds[i + 1])),)
        track_view(rec, getitem, (base,), {"index": index}, piece)


_SPLIT_AXES = {"vsplit": 0, "dsplit": 2}


def track_fixed_split(rec: Any, op: ops.Op, args: tuple, params: dict, pieces: tuple) -> None:
    """``np.hsplit`` / ``vsplit`` / ``dsplit``: ``np.split`` along their axis (hsplit: 1, or 0
    for a 1-d array), so each piece is a view, a slice along it."""
    base = args[0]
    ndim = len(np.shape(base)) if type(base) is not Tensor else base.ndim
    axis = _SPLIT_AXES.get(op.name, 1 if ndim > 1 else 0)
    track_split(rec, op, args, {**params, "axis": axis}, pieces)


def track_unstack(rec: Any, op: ops.Op, args: tuple, params: dict, pieces: tuple) -> None:
    """``np.unstack(x, axis)`` is ``tuple(np.moveaxis(x, axis, 0))``: piece ``i`` is the view
    ``x[:, ..., i]`` (a NumPy scalar, a copy, for a 1-d ``x``)."""
    base = args[0]
    ndim = len(np.shape(base)) if type(base) is not Tensor else base.ndim
    axis = np.lib.array_utils.normalize_axis_index(params.get("axis", 0), ndim)
    getitem = ops.OPS["getitem"]
    for i, piece in enumerate(pieces):
        index = (slice(None),) * axis + (i,)
        track_view(rec, getitem, (base,), {"index": index}, piece)


def track_maybe_view_pieces(rec: Any, op: ops.Op, args: tuple, params: dict,
                            pieces: tuple) -> None:
    """Other multi-output ops that return views (broadcast_arrays, meshgrid(copy=False)):
    writes through a piece, and writes into the base while a piece lives, are refused by
    name."""
    for piece in pieces:
        track_view(rec, op, args, params, piece)


#: What the recorder calls after an op whose result may share its operand's memory.
VIEWS: dict[str, Callable] = {name: track_view for name in VIEW_RULES}
VIEWS.update(split=track_split, array_split=track_split, unstack=track_unstack)
for _name in ("hsplit", "vsplit", "dsplit"):
    VIEWS[_name] = track_fixed_split
VIEW_RULES["broadcast_arrays"] = _maybe_view_rule("broadcast_arrays")
VIEWS["broadcast_arrays"] = track_maybe_view_pieces


def track_meshgrid(rec: Any, op: ops.Op, args: tuple, params: dict, pieces: tuple) -> None:
    """``np.meshgrid(..., copy=False)`` returns broadcast views of its operands (the default
    ``copy=True`` returns copies): tracked like ``broadcast_arrays``."""
    if not params.get("copy", True):
        track_maybe_view_pieces(rec, op, args, params, pieces)


VIEW_RULES["meshgrid"] = _maybe_view_rule("meshgrid")
VIEWS["meshgrid"] = track_meshgrid


# --- memory layout: is a buffer C-contiguous? -------------------------------------------------

def _root_layout(rec: Any, node: Node) -> tuple[np.ndarray | None, frozenset]:
    """A stand-in for ``node``'s value as a C-contiguous buffer of 1-byte elements (``None``
    when eager NumPy may lay it out otherwise), and the indices of the inputs whose assumed C
    layout that answer rests on."""
    assumed: set[int] = set()
    if has_symbol(node.shape):  # a data-dependent length: strides unknown until replay
        return None, frozenset()
    if not _c_contiguous(rec, node, 0, assumed):
        return None, frozenset()
    shape = tuple(node.shape)
    return as_strided(np.zeros(1, np.uint8), shape, _c_strides(shape)), frozenset(assumed)


def _c_strides(shape: tuple) -> tuple:
    strides = []
    step = 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def _c_contiguous(rec: Any, node: Node, depth: int, assumed: set[int]) -> bool:
    """Whether eager NumPy certainly holds ``node``'s value C-contiguous: inputs (assumed so,
    as ``cv.spec`` makes them; their indices are added to ``assumed``), C-ordered constants,
    views whose strides say so, and op results whose tensor operands all are (ufuncs and
    ``astype`` keep their operands' order; a result of C-contiguous operands is C-contiguous).
    Anything else is unknown: ``False``."""
    if node.kind == "input":
        assumed.add(node.index)
        return True
    if node.kind == "constant":
        value = rec.graph.constant_values.get(node.index)
        return value is not None and bool(value.flags.c_contiguous)
    if node.kind == "state" and "of" not in node.params:  # an outside array: as it is laid
        ref = rec.graph.state_targets.get(node.index)  # out (trace/state.py), a view state's
        value = ref() if isinstance(ref, weakref.ref) else None  # layout: unknown
        return isinstance(value, np.ndarray) and bool(value.flags.c_contiguous)
    if node.kind != "op" or depth > 32:
        return False
    if node.op == "copy" and node.params.get("order") == "C":
        return True  # ndarray.copy(): C-ordered whatever its operand's layout
    if node.index in rec.layouts:
        layout = rec.layouts[node.index]
        assumed.update(rec.layout_inputs.get(node.index, ()))
        return layout is not None and bool(layout.flags.c_contiguous)
    if node.op in VIEWS or node.op == "unpack":
        return False  # a view of unknown strides, or a copy made by a view op: unknown
    return all(_c_contiguous(rec, a, depth + 1, assumed) for _, a in node.operands)
