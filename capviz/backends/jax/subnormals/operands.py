"""What the subnormal checks know of an op's operands: the values of literals and small
constants, the magnitudes of constants (measured once on the host) and of traced values, and
the op run again on operands the fast program poisoned."""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.backends.jax.trace import known_magnitudes

FLUSHED = frozenset((np.dtype(np.float32), np.dtype(np.float64)))
"""The float types XLA flushes (float16 is computed in float32: its subnormals are kept)."""


def rerun(fn: Any, args: tuple, params: dict, result: Any, replaced: dict[int, Any]) -> Any:
    """``result``, or, where the fast trace poisoned operands (``replaced``: the poisoned
    value by the id of the operand it replaces), ``fn`` run again on them: the first run's
    result is then unused, and XLA drops it."""
    if all(replaced.get(id(a), a) is a for a in args):
        return result
    return fn(*[replaced.get(id(a), a) for a in args], **params)



def known_values(value: Any) -> np.ndarray | None:
    """The values of an operand known when the program is traced (a literal, a small
    constant), as an array; ``None`` for a traced value."""
    if isinstance(value, (int, float, np.generic, np.ndarray)):
        return np.asarray(value)
    return None


def operand_magnitudes(value: Any) -> tuple[float, float] | None:
    """The smallest nonzero and the largest finite magnitude of an operand known when the
    program is traced: a literal, a small constant baked into the program, or a large constant
    argument measured once on the host (:func:`known_magnitudes`); ``None`` for a value the
    program computes."""
    known = known_values(value)
    if known is None:
        return known_magnitudes(value)
    if known.dtype.kind not in "biuf":
        return None
    return magnitudes(known)



def magnitudes(a: np.ndarray) -> tuple[float, float]:
    """The smallest nonzero finite magnitude of a host array (inf when there is none) and its
    largest finite magnitude (0 when there is none)."""
    magnitude = np.abs(np.asarray(a))
    if magnitude.dtype.kind != "f":
        magnitude = magnitude.astype(np.float64)
    finite = np.isfinite(magnitude)
    high = float(np.max(magnitude, where=finite, initial=0.0))
    low = float(np.min(magnitude, where=finite & (magnitude != 0), initial=np.inf))
    return low, high


def smallest(jnp: Any, a: Any, axis: Any = None) -> Any:
    """The smallest nonzero finite magnitude of ``a`` (along ``axis``; of a complex ``a``, of its
    real and imaginary parts), as float64; inf when there is none. A constant's is measured
    once on the host (:func:`known_magnitudes`): the smallest of the whole array, which bounds
    that of any axis."""
    if np.dtype(a.dtype).kind == "c":  # a complex value's parts (its terms in products)
        return jnp.minimum(smallest(jnp, jnp.real(a), axis), smallest(jnp, jnp.imag(a), axis))
    known = known_magnitudes(a)
    if known is not None:
        return np.float64(known[0])
    magnitude = jnp.abs(a)
    ignored = (magnitude == 0) | ~jnp.isfinite(magnitude)
    low = jnp.min(jnp.where(ignored, np.inf, magnitude), axis=axis, initial=np.inf)
    return low.astype(np.float64)  # the smallest values only: a float64 copy costs a pass

