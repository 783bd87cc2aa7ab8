"""A checked sum's error carried to the add or subtract it reaches, on the JAX backend (issue 25;
the hostile review 3, finding 8).

The sums check (:mod:`capviz.backends.jax.cancellation`) holds each output of a sum XLA adds in
its own order within one rounding of its terms' magnitudes, ``eps * S``, of NumPy's, which is
within the tolerance of the sum. Where the graph goes on to add or subtract the sum's value
(:mod:`capviz.backends.cancelling`: through moves, casts, negations and scalings), the
difference can be far smaller than the sum, and the same error far beyond its tolerance (``x -
x.sum(-1, keepdims=True) / 768`` of values near 1e3: 1.2 times it; a difference of two sums,
123 times). Each such sum is made one of these, chosen per sum when the program is traced:

- **NumPy's order, always** (:data:`EXACT`), where :mod:`capviz.backends.jax.numpy_order` has a
  program for it and a reach is not a centring: the sum is NumPy's bits, so is every value the
  path makes from it (its products and quotients are rounded once, as NumPy's, by
  :func:`scaled`), and the add or subtract adds NumPy's values.
- **A branch on the consumer's tolerance**, where every reach is a centring (``x -
  x.mean(-1, keepdims=True)``, ``x - np.mean(x, -1)[:, None]``, ``x - x.sum(-1, keepdims=True)
  / n``: the consumer's operands are all known where the sum is): the path and the consumer are
  computed from XLA's sum and its bound at the sum's node (:func:`Carried.centring_kept`), and a
  ``lax.cond`` takes NumPy's order only where a value would leave the tolerance. A layer norm's
  mean pays one more elementwise pass and keeps XLA's reduction.
- **The bound, carried**, where no program is written (float16, the nan forms, ``where=``, an
  operand NumPy may not hold C-ordered...): ``eps * S`` goes forward with the value, scaled as a
  forward error bound (a move keeps it, a product by ``b`` multiplies it by ``|b|``, a quotient
  by ``d`` divides it by ``|d|``, each op that rounds adds ``eps * |result|``), and the add or
  subtract tests ``bound <= atol + rtol * |result|`` element by element: the replay fails at
  that node, with the user's line, where it does not hold.

The bound of one operand is ``None`` where its value is NumPy's bits; a consumer whose operands
are all so is not tested.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz import ops
from capviz.backends import cancelling, contraction_bound
from capviz.backends.jax import (
    amplified,
    carried_bounds,
    carried_contractions,
    carried_messages,
    carried_paths,
    carried_sources,
    unfused,
)
from capviz.backends.jax.trace import dtype_of, require_each
from capviz.core.ir import Node

EXACT = "exact"
"""How a reached sum is computed: in NumPy's order, always."""
BRANCH = "branch"
"""How a reached sum is computed: XLA's, or NumPy's order where the centring's test fails."""
CARRIED = "carried"
"""How a reached sum is held: its bound carried to the consumer, tested there."""

DECLARED_KEPT = 0.5
"""Where a declared contraction's value ``v`` reaches an add or subtract whose result ``r``
keeps ``|r| >= DECLARED_KEPT * |v|``, the add does not cancel it: the result's error is the
product's own declared one, at most twice as large against it (``x @ w + b``)."""


