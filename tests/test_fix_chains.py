"""A training step's refusals followed fix by fix, each quoted fix applied as written, to a
step that replays exactly (outputs and every state, replay and compiled, cold and warm).

Review 8, finding 21: Adam written in place with its statements two to a line (``self.m *=
0.9; self.m += 0.1 * h``, ``mh = self.m / ...; sh = ...``), after the first quoted fix (the
step counter), was told "read it through the local name of that write", which changes
nothing: the lines holding two statements were not read. Now the reads of the states are
quoted through ``cv.constant``, then NumPy's own writes ``self.m *= 0.9`` with a tensor; both
applied, the step replays exactly."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import capviz as cv
from tests.helpers.twins import assert_same_bytes, replayed
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("two_passes")  # (the two passes' refusals, fix by fix:
#   a first capture that lifts the arrays its statements write replays these programs
#   whole, tests/test_first_capture_guessed.py)

XS = [np.random.default_rng(k).normal(size=3) for k in range(6)]


class Adam:  # (review 8's fx_r8fix.py F1: the counter's fix applied)
    def __init__(self):
        self.W = np.array([1.0, -2.0, 3.0])
        self.m, self.s, self.t = np.zeros(3), np.zeros(3), np.zeros(())

    def step(self, x):
        h = x * self.W
        self.t += cv.constant(np.float64(1))
        self.m *= 0.9; self.m += 0.1 * h  # noqa: E702
        self.s *= 0.999; self.s += 0.001 * h * h  # noqa: E702
        mh = self.m / (1 - 0.9 ** self.t); sh = self.s / (1 - 0.999 ** self.t)  # noqa: E702
        self.W -= 0.1 * mh / (np.sqrt(sh) + 1e-8)
        return h


class AdamReads(Adam):  # (the first quoted fix applied)
    def step(self, x):
        h = x * self.W
        self.t += cv.constant(np.float64(1))
        self.m *= 0.9; self.m += 0.1 * h  # noqa: E702
        self.s *= 0.999; self.s += 0.001 * h * h  # noqa: E702
        mh = cv.constant(self.m) / (1 - 0.9 ** cv.constant(self.t)); sh = cv.constant(self.s) / (1 - 0.999 ** cv.constant(self.t))  # noqa: E501, E702
        self.W -= 0.1 * mh / (np.sqrt(sh) + 1e-8)
        return h


class AdamFixed(Adam):  # (the second applied too)
    def step(self, x):
        h = x * self.W
        self.t += cv.constant(np.float64(1))
        self.m *= cv.constant(np.float64(0.9)); self.m += 0.1 * h  # noqa: E702
        self.s *= cv.constant(np.float64(0.999)); self.s += 0.001 * h * h  # noqa: E702
        mh = cv.constant(self.m) / (1 - 0.9 ** cv.constant(self.t)); sh = cv.constant(self.s) / (1 - 0.999 ** cv.constant(self.t))  # noqa: E501, E702
        self.W -= 0.1 * mh / (np.sqrt(sh) + 1e-8)
        return h


def _line(cls, code):
    """The line of ``cls.step`` starting with ``code``."""
    lines, start = inspect.getsourcelines(cls.step)
    return next(start + k for k, text in enumerate(lines) if text.strip().startswith(code))


def _fix(cls, warm):
    model = cls()
    if warm:
        model.step(XS[0])
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(model.step, XS[1])
    what, _why, fix = str(info.value).splitlines()
    return what, fix


@pytest.mark.parametrize("warm", [False, True])
def test_in_place_adam_two_statements_a_line_is_told_each_fix_that_applies(warm):
    """Checked to fail before this change (the first fix quoted a local name's write)."""
    what, fix = _fix(Adam, warm)
    assert what.startswith(f"`self.W -= 0.1 * mh / (np.sqrt(sh) + 1e-8)` at {__file__}:")
    reads = _line(Adam, "mh = self.m / (1 - 0.9 ** self.t); sh = self.s")
    assert fix.startswith(
        f"Fix: write line {reads} as `mh = cv.constant(self.m) / (1 - 0.9 ** cv.constant("
        f"self.t))`, and line {reads} as `sh = cv.constant(self.s) / (1 - 0.999 ** "
        "cv.constant(self.t))`: "), fix
    what, fix = _fix(AdamReads, warm)
    first = _line(AdamReads, "self.m *= 0.9; self.m += 0.1 * h")
    assert what.startswith(f"`self.m *= 0.9; self.m += 0.1 * h` at {__file__}:{first} in step")
    assert fix == (f"Fix: write line {first} (`self.m *= 0.9`) with a tensor, which the "
                   "capture records as a state: `self.m *= cv.constant(np.float64(0.9))`, and "
                   f"line {first + 1} as `self.s *= cv.constant(np.float64(0.999))` (outside a "
                   "capture cv.constant returns the value itself).")


@pytest.mark.parametrize("warm", [False, True])
def test_in_place_adam_with_the_quoted_fixes_applied_replays_exactly(warm):
    model, eager = AdamFixed(), Adam()
    for out, want in replayed(model, eager, XS, warm):
        assert out.tobytes() == want.tobytes()
        assert_same_bytes(model, eager, ("W", "m", "s", "t"))


class BnDict:  # (review 8's fx_r8train.py T6: the BN dict bound anew, momentum beside it)
    def __init__(self):
        self.W, self.v = np.array([1.0, -2.0, 3.0]), np.zeros(3)
        self.bn = {"mean": np.zeros(3), "var": np.ones(3)}

    def step(self, x):
        h = x * self.W
        self.bn = {"mean": 0.9 * self.bn["mean"] + 0.1 * h, "var": self.bn["var"]}
        self.v *= 0.9; self.v += h; self.W -= 0.1 * self.v  # noqa: E702
        return h


class BnDictItems(BnDict):  # (the first quoted fix applied)
    def step(self, x):
        h = x * self.W
        self.bn["mean"][...] = 0.9 * cv.constant(self.bn["mean"]) + 0.1 * h
        self.v *= 0.9; self.v += h; self.W -= 0.1 * self.v  # noqa: E702
        return h


class BnDictReads(BnDict):  # (the second)
    def step(self, x):
        h = x * self.W
        self.bn["mean"][...] = 0.9 * cv.constant(self.bn["mean"]) + 0.1 * h
        self.v *= 0.9; self.v += h; self.W -= 0.1 * cv.constant(self.v)  # noqa: E702
        return h


class BnDictFixed(BnDict):  # (the third)
    def step(self, x):
        h = x * self.W
        self.bn["mean"][...] = 0.9 * cv.constant(self.bn["mean"]) + 0.1 * h
        self.v *= cv.constant(np.float64(0.9)); self.v += h; self.W -= 0.1 * cv.constant(self.v)  # noqa: E702
        return h


@pytest.mark.parametrize("warm", [False, True])
def test_a_bn_dict_bound_anew_beside_momentum_is_told_each_fix_then_replays_exactly(warm):
    """Review 8, finding 7 (T6): "keep each value in an ndarray written in place (self.h[...]
    = h)", which does not fit a dict, then at the W line of ``a; b; c`` a counter's example
    (self.W += cv.constant(np.float64(1)) for self.W += 1); checked to fail before this change.
    Now the dict's array written in place, the read of v through cv.constant, NumPy's own
    ``self.v *= 0.9`` with a tensor; all applied, exact."""
    what, fix = _fix(BnDict, warm)
    assert what.startswith('`self.bn = {"mean": 0.9 * self.bn["mean"] + 0.1 * h, ')
    assert fix == ('Fix: write its arrays in place: self.bn["mean"][...] = 0.9 * '
                   'cv.constant(self.bn["mean"]) + 0.1 * h, which the capture records as '
                   'states.')
    what, fix = _fix(BnDictItems, warm)
    assert fix.startswith("Fix: write `self.W -= 0.1 * cv.constant(self.v)`: "), fix
    what, fix = _fix(BnDictReads, warm)
    line = _line(BnDictReads, "self.v *= 0.9;")
    assert fix.startswith(f"Fix: write line {line} (`self.v *= 0.9`) with a tensor, which the "
                          "capture records as a state: `self.v *= cv.constant(np.float64(0.9))`"
                          ), fix
    model, eager = BnDictFixed(), BnDict()
    for out, want in replayed(model, eager, XS, warm):
        assert out.tobytes() == want.tobytes()
        assert_same_bytes(model, eager, ("W", "v"))
        assert model.bn["mean"].tobytes() == eager.bn["mean"].tobytes()


class EmaBeside:  # (review 8's fx_r8train.py T4: a BN item, momentum, an EMA of the weights)
    def __init__(self):
        self.W, self.v = np.array([1.0, -2.0, 3.0]), np.zeros(3)
        self.bn = {"mean": np.zeros(3), "var": np.ones(3)}
        self.ema = self.W.copy()

    def step(self, x):
        h = x * self.W
        self.bn["mean"] = 0.9 * self.bn["mean"] + 0.1 * h
        self.v *= 0.9
        self.v += h
        self.W -= 0.1 * self.v
        self.ema = 0.99 * self.ema + 0.01 * self.W
        return h


class EmaBesideFixed(EmaBeside):  # (the BN item's quoted fix, W's and the EMA's)
    def step(self, x):
        h = x * self.W
        self.bn["mean"][...] = 0.9 * cv.constant(self.bn["mean"]) + 0.1 * h
        self.v *= 0.9
        self.v += h
        self.W -= 0.1 * cv.constant(self.v)
        self.ema = 0.99 * cv.constant(self.ema) + 0.01 * self.W
        return h


@pytest.mark.parametrize("warm", [False, True])
def test_a_running_mean_in_a_dict_item_is_told_its_in_place_write(warm):
    """Review 8, finding 7 (T4): the BN item was told "write the new value into the array in
    place (a[...] = value, or a -= d)", the general form; now the line itself (checked to fail
    before this change). With it, W's and the EMA's fixes, the step replays exactly. (Left: the
    EMA's fix applied before W's is refused as a rebinding, not at W's line.)"""
    what, fix = _fix(EmaBeside, warm)
    assert what.startswith('`self.bn["mean"] = 0.9 * self.bn["mean"] + 0.1 * h` at ')
    assert fix.startswith('Fix: write the new value into the array in place: self.bn["mean"]'
                          '[...] = 0.9 * cv.constant(self.bn["mean"]) + 0.1 * h, which the '
                          'capture records as a state')
    model, eager = EmaBesideFixed(), EmaBeside()
    for out, want in replayed(model, eager, XS, warm):
        assert out.tobytes() == want.tobytes()
        assert_same_bytes(model, eager, ("W", "v", "ema"))
        assert model.bn["mean"].tobytes() == eager.bn["mean"].tobytes()
