"""NumPy functions that write into an argument: ``np.copyto``, ``np.put``, ``np.place``,
``np.put_along_axis``, ``np.putmask``, ``np.fill_diagonal``.

Each computes the written value with an op (``setitem``, ``put``, ``put_along_axis``,
``putmask``, ``fill_diagonal`` of :mod:`capviz.ops.updates`, or ``where``) and writes it into the
destination tensor through its backend: an eager tensor's array is written in place; a capture
records the update and every reference to the tensor, and every view of its buffer, sees it
(:mod:`capviz.trace.mutation`).
NumPy's own checks run first on stand-ins, so a write NumPy refuses raises NumPy's error.
"""

from __future__ import annotations

import operator
import sys
import warnings
from typing import Any

import numpy as np

from capviz import ops
from capviz.core.errors import CapvizError
from capviz.core.source import numpy_caller
from capviz.core.violations import NUMPY_COPIES
from capviz.trace.dispatch import HANDLED, implements
from capviz.trace.mutation import MASK_SHARES_TARGET, is_numpy_scalar, located, same_buffer
from capviz.trace.recorder import Recorder
from capviz.trace.tensor import Tensor, apply, trace_of, unsupported

_NDARRAY_DEST = ("the destination is an ndarray, which cannot hold a recorded value; record it "
                 "first, a = cv.constant(a), and write into that tensor")


def _destination(name: str, dst: Any, *others: Any, scalar_error: str = "") -> Tensor:
    """The tensor written into; an ndarray is refused by name, and a NumPy scalar (a 0-d op
    result) raises ``scalar_error`` as NumPy does."""
    if type(dst) is not Tensor:
        inside = numpy_caller(sys._getframe(1))
        recorder = trace_of((dst, *others))
        if type(dst) is np.ndarray and inside not in NUMPY_COPIES and recorder is not None \
                and recorder.records:  # an outside array written: a state of the capture
            return recorder.state_target(dst, f"{name} into an ndarray")
        if inside in NUMPY_COPIES:  # np.full(shape, t, dtype) copies t into its new ndarray
            raise unsupported(f"np.{inside}(..., t) of a tensor t", (dst, *others),
                              NUMPY_COPIES[inside])
        raise unsupported(f"{name} into an ndarray", (dst, *others), _NDARRAY_DEST)
    backend = dst._trace
    if scalar_error and isinstance(backend, Recorder) and is_numpy_scalar(dst):
        raise located(backend, TypeError(scalar_error.format(
            type=f"numpy.{dst.dtype.type.__name__}")))
    return dst


def _record(op: ops.Op, args: tuple, params: dict, dst: Tensor) -> Tensor:
    """``apply(op, ...)``; in a capture, NumPy's error (from the op's rule) gets the user's
    line, as every capture error does."""
    try:
        return apply(op, args, params)
    except CapvizError:
        raise
    except (ValueError, TypeError, IndexError, OverflowError) as err:
        if isinstance(dst._trace, Recorder):
            raise located(dst._trace, err) from None
        raise


def _overlaps(dst: Tensor, other: Any) -> bool:
    """True when tensor ``other`` shares memory with the destination ``dst`` (a capture: the
    same buffer; eager NumPy arrays: ``np.may_share_memory``)."""
    if type(other) is not Tensor or other._trace is not dst._trace:
        return False
    if isinstance(dst._trace, Recorder):
        return same_buffer(dst, other)
    data, other_data = dst._data, other._data
    if isinstance(data, np.ndarray) and isinstance(other_data, np.ndarray):
        return np.may_share_memory(data, other_data)
    return data is other_data


def _standin(value: Any) -> Any:
    """A one-element stand-in with the value's dtype (a literal stays itself)."""
    if type(value) is Tensor or isinstance(value, np.ndarray):
        return np.ones((), value.dtype)
    return value


def _values(value: Any, dtype: np.dtype) -> Any:
    """A written list becomes an array of the destination's dtype, as NumPy converts it."""
    if isinstance(value, (list, tuple)):
        return np.asarray(value, dtype=dtype)
    return value


