"""Compositions: a producer's value read by a consumer that can cancel it, through a path.

The op table's examples capture one function each, so they never compose a product or a sum with
what later reads it, and every Dask silent class of stop 36 was such a composition (``np.diff(x @
ones)``, ``np.convolve(x.sum(-1), [1, -1])``). Each base here is one producer (a contraction, a wide
one of 1,024 terms, a sum, a mean, an approximated function, a float16 sum, a complex product) whose
value goes through a path (as it is, a move, a scaling, a second contraction with a weight, a bias
add) to a consumer that subtracts values (an add or subtract of two tensors, ``np.diff``,
``np.ptp``, ``np.var``, ``np.std``, a layer norm, ``max - min``, ``np.cov``, batch centring, a
softmax; ``np.sin``, which takes multiples of its period away; and a bias add, which does not
cancel), with values that cancel (the producer's inputs near 100: every row of the value near the
same large number, the consumer's result small against it) or that do not (the drawn values as they
are). Every consumer subtracts along axis 0, where the offset is the same. Inputs: ``x`` (6, 8),
``w`` (8, 4), ``v`` (8, 8), ``b`` (8,), drawn in a float or complex dtype (:data:`DTYPES`), each
base drawn by :func:`.cases.compose` (the CI profile: a fifth of them once; the thorough one: each
of them with each value generator)."""

from __future__ import annotations

import itertools

import numpy as np

SHAPES = ((6, 8), (8, 4), (8, 8), (8,))
"""The inputs ``x``, ``w``, ``v``, ``b``."""

DTYPES = ("float16", "float32", "float64", "complex64", "complex128")
"""The dtypes a composition's inputs take (the values that round)."""

OFFSET = 100
"""What the inputs of a producer whose values cancel are moved by."""

WIDE = 128
"""How many times ``wide matmul`` repeats the contracted axis (1,024 terms: a layer's width,
where a float32 product's rounding is beyond the tolerance of what cancels it)."""

PRODUCERS = {
    "matmul": lambda x, w: x @ w,
    "wide matmul": lambda x, w: np.tile(x, (1, WIDE)) @ np.tile(w, (WIDE, 1)),
    "einsum": lambda x, w: np.einsum("ij,jk->ik", x, w),
    "complex matmul": lambda x, w: (x + 1j) @ (w - 0.5j),
    "sum": lambda x, w: x.sum(-1, keepdims=True),
    "mean": lambda x, w: x.mean(-1, keepdims=True),
    "float16 sum": lambda x, w: x.astype(np.float16).sum(-1, keepdims=True),
    "exp": lambda x, w: np.exp(x * 0.01),
    "sin": lambda x, w: np.sin(x * 0.01),
    "complex product": lambda x, w: (x + 1j) * (x[::-1] - 2j),
}
"""Each producer's value of ``x`` (moved by :data:`OFFSET` where the values cancel) and
``w``: 2-d, its rows along axis 0."""

def _softmax(q, b):
    e = np.exp(q - q.max(0, keepdims=True))
    return e / e.sum(0, keepdims=True)


THROUGH = {
    "direct": lambda p, v: p,
    "move": lambda p, v: p[::-1].T.T,
    "scaling": lambda p, v: p * 0.5,
    "contraction": lambda p, v: p @ v[:p.shape[1], :3],
    "bias add": lambda p, v: p + v[0, :p.shape[1]],
}
"""The path from the producer to the consumer. ``bias add`` is a layer's ``x @ W + b`` (a drawn
row of ``v`` added to every row): a bias that keeps most of the product, after which the
product's rounding still reaches the consumer (ruling 39 14:10, the batch-centring hole)."""

CONSUMERS = {
    "add": lambda q, b: q + (-q[:1]),
    "subtract": lambda q, b: q - q[::-1],
    "diff": lambda q, b: np.diff(q, axis=0),
    "ptp": lambda q, b: np.ptp(q, axis=0),
    "var": lambda q, b: np.var(q, axis=0),
    "std": lambda q, b: np.std(q, axis=0),
    "layer norm": lambda q, b: (q - q.mean(0, keepdims=True))
    / np.sqrt(q.var(0, keepdims=True) + 1e-5),
    "max-min": lambda q, b: q.max(0) - q.min(0),
    "cov": lambda q, b: np.cov(q, rowvar=False),
    "bias": lambda q, b: q + b[:q.shape[1]],
    "centring": lambda q, b: q - q.mean(0),
    "sin": lambda q, b: np.sin(q),
    "softmax": _softmax,
}
"""The consumers of the value (each along axis 0); ``bias`` adds a drawn vector, which does not
cancel the value; ``centring`` is batch centring (``v - v.mean(0)``); ``sin`` takes a multiple of
its period away (a SIREN layer); ``softmax`` is ``exp(v - v.max(0))`` normalised, whose exp's
relative error is its argument's absolute error."""

VALUES = ("cancel", "plain")
"""Whether the producer's inputs are moved by :data:`OFFSET` (its values cancel in the
consumer) or not."""


def _composed(producer, through, consumer, cancel: bool):
    def fn(x, w, v, b):
        p = producer(x + OFFSET if cancel else x, w)
        return consumer(through(p, v), b)

    return fn


def table() -> list[tuple[str, object, bool]]:
    """``(id, fn, in the CI profile)`` of every composition:
    ``comp.<producer>.<path>.<consumer>.<values>``. The CI profile takes one path per producer
    and consumer, in turn (every producer through every path, every consumer through every
    path, both values: a fifth of them); the thorough one takes all."""
    out = []
    for ((i, (pn, producer)), (j, (tn, through)), (k, (cn, consumer)),
         values) in itertools.product(enumerate(PRODUCERS.items()), enumerate(THROUGH.items()),
                                      enumerate(CONSUMERS.items()), VALUES):
        name = f"comp.{pn}.{tn}.{cn}.{values}".replace(" ", "_")
        ci = j == (i + k) % len(THROUGH)
        out.append((name, _composed(producer, through, consumer, values == "cancel"), ci))
    return out
