"""The Dask backend: a graph replayed as one lazy ``dask.array`` expression.

``graph.replay(inputs, backend="dask", chunks="auto", compute=True)`` runs the compiled step
table (:class:`capviz.replay.program.Program`) once with this backend's callables, which build
dask arrays instead of computing: the result is one expression for the whole graph, run by
whatever scheduler is active (the threaded one, or a ``dask.distributed.Client`` the user made)
with one ``dask.compute`` over every output, so work the outputs share runs once.
``compute=False`` returns the dask arrays themselves.

Inputs are NumPy arrays (chunked with ``chunks``) or dask arrays, kept as they are (a Zarr
array larger than memory stays on disk until its blocks are read).

Every op of the op table has a declared :data:`RULES` entry saying how it runs; no op gathers a
whole array into this process. The kinds:

* ``elementwise``: the NumPy function on each block (broadcasting blocks), bit for bit NumPy's;
* ``axis``: the op's axis rechunked into one chunk, the NumPy function on each block (sort,
  cumsum, median along an axis); with ``axis=None`` (the flattened array) or an axis tuple the
  op runs as ``whole``;
* ``move``: dask.array's own function, which only moves elements (reshape, transpose, slicing,
  concatenate, flip...); exact. Where dask.array cannot do a case (``np.repeat`` without an
  axis, two fancy indices) the op runs as ``whole``;
* ``select``: dask.array's reduction of an order-free operation (max, min, any, all, argmax);
  exact;
* ``gather``: integer-tensor indexing (``x[idx]``, ``np.take``): the indexed axis in one chunk,
  the NumPy function per block of the indices;
* ``split``: ``np.split`` and its kin as slices; exact;
* ``reduce`` and ``contract``: dask.array's tree reductions and blocked products (sum, mean, var,
  matmul, einsum...). Their floating-point sums are added in another order than NumPy's pairwise
  sum, so results agree within :attr:`DaskBackend.tolerance`, not bit for bit (integer results
  are exact). ``var``/``std`` (and their ``nan`` forms) run NumPy's two passes and float and
  complex products NumPy's product in order (:mod:`capviz.backends.dask.moments`), so an
  overflow gives NumPy's infinity, not dask's NaN; a sum over a chunked axis that is not finite
  from finite operands fails at its node (:mod:`capviz.backends.dask.overflow`);
* ``whole``: the operands gathered into one block (one task on one worker, never this process)
  and the NumPy function run on it (linear algebra, FFT, histograms, polynomials, in-place
  updates, ``x[i, j]`` with several index tensors); exact, but that block must fit one
  worker's memory;
* ``into``: a function called with ``out=`` (``np.add(x, y, out=z)``): the function's own
  rule where ``out=`` changes no bit of the result, else ``whole``;
* ``sized``: an op whose result length depends on the data (``x[mask]``, ``np.nonzero``,
  ``np.unique``, the write back ``y[m] = f(y[m])``): NumPy on the operands gathered into one
  block, like ``whole``, its data-dependent length unknown (NaN) until computed, as dask.array's
  own boolean indexing makes it; later ops take their result's shape from the op's rule run on
  stand-in lengths (:func:`_out`): elementwise ones per block, any other on its operands
  gathered into one block (a rule that rechunks needs known lengths). Exact;
* ``random``: counter-based Philox per block (:func:`random_block`): each block draws the words
  of its own global positions, so uniform and bernoulli tensors equal the NumPy replay bit for
  bit whatever the chunking and wherever the block runs; normal draws agree within a few ulp
  (NumPy's ``log``/``cos``/``sin`` may round an element differently in another array position).

Shapes and dtypes of every result are checked against the op's rule when the expression is
built (nothing computed), so chunk sizes are always known, except the data-dependent lengths
of ``sized`` ops and what follows from them (NaN in dask.array's shapes). Guards
(:mod:`capviz.core.guards`) are computed with the outputs, in the same ``dask.compute``, and
checked before anything is returned.
"""

from __future__ import annotations

import functools
import operator
import uuid
import weakref
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.array.core import elemwise, normalize_chunks
from dask.base import tokenize

from capviz import ops
from capviz.backends.dask import cancellation, in_order, moments, overflow
from capviz.backends.dask.random import random_block
from capviz.backends.registry import Backend, get, register, replay_error, unsupported
from capviz.core.errors import ReplayError, UnsupportedOperationError
from capviz.core.guards import check_all
from capviz.core.ir import Node
from capviz.core.source import format_source
from capviz.ops import traits
from capviz.ops.ufunc_methods import refuse_not_a_fold

