"""The rule kinds that run an op on blocks: ``whole``, ``elementwise``, ``axis``, ``move``,
``select``, ``gather``, ``split`` and ``sized`` (see :mod:`capviz.backends.dask.backend` for
what each does), and the host arrays' blocks (:func:`host_blocks`).
"""

from __future__ import annotations

import functools
import operator
import uuid
from collections.abc import Callable
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.array.core import elemwise, normalize_chunks

from capviz import ops
from capviz.backends.dask import in_order
from capviz.backends.dask.overflow import OrderMatters
from capviz.backends.dask.shapes import check_result, expected, is_array, meta_array, unknown_shape
from capviz.backends.dask.tasks import NODE, STEPS, Call, numpy_callable, split_args
from capviz.backends.registry import get, unsupported
from capviz.core.errors import UnsupportedOperationError
from capviz.ops import traits
from capviz.ops.ufunc_methods import refuse_not_a_fold

HOST = "capviz-host-"
"""Name prefix of the dask arrays made from host arrays (inputs and constants)."""

def host_blocks(array: np.ndarray, chunks: Any) -> Any:
    """``array`` as a dask array whose blocks are views of it (``da.from_array`` copies the
    whole array first, a second copy of every input; a memory-mapped array would be read)."""
    chunks = normalize_chunks(chunks, array.shape, dtype=array.dtype)
    name = HOST + uuid.uuid4().hex  # no hash of the data (tokenize reads every byte)
    numblocks = tuple(len(c) for c in chunks)
    graph = {}
    for index, where in zip(np.ndindex(*numblocks), da.core.slices_from_chunks(chunks)):
        graph[(name, *index)] = array[where] if where else array[...]
    return da.Array(graph, name, chunks, dtype=array.dtype,
                    meta=meta_array(array.shape, array.dtype))




def whole(op: ops.Op, args: tuple, params: dict, layout: Any = None) -> Any:
    """The op's NumPy function on its operands gathered into one block (one task); with
    ``layout`` (:meth:`capviz.backends.dask.in_order.Standin.layout`), on its first operand
    copied into a buffer with those strides (a list: one layout or ``None`` per tensor
    operand)."""
    template, slots, arrays = split_args(args if layout is not None
                                         else _as_numpys_layouts(op, args))
    layouts = layout if isinstance(layout, list) else [layout]
    fn = numpy_callable(op) if layout is None \
        else Restrided(numpy_callable(op), dict(zip(slots, layouts)))
    out = expected(op, args, params)
    # each operand as the one task of its single block: handing dask.delayed the arrays
    # themselves unpacks their whole graphs at every step, so a chain of whole ops (a loop of
    # writes) took time exponential in its length
    blocks = [one_block(a) for a in arrays]
    task = dask.delayed(Call(fn, template, slots, params), pure=True)(*blocks)
    if not op.multi:
        shape, dtype = out
        return da.from_delayed(task, shape, dtype=dtype, meta=meta_array(shape, dtype))
    return tuple(da.from_delayed(task[k], shape, dtype=dtype, meta=meta_array(shape, dtype))
                 for k, (shape, dtype) in enumerate(out))


class Restrided:
    """``fn`` of its operands at the positions ``layouts`` names, each copied into a buffer with
    its layout's strides (:func:`capviz.backends.dask.in_order.restrided`): a task function,
    picklable."""

    def __init__(self, fn: Callable, layouts: dict) -> None:
        self.fn = fn
        self.layouts = layouts

    def __call__(self, *args: Any, **params: Any) -> Any:
        together = [k for k, layout in self.layouts.items()
                    if layout is not None and layout[0] == "buffer"]
        laid = [a if self.layouts.get(k) is None or k in together
                else in_order.restrided(np.asarray(a), self.layouts[k])
                for k, a in enumerate(args)]
        if together:  # views of one value in NumPy: views of one buffer
            views = in_order.restrided_together([np.asarray(args[k]) for k in together],
                                                [self.layouts[k] for k in together])
            for k, view in zip(together, views):
                laid[k] = view
        return self.fn(*laid, **params)


