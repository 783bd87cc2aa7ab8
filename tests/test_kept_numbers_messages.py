"""The refusals around Python numbers an object keeps say what the user wrote, at their line,
with the one fix that applies (#20, stop 41, W=20k; review 12, findings 3, 4, 14 and 2), and
each fix, applied, replays as eager over several calls.

Before (dc00c85): ``self.total += float(loss) * n`` said to keep ``self.total`` in a 0-d array
(a Python float became an ndarray); ``v = float(loss); self.total += v`` said to capture with
an example, whose replays were then refused as 'another branch'; a key added to a stats dict
said to pass ``self.stats.keys()`` as an argument; a ``functools.cached_property`` the call
fills was 'a Python number that changes from call to call' at the capture's line, with a
counter's fix."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import DataReadError, GuardError, UnsupportedOperationError

ROWS = np.random.default_rng(414).standard_normal((5, 4))
WHY = ("capviz cannot record it: a Python number read from a tensor here is fixed when the "
       "capture runs (a replay updates a number the object keeps from t.item() in Python's "
       "operators, or float(t) / int(t) taken as they are by +=, min or max), so every replay "
       "would leave it as the capture found it.")


def _same(a, b):
    return type(a) is type(b) and (a == b and math.copysign(1, a) == math.copysign(1, b)
                                   if type(a) is float else a == b)


def _line(method, offset):
    return f"{__file__}:{method.__code__.co_firstlineno + offset} in {method.__name__}"


class InArithmetic:
    def __init__(self):
        self.total = 0.0

    def step(self, x):
        loss = (x * x).mean()
        n = x.shape[0]
        self.total += float(loss) * n
        return x * 2.0


class InArithmeticFixed(InArithmetic):
    def step(self, x):
        loss = (x * x).mean()
        n = x.shape[0]
        self.total += loss.item() * n
        return x * 2.0


class IntoLocal:
    def __init__(self):
        self.total = 0.0

    def step(self, x):
        loss = (x * x).mean()
        v = float(loss)
        self.total += v
        return x * 2.0


class IntoLocalFixed(IntoLocal):
    def step(self, x):
        loss = (x * x).mean()
        v = loss.item()
        self.total += v
        return x * 2.0


def _fix_replays(fixed, eager):
    mine, want = fixed(), eager()
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    for x in ROWS:
        assert graph.replay({"x": x})["out"].tobytes() == want.step(x).tobytes()
        assert _same(mine.total, want.total), (mine.total, want.total)


@pytest.mark.parametrize("example", [False, True])
def test_float_inside_arithmetic_says_write_item(example):
    """R12 #3."""
    with pytest.raises(DataReadError) as info:
        cv.capture(InArithmetic().step, ROWS[0] if example else cv.spec((4,), "float64"))
    assert str(info.value).splitlines() == [
        f"`float(loss)` at {_line(InArithmetic.step, 3)}: updates a Python number the object "
        "keeps with the value of %2 (mean, float64[]) (float()).",
        WHY,
        "Fix: write loss.item() for float(loss): self.total += loss.item() * n (a replay "
        "updates self.total from .item() in Python's operators, as the call does)."]
    _fix_replays(InArithmeticFixed, InArithmetic)


@pytest.mark.parametrize("example", [False, True])
def test_float_into_a_local_says_write_item(example):
    """R12 #4's rest: with an example, the capture used to succeed and refuse every replay on
    other data as 'another branch'."""
    with pytest.raises(DataReadError) as info:
        cv.capture(IntoLocal().step, ROWS[0] if example else cv.spec((4,), "float64"))
    assert str(info.value).splitlines() == [
        f"`float(loss)` at {_line(IntoLocal.step, 2)}: updates a Python number the object "
        "keeps with the value of %2 (mean, float64[]) (float()).",
        WHY,
        "Fix: write v = loss.item() for float(loss) (a replay updates self.total from it in "
        "Python's operators, as the call does)."]
    _fix_replays(IntoLocalFixed, IntoLocal)


class Stats:
    def __init__(self):
        self.stats = {"loss": 0.0}

    def step(self, x):
        self.stats["loss"] += (x * x).mean().item()
        return x * 2.0


def test_a_key_added_to_a_stats_dict_names_it_and_the_fix():
    """R12 #14: the message named ``self.stats.keys()`` and told to pass it as an argument."""
    mine, eager = Stats(), Stats()
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    graph.replay({"x": ROWS[0]})
    eager.step(ROWS[0])
    mine.stats["acc"] = eager.stats["acc"] = 0.0
    with pytest.raises(GuardError) as info:
        graph.replay({"x": ROWS[1]})
    assert str(info.value) == (
        f"self.stats['acc'] added since step was captured, whose code reads self.stats (read at "
        f"{_line(Stats.step, 1)}), so the graph is the program for the keys self.stats had "
        "then.\nFix: capture step again after changing the keys of self.stats (a graph per set "
        "of keys: keep one for each)")
    again = cv.capture(mine.step, cv.spec((4,), "float64"))  # (the fix, applied)
    for x in ROWS[1:]:
        again.replay({"x": x})
        eager.step(x)
        assert mine.stats.keys() == eager.stats.keys()
        assert all(_same(mine.stats[k], v) for k, v in eager.stats.items())


class Normed:
    def __init__(self):
        self.W = np.arange(4.0)

    @functools.cached_property
    def norm(self):
        return np.linalg.norm(self.W)

    def step(self, x):
        return x / self.norm


def test_a_cached_property_the_call_fills_says_call_it_once_first():
    """R12 #2."""
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(Normed().step, cv.spec((4,), "float64"))
    lines = str(info.value).splitlines()
    assert lines[0] == (f"`return x / self.norm` at {_line(Normed.step, 1)}: self.norm is a "
                        "functools.cached_property, which this call computes and caches.")
    assert lines[1].startswith(
        "capviz cannot record it: a first call computes it and caches it in the object, a "
        "later call reads the cache, and a replay runs no Python to fill it (the capture's "
        "call cached np.float64(3.74")
    assert lines[2] == ("Fix: call the function once before capturing it, so that the capture "
                        "reads the cached self.norm, as every later call does.")
    mine, eager = Normed(), Normed()  # (the fix, applied)
    mine.step(ROWS[0])
    eager.step(ROWS[0])
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    for x in ROWS[1:]:
        assert graph.replay({"x": x})["out"].tobytes() == eager.step(x).tobytes()
