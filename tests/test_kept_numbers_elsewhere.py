"""Python numbers kept on an object other than ``fn``'s own replay as eager Python's (ruling 40
17:35, #20, W=20L; capviz/trace/kept_numbers.py): on an object ``self`` holds
(``self.meter.sum += loss.item() * n``), through an alias (``m = self.meter; m.sum += ...``),
on an object a module global names (``STATS.count += 1``), in ``__slots__`` (an owner with no
``__weakref__``). Each is a state of the graph, followed from ``self`` (or the module's
globals) when a replay starts and written back there as its Python type, so a meter the user
replaces between replays (``self.meter = AverageMeter()`` at an epoch's start) is the one
updated, as eagerly. Before (abcf2a1): each was refused at the read (``.item()``: "keep
self.meter.sum in a 0-d array"). A property setter that does more than set stays refused, with
the 0-d array fix, which works (applied below); a plain one and an update in a helper method
replay (tests/test_kept_numbers_helpers.py)."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest

import capviz as cv

ROWS = np.random.default_rng(40).standard_normal((5, 4))
ROWS[3, 2] = np.nan  # (a NaN loss on the fourth call)


class AverageMeter:
    def __init__(self):
        self.sum = 0.0
        self.count = 0
        self.avg = 0.0


class Held:
    def __init__(self):
        self.meter = AverageMeter()

    def step(self, x):
        loss = (x * x).mean()
        n = x.shape[0]
        self.meter.sum += loss.item() * n
        self.meter.count += n
        self.meter.avg = self.meter.sum / self.meter.count
        return x * 2.0


class Aliased:
    def __init__(self):
        self.meter = AverageMeter()

    def step(self, x):
        m = self.meter
        m.sum += (x * x).mean().item() * x.shape[0]
        m.count += x.shape[0]
        m.avg = m.sum / m.count
        return x * 2.0


STATS = types.SimpleNamespace(count=0, total=0.0)


class Global:
    def __init__(self):
        STATS.count, STATS.total = 0, 0.0

    def step(self, x):
        STATS.count += 1
        STATS.total += (x * x).sum().item()
        return x / (1.0 + STATS.count)


class Slotted:
    __slots__ = ("count", "sum")

    def __init__(self):
        self.sum = 0.0
        self.count = 0

    def step(self, x):
        self.sum += (x * x).mean().item()
        self.count += 1
        return x * 2.0


def _same(a, b):
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (a != a and b != b)
    return a == b


def _numbers(obj):
    """The Python numbers ``obj``'s step keeps, by label."""
    if isinstance(obj, Global):
        return {"STATS.count": STATS.count, "STATS.total": STATS.total}
    if isinstance(obj, Slotted):
        return {"sum": obj.sum, "count": obj.count}
    return {k: v for k, v in vars(obj.meter).items()}


def _replays_as_eager(kind, warm, example):
    """Four calls against eager: outputs bit for bit, the numbers and their types."""
    mine = kind()
    if warm:
        mine.step(ROWS[0])
    graph = cv.capture(mine.step, ROWS[0] if example else cv.spec((4,), "float64"))
    assert {n.params["python"] for n in graph.state_nodes} <= {"float", "int"}
    got = []
    for x in ROWS[1:]:
        got.append((graph.replay({"x": x})["out"], _numbers(mine)))
    eager = kind()  # (STATS: reset by the constructor)
    if warm:
        eager.step(ROWS[0])
    for x, (out, numbers) in zip(ROWS[1:], got):
        want = eager.step(x)
        assert out.tobytes() == want.tobytes()
        wanted = _numbers(eager)
        assert numbers.keys() == wanted.keys()
        for name in wanted:
            assert _same(numbers[name], wanted[name]), (name, numbers[name], wanted[name])
    return mine


@pytest.mark.parametrize("example", [False, True])
@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("kind", [Held, Aliased, Global, Slotted])
def test_a_number_kept_elsewhere_replays_as_eager_with_its_type(kind, warm, example):
    """Before: refused at the ``.item()`` ("keep self.meter.sum in a 0-d array")."""
    _replays_as_eager(kind, warm, example)


def test_a_meter_replaced_between_replays_is_the_one_updated():
    """``self.meter = AverageMeter()`` between replays (an epoch's start): the replay reads and
    writes ``self.meter.sum`` through ``self``, as the eager call does, not the meter the
    capture met."""
    mine, eager = Held(), Held()
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    old = mine.meter
    graph.replay({"x": ROWS[0]})
    eager.step(ROWS[0])
    mine.meter, eager.meter = AverageMeter(), AverageMeter()
    for x in ROWS[1:3]:
        graph.replay({"x": x})
        eager.step(x)
    assert vars(mine.meter) == vars(eager.meter) and mine.meter.count == 8
    assert old.count == 4  # (the first meter: one replay's)


class Prop:
    def __init__(self):
        self._s = 0.0

    @property
    def s(self):
        return self._s

    @s.setter
    def s(self, value):
        self._s = value
        self.dirty = True  # (more than a plain property: trace/kept_properties.py)

    def step(self, x):
        self.s += (x * x).mean().item()
        return x * 2.0


