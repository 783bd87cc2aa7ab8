"""Products too large for one block whose value a consumer that can cancel reads: checked at run
time against the product's declared bound, at the consumer (the lead's ruling 37 07:30, Dask).

A float or complex product of linear algebra whose value reaches an add, a subtract, ``np.diff``
... (:func:`capviz.backends.cancelling.reaches`) is computed as NumPy does, on one block
(:mod:`capviz.backends.dask.before_cancel`), where its operands fit dask's
``array.chunk-size``. A larger one keeps dask.array's blocks (one block of it would not fit a
worker: the stop-36 final CI's MemoryError), whose order of addition is not NumPy's BLAS's:
its values are within the declared bound ``2 gamma_k (|A| @ |B|)`` (+ a floor) of NumPy's
(:mod:`capviz.backends.contraction_bound`), and a consumer that cancels them can leave that
bound beyond the tolerance of its result. So the bound is carried to the consumer and tested
there, on the values computed: where ``E + eps |r| > atol + rtol |r|`` for an element ``r`` of
the consumer's result (``E`` the carried bound, ``eps`` one rounding of ``r``), the replay
fails at the consumer with :class:`ProductCancels`, naming the product, the user's line and the
fixes (``arithmetic='dask'``, the opt-in of the lead's ruling 37 08:00, which keeps
dask.array's order with no test, ``backend='numpy'``, or a dask ``array.chunk-size`` the
operands fit, which computes the product as NumPy does). A variance (``np.var``, ``np.std`` of
real values: the lead's ruling 38 10:50) is tested by its own rule (:class:`.SpreadWithin`):
the carried bound ``E`` on each of its ``n`` terms moves the standard deviation by at most
``sqrt(n / (n - ddof)) E``, and each result's roundings in any order of addition are added.

**The bound** is the cheap one (the ruling's rank-1 test): for each output,
``(|A| @ |B|)_ij <= ||a_i|| ||b_j||`` (Cauchy-Schwarz over the contracted axes, every summed
label in both operands once), so ``E_P = 2 gamma_k max_i ||a_i|| max_j ||b_j|| + floor`` bounds
every output of the product: one pass over each operand (their finite magnitudes' squares
summed along the contracted axes, in float64), a number per product. No second product of the
magnitudes is computed: where the rank-1 bound fails the replay fails (sound; a refusal, never
a silent difference).

**Carried** through a path of ops each of which moves every value by at most what its operand
moved (moves, casts to a float type as wide, negation, joins, ``np.where`` picks, ``np.abs``,
and of real values clamps, maxima, sorts; complex values compare by their real parts first, so
a pick of them can jump) and scalings by a number (the bound times its magnitude, and one more
bound for the rounding: a product's rounding ``ulp(|c v|)`` is within ``2 u |c| |v| <= |c|
E_P``): :func:`~capviz.backends.dask.product_scales.step`. At the consumer
(:data:`~capviz.backends.dask.product_scales.CONSUMERS`), an add or subtract moves by the sum
of its operands' bounds, ``np.diff`` of order ``n`` by ``2**n`` times it, ``np.ediff1d`` and
``np.ptp`` (of real values) by twice it, ``np.gradient`` (of real values, a number per axis or
none as spacings, ``edge_order`` 1 or 2: each of its results) by
:func:`~capviz.backends.dask.product_scales.spacing`'s rule, a variance (``np.nanvar``,
``np.nanstd`` too, with each output's own count) by :class:`.SpreadWithin`'s rule, a
covariance (``m`` and an optional ``y``, no weights) by :class:`.CovWithin`'s. The product, and
every value on those paths, must reach nothing else (no other op, no output but the product
itself, held to its bound by ``compare``, no guard), and each consumer's result, tested against
its own tolerance, must be read only through ops that keep its relative error
(:mod:`capviz.backends.dask.kept_error`), or reach the next product tested here through ops
that carry a bound (an MLP's ``np.maximum(x @ W1 + b1, 0) @ W2 + b2``: the result's bound is
added to that product's, :mod:`capviz.backends.dask.chained`, stop 40): else it is gathered, as
before. Every other path or consumer (``np.cov`` with weights, ``np.corrcoef``,
``np.gradient`` with coordinates, a product by a tensor, another contraction on the path, a
mean of the product: each rounds in its own order on other values) keeps the gather on one
block, as before.

**float32 layers stay refused** (the lead's ruling 39 14:10 asked for a run-time check where one
is sound). NumPy's product is its BLAS's order, which no one states, so a sound test must hold
every order, and an order's rounding reaches ``gamma_k (|A| @ |B|)``, at least ``k u |r|`` where
the terms do not cancel at all (``|A| @ |B| = |r|``). For float32 (``u = 2**-24``) that is beyond
the tolerance's ``rtol = 1e-5`` of the result itself from ``k = 168`` terms, whatever the test,
and the bias add that follows cannot shrink it: no sound test passes ``x @ W + b`` of a
768-wide float32 layer, which is refused by default, as before, with ``arithmetic='dask'`` (its
declared bound held by ``compare``) named first (a layer of fewer terms passes where its rank-1
bound is within the tolerance).

**Read by any other op.** A larger product that reaches no consumer keeps dask.array's blocks,
declared (47ad594), where what reads it keeps the declared bound: an output, moves, magnitudes, real
picks and clamps, scalings by numbers, a sum of it (a larger-than-memory ``h @ w`` read by
``np.abs(y).max(1)`` and ``y.sum(0)``), and monotone functions of real values (:data:`MONOTONE`:
``np.tanh(x @ w)``, which carry the bound's image). Any other reader (``np.convolve(x @ ones, [1,
-1])``, ``np.cos``, ``np.floor``, ``np.argsort``, ``d @ (x @ ones)``) can take the product's
rounding beyond the tolerance with no check (the hostile review 9's finding 14: 0.25 off NumPy's
near 16,000 after a3c3266, silently): the replay fails when it is built, at that op, with the same
fixes (:func:`unchecked`).
"""

