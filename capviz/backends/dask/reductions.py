"""The ``reduce`` and ``contract`` rule kinds: dask.array's tree reductions and blocked products,
with NumPy's dtype, checked where the order of addition matters
(:mod:`capviz.backends.dask.overflow`, :mod:`capviz.backends.dask.cancellation`), and computed in
NumPy's order where it does (:mod:`capviz.backends.dask.in_order`,
:mod:`capviz.backends.dask.moments`).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.dask import (
    before_cancel,
    cancellation,
    contractions,
    in_order,
    moments,
    overflow,
    pairwise,
    running,
    several_axes,
    shared,
    variance,
)
from capviz.backends.dask.kinds import along_axis, dask_function, host_blocks, whole
from capviz.backends.dask.shapes import check_result, expected, is_array
from capviz.backends.dask.tasks import NODE, STEPS, guard, numpy_callable
from capviz.backends.registry import get, replay_error
from capviz.ops import traits


def accumulate(op: ops.Op, args: tuple, params: dict) -> Any:
    """dask.array's tree reduction or blocked product, cast to NumPy's dtype where dask adds
    its partial results in a wider one (int32 matmul adds in int64: the cast wraps as NumPy's
    int32 sum does, so integer results stay exact). ``var``/``std`` and complex products run
    as NumPy computes them (:mod:`capviz.backends.dask.moments`); a float sum over several
    chunks is checked where an overflow could depend on the order of addition
    (:mod:`capviz.backends.dask.overflow`), and computed as NumPy does where it could."""
    shape, dtype = expected(op, args, params)
    standins = _strided_operands(op, args, dtype)
    if standins is not None:  # an operand NumPy holds strided: on its strides
        return check_result(op, whole(op, args, params, standins), shape, dtype)
    if in_order.wanted(op.name, args, params, dtype, NODE.get()):
        host = (in_order.NODES.get() or {}).get(NODE.get())
        contiguous = host is not None and (host.flags.c_contiguous or host.flags.f_contiguous)
        if host is not None and not (contiguous and pairwise.covers(op.name, args[0], params)):
            # an input or constant itself: NumPy's sum in its own layout, on one block
            return whole(op, (host_blocks(host, host.shape), *args[1:]), params)
        return in_numpy_order(op, args, params, _operand_orders())
    index = NODE.get()
    if before_cancel.wanted(op.name, args, params, dtype, index,
                            lambda: _pairwise(args[0], params)):
        orders = _feeding_orders(args)
        if orders is not None:
            return in_numpy_order(op, args, params, orders)
    if op.name in moments.MOMENTS:
        result = moments.moment(op.name, args[0], params)
        if result is None:
            return whole(op, args, params)
        result = _checked(op, args, params, result)
    else:
        result = dask_function(op)(*args, **params)
        if np.dtype(result.dtype) != dtype and tuple(result.shape) == shape:
            result = result.astype(dtype)
        if all(is_array(a) for a in args):
            result = _checked(op, args, params, result)
    return check_result(op, result, shape, dtype)


def _strided_operands(op: ops.Op, args: tuple, dtype: Any) -> list | None:
    """For a float or complex product one of whose operands NumPy holds in another layout than
    C order (a strided or flipped view, a transpose), where that product is on one block
    anyway or is followed (:func:`capviz.backends.dask.before_cancel.feeding`): each operand's
    strides (:func:`capviz.backends.dask.in_order.operand_standins`); else ``None``. A product
    that is an output and spans several blocks keeps dask.array's blocks and its declared
    bound."""
    if op.name not in traits.CONTRACT or np.dtype(dtype).kind not in "fc":
        return None
    arrays = [a for a in args if is_array(a)]
    if not all(a.npartitions == 1 for a in arrays) \
            and NODE.get() not in (before_cancel.FEEDING.get() or {}):
        return None
    return in_order.operand_standins(_node())


def _checked(op: ops.Op, args: tuple, params: dict, result: Any) -> Any:
    """``result`` with the checks of a sum or product over several chunks: a plain sum's
    rounding and overflow bound per output (:mod:`capviz.backends.dask.cancellation`), the
    others' overflow bound (:mod:`capviz.backends.dask.overflow`), and a variance's rounding
    of its mean (:mod:`capviz.backends.dask.variance`)."""
    tolerance = get("dask").tolerance_for(result.dtype)
    if NODE.get() in before_cancel.RELATIVE.get():  # read where atol does not hold
        tolerance = (tolerance[0], 0.0)
    products = op.name in traits.CONTRACT and not cancellation.covers(op.name, args)
    pairwise = products or _pairwise(args[0], params)  # a product's kernel: BLAS's
    if cancellation.covers(op.name, args):  # its overflow bound too, per output
        return cancellation.checked(op.name, args[0], params, result, guard, tolerance,
                                    pairwise)
    result = overflow.checked(op.name, args, params, result, guard, pairwise)
    if op.name in variance.VARIANCES:
        return variance.checked(op.name, args[0], params, result, guard, tolerance, pairwise)
    return result


def _pairwise(x: Any, params: dict) -> bool:
    """Whether NumPy adds each output of the node being built pairwise (else a running sum of
    its terms, or a layout not known: :func:`capviz.backends.dask.in_order.pairwise`)."""
    steps, index = STEPS.get(), NODE.get()
    node = None if steps is None or index is None else steps.by_index.get(index)
    if node is None or not x.ndim:
        return node is not None
    if node.op == "trace":
        axes: Any = (params.get("axis1", 0), params.get("axis2", 1))
    else:
        axes = params.get("axis")
        axes = range(x.ndim) if axes is None else (axes,) if isinstance(axes, int) else axes
    return in_order.pairwise(node, tuple(operator.index(a) % x.ndim for a in axes))


def _node() -> Any:
    """The node being built, or ``None`` outside a replay's build."""
    steps, index = STEPS.get(), NODE.get()
    return None if steps is None or index is None else steps.by_index.get(index)


