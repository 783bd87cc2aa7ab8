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
