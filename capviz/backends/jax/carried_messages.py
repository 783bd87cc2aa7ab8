"""The messages of a consumer's failure on the JAX backend (:mod:`capviz.backends.jax.carried`):
what the bound carried to an add or subtract (or another consumer) comes from, and the fixes that
apply."""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.backends import cancelling, contraction_bound
from capviz.backends.jax.carried_sources import APPROXIMATED
from capviz.backends.jax.trace import dtype_of
from capviz.core.ir import Node

_MESSAGE = ("np.{op}: {operands} added in XLA's order (np.{sums}, within the tolerance of "
            "the sum), and this {op} {cancels}: the sum's error, carried here, is beyond "
            "the tolerance of the result, so NumPy's value and XLA's may differ there; replay "
            "with backend='numpy'{fix}")

_APPROXIMATED_MESSAGE = ("np.{op}: {operands} computed by XLA's own np.{sums} (within {k} "
                         "units in the last place of NumPy's), and this {op} {cancels}: "
                         "that difference, carried here, is beyond the tolerance of the "
                         "result, so NumPy's value and XLA's may differ there; replay with "
                         "backend='numpy'")


_NORM_MESSAGE = (
    "np.{op}: {operands} np.linalg.norm of a whole array (NumPy takes it from its BLAS dot, "
    "whose order is its own: declared within 2 gamma_n sum(|x|**2) of XLA's sum of squares), "
    "and this {op} {cancels}: that bound, carried here, is beyond the tolerance of the "
    "result, so NumPy's value and XLA's may differ there; replay with backend='numpy', or take "
    "the norms in float64 (np.linalg.norm(x.astype(np.float64)))")

XLA_FIX = (", or take XLA's order of summation for products with arithmetic='xla' "
           "(graph.compare reports the difference)")
"""The fix every refusal of a contraction's carried bound names last (the lead's ruling 37
07:30 (a)): the JAX replay's opt-in to XLA's arithmetic, under which a contraction and what is
computed from it are not tested (:func:`capviz.backends.jax.cancellation.of`)."""

_CONTRACTED_MESSAGE = (
    "np.{op}: {operands} a product of linear algebra (np.{sums}: NumPy's BLAS and XLA add its "
    "products in their own orders, declared within 2 gamma_k |A| @ |B| of each other), and "
    "this {op} cancels {them} against the product's own operand: that bound, carried here, is "
    "beyond the tolerance of the result, so NumPy's value and XLA's may differ there; replay "
    "with backend='numpy', or write a sum or mean along an axis as np.sum or np.mean, which "
    "the replay adds in NumPy's order" + XLA_FIX)


_SPREAD_CONTRACTED_MESSAGE = (
    "np.{op}: {operands} a product of linear algebra (np.{sums}: NumPy's BLAS and XLA add its "
    "products in their own orders, declared within 2 gamma_k |A| @ |B| of each other), and "
    "this {op} subtracts {them} from each other: that bound, carried here, is beyond the "
    "tolerance of the result, so NumPy's value and XLA's may differ there; replay with "
    "backend='numpy'" + XLA_FIX)


_REMAINDER_CONTRACTED_MESSAGE = (
    "np.{op}: {operands} a product of linear algebra (np.{sums}: NumPy's BLAS and XLA add its "
    "products in their own orders, declared within 2 gamma_k |A| @ |B| of each other), and "
    "this {op} takes a multiple of the divisor away from it: that bound, carried here, is "
    "beyond the tolerance of the result, so NumPy's value and XLA's may differ there; replay "
    "with backend='numpy'" + XLA_FIX)


_PERIODIC_CONTRACTED_MESSAGE = (
    "np.{op}: {operands} a product of linear algebra (np.{sums}: NumPy's BLAS and XLA add its "
    "products in their own orders, declared within 2 gamma_k |A| @ |B| of each other), and "
    "this {op} takes a multiple of its period away from it: that bound, carried here, is "
    "beyond the tolerance of the result, so NumPy's value and XLA's may differ there; replay "
    "with backend='numpy'" + XLA_FIX)


