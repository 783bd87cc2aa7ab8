"""Products that contract (:data:`PRODUCTS`: ``matmul``, ``einsum``, ``outer``...): their
part products and partial sums are made inside the op. A complex operand counts by the smallest
nonzero magnitude of its real and imaginary parts (each part of a complex product's sum is a
sum of products of parts)."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from capviz.backends.jax.subnormals.operands import operand_magnitudes, rerun, smallest
from capviz.backends.jax.trace import dtype_of, poisoned, require, require_batched
from capviz.ops import traits

PRODUCTS = frozenset((*traits.CONTRACT, "inner", "outer", "linalg.outer", "kron", "vecdot",
                      "linalg.vecdot", "matvec", "vecmat", "linalg.multi_dot",
                      "linalg.tensordot", "convolve", "correlate", "cross", "linalg.cross"))
"""Products whose inner products and partial sums XLA may flush."""

_PRODUCT = ("an operand of {op} holds values so small that their products may be subnormal "
            "(below {tiny:.3g}), which XLA flushes to zero where NumPy keeps them; replay with "
            "backend='numpy', or scale the operands up")


def products(jnp: Any, name: str, fn: Any, args: tuple, operands: list, r: Any,
              params: dict) -> Any:
    dtype = dtype_of(r)
    info = np.finfo(dtype)
    bound = math.log2(float(info.tiny)) + info.nmant + 1
    floats = [a for a in operands if dtype_of(a).kind in "fc"]  # complex: by their parts
    if not floats:
        return r
    computed = [a for a in floats if operand_magnitudes(a) is None]
    real = all(dtype_of(a).kind == "f" for a in floats)
    if len(computed) == 1 and len(floats) > 1 and real:
        x = computed[0]
        checked = _product_with_constants(jnp, floats, x, bound,
                                          _PRODUCT.format(op=name, tiny=float(info.tiny)))
        return rerun(fn, args, params, r, {id(x): checked})
    if name == "matmul" and len(floats) == 2:
        a, b = floats
        a = a[None, :] if a.ndim == 1 else a
        b = b[:, None] if b.ndim == 1 else b
        if len(computed) == 2 and real and a.ndim == b.ndim == 2:
            # each head's q @ k.T and p @ v: tested with every other of their shapes at once
            kind = ("matmul", tuple(a.shape), tuple(b.shape), dtype_of(a), dtype_of(b), bound)
            require_batched(kind, (a, b), partial(_matmul_ok, jnp, bound),
                            _PRODUCT.format(op=name, tiny=float(info.tiny)))
            return r
        # per contracted index k: min_i |a[..., i, k]| * min_j |b[..., k, j]|
        low = jnp.log2(smallest(jnp, a, axis=-2)) + jnp.log2(smallest(jnp, b, axis=-1))
        ok = jnp.all(low >= bound)
    else:
        logs = [jnp.log2(smallest(jnp, a)) for a in floats]
        if len(logs) > 2:  # a partial product of any of them may come first: count each < 1
            logs = [jnp.minimum(v, 0.0) for v in logs]
        ok = sum(logs) >= bound
    require(ok, _PRODUCT.format(op=name, tiny=float(info.tiny)))
    return r


def _matmul_ok(jnp: Any, bound: float, a: Any, b: Any) -> Any:
    """Per product ``a[n] @ b[n]`` of matrices (``n`` the leading axis): whether no product of
    its terms may be subnormal, as :func:`products` tests one: per contracted index k,
    ``min_i |a[n, i, k]| * min_j |b[n, k, j]|`` reaches ``2 ** bound`` (in logarithms)."""
    low = jnp.log2(smallest(jnp, a, axis=-2)) + jnp.log2(smallest(jnp, b, axis=-1))
    return jnp.all(low >= bound, axis=1)


def _product_with_constants(jnp: Any, floats: list, x: Any, bound: float, message: str) -> Any:
    """The test of :func:`products` where every operand but ``x`` is known (a model's weights:
    their smallest magnitude is measured once on the host): the sum of the logarithms of the
    smallest magnitudes reaches ``bound`` exactly where every nonzero finite ``|x|`` reaches a
    threshold, an elementwise mask (``x`` poisoned where it fails, in the fast trace), where the
    smallest magnitude of ``x`` along an axis would be a reduction and a flag per product.
    Returns ``x`` as checked."""
    logs = []
    for a in floats:
        if a is x:
            continue
        low = operand_magnitudes(a)[0]
        if low == np.inf:
            return x  # an operand of zeros (or infinities): a product of 0, NaN or inf
        logs.append(math.log2(low) if low > 0 else -np.inf)
    if len(floats) > 2:  # as in products: each magnitude below 1 counts
        logs = [min(v, 0.0) for v in logs]
    need = bound - sum(logs)  # log2 of the smallest |x| that passes
    if len(floats) > 2 and need > 0:
        need = np.inf  # x's clamped logarithm is at most 0: only zeros pass
    dtype = dtype_of(x)
    threshold = np.asarray(2.0 ** need if need < 1024 else np.inf).astype(dtype)
    if float(threshold) < 2.0 ** need:  # rounded down to x's type: round up, not to miss one
        threshold = np.nextafter(threshold, dtype.type(np.inf))
    if float(threshold) <= float(np.finfo(dtype).tiny):
        return x  # XLA's nonzero values are at least tiny (a flushed one is its producer's)
    return poisoned(x, ~(jnp.abs(x) < threshold) | (x == 0), message, operand=True)