@implements(np.copyto)
def _copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    dst = _destination("np.copyto", dst, src, scalar_error="copyto() argument 1 must be a "
                                                           "numpy.ndarray, not {type}")
    src = _values(src, dst.dtype)
    with np.errstate(all="ignore"):  # NumPy's casting check, on a one-element destination
        np.copyto(np.ones((), dst.dtype), _standin(src), casting=casting)
    if where is True:  # copyto casts a NumPy scalar or a Python float as an array (300.0 into
        # int8 is 44), where dst[...] = s converts it to a Python int first (an OverflowError)
        if type(src) is Tensor and is_numpy_scalar(src):
            src = src.astype(dst.dtype)
        elif isinstance(src, (np.generic, float, complex)):
            src = np.asarray(src).astype(dst.dtype)
        dst[...] = src
        return
    if where is not dst and _overlaps(dst, where):
        raise unsupported("np.copyto(dst, src, where=mask) with a mask that shares dst's memory",
                          (dst, src, where), MASK_SHARES_TARGET.format(
                              fix="np.copyto(dst, src, where=mask.copy())"))
    cast = src.astype(dst.dtype) if type(src) is Tensor else np.asarray(src).astype(dst.dtype)
    dst[...] = np.where(where, cast, dst)


@implements(np.put)
def _put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    a = _destination("np.put", a, ind, v)
    mode = ops.clip_mode(mode)
    ind = ind if type(ind) is Tensor else np.asarray(ind)
    if isinstance(a._trace, Recorder) and is_numpy_scalar(a):
        return _put_into_a_scalar(a, ind, v, mode)
    new = _record(ops.OPS["put"], (a, ind, _values(v, a.dtype)), {"mode": mode}, a)
    a._trace.replace(a, new)


def _put_into_a_scalar(a: Tensor, ind: Any, v: Any, mode: str) -> None:
    """``np.put(s, ...)`` into a NumPy scalar (the 0-d result of ``x * 1``, ``x.sum()``): NumPy
    writes into a 0-d copy of it, which it drops, so ``s`` is unchanged; its errors (an index
    out of bounds with ``mode='raise'``, a value it cannot cast) are NumPy's, from the same call
    on a 0-d stand-in. With a tensor index and ``mode='raise'`` NumPy's bounds check needs the
    index's values: refused by name."""
    if type(ind) is Tensor and mode == "raise":
        raise unsupported("np.put(s, ind, v) into a NumPy scalar s with a tensor index",
                          (a, ind, v), "NumPy writes into a copy of s that it drops, after "
                          "checking the index's bounds, which needs its values: pass "
                          "mode='clip' (nothing is written either way), or drop the call")
    index = np.zeros(ind.shape, np.intp) if type(ind) is Tensor else ind
    values = _standin(v) if type(v) is Tensor else _values(v, a.dtype)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.put(np.zeros((), a.dtype), index, values, mode=mode)
    except (ValueError, TypeError, IndexError, OverflowError) as err:
        raise located(a._trace, err) from None


@implements(np.put_along_axis)
def _put_along_axis(arr: Any, indices: Any, values: Any, axis: Any) -> None:
    arr = _destination("np.put_along_axis", arr, indices, values)
    if axis is None:
        raise unsupported("np.put_along_axis(..., axis=None)", (arr, indices, values),
                          "flatten first: t2 = t.reshape(-1), then write along axis=0")
    indices = indices if type(indices) is Tensor else np.asarray(indices)
    new = _record(ops.OPS["put_along_axis"], (arr, indices, _values(values, arr.dtype)),
                  {"axis": operator.index(axis)}, arr)
    arr._trace.replace(arr, new)


@implements(np.place)
def _place(arr: Any, mask: Any, vals: Any) -> None:
    arr = _destination("np.place", arr, mask, vals, scalar_error="place() argument 1 must be "
                                                                 "numpy.ndarray, not {type}")
    size = vals.size if type(vals) is Tensor else np.size(vals)
    if size == 0:
        raise unsupported("np.place with no values", (arr, mask, vals),
                          "NumPy raises for it when the mask has a True entry, which a "
                          "capture cannot know; leave the call out where the mask is empty")
    if tuple(np.shape(mask)) != arr.shape:
        raise unsupported("np.place with a mask of another shape", (arr, mask, vals),
                          "reshape the mask to the array's shape")
    _check_place_values(arr, vals)
    if type(mask) is Tensor and mask is not arr and _overlaps(arr, mask):
        mask = mask.copy()  # NumPy copies a mask that overlaps the array
    if size == 1:
        one = vals.reshape(()) if type(vals) is Tensor else _values(np.ravel(vals),
                                                                    arr.dtype)[0]
        arr[mask] = one
        return
    # the k-th True entry (in C order) takes vals[k % size]: k from a running count of the
    # mask, a gather of the values, a select (shapes that do not depend on the mask's values)
    flat = vals.reshape(-1) if type(vals) is Tensor else _values(np.ravel(vals), arr.dtype)
    mask = mask if type(mask) is Tensor else np.asarray(mask, bool)
    count = np.cumsum(np.ravel(mask).astype(np.intp)) - 1
    # (np.take dispatches on its array alone: an ndarray of values takes the handler itself)
    picked = HANDLED[np.take](flat, count % size).reshape(arr.shape)
    arr[...] = np.where(mask, picked.astype(arr.dtype), arr)