class Carried:
    """The reached sums of one trace (:func:`capviz.backends.cancelling.reaches`) and the
    bounds carried from them, by node index (``None``: NumPy's bits)."""

    def __init__(self, found: dict[int, tuple[cancelling.Reach, ...]], jnp: Any,
                 tolerance: Any, declared: frozenset[int] = frozenset()) -> None:
        # a power by an exponent XLA computes as NumPy is no source (cancelling.reaches
        # follows every op of carried_sources.APPROXIMATED)
        self.found = {k: each for k, each in found.items()
                      if each[0].sum.op not in carried_sources.CONDITIONAL
                      or carried_sources.approximated(each[0].sum)}
        found = self.found
        self.jnp = jnp
        self.tolerance = tolerance
        self.consumers = cancelling.consumers(found)
        self.on_paths = cancelling.on_paths(found)
        self.bounds: dict[int, Any] = {}
        self.declared = declared
        """The contractions followed to an add or subtract they reach by moves and scalings by
        numbers (:func:`capviz.backends.cancelling.declared`; :meth:`_declared`): their
        bounds, by node index, go apart from the others' (:attr:`lazy`)."""
        self.declared_paths = frozenset(n.index for k in declared for r in found[k]
                                        for n in r.path)
        self.lazy: dict[int, Any] = {}
        """The cheap bound of each declared contraction's value
        (:func:`carried_contractions.nominal`) and of what its path makes of it, by node
        index."""
        self.centrings = frozenset(k for k, each in self.consumers.items()
                                   if cancelling.centres(each[0].consumer))
        """The consumers that subtract a mean or sum of a value from it
        (:func:`capviz.backends.cancelling.centres`): tested strictly, with no share kept
        (the walk past a kept add ends there: the lead's ruling 40 17:35)."""
        self.unpacked = {each[0].consumer.args[0].index: each[0].consumer
                         for each in self.consumers.values()
                         if each[0].consumer.op == "unpack"}
        """The ops of several results (``np.modf``, ``np.divmod``) one of whose unpacks is a
        consumer (:func:`capviz.backends.cancelling.tuple_consumer`), by the op's index: the
        trace does not enter an unpack, so the op tests it."""
        self.saved: dict[int, tuple] = {}
        """The operands and result of each declared contraction and path node, by node index,
        for the exact bound a consumer computes where the cheap one fails."""

    def how(self, node: Node, programmed: bool, real: bool) -> str | None:
        """How the sum ``node`` is computed (:data:`EXACT`, :data:`BRANCH`, :data:`CARRIED`),
        or ``None`` where it reaches no add or subtract; ``programmed``: NumPy's order is
        written for it; ``real``: its result is real."""
        each = self.found.get(node.index)
        if each is None:
            return None
        if not programmed:
            return CARRIED
        return BRANCH if real and all(r.centring for r in each) else EXACT

    def start(self, node: Node, bound: Any) -> None:
        """The sum ``node``'s bound on its error (``None``: NumPy's bits)."""
        self.bounds[node.index] = bound

    def centring_kept(self, node: Node, a: Any, result: Any, bound: Any) -> Any:
        """Where the centrings of the sum ``node`` (operand ``a``, XLA's ``result``, off
        NumPy's by ``bound`` at most) keep the tolerance: each path and its consumer computed
        here as the trace will compute them, the test the consumer makes (:meth:`consumed`),
        and-ed over the reaches (a boolean, for the branch)."""
        jnp = self.jnp
        ok = None
        for reach in self.found[node.index]:
            value, carried = result, bound
            for step in reach.path:
                positions = _positions(step, reach)
                args = list(step.args)
                for k in positions:
                    args[k] = value
                value = _computed(jnp, step, args)
                value, carried = carried_paths.passed(jnp, step, args, value,
                                                      dict.fromkeys(positions, carried))
            operands = [value, value]
            operands[1 - reach.position] = a
            got = _consumer(jnp, reach.consumer, operands)
            kept = jnp.all(self._within(got, [carried], reach.consumer))
            ok = kept if ok is None else ok & kept
        return ok

    def after(self, node: Node, args: tuple, result: Any) -> Any:
        """The hook of every traced op: on a path, ``result`` computed as NumPy rounds it (a
        product or quotient) and its bound carried; at a consumer, the test of the carried
        bounds (:meth:`consumed`). Any other node: ``result``, untouched; a function of
        :data:`carried_sources.APPROXIMATED` that reaches one starts its bound."""
        if node.index in self.consumers:  # a consumer of one value may carry another on
            self.consumed(node, args, result)
        unpack = self.unpacked.get(node.index)
        if unpack is not None:  # np.modf(v)[0]: its unpack is not traced, tested here
            self.consumed(unpack, (result,), result[int(unpack.params["index"])])
        own = None
        if node.index in self.declared:
            self.saved[node.index] = (args, result)
            self.lazy[node.index] = carried_contractions.nominal(self.jnp, node, args, result)
        elif node.op in carried_sources.APPROXIMATED and node.index in self.found:
            self._approximated(node, result)
            own = self.bounds.get(node.index)
        elif node.index in self.found and contraction_bound.is_contraction_node(node):
            self._contracted(node, args, result)
            own = self.bounds.get(node.index)
        elif node.index in self.found and node.op in carried_sources.PRODUCT_SUMS \
                and dtype_of(result).kind == "f":
            own = carried_sources.product_sums_bound(self.jnp, node, args, result)
            self.bounds[node.index] = own
        elif node.index in self.found and node.index not in self.bounds \
                and carried_sources.unbounded(node) and carried_paths.float_value(result):
            # a sum in XLA's order no bound is written for: what it reaches fails there
            jnp = self.jnp
            own = jnp.where(jnp.isfinite(jnp.abs(result)), np.inf, 0)
            self.bounds[node.index] = own
        elif node.index in self.found:  # a sum: its own bound (start), None where NumPy's
            own = self.bounds.get(node.index)
        if node.index in self.on_paths:
            carried = {k: b for k, b in enumerate(_of(self.bounds, a) for a in node.args)
                       if b is not None}
            lazy = {k: b for k, b in enumerate(_of(self.lazy, a) for a in node.args)
                    if b is not None} if node.index in self.declared_paths else {}
            if not carried and not lazy:  # from a reduce of another ufunc than add: no bound
                return result
            # a declared contraction's value is not NumPy's bits: its products by numbers
            # keep XLA's rounding (the bound takes one of each side's)
            if carried and node.op in cancelling.SCALINGS and carried_paths.float_value(result):
                # NumPy's rounding of the product, kept apart from the add it reaches (XLA
                # folds the float64 product's narrowing back into a float32 multiply and
                # fuses it with the subtract: m * m of a variance by hand was 286x the
                # tolerance, review 5)
                result = unfused.in_trace(carried_paths.scaled(
                    self.jnp, node.op, args[0], args[1], dtype_of(result), checked=True))
            if lazy:  # a declared contraction's value, as the path makes it
                self.saved[node.index] = (args, result)
                passed_lazy = carried_paths.passed(self.jnp, node, args, result, lazy)[1]
                mine = self.lazy.get(node.index) if node.index in self.declared else None
                self.lazy[node.index] = passed_lazy if mine is None else passed_lazy + mine
            if not carried:
                return result
            result, passed = carried_paths.passed(self.jnp, node, args, result, carried)
            if own is not None and passed is not None:  # a sum (or exp...) of carried values
                passed = passed + own
            self.bounds[node.index] = own if passed is None else passed
        return result

    def _approximated(self, node: Node, result: Any) -> None:
        """The bound of XLA's approximation ``result`` of the function ``node``: ``K * eps *
        |result|`` (:data:`carried_sources.APPROXIMATED`), 0 where it is not finite (the same
        in NumPy); a complex one is left to the complex checks (no bound: NumPy's bits to this
        rule)."""
        kind = dtype_of(result)
        if kind.kind != "f":
            return
        self.bounds[node.index] = carried_sources.bound(self.jnp, node, result)

    def _contracted(self, node: Node, args: tuple, result: Any) -> None:
        """The bound of XLA's contraction ``result`` (``np.matmul``...) from NumPy's
        (:func:`carried_contractions.declared_bound`), followed where every reach of it is a
        centring (:func:`capviz.backends.jax.cancellation.of`): its consumer subtracts it from
        its own operand."""
        bound = carried_contractions.declared_bound(self.jnp, node, args, result)
        if bound is not None:
            self.bounds[node.index] = bound

    def consumed(self, node: Node, args: tuple, result: Any) -> None:
        """The add or subtract ``node`` (operands ``args``, ``result``): fails the replay at
        it where the bounds carried to its operands reach beyond the tolerance of ``result``."""
        # an unpack (np.modf(v)[0]), tested at its op: the bounds of the op's operands
        read = node.args[0].args if node.op == "unpack" else node.args
        carried = [_of(self.bounds, a) for a in read]
        declared = any(r.sum.index in self.declared for r in self.consumers[node.index])
        if all(b is None for b in carried) and not declared:
            return
        message = carried_messages.consumer(
            node, result, [r for r in self.consumers[node.index]
                           if r.sum.index not in self.declared], self.bounds)
        if declared:
            self._declared(node, args, result, carried)
            return
        if node.op == "unpack":  # np.modf(v)[0], np.divmod(v, d)[1]: v's bound
            total, apart = carried_bounds.unpacked(self.jnp, node.args[0], carried[0],
                                                   carried[1] if len(carried) > 1 else None,
                                                   result)
        else:
            total, apart = carried_bounds.consumer_bound(self.jnp, node, args, result, carried)
        ok = self._within(result, [total], node)
        if self._products_only(node) and node.index not in self.centrings:
            # a declared product's error, where nothing cancels it
            if node.op in _ADDS:  # a product's add its path goes on past (x @ w + b)
                kept = self._add_kept(node, args, result)
                message = carried_messages.declared(node, list(self.consumers[node.index]))
            else:
                kept = carried_bounds.not_cancelled(self.jnp, node, args, result,
                                                    DECLARED_KEPT)
            ok = ok if kept is None else ok | kept
        require_each(ok if apart is None else ok & apart, message)

    def _products_only(self, node: Node) -> bool:
        """Whether every bound reaching the difference, spread or periodic function ``node``
        (or the add or subtract a product's path goes on past,
        :func:`capviz.backends.cancelling.through_add`) comes from a contraction of linear
        algebra (the lead's ruling 36 05:17: such a consumer
        fails only where it cancels the values it subtracts, as a subtract of a declared product
        does; ruling 38 10:50 for ``np.sin``, ``np.cos``, ``np.tan``)."""
        reaches = self.consumers.get(node.index, ())
        if node.op in _ADDS and self._goes_on(node):
            return bool(reaches)
        if node.op in _ADDS:  # an add a product's path goes on past, or one past that add
            if node.index not in self.on_paths and not all(
                    any(n.op in _ADDS for n in r.path) for r in reaches):
                return False
        elif node.op not in cancelling.DIFFERENCES | cancelling.SPREADS | _OUTERS \
                and not cancelling.periodic(node):
            return False
        return bool(reaches) and all(contraction_bound.is_contraction_node(r.sum)
                                     for r in reaches)

    def _goes_on(self, node: Node) -> bool:
        """Whether a path goes on past the add or subtract ``node`` (not a centring): every
        bound reaching it is carried on to the next consumer (:meth:`after` passes them all
        on), so the share it keeps decides here for each of them, an approximated function's
        own bound too (``h + np.tanh(h)`` then a batch norm: the walk from the product goes on
        to the norm's centring; testing the tanh's side strictly here refused ordinary data,
        R12's note on the stop's work)."""
        return node.index in self.on_paths and node.index not in self.centrings

    def _past_kept(self, node: Node, position: int) -> bool:
        """Whether the bounds carried to ``position`` of the add or subtract ``node`` that are
        not declared come from contractions only, on paths past their kept add (``node`` an
        add the path goes on past, or every such reach with an add on its path): the share
        ``node`` keeps decides there, as at :meth:`_add_kept`."""
        if node.op not in _ADDS:
            return False
        reaches = [r for r in self.consumers.get(node.index, ())
                   if r.position == position and r.sum.index not in self.declared]
        if self._goes_on(node):
            return bool(reaches)
        return bool(reaches) and all(contraction_bound.is_contraction_node(r.sum)
                                     for r in reaches) \
            and (node.index in self.on_paths
                 or all(any(n.op in _ADDS for n in r.path) for r in reaches))

    def _add_kept(self, node: Node, args: tuple, result: Any) -> Any:
        """Where the add or subtract ``node`` that only followed contractions reach (a bias
        add a product's path goes on past, :func:`capviz.backends.cancelling.through_add`,
        to ``np.diff(x @ w + b)``) keeps each of their values: ``|result| >=``
        :data:`DECLARED_KEPT` ``* |value|``, the rule :meth:`_declared` tests an add of a
        declared product by (W=25x, stop 38: ``x @ w + b`` is not refused where it keeps the
        product, whatever is computed from it later)."""
        jnp = self.jnp
        size = jnp.abs(result)
        kept = None
        for p in sorted({r.position for r in self.consumers.get(node.index, ())}):
            each = size >= DECLARED_KEPT * jnp.abs(jnp.asarray(args[p]))
            kept = each if kept is None else kept & each
        return kept

    def _declared(self, node: Node, args: tuple, result: Any, carried: list) -> None:
        """The add or subtract ``node`` that declared contractions reach
        (:func:`capviz.backends.cancelling.declared`), besides any other bound ``carried``:
        each such operand's bound is left out where the add does not cancel it
        (:data:`DECLARED_KEPT`), and tested elsewhere, first as
        :func:`carried_contractions.nominal`'s, then, where that fails somewhere, as
        :func:`carried_contractions.declared_bound`'s (the magnitudes' product, in a
        ``lax.cond``: only where needed) carried along the path. Softmax's exponential past a
        kept add (:func:`capviz.backends.cancelling.softmax_shift`) keeps no share: its
        operand's bound is tested everywhere as the exponential's
        (:func:`carried_bounds.exponential`)."""
        import jax

        jnp = self.jnp
        mine = [r for r in self.consumers[node.index] if r.sum.index in self.declared]
        positions = sorted({r.position for r in mine})
        size = jnp.abs(result)
        # softmax's exp, a centring: no share kept (tested strictly)
        shifted = node.op in cancelling.EXPONENTIALS
        strict = shifted or node.index in self.centrings
        kept = {p: jnp.zeros(jnp.shape(size), bool) if strict
                else size >= DECLARED_KEPT * jnp.abs(jnp.asarray(args[p])) for p in positions}
        others = []
        for p, b in enumerate(carried):
            if b is None:
                continue
            if not strict and self._past_kept(node, p):
                # a product's bound carried past its own kept add (c_attn's through q @ k.T
                # to the mask add): left out where this add keeps the value, as the add's
                # own products' are (R11 #14: GPT-2 of larger c_attn weights was refused here)
                b = jnp.where(size >= DECLARED_KEPT * jnp.abs(jnp.asarray(args[p])), 0, b)
            others.append(b)
        total = None
        for b in others:
            total = b if total is None else total + b
        if shifted and total is not None:  # other bounds reaching the exponential, as its own
            total = carried_bounds.exponential(jnp, node, args[0], result, total)

        def tested(bounds: dict) -> Any:
            if shifted:  # the argument's bound, as the exponential's (its absolute rule)
                bounds = {p: carried_bounds.exponential(jnp, node, args[0], result, bounds[p])
                          for p in positions}
            parts = [total] + [jnp.where(kept[p], 0, bounds[p]) for p in positions]
            return self._within(result, parts, node)

        # the cheap bound first (:func:`carried_contractions.nominal`: the rank-1 one, never
        # below the exact one), the magnitudes' product only where it fails (a bias that
        # cancels a product: the lead's ruling 37 07:30 (b)), in both traces
        cheap = tested({p: _of(self.lazy, node.args[p]) for p in positions})

        def exact() -> Any:
            bounds = self._exact(node, mine)
            return jnp.broadcast_to(tested({p: bounds[node.args[p].index] for p in positions}),
                                    jnp.shape(cheap))

        ok = jax.lax.cond(jnp.all(cheap), lambda: jnp.ones(jnp.shape(cheap), bool), exact)
        message = carried_messages.declared(node, mine) if total is None else \
            carried_messages.consumer(node, result, [
                r for r in self.consumers[node.index] if r.sum.index not in self.declared],
                self.bounds, tuple({r.sum.index: r.sum for r in mine}.values()))
        require_each(ok, message)

    def _exact(self, node: Node, mine: list) -> dict:
        """The bounds of the values on the reaches ``mine`` (declared contractions' reaches
        ending at the consumer ``node``), by node index:
        :func:`carried_contractions.declared_bound` of each contraction, carried along the paths
        as the trace carried :func:`carried_contractions.nominal`'s: every node of their paths
        that ``node`` reads, through any of them (a reach's path is the walk's first way to
        each node: ``h + np.abs(h) ** 1.5 * 1e-3`` reached by ``h`` first left the power's
        infinite bound out of the centring after it, which replayed)."""
        sums = {r.sum.index: r.sum for r in mine}
        paths = dict(sums)
        paths.update((n.index, n) for k in sums for r in self.found[k] for n in r.path
                     if n.index < node.index)
        steps: dict[int, Node] = {}
        todo = [a for a in node.args if isinstance(a, Node)]
        while todo:  # the nodes of the paths node reads, through the paths only
            a = todo.pop()
            if a.index in steps or a.index not in paths:
                continue
            steps[a.index] = a  # a sum on another's path (q @ k.T on q's) goes on too
            todo.extend(b for b in a.args if isinstance(b, Node))
        bounds: dict[int, Any] = {}
        for index in sorted(steps):
            step = steps[index]
            if step.op != "unpack" and index not in self.saved:  # no bound reached it
                continue
            if step.op == "unpack":  # a step the trace does not enter: its source's result
                value = self.saved[step.args[0].index][1]
                args, value = (value,), value[int(step.params["index"])]
            else:
                args, value = self.saved[index]
            known = {k: bounds[a.index] for k, a in enumerate(step.args)
                     if isinstance(a, Node) and bounds.get(a.index) is not None}
            bound = carried_paths.passed(self.jnp, step, args, value, known)[1] \
                if known else None
            if index in self.declared:
                own = carried_contractions.declared_bound(self.jnp, step, args, value)
                bound = own if bound is None else bound + own
            bounds[index] = bound
        return bounds

    def _within(self, got: Any, carried: list, node: Node) -> Any:
        """Where the sum of the ``carried`` bounds is within the tolerance of ``got``, the
        result of ``node``: ``atol`` over what its readers scale its error by
        (:func:`capviz.backends.jax.amplified.gain`; ``(x @ w + b) * 1e12`` of a bias that
        cancels a row was 437 off NumPy's 0, float64, silently, before stop 41)."""
        jnp = self.jnp
        real = np.dtype(dtype_of(got).type(0).real.dtype)
        rtol, atol = amplified.tolerance(*self.tolerance(real), amplified.of_traced(node))
        total = None
        for bound in carried:
            if bound is not None:
                total = bound if total is None else total + bound
        size = jnp.abs(got).astype(real)
        # a result not finite is the same in every order (the sum's bound is 0 where it is
        # not finite); a NaN bound (an infinite one times 0) fails
        return (total <= atol + rtol * size) | ~jnp.isfinite(size)