_SHIFTED_MESSAGE = (
    "np.{op}: {operands} a product of linear algebra (np.{sums}: NumPy's BLAS and XLA add its "
    "products in their own orders, declared within 2 gamma_k |A| @ |B| of each other) less its "
    "largest value, and this {op}'s relative error is its argument's absolute error: that "
    "bound, carried here, is beyond the tolerance of the result, so NumPy's value and XLA's "
    "may differ there; replay with backend='numpy'" + XLA_FIX)
"""Softmax's exponential past a kept add (:func:`capviz.backends.cancelling.softmax_shift`)."""


_DECLARED_MESSAGE = (
    "np.{op}: {operands} a product of linear algebra (np.{sums}: NumPy's BLAS and XLA add its "
    "products in their own orders, declared within 2 gamma_k |A| @ |B| of each other), and "
    "this {op} cancels {them}: that bound, carried here, is beyond the tolerance of the "
    "result, so NumPy's value and XLA's may differ there; replay with backend='numpy'{fix}"
    + XLA_FIX)

_SUM_FIX = ", or write the sum as np.sum, which the replay adds in NumPy's order"
"""The fix of :data:`_DECLARED_MESSAGE` where a product has a constant vector operand (``x @
ones``: a sum written as a product; ``x @ w``, a weighted one, is ``np.sum(x * w, -1)``), not
a layer's weight matrix."""

_DISTANCES_FIX = (", or write the squared distances as the broadcast difference ((x[:, None] - "
                  "y[None]) ** 2).sum(-1), which the JAX replay holds within its tolerance")
"""The fix of :data:`_DECLARED_MESSAGE` where a product is of rows with rows (``x @ y.T``,
``np.dot(x, y.T)``, ``np.inner(x, y)``: ``|x|**2 + |y|**2 - 2 x @ y.T``, pairwise squared
distances; R7 #33)."""

_TRANSPOSES = frozenset(("transpose", "matrix_transpose", "swapaxes", "moveaxis",
                         "permute_dims"))


def declared_fix(products: list) -> str:
    """The fix :data:`_DECLARED_MESSAGE` quotes for the declared contractions ``products``:
    :data:`_DISTANCES_FIX` where every one is of 2-d rows with rows, :data:`_SUM_FIX` where
    every one has a constant vector operand, else none but ``backend='numpy'`` (and
    :data:`XLA_FIX`)."""
    def rows(node: Node) -> bool:
        tensors = [a for a in node.args if isinstance(a, Node)]
        if len(tensors) != 2 or any(a.shape is None or len(a.shape) != 2 for a in tensors):
            return False
        if node.op == "inner":
            return True
        return node.op in ("matmul", "dot") and tensors[1].op in _TRANSPOSES

    if all(rows(n) for n in products):
        return _DISTANCES_FIX
    if all(any(isinstance(a, Node) and a.kind == "constant" and a.shape is not None
               and len(a.shape) == 1 for a in n.args) for n in products):
        return _SUM_FIX
    return ""


_SHOWN = {"sum_where": "sum", "mean_where": "mean", "ufunc_reduce": "add.reduce",
          "ufunc_accumulate": "add.accumulate"}
"""The NumPy name a message gives a sum recorded under another op's name."""


def shown_consumer(node: Node) -> str:
    """The NumPy name of the consumer ``node`` in a message (``subtract.outer``, ``modf``)."""
    if node.op == "ufunc_outer":
        return f"{node.params.get('ufunc')}.outer"
    if node.op == "unpack" and node.args and isinstance(node.args[0], Node):
        return node.args[0].op
    return node.op


