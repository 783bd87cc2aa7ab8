"""NumPy's own result for an empty operand, where it depends on nothing but shapes and types
(``np.median`` of an empty axis: NaN, NumPy's dtype, ``Mean of empty slice``): NumPy computes it
at trace time on a zero-size array of the operand's shape and dtype, the compiled function
returns it as a constant, and NumPy's warnings are given after each run at the node's line
(:func:`capviz.backends.jax.trace.warn`). jax.numpy's ``median``/``nanmedian`` of an empty axis
fail inside its gather ("Slice size at index 1 in gather op is out of range"; the thorough
profile's ``np.median-96``, ``np.nanmedian-97``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax.trace import dtype_of, warn


def empty(a: Any) -> bool:
    """Whether ``a`` holds no element."""
    return math.prod(a.shape) == 0


def numpy_of_empty(jnp: Any, fn: Callable, a: Any, *args: Any, **params: Any) -> Any:
    """``fn(a, *args, **params)`` of NumPy for an empty ``a``, computed on a zero-size array of
    its shape and dtype (the values cannot matter: there are none), with NumPy's warnings
    given at each run; NumPy's own exception where it raises one."""
    dummy = np.zeros(tuple(a.shape), dtype_of(a))
    # NumPy's floating-point warnings as warnings here (a replay's error state calls capviz's
    # callback instead, capviz.replay.warnings), recorded and given at each run
    settings = {k: "warn" if v == "call" else v for k, v in np.geterr().items()}
    with warnings.catch_warnings(record=True) as caught, np.errstate(**settings):
        warnings.simplefilter("always")
        result = fn(dummy, *args, **params)
    for given in caught:
        warn(given.category, str(given.message))
    return jnp.asarray(result)


def _median(name: str) -> Callable[[Any], Callable]:
    """``np.median``/``np.nanmedian``: for an empty operand, NumPy's own
    (:func:`numpy_of_empty`); ``np.median`` along one axis or all of them in NumPy's steps
    (:func:`_numpy_median`); else jax.numpy's."""
    numpy_fn = getattr(np, name)

    def make(jnp: Any) -> Callable:
        fn = getattr(jnp, name)

        def run(a: Any, axis: Any = None, **params: Any) -> Any:
            a = jnp.asarray(a)
            if empty(a):
                return numpy_of_empty(jnp, numpy_fn, a, axis=axis, **params)
            keepdims = bool(params.get("keepdims", False))
            ours = dtype_of(a).kind in ("biuf" if name == "median" else "f")
            if ours and isinstance(axis, (tuple, list)) and len(a.shape):
                return _over_axes(jnp, run, a, axis, keepdims)
            if name == "median" and not isinstance(axis, (tuple, list)) \
                    and dtype_of(a).kind in "biuf":
                return _numpy_median(jnp, a, axis, keepdims)
            if name == "nanmedian" and not isinstance(axis, (tuple, list)) \
                    and dtype_of(a).kind == "f":
                return _numpy_nanmedian(jnp, a, axis, keepdims)
            return fn(a, axis=axis, **params)

        run.__name__ = name
        return run

    return make


def _over_axes(jnp: Any, run: Callable, a: Any, axis: Any, keepdims: bool) -> Any:
    """``median``/``nanmedian`` (``run``) over a tuple of axes as NumPy's ``_ureduce`` takes it:
    the axes kept first, the reduced ones merged into one last axis, reduced along it (of all
    the axes: a 1-d array, NumPy's whole-array way). jax.numpy's own interpolated between the
    middle values and overflowed: float16 ``np.nanmedian(x, axis=(0, 1))`` of values near
    65504 was inf where NumPy's is 6.55e4, silently (a NaN among the operands skipped the
    float16 check)."""
    ndim = len(a.shape)
    axes = sorted({int(k) % ndim for k in axis})
    keep = [k for k in range(ndim) if k not in axes]
    merged = jnp.transpose(a, keep + axes).reshape(tuple(a.shape[k] for k in keep) + (-1,))
    result = run(merged, axis=-1)
    if keepdims:
        result = result.reshape(tuple(1 if k in axes else a.shape[k] for k in range(ndim)))
    return result


