"""The op table: one :class:`Op` per operation, its shape and dtype rule, and how it runs.

An op never touches data at capture time: its ``meta`` rule maps operand shapes and dtypes (and
static literals) to the output's shape and dtype. At run time ``op.bind(xp)`` gives the callable
for an array namespace ``xp`` (``numpy``, ``cupy``, ``jax.numpy``...): the table holds one
implementation for every engine. Rules are exact copies of NumPy's behaviour, obtained three
ways, with the helpers here:

* elementwise ops (:mod:`.elementwise`): NumPy's own dtype resolution run on one-element
  proxies (:func:`proxy`; NumPy 2's weak Python scalars follow automatically), and
  broadcasting; both cached per signature (:func:`rule_key`, :func:`remember`);
* structural ops (:mod:`.structural`: reshape, indexing, split, concatenate...): the op itself,
  run on a :func:`dummy` array of the zero-byte dtype ``np.dtype([])``, which has the real
  shape but holds no memory;
* reductions, matmul, take (:mod:`.reductions`, :mod:`.products`, :mod:`.structural`): a
  written shape rule, dtype from proxies as above.

The NumPy-function families (:mod:`.spec`) build their ops from the same helpers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from capviz.core.errors import (
    AxisShapeError,
    DTypeError,
    IndexShapeError,
    LinAlgShapeError,
    ScalarOverflowError,
    ShapeError,
    UnsupportedOperationError,
)

VOID = np.dtype([])
EMPTY: dict = {}


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
        return np.empty(a.shape, dtype=VOID)
    return a


PLAIN_LITERALS = frozenset((bool, float, complex, np.bool_, np.float16, np.float32, np.float64,
                             np.complex64, np.complex128))
META_TYPES: set[type] = set()  # types found to be tensor metadata (is_tensor_meta)
_INT_LITERALS = frozenset((int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                           np.uint32, np.uint64))


def rule_key(a: Any) -> Any:
    """The part of operand ``a`` that NumPy's dtype rules (and errors) depend on.

    A tensor: its shape and dtype. A literal: its type (NumPy 2 promotes Python scalars weakly and
    NumPy scalars by their dtype), and for an integer outside 0..127 also its value: whether it
    fits the other operand's dtype (``uint8 + (-1)`` raises OverflowError) or is a negative power
    depends on it. Every integer in 0..127 fits every dtype, so they share one entry.
    """
    t = type(a)
    if t in META_TYPES:
        return (a.shape, a.dtype)
    if t in PLAIN_LITERALS:
        return t
    if t in _INT_LITERALS:
        return t if 0 <= a <= 127 else (t, int(a))
    if is_tensor_meta(a):
        META_TYPES.add(t)  # capture nodes, eager arrays: one type test per call from now on
        return (a.shape, a.dtype)
    if isinstance(a, np.integer) and not 0 <= a <= 127:
        return (t, int(a))
    return t


def rule_keys(name: str, args: Sequence) -> tuple:
    """The cache key of an op on ``args`` (unrolled for the usual one or two operands)."""
    if len(args) == 2:
        return (name, rule_key(args[0]), rule_key(args[1]))
    if len(args) == 1:
        return (name, rule_key(args[0]))
    return (name, *[rule_key(a) for a in args])


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


def rule_error(name: str, args: Sequence, params: dict,
               err: Exception) -> ShapeError | UnsupportedOperationError:
    """The capture error for NumPy's ``err``: its message, and its type (OverflowError,
    TypeError, IndexError (so AxisError) and LinAlgError stay catchable as such; everything
    else is a ValueError)."""
    shapes = ", ".join(str(tuple(a.shape)) if is_tensor_meta(a) else repr(a) for a in args)
    extra = "".join(f", {k}={v!r}" for k, v in params.items())
    if isinstance(err, UnsupportedOperationError):  # a rule's refusal (not NumPy's error)
        return err
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


CLIP_MODES = {None: "raise", 0: "clip", 1: "wrap", 2: "raise"}
"""NumPy's other spellings of a ``mode=`` of ``np.put`` and ``np.take`` (its ``NPY_CLIPMODE``
enumeration: ``None`` is ``'raise'``, 0 ``'clip'``, 1 ``'wrap'``, 2 ``'raise'``)."""


def clip_mode(mode: Any) -> str:
    """``mode`` of ``np.put``/``np.take`` as NumPy reads it: ``'raise'``, ``'wrap'`` or
    ``'clip'`` (NumPy's ValueError for anything else)."""
    if isinstance(mode, str):
        if mode in ("raise", "wrap", "clip"):
            return mode
    elif mode is None or isinstance(mode, (int, np.integer)):
        found = CLIP_MODES.get(None if mode is None else int(mode))
        if found is not None:
            return found
    raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")


def hashable_params(params: dict) -> Any:
    try:
        items = tuple(sorted(params.items()))
        hash(items)
        return items
    except TypeError:
        return None


def remember(cache: dict, key: Any, value: Any, limit: int) -> None:
    """Keep ``value`` in a bounded rule cache: one holding more than ``limit`` entries is
    cleared whole first (no eviction bookkeeping; a miss only recomputes a rule)."""
    if len(cache) > limit:
        cache.clear()
    cache[key] = value


def numel(shape: Sequence[int]) -> int:
    """Number of elements of ``shape``."""
    return math.prod(shape)
