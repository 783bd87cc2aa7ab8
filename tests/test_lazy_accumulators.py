"""An accumulator made lazily on the first call and then added to (review 6, finding 15:
/work/notes/review6/lazyacc.py C, E, F, G): in a dict on self, a closure's list, a function
attribute. Eager calls add to what the last call left; every replay started again from the
zeros the capture made, silently (replays exact, then wrong; F and G also left a closed tensor).
Now refused at the line that grew it, the container given back what it held; the quoted fix
(make it before the capture) captures it as a state that replays as calls."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import UnsupportedOperationError

XS = [np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0]), np.array([-2.0, 0.25, 1.0])]


class OnSelf:
    def __init__(self, made=False):
        self.stats = {"s": np.zeros(3)} if made else {}

    def step(self, x):
        if "s" not in self.stats:
            self.stats["s"] = np.zeros(3)
        self.stats["s"] += x
        return x * 2.0 + self.stats["s"]  # (a tensor meets it: its recorded value)


def in_closure():
    acc = [None]

    def step(x):
        if acc[0] is None:
            acc[0] = np.zeros(3)
        acc[0] = acc[0] + x
        return x * 2.0 + acc[0]

    return step, acc


def as_attribute():
    def step(x):
        if not hasattr(step, "acc"):
            step.acc = np.zeros(3)
        step.acc = step.acc + x
        return x * 2.0 + step.acc

    return step


def test_a_dict_on_self_is_refused_at_the_line_that_grew_it_and_the_fix_captures():
    m = OnSelf()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((3,), "float64"))
    what, why, fix = str(info.value).splitlines()
    line = OnSelf.step.__code__.co_firstlineno + 3
    assert what == (f'`self.stats["s"] += x` at {__file__}:{line} in step: self.stats[\'s\'] is '
                    "rebound to a value of the capture.")
    assert why == ("capviz cannot record it: a replay computes values, writes arrays in place "
                   "and binds a new array only to a name that held an array of its shape and "
                   "dtype that nothing else holds, so it would compute from the old array "
                   "every time (the capture put None back, and a replay cannot create an "
                   "attribute or bind a name).")
    assert fix == ("Fix: create self.stats['s'] before the capture (in __init__, or by one eager "
                   "call), so that the call writes it in place, which the capture records as a "
                   "state.")
    assert m.stats == {}  # given back what it held
    m, twin = OnSelf(made=True), OnSelf(made=True)  # the fix
    graph = cv.capture(m.step, cv.spec((3,), "float64"))
    for x in XS:
        out, want = graph.replay({"x": x})["out"], twin.step(x)
        assert out.tobytes() == want.tobytes()
        assert m.stats["s"].tobytes() == twin.stats["s"].tobytes()


def test_a_closures_list_slot_is_refused_and_put_back():
    step, acc = in_closure()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(step, cv.spec((3,), "float64"))
    assert str(info.value).splitlines()[0].endswith(
        " in step: acc[0] is rebound to a value of the capture.")
    assert acc == [None]


def test_a_function_attribute_is_refused_and_removed():
    step = as_attribute()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(step, cv.spec((3,), "float64"))
    what = str(info.value).splitlines()[0]  # (fn's own attributes are walked since d2787d9)
    assert what.startswith("`step.acc = np.zeros(3)` at ")
    assert what.endswith(" in step: step.acc is rebound to a value of the capture.")
    assert "asks whether step.acc exists" in str(info.value)
    assert not hasattr(step, "acc")  # no closed tensor left: the next eager call works
    assert step(XS[0]).tobytes() == (XS[0] * 2.0 + XS[0]).tobytes()


class CopyFirst:
    """The first call stores a copy of the data, the later ones add to it: the capture, a
    first call, sees a copy stored, as a log would; the function's test of the dict tells."""

    def __init__(self):
        self.stats = {}

    def step(self, x):
        if "s" not in self.stats:
            self.stats["s"] = x.copy()
        else:
            self.stats["s"] += x
        return x * 2.0 + self.stats["s"]


def test_an_accumulator_whose_first_call_stores_a_copy_is_refused_by_the_dicts_test():
    m = CopyFirst()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((3,), "float64"))
    line = CopyFirst.step.__code__.co_firstlineno + 2
    assert str(info.value).splitlines()[0] == (
        f'`self.stats["s"] = x.copy()` at {__file__}:{line} in step: self.stats[\'s\'] is '
        "rebound to a value of the capture.")
    assert m.stats == {}


class NextCall:
    """The accumulator this call's results do not read, the next call's do (review 6 on
    1b2de65, lazyopt.py: captured and replayed [exact, wrong, wrong] there)."""

    def __init__(self):
        self.stats = {}

    def step(self, x):
        out = x * 1.0 if "s" not in self.stats else x + self.stats["s"]
        if "s" not in self.stats:
            self.stats["s"] = np.zeros(3)
        self.stats["s"] += x
        return out


class FitOnce:
    """Fit on the first call's data by setdefault (review 6, finding 18: lazystats.py C)."""

    def __init__(self):
        self.stats = {}

    def step(self, x):
        mu = self.stats.setdefault("mu", x.copy())
        return x - mu


class FitOnceByKeyError:
    """The same, the first call told by a KeyError (review 6, finding 18: lazystats.py H)."""

    def __init__(self):
        self.stats = {}

    def step(self, x):
        try:
            mu = self.stats["mu"]
        except KeyError:
            mu = self.stats["mu"] = x.copy()
        return x - mu


@pytest.mark.parametrize("make", [NextCall, FitOnce, FitOnceByKeyError],
                         ids=["next-call", "setdefault", "key-error"])
def test_an_accumulator_a_later_call_reads_is_refused_and_put_back(make):
    m = make()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((3,), "float64"))
    assert " is rebound to a value of the capture." in str(info.value).splitlines()[0]
    assert m.stats == {}