from __future__ import annotations

import dataclasses
import math
from contextvars import ContextVar
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.utils import format_bytes, parse_bytes

from capviz.backends import cancelling, contraction_bound
from capviz.backends.dask import chained, contractions, magnitudes, product_scales, tails
from capviz.backends.dask.product_tests import (
    CorrWithin,
    CovWithin,
    ProductCancels,
    SpreadWithin,
    Within,
    fixes,
    weight_terms,
    weights_bound,
)
from capviz.backends.dask.shapes import is_array
from capviz.backends.dask.tasks import guard
from capviz.backends.registry import get
from capviz.core.ir import Node
from capviz.core.source import format_source
from capviz.ops.products import einsum_terms

PAIRED = frozenset(("matmul", "dot", "vdot", "tensordot", "linalg.tensordot", "einsum"))
"""The products whose rank-1 bound is taken (two operands, each summed label in both once)."""

@dataclasses.dataclass(frozen=True)
class Plan:
    """The replay's products tested at their consumers instead of gathered.

    Attributes:
        products: product node index -> the node.
        consumers: consumer node index -> ``(product index, scale)`` for each path.
        chains: product node index -> ``(consumer index, operand position, scale)`` for each
            consumer whose result it reads (:mod:`capviz.backends.dask.chained`).
        tails: the last op's node index -> the squared loss or softmax of a consumer's result
            it ends (:mod:`capviz.backends.dask.tails`).
    """

    products: dict[int, Node]
    consumers: dict[int, tuple[tuple[int, float], ...]]
    chains: dict[int, tuple[tuple[int, int, float], ...]] = dataclasses.field(
        default_factory=dict)
    tails: dict[int, tails.Tail] = dataclasses.field(default_factory=dict)

    @property
    def carries(self) -> frozenset[int]:
        """The consumers whose result's bound a product or a tail reads."""
        return frozenset(c for each in self.chains.values() for c, _, _ in each) \
            | frozenset(t.consumer for t in self.tails.values())


