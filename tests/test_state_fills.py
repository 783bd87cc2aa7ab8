"""The finite fills a state's memory holds between the capture's first write and the scope's
exit (capviz/trace/state.post_write_fill): a large state's is made for its capture and dies
with it (review 3, finding 21: ``state._FILLS`` kept 122 MiB after a capture of a 61 MiB state,
the graph and the model deleted); small ones are kept for the next capture, within a budget."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import capviz as cv
from capviz.trace import state
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("two_passes")  # (the two passes' refusals: a first
#   capture that lifts its guess runs once, tests/test_first_capture_guessed.py)


class Step:
    def __init__(self, n):
        self.W = np.ones(n)

    def step(self, x):
        self.W += x[:1] * 0.5
        return x * 1.0


def _fills_of(size):
    return [fill for fill in state._FILLS.values() if fill.size == size]


def test_a_large_states_fills_die_with_its_capture():
    n = 1 << 18  # 2 MiB of float64
    made = []
    real = state.post_write_fill

    def spied(root, second):
        fill = real(root, second)
        made.append(weakref.ref(fill))
        return fill

    state.post_write_fill = spied
    try:
        m = Step(n)
        graph = cv.capture(m.step, cv.spec((3,), "float64"))
    finally:
        state.post_write_fill = real
    assert graph.complete and len(made) == 1  # (the second capture's: recapture's own name)
    del graph, m
    gc.collect()
    assert _fills_of(n) == [] and made[0]() is None


def test_small_states_fills_are_kept_within_the_budget():
    key = (np.dtype(np.float64), (16,), False)  # the first capture's fill of a float64[16]
    m = Step(16)
    cv.capture(m.step, cv.spec((3,), "float64"))
    kept = state._FILLS[key]
    cv.capture(Step(16).step, cv.spec((3,), "float64"))
    assert state._FILLS[key] is kept  # reused, not made again
    assert sum(f.nbytes for f in state._FILLS.values()) <= 16 << 20
