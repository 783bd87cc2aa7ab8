"""Which sums reach a cancelling add or subtract: a graph analysis every engine that adds in its
own order uses (issue 25; the hostile review 3, finding 8).

An engine's sum (JAX's, Dask's) is held to one rounding of its terms' total magnitude, ``eps *
S``, against the tolerance of the sum itself. Where the sum's value goes on to an add or a
subtract, the difference can be far smaller than the sum (``x - x.mean(-1, keepdims=True)`` of
values near 1e3: the mean is 1e3, the centred values 0.5), and the sum's error, within its own
tolerance, is then beyond the result's: ``eps * S / |x - mean|``. This module finds those sums on
the graph, before anything runs, so that an engine computes them in NumPy's own order, or
carries their error bound forward to the add or subtract and tests it there.

**The rule** (:func:`reaches`). A float or complex sum (one of the ops an engine names) *reaches*
an add or subtract (its *consumer*) when its value gets there through any op but the few that
are known to stop an error (:data:`STOPS`: the result does not depend on the value's bits, or
is the same for every value within the sum's tolerance). Every other op carries it, whatever it
is (the hostile review 5's finding 12: a list of the ops known to carry an error missed 21
spellings on JAX and 23 on Dask, up to 100,000x: ``np.pad(s, mode='edge')``,
``np.broadcast_arrays``, ``np.resize``, ``np.choose``, ``np.floor``/``round``/``trunc``
of a sum, ``np.sqrt``, ``np.median``, a matmul, a sum of sums...): an op the lists below do
not describe passes the value on by what is known at run time only (``factor`` ``None``: no
centring), and an engine that carries a bound through it takes the bound it knows for that op,
or an infinite one (:mod:`capviz.backends.jax.carried`), never none. Integer and boolean
results carry it too (``np.floor(s).astype(int)``, ``s > t`` in a ``np.where``): a value
within the tolerance can round or compare across a jump. An add or subtract that cannot cancel
(``s + s``, ``s + 0``) and a remainder of a divisor carry it on. The lists name the ops whose
scale is known (for the centring, and for the bound an engine carries):

- moves, which keep every value (``reshape``, ``getitem`` with any index, ``None`` adding an
  axis included, ``broadcast_to``, ``expand_dims``, ``squeeze``, ``transpose``...) and casts to
  a float or complex type;
- ops that lay values side by side or pick among them (:data:`JOINS`, :data:`SELECTS`:
  ``np.tile``, ``np.repeat``, ``np.stack``, ``np.concatenate``, ``np.where(mask, m, 0)``): each
  value of the result is one of the value's, or of another operand's (whose own bound, or 0,
  it keeps);
- ``negative``, ``positive``;
- a product by anything (a constant, another tensor: the bound scales by its magnitude) and a
  quotient of the value by anything (``x.sum(-1, keepdims=True) / 768``, the mean written by
  hand). A quotient *by* the value (``exp(x) / exp(x).sum()``) passes it on too, by what is
  known at run time only: softmax's sum reaches the residual add after ``p @ v``;
- a square (:data:`SQUARES`: ``np.square``, ``** 2``, ``m * m``): an error ``e`` of ``m`` is
  ``e (2 |m| + e)`` of ``m ** 2``, an absolute error carried on, rounded once (the variance by
  hand, ``(x ** 2).mean(-1) - x.mean(-1) ** 2``, cancels the squared mean's).
- ops whose every value is within the value's error of NumPy's (:data:`LIPSCHITZ`,
  :data:`CLAMPS`, :data:`PICKS`): ``np.abs``, ``np.real``, ``np.maximum(m, 0)``, ``np.clip``,
  ``m.max()``, ``np.sort(m)``: each result is one of the values (or a number, or another
  operand's value), or its magnitude, so it is off by at most the largest error among them.

The first op that subtracts values on each path is the consumer (:data:`CONSUMERS`): an ``add``
or ``subtract`` of two tensor operands, or of a tensor and a nonzero number (``s - 1000.0``
cancels too); the differences of neighbouring values (``np.diff``, ``np.ediff1d``,
``np.gradient``), the spread of them (``np.ptp``, and ``np.var``, ``np.std``, ``np.cov``,
``np.corrcoef``, which subtract their mean: ``np.std(x.sum(-1))``); every pair
of two operands' values (``np.subtract.outer``, ``np.add.outer``); and the rest of a value
after a multiple of a divisor is taken away (``np.mod``/``np.remainder``, ``np.fmod`` of the
value: ``np.mod(s, 1.0)`` is ``s - floor(s)``, the fraction of a sum of 1e5); and, where an
engine names them (:func:`reaches`' ``periodic``), the periodic functions (:data:`PERIODIC`:
``np.sin(s)`` takes the multiples of its period away as a remainder does). A path stops there
(the consumer's own result is then held to the tolerance, checked or exact, like any other
node's), but where an engine names ``past_adds`` (JAX): a contraction's path goes on past
the first add or subtract of two operands it reaches to the next consumer
(:func:`through_add`: ``np.diff(x @ w + b)``, whose bias add passes where it keeps the
product), as a float16 sum's does (no engine adds it in NumPy's order). Past that add (the
lead's ruling 39 14:10) every add or subtract is a consumer (``h - h.mean(0)``, ``h - t``),
and the path goes on past every add or subtract, ``np.diff``, ``np.ediff1d``, ``np.ptp`` and
periodic function it reaches (the lead's ruling 40 17:35: a residual ``h + np.tanh(h) *
1e-3`` passed by the share it keeps; a contraction's first difference too,
``np.diff(np.diff(x @ w))``: :func:`goes_on`, :func:`kept_first`), and ends at a strict
test: a centring (:func:`centres`, a layer norm's ``x - x.mean(-1, keepdims=True)``), a
variance, a remainder...; softmax's shift ``h - h.max(-1, keepdims=True)`` used only by ``np.exp``
(:func:`softmax_shift`) passes the value on to the exp, the consumer then; an op of several
results (``np.split``) passes it to its pieces. ``np.modf``'s fraction and ``np.divmod``'s
remainder (:data:`TUPLE_CONSUMERS`) are consumers too. Both sums of ``x.sum(-1) - x[:,
:384].sum(-1) * 2`` reach its subtract; ``(x - x.mean()).sum()`` reports the mean (the outer
sum reaches nothing).

A reach is a **centring** (:attr:`Reach.centring`) where the consumer's other operand is the
sum's own operand and the path holds only moves, casts, negations and scalings by numbers: ``x -
x.mean(-1, keepdims=True)``, ``x - np.mean(x, axis=-1)[:, None]``, ``x - x.sum(-1,
keepdims=True) / n``, ``-x.mean() + x``, ``x - np.tile(m, (1, n))``. There every value the
consumer needs is known where the sum is computed, so an engine can test the consumer's
tolerance there (a branch on it). A path through a select, a square, a join with another
operand or a product by a tensor scales by what is known at run time only (``factor`` is
``None``): no centring.

This module reads the graph only (no engine, no values).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import numpy as np

from capviz.backends import contraction_bound
from capviz.core.ir import Node, same_value

CONSUMERS = frozenset(("add", "subtract", "diff", "ediff1d", "gradient", "ufunc_outer",
                       "remainder", "fmod", "ptp", "var", "std", "nanvar", "nanstd", "cov",
                       "corrcoef"))
"""The ops where a sum's error can become large against the result: the ones that subtract
values (``ufunc_outer`` of ``np.add`` or ``np.subtract`` only; ``remainder`` and ``fmod`` of the
value divided, not of the divisor)."""

DIFFERENCES = frozenset(("diff", "ediff1d", "gradient"))
"""Consumers that subtract neighbouring values of one operand (``prepend=``, ``append=``,
``to_begin=``, ``to_end=`` laid beside them)."""

SPREADS = frozenset(("ptp", "var", "std", "nanvar", "nanstd", "cov", "corrcoef"))
"""Consumers that subtract values of their operands from each other: the largest minus the
smallest (``np.ptp``), or each minus their mean (the variances, covariances)."""

OUTERS = frozenset(("add", "subtract"))
"""The ufuncs whose ``.outer`` (``ufunc_outer``) is a consumer: every pair of values."""

REMAINDERS = frozenset(("remainder", "fmod"))
"""Consumers that take a multiple of the divisor away from the value (``np.mod`` is
``np.remainder``)."""

PERIODIC = frozenset(("sin", "cos", "tan", "sinc"))
"""Consumers an engine may name (:func:`reaches`' ``periodic``; :func:`periodic`): the
periodic functions, which take a multiple of their period away from the value as a remainder
does (the hostile review 9, finding 26: ``np.sin(x @ ones)`` of float32 rows near 1e3 was
2.3e-4 off NumPy's on JAX, and ``np.cos`` 0.054, silently: the product's error, within its own
tolerance, is the whole of the result's; ``np.sinc``, a sine over its value), and a complex
``np.exp`` (periodic in the imaginary part: ``np.exp(1j * s)``, review 10, finding 8)."""


def periodic(node: Node) -> bool:
    """Whether ``node`` is a periodic function of its value (:data:`PERIODIC`, or ``exp`` of a
    complex result)."""
    if node.op in PERIODIC:
        return True
    return node.op == "exp" and node.dtype is not None and np.dtype(node.dtype).kind == "c"

STOPS = frozenset(("isnan", "isinf", "isfinite", "isposinf", "isneginf", "zeros_like",
                   "ones_like", "empty_like", "shape", "ndim", "size", "iscomplexobj",
                   "isrealobj", "result_type"))
"""The ops that stop an error: their result does not depend on the value's bits (its shape,
its type; ``np.zeros_like(s)``), or is the same for every value an engine's sum within its
tolerance can take (``np.isnan``, ``np.isinf``, ``np.isfinite``: a sum's result is not finite
in the same places in every order, which the engines' sums checks hold: an overflow in one
order and not in NumPy's fails the check). Nothing else stops it: a comparison flips, a
rounding to integers jumps, a ``np.sign`` of a sum near 0 flips. ``full_like`` stops the value
it copies the shape of (:data:`STOP_POSITIONS`), not its fill."""

STOP_POSITIONS = {"full_like": (0,)}
"""Ops that stop the value at some argument positions only (the prototype of ``full_like``)."""

TUPLE_CONSUMERS = {"modf": 0, "divmod": 1}
"""Ops of several results one of which takes a multiple away from the value (``np.modf``'s
fraction, ``np.divmod``'s remainder): the ``unpack`` of that result is a consumer, as
``np.remainder`` is."""

MOVES = frozenset((
    "reshape", "ravel", "expand_dims", "squeeze", "broadcast_to", "getitem", "transpose",
    "swapaxes", "moveaxis", "matrix_transpose", "copy", "atleast_1d", "atleast_2d",
    "atleast_3d", "astype", "negative", "positive", "tile", "repeat", "flip", "fliplr",
    "flipud", "roll", "rot90", "index", "take"))
"""Ops that pass their first operand's value on exactly (every value kept, moved, repeated, or
its sign changed), and casts (``astype`` to a float or complex type only: a cast rounds once)."""

JOINS = frozenset(("concatenate", "stack", "hstack", "vstack", "dstack", "column_stack"))
"""Ops that lay all their tensor operands' values side by side, each kept: every operand is a
value passed on."""

SELECTS = {"where": (1, 2)}
"""Ops that pick each value of the result from one of some operands (by position), the others
choosing (``np.where``'s condition)."""

LIPSCHITZ = frozenset(("absolute", "fabs", "real", "conjugate"))
"""Elementwise ops whose result moves by at most what their operand moves (its magnitude, its
real part)."""

CLAMPS = frozenset(("minimum", "maximum", "fmin", "fmax", "clip"))
"""Elementwise ops whose result is one of their operands' values (or a bound's): off by at
most the largest of their errors."""

PICKS = frozenset(("max", "min", "amax", "amin", "nanmax", "nanmin", "sort"))
"""Ops that pick values of their operand along an axis (the largest, the smallest, all of
them in order): each off by at most the largest error along that axis."""

SQUARES = frozenset(("square", "power", "multiply"))
"""Ops that square a value: ``np.square``, ``power`` by a literal 2 (``m ** 2``), a
``multiply`` of the value by itself (``m * m``)."""

SCALINGS = frozenset(("multiply", "divide"))
"""Ops that pass a value on scaled by their other operand (``divide``: the value divided, not
the divisor), rounding once."""


@dataclasses.dataclass(frozen=True)
class Reach:
    """One path from a sum to the add or subtract it reaches.

    Attributes:
        sum: the sum node.
        consumer: the ``add`` or ``subtract`` node the path ends at.
        path: the ops between them, in order (neither the sum nor the consumer).
        position: which argument of the consumer the path's value is (0 or 1).
        factor: the product of the numbers the path scales by, with its negations' signs
            (``1 / 768`` for ``x.sum(-1, keepdims=True) / 768``), or ``None`` where a tensor
            scales it (its magnitude is known at run time only).
        centring: whether the consumer's other operand is the sum's own operand and the path
            scales by numbers only (see the module docstring).
    """

    sum: Node
    consumer: Node
    path: tuple[Node, ...]
    position: int
    factor: float | None
    centring: bool

    @property
    def other(self) -> Any:
        """The consumer's other operand (a node or a number), ``None`` for a consumer of one
        operand (``np.diff``)."""
        args = self.consumer.args
        return args[1 - self.position] if len(args) == 2 and self.position < 2 else None


def reaches(nodes: Iterable[Node], sums: Collection[str], periodic: bool = False,
            past_adds: bool = False) -> dict[int, tuple[Reach, ...]]:
    """For each float or complex op node of ``nodes`` whose op is one of ``sums`` and whose
    value reaches a cancelling add or subtract (the module docstring's rule): its reaches, keyed
    by the sum node's ``index``. ``nodes``: the graph's nodes in program order (all of them, or
    the op steps of a program); only the op nodes among them are followed. ``periodic``: the
    periodic functions (:func:`periodic`) are consumers too (JAX, which carries a bound to
    them; Dask computes what reaches them in NumPy's order, or refuses it, by its own
    rule). ``past_adds``: a contraction's path goes on past the first add or subtract it
    reaches, to the next consumer (JAX, which tests a declared product's add by the share it
    keeps, :func:`through_add`)."""
    listed = list(nodes)
    users = _users(listed)
    found: dict[int, tuple[Reach, ...]] = {}
    for node in listed:
        if node.kind != "op" or node.op not in sums or not _floating(node):
            continue
        each = tuple(_walk(node, users, periodic, past_adds))
        if each:
            found[node.index] = each
    return found


def cancelling(nodes: Iterable[Node], sums: Collection[str]) -> frozenset[int]:
    """The indices of the sum nodes of ``nodes`` that reach a cancelling add or subtract
    (the keys of :func:`reaches`)."""
    return frozenset(reaches(nodes, sums))


def consumers(found: dict[int, tuple[Reach, ...]]) -> dict[int, tuple[Reach, ...]]:
    """``found`` (:func:`reaches`) keyed by the consumer's index instead: the reaches that end
    at each add or subtract."""
    by: dict[int, list[Reach]] = {}
    for each in found.values():
        for reach in each:
            by.setdefault(reach.consumer.index, []).append(reach)
    return {k: tuple(v) for k, v in by.items()}


def on_paths(found: dict[int, tuple[Reach, ...]]) -> frozenset[int]:
    """The indices of the nodes on the paths of ``found`` (neither sums nor consumers)."""
    return frozenset(n.index for each in found.values() for reach in each for n in reach.path)


def _users(nodes: Sequence[Node]) -> dict[int, list[Node]]:
    """The op nodes of ``nodes`` that read each node, by its index, in program order."""
    users: dict[int, list[Node]] = {}
    for node in nodes:
        if node.kind != "op":
            continue
        seen: set[int] = set()
        for a in node.args:
            if isinstance(a, Node) and a.index not in seen:
                seen.add(a.index)
                users.setdefault(a.index, []).append(node)
    return users


def _floating(node: Node) -> bool:
    return node.dtype is not None and np.dtype(node.dtype).kind in "fc"


def _numeric(node: Node) -> bool:
    """A float, complex or integer result: an integer difference of values rounded from a
    sum (``np.floor(s).astype(int) - k``) is one unit off where the sum rounds across."""
    return node.dtype is not None and np.dtype(node.dtype).kind in "fciu"


def _walk(start: Node, users: dict[int, list[Node]], periodic_: bool,
          past_adds: bool = False) -> Iterable[Reach]:
    """The reaches from the sum ``start``: a walk over the passing ops, each node once
    (``periodic_``: the functions of :func:`periodic` are consumers; ``past_adds``: see
    :func:`through_add`; past such an add, the rules of :func:`_past_add`)."""
    # (value, path, factor, past a kept add, past a softmax's subtract)
    stack: list[tuple[Node, tuple[Node, ...], float | None, bool, bool]] = [
        (start, (), 1.0, False, False)]
    visited: set[int] = set()
    while stack:
        value, path, factor, passed, soft = stack.pop()
        for user in users.get(value.index, ()):
            if soft and user.op in EXPONENTIALS:  # softmax's exp: tested by the absolute rule
                yield Reach(start, user, path, 0, None, False)
                continue
            if passed and softmax_shift(user, users):
                # x - x.max(-1, keepdims=True), every use an exp: the value goes on to it
                if user.index not in visited:
                    visited.add(user.index)
                    stack.append((user, (*path, user), None, True, True))
                continue
            if user.op in CONSUMERS or tuple_consumer(user) \
                    or (periodic_ and periodic(user)):
                reach = _consumed(start, value, user, path, factor)
                if reach is not None:
                    yield reach
                    if passed or (past_adds and kept_first(reach)):
                        # past a kept add (or a contraction's first difference, spread or
                        # periodic function, np.diff(np.diff(x @ w))), a consumer is tested
                        # and the walk goes on past it (the lead's ruling 40 17:35: its test
                        # may pass by the share it keeps, and a later consumer can cancel
                        # what it kept, h2 = h + np.tanh(h) * 1e-3; h2 - h2.mean(0)), but at
                        # a strict test: a centring, a variance, softmax's exp (above)
                        if not goes_on(user) or user.index in visited:
                            continue
                    elif not (past_adds and through_add(reach)) or user.index in visited:
                        continue
                    # a declared product's add that keeps it (x @ w + b): the value goes
                    # on to the next consumer (np.diff(x @ w + b))
                    visited.add(user.index)
                    stack.append((user, (*path, user), None, True, False))
                    continue
                # an add or subtract that cannot cancel (s + s, s + 0), a remainder of the
                # divisor: it carries the value on, as any op
            scale = _passes(value, user)
            if scale is _STOPS or user.index in visited:
                continue
            visited.add(user.index)
            stack.append((user, (*path, user), _scaled(factor, user, scale), passed, soft))


EXPONENTIALS = frozenset(("exp", "expm1"))
"""The functions softmax's shift reaches (:func:`softmax_shift`): a real exponential's relative
error is its argument's absolute error."""

_SHIFTS = frozenset(("max", "amax", "min", "amin", "nanmax", "nanmin"))
"""The picks softmax (and logsumexp) subtracts from a value: its largest (or smallest) along an
axis."""


def softmax_shift(user: Node, users: dict[int, list[Node]]) -> bool:
    """Whether ``user`` is softmax's shift of a value past a kept add (the lead's ruling 39
    14:10 (b)): ``v - v.max(axis, keepdims=True)`` (or a min) whose every use is ``np.exp`` or
    ``np.expm1``, directly or through a quotient by another value (a temperature) or a product
    by a number. There the path goes on to each exponential, which tests the bound carried to
    it by its absolute error (``exp(v + e)`` is ``exp(v) * exp(e)``); a subtract used any other
    way is a consumer, tested as any other past a kept add."""
    if user.op != "subtract" or len(user.args) != 2 or not _floating(user):
        return False
    value, shift = user.args
    if not isinstance(value, Node) or not isinstance(shift, Node) or shift.op not in _SHIFTS \
            or not shift.args or shift.args[0] is not value:
        return False

    def exponentials(node: Node, depth: int) -> bool:
        uses = users.get(node.index, ())
        if not uses:
            return False
        for use in uses:
            if use.op in EXPONENTIALS and len(use.args) == 1:
                continue
            scaled = depth < 2 and len(use.args) == 2 and use.args[0] is node and (
                (use.op == "divide" and use.args[1] is not node)
                or (use.op == "multiply" and not isinstance(use.args[1], Node)))
            if not (scaled and exponentials(use, depth + 1)):
                return False
        return True

    return exponentials(user, 0)


PASSED_CONSUMERS = frozenset(("add", "subtract", "diff", "ediff1d", "ptp"))
"""The consumers past a kept add the walk of :func:`reaches`' ``past_adds`` goes on past
(:func:`goes_on`), besides the periodic functions: an engine may pass them by the share of
the values they keep (:data:`capviz.backends.jax.carried.DECLARED_KEPT`), so a later consumer
can cancel the error they keep. The others (a variance, a covariance, ``np.gradient``, a
remainder, an ``.outer``) are tested strictly, and the path ends there."""

REDUCTIONS = frozenset(("mean", "nanmean", "sum", "nansum"))
"""The reductions a centring subtracts from their own operand (:func:`centres`)."""


def goes_on(user: Node) -> bool:
    """Whether the walk past a kept add goes on past the consumer ``user``
    (:data:`PASSED_CONSUMERS`, the periodic functions), but a centring (:func:`centres`): an
    engine tests that strictly (JAX: :attr:`capviz.backends.jax.carried.Carried.centrings`),
    and the path ends there (GPT-2's layer norm, ``x - x.mean(-1, keepdims=True)``)."""
    if user.op not in PASSED_CONSUMERS and not periodic(user):
        return False
    return not centres(user)


def centres(user: Node) -> bool:
    """Whether the add or subtract ``user`` takes from a value a mean or sum of it (up to
    moves and scalings by numbers): ``v - v.mean(axis, keepdims=True)``, ``v - v.mean(0)``,
    ``v - np.mean(v, -1)[:, None]``, ``v - v.sum(-1, keepdims=True) / n``, ``-v.mean(0) +
    v``, ``v + (-v.mean(0))``: a centring, tested strictly by the engines that follow a path
    past a kept add."""
    if user.op not in ("add", "subtract") or len(user.args) != 2:
        return False
    for k in (0, 1):
        value, other = user.args[k], user.args[1 - k]
        if not isinstance(value, Node) or not isinstance(other, Node):
            continue
        negated = False
        for _ in range(8):  # back through moves and scalings by numbers to a reduction
            if other.op in REDUCTIONS:
                break
            if other.op == "negative":
                negated = not negated
            elif other.op in SCALINGS and len(other.args) == 2 \
                    and sum(isinstance(a, Node) for a in other.args) == 1 \
                    and (other.op == "multiply" or isinstance(other.args[0], Node)):
                number = next(a for a in other.args if not isinstance(a, Node))
                try:
                    negated ^= bool(np.real(number) < 0)
                except (TypeError, ValueError):
                    break
                other = next(a for a in other.args if isinstance(a, Node))
                continue
            elif not (other.op in MOVES and other.op != "astype" and other.args
                      and isinstance(other.args[0], Node)
                      and not any(isinstance(a, Node) for a in other.args[1:])):
                break
            other = other.args[0]
        if other.op not in REDUCTIONS or not other.args or not same_value(other.args[0],
                                                                           value):
            continue
        if (user.op == "subtract") != negated:  # v - m, m - v, v + (-m)
            return True
    return False


def kept_first(reach: Reach) -> bool:
    """Whether the walk of :func:`reaches`' ``past_adds`` goes on past ``reach``'s consumer,
    a contraction's first difference, ``np.ptp`` or periodic function (not an add: see
    :func:`through_add`): an engine may pass it by the share it keeps (JAX,
    :meth:`capviz.backends.jax.carried.Carried._products_only`), and a later consumer can
    cancel what it kept (``np.diff(np.diff(x @ w, axis=0), axis=0)``)."""
    return reach.consumer.op not in ("add", "subtract") and goes_on(reach.consumer) \
        and reach.sum.op in contraction_bound.CONTRACTIONS \
        and contraction_bound.is_contraction_node(reach.sum) \
        and reach.consumer.dtype is not None and np.dtype(reach.consumer.dtype).kind in "fc"


def through_add(reach: Reach) -> bool:
    """Whether the walk of :func:`reaches`' ``past_adds`` goes on past ``reach``'s consumer:
    an add or subtract of two operands that a contraction of linear algebra reaches, the first
    on a path (past it, the next add or subtract is a consumer too, and the walk goes on past
    it: :func:`goes_on`, :func:`softmax_shift`), not a centring (tested strictly); or the
    first such add a float16 sum reaches (:func:`_half`). An engine that passes such an add where
    it keeps the product's share (JAX: ``x @ w + b``,
    :data:`capviz.backends.jax.carried.DECLARED_KEPT`) leaves the product's error, within its
    declared bound, in the add's result, which a later consumer can cancel: ``np.diff(x @ w +
    b)``, ``np.sin(30 * (x @ w + b))`` (W=25x, stop 38: float32 rows near each other, 0.0038
    of the result off NumPy's on JAX, silently, where the walk ended at the bias add)."""
    return not reach.centring and reach.consumer.op in ("add", "subtract") \
        and not centres(reach.consumer) and reach.consumer.dtype is not None \
        and np.dtype(reach.consumer.dtype).kind in "fc" \
        and ((reach.sum.op in contraction_bound.CONTRACTIONS
              and contraction_bound.is_contraction_node(reach.sum))
             or _half(reach.sum))


def _half(node: Node) -> bool:
    """Whether ``node`` is a float16 sum (not a contraction): no engine adds it in NumPy's
    order (NumPy adds float16 in float32 and rounds once), so its error is carried, and an add
    tested by its tolerance (a bias add, ``x.sum(-1, keepdims=True) + b``) leaves it in the
    result, which a later consumer can cancel (W=25d's thorough profile, stop 39: float16
    ``x.sum(-1, keepdims=True) + b`` then ``v - v.mean(0)`` gave 0.0 where NumPy gives 0.5 on
    JAX, and ``v.max(0) - v.min(0)`` 5.5 for 6.0, silently)."""
    return node.dtype is not None and np.dtype(node.dtype) == np.float16 \
        and not contraction_bound.is_contraction_node(node)


_STOPS = object()
_RUNTIME = object()
"""What a path op passes the value on by where it is known at run time only (a select's mask,
a square's value, a join's other operands): the path's factor is then ``None``."""


def squares(value: Node, user: Node) -> bool:
    """Whether ``user`` squares ``value`` (:data:`SQUARES`)."""
    args = user.args
    if user.op == "square":
        return len(args) == 1 and args[0] is value
    if user.op == "power":
        exponent = args[1] if len(args) == 2 else None
        return args[0] is value and not isinstance(exponent, (Node, bool)) \
            and isinstance(exponent, (int, float, np.integer, np.floating)) and exponent == 2
    return user.op == "multiply" and len(args) == 2 and args[0] is value and args[1] is value


def passed_positions(user: Node) -> tuple[int, ...]:
    """The argument positions of the path op ``user`` whose values it passes on: the first for
    a move, a scaling or a square, every tensor operand of a join, the picked ones of a
    select."""
    if user.op in JOINS or user.op in CLAMPS:
        return tuple(k for k, a in enumerate(user.args) if isinstance(a, Node))
    if user.op in SELECTS:
        return SELECTS[user.op]
    return (0,)


def _passes(value: Node, user: Node) -> Any:
    """How ``user`` passes ``value`` on: ``None`` (exactly or rounded once, no scale), the
    other operand it scales by, ``_RUNTIME`` (by what is known at run time only: every op
    the lists do not describe, and every result that is not a float), or ``_STOPS``
    (:data:`STOPS`)."""
    args = user.args
    if user.op in STOPS:
        return _STOPS
    stopped = STOP_POSITIONS.get(user.op)
    if stopped is not None and not any(a is value for k, a in enumerate(args)
                                       if k not in stopped):
        return _STOPS  # np.full_like(s, 1.0): the value's shape only
    if not _floating(user) or user.shape is None:
        return _RUNTIME  # an integer, a boolean, several results (np.modf): carried on
    if user.op in MOVES:
        if not args or args[0] is not value:
            return _RUNTIME  # the value an index, a shift...: what it moves jumps with it
        # an index or take by a tensor: moved as the run time's values say
        return _RUNTIME if any(isinstance(a, Node) for a in args[1:]) else None
    if user.op in JOINS:
        if any(isinstance(a, Node) and a is not value for a in args):
            return _RUNTIME  # values of another operand beside the value's
        return None
    if user.op not in SCALINGS or len(args) != 2:
        return _RUNTIME  # picks, clamps, selects, squares, and every op not listed
    first, second = args
    if user.op == "divide":
        return second if first is value and second is not value else _RUNTIME
    return second if first is value else first


def tuple_consumer(user: Node) -> bool:
    """Whether ``user`` is the ``unpack`` of the result of :data:`TUPLE_CONSUMERS` that takes
    a multiple away from the value (``np.modf(s)[0]``)."""
    if user.op != "unpack" or not user.args or not isinstance(user.args[0], Node):
        return False
    made = user.args[0]
    return made.op in TUPLE_CONSUMERS and user.params.get("index") == TUPLE_CONSUMERS[made.op]


def _scaled(factor: float | None, user: Node, scale: Any) -> float | None:
    """The path's factor after ``user`` (``scale``: its other operand, or ``None``)."""
    if factor is None:
        return None
    if user.op == "negative":
        return -factor
    if scale is None:
        return factor
    if scale is _RUNTIME:
        return None
    if isinstance(scale, Node) or not isinstance(scale, (int, float, np.number)) \
            or isinstance(scale, (complex, np.complexfloating)):
        return None
    number = float(scale)
    if user.op == "divide":
        return factor / number if number else None
    return factor * number


def _consumed(start: Node, value: Node, user: Node, path: tuple[Node, ...],
              factor: float | None) -> Reach | None:
    """The reach of ``start`` ending at the consumer ``user`` that reads ``value``, or
    ``None`` where it cannot cancel (a number 0, the value added to itself, not two operands,
    the value a divisor, an outer product of another ufunc)."""
    position = next(k for k, a in enumerate(user.args) if a is value)
    if user.op == "gradient":  # several outputs: the differences of the value's neighbours
        return Reach(start, user, path, position, factor, False) if _floating(value) else None
    if tuple_consumer(user):  # np.modf(s)[0], np.divmod(s, d)[1]: of the value divided
        before = path[-2] if len(path) > 1 else start  # what reached the np.modf/np.divmod
        return Reach(start, user, path, 0, factor, False) \
            if value.args and value.args[0] is before else None
    if not _numeric(user) or user.shape is None:
        return None  # a boolean add (a logical or): carried on
    if user.op in DIFFERENCES or user.op in SPREADS:
        return Reach(start, user, path, position, factor, False)
    if periodic(user):  # np.sin(s): of the value, modulo its period
        return Reach(start, user, path, 0, factor, False)
    if len(user.args) != 2:
        return None
    first, second = user.args
    if user.op == "ufunc_outer":  # s_i - s_j: the same node's values cancel too
        if user.params.get("ufunc") not in OUTERS:
            return None
        return Reach(start, user, path, position, factor, False)
    if user.op in REMAINDERS:
        return Reach(start, user, path, 0, factor, False) if position == 0 else None
    if same_value(first, second):  # s + s, s - s (written twice too): no roundings cancel
        return None
    other = user.args[1 - position]
    if not isinstance(other, Node):
        try:
            if other == 0:
                return None
        except (TypeError, ValueError):
            pass
    operand = start.args[0] if start.args else None
    centring = factor is not None and isinstance(other, Node) and other is operand
    return Reach(start, user, path, position, factor, centring)


def declared(reach: Reach) -> bool:
    """Whether ``reach`` of a contraction of linear algebra (not a centring) is one an engine
    follows (hostile review 6, finding 4: ``x @ ones - t`` was 8% off NumPy's, silently): to
    an add or subtract, through a path with or without other contractions on it
    (:func:`through_contractions`: ``x @ ones - t``, ``(x @ ones)[:, None] / n - m``,
    ``np.sqrt(x @ ones) - np.sqrt(t)``, ``(x @ ones) @ w - t``, attention's ``p @ v`` through
    the heads' projection to its bias add). NumPy's product is its BLAS's order; an add or
    subtract can cancel the product's error. A reach to another consumer (``np.diff(x @
    ones)``, ``np.var``) leaves the product declared here
    (``capviz.backends.contraction_bound``); an engine follows it as a difference or a
    spread."""
    return reach.consumer.op in ("add", "subtract") \
        and reach.sum.op in contraction_bound.CONTRACTIONS \
        and contraction_bound.is_contraction_node(reach.sum) and through_contractions(reach)


def through_contractions(reach: Reach) -> bool:
    """Whether an engine follows ``reach`` of a contraction past the contractions on its path:
    always (the lead's ruling 37 07:30 (a)), whatever the product's operands. A product with
    a weight (``(x @ ones) @ w - t``, a LoRA's ``x @ A @ B.T + 0.1``; W=25s, stop 36: ``(x @
    ones) @ w1 - t`` of float32 rows near 1e3 and a (1, 8) ``w1`` of ones was 370 times the
    tolerance off NumPy's on JAX, silently), and a product of two computed values or inputs
    (attention's ``p @ v`` through ``c_proj``, a Gram ``h.T @ h`` or ``x.T @ x`` through a
    weight, linear attention's ``(q @ k.T) @ v`` through its projection: stop 37, W=25j,
    ``(x.T @ x) @ w - t`` of float32 rows near 1e3 was 2.75 off NumPy's values near 5,
    silently, where only products with a weight were followed). Its bound is carried through
    them as through any contraction (the same product of the bounds and the other operands'
    magnitudes, or its rank-1 form)."""
    return True
