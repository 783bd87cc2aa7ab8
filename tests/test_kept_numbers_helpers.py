"""Python numbers an object keeps, updated in a helper method or through a plain property,
replay as eager Python's (#20, stop 41, W=20k; capviz/trace/kept_numbers.py,
kept_properties.py): ``self.meter.update(loss.item(), n)`` whose ``update`` does ``self.sum +=
val * n; self.count += n; self.avg = self.sum / self.count`` (an AverageMeter's), ``self.add(v)``
on ``fn``'s own object, ``self.s += v`` where ``s`` is a property over ``self._s``. Before
(dc00c85): each refused at the call ("self.meter is updated by a method of its object") or the
read ("keep self.s in a 0-d array").

And a hole closed on the way (silent on dc00c85 and on 48e0bf0, not only for kept numbers): a
held object replaced by one of another class after the capture refuses the replay (each replay
ran the captured method's ops where the eager call runs the new class's); a method patched on
its class or set on the object is refused by the lead's code guards (48e0bf0)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import GuardError

ROWS = np.random.default_rng(41).standard_normal((6, 4))
ROWS[4, 2] = np.nan  # (a NaN loss on the fifth call)


class Meter:
    def __init__(self):
        self.sum, self.count, self.avg = 0.0, 0, 0.0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


class IntMeter(Meter):  # (reset to the int 0: the call makes floats of sum and avg)
    def __init__(self):
        self.sum, self.count, self.avg = 0, 0, 0


class Helped:
    def __init__(self, meter=Meter):
        self.meter = meter()

    def step(self, x):
        loss = (x * x).mean()
        self.meter.update(loss.item(), x.shape[0])
        return x * 2.0


class HelpedByKeyword(Helped):
    def step(self, x):
        self.meter.update(n=x.shape[0], val=(x * x).mean().item())
        return x * 2.0


class OwnHelper:
    def __init__(self):
        self.total, self.count = 0.0, 0

    def add(self, v):
        self.total += v
        self.count += 1

    def step(self, x):
        self.add(x.sum().item())
        return x - 1.0


class Plain:
    def __init__(self):
        self._s, self._n = 0.0, 0

    @property
    def s(self):
        return self._s

    @s.setter
    def s(self, value):
        self._s = value

    @property
    def n(self):
        return self._n

    @n.setter
    def n(self, value):
        self._n = value

    def step(self, x):
        self.s += (x * x).mean().item()
        self.n += 1
        return x * 2.0


def _same(a, b):
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (a != a and b != b)
    return a == b


def _numbers(obj):
    return dict(vars(obj.meter)) if hasattr(obj, "meter") else dict(vars(obj))


KINDS = {"helper": Helped, "helper_int0": lambda: Helped(IntMeter),
         "helper_keywords": HelpedByKeyword, "own_helper": OwnHelper, "property": Plain}


@pytest.mark.parametrize("example", [False, True])
@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_number_updated_in_a_helper_or_a_property_replays_as_eager(kind, warm, example):
    """Five calls against eager (a NaN among them): outputs bit for bit, every number the
    object keeps after each, with its Python type."""
    mine, eager = KINDS[kind](), KINDS[kind]()
    if warm:
        mine.step(ROWS[0])
        eager.step(ROWS[0])
    graph = cv.capture(mine.step, ROWS[0] if example else cv.spec((4,), "float64"))
    assert graph.state_nodes and {n.params["python"] for n in graph.state_nodes} <= \
        {"float", "int"}
    for x in ROWS[1:]:
        out = graph.replay({"x": x})["out"]
        want = eager.step(x)
        assert out.dtype == want.dtype and out.tobytes() == want.tobytes()
        got, wanted = _numbers(mine), _numbers(eager)
        assert got.keys() == wanted.keys()
        for name in wanted:
            assert _same(got[name], wanted[name]), (name, got[name], wanted[name])


class Doubled(Meter):
    def update(self, val, n=1):
        self.sum += 2.0 * val * n
        self.count += n
        self.avg = self.sum / self.count


def _patch_object(obj):
    def update(val, n=1):
        obj.meter.sum += 3.0 * val
        obj.meter.count += n
    obj.meter.update = update


SWAPS = {
    "class_swapped": (lambda obj: setattr(obj, "meter", Doubled()), "type(self.meter)",
                      f"<class '{__name__}.Meter'>", f"<class '{__name__}.Doubled'>"),
}


@pytest.mark.parametrize("swap", sorted(SWAPS))
def test_a_helper_s_class_swapped_or_patched_refuses_the_replay(swap):
    change, label, old, new = SWAPS[swap]
    mine, eager = Helped(), Helped()
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    graph.replay({"x": ROWS[0]})
    eager.step(ROWS[0])
    try:
        change(mine)
        before = dict(vars(mine.meter))
        with pytest.raises(GuardError) as info:
            graph.replay({"x": ROWS[1]})
        line = f"{__file__}:{Helped.step.__code__.co_firstlineno + 2} in step"
        assert str(info.value) == (
            f"{label} was {old} when step was captured (read at {line}) and is {new} now, so "
            "the graph computes what the code did with the old value.\n"
            f"Fix: capture step again after changing {label} (a graph per value: keep one "
            "for each)")
        assert vars(mine.meter) == before  # (nothing written)
        again = cv.capture(mine.step, cv.spec((4,), "float64"))  # (the fix, applied)
        change(eager)
        for x in ROWS[1:4]:
            again.replay({"x": x})
            eager.step(x)
            assert all(_same(getattr(mine.meter, k), v) for k, v in vars(eager.meter).items())
    finally:
        Meter.update = Doubled.__mro__[1].__dict__["update"]


def test_a_helper_patched_on_the_object_refuses_the_replay():
    mine = Helped()
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    graph.replay({"x": ROWS[0]})
    _patch_object(mine)
    with pytest.raises(GuardError, match=r"^self\.meter\.update is now an attribute of the "
                                         r"object \(<function "):  # (the lead's code guards)
        graph.replay({"x": ROWS[1]})


class Act:
    def apply(self, x):
        return x * 2.0


class Act3(Act):
    def apply(self, x):
        return x * 3.0


class Layer:
    def __init__(self):
        self.act = Act()

    def step(self, x):
        return self.act.apply(x)


@pytest.mark.parametrize("change", ["object", "class"])
def test_a_held_object_s_class_swapped_refuses_the_replay_with_no_kept_number(change):
    """The same hole with no kept number: ``self.act = Act3()`` (or ``Act.apply`` patched)
    after the capture; the replay gave 2x where eager gives 3x."""
    layer = Layer()
    graph = cv.capture(layer.step, np.ones(3))
    for k in range(2):
        x = ROWS[k, :3]
        assert graph.replay({"x": x})["out"].tobytes() == layer.step(x).tobytes()
    saved = Act.apply
    try:
        if change == "object":
            layer.act = Act3()
        else:
            Act.apply = Act3.apply
        with pytest.raises(GuardError, match=r"^type\(self\.act\) was |^self\.act\.apply is "
                                             r"now <function Act3\.apply> on the class"):
            graph.replay({"x": np.ones(3)})
    finally:
        Act.apply = saved
