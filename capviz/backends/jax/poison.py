"""Which ops carry a NaN from an operand to their result: what lets the fast JAX program poison
a value instead of testing it.

The subnormal checks (:mod:`capviz.backends.jax.subnormals`) find, per element, where XLA's
flush to zero may have changed a value. The replay's *precise* program reduces each such mask to
a flag that fails at its node. A reduction per checked op reads values that XLA would otherwise
fuse away (on GPT-2 small, 334.5 kernels per layer against jax.jit's 118), so the *fast* program
instead **poisons**: it replaces each element that fails its test by NaN
(``where(ok, value, nan)``, an elementwise select XLA fuses into the consumer), and tests for
NaN only where a value leaves the program: its outputs and state writes, the values guards
read (:meth:`capviz.backends.jax.trace.Trace.clean`), and the operands of every op that does
not carry a NaN to its result. A NaN found there reruns the precise program, which fails at the
node whose check failed, or, when none did (a legitimate NaN, or a fast test that fired on an
underflow NumPy shares), gives the replay's results.

That is sound when every op between a poisoned element and a place that is tested either makes
each result element that depends on the poisoned element NaN, or does not depend on that
element's value (then XLA's flush of it could not change the result either). :data:`PROPAGATES`
lists the ops that do, each verified on jax (``tests/test_jax_poison.py`` replays every one with
a NaN operand); any other op reading a possibly poisoned operand (a comparison, a cast to an
integer, ``argmax``, ``sort``, the ``nan`` reductions, ``fmax``, ``isnan``, ``hypot``,
``copysign``, ``x ** y`` of a computed ``y``...) tests that operand for NaN first
(:meth:`Poisons.screen`). A result counts as possibly poisoned ("tainted") only when it is a real
float: a NaN cannot live in an integer, a boolean, and complex arithmetic does not always carry
it (``abs(nan + infj)`` is ``inf``), so an op making those from a tainted operand tests it.

The select itself is deferred along elementwise chains (:data:`INHERITS`): XLA's CPU code for a
select per op of a long chain is several times slower than the chain (on a 100-op chain of
``x * y``, ``x + y``: 12x ``jax.jit`` with a select per op, against about 5x with the masks
and-ed and one select at the end). So a result whose check fails keeps its mask *pending*
(:meth:`Poisons.result`); an elementwise op of :data:`INHERITS` and-s its operands' pending
masks into its own, and any other reader, an output or a guard applies the mask first
(``where(mask, value, nan)``, :meth:`Poisons.screen`, :meth:`Poisons.sink`). Each result
element's mask is then the and of the masks of the elements it is computed from, at the same
position or broadcast to it, so a NaN appears wherever an applied value depends on a failed
element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.core.ir import Node
from capviz.ops import traits

_ALL = None

PROPAGATES: dict[str, tuple[int, ...] | None] = {
    # elementwise arithmetic: IEEE's NaN in, NaN out (XLA's max and min too)
    **dict.fromkeys(("add", "subtract", "multiply", "divide", "maximum", "minimum", "arctan2",
                     "logaddexp", "logaddexp2", "clip"), _ALL),
    **dict.fromkeys(("negative", "positive", "absolute", "fabs", "sign", "sqrt", "cbrt",
                     "square", "reciprocal", "exp", "exp2", "expm1", "log", "log2", "log10",
                     "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
                     "tanh", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "degrees",
                     "radians", "floor", "ceil", "trunc", "rint", "round", "copy",
                     "real", "conjugate", "astype"), _ALL),
    "ldexp": (0,),  # the exponent is an integer
    "where": (1, 2),  # its values; a float condition is a truth test (NaN is true)
    # moves: each result element is one operand element, or not read from a poisoned one
    **dict.fromkeys((*(traits.MOVE - {"meshgrid", "ufunc_outer"}), *traits.SPLIT, "unpack"), _ALL),
    **dict.fromkeys(traits.GATHER, (0,)),
    **dict.fromkeys(("setitem", "index_put"), _ALL),
    # reductions and scans: a NaN term makes the sum, product, mean, spread, max and min NaN
    **dict.fromkeys(("sum", "mean", "var", "std", "prod", "max", "min", "cumsum", "cumprod",
                     "cumulative_sum", "cumulative_prod", "trace", "diff"), _ALL),
    # contractions: NaN times anything (0 included) is NaN, and so is every sum it is in
    **dict.fromkeys((*traits.CONTRACT, "inner", "vecdot", "linalg.vecdot", "matvec", "vecmat",
                     "kron"), _ALL),
}
"""Op -> the operand positions from which a NaN reaches every result element depending on it
(``None``: all); the result must be a real float as well (see the module doc). ``power`` and
``float_power`` carry a NaN base when the exponent is a nonzero literal (:func:`_carries`):
``nan ** 0`` and ``1 ** nan`` are 1."""

_POWERS = frozenset(("power", "float_power"))

INHERITS = frozenset((
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "arctan2", "logaddexp",
    "logaddexp2", "clip", "negative", "positive", "absolute", "fabs", "sign", "sqrt", "cbrt",
    "square", "reciprocal", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin",
    "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
    "arctanh", "deg2rad", "rad2deg", "degrees", "radians", "floor", "ceil", "trunc", "rint",
    "round", "copy", "real", "conjugate", "astype", "ldexp", "where", *_POWERS))
"""The elementwise ops of :data:`PROPAGATES`: each result element is computed from the operand
elements at its position (broadcast), so an operand's pending mask, broadcast, is the result's
(see the module doc)."""


def _carries(node: Node, position: int) -> bool:
    """Whether a NaN operand at ``position`` of op ``node`` makes its result NaN (see
    :data:`PROPAGATES`)."""
    dtype = node.dtype
    if dtype is not None and np.dtype(dtype).kind != "f":
        return False  # a NaN does not live in an integer or a boolean; complex: see the doc
    if node.op in _POWERS:
        exponent = node.args[1] if len(node.args) > 1 else None
        return position == 0 and not isinstance(exponent, Node) and exponent is not None \
            and _nonzero_number(exponent)
    if node.op not in PROPAGATES:
        return False
    positions = PROPAGATES[node.op]
    return positions is None or position in positions


def _nonzero_number(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return value != 0 and value == value
    return False


def tainted(node: Node, poisoned: set[int]) -> bool:
    """Whether ``node``'s value may hold a poisoned NaN: ``poisoned`` holds the indices of the
    op nodes a trace poisoned or found tainted; an ``unpack`` (a step the trace does not enter)
    is tainted when the tuple it reads is."""
    while True:
        if node.index in poisoned:
            return True
        if node.kind != "op" or node.op != "unpack":
            return False
        node = node.args[0]


class Poisons:
    """What the fast trace of a program poisoned: the tainted nodes (their values may hold a
    poisoned NaN) and the pending masks (a node's value is to be read as NaN where its mask is
    false), by node index, and the NaN tests made where they leave (``clean``: the trace's
    test of a value for NaN, a flag with no node; ``flag``: the trace's flag with no node)."""

    def __init__(self, jnp: Any, clean: Any, flag: Any) -> None:
        self._jnp = jnp
        self._clean = clean
        self._flag = flag
        self.tainted: set[int] = set()
        self.pending: dict[int, Any] = {}
        self._own: Any = None
        # the checks each pending mask is the and of, as bits (one per check, by its order): an
        # operand's mask whose checks the result's already holds is not and-ed in again
        self._terms: dict[int, int] = {}
        self._own_terms = 0
        self._checks = 0

    def __bool__(self) -> bool:
        return bool(self.tainted or self.pending)

    def _nan(self, value: Any, mask: Any) -> Any:
        jnp = self._jnp
        return jnp.where(mask, value, jnp.asarray(np.nan, value.dtype))

    def result(self, mask: Any, terms: int = 0) -> None:
        """The running op's result is to be NaN where ``mask`` is false (pending): a check of
        its own, or (``terms``: the checks it is the and of) an operand's pending mask.

        An operand's mask whose checks the result's mask already holds is left out, and one
        that holds all of the result's replaces it: ``p = p + th; th = th + p`` (a recurrence
        of two values) and-ed each mask with one its other operand's already held, a mask
        whose expression doubled at every step, on which XLA's CPU compiler failed past 14
        adds ('Unknown MLIR failure', hostile review 13, finding 11); now it is a chain of
        one and per check."""
        if not terms:
            self._checks += 1
            terms = 1 << self._checks
        if self._own is None or terms | self._own_terms == terms:
            self._own, self._own_terms = mask, terms
        elif terms | self._own_terms != self._own_terms:
            self._own, self._own_terms = self._own & mask, self._own_terms | terms

    def operand(self, node: Node, value: Any, mask: Any) -> Any:
        """An operand of the running op ``node``, NaN where ``mask`` is false (applied: the op
        is a reduction or a product that carries it); the node is tainted."""
        self.tainted.add(node.index)
        return self._nan(value, mask)

    def screen(self, node: Node, args: tuple, offset: int) -> tuple:
        """Before op ``node`` runs on ``args`` (its operands from ``offset`` on): each operand's
        pending mask is inherited (:data:`INHERITS`) or applied; an operand that may then hold
        a poisoned NaN is tested for NaN unless the op carries it (:func:`_carries`), and
        taints the node when it does. Returns the arguments to run the op on."""
        inherits = node.op in INHERITS
        out = list(args)
        for k, a in enumerate(node.args):
            if not isinstance(a, Node):
                continue
            mask = self.pending.get(a.index)
            carried = _carries(node, k)
            if mask is not None and inherits and carried:
                self.result(mask, self._terms[a.index])
                mask = None
            if mask is not None:
                out[offset + k] = self._nan(args[offset + k], mask)
            elif not tainted(a, self.tainted):
                continue
            if carried:
                self.tainted.add(node.index)
            else:
                self._clean(out[offset + k])
        return tuple(out)

    def settle(self, node: Node, result: Any) -> None:
        """After op ``node`` ran: its pending mask (its own checks' and its operands')."""
        mask, terms, self._own, self._own_terms = self._own, self._own_terms, None, 0
        if mask is None:
            return
        jnp = self._jnp
        if not hasattr(result, "shape") or \
                jnp.broadcast_shapes(mask.shape, result.shape) != tuple(result.shape):
            self._flag(jnp.all(mask))  # a mask that does not fit the result: tested now
            return
        self.pending[node.index] = mask
        self._terms[node.index] = terms

    def sink(self, value: Any, node: Node) -> None:
        """``value`` (of ``node``) leaves the program: tested for a poisoned NaN."""
        if not isinstance(node, Node):
            return
        mask = self.pending.get(node.index)
        if mask is not None:
            self._clean(self._nan(value, mask))
        elif tainted(node, self.tainted):
            self._clean(value)