def _operand_orders() -> list:
    """The memory order NumPy gives each tensor operand of the node being built (``None``: C
    order); :class:`~capviz.backends.dask.overflow.OrderMatters`, naming the value, where it
    cannot be known (:mod:`capviz.backends.dask.in_order`)."""
    steps, index = STEPS.get(), NODE.get()
    node = None if steps is None or index is None else steps.by_index.get(index)
    if node is None:
        return []
    orders, unknown = in_order.operand_orders(node, restrided=True)
    if unknown is not None:
        here = overflow.OrderMatters(f"np.{node.op} adds in NumPy's order here")
        raise in_order.refusal(here, unknown)
    return orders


def _feeding_orders(args: tuple) -> list | None:
    """As :func:`_operand_orders`, for a sum that feeds an add or subtract that can cancel
    (:mod:`capviz.backends.dask.before_cancel`): where its operand's layout cannot be known,
    the replay fails at the node, naming the consumer (``None`` for a contraction followed
    only because an op reads it: :func:`~capviz.backends.dask.before_cancel.read_only`)."""
    node = STEPS.get().by_index[NODE.get()]
    orders, unknown = in_order.operand_orders(node, restrided=True)
    if unknown is not None and before_cancel.read_only(node.index):
        return None
    if unknown is not None:
        cause = before_cancel.refused(node, unknown)
        raise replay_error(node, [a for a in args if is_array(a)], cause) from cause
    return orders


