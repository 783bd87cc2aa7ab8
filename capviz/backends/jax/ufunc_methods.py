"""The JAX forms of ``np.<ufunc>.reduce``, ``.accumulate`` and ``.outer`` (the ops of
:mod:`capviz.ops.ufunc_methods`), registered in :data:`capviz.backends.jax.ops.OVERRIDES`.

* ``outer``: the ufunc's own JAX form (:func:`capviz.backends.jax.ops.functional`: NumPy's loop
  dtypes, NumPy's integer division by zero...) on ``a`` reshaped to broadcast against ``b``,
  which is what NumPy's ``outer`` computes, element by element.
* ``reduce`` and ``accumulate``: the operand cast to NumPy's result dtype (NumPy's reduction
  loop runs in it: ``np.add.reduce`` of bool adds int64s, ``np.logical_or.reduce`` of floats
  reads them as bools), then jax.numpy's own reduction or scan for the associative ufuncs
  (add, multiply, maximum, minimum, the logical and bitwise ones; float sums within the
  backend's tolerance), and for every other ufunc a left fold along the axis with
  ``jax.lax.scan`` of the ufunc's JAX form, NumPy's order (``a0 - a1 - a2 ...``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.jax.ops import OVERRIDES, cast, functional
from capviz.backends.jax.trace import refusal
from capviz.ops.ufunc_methods import refuse_not_a_fold

ASSOCIATIVE = frozenset(("add", "multiply", "maximum", "minimum", "logical_and", "logical_or",
                         "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"))
"""Ufuncs whose jax.numpy ``reduce`` and ``accumulate`` are used as they are."""

_ABSENT = object()


def _refuse(method: str, ufunc: str, dtype: np.dtype) -> None:
    """Raise for a method JAX cannot run as NumPy does (named, with the reason): a reduce
    that is not a left fold (:data:`capviz.ops.ufunc_methods.NOT_A_FOLD`), an integer or
    complex power."""
    try:
        refuse_not_a_fold(method, ufunc, "jax")
    except NotImplementedError as err:  # decided on the ufunc: refused while tracing
        raise refusal(str(err)) from None
    name = {"atan2": "arctan2", "pow": "power"}.get(ufunc, ufunc)
    reason = None
    if name == "power" and dtype.kind in "iubc":
        reason = ("an integer power checks every exponent's sign (NumPy raises on a negative "
                  "one), which a jax scan cannot report; a complex power's infinities and "
                  "NaNs are XLA's, not NumPy's")
    if reason is not None:
        raise refusal(f"np.{ufunc}.{method}: {reason}; replay with backend='numpy'")


def _elementwise(jnp: Any, ufunc: str) -> Callable:
    # no value checks inside a scan (they are the method's node's, on its operand and result)
    return functional(ops.OPS[ufunc], jnp, checks=False)


def _cast(jnp: Any, value: Any, dtype: np.dtype) -> Any:
    return cast(jnp, value, dtype)


def _result_dtype(name: str, operand: Any, params: dict) -> np.dtype:
    _, dtype = ops.OPS[name].meta([operand], params)
    return np.dtype(dtype)


def _axes(axis: Any, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    return ops.normalize_axis(axis, ndim) or ()


def _identity(ufunc: str, dtype: np.dtype) -> np.ndarray:
    """NumPy's result of reducing an empty axis: the ufunc's identity in ``dtype``."""
    return np.asarray(getattr(np, ufunc).identity).astype(dtype)


def _fold(jnp: Any, ufunc: str, x: Any, start: Any) -> Any:
    """``ufunc(...ufunc(ufunc(start, x[0]), x[1])..., x[-1])`` (a left fold over axis 0)."""
    import jax

    f = _elementwise(jnp, ufunc)
    dtype = x.dtype

    def step(carry: Any, item: Any) -> tuple:
        return f(carry, item).astype(dtype), None

    result, _ = jax.lax.scan(step, start, x)
    return result


def _reduce(jnp: Any) -> Callable:
    def ufunc_reduce(a: Any, *, ufunc: str, axis: Any = 0, dtype: Any = None,
                     keepdims: bool = False, initial: Any = _ABSENT) -> Any:
        params = {"ufunc": ufunc, "axis": axis, "dtype": dtype, "keepdims": keepdims}
        if initial is not _ABSENT:
            params["initial"] = initial
        dt = _result_dtype("ufunc_reduce", a, params)
        _refuse("reduce", ufunc, dt)
        x = _cast(jnp, a, dt) if np.dtype(a.dtype) != dt else jnp.asarray(a)
        axes = _axes(axis, x.ndim) if x.ndim else ()
        kept = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        moved = jnp.moveaxis(x, axes, tuple(range(len(axes)))) if axes else x[None]
        n = math.prod(x.shape[i] for i in axes) if axes else 1
        flat = moved.reshape((n, *kept))
        if initial is _ABSENT and getattr(np, ufunc).identity is not None:
            initial = _identity(ufunc, dt)  # NumPy's default initial (add.reduce(-0.0) is 0.0)
        # initial=None is NumPy's "no initial value" (not even the identity): a plain fold
        no_start = initial is _ABSENT or initial is None
        start = None if no_start else jnp.full(kept, np.asarray(initial).astype(dt))
        if flat.shape[0] == 0:
            result = start
        elif ufunc in ASSOCIATIVE:
            result = getattr(jnp, ufunc).reduce(flat, axis=0).astype(dt)
            if start is not None:
                result = _elementwise(jnp, ufunc)(start, result).astype(dt)
        elif start is not None:
            result = _fold(jnp, ufunc, flat, start)
        else:
            result = _fold(jnp, ufunc, flat[1:], flat[0])
        if keepdims:
            result = result.reshape(tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
        return result.astype(dt)

    return ufunc_reduce


def _accumulate(jnp: Any) -> Callable:
    def ufunc_accumulate(a: Any, *, ufunc: str, axis: Any = 0, dtype: Any = None) -> Any:
        import jax

        params = {"ufunc": ufunc, "axis": axis, "dtype": dtype}
        dt = _result_dtype("ufunc_accumulate", a, params)
        _refuse("accumulate", ufunc, dt)
        x = _cast(jnp, a, dt) if np.dtype(a.dtype) != dt else jnp.asarray(a)
        if x.shape[axis] == 0:
            return x
        if ufunc in ASSOCIATIVE:
            return getattr(jnp, ufunc).accumulate(x, axis=axis).astype(dt)
        f = _elementwise(jnp, ufunc)
        moved = jnp.moveaxis(x, axis, 0)

        def step(carry: Any, item: Any) -> tuple:
            value = f(carry, item).astype(dt)
            return value, value

        _, rest = jax.lax.scan(step, moved[0], moved[1:])
        return jnp.moveaxis(jnp.concatenate([moved[:1], rest]), 0, axis)

    return ufunc_accumulate


def _outer(jnp: Any) -> Callable:
    def ufunc_outer(a: Any, b: Any, *, ufunc: str) -> Any:
        a_shape, b_ndim = np.shape(a), np.ndim(b)
        a = jnp.asarray(a).reshape(tuple(a_shape) + (1,) * b_ndim) if b_ndim else a
        return _elementwise(jnp, ufunc)(a, b)

    return ufunc_outer


FORMS: dict[str, Callable[[Any], Callable]] = {
    "ufunc_reduce": _reduce,
    "ufunc_accumulate": _accumulate,
    "ufunc_outer": _outer,
}
"""The JAX form of each op, added to :data:`capviz.backends.jax.ops.OVERRIDES` on import."""

OVERRIDES.update(FORMS)
