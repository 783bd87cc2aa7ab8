"""Which values a replay reads only through ops that keep their relative error: a value within
its own tolerance of NumPy's (a sum dask.array adds in its own order, a consumer's result tested
against a larger product's carried bound) stays within it through them, and anything else
(another op that subtracts, an ``np.convolve``, an ``np.exp``) can take it beyond, with no check
(:mod:`capviz.backends.dask.before_cancel`, :mod:`capviz.backends.dask.product_checks`)."""

from __future__ import annotations

import numpy as np

from capviz.backends import cancelling
from capviz.core.ir import Node
from capviz.ops import traits

KEEPS = frozenset(("multiply", "divide", "true_divide", "negative", "positive", "absolute",
                   "fabs", "sqrt", "square", "maximum", "minimum", "fmax", "fmin", "max",
                   "min", "nanmax", "nanmin", "copy", "asarray", "tanh", "arctan",
                   "arcsinh", "unpack")) | traits.MOVE
"""Ops whose result keeps a value's relative error (scalings, picks, moves, one result of
several, and ``tanh``, ``arctan``, ``arcsinh``, whose condition number is at most 1; not
``exp``, whose is the value's magnitude; ``np.add.outer`` and ``np.subtract.outer`` are not
moves: every pair of values, which can cancel)."""


def combined(node: Node, users: dict[int, list[Node]]) -> bool:
    """Whether ``node``'s value reaches an op other than :data:`KEEPS` (a cast to a float type
    among them): one that combines values in ways no list of consumers names
    (``np.convolve(x.sum(-1), [1, -1])``, ``np.fft.fft``, ``np.add.reduce`` of a stack of it:
    silent on Dask before stop 36), or that subtracts them (``np.diff(x @ w + b)`` of a product
    larger than one block: silent before stop 39). ``users``: the op nodes that read each
    node, by its index."""
    stack, seen = [node], {node.index}
    while stack:
        for user in users.get(stack.pop().index, ()):
            float_cast = user.op == "astype" and user.dtype is not None \
                and np.dtype(user.dtype).kind in "fc"
            outer = user.op == "ufunc_outer" \
                and user.params.get("ufunc") in cancelling.OUTERS
            if (user.op not in KEEPS and not float_cast) or outer:
                return True
            if user.index not in seen:
                seen.add(user.index)
                stack.append(user)
    return False


def amplifying(value: Node, user: Node) -> bool:
    """Whether :data:`KEEPS` op ``user`` of ``value`` can take an error within the tolerance's
    absolute part (``atol``) beyond the tolerance of its own result: a product by anything but
    a number of magnitude at most 1, a quotient of ``value`` by anything but a number of
    magnitude at least 1 (or by ``value``: ``x / s``), a root, a square (``(x @ w + b) *
    1e12`` of a result near 0 within ``atol``, ``x.sum(-1) * 1e12`` of a sum near 0: 116 and
    7.3 off NumPy's 0, silently, on Dask before stop 40)."""
    args = user.args
    if user.op in ("sqrt", "square"):
        return True
    if user.op == "multiply" and len(args) == 2:
        other = args[1] if args[0] is value else args[0]
        return other is value or _magnitude(other) is None or _magnitude(other) > 1
    if user.op in ("divide", "true_divide") and len(args) == 2:
        divisor = _magnitude(args[1])
        return args[0] is not value or args[1] is value or divisor is None or divisor < 1
    return False


def amplified(node: Node, users: dict[int, list[Node]]) -> bool:
    """Whether ``node``'s value reaches, through :data:`KEEPS` ops, one that is
    :func:`amplifying`: its check must then hold the tolerance's relative part alone (a sum's,
    :func:`capviz.backends.dask.reductions`; a larger product's consumer is gathered,
    :mod:`capviz.backends.dask.chained`)."""
    stack, seen = [node], {node.index}
    while stack:
        value = stack.pop()
        for user in users.get(value.index, ()):
            if amplifying(value, user):
                return True
            if user.index not in seen:
                seen.add(user.index)
                stack.append(user)
    return False


def _magnitude(value: object) -> float | None:
    """The magnitude of a real number, ``None`` for a tensor or anything else."""
    if isinstance(value, (Node, bool, complex, np.complexfloating)) \
            or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    return abs(float(value))