def in_numpy_order(op: ops.Op, args: tuple, params: dict, orders: list) -> Any:
    """The reduction or product in NumPy's order (:mod:`capviz.backends.dask.in_order`): a sum
    or mean NumPy adds one row after another chunk by chunk
    (:mod:`capviz.backends.dask.running`); another along one axis by the ``axis`` rule, that
    axis and the ones after it in one chunk; any other reduction, and every product, on one
    block (a product's kernel follows its shapes); on one block laid out as NumPy's operand is
    where that is not C order."""
    node = _node()
    standin = in_order.strided_operand(node) if orders and isinstance(
        orders[0], in_order.Strided) else None
    if standin is not None:  # several axes of a strided view: NumPy's loop on its strides
        return check_result(op, whole(op, args, params, standin.layout()),
                            *expected(op, args, params))
    which = None if node is None else shared.transposed(node)
    if which is not None:  # x @ x.T: NumPy's syrk, on a block and its own transpose
        shape, dtype = expected(op, args, params)
        value = in_order.laid_out(args[1 - which], orders[1 - which] if orders else None)
        return check_result(op, shared.product(numpy_callable(op), value, which, params,
                                               shape, dtype), shape, dtype)
    order = orders[0] if orders else None
    if op.name not in traits.CONTRACT and pairwise.covers(op.name, args[0], params) \
            and not isinstance(order, in_order.Strided):  # chunk by chunk, NumPy's tree
        return check_result(op, pairwise.reduce(op.name, args[0], params, order),
                            *expected(op, args, params))
    if op.name not in traits.CONTRACT and several_axes.covers(op.name, args[0], params) \
            and not isinstance(order, in_order.Strided):  # a few chunks at a time
        return check_result(op, several_axes.reduce(op.name, args[0], params, order),
                            *expected(op, args, params))
    if any(order is not None for order in orders):
        arrays = iter(orders)
        return whole(op, tuple(in_order.laid_out(a, next(arrays, None)) if is_array(a) else a
                               for a in args), params)
    axis = params.get("axis")
    if op.name in traits.CONTRACT or not isinstance(axis, int) or not args[0].ndim:
        return whole(op, args, params)
    if running.covers(op.name, args[0], params) and not _pairwise(args[0], params):
        return running.reduce(op.name, args[0], params)  # chunk by chunk, in NumPy's order
    return along_axis(op, (in_order.blocks(args[0], axis), *args[1:]), params)


NATIVE_KINDS = frozenset(("select", "reduce", "contract"))
_NUMPY_ONLY_PARAMS = ("initial", "where", "correction")
_OWN_DTYPE_REDUCTION = frozenset(("nanvar", "nanstd"))


def numpy_only(op: ops.Op, args: tuple, params: dict) -> bool:
    """Whether a reduction or product must run as NumPy on one block (``whole``) instead of
    dask.array's own function: a keyword dask's function does not take (``initial=``,
    ``where=`` of the nan-reductions), a 0-d operand (dask's ``dot`` indexes its axes; a
    reduction of one along ``axis=0`` or ``-1`` is of its one element in NumPy, an ``AxisError``
    in dask.array), a product of two one-element operands (NumPy's keeps the sign of a
    ``-0.0``: :func:`capviz.backends.dask.contractions.lone`), or ``nanvar``/``nanstd`` with
    ``dtype=``, which dask computes in another way than NumPy (a complex or float16 result off
    by far more than a rounding: ``inf`` for ``0.0``)."""
    if any(params.get(name, True) is not True for name in _NUMPY_ONLY_PARAMS):
        return True
    if op.name in _OWN_DTYPE_REDUCTION and params.get("dtype") is not None:
        return True
    if op.name in traits.CONTRACT:  # NumPy's product of two one-element operands: its -0.0
        return any(is_array(a) and a.ndim == 0 for a in args) or contractions.lone(args)
    return _zero_d_along_axis(args, params)


def _zero_d_along_axis(args: tuple, params: dict) -> bool:
    """Whether a reduction's operand is 0-d and an ``axis=`` is given: NumPy reduces it as its
    one element (``np.nansum(np.array(2.5), axis=0)`` is ``2.5``) or raises its own error."""
    operand = args[0] if args else None
    return is_array(operand) and operand.ndim == 0 and params.get("axis") is not None
