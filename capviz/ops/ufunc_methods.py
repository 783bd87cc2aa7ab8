"""The ufunc methods ``reduce``, ``accumulate`` and ``outer`` of a NumPy ufunc as ops.

``np.maximum.accumulate(p)``, ``np.add.reduce(x, axis=1)``, ``np.subtract.outer(a, b)``: one
op per method (``ufunc_reduce``, ``ufunc_accumulate``, ``ufunc_outer``), the ufunc named by the
``ufunc`` parameter (``"maximum"``), as ``ufunc_at`` does for ``np.add.at``. The op runs
``getattr(xp, ufunc).<method>(...)`` with the user's arguments, so replay on NumPy is the eager
call, bit for bit.

The rules run NumPy's own method on a proxy of the operand's dtype whose shape keeps which axes
are empty (each length clipped to 1): the result's dtype (``np.add.reduce`` of int8 is int64, of
float16 float16; ``np.logical_or.reduce`` of floats is bool) and NumPy's errors (an axis out of
range, a unary or two-output ufunc, several axes of a ufunc that is not reorderable, a reduction
of an empty axis without identity, an ``initial`` that does not fit) are NumPy's, at capture,
and no proxy holds more than one element per axis.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from capviz.ops import table as ops
from capviz.ops.elementwise import UFUNCS
from capviz.ops.reductions import reduced_shape

METHODS = ("reduce", "accumulate", "outer")
"""The ufunc methods recorded (``at`` is the update op ``ufunc_at``; ``reduceat`` is refused)."""

NOT_A_FOLD: dict[str, str] = {
    "arctan2": "np.arctan2.reduce([a, b, c]) is arctan2(a, c)",
    "power": "np.power.reduce([a, b, c]) of floats is a ** c",
    "ldexp": "its loop mixes a float and an integer operand",
}
"""Ufuncs whose NumPy ``reduce`` loop is not a left fold, with an example: the result follows the
operand's memory layout and SIMD blocking (a transposed or strided operand, a slice of its
columns, give other values), which only NumPy's own call on the operand the NumPy replay holds
reproduces. Backends that reduce per block or by a scan (dask, jax) refuse these by name
(:func:`refuse_not_a_fold`); the sweep of ``tests/test_ufunc_methods.py`` checks the list."""

_RULE_ERRORS = (ValueError, TypeError, OverflowError, IndexError, np.exceptions.AxisError)
_CACHE: dict = {}


def op_name(method: str) -> str:
    """The op recording ``ufunc.<method>`` (``"ufunc_reduce"``)."""
    return f"ufunc_{method}"


def refuse_not_a_fold(method: str, ufunc: str, backend: str) -> None:
    """Raise NotImplementedError naming ``np.<ufunc>.<method>`` on ``backend`` when NumPy's
    loop for it is not a left fold (:data:`NOT_A_FOLD`).

    Raises:
        NotImplementedError: ``method`` is ``"reduce"`` and ``ufunc`` is in :data:`NOT_A_FOLD`.
    """
    name = {"atan2": "arctan2", "pow": "power"}.get(ufunc, ufunc)
    if method != "reduce" or name not in NOT_A_FOLD:
        return
    raise NotImplementedError(
        f"np.{name}.reduce on the {backend} backend: NumPy's reduce loop for {name} is not a "
        f"left fold ({NOT_A_FOLD[name]}) and its result follows the operand's memory layout, "
        f"which the {backend} backend cannot reproduce; replay with backend='numpy'")


def _ufunc(params: dict) -> np.ufunc:
    """NumPy's ufunc named by the node's ``ufunc`` parameter (a TypeError when unknown)."""
    ufunc = UFUNCS.get(params.get("ufunc"))
    if ufunc is None:
        raise TypeError(f"{params.get('ufunc')!r} is not a NumPy ufunc capviz records")
    return ufunc


def _clipped(a: Any) -> Any:
    """A proxy of operand ``a``: its dtype, each axis of length ``min(n, 1)`` (a literal stays
    itself, as NumPy converts it)."""
    if not ops.is_tensor_meta(a):
        return a
    return np.zeros(tuple(min(n, 1) for n in a.shape), a.dtype)


def _probe(ufunc: np.ufunc, method: str, args: Sequence, params: dict) -> Any:
    """NumPy's method on the proxies: its result (dtype, small shape) or its error."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(ufunc, method)(*[_clipped(a) for a in args], **params)


def _exact(args: Sequence) -> bool:
    """Every tensor operand's proxy has the operand's shape (no axis longer than 1)."""
    return all(max(a.shape, default=0) <= 1 for a in args if ops.is_tensor_meta(a))


def rule_key(method: str, args: Sequence, params: dict) -> Any:
    """The rule's cache key (``None`` when a literal or parameter is unhashable)."""
    parts = tuple((tuple(a.shape), a.dtype) if ops.is_tensor_meta(a) else (type(a), a)
                  for a in args)
    key = (method, parts, tuple((k, type(v), v) for k, v in sorted(params.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _result_shape(method: str, args: Sequence, params: dict, probed: Any) -> tuple:
    if _exact(args):
        return tuple(np.shape(probed))
    if method == "outer":
        return tuple(ops.shape_of(args[0])) + tuple(ops.shape_of(args[1]))
    shape = tuple(args[0].shape)
    if method == "accumulate":
        return shape
    return reduced_shape(shape, params.get("axis", 0), params.get("keepdims", False))


def _meta(method: str) -> Callable:
    def meta(args: Sequence, params: dict) -> tuple:
        key = rule_key(method, args, params)
        hit = _CACHE.get(key) if key is not None else None
        if hit is not None:
            return hit
        call = {k: v for k, v in params.items() if k != "ufunc"}
        try:
            ufunc = _ufunc(params)
            probed = _probe(ufunc, method, args, call)
            result = (_result_shape(method, args, call, probed), np.asarray(probed).dtype)
        except _RULE_ERRORS as err:
            raise ops.rule_error(f"np.{params.get('ufunc')}.{method}", args, call, err) from None
        if key is not None:
            ops.remember(_CACHE, key, result, 20_000)
        return result

    return meta


def _impl(method: str) -> Callable:
    def impl(xp: Any) -> Callable:
        def run(*operands: Any, ufunc: str, **params: Any) -> Any:
            return getattr(getattr(xp, ufunc), method)(*operands, **params)

        run.__name__ = op_name(method)
        return run

    return impl


REDUCE = ops.register(ops.Op(op_name("reduce"), _impl("reduce"), _meta("reduce"),
                             params=("ufunc", "axis", "dtype", "keepdims", "initial"), out=True))
ACCUMULATE = ops.register(ops.Op(op_name("accumulate"), _impl("accumulate"), _meta("accumulate"),
                                 params=("ufunc", "axis", "dtype"), out=True))
OUTER = ops.register(ops.Op(op_name("outer"), _impl("outer"), _meta("outer"),
                            params=("ufunc",), nargs=(2, 2), out=True))
