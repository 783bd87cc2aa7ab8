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
    """``np.median``/``np.nanmedian``: jax.numpy's, but for an empty operand, NumPy's own
    (:func:`numpy_of_empty`)."""
    numpy_fn = getattr(np, name)

    def make(jnp: Any) -> Callable:
        fn = getattr(jnp, name)

        def run(a: Any, axis: Any = None, **params: Any) -> Any:
            a = jnp.asarray(a)
            if empty(a):
                return numpy_of_empty(jnp, numpy_fn, a, axis=axis, **params)
            return fn(a, axis=axis, **params)

        run.__name__ = name
        return run

    return make


FORMS: dict[str, Callable[[Any], Callable]] = {name: _median(name)
                                               for name in ("median", "nanmedian")}
"""The forms of this module by op name, each written with NumPy's signature."""
