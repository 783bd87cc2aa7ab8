"""A dict item the call sets to a value of the data, and a scratch buffer kept in a dict.

* A warm dict-item input cache (``self.cache["x"] = x`` in a layer's forward, captured after one
  eager call: the item held the last call's array) was refused at the caller's ``cv.capture``
  line, "write the new value into the array in place" (review 8, finding 3's remnant; checked
  to fail before this change). Now set by each replay as the call sets it, as ``self.x = x``
  is; where the old array may be read (``bn["mean"] = 0.9 * bn["mean"] + ...``, the dict read
  again in the call) it is refused as before.
* A scratch buffer made lazily in a dict (``buf = self.ws.setdefault("tmp", np.empty(3));
  buf[:] = v``), cold: refused with the fix "create it by one eager call"; applied, the NumPy
  read after the write is refused with ``cv.constant(buf)``; both applied, exact."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from tests.helpers.twins import replayed

XS = [np.random.default_rng(k).normal(size=3) for k in range(5)]


def _same(a, b):
    return type(a) is type(b) and np.asarray(a).tobytes() == np.asarray(b).tobytes()


class InputCache:
    def __init__(self):
        self.W = np.eye(3) * 0.5
        self.cache = {}

    def step(self, x):
        self.cache["x"] = x
        return np.tanh(x @ self.W)


@pytest.mark.parametrize("warm", [False, True])
def test_a_dict_item_input_cache_is_set_by_each_replay(warm):
    model, eager = InputCache(), InputCache()
    for out, want in replayed(model, eager, XS, warm):
        assert _same(out, want)
        assert model.cache.keys() == eager.cache.keys()
        assert _same(model.cache["x"], eager.cache["x"])


class RunningMean:
    def __init__(self):
        self.bn = {"mean": np.zeros(3)}

    def step(self, x):
        self.bn["mean"] = 0.9 * self.bn["mean"] + 0.1 * x
        return x - 1.0


class ReadAgain(InputCache):
    def step(self, x):
        self.cache["x"] = x
        return np.tanh(x @ self.W) + self.cache["x"]


@pytest.mark.parametrize("cls", [RunningMean, ReadAgain])
def test_an_item_whose_old_array_may_be_read_is_not_taken_for_a_cache(cls):
    model, eager = cls(), cls()
    model.step(XS[0])
    eager.step(XS[0])
    try:
        graph = cv.capture(model.step, XS[1])
    except cv.UnsupportedOperationError as err:  # refused, as before, at the user's line (an
        assert str(err).startswith('`self.cache["x"] = x` at ')  # input's: the caller's before)
        return
    for x in XS[1:]:  # (or captured: exactly)
        assert _same(graph.replay({graph.inputs[0]: x})[graph.outputs[0]], eager.step(x))
        assert all(_same(getattr(model, n)[k], getattr(eager, n)[k])
                   for n in vars(eager) if isinstance(getattr(eager, n), dict)
                   for k in getattr(eager, n))


class Scratch:
    def __init__(self):
        self.ws = {}

    def step(self, x):
        buf = self.ws.setdefault("tmp", np.empty(3))
        buf[:] = np.tanh(x)
        return buf + 1.0


class ScratchFixed(Scratch):  # (the second quoted fix applied)
    def step(self, x):
        buf = self.ws.setdefault("tmp", np.empty(3))
        buf[:] = np.tanh(x)
        return cv.constant(buf) + 1.0


def test_a_scratch_buffer_made_lazily_in_a_dict_is_told_each_fix_then_replays_exactly():
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(Scratch().step, XS[0])
    what, _why, fix = str(info.value).splitlines()
    assert what.startswith("`buf[:] = np.tanh(x)` at ")
    assert fix == ("Fix: create self.ws['tmp'] before the capture (in __init__, or by one "
                   "eager call), so that the call writes it in place, which the capture "
                   "records as a state.")
    model = Scratch()
    model.step(XS[0])  # (the first fix applied: one eager call)
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(model.step, XS[1])
    what, _why, fix = str(info.value).splitlines()
    assert what.startswith("`return buf + 1.0` at ")
    assert fix.startswith("Fix: write `return cv.constant(buf) + 1.0`: ")
    model, eager = ScratchFixed(), Scratch()
    for out, want in replayed(model, eager, XS, warm=True):
        assert _same(out, want)
        assert _same(model.ws["tmp"], eager.ws["tmp"])