_HOST = "capviz-host-"
"""Name prefix of the dask arrays made from host arrays (inputs and constants)."""

_CHUNKS: ContextVar[Any] = ContextVar("capviz_dask_chunks", default="auto")
"""The ``chunks`` option of the replay being built (random ops are chunked with it)."""


# --- the rule table -------------------------------------------------------------------------------


REFUSED: dict[str, str] = {
    "draw": "a draw from a live random generator (a state of the graph), which a lazy "
            "expression cannot advance as eager calls do; replay on NumPy or CuPy",
}
"""Ops this backend refuses at bind time, with the reason (an op added to the table without a
rule is refused until it gets one)."""


def _kind(name: str) -> str | None:
    """The rule kind of the op ``name`` (its trait, :func:`capviz.ops.traits.treatment`), or
    ``None`` when it has none (refused)."""
    if name in ops.UFUNCS:
        return "elementwise"
    if name in ("unpack", "into"):
        # unpack: the program picks a result of a multi-result op itself; into: f(..., out=y),
        # f's own rule where out= changes no bit, else whole
        return name
    return traits.treatment(name)


def _rules() -> dict[str, str]:
    table: dict[str, str] = {}
    for name in ops.OPS:
        kind = _kind(name)
        if kind is not None:
            table[name] = kind
    return table


RULES: dict[str, str] = _rules()
"""How each op of the op table runs on Dask (see the module docstring for the kinds)."""

def rule(op_name: str) -> str:
    """The rule kind of an op (``"elementwise"``, ``"axis"``, ...; see :data:`RULES`).

    Raises:
        UnsupportedOperationError: the op has no rule (or is refused), with the reason.
    """
    kind = RULES.get(op_name)
    if kind is None and op_name in ops.OPS:  # an op registered after this module's import
        kind = _rules().get(op_name)
        if kind is not None:
            RULES[op_name] = kind
    if op_name in REFUSED:
        raise unsupported(get("dask"), op_name, REFUSED[op_name])
    if kind is None:
        raise unsupported(get("dask"), op_name, "no Dask rule is declared for it in "
                          "capviz/ops/traits.py")
    return kind


# --- building blocks ---------------------------------------------------------------------------


_NODE: ContextVar[int | None] = ContextVar("capviz_dask_node", default=None)
"""The index of the node whose step is being built (its tasks' errors name it)."""

_STEPS: ContextVar[Any] = ContextVar("capviz_dask_steps", default=None)
"""The :class:`_Steps` of the program being built."""


class _Steps:
    """Which node each bound call builds: the program's steps run in order, so the next call of
    an op is the next step of that op."""

    def __init__(self, program: Any) -> None:
        self.nodes = [step[-1] for step in program.table if step[1] is not None]
        self.by_index = {node.index: node for node in self.nodes}
        self._k = 0

    def next(self, op_name: str) -> Any:
        nodes, k = self.nodes, self._k
        while k < len(nodes) and nodes[k].op != op_name:
            k += 1
        if k == len(nodes):
            return None
        self._k = k + 1
        return nodes[k]


class BlockError(ReplayError):
    """An op's NumPy function failed in a task: the node's index, NumPy's error, and where the
    node was recorded (picklable, so a cluster's worker sends it back). A replay turns it into
    the :class:`ReplayError` of the node; computing a lazy result (``compute=False``) raises it
    as it is, a ``ReplayError`` naming the node, its op and the user's line."""

    def __init__(self, index: int, error: BaseException, where: str = "") -> None:
        super().__init__(f"replay failed at {where or f'node %{index}'}: "
                         f"{type(error).__name__}: {error}")
        self.index = index
        self.error = error
        self.where = where

    def __reduce__(self) -> tuple:
        return type(self), (self.index, self.error, self.where)


class _Guarded:
    """A task's NumPy function whose error names the node it runs for."""

    def __init__(self, fn: Callable, index: int | None) -> None:
        self.fn = fn
        self.index = index
        self.where = _where(index)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.fn(*args, **kwargs)
        except Exception as err:
            if self.index is None:
                raise
            raise BlockError(self.index, err, self.where) from err


def _where(index: int | None) -> str:
    """Node ``index`` of the program being built, its op and the user's line, as words."""
    steps = _STEPS.get()
    node = None if steps is None or index is None else steps.by_index.get(index)
    if node is None:
        return ""
    return (f"node %{index} ({node.op}), recorded at "
            f"{format_source(node.source) or 'unknown source'}")


def numpy_callable(op: ops.Op) -> Callable:
    """The op's NumPy function, its errors naming the node being built."""
    return _Guarded(op.bind(np), _NODE.get())


