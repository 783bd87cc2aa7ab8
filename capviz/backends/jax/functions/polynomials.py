"""Sums of products NumPy computes in the operands' own type: ``np.convolve`` (and the
core of ``np.polymul``) with integers wrapping as NumPy's, booleans as ``or`` of ``and``s, float
and complex sums of products checked against cancellation, as ``np.correlate``'s; ``np.kron``
and ``np.polyadd`` of booleans.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax import unfused
from capviz.backends.jax.cancellation import sums_of_products
from capviz.backends.jax.trace import dtype_of

_BOOL_AS = np.dtype(np.uint8)
"""The type booleans are computed in where jax.numpy takes no booleans (``kron``, ``polyadd``,
``convolve``): 0 and 1, and a nonzero result is NumPy's ``True``."""


def _as_bool(result: Any) -> Any:
    return result != 0


def _booleans_as_integers(name: str, one_d: bool) -> Callable[[Any], Callable]:
    """np.kron (``one_d=False``) or np.polyadd (0-d operands as 1-d, ``atleast_1d``): of
    booleans NumPy's ``multiply`` is ``and`` and its ``add`` is ``or``, which XLA's product and
    sum refuse: computed on integers, nonzero is true."""

    def make(jnp: Any) -> Callable:
        fn = getattr(jnp, name)
        prepare = jnp.atleast_1d if one_d else jnp.asarray

        def run(a: Any, b: Any) -> Any:
            a, b = prepare(a), prepare(b)
            if dtype_of(a) == np.bool_ and dtype_of(b) == np.bool_:
                return _as_bool(fn(a.astype(_BOOL_AS), b.astype(_BOOL_AS)))
            return fn(a, b)

        run.__name__ = name
        return run

    return make


def convolve_as_numpy(jnp: Any, a: Any, v: Any, mode: str = "full") -> Any:
    """np.convolve: 0-d operands as 1-d (NumPy's ``array(a, ndmin=1)``); integers in their own
    type, wrapping as NumPy's sums of products do (jax.numpy's convolve computes them in
    floats); booleans as NumPy's sum of products of booleans (``or`` of ``and``s); float and
    complex sums of products checked (:func:`capviz.backends.jax.cancellation.
    sums_of_products`)."""
    a, v = jnp.atleast_1d(a), jnp.atleast_1d(v)
    kinds = dtype_of(a).kind + dtype_of(v).kind
    if kinds == "bb":
        return _as_bool(_integer_convolve(jnp, a.astype(np.int64), v.astype(np.int64), mode))
    if set(kinds) <= set("biu"):
        dtype = np.result_type(dtype_of(a), dtype_of(v))
        return _integer_convolve(jnp, a.astype(dtype), v.astype(dtype), mode)
    if min(a.shape[0], v.shape[0]) == 1:
        long, one = (a, v) if a.shape[0] >= v.shape[0] else (v, a)
        return one_term(jnp, long, one)
    result = jnp.convolve(a, v, mode=mode)
    if a.shape[0] and v.shape[0]:
        sums_of_products(jnp, result, a, v, lambda x, y: jnp.convolve(x, y, mode=mode),
                         min(a.shape[0], v.shape[0]))
    return result


def one_term(jnp: Any, long: Any, one: Any) -> Any:
    """A float or complex convolution or correlation whose shorter operand ``one`` holds one
    value: each element of the result (in every mode: as long as ``long``) a sum of one
    product, which NumPy's ``dot`` adds to +0.0 (``0.0 + -0.0`` is ``+0.0``: ``np.convolve([-0.0,
    1.0], [1.0])`` is ``[0.0, 1.0]``), where XLA simplifies the convolution to the product
    and keeps ``-0.0`` (the hostile review 5, finding 14). The product is rounded before the
    zero is read (:func:`capviz.backends.jax.unfused.in_trace`), and each part of a complex
    one is made +0.0 apart."""
    dtype = np.result_type(dtype_of(long), dtype_of(one))
    product = unfused.in_trace(long.astype(dtype) * one.astype(dtype)[0])
    if dtype.kind == "c":
        real, imag = jnp.real(product), jnp.imag(product)
        return _complex(_plus_zero(jnp, real), _plus_zero(jnp, imag))
    return _plus_zero(jnp, product)


def _plus_zero(jnp: Any, total: Any) -> Any:
    """``total`` with a zero made +0.0, as NumPy's sum from +0.0 makes it (a select, which
    XLA's simplifier leaves, where ``total + 0.0`` it folds to ``total``)."""
    return jnp.where(total == 0, jnp.zeros_like(total), total)


def _complex(real: Any, imag: Any) -> Any:
    from jax import lax

    return lax.complex(real, imag)


def _integer_convolve(jnp: Any, a: Any, v: Any, mode: str) -> Any:
    """The convolution of two 1-d integer arrays of one dtype: the longer operand times each
    value of the shorter added into its place, in a loop (memory linear in ``m + n``, not the
    ``m * n`` of all products at once; wrapping sums are exact in any order), then NumPy's
    slice of the full result for ``mode``."""
    from jax import lax

    m, n = a.shape[0], v.shape[0]
    short, long = min(m, n), max(m, n)
    if m < n:  # a convolution commutes
        a, v = v, a

    def add(k: Any, full: Any) -> Any:
        part = lax.dynamic_slice(full, (k,), (long,))
        return lax.dynamic_update_slice(full, part + a * v[k], (k,))

    full = lax.fori_loop(0, short, add, jnp.zeros(m + n - 1, a.dtype))
    if mode == "valid":
        return full[short - 1:long]
    if mode == "same":
        start = (short - 1) // 2
        return full[start:start + long]
    return full


def _correlate(jnp: Any) -> Callable:
    """np.correlate: jax.numpy's, its float and complex sums of products checked as a
    convolution's (:func:`capviz.backends.jax.cancellation.sums_of_products`: 4,000 float64
    terms of 1e16 cancelling to -256 gave -128)."""

    def correlate(a: Any, v: Any, mode: str = "valid") -> Any:
        a, v = jnp.asarray(a), jnp.asarray(v)
        if len(a.shape) == len(v.shape) == 1 and min(a.shape[0], v.shape[0]) == 1 \
                and np.result_type(dtype_of(a), dtype_of(v)).kind in "fc":
            if v.shape[0] == 1:  # NumPy's correlate2: a * conj(v), or reversed
                return one_term(jnp, a, jnp.conj(v))
            return one_term(jnp, jnp.conj(v), a)[::-1]
        result = jnp.correlate(a, v, mode=mode)
        if len(a.shape) == len(v.shape) == 1 and a.shape[0] and v.shape[0]:
            sums_of_products(jnp, result, a, v, lambda x, y: jnp.correlate(x, y, mode=mode),
                             min(a.shape[0], v.shape[0]), "correlation (np.correlate)")
        return result

    return correlate


def _convolve(jnp: Any) -> Callable:
    def convolve(a: Any, v: Any, mode: str = "full") -> Any:
        return convolve_as_numpy(jnp, a, v, mode)

    return convolve


FORMS: dict[str, Callable[[Any], Callable]] = {
    "kron": _booleans_as_integers("kron", one_d=False),
    "polyadd": _booleans_as_integers("polyadd", one_d=True),
    "polysub": _booleans_as_integers("polysub", one_d=True),  # 0-d operands (jnp: IndexError)
    "convolve": _convolve,
    "correlate": _correlate,
}
"""The forms of this module by op name, each written with NumPy's signature."""