class PropFixed(Prop):
    def step(self, x):
        self.s += (x * x).mean()  # (the fix: the tensor itself, into a 0-d array)
        return x * 2.0


def test_a_property_setter_that_checks_is_refused_with_a_fix_that_works():
    """A number set through a property whose setter does more is refused at the read,
    naming the property; the quoted fix (a 0-d array before the capture, ``+=`` the tensor
    itself) replays as eager."""
    with pytest.raises(cv.CapvizError) as info:
        cv.capture(Prop().step, cv.spec((4,), "float64"))
    message = str(info.value)
    assert "updates a Python number the object keeps" in message and \
        "Fix: keep self.s in a 0-d array and += the tensor itself: self.s = " \
        "np.array(self.s, dtype=float) before the capture, then self.s += (x * x).mean()" \
        in message, message
    mine, eager = PropFixed(), Prop()
    mine.s = np.array(mine.s, dtype=float)
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    for x in ROWS:
        graph.replay({"x": x})
        eager.step(x)
        assert _same(float(mine.s), eager.s)


class TwoMeters:
    def __init__(self, shared=False):
        self.meter = AverageMeter()
        self.other = self.meter if shared else AverageMeter()

    def step(self, x):
        self.meter.sum += x.sum().item()
        self.other.sum += x.max().item()
        return x * 2.0


def test_two_kept_numbers_made_one_after_the_capture_are_refused_by_name():
    """R12 #5 (silent against d493e84): ``self.other = self.meter`` after the capture made the
    two kept numbers one; the replay read both at its start and bound one (5.75 where eager
    holds 11.75). Refused now, naming both, before anything is written."""
    mine, eager = TwoMeters(), TwoMeters()
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    graph.replay({"x": ROWS[0]})
    eager.step(ROWS[0])
    assert vars(mine.meter) == vars(eager.meter) and vars(mine.other) == vars(eager.other)
    mine.other = mine.meter
    before = dict(vars(mine.meter))
    with pytest.raises(cv.ReplayInputError, match=r"^self\.meter\.sum and self\.other\.sum are "
                                                   r"one number now .* Fix: capture again$"):
        graph.replay({"x": ROWS[1]})
    assert vars(mine.meter) == before


def test_one_number_under_two_paths_at_the_capture_is_refused():
    """``self.other is self.meter`` when captured: one number the lines update through two
    paths (a replay after ``self.other = AverageMeter()`` would update one: silent on d493e84):
    refused at the read, as before d493e84."""
    with pytest.raises(cv.CapvizError, match=r"updates a Python number the object keeps"):
        cv.capture(TwoMeters(shared=True).step, cv.spec((4,), "float64"))


class LocalItem:
    def __init__(self):
        self.meter = AverageMeter()
        self.total = 0.0

    def step(self, x):
        value = (x * x).mean().item()
        self.meter.sum += value * x.shape[0]
        self.meter.count += x.shape[0]
        self.total = self.total + max(value, 0.5)
        return x * 2.0


class LocalItemKept(LocalItem):
    def step(self, x):
        value = (x * x).mean().item()
        self.meter.sum += value
        self.last = value  # (a plain store: the value goes elsewhere)
        return x * 2.0


@pytest.mark.parametrize("warm", [False, True])
def test_an_item_read_into_a_local_first_replays_as_eager(warm):
    """R12 #4: ``value = loss.item()`` then ``self.meter.sum += value * n`` (the local read
    only as an operand of kept updates): four calls exact, types too. Before: captured from an
    example, every replay on new data was refused as 'another branch' (no branch)."""
    mine, eager = LocalItem(), LocalItem()
    if warm:
        mine.step(ROWS[0])
        eager.step(ROWS[0])
    graph = cv.capture(mine.step, ROWS[0])
    for x in ROWS[1:]:
        graph.replay({"x": x})
        eager.step(x)
        for name, value in vars(eager.meter).items():
            assert _same(getattr(mine.meter, name), value), name
        assert _same(mine.total, eager.total)


def test_an_item_local_that_goes_elsewhere_is_refused_at_the_read():
    with pytest.raises(cv.CapvizError, match=r"`\(x \* x\)\.mean\(\)\.item\(\)` at \S+:\d+ in "
                                             r"step: reads the value of"):
        cv.capture(LocalItemKept().step, cv.spec((4,), "float64"))


class ListHeld:
    def __init__(self):
        self.meters = [AverageMeter(), AverageMeter()]

    def step(self, x):
        m = self.meters[0]
        m.sum += (x * x).mean().item()
        m.count += 1
        return x * 2.0


@pytest.mark.parametrize("warm", [False, True])
def test_a_meter_held_in_a_list_through_an_alias_replays_as_eager(warm):
    """R12's 'list alias' row: ``m = self.meters[0]; m.sum += ...`` (followed by position, as
    the eager line reads it). Before: refused at the read."""
    mine, eager = ListHeld(), ListHeld()
    if warm:
        mine.step(ROWS[0])
        eager.step(ROWS[0])
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    for x in ROWS[1:]:
        graph.replay({"x": x})
        eager.step(x)
        for got, want in zip(mine.meters, eager.meters):
            for name, value in vars(want).items():
                assert _same(getattr(got, name), value), name