def _meta_array(shape: tuple, dtype: Any) -> np.ndarray:
    return np.empty((0,) * len(shape), dtype=dtype)


def _same_shape(a: tuple, b: tuple) -> bool:
    """Shapes equal, an unknown length (NaN) equal to an unknown one."""
    return len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b))


def _check(op: ops.Op, value: Any, shape: tuple, dtype: Any) -> Any:
    """``value`` (a dask array), after checking it has the graph's shape and dtype."""
    if not _same_shape(tuple(value.shape), tuple(shape)) \
            or np.dtype(value.dtype) != np.dtype(dtype):
        raise RuntimeError(
            f"capviz's Dask rule for {op.name!r} made {value.dtype}{list(value.shape)} where "
            f"NumPy makes {np.dtype(dtype)}{list(shape)} (a bug in "
            "capviz/backends/dask/backend.py: please report it)")
    return value


def _is_array(value: Any) -> bool:
    return isinstance(value, da.Array)


def _out(op: ops.Op, args: tuple, params: dict) -> Any:
    """The op's (shape, dtype) rule on the operands (a list of them for a multi-result op).

    An operand of unknown length (NaN, after a ``sized`` op) stands in with two different
    lengths; a result length that moves with them is unknown (NaN) too, and a data-dependent
    length of a ``sized`` op's own rule is unknown."""
    if any(_is_array(a) and _unknown(a.shape) for a in args):
        first = op.meta(_stand_ins(args, 1_000_003), params)
        second = op.meta(_stand_ins(args, 2_000_029), params)
        result = _merge(first, second, op.multi)
    else:
        result = op.meta(args, params)
    if op.multi:
        return [(_known(s), np.dtype(d)) for s, d in result]
    shape, dtype = result
    return _known(shape), np.dtype(dtype)


def _unknown(shape: tuple) -> bool:
    return any(s != s for s in shape)


def _stand_ins(args: tuple, length: int) -> tuple:
    """The operands with each unknown length replaced by ``length`` (+ its axis), as
    zero-byte stand-ins the rules read shapes and dtypes of."""
    out = []
    for a in args:
        if _is_array(a) and _unknown(a.shape):
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


class _Call:
    """``fn(*args, **params)`` with the operands at ``slots`` taken from the call's arguments
    (a block, or a whole array): a picklable task function for any scheduler."""

    def __init__(self, fn: Callable, args: tuple, slots: tuple, params: dict,
                 pick: int | None = None) -> None:
        self.fn = fn
        self.args = args
        self.slots = slots
        self.params = params
        self.pick = pick

    def __call__(self, *arrays: Any) -> Any:
        args = list(self.args)
        for slot, value in zip(self.slots, arrays):
            args[slot] = value
        result = self.fn(*args, **self.params)
        return result if self.pick is None else result[self.pick]


def _split_args(args: tuple) -> tuple[tuple, tuple, list]:
    """(the args with arrays replaced by ``None``, the array slots, the arrays)."""
    slots = tuple(i for i, a in enumerate(args) if _is_array(a))
    template = tuple(None if i in slots else a for i, a in enumerate(args))
    return template, slots, [args[i] for i in slots]


def whole(op: ops.Op, args: tuple, params: dict) -> Any:
    """The op's NumPy function on its operands gathered into one block (one task)."""
    fn = numpy_callable(op)
    out = _out(op, args, params)
    template, slots, arrays = _split_args(args)
    # each operand as the one task of its single block: handing dask.delayed the arrays
    # themselves unpacks their whole graphs at every step, so a chain of whole ops (a loop of
    # writes) took time exponential in its length
    blocks = [_one_block(a) for a in arrays]
    task = dask.delayed(_Call(fn, template, slots, params), pure=True)(*blocks)
    if not op.multi:
        shape, dtype = out
        return da.from_delayed(task, shape, dtype=dtype, meta=_meta_array(shape, dtype))
    return tuple(da.from_delayed(task[k], shape, dtype=dtype, meta=_meta_array(shape, dtype))
                 for k, (shape, dtype) in enumerate(out))


def _one_block(array: Any) -> Any:
    """``array`` as one ``Delayed`` (its blocks concatenated into one task), its graph kept as
    it is (not optimized: optimizing it again at every step would cost as much)."""
    if array.npartitions != 1 and _unknown(array.shape):  # blocks of unknown lengths
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
    out = _out(op, args, params)
    if not op.multi:
        shape, dtype = out
        call = functools.partial(fn, **params) if params else fn
        return _check(op, elemwise(call, *args, dtype=dtype), shape, dtype)
    template, slots, arrays = _split_args(args)
    results = []
    for k, (shape, dtype) in enumerate(out):
        call = _Call(fn, template, slots, params, pick=k)
        results.append(_check(op, _blockwise_all(call, arrays, shape, dtype), shape, dtype))
    return tuple(results)