PLAN: ContextVar[Plan | None] = ContextVar("capviz_dask_product_plan", default=None)
BOUNDS: ContextVar[dict | None] = ContextVar("capviz_dask_product_bounds", default=None)
"""The plan of the replay being built, and its products' bounds (0-d dask arrays) by index."""


def fits_one_block(node: Node) -> bool:
    """Whether the operands of contraction ``node`` hold no more bytes than dask's
    ``array.chunk-size`` (128 MiB unless configured): one block of them fits where dask's own
    blocks do. An operand whose size is a symbol of the capture counts as fitting."""
    held = operand_bytes(node)
    return held is None or held <= parse_bytes(dask.config.get("array.chunk-size"))


def blocked(node: Node) -> bool:
    """Whether ``node`` is a float or complex product dask.array computes in its blocks whose
    operands do not fit ``array.chunk-size`` (its declared bound tested at run time, or its
    arithmetic taken with ``arithmetic='dask'``)."""
    return node.kind == "op" and node.op in PAIRED and len(_tensors(node)) >= 2 \
        and node.dtype is not None and np.dtype(node.dtype).kind in "fc" \
        and not fits_one_block(node)


def operand_text(node: Node) -> str:
    """The bytes of ``node``'s operands, in words."""
    return format_bytes(operand_bytes(node) or 0)


def operand_bytes(node: Node) -> int | None:
    """The bytes node ``node``'s operands hold (``None`` where a size is a symbol)."""
    held = 0
    for a in node.args:
        if not isinstance(a, Node) or a.shape is None or a.dtype is None:
            continue
        if not all(isinstance(d, int) for d in a.shape):
            return None
        held += int(np.prod(a.shape, dtype=np.int64)) * np.dtype(a.dtype).itemsize
    return held


def split(found: dict[int, tuple], nodes: list[Node], returned: set[int],
          own: bool = False) -> tuple[dict[int, tuple], Plan]:
    """``found`` (:func:`capviz.backends.dask.before_cancel.feeding` of the op ``nodes``)
    without the products larger than one block whose every path to a consumer is tested here,
    whose value reaches nothing else (:func:`_contained`; ``returned``: the nodes a replay
    returns or a guard reads, where the product itself may be one, its bound held by
    ``compare``) and whose consumers' results are read only through ops that keep their
    relative error (:mod:`capviz.backends.dask.kept_error`: a consumer's result is tested
    against its own tolerance only, which a later subtract can take it beyond: ``np.diff(x @
    w + b)`` of float64 rows near 1e8 was 3e-5 off NumPy's 15, silently, before stop 39) or
    carry its bound into a later product tested here (:func:`capviz.backends.dask.chained.
    into_products`: an MLP's next layer), and the plan that tests them. ``own``
    (``arithmetic='dask'``): without every product larger than one block, and no plan:
    dask.array's order, untested."""
    kept = dict(found)
    products: dict[int, Node] = {}
    consumers: dict[int, list] = {}
    if own:
        for index, each in found.items():
            if each and blocked(each[0].sum):
                del kept[index]
        return kept, Plan(products, {})
    users = users_of(nodes)
    order = {node.index: k for k, node in enumerate(nodes)}
    chains: dict[int, dict[tuple[int, int], float]] = {}
    ends: dict[int, tails.Tail] = {}
    for index in sorted(found, key=lambda i: order.get(i, -1), reverse=True):  # later first
        each = found[index]
        if not each or not _paired(each[0].sum) or fits_one_block(each[0].sum):
            continue
        scales = [product_scales.scale(reach) for reach in each]
        if any(s is None for s in scales) or not _contained(each, users, returned):
            continue
        reads = [chained.into_products(reach.consumer, users, products,
                                       product_scales.step, returned) for reach in each]
        found_tails = [tails.match(reach.consumer, users, returned)
                       if read is None and reach.consumer.op in chained.CHAINED else None
                       for reach, read in zip(each, reads)]
        if any(read is None and tail is None for read, tail in zip(reads, found_tails)):
            continue
        ends.update((tail.last, tail) for tail in found_tails if tail is not None)
        del kept[index]
        products[index] = each[0].sum
        for reach, scale, read in zip(each, scales, reads):
            consumers.setdefault(reach.consumer.index, []).append((index, scale))
            for product, position, factor in read or ():
                into = chains.setdefault(product, {})
                key = (reach.consumer.index, position)
                into[key] = max(into.get(key, 0.0), factor)
    return kept, Plan(products, {k: tuple(v) for k, v in consumers.items()},
                      {p: tuple((c, k, s) for (c, k), s in v.items())
                       for p, v in chains.items()}, ends)


