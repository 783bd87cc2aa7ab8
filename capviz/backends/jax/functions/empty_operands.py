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
            if name == "median" and not isinstance(axis, (tuple, list)) \
                    and dtype_of(a).kind in "biuf":
                return _numpy_median(jnp, a, axis, bool(params.get("keepdims", False)))
            return fn(a, axis=axis, **params)

        run.__name__ = name
        return run

    return make


def _numpy_median(jnp: Any, a: Any, axis: Any, keepdims: bool) -> Any:
    """NumPy's median (``numpy/lib/_function_base_impl.py``, ``_median``): the middle value,
    or the two middle values, of the sorted slice, and NumPy's ``mean`` of them: one value is
    itself in the result's type (float64 of integers), two are added in the mean's type
    (float32 for float16) and halved; NaN where the slice holds one. jax.numpy interpolates
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
        middle = high
    else:
        low = jnp.take(ordered, n // 2 - 1, axis=at).astype(work)
        middle = (low + high) / work.type(2)
    if kind == "f":  # NumPy's _median_nancheck: a NaN sorts last
        middle = jnp.where(jnp.isnan(jnp.take(ordered, n - 1, axis=at)),
                           jnp.asarray(np.nan, work), middle)
    middle = middle.astype(out)
    if keepdims:
        middle = middle.reshape((1,) * ndim) if axis is None else jnp.expand_dims(middle, at)
    return middle


FORMS: dict[str, Callable[[Any], Callable]] = {name: _median(name)
                                               for name in ("median", "nanmedian")}
"""The forms of this module by op name, each written with NumPy's signature."""