def _blockwise_all(call: _Call, arrays: list, shape: tuple, dtype: Any) -> Any:
    nd = len(shape)
    pairs: list = []
    for a in arrays:
        pairs += [a, tuple(range(nd - a.ndim, nd))]
    return da.blockwise(call, tuple(range(nd)), *pairs, dtype=dtype,
                        meta=_meta_array(shape, dtype))


def along_axis(op: ops.Op, args: tuple, params: dict) -> Any:
    """The op's NumPy function per block, its axis rechunked into one chunk; ``whole`` when the
    op reads more than one tensor or flattens (``axis=None``). ``np.arctan2.reduce`` and the
    other reductions whose NumPy loop follows the operand's layout are refused by name."""
    if op.name == "ufunc_reduce":
        refuse_not_a_fold("reduce", params["ufunc"], "dask")
    template, slots, arrays = _split_args(args)
    axis = params["axis"] if "axis" in params else traits.AXIS[op.name]
    if len(arrays) != 1 or isinstance(axis, (tuple, list)) or axis is None or not arrays[0].ndim:
        return whole(op, args, params)
    x = arrays[0]
    ax = operator.index(axis) % x.ndim
    shape, dtype = _out(op, args, params)
    x = x.rechunk({ax: -1})
    call = _Call(numpy_callable(op), template, slots, params)
    rest = x.shape[:ax] + x.shape[ax + 1:]
    if len(shape) == x.ndim and shape[:ax] + shape[ax + 1:] == rest:
        chunks = x.chunks[:ax] + ((shape[ax],),) + x.chunks[ax + 1:]
        result = x.map_blocks(call, chunks=chunks, dtype=dtype, meta=_meta_array(shape, dtype))
    elif shape == rest:
        result = x.map_blocks(call, drop_axis=ax, chunks=x.chunks[:ax] + x.chunks[ax + 1:],
                              dtype=dtype, meta=_meta_array(shape, dtype))
    else:  # the result's axes are not the operand's (percentile of several q)
        return whole(op, args, params)
    return _check(op, result, shape, dtype)


_DASK_CANNOT = (NotImplementedError, ValueError, TypeError, IndexError, AttributeError)


def move(op: ops.Op, args: tuple, params: dict) -> Any:
    """dask.array's own function of an op that only moves elements; ``whole`` for a case it
    cannot do or does otherwise (checked by shape and dtype)."""
    if op.name == "ravel" and params.get("order", "C") in ("K", "A"):
        raise unsupported(get("dask"), op.name, f"order={params['order']!r} ravels in memory "
                          "order, and a dask array has none (ravel with order='C' or 'F')")
    out = _out(op, args, params)
    try:
        result = _native(op)(*args, **params)
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
    return all(_is_array(r) and tuple(r.shape) == s and np.dtype(r.dtype) == d
               for r, (s, d) in zip(results, outs))


def select(op: ops.Op, args: tuple, params: dict) -> Any:
    """dask.array's own reduction of an order-free operation (max, argmin, any...); ``whole``
    when an operand is empty, where dask's tree reduction fails on its empty blocks but NumPy
    gives an empty result or raises its own error (both cheap on no data)."""
    if any(_is_array(a) and 0 in a.shape for a in args):
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
    shape, dtype = _out(op, args, params)
    return _check(op, _native(op)(*args, **params), shape, dtype)


def accumulate(op: ops.Op, args: tuple, params: dict) -> Any:
    """dask.array's tree reduction or blocked product, cast to NumPy's dtype where dask adds
    its partial results in a wider one (int32 matmul adds in int64: the cast wraps as NumPy's
    int32 sum does, so integer results stay exact). ``var``/``std`` and complex products run
    as NumPy computes them (:mod:`capviz.backends.dask.moments`); a float sum over several
    chunks is checked where an overflow could depend on the order of addition
    (:mod:`capviz.backends.dask.overflow`), and computed as NumPy does where it could."""
    shape, dtype = _out(op, args, params)
    if in_order.wanted(op.name, args, params, dtype, _NODE.get()):
        host = (in_order.NODES.get() or {}).get(_NODE.get())
        if host is not None:  # an input or constant itself: NumPy's sum in its own layout
            return whole(op, (host_blocks(host, host.shape), *args[1:]), params)
        return _in_order(op, args, params, _operand_orders())
    if op.name in moments.MOMENTS:
        result = moments.moment(op.name, args[0], params)
        if result is None:
            return whole(op, args, params)
        return _check(op, _checked(op, args, params, result), shape, dtype)
    result = _native(op)(*args, **params)
    if np.dtype(result.dtype) != dtype and tuple(result.shape) == shape:
        result = result.astype(dtype)
    if all(_is_array(a) for a in args):
        result = _checked(op, args, params, result)
    return _check(op, result, shape, dtype)


