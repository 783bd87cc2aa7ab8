"""Messages of a Python number the call changes (the situation ``changes_per_call``), at the
user's line with the fix that applies, each fix applied here and replayed exactly.

* Review 8, finding 2 (remnant): a counter in a dict a ``functools.partial`` holds (``bump(st):
  st["n"] += 1``) and a counter on ``fn``'s own function (``f.n = getattr(f, "n", 0) + 1``) were
  refused at the caller's ``cv.capture`` line (no line of ``fn`` names their paths); now at the
  line that writes them through the other name.
* Review 8, finding 23: a decayed learning rate, captured warm (``self.lr`` is NumPy's scalar
  after one eager call of ``self.lr = self.lr * 0.99``), was told a counter's example naming
  ``self.t``; now its own in-place write, which, applied, replays exactly. Review 9, finding
  4: with the 0-d array it needs made first (``self.lr = np.array(self.lr)``), in one fix."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import capviz as cv
from tests.helpers.public_census import line_of

XS = [np.random.default_rng(k).normal(size=3) for k in range(5)]


class PartialCounter:
    def __init__(self):
        self.state = {"n": 0}

        def bump(st):
            st["n"] += 1
            return st["n"]
        self.bump = functools.partial(bump, self.state)

    def step(self, x):
        return x * self.bump()


class FunctionCounter:
    def step(self, x):
        f = FunctionCounter.step
        f.n = getattr(f, "n", 0) + 1
        return x * f.n


def test_a_counter_written_through_another_name_is_refused_at_that_write():
    """Checked to fail before this change (the first line named the test's cv.capture line)."""
    for model, code, what, function in (
            (PartialCounter(), 'st["n"] += 1', "self.state['n']", "bump"),
            (FunctionCounter(), 'f.n = getattr(f, "n", 0) + 1', "step.n", "step")):
        with pytest.raises(cv.UnsupportedOperationError) as info:
            cv.capture(model.step, XS[0])
        what_line, _why, fix = str(info.value).splitlines()
        line = line_of(__file__, code)
        assert what_line == (f"`{code}` at {__file__}:{line} in {function}: {what} is a Python "
                             "number that changes from call to call.")
        assert fix.startswith("Fix: pass it as an input (an argument of the captured function)")
    assert PartialCounter().state == {"n": 0} and "n" not in vars(FunctionCounter.step)


class PassedCounter:  # (the fix applied: the count passed as an input)
    def step(self, x, n):
        return x * n


def test_the_counter_passed_as_an_input_replays_exactly():
    model, eager = PassedCounter(), PartialCounter()
    graph = cv.capture(model.step, XS[0], np.float64(1.0))
    for x in XS:
        want = eager.step(x)
        got = graph.replay({graph.inputs[0]: x, graph.inputs[1]: np.float64(eager.state["n"])})
        assert got[graph.outputs[0]].tobytes() == want.tobytes()


class DecayedLr:
    def __init__(self):
        self.W = np.ones(3)
        self.lr = np.array(0.1)

    def step(self, x):
        self.W -= self.lr * x
        self.lr = self.lr * 0.99
        return x * 2.0


class DecayedLrFixed(DecayedLr):  # (the quoted fix applied)
    def step(self, x):
        self.W -= self.lr * x
        self.lr *= cv.constant(np.float64(0.99))
        return x * 2.0


def test_a_decayed_lr_captured_warm_is_told_its_own_in_place_write_which_replays_exactly():
    """Checked to fail before this change (the fix quoted self.t += cv.constant(...))."""
    model = DecayedLr()
    model.step(XS[0])
    assert type(model.lr) is np.float64
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(model.step, XS[1])
    what, _why, fix = str(info.value).splitlines()
    line = line_of(__file__, "self.lr = self.lr * 0.99")
    assert what == (f"`self.lr = self.lr * 0.99` at {__file__}:{line} in step: self.lr is a "
                    "Python number that changes from call to call.")
    assert fix == ("Fix: pass it as an input (an argument of the captured function), or keep "
                   "self.lr in an ndarray written with a tensor (self.lr = np.array(self.lr) "
                   "before the capture, then self.lr *= cv.constant(np.float64(0.99))).")
    fixed, eager = DecayedLrFixed(), DecayedLr()
    fixed.step(XS[0])
    eager.step(XS[0])
    fixed.lr = np.array(fixed.lr)  # (both parts of the fix: review 9, finding 4)
    graph = cv.capture(fixed.step, XS[1])
    for k, x in enumerate(XS[1:] * 2):
        out = graph.replay({graph.inputs[0]: x})[graph.outputs[0]] if k % 2 else \
            graph.compile()(x)[0]
        assert out.tobytes() == eager.step(x).tobytes()
        assert fixed.W.tobytes() == eager.W.tobytes()
        assert fixed.lr.tobytes() == np.asarray(eager.lr).tobytes()
