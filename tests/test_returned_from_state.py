"""A value NumPy computed from a state the capture writes and that ``fn`` returns is refused at
the ``return`` line that ran, with a fix worded for a returned value (review 2, finding 19 and
s35: a function with two ``return`` statements was refused at the ``cv.capture`` line)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import UnsupportedOperationError
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("two_passes")  # (the two passes' refusals: a first
#   capture that lifts the arrays its statements write replays these programs as eager,
#   states included, tests/test_first_capture_guessed.py)


class TwoReturns:
    def __init__(self):
        self.W = np.zeros(3)

    def step(self, g):
        self.W += g
        if g.shape[0] > 2:
            return self.W * 2.0
        return g

    def early(self, g):
        self.W += g
        if g.shape[0] < 2:
            return g
        y = self.W * 3.0
        return y

    def through_a_tensor(self, g):  # also captures
        self.W += g
        if g.shape[0] > 2:
            return (self.W + 0 * g) * 2.0
        return g

    def quoted(self, g):  # the message's fix, as it quotes it
        self.W += g
        if g.shape[0] > 2:
            return cv.constant(self.W) * 2.0
        return g

    def local_name(self, g):  # also captures
        W = self.W
        W += g
        if g.shape[0] > 2:
            return W * 2.0
        return g


def _line(method, text):
    lines, start = __import__("inspect").getsourcelines(method)
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("name, text", [("step", "return self.W * 2.0"),
                                        ("early", "return y")])
def test_a_function_with_several_returns_is_refused_at_the_return_that_ran(name, text):
    m = TwoReturns()
    method = getattr(m, name)
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(method, cv.spec((3,), "float64"))
    what, why, fix = str(info.value).splitlines()
    line = _line(getattr(TwoReturns, name), text)
    assert what == (f"`{text}` at {__file__}:{line} in {name}: the returned value was "
                    "computed by NumPy's own operators from m.W, an array the capture writes.")
    assert why.startswith("capviz cannot record it: NumPy read the array's memory outside the "
                          "capture's sight, so every replay would return the value of this call")
    assert why.endswith("(it depends on what m.W holds).")  # no capviz fill shown
    quoted = {"step": "`return cv.constant(self.W) * 2.0`",
              "early": f"line {_line(TwoReturns.early, 'y = self.W')} as "
                       "`y = cv.constant(self.W) * 3.0`"}[name]
    assert fix == (f"Fix: write {quoted}: cv.constant(self.W) is the value the capture records "
                   "for it, before and after its write, and self.W itself outside a capture.")
    assert m.W.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("name", ["quoted", "through_a_tensor", "local_name"])
def test_both_fixes_replay_as_eager_calls_compute(name):
    m, twin = TwoReturns(), TwoReturns()
    graph = cv.capture(getattr(m, name), cv.spec((3,), "float64"))
    for k in range(3):
        g = np.arange(3.0) + k
        assert np.array_equal(graph.replay({"g": g})["out"], twin.step(g))
        assert np.array_equal(m.W, twin.W)


def test_the_finished_frame_is_let_go_before_the_scope_exits():
    """The recorder keeps fn's frame to read its return line; an array fn made by a path no
    hook sees (``acc = W.copy(); acc += g``) must still be dead when the scope exits, so that
    its state becomes the constant it was (docs/guide/state.md): the frame is dropped first."""
    W = np.ones(3)

    def f(g):
        acc = W.copy()
        acc += g
        return g * 1.0

    graph = cv.capture(f, cv.spec((3,), "float64"))
    assert graph.complete and not graph.state_nodes