def _checked(op: ops.Op, args: tuple, params: dict, result: Any) -> Any:
    """``result`` with the checks of a sum or product over several chunks: a plain sum's
    rounding and overflow bound per output (:mod:`capviz.backends.dask.cancellation`), the
    others' overflow bound (:mod:`capviz.backends.dask.overflow`)."""
    if cancellation.covers(op.name, args):  # its overflow bound too, per output
        tolerance = get("dask").tolerance_for(result.dtype)
        return cancellation.checked(op.name, args[0], params, result, _guard, tolerance)
    return overflow.checked(op.name, args, params, result, _guard)


def _operand_orders() -> list:
    """The memory order NumPy gives each tensor operand of the node being built (``None``: C
    order); :class:`~capviz.backends.dask.overflow.OrderMatters`, naming the value, where it
    cannot be known (:mod:`capviz.backends.dask.in_order`)."""
    steps, index = _STEPS.get(), _NODE.get()
    node = None if steps is None or index is None else steps.by_index.get(index)
    if node is None:
        return []
    orders, unknown = in_order.operand_orders(node)
    if unknown is not None:
        here = overflow.OrderMatters(f"np.{node.op} adds in NumPy's order here")
        raise in_order.refusal(here, unknown)
    return orders


def _in_order(op: ops.Op, args: tuple, params: dict, orders: list) -> Any:
    """The reduction or product in NumPy's order (:mod:`capviz.backends.dask.in_order`): along
    one axis by the ``axis`` rule, that axis and the ones after it in one chunk; any other
    reduction, and every product, on one block (a product's kernel follows its shapes); on one
    block laid out as NumPy's operand is where that is not C order."""
    if any(order is not None for order in orders):
        arrays = iter(orders)
        return whole(op, tuple(in_order.laid_out(a, next(arrays, None)) if _is_array(a) else a
                               for a in args), params)
    axis = params.get("axis")
    if op.name in traits.CONTRACT or not isinstance(axis, int) or not args[0].ndim:
        return whole(op, args, params)
    return along_axis(op, (in_order.blocks(args[0], axis), *args[1:]), params)


def _guard(fn: Callable) -> Callable:
    """``fn`` as a task whose error names the node being built."""
    return _Guarded(fn, _NODE.get())


_NATIVE_KINDS = frozenset(("select", "reduce", "contract"))
_NUMPY_ONLY_PARAMS = ("initial", "where", "correction")
_OWN_DTYPE_REDUCTION = frozenset(("nanvar", "nanstd"))


def numpy_only(op: ops.Op, args: tuple, params: dict) -> bool:
    """Whether a reduction or product must run as NumPy on one block (``whole``) instead of
    dask.array's own function: a keyword dask's function does not take (``initial=``,
    ``where=`` of the nan-reductions), a 0-d operand (dask's ``dot`` indexes its axes; a
    reduction of one along ``axis=0`` or ``-1`` is of its one element in NumPy, an ``AxisError``
    in dask.array), or ``nanvar``/``nanstd`` with ``dtype=``, which dask computes in another
    way than NumPy (a complex or float16 result off by far more than a rounding: ``inf`` for
    ``0.0``)."""
    if any(params.get(name, True) is not True for name in _NUMPY_ONLY_PARAMS):
        return True
    if op.name in _OWN_DTYPE_REDUCTION and params.get("dtype") is not None:
        return True
    if op.name in traits.CONTRACT:
        return any(_is_array(a) and a.ndim == 0 for a in args)
    return _zero_d_along_axis(args, params)


def _zero_d_along_axis(args: tuple, params: dict) -> bool:
    """Whether a reduction's operand is 0-d and an ``axis=`` is given: NumPy reduces it as its
    one element (``np.nansum(np.array(2.5), axis=0)`` is ``2.5``) or raises its own error."""
    operand = args[0] if args else None
    return _is_array(operand) and operand.ndim == 0 and params.get("axis") is not None


def _native(op: ops.Op) -> Callable:
    if op.name == "linalg.tensordot":
        return ops.OPS["tensordot"].bind(da)
    return op.bind(da)


