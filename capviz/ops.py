"""The op table: one :class:`Op` per operation, its shape and dtype rule, and how it runs.

An op never touches data at capture time: its ``meta`` rule maps operand shapes and dtypes (and
static literals) to the output's shape and dtype. At run time ``op.bind(xp)`` gives the callable
for an array namespace ``xp`` (``numpy`` or ``cupy``): the table holds one implementation for
both. Rules are exact copies of NumPy's behaviour, obtained three ways:

* elementwise ops: NumPy's own dtype resolution run on one-element proxies (so NumPy 2's weak
  Python scalars follow automatically), and broadcasting; both cached per signature;
* structural ops (reshape, indexing, split, concatenate...): the op itself, run on a dummy array
  of the zero-byte dtype ``np.dtype([])``, which has the real shape but holds no memory;
* reductions, matmul, take: a written shape rule, dtype from proxies as above.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from capviz.errors import (
    AxisShapeError,
    DTypeError,
    IndexShapeError,
    LinAlgShapeError,
    ScalarOverflowError,
    ShapeError,
    UnsupportedOperationError,
)

_VOID = np.dtype([])
_EMPTY: dict = {}


class Op:
    """One entry of the op table.

    Attributes:
        name: the op name recorded in graphs (usually NumPy's function name).
        impl: ``impl(xp) -> callable``; the callable takes the node's args and params.
        meta: ``meta(args, params) -> (shape, dtype)``, or a list of them for multi-output ops;
            tensor operands in ``args`` are objects with ``.shape`` and ``.dtype``.
        params: the keyword parameter names the op accepts.
        nargs: ``(min, max)`` number of positional args (``max`` ``None``: variadic).
        multi: the op returns a tuple of arrays (read with ``unpack`` nodes).
        random: the callable takes the replay seed as its first argument, and a ``source=``
            keyword: the backend whose ``random_bits`` make the raw words (``Backend.bind``
            passes it; without it, Philox runs in array operations on the namespace).
        out: the callable accepts ``out=`` (an array of the result's shape and dtype) and then
            returns exactly the bits it returns without it; replay's memory plan writes
            results into dead buffers only for such ops (ufuncs, matmul, sum, prod, max...).
    """

    __slots__ = ("_bound", "impl", "meta", "multi", "name", "nargs", "out", "params", "random")

    def __init__(self, name: str, impl: Callable[[Any], Callable], meta: Callable,
                 params: Sequence[str] = (), nargs: tuple[int, int | None] = (1, 1),
                 multi: bool = False, random: bool = False, out: bool = False) -> None:
        self.name = name
        self.out = out
        self.impl = impl
        self.meta = meta
        self.params = frozenset(params)
        self.nargs = nargs
        self.multi = multi
        self.random = random
        self._bound: dict[str, Callable] = {}

    def bind(self, xp: Any) -> Callable:
        """The callable that runs this op on namespace ``xp`` (cached per namespace)."""
        key = xp.__name__
        fn = self._bound.get(key)
        if fn is None:
            try:
                fn = self.impl(xp)
            except AttributeError:
                raise UnsupportedOperationError(
                    f"op {self.name!r} is not available in {key}") from None
            self._bound[key] = fn
        return fn

    def __repr__(self) -> str:
        return f"<Op {self.name}>"


OPS: dict[str, Op] = {}


def register(op: Op) -> Op:
    """Add an op to the table (names are unique)."""
    if op.name in OPS:
        raise ValueError(f"op {op.name!r} is already registered")
    OPS[op.name] = op
    return op


def is_random(name: str | None) -> bool:
    """True when ``name`` is a random op (its ``random`` flag; a name no op has is not)."""
    op = OPS.get(name) if name is not None else None
    return op is not None and op.random


def get(name: str) -> Op:
    """Look an op up by name."""
    try:
        return OPS[name]
    except KeyError:
        raise UnsupportedOperationError(f"unknown op {name!r}") from None


# --- helpers for rules ---------------------------------------------------------------------------

SCALAR_TYPES = (bool, int, float, complex)


def is_tensor_meta(a: Any) -> bool:
    """True for operand metadata (anything with ``shape`` and ``dtype`` that is not a literal;
    NumPy scalars such as ``np.float32(0.5)`` are typed literals)."""
    return (not isinstance(a, (bool, int, float, complex, np.generic)) and hasattr(a, "dtype")
            and hasattr(a, "shape"))


def shape_of(a: Any) -> tuple:
    return a.shape if is_tensor_meta(a) else ()


def proxy(a: Any, ndim: int | None = None) -> Any:
    """A one-element array standing for operand ``a`` (literals stand for themselves)."""
    if is_tensor_meta(a):
        nd = len(a.shape) if ndim is None else ndim
        return np.ones((1,) * nd, dtype=a.dtype)
    return a


def dummy(a: Any) -> Any:
    """A zero-byte array of ``a``'s shape (dtype ``np.dtype([])``) for structural shape rules."""
    if is_tensor_meta(a):
        return np.empty(a.shape, dtype=_VOID)
    return a


_PLAIN_LITERALS = frozenset((bool, float, complex, np.bool_, np.float16, np.float32, np.float64,
                             np.complex64, np.complex128))
_META_TYPES: set[type] = set()  # types found to be tensor metadata (is_tensor_meta)
_INT_LITERALS = frozenset((int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                           np.uint32, np.uint64))


def _key(a: Any) -> Any:
    """The part of operand ``a`` that NumPy's dtype rules (and errors) depend on.

    A tensor: its shape and dtype. A literal: its type (NumPy 2 promotes Python scalars weakly and
    NumPy scalars by their dtype), and for an integer outside 0..127 also its value: whether it
    fits the other operand's dtype (``uint8 + (-1)`` raises OverflowError) or is a negative power
    depends on it. Every integer in 0..127 fits every dtype, so they share one entry.
    """
    t = type(a)
    if t in _META_TYPES:
        return (a.shape, a.dtype)
    if t in _PLAIN_LITERALS:
        return t
    if t in _INT_LITERALS:
        return t if 0 <= a <= 127 else (t, int(a))
    if is_tensor_meta(a):
        _META_TYPES.add(t)  # capture nodes, eager arrays: one type test per call from now on
        return (a.shape, a.dtype)
    if isinstance(a, np.integer) and not 0 <= a <= 127:
        return (t, int(a))
    return t


def _keys(name: str, args: Sequence) -> tuple:
    """The cache key of an op on ``args`` (unrolled for the usual one or two operands)."""
    if len(args) == 2:
        return (name, _key(args[0]), _key(args[1]))
    if len(args) == 1:
        return (name, _key(args[0]))
    return (name, *[_key(a) for a in args])


_DTYPE_CACHE: dict = {}


def proxy_dtype(fn: Callable, args: Sequence, params: dict, cache_key: Any = None) -> np.dtype:
    """The dtype ``fn`` gives on one-element proxies of ``args`` (cached under ``cache_key``)."""
    if cache_key is not None:
        hit = _DTYPE_CACHE.get(cache_key)
        if hit is not None:
            return hit
    with np.errstate(all="ignore"):
        out = fn(*[proxy(a) for a in args], **params)
    dt = np.asarray(out).dtype
    if cache_key is not None:
        _DTYPE_CACHE[cache_key] = dt
    return dt


def _fail(name: str, args: Sequence, params: dict, err: Exception) -> ShapeError:
    """The capture error for NumPy's ``err``: its message, and its type (OverflowError,
    TypeError, IndexError (so AxisError) and LinAlgError stay catchable as such; everything
    else is a ValueError)."""
    shapes = ", ".join(str(tuple(a.shape)) if is_tensor_meta(a) else repr(a) for a in args)
    extra = "".join(f", {k}={v!r}" for k, v in params.items())
    if isinstance(err, OverflowError):
        kind = ScalarOverflowError
    elif isinstance(err, TypeError):
        kind = DTypeError
    elif isinstance(err, np.exceptions.AxisError):
        kind = AxisShapeError
    elif isinstance(err, IndexError):
        kind = IndexShapeError
    elif isinstance(err, np.linalg.LinAlgError):
        kind = LinAlgShapeError
    else:
        kind = ShapeError
    return kind(f"{name}({shapes}{extra}): {err}")


def _hashable(params: dict) -> Any:
    try:
        items = tuple(sorted(params.items()))
        hash(items)
        return items
    except TypeError:
        return None


# --- elementwise (every NumPy ufunc of one or two operands) ------------------------------------

_UFUNC_CACHE: dict = {}


def remember(cache: dict, key: Any, value: Any, limit: int) -> None:
    """Keep ``value`` in a bounded rule cache: one holding more than ``limit`` entries is
    cleared whole first (no eviction bookkeeping; a miss only recomputes a rule)."""
    if len(cache) > limit:
        cache.clear()
    cache[key] = value


def _ufunc_meta(name: str, ufunc: np.ufunc) -> Callable:
    def meta(args: Sequence, params: dict) -> Any:
        if len(args) == 2:  # _key inlined for a tensor and a plain literal (once per op)
            a, b = args
            ta, tb = type(a), type(b)
            key = (name, (a.shape, a.dtype) if ta in _META_TYPES else _key(a),
                   tb if tb in _PLAIN_LITERALS else
                   (b.shape, b.dtype) if tb in _META_TYPES else _key(b))
        else:
            key = _keys(name, args)
        hit = _UFUNC_CACHE.get(key)
        if hit is not None:
            return hit
        try:  # dtypes first, as NumPy resolves the loop before it broadcasts
            with np.errstate(all="ignore"):
                out = ufunc(*[proxy(a) for a in args])
            shapes = [shape_of(a) for a in args]
            shape = shapes[0] if len(shapes) == 1 else tuple(np.broadcast_shapes(*shapes))
        except (ValueError, TypeError, OverflowError) as err:
            raise _fail(name, args, params, err) from None
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
"""Generalized ufuncs with an op of the same name (``capviz.oplib.products`` adds vecdot...)."""


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
        raise _fail("round", args, params, err) from None
    return tuple(x.shape), dt


register(Op("round", lambda xp: xp.round, _round_meta, params=("decimals",)))


# --- matmul and dot -----------------------------------------------------------------------------


def _matmul_shape(a: tuple, b: tuple) -> tuple:
    if not a or not b:
        raise ValueError("matmul: input operand does not have enough dimensions")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: core dimension mismatch ({a2[-1]} != {b2[-2]})")
    batch = tuple(np.broadcast_shapes(a2[:-2], b2[:-2]))
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _dot_shape(a: tuple, b: tuple) -> tuple:
    if not a or not b:
        return a or b
    if len(b) == 1:
        if a[-1] != b[0]:
            raise ValueError(f"shapes {a} and {b} not aligned")
        return a[:-1]
    if a[-1] != b[-2]:
        raise ValueError(f"shapes {a} and {b} not aligned")
    return a[:-1] + b[:-2] + b[-1:]


def _product_meta(name: str, shape_rule: Callable, fn: Callable) -> Callable:
    def meta(args: Sequence, params: dict) -> tuple:
        try:  # dtype first: NumPy converts the operands (OverflowError) before shape checks
            dt = proxy_dtype(fn, args, params, _keys(name, args))
            shape = shape_rule(shape_of(args[0]), shape_of(args[1]))
        except (ValueError, TypeError, OverflowError) as err:
            raise _fail(name, args, params, err) from None
        return shape, dt

    return meta


register(Op("matmul", lambda xp: xp.matmul, _product_meta("matmul", _matmul_shape, np.matmul),
            nargs=(2, 2), out=True))
register(Op("dot", lambda xp: xp.dot, _product_meta("dot", _dot_shape, np.dot), nargs=(2, 2)))


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
                raise ValueError(f"zero-size array to reduction operation {name} "
                                 "which has no identity")
            key = _hashable(params)
            probe = {**params, "ddof": 0} if "ddof" in params else params  # no dof warning
            dt = proxy_dtype(fn, args, probe,
                             None if key is None else (name, len(x.shape), x.dtype, key))
        except (ValueError, TypeError, np.exceptions.AxisError) as err:
            raise _fail(name, args, params, err) from None
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


# --- structural ops: shape from a zero-byte dummy ----------------------------------------------


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
            out = np_fn(*[dummy(a) if is_tensor_meta(a) else np.empty(np.shape(a), _VOID)
                          for a in args], **p)
            tensors = [a for a in args if is_tensor_meta(a)]
            if dtype == "same":
                dt = tensors[0].dtype
            else:
                dt = np.result_type(*[a.dtype if is_tensor_meta(a) else np.asarray(a).dtype
                                      for a in args])
        except (ValueError, TypeError, IndexError, np.exceptions.AxisError) as err:
            raise _fail(name, args, p, err) from None
        if multi:
            return [(tuple(o.shape), dt) for o in out]
        return tuple(out.shape), dt

    return register(Op(name, fn, meta, params=params, nargs=nargs, multi=multi))


def _getitem(xp: Any) -> Callable:
    def getitem(x: Any, index: tuple) -> Any:
        return x[index]

    return getitem


_structural("reshape", lambda xp: xp.reshape, ("shape",))
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


# --- ops with a written rule --------------------------------------------------------------------


def _broadcast_meta(name: str, fn: Callable) -> Callable:
    def meta(args: Sequence, params: dict) -> tuple:
        try:
            shape = tuple(np.broadcast_shapes(*[shape_of(a) for a in args]))
            key = _keys(name, args)
            dt = proxy_dtype(fn, args, params, key)
        except (ValueError, TypeError, OverflowError) as err:
            raise _fail(name, args, params, err) from None
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
        raise _fail("astype", args, params, err) from None


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
        raise _fail("zeros_like", args, params, ValueError("negative dimensions are not allowed"))
    return shape, dt


register(Op("zeros_like", lambda xp: xp.zeros_like, _like_meta, params=("dtype", "shape")))
register(Op("ones_like", lambda xp: xp.ones_like, _like_meta, params=("dtype", "shape")))
register(Op("full_like", lambda xp: xp.full_like, _like_meta,
            params=("fill_value", "dtype", "shape")))


def _take_meta(args: Sequence, params: dict) -> tuple:
    x, idx = args
    axis = params.get("axis")
    try:
        if not np.can_cast(idx.dtype, np.intp, "same_kind"):  # NumPy's cast of the indices
            raise TypeError(f"Cannot cast array data from {idx.dtype!r} to "
                            f"{np.dtype(np.intp)!r} according to the rule 'same_kind'")
        if axis is None:
            shape = tuple(idx.shape)
        else:
            (ax,) = normalize_axis(axis, len(x.shape))
            shape = x.shape[:ax] + tuple(idx.shape) + x.shape[ax + 1:]
    except (ValueError, TypeError) as err:
        raise _fail("take", args, params, err) from None
    return shape, x.dtype


register(Op("take", lambda xp: xp.take, _take_meta, params=("axis",), nargs=(2, 2)))


def _index_meta(args: Sequence, params: dict) -> tuple:
    x, idx = args
    if not np.issubdtype(idx.dtype, np.integer):
        raise _fail("index", args, params, TypeError(
            f"only integer tensors can index a tensor, got {idx.dtype} "
            "(a boolean mask gives a data-dependent shape, which a graph cannot record; keep "
            "the shape with np.where(mask, t, fill), or take a fixed-size top-k with "
            "np.argpartition; writes through a mask, t[mask] = v and t[mask] *= v, are "
            "recorded)"))
    if not x.shape:
        raise _fail("index", args, params, IndexError("too many indices for a 0-d tensor"))
    return tuple(idx.shape) + tuple(x.shape[1:]), x.dtype


def _index(xp: Any) -> Callable:
    def index(x: Any, idx: Any) -> Any:
        return x[idx]

    return index


register(Op("index", _index, _index_meta, nargs=(2, 2)))


def numel(shape: Sequence[int]) -> int:
    """Number of elements of ``shape``."""
    return math.prod(shape)
