"""``floor_divide``, ``remainder`` and ``divmod`` on jax.numpy as NumPy computes them (issue 25,
the thorough differential profile's sign-of-zero rows with jax 0.10.2, stop 41).

NumPy's float loop (``npy_divmod``) gives a zero quotient the sign of ``a / b`` and a zero
remainder the sign of ``b``; jax.numpy's gives them others (float32 ``np.divmod(-0.0, 2.0)``:
NumPy ``(-0.0, 0.0)``, jax ``(0.0, -0.0)``; ``np.remainder(-6.0, 3.0)``: NumPy ``0.0``, jax
``-0.0``), which a later division or ``np.signbit`` shows. An integer divided by 0 gives 0 in
NumPy (with a warning), which XLA defines otherwise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from capviz.backends.jax.trace import dtype_of


def _integer(value: Any) -> bool:
    kind = dtype_of(value)
    return kind.kind in "biu"


def _by_nonzero(jnp: Any, fn: Callable, a: Any, b: Any) -> Any:
    """``fn(a, b)`` of integers, 0 where ``b`` is 0 (NumPy's)."""
    zero = jnp.asarray(b) == 0
    result = fn(a, jnp.where(zero, jnp.ones_like(b), b))
    return jnp.where(zero, jnp.zeros_like(result), result)


def _floor_divide(jnp: Any) -> Callable:
    def floor_divide(a: Any, b: Any) -> Any:
        if _integer(a) and _integer(b):
            return _by_nonzero(jnp, jnp.floor_divide, a, b)
        result = jnp.floor_divide(a, b)
        if dtype_of(result).kind != "f":
            return result
        # a zero quotient takes the sign of a / b (npy_divmod's copysign(0, a / b))
        sign = jnp.true_divide(a, b).astype(dtype_of(result))
        return jnp.where(result == 0, jnp.copysign(jnp.zeros_like(result), sign), result)

    return floor_divide


def _remainder(jnp: Any) -> Callable:
    def remainder(a: Any, b: Any) -> Any:
        if _integer(a) and _integer(b):
            return _by_nonzero(jnp, jnp.remainder, a, b)
        result = jnp.remainder(a, b)
        if dtype_of(result).kind != "f":
            return result
        # a zero remainder takes the sign of b (npy_divmod's copysign(0, b))
        sign = jnp.asarray(b).astype(dtype_of(result))
        return jnp.where(result == 0, jnp.copysign(jnp.zeros_like(result), sign), result)

    return remainder


def _divmod(jnp: Any) -> Callable:
    floor_divide, remainder = _floor_divide(jnp), _remainder(jnp)

    def divmod_(a: Any, b: Any) -> tuple:
        return floor_divide(a, b), remainder(a, b)

    return divmod_


FORMS: dict[str, Callable[[Any], Callable]] = {
    "floor_divide": _floor_divide, "remainder": _remainder, "divmod": _divmod}
"""The forms of this module by op name."""