def users_of(nodes: list[Node]) -> dict[int, list[Node]]:
    """The op nodes among ``nodes`` that read each node, by its index."""
    users: dict[int, list[Node]] = {}
    for node in nodes:
        if node.kind == "op":
            for a in node.args:
                if isinstance(a, Node):
                    users.setdefault(a.index, []).append(node)
    return users


def _contained(each: tuple, users: dict[int, list[Node]], returned: set[int]) -> bool:
    """Whether the product of reaches ``each`` and the values on their paths are read by
    nothing but those paths and their consumers, and no path value is returned or guarded:
    a product kept in dask.array's blocks must not reach an op no bound is carried to
    (``np.convolve`` of it beside a subtract was NumPy's bits on one block before)."""
    on_path = {n.index for reach in each for n in reach.path}
    ends = {reach.consumer.index for reach in each}
    if on_path & returned:
        return False
    for value in (each[0].sum.index, *on_path):
        for user in users.get(value, ()):
            if user.index not in on_path and user.index not in ends:
                return False
    return True


_DECLARED_SUMS = frozenset(("sum", "mean", "nansum", "nanmean"))
"""Sums of a product's values, which add more terms to its contraction: declared as it is."""

MONOTONE = frozenset(("tanh", "arctan", "arcsinh", "arctanh", "arcsin", "sinh", "exp", "expm1",
                      "exp2", "log", "log1p", "log2", "log10", "sqrt", "cbrt"))
"""Elementwise functions monotone on the reals: of a real value known within its declared
bound, the image of that interval (the lead's ruling 37 08:00: monotone ops carry their
images), declared on as a magnitude is."""


def unchecked(nodes: list[Node], found: dict[int, tuple],
              plan: Plan) -> tuple[Node, Node] | None:
    """A product of op ``nodes`` larger than one block that dask.array computes in its blocks
    (reaching no consumer: not in ``found``, nor in ``plan``) and the first op that reads its
    value (through ops that keep it: :func:`_keeps`) where its declared bound goes to no check
    and that op can take the product's rounding beyond the tolerance (``np.convolve(x @ ones,
    [1, -1])``, ``np.cos(x @ ones)``, ``np.floor``, ``np.argsort``: the hostile review 9's
    finding 14), or ``None``. Outputs, moves, magnitudes, real picks and clamps, scalings by
    numbers and sums of it keep the declared bound, as since 47ad594 (a larger-than-memory
    ``h @ w`` read by ``np.abs(y).max(1)`` and ``y.sum(0)`` replays in its blocks)."""
    users = users_of(nodes)
    for node in nodes:
        if node.index in found or node.index in plan.products or node.index not in users \
                or not blocked(node):
            continue
        stack, seen = [node], {node.index}
        while stack:
            value = stack.pop()
            for user in users.get(value.index, ()):
                keeps = _keeps(value, user)
                if keeps is None:
                    return node, user
                if keeps and user.index not in seen:
                    seen.add(user.index)
                    stack.append(user)
    return None


def _keeps(value: Node, user: Node) -> bool | None:
    """Whether ``user`` passes ``value`` on keeping its declared bound (``True``), stops it
    (``False``: its shape, its type), or can take it beyond the tolerance (``None``)."""
    if user.op in cancelling.STOPS:
        return False
    if user.dtype is None or np.dtype(user.dtype).kind not in "fc" or user.shape is None:
        return None
    if user.op in _DECLARED_SUMS:
        return True if user.args and user.args[0] is value else None
    if user.op in MONOTONE:
        return True if product_scales.real(value) and product_scales.real(user) \
            and len(user.args) == 1 else None
    if user.op in cancelling.MOVES and user.op != "astype":
        return True if user.args and user.args[0] is value else None
    step = product_scales.step(value, user)
    return None if step is None else True