@implements(np.putmask)
def _putmask(a: Any, /, mask: Any, values: Any) -> None:
    a = _destination("np.putmask", a, mask, values,
                     scalar_error="putmask: first argument must be an array")
    mask = mask if type(mask) is Tensor else np.asarray(mask)
    new = _record(ops.OPS["putmask"], (a, mask, _values(values, a.dtype)), {}, a)
    a._trace.replace(a, new)


@implements(np.fill_diagonal)
def _fill_diagonal(a: Any, val: Any, wrap: bool = False) -> None:
    a = _destination("np.fill_diagonal", a, val)
    if _overlaps(a, val):
        raise unsupported("np.fill_diagonal(a, val) with a val that shares a's memory", (a, val),
                          "NumPy reads val while it writes the diagonal, so it sees the "
                          "elements already written; pass a copy: "
                          "np.fill_diagonal(a, val.copy())")
    params = {"wrap": True} if wrap else {}
    new = _record(ops.OPS["fill_diagonal"], (a, _values(val, a.dtype)), params, a)
    a._trace.replace(a, new)


def _check_place_values(arr: Tensor, vals: Any) -> None:
    """NumPy's conversion of ``vals`` to ``arr``'s dtype, which ``np.place`` runs before
    writing (safe casting for an array, a range check for a Python number): run on a
    one-element destination with no True entry, so its error is NumPy's, at the user's line."""
    standin = np.ones(vals.shape, vals.dtype) if type(vals) is Tensor else vals
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            np.place(np.zeros(1, arr.dtype), np.zeros(1, bool), standin)
    except (ValueError, TypeError, OverflowError) as err:
        if isinstance(arr._trace, Recorder):
            raise located(arr._trace, err) from None
        raise


def write_into(call: str, op: ops.Op, operands: Any, params: dict, out: Tensor) -> Tensor:
    """``f(*operands, out=out)`` for a NumPy function recorded as ``op``: the ``into`` update op
    runs NumPy's function with ``out=`` at replay (the numerics of a call with ``out=`` can
    differ from those without: ``np.mean`` of float16 into float16), then writes ``out``. An
    ``out`` of another shape or dtype than the result is refused by name (NumPy's casting
    into it is the function's own)."""
    try:
        shape, dtype = op.meta(list(operands), params)
    except (ValueError, TypeError, IndexError):
        shape, dtype = out.shape, out.dtype  # the op's own error is raised, located, below
    if tuple(shape) != out.shape or np.dtype(dtype) != out.dtype:
        raise unsupported(f"{call}(..., out=...)", (out, *operands),
                          f"out is {out.dtype}{list(out.shape)} but the result is "
                          f"{np.dtype(dtype)}{list(shape)}: NumPy then computes inside out's "
                          "dtype with its own intermediate roundings, which capture does not "
                          f"record. Give out the result's dtype and shape (np.zeros_like(x, "
                          f"dtype={np.dtype(dtype).name!r}, shape={tuple(shape)})), or compute "
                          "this call outside the capture; y = "
                          f"{call}(...) then out[...] = y may differ from NumPy's bits")
    new = _record(ops.OPS["into"], (out, *operands), {"op": op.name, "params": dict(params)},
                  out)
    return out._trace.replace(out, new)


def write_elementwise(call: str, op: ops.Op, inputs: tuple, out: Any) -> Tensor:
    """An elementwise function with ``out=`` (``np.clip(a, lo, hi, out=a)``): NumPy runs it as a
    ufunc, so it is recorded as one (the result cast to ``out`` with "same_kind")."""
    dest = _destination(call, out, *inputs)
    written = dest._trace.write_ufunc(op, inputs, dest, True)
    return out if type(out) is np.ndarray else written  # NumPy returns out