def _as_numpys_layouts(op: ops.Op, args: tuple) -> tuple:
    """``args``, each tensor operand of an op of the ``whole`` kind laid out in memory as
    NumPy's operand was (:mod:`capviz.backends.dask.in_order`'s layouts: an F-ordered input, a
    transpose) where that is known and not C order: NumPy's loops follow the layout (``vecmat``
    of an F-ordered matrix of values near 1e307 is NaN in NumPy, ``inf`` on a C-ordered copy;
    W=25h's dask2 row), and a block gathered from chunks is C-ordered. An operand whose layout
    is not known (a flipped or broadcast view) stays C-ordered."""
    steps, index = STEPS.get(), NODE.get()
    node = None if steps is None or index is None else steps.by_index.get(index)
    if op.name not in traits.WHOLE or node is None or node.op != op.name:
        return args
    orders, unknown = in_order.operand_orders(node)
    if unknown is not None or all(order is None for order in orders) \
            or len(orders) != sum(is_array(a) for a in args):
        return args
    layouts = iter(orders)
    return tuple(in_order.laid_out(a, next(layouts)) if is_array(a) else a for a in args)


def one_block(array: Any) -> Any:
    """``array`` as one ``Delayed`` (its blocks concatenated into one task), its graph kept as
    it is (not optimized: optimizing it again at every step would cost as much)."""
    if array.npartitions != 1 and unknown_shape(array.shape):  # blocks of unknown lengths
        blocks = array.to_delayed(optimize_graph=False)
        return dask.delayed(np.block, pure=True)(blocks.tolist())
    if array.npartitions != 1:
        array = array.rechunk(tuple((size,) for size in array.shape) or ())
    (block,) = array.to_delayed(optimize_graph=False).ravel()
    return block


def elementwise(op: ops.Op, args: tuple, params: dict) -> Any:
    """The op's NumPy function on each block (blocks broadcast as the operands do)."""
    if params.get("shape") is not None:  # np.zeros_like(x, shape=...): not x's blocks
        return native(op, args, params)
    fn = numpy_callable(op)
    out = expected(op, args, params)
    if not op.multi:
        shape, dtype = out
        call = functools.partial(fn, **params) if params else fn
        return check_result(op, elemwise(call, *args, dtype=dtype), shape, dtype)
    template, slots, arrays = split_args(args)
    results = []
    for k, (shape, dtype) in enumerate(out):
        call = Call(fn, template, slots, params, pick=k)
        results.append(check_result(op, _blockwise_all(call, arrays, shape, dtype), shape, dtype))
    return tuple(results)


def _blockwise_all(call: Call, arrays: list, shape: tuple, dtype: Any) -> Any:
    nd = len(shape)
    pairs: list = []
    for a in arrays:
        pairs += [a, tuple(range(nd - a.ndim, nd))]
    return da.blockwise(call, tuple(range(nd)), *pairs, dtype=dtype,
                        meta=meta_array(shape, dtype))


def along_axis(op: ops.Op, args: tuple, params: dict) -> Any:
    """The op's NumPy function per block, its axis rechunked into one chunk; ``whole`` when the
    op reads more than one tensor or flattens (``axis=None``). ``np.arctan2.reduce`` and the
    other reductions whose NumPy loop follows the operand's layout are refused by name."""
    if op.name == "ufunc_reduce":
        refuse_not_a_fold("reduce", params["ufunc"], "dask")
    template, slots, arrays = split_args(args)
    axis = params["axis"] if "axis" in params else traits.AXIS[op.name]
    adds = _adds(op, params, arrays)
    if adds is not None:  # NumPy's loop follows a layout that is not C order: one block
        return whole(op, tuple(in_order.laid_out(a, adds) if is_array(a) else a
                               for a in args), params) if isinstance(adds, tuple) \
            else whole(op, args, params, adds.layout())
    if len(arrays) != 1 or isinstance(axis, (tuple, list)) or axis is None or not arrays[0].ndim:
        return whole(op, args, params)
    x = arrays[0]
    ax = operator.index(axis) % x.ndim
    shape, dtype = expected(op, args, params)
    # the axis in one chunk; for a sum, the ones after it too: NumPy's loop over a block whose
    # later axes are cut adds otherwise (a (n, 1) column is contiguous, added pairwise, where
    # NumPy adds the column of the whole C-ordered (n, m) array row after row)
    x = x.rechunk({a: -1 for a in range(ax, x.ndim)} if op.name in _ADDS else {ax: -1})
    call = Call(numpy_callable(op), template, slots, params)
    rest = x.shape[:ax] + x.shape[ax + 1:]
    lead = tuple(np.shape(params.get("q"))) if op.name in _QUANTILES else ()
    if lead:  # NumPy puts the axes of an array q first: (len(q),) + the kept axes
        if tuple(shape) != lead + rest:  # keepdims=True, or another form: on one block
            return whole(op, args, params)
        chunks = tuple((n,) for n in lead) + x.chunks[:ax] + x.chunks[ax + 1:]
        result = x.map_blocks(call, drop_axis=ax, new_axis=list(range(len(lead))),
                              chunks=chunks, dtype=dtype, meta=meta_array(shape, dtype))
    elif len(shape) == x.ndim and shape[:ax] + shape[ax + 1:] == rest:
        chunks = x.chunks[:ax] + ((shape[ax],),) + x.chunks[ax + 1:]
        result = x.map_blocks(call, chunks=chunks, dtype=dtype, meta=meta_array(shape, dtype))
    elif shape == rest:
        result = x.map_blocks(call, drop_axis=ax, chunks=x.chunks[:ax] + x.chunks[ax + 1:],
                              dtype=dtype, meta=meta_array(shape, dtype))
    else:  # the result's axes are not the operand's (percentile of several q)
        return whole(op, args, params)
    return check_result(op, result, shape, dtype)