def gather(op: ops.Op, args: tuple, params: dict) -> Any:
    """``x[idx]`` and ``np.take(x, idx, axis)``: the indexed axis of ``x`` in one chunk, the
    NumPy function per block of ``idx`` (NumPy's own errors for an index out of range)."""
    x, idx = args
    axis = 0 if op.name == "index" else params.get("axis")
    if axis is None or not _is_array(x) or not _is_array(idx):
        return whole(op, args, params)
    shape, dtype = _out(op, args, params)
    ax = operator.index(axis) % x.ndim
    x = x.rechunk({ax: -1})
    x_ind = tuple(f"x{i}" for i in range(x.ndim))
    x_ind = x_ind[:ax] + ("axis",) + x_ind[ax + 1:]
    i_ind = tuple(f"i{j}" for j in range(idx.ndim))
    out_ind = x_ind[:ax] + i_ind + x_ind[ax + 1:]
    call = _Call(numpy_callable(op), (None, None), (0, 1), params)
    result = da.blockwise(call, out_ind, x, x_ind, idx, i_ind, concatenate=True, dtype=dtype,
                          meta=_meta_array(shape, dtype))
    return _check(op, result, shape, dtype)


_SPLIT_AXIS = {"vsplit": 0, "dsplit": 2}


def split(op: ops.Op, args: tuple, params: dict) -> Any:
    """``np.split`` and its kin as slices of the operand (the pieces NumPy would make)."""
    (x,) = args
    out = _out(op, args, params)
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
    return tuple(_check(op, p, s, d) for p, (s, d) in zip(pieces, out))


def into(op: ops.Op, args: tuple, params: dict) -> Any:
    """A function called with ``out=`` of its result's own shape and dtype: the function's own
    result where ``out=`` changes no bit (the op's ``out`` flag), else ``whole``."""
    inner = ops.OPS[params["op"]]
    target = args[0]
    if getattr(target, "ndim", None) == 0:  # a 0-d block may compute as a NumPy scalar, and
        # f(..., out=) needs an array (np.round(x[1, 1], out=x[0, 0, ...]))
        args = (target.map_blocks(np.asarray, dtype=target.dtype), *args[1:])
    if not inner.out:
        return whole(op, args, params)
    shape, dtype = _out(op, args, params)
    value = _LOWER[rule(inner.name)](inner, tuple(args[1:]), dict(params["params"]))
    return _check(op, value, shape, dtype)


def sized(op: ops.Op, args: tuple, params: dict) -> Any:
    """An op whose result length depends on the data: run as :func:`whole` ops are (NumPy on
    the operands gathered into one block, one task); its rule's data-dependent lengths are
    unknown (NaN) to Dask until computed."""
    return whole(op, args, params)


_LOWER: dict[str, Callable] = {
    "elementwise": elementwise, "axis": along_axis, "move": move, "select": select,
    "reduce": accumulate, "contract": accumulate, "gather": gather, "split": split, "whole": whole,
    "into": into, "sized": sized,
}


# --- random ops: each block draws the words of its own global positions ----------------------


def _random_chunks(shape: tuple, dtype: np.dtype) -> tuple:
    """Chunks of a random op's array: the replay's ``chunks`` where it fits the shape, else
    ``"auto"`` (values never depend on the chunking)."""
    chunks = _CHUNKS.get()
    if not isinstance(chunks, Mapping):
        try:
            return normalize_chunks(chunks, shape, dtype=dtype)
        except (ValueError, TypeError):
            pass
    return normalize_chunks("auto", shape, dtype=dtype)


class _RandomBlock:
    """A random op's task: :func:`random_block` told where its block lies (``block_info``)."""

    def __init__(self, fn: Callable, args: tuple) -> None:
        self.fn = fn
        self.args = args

    def __call__(self, block_info: Any = None) -> np.ndarray:
        return self.fn(*self.args, block_info=block_info)


def _random(op: ops.Op) -> Callable:
    def run(seed: int, *, draw: int, shape: Any, dtype: str, **params: Any) -> Any:
        shape = tuple(shape)
        dt = np.dtype(dtype)
        chunks = _random_chunks(shape, dt)
        name = f"capviz-{op.name}-" + tokenize(seed, draw, shape, dt.str,
                                               sorted(params.items()), chunks)
        fn = _RandomBlock(_Guarded(random_block, _NODE.get()),
                          (op.name, seed, draw, shape, dt, params))
        return da.map_blocks(fn, chunks=chunks, dtype=dt, meta=_meta_array(shape, dt),
                             name=name)

    return run


# --- the backend -----------------------------------------------------------------------------


