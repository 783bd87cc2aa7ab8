"""``np.insert`` of one index, NumPy's path written out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax.trace import cast, dtype_of


def _insert(jnp: Any) -> Callable:
    """np.insert with a static index: NumPy's path for one index written out (``values`` made
    ``ndmin=arr.ndim``, moved for a scalar index, assigned to the slice it fills, which drops
    leading axes of length 1 as an assignment does); jax.numpy broadcasts ``values`` to fewer
    dimensions and fails. Several indices go to jax.numpy's insert."""

    def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
        arr = jnp.asarray(arr)
        if axis is None:
            arr, axis = arr.ravel(), 0
        ndim = len(arr.shape)
        axis %= ndim
        n = arr.shape[axis]
        if isinstance(obj, slice):
            indices = np.arange(*obj.indices(n))
        else:
            indices = np.array(obj)
            if indices.dtype == bool:
                indices = np.flatnonzero(indices)
        if indices.size != 1:
            return jnp.insert(arr, indices, values, axis=axis)
        index = int(indices.item())
        index += n if index < 0 else 0  # in bounds: the capture checked it as NumPy does
        if _is_literal(values):  # NumPy's conversion: its TypeError/ValueError/OverflowError
            values = np.array(values, ndmin=ndim, dtype=dtype_of(arr))
        values = cast(jnp, values, dtype_of(arr))
        values = values.reshape((1,) * (ndim - len(values.shape)) + tuple(values.shape))
        if indices.ndim == 0:
            values = jnp.moveaxis(values, 0, axis)
        target = list(arr.shape)
        target[axis] = values.shape[axis]
        while len(values.shape) > ndim and values.shape[0] == 1:
            values = values[0]
        values = jnp.broadcast_to(values, tuple(target))
        before = [slice(None)] * ndim
        after = [slice(None)] * ndim
        before[axis], after[axis] = slice(None, index), slice(index, None)
        return jnp.concatenate([arr[tuple(before)], values, arr[tuple(after)]], axis=axis)

    return insert


def _is_literal(value: Any) -> bool:
    """Whether ``value`` is a value of the user's code rather than a traced operand."""
    return isinstance(value, (bool, int, float, complex, list, tuple, np.generic, np.ndarray))


FORMS: dict[str, Callable[[Any], Callable]] = {"insert": _insert}
"""The forms of this module by op name, each written with NumPy's signature."""