def consumer(node: Node, result: Any, reaches: list, bounds: dict,
             products: tuple = ()) -> str:
    """The message of the consumer ``node``'s failure, naming the sums whose bounds reach
    it (``reaches``: those of sums not declared; ``bounds``: the carried bounds by node
    index; ``products``: the declared contractions whose bounds reach it too, past a kept add:
    ``h - h.mean(0)`` of ``h = x @ w + b``, named with the fix ``arithmetic='xla'``)."""
    sums = sorted({_SHOWN.get(r.sum.op, r.sum.op) for r in reaches
                   if bounds.get(r.sum.index) is not None})
    if not sums:  # the bounds come from another consumer's reaches: the same test
        sums = sorted({_SHOWN.get(r.sum.op, r.sum.op) for r in reaches})
    n = len([r for r in reaches if bounds.get(r.sum.index) is not None]) or 1
    real = np.dtype(dtype_of(result).type(0).real.dtype)
    fix = ", or sum in float64 (dtype=np.float64)" if real != np.float64 else ""
    operands = "its operand was" if n == 1 else "its operands were"
    them = "it" if n == 1 else "them"
    cancels = f"takes a multiple of its period away from {them}" \
        if cancelling.periodic(node) else f"cancels {them}"
    op = shown_consumer(node)
    carrying = [r.sum for r in reaches if bounds.get(r.sum.index) is not None]
    if carrying and all(s.op == contraction_bound.NORM for s in carrying):
        return _NORM_MESSAGE.format(op=op, operands=operands, cancels=cancels)
    if carrying and all(contraction_bound.is_contraction_node(s) for s in carrying) \
            and node.op in cancelling.DIFFERENCES | cancelling.SPREADS:
        return _SPREAD_CONTRACTED_MESSAGE.format(
            op=op, operands=operands, sums=", np.".join(sums),
            them="its values" if n == 1 else "their values")
    if carrying and all(contraction_bound.is_contraction_node(s) for s in carrying) \
            and node.op in cancelling.REMAINDERS:
        return _REMAINDER_CONTRACTED_MESSAGE.format(op=op, operands=operands,
                                                    sums=", np.".join(sums))
    if carrying and all(contraction_bound.is_contraction_node(s) for s in carrying) \
            and cancelling.periodic(node):
        return _PERIODIC_CONTRACTED_MESSAGE.format(op=op, operands=operands,
                                                   sums=", np.".join(sums))
    if carrying and all(contraction_bound.is_contraction_node(s) for s in carrying) \
            and node.op in cancelling.EXPONENTIALS:
        return _SHIFTED_MESSAGE.format(op=op, operands=operands, sums=", np.".join(sums))
    if carrying and all(contraction_bound.is_contraction_node(s) for s in carrying):
        return _CONTRACTED_MESSAGE.format(op=op, operands=operands,
                                          sums=", np.".join(sums), them=them)
    if sums and all(s in APPROXIMATED for s in sums):
        return _APPROXIMATED_MESSAGE.format(
            op=op, operands=operands, sums=", np.".join(sums), cancels=cancels,
            k=max(APPROXIMATED[s] for s in sums))
    if products:  # named after the sums (the generic message only)
        sums = sums + sorted({p.op for p in products} - set(sums))
        operands = "its operands were"
        cancels = "takes a multiple of its period away from them" \
            if cancelling.periodic(node) else "cancels them"
    if products or any(contraction_bound.is_contraction_node(s) for s in carrying):
        fix += XLA_FIX  # np.diff(np.tanh(x @ w + b)): the product's bound among others
    return _MESSAGE.format(op=op, operands=operands, sums=", np.".join(sums),
                           cancels=cancels, fix=fix)

def declared(node: Node, mine: list) -> str:
    """The message of the consumer ``node``'s failure where only declared contractions' reaches
    ``mine`` carry their bounds to it (:meth:`capviz.backends.jax.carried.Carried._declared`)."""
    n = len({r.position for r in mine})
    if node.op in cancelling.EXPONENTIALS:
        return _SHIFTED_MESSAGE.format(op=node.op, operands="its operand was",
                                       sums=", np.".join(sorted({r.sum.op for r in mine})))
    return _DECLARED_MESSAGE.format(
        op=shown_consumer(node), operands="its operand was" if n == 1 else
        "its operands were", them="it" if n == 1 else "them",
        sums=", np.".join(sorted({r.sum.op for r in mine})),
        fix=declared_fix([r.sum for r in mine]))