_ADDS = frozenset(("add", "subtract"))
_OUTERS = frozenset(("ufunc_outer",))
"""``np.subtract.outer``/``np.add.outer``: held to the share kept as a difference is
(:func:`carried_bounds.not_cancelled`)."""


def _of(store: dict, a: Any) -> Any:
    """The bound ``store`` (bounds or cheap bounds, by node index) holds for the operand ``a``
    (``None``: none, or a number): an ``unpack`` of an op of several results (``np.split``), a
    step the trace does not enter, takes its part of its source's (a tuple, or one bound for
    all; written in ``store`` then). Without it a bound carried to ``np.split`` was lost at
    its pieces: ``a, b = np.split(np.nansum(x, -1), 2); a - b`` of float32 rows near 1e3
    replayed 0.25 off NumPy's, silently."""
    if not isinstance(a, Node):
        return None
    bound = store.get(a.index)
    if bound is not None or a.op != "unpack" or not a.args or not isinstance(a.args[0], Node):
        return bound
    whole = store.get(a.args[0].index)
    if whole is None:
        return None
    bound = whole[int(a.params["index"])] if isinstance(whole, (tuple, list)) else whole
    store[a.index] = bound
    return bound
"""The consumers :meth:`Carried._products_only` holds to the share kept too (an add a product's
path goes on past)."""


