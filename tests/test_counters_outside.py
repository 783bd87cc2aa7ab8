"""A Python value each call changes, held where the walk of what ``fn`` reaches did not look,
was baked into the graph as the capture's value and repeated by every replay (hostile review 8,
finding 1; lead ruling 36, 04:30 (a)): a counter in a closure cell (of a function ``self`` or a
global holds), in a closure's list, a class attribute, a mutable default, and the next item of
an iterator that outlives the call (``itertools.count``, a generator, a list iterator). Each
is refused at the user's line that names it; silent before (checked: each replay multiplied
by the capture's 1 where the eager calls multiply by 2, 3...)."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

import capviz as cv
from tests.helpers.public_census import line_of


def make_tick():
    n = 0

    def tick():
        nonlocal n
        n += 1
        return n
    return tick


TICK = make_tick()


def schedule():
    lr = 0.1
    while True:
        yield lr
        lr *= 0.5


class Steps:
    calls = 0

    def __init__(self):
        self.tick = make_tick()
        box = [0]

        def bump():
            box[0] += 1
            return box[0]
        self.bump = bump
        self.count = itertools.count(1)
        self.sched = schedule()
        self.lrs = iter([0.1, 0.2, 0.3, 0.4])
        self.cycle = itertools.cycle([0.1, 0.2])

    def closure(self, x):
        return x * self.tick()

    def global_closure(self, x):
        return x * TICK()

    def closure_list(self, x):
        return x * self.bump()

    def class_attribute(self, x):
        type(self).calls += 1
        return x * type(self).calls

    def default(self, x, _c=[0]):
        _c[0] += 1
        return x * _c[0]

    def counted(self, x):
        return x * next(self.count)

    def generator(self, x):
        return x * next(self.sched)

    def list_iterator(self, x):
        return x * next(self.lrs)

    def cycled(self, x):
        return x * next(self.cycle)


@pytest.mark.parametrize("name, code, what", [
    ("closure", "return x * self.tick()", "self.tick.<n>"),
    ("global_closure", "return x * TICK()", "TICK.<n>"),
    ("closure_list", "return x * self.bump()", "self.bump.<box>[0]"),
    ("class_attribute", "type(self).calls += 1", "type(self).calls"),
    ("default", "_c[0] += 1", "_c[0]"),
    ("counted", "return x * next(self.count)", "self.count"),
    ("generator", "return x * next(self.sched)", "self.sched"),
    ("list_iterator", "return x * next(self.lrs)", "self.lrs"),
    ("cycled", "return x * next(self.cycle)", "self.cycle"),  # (its list iterator's position)
])
def test_a_value_each_call_changes_outside_the_walked_places_is_refused_at_its_line(
        name, code, what):
    model = Steps()
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(getattr(model, name), np.ones(3))
    first = str(info.value).splitlines()[0]
    line = line_of(__file__, code)
    if "next(" in code:
        assert first == (f"`{code}` at {__file__}:{line} in {name}: {what} is an iterator that "
                         "outlives the call, and the call takes its next item."), first
        assert re.search(r"^Fix: take the item outside the captured function", str(info.value),
                         re.M)
    else:
        assert first == (f"`{code}` at {__file__}:{line} in {name}: {what} is a Python number "
                         "that changes from call to call."), first
        assert re.search(r"^Fix: pass it as an input", str(info.value), re.M)


class Added:
    def step(self, x):
        self.count = getattr(self, "count", 0) + 1
        return x * self.count


class FunctionAttribute:
    def step(self, x):
        f = FunctionAttribute.step
        f.n = getattr(f, "n", 0) + 1
        return x * f.n


def test_a_number_the_call_adds_to_an_object_or_its_function_is_refused():
    """Hostile review 8, finding 1 (Q19) and its sibling: an attribute the call adds holding a
    number (a counter made by getattr's default) was left by the capture and never moved by a
    replay (silent, checked); refused, at its line where the code names it."""
    model = Added()
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(model.step, np.ones(3))
    line = line_of(__file__, 'self.count = getattr(self, "count", 0) + 1')
    assert str(info.value).splitlines()[0] == (
        f'`self.count = getattr(self, "count", 0) + 1` at {__file__}:{line} in step: '
        "self.count is a Python number that changes from call to call.")
    assert "count" not in vars(model)  # (left as the capture found it)
    with pytest.raises(cv.UnsupportedOperationError, match=r"step\.n is a Python number that "
                                                           r"changes from call to call"):
        cv.capture(FunctionAttribute().step, np.ones(3))
    assert "n" not in vars(FunctionAttribute.step)
