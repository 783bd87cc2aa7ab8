"""The structural ops: reshape, transpose, indexing (``getitem``, ``index``, ``take``), split
and its ``unpack``, concatenate, stack... Their shape comes from running the op itself on
zero-byte dummies (``np.dtype([])``: the real shape, no memory), so a ``(10**6, 10**6)``
capture allocates nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from capviz.ops.reductions import normalize_axis
from capviz.ops.table import (
    VOID,
    Op,
    dummy,
    is_tensor_meta,
    register,
    rule_error,
)


def _structural(name: str, fn: Callable[[Any], Callable], params: Sequence[str] = (),
                nargs: tuple[int, int | None] = (1, 1), dtype: str = "same",
                multi: bool = False) -> Op:
    """An op whose shape comes from running it on zero-byte dummies (``dtype``: same/promote)."""
    np_fn = fn(np)

    def meta(args: Sequence, p: dict) -> Any:
        try:
            # a literal operand (np.hstack([t, 1.0])) is an array to these functions, as
            # NumPy converts it: a dummy of its shape, and its array dtype (1.0: float64, not
            # a weak scalar) in the promotion
            out = np_fn(*[dummy(a) if is_tensor_meta(a) else np.empty(np.shape(a), VOID)
                          for a in args], **p)
            tensors = [a for a in args if is_tensor_meta(a)]
            if dtype == "same":
                dt = tensors[0].dtype
            else:
                dt = np.result_type(*[a.dtype if is_tensor_meta(a) else np.asarray(a).dtype
                                      for a in args])
        except (ValueError, TypeError, IndexError, np.exceptions.AxisError) as err:
            raise rule_error(name, args, p, err) from None
        if multi:
            return [(tuple(o.shape), dt) for o in out]
        return tuple(out.shape), dt

    return register(Op(name, fn, meta, params=params, nargs=nargs, multi=multi))


def _getitem(xp: Any) -> Callable:
    def getitem(x: Any, index: tuple) -> Any:
        return x[index]

    return getitem


_structural("reshape", lambda xp: xp.reshape, ("shape", "order"))
_structural("transpose", lambda xp: xp.transpose, ("axes",))
_structural("swapaxes", lambda xp: xp.swapaxes, ("axis1", "axis2"))
_structural("expand_dims", lambda xp: xp.expand_dims, ("axis",))
_structural("squeeze", lambda xp: xp.squeeze, ("axis",))
_structural("broadcast_to", lambda xp: xp.broadcast_to, ("shape",))
_structural("tril", lambda xp: xp.tril, ("k",))
_structural("triu", lambda xp: xp.triu, ("k",))
_structural("getitem", _getitem, ("index",))
_structural("concatenate", lambda xp: lambda *xs, axis=0: xp.concatenate(xs, axis=axis),
            ("axis",), nargs=(1, None), dtype="promote")
_structural("stack", lambda xp: lambda *xs, axis=0: xp.stack(xs, axis=axis),
            ("axis",), nargs=(1, None), dtype="promote")
_structural("hstack", lambda xp: lambda *xs: xp.hstack(xs), nargs=(1, None), dtype="promote")
_structural("vstack", lambda xp: lambda *xs: xp.vstack(xs), nargs=(1, None), dtype="promote")
_structural("split", lambda xp: xp.split, ("indices_or_sections", "axis"), multi=True)
_structural("array_split", lambda xp: xp.array_split, ("indices_or_sections", "axis"),
            multi=True)


def _unpack_meta(args: Sequence, params: dict) -> tuple:
    raise TypeError("unpack nodes take their shape from the multi-output op")  # set by recorder


def _unpack(xp: Any) -> Callable:
    def unpack(results: Sequence, index: int) -> Any:
        return results[index]

    return unpack


register(Op("unpack", _unpack, _unpack_meta, params=("index",)))


def _take_meta(args: Sequence, params: dict) -> tuple:
    x, idx = args
    axis = params.get("axis")
    try:
        if not np.can_cast(idx.dtype, np.intp, "same_kind"):  # NumPy's cast of the indices
            raise TypeError(f"Cannot cast array data from {idx.dtype!r} to "
                            f"{np.dtype(np.intp)!r} according to the rule 'same_kind'")
        if axis is None:
            shape = tuple(idx.shape)
            n = math.prod(x.shape)
        else:
            (ax,) = normalize_axis(axis, len(x.shape))
            shape = x.shape[:ax] + tuple(idx.shape) + x.shape[ax + 1:]
            n = x.shape[ax]
        if params.get("mode", "raise") != "raise" and n == 0 and math.prod(idx.shape):
            raise IndexError("cannot do a non-empty take from an empty axes.")
    except (ValueError, TypeError, IndexError) as err:
        raise rule_error("take", args, params, err) from None
    return shape, x.dtype


register(Op("take", lambda xp: xp.take, _take_meta, params=("axis", "mode"), nargs=(2, 2)))


def _index_meta(args: Sequence, params: dict) -> tuple:
    x, idx = args
    if not np.issubdtype(idx.dtype, np.integer):
        raise rule_error("index", args, params, TypeError(
            f"only integer tensors can index a tensor, got {idx.dtype} "
            "(a boolean mask gives a data-dependent shape, which a graph cannot record; keep "
            "the shape with np.where(mask, t, fill), or take a fixed-size top-k with "
            "np.argpartition; writes through a mask, t[mask] = v and t[mask] *= v, are "
            "recorded)"))
    if not x.shape:
        raise rule_error("index", args, params, IndexError("too many indices for a 0-d tensor"))
    return tuple(idx.shape) + tuple(x.shape[1:]), x.dtype


def _index(xp: Any) -> Callable:
    def index(x: Any, idx: Any) -> Any:
        return x[idx]

    return index


register(Op("index", _index, _index_meta, nargs=(2, 2)))