def unchecked_error(product: Node, reader: Node) -> ProductCancels:
    """The error of :func:`unchecked`'s pair."""
    named, held, need = _message_parts([product])
    return ProductCancels(
        f"np.{reader.op} reads the value of {named}, which dask.array adds in its own blocks "
        f"since its operands ({held}) do not fit dask's array.chunk-size: no check carries its "
        f"declared rounding (2 gamma_k |A| @ |B|) through np.{reader.op}, which can take it "
        f"beyond the tolerance; {fixes(need)}")


def _tensors(node: Node) -> list[Node]:
    return [a for a in node.args if isinstance(a, Node)]


def _paired(node: Node) -> bool:
    """Whether product ``node`` takes the rank-1 bound: two operands of known shape, of which
    every summed label is in both, once each."""
    if node.op not in PAIRED or node.dtype is None or np.dtype(node.dtype).kind not in "fc":
        return False
    tensors = _tensors(node)
    if len(tensors) != 2 or len(node.args) != 2 or any(
            t.shape is None or not all(isinstance(d, int) for d in t.shape) for t in tensors):
        return False
    if node.op in ("matmul", "dot"):
        return all(len(t.shape) >= 1 for t in tensors)
    if node.op != "einsum":
        return True
    try:
        labels, out, _ = einsum_terms(node.params["subscripts"], [t.shape for t in tensors])
    except (KeyError, ValueError):
        return False
    summed = set("".join(labels)) - set(out)
    return all(term.count(label) == 1 for label in summed for term in labels)


def record(node: Node, args: tuple, params: dict) -> None:
    """Product ``node`` of ``args`` (dask arrays) being built: its bound (:func:`bound`) kept
    for its consumers."""
    bounds, plan = BOUNDS.get(), PLAN.get()
    if bounds is not None:
        operands = [a if is_array(a) else da.asarray(a) for a in args]
        found = bound(node.op, operands, params, np.dtype(node.dtype))
        errors: list = [None, None]  # the consumers' results it reads (chained)
        for consumer, position, scale in (plan.chains.get(node.index, ()) if plan else ()):
            part = bounds.get(("result", consumer), np.inf) * scale  # none: no test passes
            errors[position] = part if errors[position] is None else errors[position] + part
        if any(e is not None for e in errors):
            found = found + chained.added(node.op, operands, params, np.dtype(node.dtype),
                                          errors)
            found = da.where(da.isnan(found), np.inf, found)
        bounds[node.index] = found


def bound(name: str, operands: list, params: dict, dtype: np.dtype) -> Any:
    """The rank-1 bound of the module docstring on every output of product ``name`` of
    ``operands`` (two dask arrays), a result of ``dtype``: a 0-d float64 dask array."""
    axes, count = contractions.contracted(name, tuple(operands), params)
    real = np.dtype(np.finfo(dtype).dtype)
    k = max(int(count), 1)
    g = math.sqrt(2) * contraction_bound.gamma(k + 2, real) if dtype.kind == "c" \
        else contraction_bound.gamma(k, real)
    floor = 2 * k * 2 * float(np.finfo(real).tiny)
    largest = [magnitudes.largest_norm(x, tuple(a)) for x, a in zip(operands, axes)]
    slack = 1 + contraction_bound.gamma(k + 2, np.float64)  # the float64 sums' own roundings
    return 2 * g * largest[0] * largest[1] * slack + floor


