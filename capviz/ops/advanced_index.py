"""Advanced indexing with integer tensors inside a tuple index: ``x[np.arange(n), y]``,
``x[:, idx]``, ``x[i, j] = v``, ``x[idx, j] += v``.

Two ops, one read and one write, both holding the index the way :func:`capviz.trace.tensor.
normalize_index` holds a static one (ints, slices, ``None``, ``Ellipsis``, lists), with the
positions taken by integer tensors named in the ``tensors`` param (the static index holds ``0``
there) and the tensors themselves as the op's trailing operands:

* ``advanced_index(x, *idx, index, tensors)``: ``x[index]`` with ``idx[k]`` at position
  ``tensors[k]``; a copy, as NumPy's advanced indexing makes;
* ``advanced_index_put(x, value, *idx, index, tensors)``: ``y = x.copy(); y[index] = value``
  (NumPy's fancy assignment: the value cast unsafely, a repeated position written in order, the
  last write winning).

The shape rule asks NumPy itself: the index is applied to an array of the zero-byte dtype
``np.dtype([])`` (the real shape, no memory) with zero-strided integer arrays of the tensors'
shapes and dtypes in the tensors' places, so NumPy's broadcasting of the index arrays, its
placement of the broadcast axes (first when the advanced indices are separated by a slice,
``None`` or ``Ellipsis``, in place when adjacent) and its ``IndexError`` for a float index or for
index arrays that do not broadcast are NumPy's own. Index 0 is in bounds of every non-empty
axis, and an index into an empty axis fails in NumPy whatever its value, so the stand-in
raises exactly when any value would; the values themselves are known only at replay, where
NumPy raises its ``IndexError`` for one out of bounds (a ``ReplayError`` naming the node).

The capture side, :func:`split_key` and :func:`tensor_key`, turns the user's key into the
static index and the tensors (it sees tensors only through ``is_tensor``, so this module stays
below :mod:`capviz.trace.tensor`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from capviz.ops.elementwise import UFUNCS
from capviz.ops.table import Op, is_tensor_meta, register, rule_error
from capviz.ops.updates import check_assignment, check_ufunc_at, copy_then

VOID = np.dtype([])
READ = "advanced_index"
WRITE = "advanced_index_put"
UFUNC_AT = "advanced_ufunc_at"


# --- the capture side: the user's key as a static index and tensors ----------------------------


def tensor_key(key: Any, is_tensor: Callable[[Any], bool]) -> Any:
    """``key`` with every list that holds a tensor (``[k, p]`` with ``p`` a 0-d tensor) made one
    integer tensor, as NumPy makes a list index one array; other keys are returned unchanged.

    Raises:
        IndexError: a list mixing tensors with booleans or non-integers (NumPy's error for an
            index array that is not of integer type).
    """
    if isinstance(key, list) and _holds_tensor(key, is_tensor):
        return _stack(key, is_tensor)
    if isinstance(key, tuple) and any(isinstance(k, list) and _holds_tensor(k, is_tensor)
                                      for k in key):
        return tuple(_stack(k, is_tensor) if isinstance(k, list) and _holds_tensor(k, is_tensor)
                     else k for k in key)
    return key


def _holds_tensor(items: list, is_tensor: Callable[[Any], bool]) -> bool:
    return any(is_tensor(k) or (isinstance(k, list) and _holds_tensor(k, is_tensor))
               for k in items)


def _stack(items: list, is_tensor: Callable[[Any], bool]) -> Any:
    """One array of the list's entries (integers, booleans, tensors of them, nested lists of
    them), made as ``np.array(items)`` would make it (``[True, p]`` is an integer array, a list
    of booleans only a mask), recorded with ``np.stack``.

    Raises:
        IndexError: an entry that is not an integer or a boolean (NumPy's error for the float
            array the list would make).
    """
    parts = []
    for k in items:
        if isinstance(k, list):
            k = _stack(k, is_tensor)
        elif not is_tensor(k):
            if not isinstance(k, (int, np.integer, bool, np.bool_)):
                raise IndexError("arrays used as indices must be of integer (or boolean) type "
                                 f"(a list index holding a tensor and {k!r})")
            k = np.asarray(k)
        if k.dtype.kind not in "iub":
            raise IndexError("arrays used as indices must be of integer (or boolean) type "
                             f"(a list index holding a {k.dtype} tensor)")
        parts.append(k)
    return np.stack(parts)


def split_key(key: tuple, is_tensor: Callable[[Any], bool],
              normalize: Callable[[Any], tuple]) -> tuple[tuple, tuple, list]:
    """``(index, positions, tensors)`` of a tuple key holding integer tensors.

    Args:
        key: the user's tuple index (after :func:`tensor_key`).
        is_tensor: true for a tensor.
        normalize: the static index normalizer (:func:`capviz.trace.tensor.normalize_index`).

    Returns:
        The static index (``0`` where a tensor stands), the positions of the tensors in it,
        and the tensors in that order.
    """
    index: list[Any] = []
    positions = []
    tensors = []
    for pos, k in enumerate(key):
        if is_tensor(k):
            positions.append(pos)
            tensors.append(k)
            index.append(0)
        else:
            index.extend(normalize((k,)))
    return tuple(index), tuple(positions), tensors


def is_basic(index: tuple, positions: tuple, tensors: Sequence[Any],
             is_scalar: Callable[[Any], bool]) -> bool:
    """True when eager NumPy indexes basically: every tensor is a NumPy scalar there
    (``is_scalar``: the 0-d result of an op, ``np.argmax(...) + k``) and no static entry is an
    array or a boolean (``x[p, True]`` is advanced); NumPy's result is then a view, and a
    NumPy-scalar value is written as into one element (its range checked)."""
    static = [k for pos, k in enumerate(index) if pos not in positions]
    return all(is_scalar(t) for t in tensors) and not any(isinstance(k, (list, bool))
                                                          for k in static)


def tensor_axes(index: tuple, positions: Sequence[int], ndim: int) -> list[int]:
    """The axis of an array of ``ndim`` axes that each tensor position of ``index`` indexes
    (for a backend that checks the tensors' values against their axis lengths)."""
    spans = []
    for k in index:
        if k is None:
            spans.append(0)
        elif isinstance(k, list) and np.asarray(k).dtype == np.bool_:
            spans.append(np.asarray(k).ndim)  # a boolean list indexes as many axes as it has
        elif k is Ellipsis:
            spans.append(-1)
        else:
            spans.append(1)
    if -1 in spans:
        spans[spans.index(-1)] = ndim - sum(s for s in spans if s > 0)
    starts = np.cumsum([0, *spans])
    return [int(starts[pos]) for pos in positions]


# --- the shape rules ----------------------------------------------------------------------------


def _standin(meta: Any) -> np.ndarray:
    """An index array of the tensor's shape and dtype, all zeros, over one element."""
    shape = tuple(meta.shape)
    return as_strided(np.zeros(1, meta.dtype), shape, (0,) * len(shape))


def selected(x: Any, idx: Sequence[Any], params: dict, name: str, args: Sequence) -> tuple:
    """The shape of ``x[index]`` with the tensors ``idx`` in their places (NumPy's rules and
    NumPy's ``IndexError``, as :class:`capviz.core.errors.IndexShapeError`)."""
    index = list(params["index"])
    positions = params["tensors"]
    try:
        if len(positions) != len(idx):
            raise TypeError(f"{name}: {len(idx)} index tensors for {len(positions)} positions")
        for pos, meta in zip(positions, idx):
            if not is_tensor_meta(meta):
                raise TypeError(f"{name}: the index at position {pos} is not a tensor")
            if meta.dtype == np.bool_:
                raise IndexError("a boolean tensor inside a tuple index gives a shape that "
                                 "depends on its values, which a graph cannot record")
            index[pos] = _standin(meta)
        return tuple(np.empty(tuple(x.shape), VOID)[tuple(index)].shape)
    except (ValueError, TypeError, IndexError) as err:
        raise rule_error(name, args, params, err) from None


def _read_meta(args: Sequence, params: dict) -> tuple:
    x, *idx = args
    return selected(x, idx, params, READ, args), x.dtype


def _write_meta(args: Sequence, params: dict) -> tuple:
    x, value, *idx = args
    target = selected(x, idx, params, WRITE, args)
    try:
        check_assignment(target, x.dtype, value)
    except (ValueError, TypeError, OverflowError) as err:
        raise rule_error(WRITE, args, params, err) from None
    return tuple(x.shape), x.dtype


# --- the implementations ------------------------------------------------------------------------


def assemble(xp: Any, index: tuple, positions: Sequence[int], idx: Sequence[Any]) -> tuple:
    """The index with each tensor in its place, as an array of ``xp`` (a NumPy scalar would
    make NumPy index basically and return a view; an array keeps it advanced: a copy)."""
    full = list(index)
    for pos, value in zip(positions, idx):
        full[pos] = xp.asarray(value)
    return tuple(full)


def _read(xp: Any) -> Callable:
    def advanced_index(x: Any, *idx: Any, index: tuple, tensors: tuple) -> Any:
        return x[assemble(xp, index, tensors, idx)]

    return advanced_index


def _write(xp: Any) -> Callable:
    def advanced_index_put(x: Any, value: Any, *idx: Any, index: tuple, tensors: tuple) -> Any:
        y = x.copy(order="K")  # the written array keeps its axis order, as in eager
        y[assemble(xp, index, tensors, idx)] = value
        return y

    return advanced_index_put


register(Op(READ, _read, _read_meta, params=("index", "tensors"), nargs=(2, None)))
register(Op(WRITE, _write, _write_meta, params=("index", "tensors"), nargs=(3, None)))


# --- advanced_ufunc_at: np.add.at(x, (i, j), v), np.add.at(x, slice(1, 3), v) --------------------


def _ufunc_at_meta(args: Sequence, params: dict) -> tuple:
    """``np.<ufunc>.at(x, index, value)`` with any index but one integer array along the first
    axis (``ufunc_at``): a tuple of integer arrays, tensors, slices, ``None``, ``Ellipsis``.
    NumPy's checks: the ufunc takes two operands, the value broadcasts to ``x[index]``, the
    ufunc has a loop for the operands."""
    x, value, *idx = args
    ufunc = UFUNCS.get(params["ufunc"])
    try:
        if ufunc is None or ufunc.nin != 2 or ufunc.nout != 1:
            raise TypeError(f"{params['ufunc']!r}.at is recorded for ufuncs of two operands")
        check_ufunc_at(ufunc, x.dtype, value, selected(x, idx, params, UFUNC_AT, args))
    except (ValueError, TypeError, OverflowError) as err:
        raise rule_error(UFUNC_AT, args, params, err) from None
    return tuple(x.shape), x.dtype


def _ufunc_at(xp: Any, y: Any, value: Any, *idx: Any, ufunc: str, index: tuple,
              tensors: tuple) -> None:
    getattr(xp, ufunc).at(y, assemble(xp, index, tensors, idx), value)


register(Op(UFUNC_AT, copy_then(_ufunc_at), _ufunc_at_meta, params=("ufunc", "index", "tensors"),
            nargs=(2, None)))
