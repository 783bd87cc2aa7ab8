"""Casts of floats to an integer type whose value is out of its range: computed as NumPy on the
whole array, where the answer depends on an element's place in NumPy's loop.

NumPy casts a float that does not fit the integer type (NaN, an infinity, ``4294967300.0`` to
``uint32``) to whatever its cast loop gives: the contiguous loop's vector instructions give one
value, its scalar tail another (float64 ``4294967300.0`` to ``uint32``: ``0`` in a vector,
``4`` in the tail; NaN: ``2147483648`` and ``0``), so the same value casts to other integers at
other places of the array, and a block of dask.array (other lengths, other tails) gives other
integers than the whole array: ``np.round(a, -2)`` of a ``uint32`` array holding
``4294967295`` (NumPy rounds it in float64, ``4294967300.0``, then casts back) was ``0`` in
NumPy and ``4`` in blocks of two (the differential harness's ``form.round -2[uint32]``);
``x.astype(np.uint32)`` of NaN likewise.

So each block of ``astype`` from a float or complex type to an integer type, and of ``round``
of integers with ``decimals < 0``, is tested where it is cast (:class:`Cast`): a value out of
the integer type's range fails the node with
:class:`~capviz.backends.dask.overflow.OutOfRange`, and the replay computes that node again
on one block laid out in memory as NumPy's operand is (:func:`in_numpy_order`), NumPy's own
loop over the whole array, as a sum that fails its overflow bound is (a node of one block too:
its block's layout may not be NumPy's operand's).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.dask import in_order
from capviz.backends.dask.kinds import whole
from capviz.backends.dask.overflow import WHOLE, OutOfRange
from capviz.backends.dask.shapes import check_result, expected, is_array, meta_array
from capviz.backends.dask.tasks import NODE, STEPS, guard
from capviz.backends.registry import replay_error


def covers(name: str, args: tuple, params: dict) -> bool:
    """Whether node ``name`` of ``args`` casts floats to an integer type: ``astype`` of a float
    or complex array to an integer dtype, ``round`` of an integer array with ``decimals < 0``
    (NumPy divides, rounds and multiplies in float64 and casts back)."""
    x = args[0] if args else None
    if not hasattr(x, "dtype"):
        return False
    if name == "astype":
        target = params.get("dtype")
        return target is not None and np.dtype(x.dtype).kind in "fc" \
            and np.dtype(target).kind in "iu"
    decimals = params.get("decimals", 0)
    return name == "round" and np.dtype(x.dtype).kind in "iu" \
        and isinstance(decimals, (int, np.integer)) and decimals < 0


class Cast:
    """A block's task (picklable): ``fn`` of the block, failing with ``OutOfRange`` where a
    value the op casts to ``dtype`` is out of its range (its place in NumPy's loop decides)."""

    def __init__(self, fn: Any, params: dict, name: str, dtype: np.dtype) -> None:
        self.fn = fn
        self.params = params
        self.name = name
        self.dtype = np.dtype(dtype)

    def __call__(self, block: np.ndarray) -> np.ndarray:
        result = self.fn(block, **self.params)
        values = self._cast_values(block)
        info = np.iinfo(self.dtype)
        low, high = np.float64(info.min) - 1, np.float64(info.max) + 1
        with np.errstate(invalid="ignore"):
            inside = np.all((values > low) & (values < high))
        if not inside:
            raise OutOfRange(
                f"np.{self.name} casts a value out of {self.dtype}'s range (NaN, an infinity, "
                "or beyond its largest or smallest value) to it, where NumPy's cast loop gives "
                "another integer at another place of the array (its vector instructions and "
                "its scalar tail differ), so a block of dask.array gives other integers than "
                "NumPy's loop over the whole array; replay with compute=True (which computes "
                f"this node as NumPy does), backend='numpy', or {WHOLE}")
        return result

    def _cast_values(self, block: np.ndarray) -> np.ndarray:
        """The floats the op casts to its integer type (a complex's real part)."""
        if self.name == "round":  # NumPy's steps in float64: a / 10**-d, rint, * 10**-d
            scale = 10.0 ** -int(self.params.get("decimals", 0))
            with np.errstate(all="ignore"):
                return np.rint(np.true_divide(block, scale)) * scale
        return block.real if block.dtype.kind == "c" else block


def checked(op: ops.Op, args: tuple, params: dict) -> Any:
    """The op on each block of ``args[0]``, tested (:class:`Cast`): one block too, whose
    layout may not be NumPy's operand's (a strided view's block is a copy)."""
    x = args[0]
    shape, dtype = expected(op, args, params)
    task = Cast(op.bind(np), params, op.name, dtype)
    result = x.map_blocks(guard(task), dtype=dtype, meta=meta_array(shape, dtype))
    return check_result(op, result, shape, dtype)


def in_numpy_order(op: ops.Op, args: tuple, params: dict) -> Any:
    """The cast on one block laid out in memory as NumPy's operand is (NumPy's loop over the
    whole array); ``OutOfRange`` naming the value whose layout decides where it is not
    known (a strided or flipped view)."""
    steps, index = STEPS.get(), NODE.get()
    node = steps.by_index[index]
    orders, unknown = in_order.operand_orders(node)
    if unknown is not None:
        cause = in_order.refusal(
            OutOfRange(f"np.{op.name} casts a value out of {node.dtype}'s range"), unknown)
        raise replay_error(node, [a for a in args if is_array(a)], cause) from cause
    order = orders[0] if orders else None
    return whole(op, (in_order.laid_out(args[0], order), *args[1:]), params)

