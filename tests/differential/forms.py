"""Argument forms peers test that the op table's examples do not reach: ufunc methods with
every kind of index, keywords such as ``where=``, ``initial=``, ``dtype=``, ``mode=``,
``correction=``, operands given as tensors where a Python value is usual, and 0-d operands."""

from __future__ import annotations

import numpy as np


def _at(name, index):
    def fn(x):
        y = x * 1
        getattr(np, name).at(y, index, 2)
        return y

    return fn


def _at_values(x, v):
    y = x * 1
    np.add.at(y, (np.array([0, 1, 0]), np.array([1, 2, 1])), v[:3])
    return y


def _place(x, v):
    y = x * 1
    np.place(y, y > 0, v[:3])
    return y


def _put(mode):
    def fn(x):
        y = x * 1
        np.put(y, [1, 3], [5, 6], mode=mode)
        return y

    return fn


_EVERY_OTHER = np.arange(64) % 2 == 0  # made here: an array made inside a capture is a tensor


def _mask(x):
    return _EVERY_OTHER[:x.shape[-1]] if x.ndim else np.True_


def _dot_out(a, b):
    d = np.zeros_like(np.dot(a, b))  # a buffer of the result's shape and dtype, made here
    np.dot(a, b, out=d)
    return d


def _bools(x):
    return x.astype(bool), x.astype(bool)


M = (3, 4)
V = (5,)
I3 = (np.array([0, 2, 1], np.int64),)

