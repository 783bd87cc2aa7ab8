"""The JAX forms of the update ops: every write of a captured program (``x[i] = v``, ``put``,
``np.add.at``, a function's ``out=``...) becomes "assign values at flat positions, the last one
wins", deterministic where a scatter of duplicates is not. Importing this module adds them to
:data:`capviz.backends.jax.ops.OVERRIDES`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.jax.ops import (
    OVERRIDES,
    UNSUPPORTED,
    advanced_key,
    cast,
    functional,
    in_bounds,
)
from capviz.backends.jax.trace import dtype_of, loop_key, refusal


def _assign_flat(jnp: Any, x: Any, positions: Any, values: Any) -> Any:
    """``x`` with ``x.flat[positions[k]] = values[k]`` in order (a later write wins, as in
    NumPy's assignment loops); deterministic, where a scatter of duplicates is not."""
    flat = x.reshape(-1)
    m = positions.shape[0]
    if m == 0:
        return x
    order = jnp.arange(m)
    winner = jnp.full(flat.shape, -1, order.dtype).at[positions].max(order)
    written = values[jnp.maximum(winner, 0)]
    return jnp.where(winner >= 0, written, flat).reshape(x.shape)


def _positions(jnp: Any, shape: tuple) -> Any:
    return jnp.arange(math.prod(shape)).reshape(shape)


def _setitem(jnp: Any) -> Callable:
    def setitem(x: Any, value: Any, index: tuple) -> Any:
        index = tuple(np.asarray(k) if isinstance(k, list) else k for k in index)
        value = cast(jnp, value, x.dtype)
        if all(k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in index):
            return x.at[index].set(value)  # a basic index selects each element once
        target = _positions(jnp, x.shape)[index]  # an array in the index may repeat one
        values = jnp.broadcast_to(value, target.shape)
        return _assign_flat(jnp, x, target.reshape(-1), values.reshape(-1))

    return setitem


def _index_put(jnp: Any) -> Callable:
    def index_put(x: Any, idx: Any, value: Any) -> Any:
        value = cast(jnp, value, x.dtype)
        if np.dtype(idx.dtype) == np.bool_:  # value fits one row: where the mask is set
            mask = idx.reshape(idx.shape + (1,) * (len(x.shape) - len(idx.shape)))
            row = jnp.broadcast_to(value, (1, *x.shape[len(idx.shape):]))
            return jnp.where(mask, row.reshape(row.shape[1:]), x)
        rows = in_bounds(jnp, idx, x.shape[0], "an index").reshape(-1)
        inner = math.prod(x.shape[1:])
        target = (*idx.shape, *x.shape[1:])
        positions = (rows[:, None] * inner + jnp.arange(inner)[None, :]).reshape(-1)
        return _assign_flat(jnp, x, positions, jnp.broadcast_to(value, target).reshape(-1))

    return index_put


def _advanced_index_put(jnp: Any) -> Callable:
    def advanced_index_put(x: Any, value: Any, *idx: Any, index: tuple, tensors: tuple) -> Any:
        value = cast(jnp, value, x.dtype)
        target = _positions(jnp, x.shape)[advanced_key(jnp, x.shape, idx, index, tensors)]
        while len(value.shape) > len(target.shape) and value.shape[0] == 1:
            value = value[0]  # NumPy drops a value's leading length-1 axes
        values = jnp.broadcast_to(value, target.shape)
        return _assign_flat(jnp, x, target.reshape(-1), values.reshape(-1))

    return advanced_index_put


def _put(jnp: Any) -> Callable:
    def put(x: Any, ind: Any, v: Any, mode: str = "raise") -> Any:
        n = math.prod(x.shape)
        ind = jnp.asarray(ind).reshape(-1)
        if n == 0 and ind.shape[0]:  # NumPy's error whatever the mode
            raise IndexError("cannot replace elements of an empty array")
        if mode == "wrap":
            ind = jnp.remainder(ind, n)
        elif mode == "clip":
            ind = jnp.clip(ind, 0, n - 1)
        else:
            ind = in_bounds(jnp, ind, n, "an index of put")
        values = cast(jnp, v, x.dtype).reshape(-1)
        if values.shape[0] == 0 or ind.shape[0] == 0:
            return x
        values = values[jnp.arange(ind.shape[0]) % values.shape[0]]  # v repeats, as np.put
        return _assign_flat(jnp, x, ind, values)

    return put


def _put_along_axis(jnp: Any) -> Callable:
    def put_along_axis(x: Any, indices: Any, values: Any, axis: int) -> Any:
        axis %= len(x.shape)
        fancy = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
        shape = tuple(np.broadcast_shapes(fancy, tuple(indices.shape)))
        along = jnp.broadcast_to(in_bounds(jnp, indices, x.shape[axis], "an index of "
                                            "put_along_axis"), shape)
        grid = list(jnp.indices(shape, sparse=True))
        grid[axis] = along
        positions = jnp.ravel_multi_index(tuple(jnp.broadcast_to(g, shape) for g in grid),
                                          x.shape, mode="clip").reshape(-1)
        written = jnp.broadcast_to(cast(jnp, values, x.dtype), shape).reshape(-1)
        return _assign_flat(jnp, x, positions, written)

    return put_along_axis


def _cycled(jnp: Any, values: Any, dtype: Any, n: int) -> Any:
    """``n`` values from ``values`` repeated in flat order, as a flat assignment repeats a
    shorter value (``a.flat[...] = v``, ``np.putmask``), cast to ``dtype``; ``None`` for an
    empty ``values``, with which NumPy writes nothing (``np.putmask(x, m, [])``)."""
    flat = cast(jnp, values, dtype).reshape(-1)
    if flat.shape[0] == 0:
        return None
    return flat[np.arange(n) % flat.shape[0]]


def _fill_diagonal(jnp: Any) -> Callable:
    def fill_diagonal(x: Any, val: Any, wrap: bool = False) -> Any:
        shape = x.shape  # NumPy's own positions: a.flat[:end:step] = val
        if len(shape) == 2:
            step = shape[1] + 1
            end = None if wrap else shape[1] * shape[1]
        else:
            step, end = 1 + int(np.cumprod(shape[:-1]).sum()), None
        positions = np.arange(math.prod(shape))[:end:step]
        if positions.size == 0:
            return x
        values = _cycled(jnp, val, x.dtype, positions.size)
        if values is None:  # NumPy writes nothing
            return x
        return _assign_flat(jnp, x, jnp.asarray(positions), values)

    return fill_diagonal


def _putmask(jnp: Any) -> Callable:
    def putmask(x: Any, mask: Any, values: Any) -> Any:
        n = math.prod(x.shape)
        if n == 0:
            return x
        chosen = jnp.asarray(mask).reshape(-1).astype(bool)
        written = _cycled(jnp, values, x.dtype, n)  # a.flat[k] = values.flat[k % size]
        if written is None:  # NumPy writes nothing
            return x
        return jnp.where(chosen, written, x.reshape(-1)).reshape(x.shape)

    return putmask


_SCATTERS = {"add": "add", "subtract": "add", "multiply": "multiply", "maximum": "max",
             "minimum": "min"}


def _scatter_method(ufunc: str, x: Any, values: Any) -> str:
    """The jax scatter of ``np.<ufunc>.at`` into ``x``: NumPy runs each update in the ufunc's
    loop for ``x``'s and the values' dtypes and casts it back to ``x``'s (``int + 0.5`` in
    floats, truncated): a scatter in ``x``'s dtype is that only when the loop is ``x``'s."""
    method = _SCATTERS.get(ufunc)
    if method is None:
        raise refusal(f"np.{ufunc}.at has no scatter form in jax (its repeated indices apply "
                      f"in order); supported: {', '.join(f'np.{u}.at' for u in _SCATTERS)}")
    loop = getattr(np, ufunc).resolve_dtypes((dtype_of(x), loop_key(values), None))
    if np.dtype(loop[2]) != np.dtype(x.dtype):
        raise refusal(
            f"np.{ufunc}.at of {dtype_of(values)} values into a {np.dtype(x.dtype)} array: "
            f"NumPy computes each update in {np.dtype(loop[2])} and casts it back, one repeated "
            f"index after the other, which a scatter does not; cast the values first "
            f"(v.astype(x.dtype)) or replay with backend='numpy'")
    return method


def _scatter(jnp: Any, x: Any, positions: Any, values: Any, ufunc: str) -> Any:
    """``x`` with ``np.<ufunc>.at`` applied at the flat ``positions``."""
    method = _scatter_method(ufunc, x, values)
    if positions.size and not math.prod(x.shape):  # (jax's gather fails on it while tracing)
        raise IndexError("index 0 is out of bounds for axis 0 with size 0")
    values = jnp.broadcast_to(jnp.asarray(values), positions.shape)
    if ufunc == "subtract":
        values = -values
    if dtype_of(values) != np.dtype(x.dtype):
        values = cast(jnp, values, x.dtype)
    flat = x.reshape(-1)
    return getattr(flat.at[positions.reshape(-1)], method)(values.reshape(-1)).reshape(x.shape)


def _ufunc_at(jnp: Any) -> Callable:
    def ufunc_at(x: Any, indices: Any, values: Any, ufunc: str) -> Any:
        if indices.size and not math.prod(x.shape):
            raise IndexError("index 0 is out of bounds for axis 0 with size 0")
        rows = in_bounds(jnp, indices, x.shape[0], "an index of ufunc.at")
        return _scatter(jnp, x, _positions(jnp, x.shape)[rows], values, ufunc)

    return ufunc_at


def _advanced_ufunc_at(jnp: Any) -> Callable:
    """``np.<ufunc>.at(x, key, values)`` with any key: the flat positions ``x[key]`` selects
    (tensors checked in bounds), one scatter over them (repeated positions accumulate)."""

    def advanced_ufunc_at(x: Any, values: Any, *idx: Any, ufunc: str, index: tuple,
                          tensors: tuple) -> Any:
        key = advanced_key(jnp, x.shape, idx, index, tensors)
        return _scatter(jnp, x, _positions(jnp, x.shape)[key], values, ufunc)

    return advanced_ufunc_at


def _into(jnp: Any) -> Callable:
    def into(target: Any, *operands: Any, op: str, params: dict) -> Any:
        # the function's own result (out= has its shape and dtype); its value checks, if any,
        # are made at this node
        inner = ops.OPS[op]
        if inner.name in UNSUPPORTED:
            raise refusal(f"{inner.name}(..., out=...): {UNSUPPORTED[inner.name]}")
        result = functional(inner, jnp)(*operands, **params)
        return jnp.asarray(result).astype(target.dtype)

    return into


OVERRIDES.update({
    "setitem": _setitem,
    "index_put": _index_put,
    "advanced_index_put": _advanced_index_put,
    "put": _put,
    "put_along_axis": _put_along_axis,
    "ufunc_at": _ufunc_at,
    "advanced_ufunc_at": _advanced_ufunc_at,
    "fill_diagonal": _fill_diagonal,
    "putmask": _putmask,
    "into": _into,
})