def checked(node: Node, result: Any, args: tuple = ()) -> Any:
    """Consumer ``node``'s ``result`` (a dask array) of ``args``, failing at the node where
    the carried bound of the products it reads (:data:`PLAN`) is beyond its tolerance."""
    plan, bounds = PLAN.get(), BOUNDS.get()
    if plan is None or bounds is None:
        return result
    if isinstance(result, (tuple, list)):  # np.gradient of several axes: each result tested
        return type(result)(checked(node, each, args) for each in result)
    if not is_array(result):
        return result
    parts = [bounds[index] * scale for index, scale in plan.consumers.get(node.index, ())
             if index in bounds]
    if not parts:
        return result
    carried = sum(parts[1:], parts[0])
    rtol, atol = get("dask").tolerance_for(result.dtype)
    products = [plan.products[index] for index, _ in plan.consumers[node.index]]
    sources = [plan.products[i] for p in products for c, _, _ in plan.chains.get(p.index, ())
               for i, _ in plan.consumers.get(c, ()) if i in plan.products]
    eps = float(np.finfo(np.dtype(result.dtype)).eps)
    index = tuple(range(result.ndim))
    if node.op in product_scales.SPREADS:
        operand = args[0]
        axis = node.params.get("axis")
        count = product_scales.count(tuple(operand.shape), axis)
        spread = SpreadWithin(node.op, _message_parts(products, sources), rtol, atol, eps,
                               int(count or 1), float(node.params.get("ddof", 0)))
        extra: tuple = ()
        if node.op.startswith("nan"):  # each output's own count of terms
            counts = (~da.isnan(operand)).sum(axis=axis, keepdims=bool(
                node.params.get("keepdims", False)), dtype=np.float64)
            extra = (counts.rechunk(result.chunks), index)
        return da.blockwise(guard(spread), index, result, index, carried, (),
                            magnitudes.largest(operand), (), *extra, dtype=result.dtype,
                            meta=np.empty((0,) * result.ndim, result.dtype))
    if node.op in ("cov", "corrcoef"):
        return _covariances(node, result, args, carried, _message_parts(products, sources),
                            (rtol, atol, eps))
    if node.op == "gradient" and product_scales.coordinates(node):  # weights at run time
        second = product_scales.second_order(node)
        blocks = [_one_block(a) if is_array(a) else a for a in args[1:]]
        weights = da.from_delayed(dask.delayed(weights_bound, pure=True)(
            *blocks, second=second), (), dtype=np.float64)
        # each result: its weights times the bound, and roundings on |f| (three products
        # and two sums, in both: 4 eps F (M + E))
        carried = weights * carried + 4 * eps * weights * (magnitudes.largest(args[0]) + carried)
    elif node.op == "gradient":  # the roundings of spacing()'s rule
        spacing = product_scales.spacing(node, node.args[0]) or 1.0
        if product_scales.second_order(node):
            fourth = carried * (spacing / 4)  # the bound on each value of the operand
            carried = carried + 12 * eps * (magnitudes.largest(args[0]) + fourth) / spacing
        if len(node.args) > 1:
            eps *= 2
    if node.index in plan.carries:  # its result's bound, read by a later product or tail
        largest = magnitudes.largest(result)
        bounds[("result", node.index)] = chained.result_bound(carried, result, largest)
        bounds[("largest", node.index)] = largest
    test = Within(node.op, _message_parts(products, sources), rtol, atol, eps)
    return da.blockwise(guard(test), index, result, index, carried, (), dtype=result.dtype,
                        meta=np.empty((0,) * result.ndim, result.dtype))


