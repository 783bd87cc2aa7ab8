"""Which values of a JAX replay are read by an op that can take an error within the tolerance's
absolute part beyond its own result's tolerance (issue 25; stop 41).

A sum XLA adds in its own order (:mod:`capviz.backends.jax.cancellation`) and an add or subtract
a carried bound reaches (:mod:`capviz.backends.jax.carried`) are tested against ``atol + rtol
|value|``. Near 0 that passes by ``atol`` alone, and an op after it that scales the value up
carries the error, not the tolerance: ``x.sum(1) * 1e12`` of rows summing near 0 was 10.9 off
NumPy's 3.6, ``(x @ w + b) * 1e12`` of a bias cancelling a row 437 off NumPy's 0, float64,
silently, before stop 41 (Dask's d1db3b0 is the same class). :func:`gain` says how far the
absolute error of a tested value can grow on its way to what reads it, so that the test holds
``atol / gain`` instead.

Left (stop 41): a product or quotient by a tensor is taken as keeping the error (a factor the
run alone knows: gelu's ``h * (1 + tanh(...))``, a layer norm's ``(x - m) / sqrt(v + eps)``,
softmax's ``e / e.sum()`` are by factors near or under 1, and counting them refused GPT-2 pico's
layer norm); ``(x @ w + b) * t`` of a tensor ``t`` of large values stays as before."""

from __future__ import annotations

import math
import weakref
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from capviz.backends import cancelling
from capviz.backends.jax.trace import TRACE
from capviz.core.ir import Node
from capviz.ops import traits

KEEPS = frozenset(("negative", "positive", "absolute", "fabs", "maximum", "minimum", "fmax",
                   "fmin", "clip", "max", "min", "amax", "amin", "nanmax", "nanmin", "sort",
                   "copy", "asarray", "tanh", "arctan", "arcsinh", "unpack", "real",
                   "conjugate")) | traits.MOVE | cancelling.MOVES | cancelling.JOINS \
    | frozenset(cancelling.SELECTS)
"""Ops whose result is off NumPy's by at most what their operand is (moves, picks, clamps,
negation, magnitudes, and ``tanh``, ``arctan``, ``arcsinh``, whose derivative is at most 1):
the walk goes on through them with the gain it has."""

GROWING = frozenset(("sqrt", "cbrt", "square", "power", "float_power", "reciprocal", "log",
                     "log2", "log10"))
"""Ops whose result's error grows without a bound known before the run where their operand is
near 0 (a root, a power, a reciprocal, a logarithm: R13 #3, 25x's note)."""


def gain(node: Node, users: dict[int, list[Node]], carried: Collection[int] = frozenset()
         ) -> float:
    """How many times an absolute error of ``node``'s value can grow through the ops that read
    it, as far as an op that keeps it or scales it goes (:data:`KEEPS`, products and quotients
    by numbers: ``|c|`` and ``1 / |c|``); ``math.inf`` where a reader grows it without
    bound near 0 (a quotient by the value, a square, :data:`GROWING`); a product or quotient
    by a tensor counts 1 (the module's "Left"); 1 where nothing scales it up. An op of
    ``carried`` (a path a bound is carried along to a later test,
    :mod:`capviz.backends.jax.carried`) is tested there with the factor it takes: not
    counted. ``users``: the op nodes reading each node."""
    best: dict[int, float] = {node.index: 1.0}
    stack: list[tuple[Node, float]] = [(node, 1.0)]
    worst = 1.0
    while stack:
        value, factor = stack.pop()
        for user in users.get(value.index, ()):
            if user.index in carried:
                continue
            grown = _factor(value, user)
            if grown is None:
                continue  # an op that stops the walk: tested by its own rule, or exact
            after = factor * grown
            if math.isinf(after):
                return math.inf
            worst = max(worst, after)
            if best.get(user.index, 0.0) >= after:
                continue
            best[user.index] = after
            stack.append((user, after))
    return worst


def gains(nodes: Sequence[Node], carried: Collection[int] = frozenset()) -> dict[int, float]:
    """:func:`gain` of each float or complex op node of ``nodes`` that is past 1, by index."""
    users = cancelling._users(nodes)
    found = {}
    for node in nodes:
        if node.kind == "op" and node.dtype is not None and np.dtype(node.dtype).kind in "fc":
            g = gain(node, users, carried)
            if g > 1:
                found[node.index] = g
    return found


_GAINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
""":func:`gains` of each trace's op steps, the carried paths left out, by trace."""


def of_traced(node: Node | None) -> float:
    """:func:`gain` of the op step ``node`` of the program being traced (1 outside a trace),
    the paths of its carried bounds (``trace.carried``) left out."""
    trace = TRACE.get()
    if trace is None or node is None:
        return 1.0
    found = _GAINS.get(trace)
    if found is None:
        carried = trace.carried
        paths = frozenset() if carried is None else carried.on_paths
        found = _GAINS[trace] = gains(trace.nodes, paths)
    return found.get(node.index, 1.0)


def of_current() -> float:
    """:func:`of_traced` of the op step being traced."""
    trace = TRACE.get()
    return of_traced(None if trace is None else trace.node)


def tolerance(rtol: float, atol: float, grown: float) -> tuple[float, float]:
    """``(rtol, atol)`` for a value whose absolute error grows ``grown`` times later."""
    return rtol, (0.0 if math.isinf(grown) else atol / max(grown, 1.0))


def _factor(value: Node, user: Node) -> float | None:
    """The factor ``user`` multiplies an absolute error of ``value`` by (``math.inf``: not
    known before the run), ``None`` where the walk stops at ``user``."""
    op, args = user.op, user.args
    if op in GROWING:
        if op == "power" and len(args) == 2 and args[0] is value:
            k = _number(args[1])
            if k is not None and k in (0.0, 1.0):
                return 1.0
        return math.inf
    if op == "multiply" and len(args) == 2:
        other = args[1] if args[0] is value else args[0]
        if other is value:
            return math.inf  # a square
        k = _number(other)
        # a tensor factor: its magnitude is known at run time only (left: see the module)
        return 1.0 if k is None else k
    if op in ("divide", "true_divide") and len(args) == 2:
        if args[1] is value:
            return math.inf  # a quotient by the value (1 / x.sum(1))
        k = _number(args[1])
        return 1.0 if k is None else (math.inf if k == 0 else 1.0 / k)
    if op == "astype":
        return 1.0 if user.dtype is not None and np.dtype(user.dtype).kind in "fc" else None
    return 1.0 if op in KEEPS else None


def _number(value: Any) -> float | None:
    """The magnitude of a real number, ``None`` for a tensor or anything else."""
    if isinstance(value, (Node, bool, complex, np.complexfloating)) \
            or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    return abs(float(value))
