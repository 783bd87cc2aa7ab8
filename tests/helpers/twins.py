"""A captured step against its eager twin: the replay loop and the comparison the state tests
share (issue #20; moved here from the test files that each wrote them again, stop 38)."""

from __future__ import annotations

import collections
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

import capviz as cv


def same(a: Any, b: Any) -> bool:
    """``a`` and ``b`` alike to the type and the bit: containers item by item (a tuple is not a
    list, a ``np.float64`` not a 0-d ndarray), arrays by dtype, shape and bytes, anything else
    by ``==``."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple, collections.deque)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (np.ndarray, np.generic)):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return a == b


def replayed(model: Any, eager: Any, xs: Sequence, warm: bool = False) -> Iterator[tuple]:
    """``model.step`` captured on ``xs[1]`` (after one call of it and of its twin ``eager`` on
    ``xs[0]`` where ``warm``), then run on each of ``xs[1:]`` twice over, by ``graph.replay``
    and by the compiled call in turn, the twin's ``step`` called after each: yields (the
    graph's output, the twin's)."""
    if warm:
        model.step(xs[0])
        eager.step(xs[0])
    graph = cv.capture(model.step, xs[1])
    for k, x in enumerate(list(xs[1:]) * 2):
        out = graph.replay({graph.inputs[0]: x})[graph.outputs[0]] if k % 2 else \
            graph.compile()(x)[0]
        yield out, eager.step(x)


def assert_same_bytes(model: Any, eager: Any, names: Sequence[str]) -> None:
    """The arrays ``model.<name>`` and ``eager.<name>`` hold the same bytes, for each name."""
    for name in names:
        assert getattr(model, name).tobytes() == getattr(eager, name).tobytes(), name
