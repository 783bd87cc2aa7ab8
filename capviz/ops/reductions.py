"""Reductions, scans and sorts: cumsum, sort, partition, median, percentile, the nan* family...

Shapes are written rules (reduced axes; a scan or sort keeps the shape, or flattens for
``axis=None``); dtypes come from one-element proxies, so ``np.cumsum`` of int8 is int64 as in
NumPy.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from capviz.ops import table as ops
from capviz.ops.spec import FunctionSpec, axis_index, define
from capviz.ops.table import (
    Op,
    hashable_params,
    proxy_dtype,
    register,
    rule_error,
)

# --- reductions ---------------------------------------------------------------------------------


def normalize_axis(axis: Any, ndim: int) -> tuple | None:
    """``axis`` (None, int or sequence) as a sorted tuple of non-negative axes."""
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(f"axis {a} is out of bounds for array of dimension "
                                          f"{ndim}")  # NumPy's: a ValueError and an IndexError
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def reduced_shape(shape: tuple, axis: Any, keepdims: bool) -> tuple:
    axes = normalize_axis(axis, len(shape))
    if axes is None:
        return (1,) * len(shape) if keepdims else ()
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


_UFUNC_NAMES = {"max": "maximum", "min": "minimum"}
"""The ufunc NumPy reduces for ``np.max`` and ``np.min`` (its name in NumPy's errors)."""


def _reduce_meta(name: str, fn: Callable, single_axis: bool = False) -> Callable:
    def meta(args: Sequence, params: dict) -> tuple:
        x = args[0]
        axis = params.get("axis")
        try:
            if single_axis and axis is not None and not isinstance(axis, (int, np.integer)):
                raise TypeError(f"{name} takes an integer axis or None, got {axis!r}")
            shape = reduced_shape(x.shape, axis, params.get("keepdims", False))
            axes = normalize_axis(axis, len(x.shape))
            reduced = range(len(x.shape)) if axes is None else axes
            if name in ("max", "min", "argmax", "argmin") and any(x.shape[a] == 0 for a in reduced):
                raise ValueError("zero-size array to reduction operation "
                                 f"{_UFUNC_NAMES.get(name, name)} which has no identity")
            key = hashable_params(params)
            probe = {**params, "ddof": 0} if "ddof" in params else params  # no dof warning
            dt = proxy_dtype(fn, args, probe,
                             None if key is None else (name, len(x.shape), x.dtype, key))
        except (ValueError, TypeError, np.exceptions.AxisError) as err:
            raise rule_error(name, args, params, err) from None
        return shape, dt

    return meta


def _reduction(name: str, np_fn: Callable, xp_name: str, params: Sequence[str],
               single_axis: bool = False, out: bool = False) -> None:
    register(Op(name, lambda xp: getattr(xp, xp_name), _reduce_meta(name, np_fn, single_axis),
                params=params, out=out))


# out= of the result's own dtype reduces in that dtype, as without it, for these; not for mean,
# var and std (float16 into float16 accumulates in float32 and rounds once more).
_reduction("sum", np.sum, "sum", ("axis", "keepdims", "dtype"), out=True)
_reduction("prod", np.prod, "prod", ("axis", "keepdims", "dtype"), out=True)
_reduction("mean", np.mean, "mean", ("axis", "keepdims", "dtype"))
_reduction("var", np.var, "var", ("axis", "keepdims", "ddof", "dtype"))
_reduction("std", np.std, "std", ("axis", "keepdims", "ddof", "dtype"))
_reduction("max", np.max, "max", ("axis", "keepdims"), out=True)
_reduction("min", np.min, "min", ("axis", "keepdims"), out=True)
_reduction("any", np.any, "any", ("axis", "keepdims"), out=True)
_reduction("all", np.all, "all", ("axis", "keepdims"), out=True)
_reduction("argmax", np.argmax, "argmax", ("axis", "keepdims"), single_axis=True)
_reduction("argmin", np.argmin, "argmin", ("axis", "keepdims"), single_axis=True)


# --- where= and initial= ------------------------------------------------------------------------
# np.sum(x, axis, where=mask, initial=v) and the same of prod, mean, max and min: an op of their
# own (``sum_where``...), the mask its second operand when given (a tensor, or the array NumPy
# would read), so that an engine that adds in another order meets a name it must decide, never a
# plain ``sum`` whose mask it could drop. NumPy does not add a masked sum in the order of the
# plain one: it adds each run of unmasked terms of its inner loop pairwise into a running total
# (its masked loop calls the plain one per run), starting from the identity (so a masked sum of
# -0.0 terms is +0.0); the NumPy replay is NumPy's own call, bit for bit.

MASKED = {"sum": "sum_where", "prod": "prod_where", "mean": "mean_where", "max": "max_where",
          "min": "min_where"}
"""The reduction each ``where=``/``initial=`` op is a form of."""


def _masked_meta(name: str, fn: Callable) -> Callable:
    def meta(args: Sequence, params: dict) -> tuple:
        x = args[0]
        mask = args[1] if len(args) > 1 else None
        shape = tuple(x.shape)
        try:
            if mask is not None:
                mdt = mask.dtype if ops.is_tensor_meta(mask) else np.asarray(mask).dtype
                if not np.can_cast(mdt, np.bool_, "safe"):  # NumPy's own TypeError
                    raise TypeError(f"Cannot cast array data from {np.dtype(mdt)!r} to "
                                    "dtype('bool') according to the rule 'safe'")
                mshape = tuple(ops.shape_of(mask)) if ops.is_tensor_meta(mask) \
                    else np.shape(mask)
                if len(mshape) > len(shape):
                    raise ValueError("input operand has more dimensions than allowed by the "
                                     "axis remapping")
                if any(m not in (1, d) for m, d in zip(mshape[::-1], shape[::-1])):
                    raise ValueError("operands could not be broadcast together with remapped "
                                     f"shapes [original->remapped]: {shape} {mshape}")
                if name in _UFUNC_NAMES and params.get("initial") is None:
                    raise ValueError(f"reduction operation '{_UFUNC_NAMES[name]}' does not "
                                     "have an identity, so to use a where mask one has to "
                                     "specify 'initial'")
            result = reduced_shape(shape, params.get("axis"), params.get("keepdims", False))
            if name in _UFUNC_NAMES and params.get("initial") is None \
                    and _empty_reduction(shape, params.get("axis")):
                raise ValueError(f"zero-size array to reduction operation {_UFUNC_NAMES[name]} "
                                 "which has no identity")
            key = hashable_params(params)
            dt = proxy_dtype(fn, [x], params,
                             None if key is None else (MASKED[name], len(shape), x.dtype, key))
        except (ValueError, TypeError, OverflowError, np.exceptions.AxisError) as err:
            raise rule_error(name, list(args), params, err) from None
        return result, dt

    return meta


def _masked_impl(xp_name: str) -> Callable:
    def impl(xp: Any) -> Callable:
        fn = getattr(xp, xp_name)

        def run(a: Any, where: Any = True, **params: Any) -> Any:
            return fn(a, where=where, **params)

        run.__name__ = xp_name
        return run

    return impl


def _masked(name: str, np_fn: Callable, params: Sequence[str]) -> None:
    register(Op(MASKED[name], _masked_impl(name), _masked_meta(name, np_fn), params=params,
                nargs=(1, 2)))


_masked("sum", np.sum, ("axis", "keepdims", "dtype", "initial"))
_masked("prod", np.prod, ("axis", "keepdims", "dtype", "initial"))
_masked("mean", np.mean, ("axis", "keepdims", "dtype"))
_masked("max", np.max, ("axis", "keepdims", "initial"))
_masked("min", np.min, ("axis", "keepdims", "initial"))


# --- NumPy functions ------------------------------------------------------------------------------


def _reduced(shapes: list, params: dict) -> tuple:
    return reduced_shape(tuple(shapes[0]), params.get("axis"), params.get("keepdims", False))


def _empty_reduction(shape: tuple, axis: object) -> bool:
    axes = normalize_axis(axis, len(shape))
    return any(shape[a] == 0 for a in (range(len(shape)) if axes is None else axes))


def _where_fits(shape: tuple, params: dict) -> None:
    """NumPy's ValueError for a ``where=`` mask that does not broadcast to the operand."""
    where = params.get("where", True)
    if where is not True and np.ndim(where):
        if np.broadcast_shapes(np.shape(where), shape) != shape:
            raise ValueError(f"non-broadcastable operand with shape {np.shape(where)} doesn't "
                             f"match the broadcast shape {shape}")


def _reduced_where(shapes: list, params: dict) -> tuple:
    """:func:`_reduced`, the ``where=`` mask checked against the operand."""
    _where_fits(tuple(shapes[0]), params)
    return _reduced(shapes, params)


def _probe(extra: dict) -> Callable[[dict], dict]:
    """The dtype probe's params: the call's, with ``extra``, and ``where=True`` (a mask of the
    operand's shape does not broadcast to the one-element proxy; the dtype does not depend on
    it)."""

    def probe(params: dict) -> dict:
        out = {**params, **extra}
        if "where" in out:
            out["where"] = True
        return out

    return probe


def _no_identity(name: str, error: type = ValueError) -> object:
    """The rule of a reduction that fails on an empty slice (no identity, unless ``initial=``
    gives one), as NumPy does."""

    def rule(shapes: list, params: dict) -> tuple:
        shape = tuple(shapes[0])
        _where_fits(shape, params)
        if params.get("initial") is None and _empty_reduction(shape, params.get("axis")):
            raise error(f"zero-size array to reduction operation {name} which has no identity"
                        if error is ValueError else
                        "index -1 is out of bounds for axis 0 with size 0")
        return _reduced(shapes, params)

    return rule


def _quantile(shapes: list, params: dict) -> tuple:
    q = np.asarray(params["q"])
    return tuple(q.shape) + _no_identity("quantile", IndexError)(shapes, params)


def _nanquantile(shapes: list, params: dict) -> tuple:
    if not ops.numel(tuple(shapes[0])):  # NumPy returns np.nanmean(a, axis): q's axes go
        return _reduced(shapes, params)
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
    define(FunctionSpec(_path, ("a",), _reduced_where, probe=_probe({})))
for _path in ("nanmax", "nanmin", "nanargmax", "nanargmin", "ptp"):
    define(FunctionSpec(_path, ("a",), _no_identity(_path), probe=_probe({})))
for _path in ("nanvar", "nanstd"):  # ddof 0 on a one-element proxy: no degrees-of-freedom warning
    define(FunctionSpec(_path, ("a",), _reduced_where, probe=_probe({"ddof": 0})))
for _path in ("median", "nanmedian"):
    define(FunctionSpec(_path, ("a",), _reduced, refuse={"overwrite_input": _NO_OVERWRITE}))
def _empty_kept(args: list) -> list:
    """One-element proxies, an empty operand's axes of length 0 kept: NumPy's nan-quantile of
    an empty array is ``np.nanmean``'s (a float32 NaN, where a quantile's is float64)."""
    return [np.ones(tuple(0 if d == 0 else 1 for d in a.shape), a.dtype)
            if ops.is_tensor_meta(a) else a for a in args]


for _path in ("percentile", "quantile", "nanpercentile", "nanquantile"):
    define(FunctionSpec(_path, ("a", "weights"), _nanquantile if "nan" in _path else _quantile,
                        refuse={"overwrite_input": _NO_OVERWRITE},
                        proxies=_empty_kept if "nan" in _path else None))
define(FunctionSpec("average", ("a", "weights"), _average,
                    refuse={"returned": "np.sum(weights, axis) for the sum of weights"}))
define(FunctionSpec("trace", ("a",), _trace, probe={"offset": 0}))
define(FunctionSpec("linalg.trace", ("x",), _linalg_trace, probe={"offset": 0}))
