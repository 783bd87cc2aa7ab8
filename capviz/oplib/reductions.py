"""Reductions, scans and sorts: cumsum, sort, partition, median, percentile, the nan* family...

Shapes are written rules (reduced axes; a scan or sort keeps the shape, or flattens for
``axis=None``); dtypes come from one-element proxies, so ``np.cumsum`` of int8 is int64 as in
NumPy.
"""

from __future__ import annotations

import numpy as np

from capviz import ops
from capviz.oplib.base import FunctionSpec, axis_index, define


def _reduced(shapes: list, params: dict) -> tuple:
    return ops.reduced_shape(tuple(shapes[0]), params.get("axis"), params.get("keepdims", False))


def _empty_reduction(shape: tuple, axis: object) -> bool:
    axes = ops.normalize_axis(axis, len(shape))
    return any(shape[a] == 0 for a in (range(len(shape)) if axes is None else axes))


def _no_identity(name: str, error: type = ValueError) -> object:
    """The rule of a reduction that fails on an empty slice (no identity), as NumPy does."""

    def rule(shapes: list, params: dict) -> tuple:
        shape = tuple(shapes[0])
        if _empty_reduction(shape, params.get("axis")):
            raise error(f"zero-size array to reduction operation {name} which has no identity"
                        if error is ValueError else
                        "index -1 is out of bounds for axis 0 with size 0")
        return _reduced(shapes, params)

    return rule


def _quantile(shapes: list, params: dict) -> tuple:
    q = np.asarray(params["q"])
    return tuple(q.shape) + _no_identity("quantile", IndexError)(shapes, params)


def _nanquantile(shapes: list, params: dict) -> tuple:
    return tuple(np.asarray(params["q"]).shape) + _reduced(shapes, params)


def _scan(shapes: list, params: dict) -> tuple:
    shape = tuple(shapes[0])
    axis = params.get("axis")
    if axis is None:
        return (ops.numel(shape),)
    axis_index(axis, len(shape))
    return shape


def _sorted(shapes: list, params: dict) -> tuple:
    shape = tuple(shapes[0])
    axis = params.get("axis", -1)
    if axis is None:
        return (ops.numel(shape),)
    if not shape:
        raise np.exceptions.AxisError("axis -1 is out of bounds for array of dimension 0")
    axis_index(axis, len(shape))
    return shape


def _partitioned(shapes: list, params: dict) -> tuple:
    shape = _sorted(shapes, params)
    n = shape[0] if params.get("axis", -1) is None else shape[axis_index(
        params.get("axis", -1), len(shape))]
    if ops.numel(shape) == 0:
        return shape  # NumPy does not check kth on an empty array
    for k in np.atleast_1d(np.asarray(params["kth"])).tolist():
        if not -n <= k < n:
            raise ValueError(f"kth(={k}) out of bounds ({n})")
    return shape


def _cumulative(shapes: list, params: dict) -> tuple:
    shape = tuple(shapes[0])
    axis = params.get("axis")
    if axis is None:
        if len(shape) != 1:
            raise ValueError("For arrays which have more than one dimension ``axis`` argument "
                             "is required.")
        axis = 0
    ax = axis_index(axis, len(shape))
    extra = 1 if params.get("include_initial") else 0
    return shape[:ax] + (shape[ax] + extra,) + shape[ax + 1:]


def _average(shapes: list, params: dict) -> tuple:
    if len(shapes) > 1 and shapes[1] is not None and tuple(shapes[1]) != tuple(shapes[0]):
        if params.get("axis") is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
    return _reduced(shapes[:1], params)


def _trace(shapes: list, params: dict) -> tuple:
    shape = tuple(shapes[0])
    if len(shape) < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    a1 = axis_index(params.get("axis1", 0), len(shape))
    a2 = axis_index(params.get("axis2", 1), len(shape))
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    return tuple(d for i, d in enumerate(shape) if i not in (a1, a2))


def _linalg_trace(shapes: list, params: dict) -> tuple:
    return _trace(shapes, {"axis1": -2, "axis2": -1})


_NO_OVERWRITE = "leave overwrite_input at False (a capture never writes into its operands)"
_KTH_PROBE = {"kth": 0}

for _path in ("cumsum", "cumprod", "nancumsum", "nancumprod"):
    define(FunctionSpec(_path, ("a",), _scan))
for _path in ("cumulative_sum", "cumulative_prod"):
    define(FunctionSpec(_path, ("x",), _cumulative))

define(FunctionSpec("sort", ("a",), _sorted, "same"))
define(FunctionSpec("argsort", ("a",), _sorted, np.intp))
define(FunctionSpec("sort_complex", ("a",), "same"))
define(FunctionSpec("partition", ("a",), _partitioned, "same"))
define(FunctionSpec("argpartition", ("a",), _partitioned, np.intp))

for _path in ("nansum", "nanprod", "nanmean", "count_nonzero"):
    define(FunctionSpec(_path, ("a",), _reduced))
for _path in ("nanmax", "nanmin", "nanargmax", "nanargmin", "ptp"):
    define(FunctionSpec(_path, ("a",), _no_identity(_path)))
for _path in ("nanvar", "nanstd"):  # ddof 0 on a one-element proxy: no degrees-of-freedom warning
    define(FunctionSpec(_path, ("a",), _reduced, probe={"ddof": 0}))
for _path in ("median", "nanmedian"):
    define(FunctionSpec(_path, ("a",), _reduced, refuse={"overwrite_input": _NO_OVERWRITE}))
for _path in ("percentile", "quantile", "nanpercentile", "nanquantile"):
    define(FunctionSpec(_path, ("a", "weights"), _nanquantile if "nan" in _path else _quantile,
                        refuse={"overwrite_input": _NO_OVERWRITE}))
define(FunctionSpec("average", ("a", "weights"), _average,
                    refuse={"returned": "np.sum(weights, axis) for the sum of weights"}))
define(FunctionSpec("trace", ("a",), _trace, probe={"offset": 0}))
define(FunctionSpec("linalg.trace", ("x",), _linalg_trace, probe={"offset": 0}))