FORMS = [
    # ufunc.at with each kind of index
    ("add.at slice", _at("add", slice(1, 3)), [M]),
    ("add.at None", _at("add", None), [M]),
    ("add.at ellipsis", _at("add", Ellipsis), [M]),
    ("multiply.at tuple", _at("multiply", (0, 1)), [M]),
    ("add.at tuple of arrays", _at_values, [M, V]),
    ("subtract.at list", _at("subtract", [0, 2, 0]), [M]),
    # products
    ("einsum size-1 contraction", lambda a, b: np.einsum("cij,cjk->cik", a, b),
     [(2, 3, 1), (2, 1, 4)]),
    ("einsum outer3", lambda a: np.einsum("i,j,k->ijk", a, a, a), [V]),
    ("tensordot list axes", lambda a, b: np.tensordot(a, b, axes=[[1], [1]]), [M, M]),
    ("dot 0-d", lambda a, b: np.dot(a, b[0, 0]), [M, M]),
    ("dot 0-d first", lambda a, b: np.dot(a.sum(), b), [M, M]),
    ("dot out", _dot_out, [M, (4, 3)]),
    ("vecdot axis", lambda a, b: np.vecdot(a, b, axis=0), [M, M]),
    # nan-reductions with keywords
    ("nansum initial", lambda a: np.nansum(a, axis=0, initial=1.5), [M]),
    ("nanprod initial", lambda a: np.nanprod(a, initial=2.0), [M]),
    ("nanmax initial", lambda a: np.nanmax(a, axis=1, initial=-1.0), [M]),
    ("nanmin initial", lambda a: np.nanmin(a, axis=0, initial=10.0), [M]),
    ("nanmin empty initial", lambda a: np.nanmin(a[:0], axis=0, initial=10.0), [M]),
    ("nansum where", lambda a: np.nansum(a, axis=1, where=_mask(a)), [M]),
    ("nanmean where", lambda a: np.nanmean(a, axis=1, where=_mask(a)), [M]),
    ("nanstd where", lambda a: np.nanstd(a, axis=1, where=_mask(a)), [M]),
    ("nanvar dtype", lambda a: np.nanvar(a, axis=0, dtype=a.dtype), [M]),
    ("nanstd dtype", lambda a: np.nanstd(a, dtype=a.dtype), [M]),
    ("sum where", lambda a: np.sum(a, axis=1, where=_mask(a)), [M]),
    # where= and initial= of sum, prod, mean, max, min (the hostile review 3, finding 14)
    ("sum where tensor", lambda a: np.sum(a, axis=0, where=np.abs(a) > 0.5), [M]),
    ("sum where initial", lambda a: np.sum(a, where=_mask(a), initial=1.5), [M]),
    ("sum initial", lambda a: np.sum(a, axis=1, initial=-2), [M]),
    ("prod where", lambda a: np.prod(a, axis=1, where=np.abs(a) > 0.5), [M]),
    ("prod initial", lambda a: np.prod(a, axis=0, initial=2.0), [M]),
    ("mean where", lambda a: np.mean(a, axis=1, where=np.abs(a) > 0.5), [M]),
    ("mean where ndarray", lambda a: np.mean(a, where=_mask(a)), [M]),
    ("max where initial", lambda a: np.max(a, axis=1, where=np.abs(a) > 0.5, initial=-1.0),
     [M]),
    ("min initial", lambda a: np.min(a, axis=0, initial=10.0), [M]),
    ("min empty initial", lambda a: np.min(a[:0], axis=0, initial=10.0), [M]),
    ("method sum where", lambda a: a.sum(axis=-1, where=np.abs(a) > 0.5, keepdims=True), [M]),
    ("var correction", lambda a: np.var(a, axis=0, correction=1), [M]),
    ("std correction", lambda a: np.std(a, correction=1.5), [M]),
    ("std dtype", lambda a: np.std(a, axis=0, dtype=a.dtype), [M]),
    ("mean dtype", lambda a: np.mean(a, dtype=a.dtype), [M]),
    # casts and scans with dtype=
    ("cumprod int32", lambda a: np.cumprod(a, dtype=np.int32), [M]),
    ("nancumprod int64", lambda a: np.nancumprod(a, dtype=np.int64), [M]),
    ("cumsum int8", lambda a: np.cumsum(a, axis=1, dtype=np.int8), [M]),
    ("astype None", lambda a: a.astype(None), [M]),
    ("astype int16", lambda a: a.astype(np.int16), [M]),
    ("round -2", lambda a: np.round(a, -2), [M]),
    ("round 3", lambda a: np.round(a, 3), [M]),
    ("trapezoid", lambda a: np.trapezoid(a, axis=1), [M]),
    ("polymul", np.polymul, [V, V]),
    # structural forms
    ("put mode None", _put(None), [M]),
    ("put mode clip", _put("clip"), [M]),
    ("expand_dims 0-d array", lambda a: np.expand_dims(a, np.array(0)), [M]),
    ("take mode clip", lambda a: np.take(a, [0, 7, -9], mode="clip"), [M]),
    ("take mode wrap", lambda a: np.take(a, [1, 9], axis=1, mode="wrap"), [M]),
    ("insert tensor obj", lambda a, i: np.insert(a, i[:2], 5.0), [V, I3]),
    ("place", _place, [M, V]),
    ("ediff1d to_end tensor", lambda a, b: np.ediff1d(a, to_end=b[:2]), [V, V]),
    ("reshape F", lambda a: np.reshape(a, (4, 3), order="F"), [M]),
    ("method reshape F", lambda a: a.reshape((2, 6), order="F"), [M]),
    ("roll tensor shift", lambda a, i: np.roll(a, i[0], axis=0), [M, I3]),
    ("bool pair", _bools, [M]),
    # complex and special arithmetic
    ("multiply", lambda a, b: a * b, [M, M]),
    ("true_divide", lambda a, b: a / b, [M, M]),
    ("log1p", np.log1p, [M]),
    ("sign", np.sign, [M]),
    ("minimum", np.minimum, [M, M]),
    ("float_power", np.float_power, [M, M]),
    ("cross", lambda a, b: np.cross(a[:, :3], b[:, :3]), [M, M]),
    ("vecmat", np.vecmat, [(4,), M]),
    ("correlate full", lambda a, b: np.correlate(a, b, "full"), [V, V]),
]
"""``(id, fn, input shapes or fixed arrays)``: a tuple holding an array is a fixed index
operand; a shape is a data input the sampler fills."""
