"""The shape and dtype of each result, from the op's rule, and the check that a dask array has
them (a data-dependent length is unknown, NaN, as dask.array's own boolean indexing makes it).
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np

from capviz import ops


def meta_array(shape: tuple, dtype: Any) -> np.ndarray:
    return np.empty((0,) * len(shape), dtype=dtype)


def _same_shape(a: tuple, b: tuple) -> bool:
    """Shapes equal, an unknown length (NaN) equal to an unknown one."""
    return len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b))


def check_result(op: ops.Op, value: Any, shape: tuple, dtype: Any) -> Any:
    """``value`` (a dask array), after checking it has the graph's shape and dtype."""
    if not _same_shape(tuple(value.shape), tuple(shape)) \
            or np.dtype(value.dtype) != np.dtype(dtype):
        raise RuntimeError(
            f"capviz's Dask rule for {op.name!r} made {value.dtype}{list(value.shape)} where "
            f"NumPy makes {np.dtype(dtype)}{list(shape)} (a bug in "
            "capviz/backends/dask/rules.py: please report it)")
    return value


def is_array(value: Any) -> bool:
    return isinstance(value, da.Array)


def expected(op: ops.Op, args: tuple, params: dict) -> Any:
    """The op's (shape, dtype) rule on the operands (a list of them for a multi-result op).

    An operand of unknown length (NaN, after a ``sized`` op) stands in with two different
    lengths; a result length that moves with them is unknown (NaN) too, and a data-dependent
    length of a ``sized`` op's own rule is unknown."""
    if any(is_array(a) and unknown_shape(a.shape) for a in args):
        first = op.meta(_stand_ins(args, 1_000_003), params)
        second = op.meta(_stand_ins(args, 2_000_029), params)
        result = _merge(first, second, op.multi)
    else:
        result = op.meta(args, params)
    if op.multi:
        return [(_known(s), np.dtype(d)) for s, d in result]
    shape, dtype = result
    return _known(shape), np.dtype(dtype)


def unknown_shape(shape: tuple) -> bool:
    return any(s != s for s in shape)


def _stand_ins(args: tuple, length: int) -> tuple:
    """The operands with each unknown length replaced by ``length`` (+ its axis), as
    zero-byte stand-ins the rules read shapes and dtypes of."""
    out = []
    for a in args:
        if is_array(a) and unknown_shape(a.shape):
            shape = tuple(length + k if s != s else s for k, s in enumerate(a.shape))
            a = np.broadcast_to(np.zeros((), a.dtype), shape)  # zero strides: no memory
        out.append(a)
    return tuple(out)


def _merge(first: Any, second: Any, multi: bool) -> Any:
    """A rule's results on two sets of stand-in lengths: the lengths that differ are NaN."""
    pairs = zip(first, second) if multi else [(first, second)]
    merged = [(tuple(a if a == b else np.nan for a, b in zip(sa, sb)), d)
              for (sa, d), (sb, _) in pairs]
    return merged if multi else merged[0]


def _known(shape: tuple) -> tuple:
    """A rule's shape with a ``Pending`` data-dependent length as NaN (dask.array's word)."""
    return tuple(s if isinstance(s, (int, float)) else np.nan for s in shape)
