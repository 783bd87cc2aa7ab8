"""Index arithmetic and bit packing: lexsort, ravel_multi_index, unravel_index, ix_,
packbits, unpackbits. Shapes are written rules; the index dtypes are NumPy's ``intp``."""

from __future__ import annotations

import numpy as np

from capviz.ops import table as ops
from capviz.ops.spec import FunctionSpec, axis_index, define


def _broadcast(shapes: list, params: dict) -> tuple:
    return tuple(np.broadcast_shapes(*shapes))


def _unravel(shapes: list, params: dict) -> list:
    dims = params["shape"]
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return [tuple(shapes[0])] * len(dims)


def _ix(shapes: list, params: dict) -> list:
    out = []
    for i, shape in enumerate(shapes):
        if len(shape) != 1:
            raise ValueError("Cross index must be 1 dimensional")
        out.append((1,) * i + tuple(shape) + (1,) * (len(shapes) - i - 1))
    return out


def _ix_dtypes(dtypes: list, params: dict) -> list:
    for dt in dtypes:
        if dt == np.bool_:
            raise TypeError("np.ix_ of a boolean tensor has a data-dependent shape; pass "
                            "integer index tensors")
        if not np.issubdtype(dt, np.integer):
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
    return list(dtypes)


def _bits(factor: int) -> object:
    def rule(shapes: list, params: dict) -> tuple:
        shape = tuple(shapes[0])
        axis = params.get("axis")
        count = params.get("count")
        if axis is None:
            shape, ax = (ops.numel(shape),), 0
        else:
            ax = axis_index(axis, len(shape))
        if factor == 8:  # unpack
            n = shape[ax] * 8
            if count is not None:
                if count < -n:
                    raise ValueError("-count larger than number of elements")
                n = count if count >= 0 else n + count
        else:
            n = -(-shape[ax] // 8)
        return shape[:ax] + (n,) + shape[ax + 1:]

    return rule


define(FunctionSpec("lexsort", ("keys[]",), _broadcast, np.intp))
define(FunctionSpec("ravel_multi_index", ("multi_index[]",), _broadcast, np.intp))
define(FunctionSpec("unravel_index", ("indices",), _unravel, np.intp, multi=True))
define(FunctionSpec("ix_", ("*args",), _ix, _ix_dtypes, multi=True))
define(FunctionSpec("packbits", ("a",), _bits(1), np.uint8))
define(FunctionSpec("unpackbits", ("a",), _bits(8), np.uint8))
