"""``x[mask] op= v``: an in-place operator through a boolean mask, recorded exactly.

NumPy runs it as ``tmp = x[mask]; tmp op= v; x[mask] = tmp``. The selection's length depends on
the values, but the update does not: for a ``v`` that fits every selection (a scalar, or one
value per selected row), it is ``ufunc(x, v, out=x, where=mask)``, elementwise the same
operation, casting ("same_kind") and write. The recorder sees the read ``x[mask]`` first;
when the calling instruction is that of an augmented assignment (:mod:`.call_site`), it returns
a :class:`MaskedUpdate` instead of refusing the data-dependent read, the operator fills it in,
and Python's store ``x[mask] = <it>`` records the write (:func:`write`).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from capviz import ops
from capviz.core.source import user_frame
from capviz.trace import mutation
from capviz.trace.call_site import augmented_subscript
from capviz.trace.tensor import Tensor, tuple_index_fix


class MaskedUpdate:
    """``x[mask]`` inside ``x[mask] op= v``: what the operator and the store need."""

    __slots__ = ("mask", "mask_node", "other", "snapshot", "symbol", "target")

    def __init__(self, target: Tensor, mask: Tensor, snapshot: Tensor) -> None:
        self.target = target
        self.mask = mask
        self.mask_node = mask._data  # the mask's value at the read (NumPy reads it again at
        # the store: a mask written in between selects other elements than the read did)
        self.snapshot = snapshot  # x's value when it was read (eager reads it then too)
        self.symbol: str | None = None
        self.other: Any = None


def _operator(symbol: str) -> Any:
    def method(self: MaskedUpdate, other: Any) -> MaskedUpdate:
        self.symbol, self.other = symbol, other
        return self

    method.__name__ = f"__i{symbol[:-1]}__"
    return method


_DUNDERS = {"+=": "add", "-=": "sub", "*=": "mul", "/=": "truediv", "//=": "floordiv",
            "%=": "mod", "**=": "pow", "@=": "matmul", "&=": "and", "|=": "or", "^=": "xor",
            "<<=": "lshift", ">>=": "rshift"}
for _symbol, _name in _DUNDERS.items():
    setattr(MaskedUpdate, f"__i{_name}__", _operator(_symbol))


_MASK_READ = ("its shape depends on the number of True entries, which a capture given specs "
              "cannot know; pass an example array instead of a spec (cv.capture(f, x) with x "
              "an array, scope.input(name, x)): the read is then recorded with a symbolic "
              "length (n0), checked by guards where the code needs the number. Without "
              "examples, keep the shape with np.where(mask, t, fill); writes through a mask, "
              "t[mask] = v and t[mask] *= v, are recorded")


def select(rec: Any, target: Tensor, mask: Tensor) -> Any:
    """``target[mask]`` for a boolean tensor ``mask``: a :class:`MaskedUpdate` when the user's
    line is ``target[mask] op= v``; otherwise the read: with example values a ``mask_select``
    whose length is a size symbol (:mod:`capviz.trace.sizes`), without them refused by name
    (its shape depends on the values)."""
    if not augmented_subscript(user_frame(sys._getframe(1))):
        if rec.examples is None:
            raise rec.unsupported("tensor[mask] (a read through a boolean mask)", _MASK_READ)
        return rec.sized(ops.OPS["mask_select"], (target, mask), {}, "tensor[mask]")
    if mutation.mask_overlaps(target, mask):
        raise rec.unsupported("tensor[mask] op= value with a mask that shares the tensor's "
                              "memory", mutation.MASK_SHARES_TARGET.format(
                                  fix="x[m.copy()] op= v"))
    mutation.current(rec, mask)  # re-derived now if its buffer was written
    node = mutation.current(rec, target)
    try:  # NumPy's IndexError for a mask that does not fit, as the read raises it
        ops.OPS["index_put"].meta((node, mutation.operand(rec, mask), 0), {})
    except IndexError as err:
        raise mutation.located(rec, err) from None
    return MaskedUpdate(target, mask, Tensor(node, rec))


_ARRAY_VALUE = ("which value meets which selected element depends on the number of True "
                "entries; write t[...] = np.where(mask, t {op} v, t) with v of t's shape")


def write(rec: Any, target: Tensor, key: Any, update: MaskedUpdate) -> None:
    """The store of ``target[mask] op= v``: ``ufunc(x, v, out=target, where=mask)``."""
    mask = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    symbol, other = update.symbol, update.other
    if update.target is not target or update.mask is not mask or symbol is None:
        raise rec.unsupported("tensor[mask] = <a masked selection>",
                              "a selection t[mask] is recorded only inside t[mask] op= v")
    if mutation.current(rec, mask) is not update.mask_node:
        raise rec.unsupported(
            f"tensor[mask] {symbol} value where computing the value changes the mask",
            "NumPy selects with the mask's old value and writes with its new one; compute "
            f"the value first: v = ...; x[m] {symbol} v")
    if symbol == "@=":
        raise rec.unsupported("tensor[mask] @= value", "a boolean selection is 1-d per row; "
                                                       "write t[...] = np.where(mask, t @ v, t)")
    rest = target.shape[mask.ndim:]
    vshape = other.shape if type(other) is Tensor else np.shape(other)
    try:
        fits = tuple(np.broadcast_shapes(vshape, (1, *rest))) == (1, *rest)
    except ValueError:
        fits = False
    if not fits:
        raise rec.unsupported(f"tensor[mask] {symbol} value of shape {tuple(vshape)}",
                              _ARRAY_VALUE.format(op=symbol[:-1]))
    if mask.ndim == 0 and len(vshape) > len(rest):  # a 0-d mask selects along a new axis of
        # length 0 or 1, which `v` (of length 1 there) meets: drop it, the write is elementwise
        other = other.reshape(rest) if type(other) is Tensor else np.reshape(other, rest)
    name = mutation.INPLACE_UFUNCS[symbol]
    where = mask if not rest else mask.reshape(mask.shape + (1,) * len(rest))
    if name == "power" and target.dtype.kind in "iu" and _signed_array(other):
        # NumPy raises for a negative integer exponent only where it computes, the selected
        # elements: elsewhere the exponent becomes 1 (x ** 1 is x, and is not written)
        other = np.where(where, other, 1)
    elif name == "power" and target.dtype.kind == "i" and type(other) is int and other < 0:
        try:
            exponent = np.asarray(other, target.dtype)
        except OverflowError as err:  # NumPy's, for an exponent out of x's range
            raise mutation.located(rec, err) from None
        other = np.where(where, exponent, target.dtype.type(1))  # as above, in x's dtype
    op, args = ops.OPS[name], (update.snapshot, other)
    if name == "power" and type(other) is not Tensor:  # ndarray's fast paths, as `tmp **= v`
        op = ops.power_op(target.dtype, other)
        if op.name != "power":
            args = (update.snapshot,)
    mutation.write_ufunc(rec, op, args, target, where)


def _signed_array(value: Any) -> bool:
    """A tensor or ndarray of signed integers (its values, unknown to the rules, may be
    negative)."""
    return (type(value) is Tensor or isinstance(value, np.ndarray)) and value.dtype.kind == "i"


def select_rows(rec: Any, target: Tensor, key: tuple) -> Any:
    """``target[mask, 1:]``: a boolean tensor first, then ints and slices: the selected rows
    ``target[mask]``, then the basic index of the other axes (NumPy's result is that copy)."""
    mask, rest = key[0], key[1:]
    if rec.examples is None or not all(type(k) in (int, slice) for k in rest):
        fix = tuple_index_fix(key)
        if rec.examples is None:
            fix += ("; a read t[mask, 1:] (the mask first, then ints and slices) is recorded "
                    "with a symbolic length when you pass an example array instead of a spec "
                    "(cv.capture(fn, x) with x an array, scope.input(name, x))")
        raise rec.unsupported("tensor[...] with a boolean tensor inside a tuple index", fix)
    rows = rec.sized(ops.OPS["mask_select"], (target, mask), {}, "tensor[mask, ...]")
    return rows[(slice(None), *rest)]
