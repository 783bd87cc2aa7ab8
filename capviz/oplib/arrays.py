"""Functions that rearrange, repeat, pad or select elements: flip, roll, tile, pad, diag...

Shapes come from running the function on zero-byte dummies (``dummy``), except where a dummy
would make NumPy walk every element (``roll``, ``copy``, ``pad``): those have written rules.
"""

from __future__ import annotations

import numpy as np

from capviz import ops
from capviz.oplib.base import FunctionSpec, axis_index, define


def _pad_shape(shapes: list, params: dict) -> tuple:
    (shape,) = shapes
    widths = np.broadcast_to(np.asarray(params["pad_width"]), (len(shape), 2))
    if not np.issubdtype(widths.dtype, np.integer):
        raise TypeError("`pad_width` must be of integral type.")
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    mode = params.get("mode", "constant")
    pairs = widths.tolist()
    for d, (lo, hi) in zip(shape, pairs):
        if d == 0 and (lo or hi) and mode != "constant":
            raise ValueError("can't extend empty axis 0 using modes other than 'constant' or "
                             "'empty'")
    return tuple(d + lo + hi for d, (lo, hi) in zip(shape, pairs))


def _roll_shape(shapes: list, params: dict) -> tuple:
    shape = shapes[0]
    axis = params.get("axis")
    if axis is not None:
        for a in (axis,) if isinstance(axis, int) else axis:
            axis_index(a, len(shape))
        np.broadcast(np.asarray(params["shift"]), np.asarray(axis))
    return tuple(shape)


_EMPTY_PAD = "np.pad(..., mode='constant') (mode='empty' leaves the new values undefined)"

define(FunctionSpec("pad", ("array",), _pad_shape, "same",
                    refuse_values={"mode": {"empty": _EMPTY_PAD}},
                    keywords=("stat_length", "constant_values", "end_values", "reflect_type")))
define(FunctionSpec("roll", ("a",), _roll_shape, "same"))
define(FunctionSpec("copy", ("a",), "same", "same"))

for _path, _tensors in [
    ("flip", ("m",)), ("fliplr", ("m",)), ("flipud", ("m",)), ("rot90", ("m",)),
    ("tile", ("A",)), ("repeat", ("a",)), ("moveaxis", ("a",)), ("rollaxis", ("a",)),
    ("matrix_transpose", ("x",)), ("linalg.matrix_transpose", ("x",)),
    ("ravel", ("a",)), ("diagonal", ("a",)), ("linalg.diagonal", ("x",)), ("diag", ("v",)),
    ("diagflat", ("v",)), ("delete", ("arr",)), ("resize", ("a",)), ("compress", ("a",)),
    ("lib.stride_tricks.sliding_window_view", ("x",)),
]:
    define(FunctionSpec(_path, _tensors, "dummy", "same"))

define(FunctionSpec("insert", ("arr", "values"), "dummy", "same"))
define(FunctionSpec("append", ("arr", "values"), "dummy", "promote"))
define(FunctionSpec("column_stack", ("tup[]",), "dummy", "promote"))
define(FunctionSpec("dstack", ("tup[]",), "dummy", "promote"))
define(FunctionSpec("take_along_axis", ("arr", "indices"), "dummy", "same", index=("indices",)))
define(FunctionSpec("broadcast_arrays", ("*args",), "dummy", "each", multi=True))
define(FunctionSpec("meshgrid", ("*xi",), "dummy", "each", multi=True, probe={"copy": False}))
define(FunctionSpec("unstack", ("x",), "dummy", "same", multi=True))
for _path in ("hsplit", "vsplit", "dsplit"):
    define(FunctionSpec(_path, ("ary",), "dummy", "same", multi=True, container=list))
for _path in ("atleast_1d", "atleast_2d", "atleast_3d"):
    define(FunctionSpec(_path, ("*arys",), "dummy", "same", per_operand=True))


def _view_meta(args: list, params: dict) -> tuple:
    x = args[0]
    new = np.dtype(params["dtype"])
    shape = tuple(x.shape)
    old = x.dtype.itemsize
    if new.itemsize == old:
        return shape, new
    if not shape:
        raise ops._fail("view", args, params, ValueError(
            "Changing the dtype of a 0d array is only supported if the itemsize is unchanged"))
    if (shape[-1] * old) % new.itemsize:
        raise ops._fail("view", args, params, ValueError(
            "When changing to a larger dtype, its size must be a divisor of the total size in "
            "bytes of the last axis of the array."))
    return shape[:-1] + (shape[-1] * old // new.itemsize,), new


def _view(xp: object) -> object:
    def view(x: object, dtype: str) -> object:
        return x.view(dtype)

    return view


ops.register(ops.Op("view", _view, _view_meta, params=("dtype",)))


def _select(shapes: list, params: dict) -> tuple:
    half = len(shapes) // 2
    if len(shapes) != 2 * half:
        raise ValueError("list of cases must be same length as list of conditions")
    if half == 0:
        raise ValueError("select with an empty condition list is not possible")
    return tuple(np.broadcast_shapes(*shapes))


def _choose_dtype(dtypes: list, params: dict) -> np.dtype:
    if not np.issubdtype(dtypes[0], np.integer):
        raise TypeError(f"Cannot cast array data from {dtypes[0]!r} to dtype('int64') "
                        "according to the rule 'safe'")
    return np.result_type(*dtypes[1:])


define(FunctionSpec("select", ("condlist[]", "choicelist[]"), _select))
define(FunctionSpec("choose", ("a", "choices[]"), "broadcast", _choose_dtype))