def _numpy_median(jnp: Any, a: Any, axis: Any, keepdims: bool) -> Any:
    """NumPy's median (``numpy/lib/_function_base_impl.py``, ``_median``): the middle value,
    or the two middle values, of the sorted slice, and NumPy's ``mean`` of them: one value is
    itself in the result's type (float64 of integers), two are added in the mean's type
    (float32 for float16) and halved; NaN where the slice holds one. NumPy's sum starts from
    +0.0, so a zero sum is +0.0 (the median of ``[-0.0]`` or ``[-0.0, -0.0]`` is ``0.0``: the
    hostile review 5, finding 20). jax.numpy interpolates
    (``a + (b - a) * 0.5``-like), which overflows for one value near the type's largest
    (``np.median([[max]], axis=1)``: NumPy ``max``, jax.numpy ``inf``; the thorough profile's
    np.median-96 silent case)."""
    ndim = len(a.shape)
    values = a.reshape(-1) if axis is None else a
    at = 0 if axis is None else int(axis) % ndim
    ordered = jnp.sort(values, axis=at)
    n = ordered.shape[at]
    kind = dtype_of(a).kind
    out = dtype_of(a) if kind == "f" else np.dtype(np.float64)
    work = np.dtype(np.float32) if out == np.float16 else out
    high = jnp.take(ordered, n // 2, axis=at).astype(work)
    if n % 2:
        middle = _plus_zero(jnp, high)
    else:
        low = jnp.take(ordered, n // 2 - 1, axis=at).astype(work)
        middle = _plus_zero(jnp, low + high) / work.type(2)
    if kind == "f":  # NumPy's _median_nancheck: a NaN sorts last
        middle = jnp.where(jnp.isnan(jnp.take(ordered, n - 1, axis=at)),
                           jnp.asarray(np.nan, work), middle)
    middle = middle.astype(out)
    if keepdims:
        middle = middle.reshape((1,) * ndim) if axis is None else jnp.expand_dims(middle, at)
    return middle


def _plus_zero(jnp: Any, total: Any) -> Any:
    """``total``, a sum NumPy starts from +0.0, with a zero made +0.0 as NumPy's is (``0.0 +
    -0.0`` is ``+0.0``): a select, which XLA's simplifier leaves, where ``total + 0.0`` it
    folds to ``total``."""
    return jnp.where(total == 0, jnp.zeros_like(total), total)


def _numpy_nanmedian(jnp: Any, a: Any, axis: Any, keepdims: bool) -> Any:
    """NumPy's nanmedian of floats (``numpy/lib/_nanfunctions_impl.py``), in its two ways:

    - of a whole array, or along an axis of 600 values or more: each slice's values but its
      NaNs, and :func:`_numpy_median` of them (``_nanmedian1d``): the middle value, or the
      mean of the two, float16 added in float32;
    - along an axis of fewer values (``_nanmedian_small``): ``np.ma.median`` of the array with
      its NaNs masked, which adds the two middle values in the array's own type and halves
      the sum, and takes an odd count's middle value twice: ``max + max`` overflows to inf,
      for one middle value as for two (``np.nanmedian([[max]], axis=1)`` is inf, the
      whole array's ``max``; jax.numpy interpolates and gave ``max``).

    A zero sum is +0.0 (:func:`_plus_zero`); a slice of NaNs alone gives NaN (NumPy's
    warning is given by the check of :mod:`capviz.backends.jax.checks`)."""
    ndim = len(a.shape)
    whole = axis is None or ndim == 1
    values = a.reshape(-1) if axis is None else a
    at = 0 if axis is None else int(axis) % ndim
    ordered = jnp.sort(values, axis=at)  # NaNs last
    n = ordered.shape[at]
    count = jnp.sum(~jnp.isnan(values), axis=at, keepdims=True)
    high_at = count // 2
    low_at = jnp.where(count % 2 == 1, high_at, high_at - 1)
    dtype = dtype_of(a)
    work = np.dtype(np.float32) if dtype == np.float16 else dtype

    def middle(index: Any) -> Any:
        index = jnp.clip(index, 0, n - 1)
        return jnp.squeeze(jnp.take_along_axis(ordered, index, axis=at), at).astype(work)

    low, high = middle(low_at), middle(high_at)
    odd = jnp.squeeze(count % 2 == 1, at)
    if whole or n >= 600:  # np.median of the values
        total = jnp.where(odd, high, low + high)
        result = jnp.where(odd, _plus_zero(jnp, total),
                           _plus_zero(jnp, total) / work.type(2)).astype(dtype)
    else:  # np.ma.median: the sum in the array's type, halved there
        total = _plus_zero(jnp, (low + high).astype(dtype))
        result = total / dtype.type(2)
    result = jnp.where(jnp.squeeze(count, at) == 0, jnp.asarray(np.nan, dtype), result)
    if keepdims:
        result = result.reshape((1,) * ndim) if axis is None else jnp.expand_dims(result, at)
    return result


FORMS: dict[str, Callable[[Any], Callable]] = {name: _median(name)
                                               for name in ("median", "nanmedian")}
"""The forms of this module by op name, each written with NumPy's signature."""