_ADDS = frozenset(("ufunc_reduce", "average", "trapezoid", "linalg.vector_norm"))
"""The ops of the ``axis`` kind that add (or multiply) their float or complex values along the
axis in NumPy's loop order, which follows the operand's memory layout and the shape of the
block NumPy's loop sees (stop 36: ``np.add.reduce(x, 0) - x[0] * n``, ``np.average(x, 0) -
x[0]``, ``np.trapezoid(x, axis=0)``, ``np.linalg.vector_norm(x, axis=0)`` reaching a subtract
were silent on chunks of one column, or of an F-ordered input); the ``REDUCE`` ops have their
own rules (:mod:`capviz.backends.dask.reductions`)."""
_PICKS = frozenset(("maximum", "minimum", "fmax", "fmin"))
"""Ufuncs whose ``reduce`` picks a value: any order gives NumPy's."""


def _adds(op: ops.Op, params: dict, arrays: list) -> Any:
    """For an op of :data:`_ADDS` of float or complex values whose operand NumPy holds in
    another layout than C order: that layout (an order of the axes, for
    :func:`capviz.backends.dask.in_order.laid_out`; or a
    :class:`~capviz.backends.dask.in_order.Standin` of a strided view's strides); ``None`` for
    C order or another op. An operand whose layout is not known is refused by name."""
    if op.name not in _ADDS or params.get("ufunc") in _PICKS or len(arrays) != 1 \
            or np.dtype(arrays[0].dtype).kind not in "fc":
        return None
    steps, index = STEPS.get(), NODE.get()
    node = None if steps is None or index is None else steps.by_index.get(index)
    if node is None or node.op != op.name or in_order.LAYOUTS.get() is None:
        return None
    orders, unknown = in_order.operand_orders(node, restrided=True)
    if unknown is not None:
        raise in_order.refusal(OrderMatters(f"np.{_named(op, params)} adds in NumPy's order "
                                            "here"), unknown)
    order = orders[0] if orders else None
    if isinstance(order, in_order.Strided):
        return in_order.strided_operand(node)
    return order


def _named(op: ops.Op, params: dict) -> str:
    return f"{params.get('ufunc')}.reduce" if op.name == "ufunc_reduce" else op.name


_QUANTILES = frozenset(("percentile", "quantile", "nanpercentile", "nanquantile"))
"""Ops whose result puts the axes of their ``q`` first (an array ``q``: W=25h's dask2 row found
``np.percentile(a, [10, 50, 90], axis=1)`` of a (3, 4) input taken as the axis replaced in
place, silently, where ``len(q)`` equals a kept length)."""

_DASK_CANNOT = (NotImplementedError, ValueError, TypeError, IndexError, AttributeError)


def move(op: ops.Op, args: tuple, params: dict) -> Any:
    """dask.array's own function of an op that only moves elements; ``whole`` for a case it
    cannot do or does otherwise (checked by shape and dtype)."""
    if op.name == "ravel" and params.get("order", "C") in ("K", "A"):
        raise unsupported(get("dask"), op.name, f"order={params['order']!r} ravels in memory "
                          "order, and a dask array has none (ravel with order='C' or 'F')")
    out = expected(op, args, params)
    try:
        result = dask_function(op)(*args, **params)
    except (*_DASK_CANNOT, UnsupportedOperationError):  # dask.array lacks it, or this case
        return whole(op, args, params)
    if not _matches(result, out):
        return whole(op, args, params)
    return tuple(result) if op.multi else result


