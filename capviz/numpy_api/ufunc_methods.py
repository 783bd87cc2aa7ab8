"""``np.<ufunc>.reduce``, ``.accumulate`` and ``.outer`` on tensors (``Tensor.__array_ufunc__``
hands them here): NumPy's arguments read as NumPy reads them, recorded as the ops of
:mod:`capviz.ops.ufunc_methods`; ``.reduceat`` and the arguments capture cannot honour are
refused at the user's line with the rewrite.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from capviz import ops
from capviz.numpy_api.writes import write_into
from capviz.ops.ufunc_methods import METHODS, op_name
from capviz.trace.dispatch import implements_ufunc_methods
from capviz.trace.tensor import Tensor, apply, trace_of, unsupported

_ONE_OUTPUT = ("recorded for NumPy's own ufuncs of one output (np.add, np.maximum, "
               "np.logical_or...)")
_OUT_NDARRAY = ("NumPy would write the result into an ndarray, and an ndarray cannot hold a "
                "recorded value; write `y = {call}(...)` (a new tensor), or record the buffer "
                "first, b = cv.constant(a), and pass out=b")


def _reduceat(name: str) -> str:
    return (f"np.{name}.reduceat(a, indices) reduces the slices between the indices; write the "
            f"slices out: np.stack([np.{name}.reduce(a[i:j]) for i, j in "
            "zip(indices, list(indices[1:]) + [len(a)])]) for increasing indices")


def _axis(axis: Any) -> Any:
    """``axis`` as NumPy reads it (None, an int or a tuple of ints); a value NumPy refuses is
    kept, for the op's rule to raise NumPy's error."""
    if axis is None:
        return None
    try:
        if isinstance(axis, (tuple, list)):
            return tuple(operator.index(a) for a in axis)
        return operator.index(axis)
    except TypeError:
        return axis


def _accumulate_axis(axis: Any) -> Any:
    """``np.<ufunc>.accumulate``'s axis as NumPy uses it: a one-element tuple ``(k,)`` is the
    axis ``k`` (NumPy accepts it); anything else is kept for the op's rule."""
    if isinstance(axis, tuple) and len(axis) == 1:
        return axis[0]
    return axis


def _keepdims(value: Any) -> Any:
    """``keepdims`` as NumPy reads it (an integer: ``True``, ``1``, ``np.int64(0)``) as a bool;
    a value NumPy refuses (``np.True_``, ``1.0``) is kept, for the op's rule to raise NumPy's
    TypeError at the user's line."""
    try:
        return bool(operator.index(value))
    except TypeError:
        return value


def _initial(call: str, inputs: tuple, initial: Any) -> Any:
    if type(initial) is Tensor or (isinstance(initial, np.ndarray) and initial.ndim):
        raise unsupported(f"{call}(..., initial=<array>)", inputs,
                          "initial= is recorded as a Python or NumPy scalar; combine a "
                          f"tensor afterwards: {call.rsplit('.', 1)[0]}({call}(a, ...), init)")
    if isinstance(initial, np.ndarray):
        return initial[()]
    return initial


_MASKED_REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min"}
"""The ufuncs whose ``reduce`` is a reduction that takes a recorded ``where=`` mask."""


def _params(call: str, method: str, ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> dict:
    """The op's parameters for NumPy's keyword arguments (``out`` already taken)."""
    kwargs = dict(kwargs)
    where = kwargs.pop("where", True)
    if not (isinstance(where, (bool, np.bool_)) and where):
        fill = (f"the ufunc's identity, {ufunc.identity!r}" if ufunc.identity is not None else
                "a value that leaves the result unchanged (-np.inf for np.maximum)")
        same = _MASKED_REDUCTIONS.get(ufunc.__name__) if method == "reduce" else None
        initial = ", initial=v" if same in ("max", "min") else ""
        fix = (f"write np.{same}(a, axis=0, where=mask{initial}), the same reduction, "
               "recorded with its mask" if same is not None else
               f"write {call}(np.where(mask, a, fill), ...) with fill {fill}")
        raise unsupported(f"{call}(..., where=...)", inputs,
                          f"where= of a ufunc method is not recorded; {fix}")
    allowed = {"reduce": ("axis", "dtype", "keepdims", "initial"),
               "accumulate": ("axis", "dtype"), "outer": ()}[method]
    extra = sorted(set(kwargs) - set(allowed))
    if extra:
        raise unsupported(f"{call}(..., {', '.join(extra)}=...)", inputs,
                          f"{call} records {', '.join(allowed) or 'no keyword arguments'}; "
                          "cast operands with .astype(...) first")
    params: dict = {"ufunc": ufunc.__name__}
    if method != "outer":
        params["axis"] = _axis(kwargs.get("axis", 0))
    if method == "accumulate":
        params["axis"] = _accumulate_axis(params["axis"])
    if kwargs.get("dtype") is not None:
        params["dtype"] = ops.dtype_param(kwargs["dtype"])
    keepdims = _keepdims(kwargs.get("keepdims", False))
    if keepdims is not False:
        params["keepdims"] = keepdims
    if "initial" in kwargs:
        params["initial"] = _initial(call, inputs, kwargs["initial"])
    return params


def _operand(value: Any) -> Any:
    """A tensor as it is; anything else as NumPy converts it (``np.subtract.outer(t, 2.0)``
    reads 2.0 as a float64 array, not as a weak Python scalar)."""
    return value if type(value) is Tensor else np.asarray(value)


@implements_ufunc_methods
def ufunc_method(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``ufunc.<method>(*inputs, **kwargs)`` with a tensor among the arguments."""
    name = ufunc.__name__
    call = f"np.{name}.{method}"
    if method == "reduceat":
        raise unsupported(call, inputs, _reduceat(name))
    if method not in METHODS:
        raise unsupported(call, inputs, f"the ufunc method {method!r} is not recorded")
    if ops.UFUNCS.get(name) is not ufunc or ufunc.nout != 1:
        raise unsupported(call, inputs, _ONE_OUTPUT)
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    params = _params(call, method, ufunc, inputs, kwargs)
    operands = tuple(_operand(a) for a in inputs)
    op = ops.OPS[op_name(method)]
    if out is None:
        return apply(op, operands, params)
    (dest,) = out
    if type(dest) is Tensor:
        return write_into(call, op, operands, params, dest)
    backend = trace_of(inputs)
    if backend is None or backend.records:
        raise unsupported(f"{call}(..., out=ndarray)", inputs, _OUT_NDARRAY.format(call=call))
    values = [backend.read(a, call) if type(a) is Tensor else a for a in inputs]
    return getattr(ufunc, method)(*values, out=out, **kwargs)