def tail_checked(node: Node, result: Any) -> Any:
    """The last op ``node`` of a squared loss or softmax (:data:`Plan.tails`) of a consumer's
    ``result`` (a dask array), failing at the node where the bound carried to that consumer's
    result can move it beyond its tolerance (:mod:`capviz.backends.dask.tails`)."""
    plan, bounds = PLAN.get(), BOUNDS.get()
    if plan is None or bounds is None or not is_array(result):
        return result
    tail = plan.tails[node.index]
    products = [plan.products[index] for index, _ in plan.consumers.get(tail.consumer, ())]
    sources = [plan.products[i] for p in products for c, _, _ in plan.chains.get(p.index, ())
               for i, _ in plan.consumers.get(c, ()) if i in plan.products]
    rtol, atol = get("dask").tolerance_for(result.dtype)
    words = _message_parts(products, sources)
    carried = bounds.get(("result", tail.consumer), np.inf)
    index = tuple(range(result.ndim))
    meta = np.empty((0,) * result.ndim, result.dtype)
    if tail.kind == "squares":
        test = tails.SquaresWithin(tail, words, rtol, atol, result.dtype)
        return da.blockwise(guard(test), index, result, index, carried, (),
                            dtype=result.dtype, meta=meta)
    test = tails.SoftmaxWithin(tail, words, rtol, atol, result.dtype)
    largest = bounds.get(("largest", tail.consumer), np.inf)
    return da.blockwise(guard(test), index, result, index, carried, (), largest, (),
                        dtype=result.dtype, meta=meta)


def _covariances(node: Node, result: Any, args: tuple, carried: Any, words: tuple,
                 tolerance: tuple[float, float, float]) -> Any:
    """``np.cov`` (weights too) or ``np.corrcoef`` ``node``'s ``result`` of ``args``, failing
    at the node where the bound ``carried`` on its values can move it beyond the tolerance
    (:class:`.CovWithin`, :class:`.CorrWithin`)."""
    rtol, atol, eps = tolerance
    n, d = product_scales.observations(node, node.args[0]) or (1, 1.0)
    data = [a for a in args[:2] if is_array(a)]
    largest = magnitudes.largest(data[0])
    for other in data[1:]:  # m's and y's
        largest = da.maximum(largest, magnitudes.largest(other))
    meta = np.empty((0,) * result.ndim, result.dtype)
    if node.op == "corrcoef":
        test = CorrWithin(node.op, words, rtol, atol, eps, n, d,
                          bool(node.params.get("rowvar", True)))
        task = dask.delayed(guard(test), pure=True)(
            _one_block(result), _one_block(carried), _one_block(largest),
            *(_one_block(a) for a in data))
        return da.from_delayed(task, result.shape, dtype=result.dtype, meta=meta)
    cov = CovWithin(node.op, words, rtol, atol, eps, n, d)
    index = tuple(range(result.ndim))
    weights: tuple = ()
    if any(a is not None for a in args[2:4]):  # fweights, aweights: S and fact at run time
        fweights, aweights = (tuple(args[2:4]) + (None, None))[:2]
        terms = da.from_delayed(dask.delayed(weight_terms, pure=True)(
            *(None if a is None else _one_block(a) for a in (fweights, aweights)),
            node.params.get("ddof"), bool(node.params.get("bias", False)), n), (2,),
            dtype=np.float64)
        weights = (terms[0], (), terms[1], ())
    return da.blockwise(guard(cov), index, result.rechunk(-1), index, carried, (), largest, (),
                        *weights, dtype=result.dtype, meta=meta)


def _one_block(array: Any) -> Any:
    """Dask array ``array`` as one ``Delayed`` (its blocks joined into one task)."""
    if array.npartitions != 1:
        array = array.rechunk(tuple((size,) for size in array.shape) or ())
    (block,) = array.to_delayed(optimize_graph=False).ravel()
    return block


def _message_parts(products: list[Node],
                   sources: list[Node] | None = None) -> tuple[str, str, str]:
    """(the products named, their operands' size, the chunk-size that holds them), as words;
    ``sources``: the earlier products whose rounding the products' operands carry
    (:mod:`capviz.backends.dask.chained`)."""
    unique = list({p.index: p for p in products}.values())
    named = ", ".join(_named(p) for p in unique[:2])
    earlier = list({p.index: p for p in sources or ()}.values())
    if earlier:
        named += f" (whose operand carries the rounding of {_named(earlier[0])})"
    unique += earlier
    held = max(operand_bytes(p) or 0 for p in unique)
    return named, format_bytes(held), f"{math.ceil(held / 2 ** 20)}MiB"


def _named(node: Node) -> str:
    where = format_source(node.source)
    return f"np.{node.op} (node %{node.index}" + (f" at {where}" if where else "") + ")"