def _matches(result: Any, out: Any) -> bool:
    results = list(result) if isinstance(out, list) else [result]
    outs = out if isinstance(out, list) else [out]
    if len(results) != len(outs):
        return False
    return all(is_array(r) and tuple(r.shape) == s and np.dtype(r.dtype) == d
               for r, (s, d) in zip(results, outs))


def select(op: ops.Op, args: tuple, params: dict) -> Any:
    """dask.array's own reduction of an order-free operation (max, argmin, any...); ``whole``
    when an operand is empty, where dask's tree reduction fails on its empty blocks but NumPy
    gives an empty result or raises its own error (both cheap on no data)."""
    if any(is_array(a) and 0 in a.shape for a in args):
        return whole(op, args, params)
    if op.name in _FLAT_ARG and params.get("axis") is None and args[0].ndim > 1 \
            and not params.get("keepdims"):
        # over the flattened array NumPy gives the first of equal values in C order; dask
        # would give the first in block order: the blocks of the raveled array are in C order
        args = (args[0].ravel(), *args[1:])
    return native(op, args, params)


_FLAT_ARG = frozenset(("argmax", "argmin", "nanargmax", "nanargmin"))


def native(op: ops.Op, args: tuple, params: dict) -> Any:
    """dask.array's own function (reductions, products); its result is checked."""
    shape, dtype = expected(op, args, params)
    return check_result(op, dask_function(op)(*args, **params), shape, dtype)


def dask_function(op: ops.Op) -> Callable:
    if op.name == "linalg.tensordot":
        return ops.OPS["tensordot"].bind(da)
    return op.bind(da)


def gather(op: ops.Op, args: tuple, params: dict) -> Any:
    """``x[idx]`` and ``np.take(x, idx, axis)``: the indexed axis of ``x`` in one chunk, the
    NumPy function per block of ``idx`` (NumPy's own errors for an index out of range)."""
    x, idx = args
    axis = 0 if op.name == "index" else params.get("axis")
    if axis is None or not is_array(x) or not is_array(idx):
        return whole(op, args, params)
    shape, dtype = expected(op, args, params)
    ax = operator.index(axis) % x.ndim
    x = x.rechunk({ax: -1})
    x_ind = tuple(f"x{i}" for i in range(x.ndim))
    x_ind = x_ind[:ax] + ("axis",) + x_ind[ax + 1:]
    i_ind = tuple(f"i{j}" for j in range(idx.ndim))
    out_ind = x_ind[:ax] + i_ind + x_ind[ax + 1:]
    call = Call(numpy_callable(op), (None, None), (0, 1), params)
    result = da.blockwise(call, out_ind, x, x_ind, idx, i_ind, concatenate=True, dtype=dtype,
                          meta=meta_array(shape, dtype))
    return check_result(op, result, shape, dtype)


_SPLIT_AXIS = {"vsplit": 0, "dsplit": 2}


def split(op: ops.Op, args: tuple, params: dict) -> Any:
    """``np.split`` and its kin as slices of the operand (the pieces NumPy would make)."""
    (x,) = args
    out = expected(op, args, params)
    if op.name == "unstack":
        ax = operator.index(params.get("axis", 0)) % x.ndim
        pieces = [x[(slice(None),) * ax + (i,)] for i in range(x.shape[ax])]
    else:
        if op.name == "hsplit":
            ax = 1 if x.ndim > 1 else 0
        else:
            ax = _SPLIT_AXIS.get(op.name, params.get("axis", 0))
        ax = operator.index(ax) % x.ndim
        how = np.array_split if op.name == "array_split" else np.split
        bounds = how(np.arange(x.shape[ax]), params["indices_or_sections"])
        pieces = []
        for part in bounds:  # consecutive positions (NumPy slices; [2, 1] makes an empty one)
            start = int(part[0]) if len(part) else 0
            pieces.append(x[(slice(None),) * ax + (slice(start, start + len(part)),)])
    if len(pieces) != len(out):
        raise RuntimeError(f"capviz's Dask rule for {op.name!r} made {len(pieces)} pieces "
                           f"where NumPy makes {len(out)}")
    return tuple(check_result(op, p, s, d) for p, (s, d) in zip(pieces, out))


def sized(op: ops.Op, args: tuple, params: dict) -> Any:
    """An op whose result length depends on the data: run as :func:`whole` ops are (NumPy on
    the operands gathered into one block, one task); its rule's data-dependent lengths are
    unknown (NaN) to Dask until computed."""
    return whole(op, args, params)