def _prev(reach: cancelling.Reach, step: Node) -> Node:
    """The node before ``step`` on ``reach``'s path (the sum for the first)."""
    k = reach.path.index(step)
    return reach.sum if k == 0 else reach.path[k - 1]


def _positions(step: Node, reach: cancelling.Reach) -> tuple[int, ...]:
    """Which arguments of the path op ``step`` are the path's value (every operand of a join
    of the value with itself, ``np.stack([m] * n, -1)``)."""
    prev = _prev(reach, step)
    return tuple(k for k, a in enumerate(step.args) if a is prev)


def _computed(jnp: Any, node: Node, args: list) -> Any:
    """The path op ``node`` on ``args``, as the trace computes it
    (:func:`carried_paths.scaled`, or the op's move)."""
    if node.op in cancelling.SCALINGS:
        want = np.dtype(node.dtype)
        return carried_paths.scaled(jnp, node.op, args[0], args[1], want, checked=False)
    if node.op == "astype":
        return jnp.asarray(args[0]).astype(np.dtype(node.dtype))
    return ops.OPS[node.op].bind(jnp)(*args, **node.params)


def _consumer(jnp: Any, node: Node, args: list) -> Any:
    """The add or subtract ``node`` of ``args``, in its result type."""
    a, b = (jnp.asarray(x) for x in args)
    want = np.dtype(node.dtype)
    value = a + b if node.op == "add" else a - b
    return value.astype(want)
