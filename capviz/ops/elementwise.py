"""The elementwise ops: every NumPy ufunc of one or two operands (one op each, named as the
ufunc), the scalar math NumPy scalars run (``scalar_power``, ``scalar_multiply``,
``scalar_absolute``), ``round``, ``where``, ``clip``, ``astype`` and the ``*_like`` creators.

A ufunc's dtype is NumPy's own resolution run on one-element proxies, then the shape is
broadcasting, in NumPy's order, so an error is NumPy's; both cached per signature.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from capviz.ops.table import (
    META_TYPES,
    OPS,
    PLAIN_LITERALS,
    Op,
    proxy,
    proxy_dtype,
    register,
    remember,
    rule_error,
    rule_key,
    rule_keys,
    shape_of,
)

_UFUNC_CACHE: dict = {}


def _ufunc_meta(name: str, ufunc: np.ufunc) -> Callable:
    def meta(args: Sequence, params: dict) -> Any:
        if len(args) == 2:  # rule_key inlined for a tensor and a plain literal (once per op)
            a, b = args
            ta, tb = type(a), type(b)
            key = (name, (a.shape, a.dtype) if ta in META_TYPES else rule_key(a),
                   tb if tb in PLAIN_LITERALS else
                   (b.shape, b.dtype) if tb in META_TYPES else rule_key(b))
        else:
            key = rule_keys(name, args)
        hit = _UFUNC_CACHE.get(key)
        if hit is not None:
            return hit
        try:  # dtypes first, as NumPy resolves the loop before it broadcasts
            with np.errstate(all="ignore"):
                out = ufunc(*[proxy(a) for a in args])
            shapes = [shape_of(a) for a in args]
            shape = shapes[0] if len(shapes) == 1 else tuple(np.broadcast_shapes(*shapes))
        except (ValueError, TypeError, OverflowError) as err:
            raise rule_error(name, args, params, err) from None
        if ufunc.nout == 1:
            result: Any = (shape, out.dtype)
        else:  # divmod, modf, frexp: one (shape, dtype) per result
            result = [(shape, o.dtype) for o in out]
        remember(_UFUNC_CACHE, key, result, 100_000)
        return result

    return meta


def _ufunc_impl(name: str) -> Callable:
    return lambda xp: getattr(xp, name)


UFUNCS: dict[str, np.ufunc] = {}
for _name in sorted(dir(np)):
    _u = getattr(np, _name)
    if (isinstance(_u, np.ufunc) and _u.nout in (1, 2) and _u.nin in (1, 2)
            and _u.signature is None and _u.__name__ not in UFUNCS):
        UFUNCS[_u.__name__] = _u
        register(Op(_u.__name__, _ufunc_impl(_u.__name__), _ufunc_meta(_u.__name__, _u),
                    nargs=(_u.nin, _u.nin), multi=_u.nout == 2, out=_u.nout == 1))


GUFUNCS: set[str] = {"matmul"}
"""Generalized ufuncs with an op of the same name (``capviz.ops.products`` adds vecdot...)."""


def ufunc_op(ufunc: np.ufunc) -> Op | None:
    """The op for a NumPy ufunc, or ``None`` when capviz does not support it."""
    name = ufunc.__name__
    return OPS[name] if name in UFUNCS or name in GUFUNCS else None


# ndarray.__pow__ does not always call np.power: for a float or complex array and an exponent
# that is exactly the Python int 2 or -1 or the Python float 0.5 it calls square, reciprocal or
# sqrt, which round differently (float16 ** 0.5, complex ** 2) or give another dtype (bool ** 2
# is int8 through square, int64 through power). NumPy 2's number.c fast_scalar_power; checked
# against eager NumPy for every dtype by tests/test_operators.py.
_POW_FAST = {(int, 2): "square", (int, -1): "reciprocal", (float, 0.5): "sqrt"}


def power_op(dtype: np.dtype, exponent: Any) -> Op:
    """The op ``array ** exponent`` runs for an array of ``dtype`` (``**`` and ``**=``)."""
    kind = type(exponent)
    name = _POW_FAST.get((kind, exponent)) if kind is int or kind is float else None
    if name is not None and (dtype.kind in "fc" or (name == "square" and dtype.kind == "b")):
        return OPS[name]
    return OPS["power"]


# A NumPy scalar's ** is its own scalar math (C pow in the scalar's precision), not np.power's
# loops, and the two differ in the last bits for most exponents (np.float32(x) ** 1.5), as well
# as in the fast paths above. ``x.sum() ** 0.5`` is a scalar ** in eager NumPy, so a 0-d tensor
# that stands for a scalar records ``scalar_power``, which replays the ** operator on scalars.
def _as_scalar(value: Any) -> Any:
    return value[()] if isinstance(value, np.ndarray) and value.ndim == 0 else value


def _scalar_power(xp: Any) -> Callable:
    def scalar_power(base: Any, exponent: Any) -> Any:
        return _as_scalar(base) ** _as_scalar(exponent)

    return scalar_power


register(Op("scalar_power", _scalar_power, _ufunc_meta("power", np.power), nargs=(2, 2)))


# A complex NumPy scalar's * and abs() are its scalar math too, which differs from np.multiply's
# and np.absolute's loops in the last bit (the loops use the CPU's fused multiply-add where it
# has one; (0.6+0.8j) * (0.6-0.8j) has an imaginary part of 0 or -2.7e-17). Real scalars' * and
# abs are exactly rounded on both sides, so only complex operands record these ops.
def _scalar_multiply(xp: Any) -> Callable:
    def scalar_multiply(a: Any, b: Any) -> Any:
        return _as_scalar(a) * _as_scalar(b)

    return scalar_multiply


def _scalar_absolute(xp: Any) -> Callable:
    def scalar_absolute(a: Any) -> Any:
        return abs(_as_scalar(a))

    return scalar_absolute


register(Op("scalar_multiply", _scalar_multiply, _ufunc_meta("multiply", np.multiply),
            nargs=(2, 2)))
register(Op("scalar_absolute", _scalar_absolute, _ufunc_meta("absolute", np.absolute)))


def _round_meta(args: Sequence, params: dict) -> tuple:
    x = args[0]
    try:
        with np.errstate(all="ignore"):
            dt = np.round(proxy(x), params.get("decimals", 0)).dtype
    except (ValueError, TypeError, OverflowError) as err:
        raise rule_error("round", args, params, err) from None
    return tuple(x.shape), dt


register(Op("round", lambda xp: xp.round, _round_meta, params=("decimals",)))


# --- ops with a written rule --------------------------------------------------------------------


def _broadcast_meta(name: str, fn: Callable) -> Callable:
    def meta(args: Sequence, params: dict) -> tuple:
        try:
            shape = tuple(np.broadcast_shapes(*[shape_of(a) for a in args]))
            key = rule_keys(name, args)
            dt = proxy_dtype(fn, args, params, key)
        except (ValueError, TypeError, OverflowError) as err:
            raise rule_error(name, args, params, err) from None
        return shape, dt

    return meta


register(Op("where", lambda xp: xp.where, _broadcast_meta("where", np.where), nargs=(3, 3)))
register(Op("clip", lambda xp: xp.clip, _broadcast_meta("clip", np.clip), nargs=(3, 3)))


def _astype(xp: Any) -> Callable:
    def astype(x: Any, dtype: str) -> Any:
        return x.astype(dtype)

    return astype


def dtype_param(dtype: Any) -> str:
    """The ``dtype`` param of ``astype``: the dtype's name (``"float32"``), or its string form
    where NumPy cannot read the name back (``"|S4"`` for ``bytes32``)."""
    dt = np.dtype(dtype)
    return dt.name if dt.kind in "biufc" else dt.str


def _astype_meta(args: Sequence, params: dict) -> tuple:
    try:
        return args[0].shape, np.dtype(params["dtype"])
    except TypeError as err:
        raise rule_error("astype", args, params, err) from None


register(Op("astype", _astype, _astype_meta, params=("dtype",)))


def _like_meta(args: Sequence, params: dict) -> tuple:
    """``np.zeros_like(x, dtype=..., shape=...)`` and the others: x's shape unless ``shape``
    (a tuple of ints) is given, x's dtype unless ``dtype`` is."""
    x = args[0]
    dt = np.dtype(params["dtype"]) if params.get("dtype") is not None else x.dtype
    if "fill_value" in params:
        dt = np.full_like(np.ones(1, x.dtype), params["fill_value"],
                          dtype=params.get("dtype")).dtype
    shape = params.get("shape")
    if shape is None:
        return x.shape, dt
    shape = tuple(shape)
    if any(size < 0 for size in shape):
        raise rule_error("zeros_like", args, params,
                         ValueError("negative dimensions are not allowed"))
    return shape, dt


register(Op("zeros_like", lambda xp: xp.zeros_like, _like_meta, params=("dtype", "shape")))
register(Op("ones_like", lambda xp: xp.ones_like, _like_meta, params=("dtype", "shape")))
register(Op("full_like", lambda xp: xp.full_like, _like_meta,
            params=("fill_value", "dtype", "shape")))

