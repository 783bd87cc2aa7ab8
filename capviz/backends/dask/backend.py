"""The Dask backend: a graph replayed as one lazy ``dask.array`` expression.

``graph.replay(inputs, backend="dask", chunks="auto", compute=True)`` runs the compiled step
table (:class:`capviz.replay.program.Program`) once with this backend's callables, which build
dask arrays instead of computing: the result is one expression for the whole graph, run by
whatever scheduler is active (the threaded one, or a ``dask.distributed.Client`` the user made)
with one ``dask.compute`` over every output, so work the outputs share runs once.
``compute=False`` returns the dask arrays themselves.

Inputs are NumPy arrays (chunked with ``chunks``) or dask arrays, kept as they are (a Zarr
array larger than memory stays on disk until its blocks are read).

Every op of the op table has a declared :data:`~capviz.backends.dask.rules.RULES` entry saying
how it runs; no op gathers a whole array into this process. The kinds:

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
  are exact); where a sum's or a variance's order can take it beyond the tolerance (it cancels,
  NumPy adds it row after row, a variance tiny against its values), it is checked and computed
  again in NumPy's order (:mod:`capviz.backends.dask.cancellation`,
  :mod:`capviz.backends.dask.variance`). ``var``/``std`` (and their ``nan`` forms) run NumPy's
  two passes and float and complex products NumPy's product in order
  (:mod:`capviz.backends.dask.moments`), so an overflow gives NumPy's infinity, not dask's NaN;
  a sum over a chunked axis that is not finite from finite operands fails at its node
  (:mod:`capviz.backends.dask.overflow`);
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
  stand-in lengths (:func:`~capviz.backends.dask.shapes.expected`): elementwise ones per block,
  any other on its operands gathered into one block (a rule that rechunks needs known lengths).
  Exact;
* ``random``: counter-based Philox per block (:func:`random_block`): each block draws the words
  of its own global positions, so uniform and bernoulli tensors equal the NumPy replay bit for
  bit whatever the chunking and wherever the block runs; normal draws agree within a few ulp
  (NumPy's ``log``/``cos``/``sin`` may round an element differently in another array position).

Shapes and dtypes of every result are checked against the op's rule when the expression is
built (nothing computed), so chunk sizes are always known, except the data-dependent lengths
of ``sized`` ops and what follows from them (NaN in dask.array's shapes). Guards
(:mod:`capviz.core.guards`) are computed with the outputs, in the same ``dask.compute``, and
checked before anything is returned.

The package, by concern: this module (the backend: binding, building and computing a replay),
:mod:`~capviz.backends.dask.rules` (the rule table and the function of each kind),
:mod:`~capviz.backends.dask.kinds` (the kinds that run on blocks, and the host arrays' blocks),
:mod:`~capviz.backends.dask.reductions` (``reduce`` and ``contract``),
:mod:`~capviz.backends.dask.shapes` (each result's shape and dtype, checked),
:mod:`~capviz.backends.dask.tasks` (the node being built; task errors that name it),
:mod:`~capviz.backends.dask.draws` (random ops), and the modules that make sums and products
NumPy's: ``moments``, ``overflow``, ``cancellation``, ``variance``, ``in_order``,
``contractions``, ``shared``, ``pairwise``, ``casts``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any

import dask
import dask.array as da
import numpy as np

from capviz import ops
from capviz.backends.dask import before_cancel, casts, in_order, overflow, product_checks
from capviz.backends.dask.draws import random_op
from capviz.backends.dask.kinds import host_blocks, sized, whole
from capviz.backends.dask.reductions import NATIVE_KINDS, numpy_only
from capviz.backends.dask.rules import LOWER, rule
from capviz.backends.dask.shapes import is_array, unknown_shape
from capviz.backends.dask.tasks import CHUNKS, NODE, STEPS, BlockError, Steps
from capviz.backends.registry import Backend, register, replay_error
from capviz.core.guards import check_all
from capviz.core.ir import Node
from capviz.ops import traits


class DaskBackend(Backend):
    """Replay as one lazy ``dask.array`` expression (``backend="dask"``).

    Options of ``graph.replay(..., backend="dask")``:

    * ``chunks``: how NumPy inputs are chunked (anything ``dask.array.from_array`` takes;
      default ``"auto"``); dask-array inputs keep their own chunks; random ops use it where it
      fits their shape;
    * ``compute``: ``True`` (default) computes every output in one ``dask.compute`` and returns
      NumPy arrays; ``False`` returns the dask arrays;
    * ``arithmetic``: ``"numpy"`` (default): a product whose operands do not fit dask's
      ``array.chunk-size`` and whose value a consumer that can cancel reads is tested there at
      run time, and read by an op no bound is carried through is refused
      (:mod:`capviz.backends.dask.product_checks`); ``"dask"`` (the lead's ruling 37 08:00):
      such products keep dask.array's order of summation over blocks with no test, held by
      ``compare`` to their declared bound (:meth:`own_arithmetic` names them).

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
    options = frozenset({"chunks", "compute", "arithmetic"})
    own_arithmetic_option = "arithmetic='dask'"
    host_memory = False

    def __init__(self) -> None:
        self._host: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def namespace(self) -> Any:
        return da

    def own_arithmetic(self, node: Node) -> str | None:
        """A product of linear algebra whose operands do not fit dask's ``array.chunk-size``:
        dask.array adds its blocks' partial products in its own order, tested where a consumer
        cancels them unless ``arithmetic='dask'`` (:mod:`capviz.backends.dask.product_checks`)."""
        if not product_checks.blocked(node):
            return None
        return ("dask.array adds the partial products of its blocks in its own order (its "
                f"operands, {product_checks.operand_text(node)}, do not fit dask's "
                "array.chunk-size), within the declared bound 2 gamma_k |A| @ |B| of NumPy's")

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
        if is_array(value):
            value = value.compute()
        return np.asarray(value)

    def is_native(self, value: Any) -> bool:
        return is_array(value)

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
            return random_op(op)
        if kind == "unpack":
            return op.bind(np)

        def build(*args: Any, **params: Any) -> Any:
            steps = STEPS.get()
            node = steps.next(op.name) if steps is not None else None
            token = NODE.set(None if node is None else node.index)
            try:
                result = _lowered(op, kind, node, args, params)
                plan = product_checks.PLAN.get()
                if plan is not None and node is not None:  # products tested where consumed
                    if node.index in plan.products:
                        product_checks.record(node, args, params)
                    if node.index in plan.consumers:
                        result = product_checks.checked(node, result, args)
                    if node.index in plan.tails:
                        result = product_checks.tail_checked(node, result)
                return result
            finally:
                NODE.reset(token)

        return build

    def execute(self, program: Any, args: list | tuple, seed: int,
                options: Mapping[str, Any]) -> tuple:
        """Build the graph's expression on ``args`` and compute it (``compute=True``: one
        ``dask.compute`` over every output) or return its dask arrays. A sum over several
        chunks that fails its overflow bound (:mod:`capviz.backends.dask.overflow`) makes the
        expression built again with that node computed as NumPy does, and computed again."""
        chunks = options.get("chunks", "auto")
        compute = options.get("compute", True)
        arithmetic = options.get("arithmetic", "numpy")
        if arithmetic not in ("numpy", "dask"):
            raise ValueError(f"arithmetic={arithmetic!r}: the dask backend takes "
                             "arithmetic='numpy' (the default) or 'dask'")
        hosts = {name: self._host.get(a.name) if is_array(a) else a
                 for name, a in zip(program.input_names, args)}
        args = [self._chunked(a, chunks, name, not compute)
                for name, a in zip(program.input_names, args)]
        ordered: dict[int, Any] = {}  # nodes built in NumPy's order (in_order.NODES)
        constants = dict(zip(program.constant_nodes, program.host_constants))
        layouts = in_order.Layouts(hosts, constants)  # read only where a node adds in order
        nodes = Steps(program).nodes
        returned = {n.index for n in program.output_nodes} | {
            a.index for g in program.guards for a in g.args if isinstance(a, Node)}
        feeding, plan = product_checks.split(before_cancel.feeding(nodes), nodes, returned,
                                             arithmetic == "dask")
        unchecked = None if arithmetic == "dask" \
            else product_checks.unchecked(nodes, feeding, plan)
        if unchecked is not None:  # a larger product read where no bound is carried
            cause = product_checks.unchecked_error(*unchecked)
            reader = unchecked[1]
            raise replay_error(reader, [a for a in reader.args if isinstance(a, Node)],
                               cause) from cause
        while True:
            steps = Steps(program)
            outputs, guard_values = self._build(program, args, seed, chunks, steps, ordered,
                                                layouts, feeding, plan)
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
                        source = None if host is not None \
                            else in_order.operand_orders(node, restrided=True)[1]
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
    def _build(program: Any, args: list, seed: int, chunks: Any, steps: Steps,
               ordered: dict, layouts: in_order.Layouts,
               feeding: dict, plan: product_checks.Plan) -> tuple[Any, list]:
        """The program's outputs as dask arrays (the nodes of ``ordered``, and the sums of
        ``feeding`` that dask.array would add otherwise, in NumPy's order, in the memory
        ``layouts`` NumPy gives their operands), and the values its guards read."""
        tokens = (CHUNKS.set(chunks), STEPS.set(steps), in_order.NODES.set(dict(ordered)),
                  in_order.LAYOUTS.set(layouts), before_cancel.FEEDING.set(feeding),
                  product_checks.PLAN.set(plan), product_checks.BOUNDS.set({}),
                  before_cancel.RELATIVE.set(before_cancel.relative(steps.nodes)))
        guard_values: list = []  # what the guards read: computed with the outputs
        try:
            outputs = program(args, seed, None, guard_values)
        finally:
            CHUNKS.reset(tokens[0])
            STEPS.reset(tokens[1])
            in_order.NODES.reset(tokens[2])
            in_order.LAYOUTS.reset(tokens[3])
            before_cancel.FEEDING.reset(tokens[4])
            product_checks.PLAN.reset(tokens[5])
            product_checks.BOUNDS.reset(tokens[6])
            before_cancel.RELATIVE.reset(tokens[7])
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
        host = self._host.get(value.name) if is_array(value) else None
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


def _lowered(op: ops.Op, kind: str, node: Node | None, args: tuple, params: dict) -> Any:
    """The dask array of ``op`` of ``args`` by its rule ``kind`` (node ``node`` of the
    program being built)."""
    if kind not in ("elementwise", "sized") \
            and any(is_array(a) and unknown_shape(a.shape) for a in args):
        # lengths unknown until computed: NumPy on the gathered operands, as `whole` does
        return sized(op, args, params)
    if kind in NATIVE_KINDS and numpy_only(op, args, params):
        return whole(op, args, params)
    if kind == "elementwise" and casts.covers(op.name, args, params) \
            and is_array(args[0]):  # a float cast to an integer type
        if node is not None and node.index in (in_order.NODES.get() or ()):
            return casts.in_numpy_order(op, args, params)
        return casts.checked(op, args, params)
    return LOWER[kind](op, args, params)


def _order_matters(failed: BlockError, ordered: dict) -> bool:
    """Whether a task failed the overflow bound at a node not yet built in NumPy's order."""
    return isinstance(failed.error, overflow.OrderMatters) and failed.index not in ordered


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join("?" if np.isnan(size) else str(size) for size in shape) + ")"


register(DaskBackend())