class DaskBackend(Backend):
    """Replay as one lazy ``dask.array`` expression (``backend="dask"``).

    Options of ``graph.replay(..., backend="dask")``:

    * ``chunks``: how NumPy inputs are chunked (anything ``dask.array.from_array`` takes;
      default ``"auto"``); dask-array inputs keep their own chunks; random ops use it where it
      fits their shape;
    * ``compute``: ``True`` (default) computes every output in one ``dask.compute`` and returns
      NumPy arrays; ``False`` returns the dask arrays.

    Not ``exact``: reductions and products of floats (the ``reduce`` and ``contract`` rules)
    add in another order than NumPy, within :attr:`tolerance`; every other op is bit for bit.
    """

    name = "dask"
    extra = "dask"
    mutable = False
    exact = False
    rounds = frozenset(traits.REDUCE | traits.CONTRACT | traits.RANDOM)  # tree sums, products
    tolerance = (1e-5, 1e-5)
    float16_tolerance = (1e-2, 1e-1)
    """float16 reductions and products: sums of up to 1000 unit-scale terms, ``a @ a.T`` and var
    measured within ``rtol=1e-2`` plus ``atol`` 0.071 (each partial sum rounds to float16's 11
    bits in another order than NumPy's); see ``docs/guide/replay.md``."""
    options = frozenset({"chunks", "compute"})
    host_memory = False

    def __init__(self) -> None:
        self._host: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def namespace(self) -> Any:
        return da

    def tolerance_for(self, dtype: Any) -> tuple[float, float]:
        """:attr:`float16_tolerance` for float16, exact for integers and booleans computed
        from exact values (see :meth:`Backend.tolerance_for`), else :attr:`tolerance`."""
        if np.dtype(dtype) == np.float16:
            return self.float16_tolerance
        return super().tolerance_for(dtype)

    def from_host(self, value: Any) -> Any:
        """A host array as a dask array (chunks ``"auto"``; a replay's ``chunks`` option
        rechunks its inputs)."""
        array = np.asarray(value)
        result = host_blocks(array, "auto")
        self._host[result.name] = array
        return result

    def to_host(self, value: Any) -> np.ndarray:
        """A result as a NumPy array (a dask array is computed)."""
        if _is_array(value):
            value = value.compute()
        return np.asarray(value)

    def is_native(self, value: Any) -> bool:
        return _is_array(value)

    def input_problem(self, value: Any) -> str | None:
        """Refuses a dask array with unknown chunk sizes (after boolean indexing, say): its
        shape has ``nan`` where the graph needs a size."""
        if not any(np.isnan(size) for size in value.shape):
            return None
        return (f"a dask array of unknown shape {_shape_text(value.shape)} (some chunk sizes "
                "are unknown, as after boolean indexing): call x.compute_chunk_sizes() on it "
                "first, or pass an array of known shape")

    def bind(self, op: ops.Op) -> Callable:
        """The callable that builds ``op``'s dask array (see :data:`RULES`).

        Raises:
            UnsupportedOperationError: the op has no Dask rule, naming it and why.
        """
        kind = rule(op.name)
        if kind == "random":
            return _random(op)
        if kind == "unpack":
            return op.bind(np)
        lower = _LOWER[kind]
        blockwise = kind in ("elementwise", "sized")

        def build(*args: Any, **params: Any) -> Any:
            steps = _STEPS.get()
            node = steps.next(op.name) if steps is not None else None
            token = _NODE.set(None if node is None else node.index)
            try:
                if not blockwise and any(_is_array(a) and _unknown(a.shape) for a in args):
                    # lengths unknown until computed: NumPy on the gathered operands, as
                    # `whole` does
                    return sized(op, args, params)
                if kind in _NATIVE_KINDS and numpy_only(op, args, params):
                    return whole(op, args, params)
                return lower(op, args, params)
            finally:
                _NODE.reset(token)

        return build

    def execute(self, program: Any, args: list | tuple, seed: int,
                options: Mapping[str, Any]) -> tuple:
        """Build the graph's expression on ``args`` and compute it (``compute=True``: one
        ``dask.compute`` over every output) or return its dask arrays. A sum over several
        chunks that fails its overflow bound (:mod:`capviz.backends.dask.overflow`) makes the
        expression built again with that node computed as NumPy does, and computed again."""
        chunks = options.get("chunks", "auto")
        compute = options.get("compute", True)
        hosts = {name: self._host.get(a.name) if _is_array(a) else a
                 for name, a in zip(program.input_names, args)}
        args = [self._chunked(a, chunks, name, not compute)
                for name, a in zip(program.input_names, args)]
        ordered: dict[int, Any] = {}  # nodes built in NumPy's order (in_order.NODES)
        constants = dict(zip(program.constant_nodes, program.host_constants))
        layouts = in_order.Layouts(hosts, constants)  # read only where a node adds in order
        while True:
            steps = _Steps(program)
            outputs, guard_values = self._build(program, args, seed, chunks, steps, ordered,
                                                layouts)
            try:
                if not compute:
                    if guard_values:  # the guards only, checked before the lazy outputs return
                        self._check_guards(program, steps, guard_values)
                    return tuple(outputs)
                computed = dask.compute(*outputs, *guard_values)
                break
            except BlockError as failed:
                error = failed
                if compute and guard_values and not _order_matters(failed, ordered):
                    try:  # an op after a guard that fails may fail first: the guard's
                        self._check_guards(program, steps, guard_values)  # error says
                    except BlockError as first:
                        error = first
                node = steps.by_index[error.index]
                cause = error.error
                if _order_matters(error, ordered):
                    host = in_order.direct(node, hosts, constants)
                    token = in_order.LAYOUTS.set(layouts)
                    try:
                        source = None if host is not None else in_order.operand_orders(node)[1]
                    finally:
                        in_order.LAYOUTS.reset(token)
                    if source is None:  # built again, that node in NumPy's order
                        ordered[error.index] = host
                        continue
                    cause = in_order.refusal(cause, source)
                raise replay_error(node, [a for a in node.args if isinstance(a, Node)],
                                   cause) from cause
        n = len(outputs)
        check_all(program.guards, [np.asarray(v) for v in computed[n:]])
        return tuple(np.asarray(v) for v in computed[:n])

    @staticmethod
    def _build(program: Any, args: list, seed: int, chunks: Any, steps: _Steps,
               ordered: dict, layouts: in_order.Layouts) -> tuple[Any, list]:
        """The program's outputs as dask arrays (the nodes of ``ordered`` in NumPy's order, in
        the memory ``layouts`` NumPy gives their operands), and the values its guards read."""
        tokens = (_CHUNKS.set(chunks), _STEPS.set(steps), in_order.NODES.set(dict(ordered)),
                  in_order.LAYOUTS.set(layouts))
        guard_values: list = []  # what the guards read: computed with the outputs
        try:
            outputs = program(args, seed, None, guard_values)
        finally:
            _CHUNKS.reset(tokens[0])
            _STEPS.reset(tokens[1])
            in_order.NODES.reset(tokens[2])
            in_order.LAYOUTS.reset(tokens[3])
        return outputs, guard_values

    @staticmethod
    def _check_guards(program: Any, steps: Any, guard_values: list) -> None:
        """Compute the values the guards read (one ``dask.compute``) and check them."""
        values = dask.compute(*guard_values)
        check_all(program.guards, [np.asarray(v) for v in values])

    def _chunked(self, value: Any, chunks: Any, input_name: str, copy: bool) -> Any:
        """An input made by :meth:`from_host`, chunked with the replay's ``chunks`` (and
        copied when the replay returns lazy arrays, which must not see later writes to it).

        Raises:
            ValueError: ``chunks`` does not fit the input's shape.
        """
        host = self._host.get(value.name) if _is_array(value) else None
        if host is None:
            return value
        try:
            return host_blocks(host.copy() if copy else host, chunks)
        except (ValueError, TypeError) as err:
            raise ValueError(
                f"chunks={chunks!r} does not fit input {input_name!r} of shape "
                f"{host.shape}: {err}. Give chunks that fit every NumPy input (an int, "
                "'auto', a byte size such as '64MiB'), or pass that input as a dask array "
                "with its own chunks") from None


def _order_matters(failed: BlockError, ordered: dict) -> bool:
    """Whether a task failed the overflow bound at a node not yet built in NumPy's order."""
    return isinstance(failed.error, overflow.OrderMatters) and failed.index not in ordered


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join("?" if np.isnan(size) else str(size) for size in shape) + ")"


def host_blocks(array: np.ndarray, chunks: Any) -> Any:
    """``array`` as a dask array whose blocks are views of it (``da.from_array`` copies the
    whole array first, a second copy of every input; a memory-mapped array would be read)."""
    chunks = normalize_chunks(chunks, array.shape, dtype=array.dtype)
    name = _HOST + uuid.uuid4().hex  # no hash of the data (tokenize reads every byte)
    numblocks = tuple(len(c) for c in chunks)
    graph = {}
    for index, where in zip(np.ndindex(*numblocks), da.core.slices_from_chunks(chunks)):
        graph[(name, *index)] = array[where] if where else array[...]
    return da.Array(graph, name, chunks, dtype=array.dtype,
                    meta=_meta_array(array.shape, array.dtype))


register(DaskBackend())
