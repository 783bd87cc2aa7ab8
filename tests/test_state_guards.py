"""With example inputs, a branch on a value computed from a state after its write is a guard,
as one before the write is (capviz/trace/examples.py: a state's example value is its value when
the call starts; review 3, finding 22: it was refused with "capture with an example array
instead of a spec", which the user had done)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv


class MaxNorm:
    """Max-norm clipping after an update, as training code writes it."""

    def __init__(self, start):
        self.W = np.full(3, start)

    def step(self, g):
        W = self.W
        W -= g
        n = np.linalg.norm(W)
        if n > 1.0:
            W *= 1.0 / n
        return g * 1.0


def test_a_branch_after_the_write_is_a_guard_and_replays_as_calls():
    m, twin = MaxNorm(5.0), MaxNorm(5.0)
    g = np.array([0.5, -0.25, 1.0])
    graph = cv.capture(m.step, g)  # the branch taken: clipped
    assert any(node.kind == "guard" for node in graph.nodes)
    for k in range(4):
        x = g * (k + 1)
        assert np.array_equal(graph.replay({"g": x})["out"], twin.step(x))
        assert np.array_equal(m.W, twin.W)


def test_the_guard_refuses_a_replay_whose_state_takes_the_other_branch():
    m, twin = MaxNorm(0.2), MaxNorm(0.2)
    g = np.full(3, -0.1)
    graph = cv.capture(m.step, g)  # not clipped: |W| = 0.52
    for _ in range(3):  # |W| = 0.52, 0.69, 0.87: the branch the capture took
        graph.replay({"g": g})
        twin.step(g)
        assert np.array_equal(m.W, twin.W)
    with pytest.raises(cv.GuardError):  # |W| = 1.04: eager clips, never a silent replay
        graph.replay({"g": g})
    assert np.array_equal(m.W, twin.W)  # no array written by the refused replay


def test_a_divergence_check_on_the_written_state_is_a_guard():
    class Sgd:
        def __init__(self):
            self.W = np.ones(3)

        def step(self, g):
            W = self.W
            W -= 0.1 * g
            if not np.isfinite(W).all():
                raise FloatingPointError("diverged")
            return g * 1.0

    m, twin = Sgd(), Sgd()
    graph = cv.capture(m.step, np.ones(3))
    for k in range(3):
        x = np.arange(3.0) + k
        assert np.array_equal(graph.replay({"g": x})["out"], twin.step(x))
        assert np.array_equal(m.W, twin.W)
