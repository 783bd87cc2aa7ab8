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
an add or subtract (its *consumer*) when its value gets there through ops that pass an absolute
error on, scaled, and round at most once each (:data:`MOVES`, :data:`SCALINGS`):

- moves, which keep every value (``reshape``, ``getitem`` with any index, ``None`` adding an
  axis included, ``broadcast_to``, ``expand_dims``, ``squeeze``, ``transpose``...) and casts to
  a float or complex type;
- ``negative``, ``positive``;
- a product by anything (a constant, another tensor: the bound scales by its magnitude) and a
  quotient of the value by anything (``x.sum(-1, keepdims=True) / 768``, the mean written by
  hand). A quotient *by* the value (``exp(x) / exp(x).sum()``) does not pass it on: the sum's
  relative error is what reaches the quotient, and softmax's sum reaches no subtraction.

The first add or subtract on each path is the consumer: an ``add`` or ``subtract`` of two tensor
operands, or of a tensor and a nonzero number (``s - 1000.0`` cancels too). A path stops there
(the consumer's own result is then held to the tolerance, checked or exact, like any other
node's), and at every other op (``sqrt``, ``exp``, a reduction, a product of linear algebra):
those are not this module's class. Both sums of ``x.sum(-1) - x[:, :384].sum(-1) * 2`` reach
its subtract; ``(x - x.mean()).sum()`` reports the mean (the outer sum reaches nothing).

A reach is a **centring** (:attr:`Reach.centring`) where the consumer's other operand is the
sum's own operand and the path holds only moves, casts, negations and scalings by numbers: ``x -
x.mean(-1, keepdims=True)``, ``x - np.mean(x, axis=-1)[:, None]``, ``x - x.sum(-1,
keepdims=True) / n``, ``-x.mean() + x``. There every value the consumer needs is known where the
sum is computed, so an engine can test the consumer's tolerance there (a branch on it).

This module reads the graph only (no engine, no values).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import numpy as np

from capviz.core.ir import Node, same_value

CONSUMERS = frozenset(("add", "subtract"))
"""The ops where a sum's error can become large against the result: the cancelling ones."""

MOVES = frozenset((
    "reshape", "ravel", "expand_dims", "squeeze", "broadcast_to", "getitem", "transpose",
    "swapaxes", "moveaxis", "matrix_transpose", "copy", "atleast_1d", "atleast_2d",
    "atleast_3d", "astype", "negative", "positive"))
"""Ops that pass a value on exactly (every value kept, moved, or its sign changed), and casts
(``astype`` to a float or complex type only: a cast rounds once)."""

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
        """The consumer's other operand: a node or a number."""
        return self.consumer.args[1 - self.position]


def reaches(nodes: Iterable[Node], sums: Collection[str]) -> dict[int, tuple[Reach, ...]]:
    """For each float or complex op node of ``nodes`` whose op is one of ``sums`` and whose
    value reaches a cancelling add or subtract (the module docstring's rule): its reaches, keyed
    by the sum node's ``index``. ``nodes``: the graph's nodes in program order (all of them, or
    the op steps of a program); only the op nodes among them are followed."""
    listed = list(nodes)
    users = _users(listed)
    found: dict[int, tuple[Reach, ...]] = {}
    for node in listed:
        if node.kind != "op" or node.op not in sums or not _floating(node):
            continue
        each = tuple(_walk(node, users))
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


def _walk(start: Node, users: dict[int, list[Node]]) -> Iterable[Reach]:
    """The reaches from the sum ``start``: a walk over the passing ops, each node once."""
    stack: list[tuple[Node, tuple[Node, ...], float | None]] = [(start, (), 1.0)]
    visited: set[int] = set()
    while stack:
        value, path, factor = stack.pop()
        for user in users.get(value.index, ()):
            if user.op in CONSUMERS:
                reach = _consumed(start, value, user, path, factor)
                if reach is not None:
                    yield reach
                continue
            scale = _passes(value, user)
            if scale is _STOPS or user.index in visited:
                continue
            visited.add(user.index)
            stack.append((user, (*path, user), _scaled(factor, user, scale)))


_STOPS = object()


def _passes(value: Node, user: Node) -> Any:
    """How ``user`` passes ``value`` on: ``None`` (exactly or rounded once, no scale), the
    other operand it scales by, or ``_STOPS``."""
    if not _floating(user) or user.shape is None:
        return _STOPS
    if user.op in MOVES:
        return None if user.args and user.args[0] is value else _STOPS
    if user.op not in SCALINGS or len(user.args) != 2:
        return _STOPS
    first, second = user.args
    if user.op == "divide":
        return second if first is value and second is not value else _STOPS
    if first is value and second is value:  # a square: not a scaling
        return _STOPS
    return second if first is value else first


def _scaled(factor: float | None, user: Node, scale: Any) -> float | None:
    """The path's factor after ``user`` (``scale``: its other operand, or ``None``)."""
    if factor is None:
        return None
    if user.op == "negative":
        return -factor
    if scale is None:
        return factor
    if isinstance(scale, Node) or not isinstance(scale, (int, float, np.number)) \
            or isinstance(scale, (complex, np.complexfloating)):
        return None
    number = float(scale)
    if user.op == "divide":
        return factor / number if number else None
    return factor * number


def _consumed(start: Node, value: Node, user: Node, path: tuple[Node, ...],
              factor: float | None) -> Reach | None:
    """The reach of ``start`` ending at the add or subtract ``user`` that reads ``value``, or
    ``None`` where it cannot cancel (a number 0, the value added to itself, not two operands)."""
    if len(user.args) != 2 or not _floating(user):
        return None
    first, second = user.args
    if same_value(first, second):  # s + s, s - s (written twice too): no roundings cancel
        return None
    position = 0 if first is value else 1
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
