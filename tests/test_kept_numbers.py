"""A Python number an object keeps across calls, updated with a value read from a tensor in a
spelling the lifted numbers do not replay (``int()`` of a float tensor, ``float(loss) * n``:
tests/test_lifted_python_numbers.py replays the others): refused at the read, with a spec and
with an example alike, with the one fix that works (keep it in a 0-d array written with the
tensor itself: a state, which replays as eager over 3 calls, ruling 38 10:50; for
``float(loss) * n``, write ``loss.item() * n``: tests/test_kept_numbers_messages.py)."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import DataReadError

ROWS = np.random.default_rng(38).standard_normal((3, 4))


class Acc:
    def __init__(self):
        self.correct = 0

    def step(self, x):
        self.correct += int((x * x).sum())
        return x * 2.0


class Total:
    def __init__(self):
        self.total = 0.0

    def step(self, x):
        loss = (x * x).mean()
        self.total += float(loss) * x.shape[0]
        return x * 2.0


CASES = {
    Acc: ("int((x * x).sum())", "int()",
          "keep self.correct in a 0-d array and += the tensor itself: self.correct = "
          "np.array(self.correct) before the capture, then self.correct += (x * x).sum() "
          "(the capture records it as a state)."),
    Total: ("float(loss)", "float()",
            "write loss.item() for float(loss): self.total += loss.item() * x.shape[0] (a "
            "replay updates self.total from .item() in Python's operators, as the call does)."),
}


@pytest.mark.parametrize("example", [False, True])
@pytest.mark.parametrize("kind", list(CASES))
def test_an_update_of_a_kept_python_number_is_refused_with_the_fix(kind, example):
    """The spellings the lifted numbers do not replay (tests/test_lifted_python_numbers.py):
    ``int()`` of a float tensor (Python truncates exactly, or raises for NaN), ``float(t)``
    inside Python's own arithmetic (``float(loss) * n``: the capture cannot see the product)."""
    code, call, fix = CASES[kind]
    lines, start = inspect.getsourcelines(kind.step)
    line = start + next(k for k, text in enumerate(lines) if code in text)
    with pytest.raises(DataReadError) as info:
        cv.capture(kind().step, ROWS[0] if example else cv.spec((4,), "float64"))
    first, why, fixed = str(info.value).splitlines()
    assert re.fullmatch(rf"`{re.escape(code)}` at \S+test_kept_numbers\.py:{line} in step: "
                        rf"updates a Python number the object keeps with the value of %\d+ "
                        rf"\(\w+, \w+\[\]\) \({re.escape(call)}\)\.", first), first
    assert why.startswith("capviz cannot record it: a Python number read from a tensor")
    assert fixed == f"Fix: {fix}"


class AccFixed:
    def __init__(self):
        self.correct = 0
        self.correct = np.array(self.correct)

    def step(self, x):
        pred = x > 0
        self.correct += (pred == (x > 0.5)).sum()
        return x * 2.0


class BestFixed:
    def __init__(self):
        self.best = float("inf")
        self.best = np.array(self.best)

    def step(self, x):
        loss = (x * x).sum()
        self.best[...] = np.where(loss < self.best, loss, self.best)
        return x * 2.0


class IntTotalFixed:  # (a meter reset to 0: the quoted dtype=float lets += a float)
    def __init__(self):
        self.total = 0
        self.total = np.array(self.total, dtype=float)

    def step(self, x):
        loss = (x * x).mean()
        self.total += loss * x.shape[0]
        return x * 2.0


class TotalFixed:
    def __init__(self):
        self.total = 0.0
        self.total = np.array(self.total)

    def step(self, x):
        loss = (x * x).mean()
        self.total += loss * x.shape[0]
        return x * 2.0


@pytest.mark.parametrize("example", [False, True])
@pytest.mark.parametrize("kind, name", [(AccFixed, "correct"), (BestFixed, "best"),
                                        (IntTotalFixed, "total"),
                                        (TotalFixed, "total")])
def test_the_fix_replays_as_eager(kind, name, example):
    mine, twin = kind(), kind()
    graph = cv.capture(mine.step, ROWS[0] if example else cv.spec((4,), "float64"))
    for x in ROWS:
        assert np.array_equal(graph.replay({"x": x})["out"], twin.step(x))
        kept, eager = getattr(mine, name), getattr(twin, name)
        assert type(kept) is type(eager) and kept.dtype == eager.dtype
        assert kept.tobytes() == eager.tobytes()


class BestEager:
    def __init__(self):
        self.best = float("inf")

    def step(self, x):
        loss = (x * x).sum()
        self.best = min(self.best, float(loss))
        return x * 2.0


@pytest.mark.parametrize("losses", [[3.0, float("nan"), 1.0], [float("nan"), 2.0, 1.0],
                                    [0.0, -0.0, 0.0]])
def test_the_quoted_min_is_python_s_min_nan_and_signed_zero_alike(losses):
    """Review 10, finding 15: np.minimum made a NaN loss the best for good; min skips it."""
    fixed, eager = BestFixed(), BestEager()
    fixed.best[...] = eager.best = losses[0]
    graph = cv.capture(fixed.step, cv.spec((1,), "float64"))
    fixed.best[...] = losses[0]
    for loss in losses[1:]:
        x = np.array([np.sqrt(loss) if loss == loss else loss])
        x = np.copysign(x, loss) if loss == 0 else x
        graph.replay({"x": x})
        eager.step(x)
        assert np.asarray(eager.best).tobytes() == fixed.best.tobytes()
