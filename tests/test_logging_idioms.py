"""Common logging code in training loops replays exactly as eager, or is refused at the user's
line with the one fix that applies, and the fix, applied, replays exactly (issue #20, stop 37):
a 0-d ndarray logged (review 7, finding 23), ``losses.append(loss.item())`` (review 8, finding
18), a dict or a tuple holding a tensor appended (``history.append({"loss": l})``, ``(step,
loss)``), an AverageMeter on Python floats, a cold ``setdefault(k, []).append``.
Each replay is compared with an eager twin: outputs, and the containers' items with their types
(``np.float64`` is not a 0-d ndarray, a tuple is not a list)."""

from __future__ import annotations

import collections
import inspect
import math

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import DataReadError, UnsupportedOperationError

SPEC = cv.spec((3,), "float64")
XS = [np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0]), np.array([3.0, 1.0, -2.0])]


def _same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple, collections.deque)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (np.ndarray, np.generic)):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return a == b


def _replays_as_eager(make, world, given=SPEC, warm=False):
    """Capture ``make()``'s step (after one eager call on both twins where ``warm``), then
    replay it and call the eager twin on each of XS: outputs and ``world(obj)`` the same."""
    eager, captured = make(), make()
    if warm:
        eager.step(XS[0])
        captured.step(XS[0])
    graph = cv.capture(captured.step, given)
    assert _same(world(captured), world(eager))  # (the capture leaves them as it found them)
    for x in XS:
        out = graph.replay({"x": x})
        assert _same(out[next(iter(out))], eager.step(x))
        assert _same(world(captured), world(eager)), (world(captured), world(eager))
    return graph


class ZeroD:
    def __init__(self):
        self.log = []

    def step(self, x):
        self.log.append(np.asarray(x.sum()))
        self.log.append(np.array(x[1]))
        self.log.append(np.asarray(x.mean(), dtype=np.float32))
        self.log.append(x.sum())
        return x * 2.0


def test_a_logged_0d_ndarray_comes_back_a_0d_ndarray_as_eager():
    # review 7, finding 23: np.asarray(x.sum()) was logged back as np.float64
    for warm in (False, True):
        _replays_as_eager(ZeroD, lambda m: m.log, warm=warm)
    m = ZeroD()
    cv.capture(m.step, SPEC).replay({"x": XS[0]})
    assert [type(v) for v in m.log] == [np.ndarray, np.ndarray, np.ndarray, np.float64]
    assert m.log[2].dtype == np.float32 and m.log[2].shape == ()


class ItemLog:
    def __init__(self):
        self.losses = []
        self.ppl = []

    def step(self, x):
        loss = (x ** 2).mean()
        self.losses.append(loss.item())
        return x * 2.0

    def step_float(self, x):
        loss = (x ** 2).mean()
        self.losses.append(float(loss))
        return x * 2.0

    def step_exp(self, x):
        self.ppl.append(math.exp((x ** 2).mean()))
        return x * 2.0

    def step_two_lines(self, x):
        loss = (x ** 2).mean()
        value = loss.item()
        self.losses.append(value)
        return x * 2.0


class ItemLogFixed(ItemLog):  # the fix each refusal quotes, applied
    def step(self, x):
        loss = (x ** 2).mean()
        self.losses.append(loss)
        return x * 2.0

    def step_exp(self, x):
        self.ppl.append(np.exp((x ** 2).mean()))
        return x * 2.0


@pytest.mark.parametrize("method, fixed", [
    ("step", "self.losses.append(loss)"), ("step_float", "self.losses.append(loss)"),
    ("step_exp", "self.ppl.append(np.exp((x ** 2).mean()))")])
@pytest.mark.parametrize("given", [SPEC, XS[0]], ids=["spec", "example"])
def test_a_number_read_on_a_logging_line_is_refused_with_log_the_tensor(method, fixed, given):
    # review 8, finding 18: spec -> "capture with an example"; applied -> a guard, and every
    # replay on other data refused "another branch" (there is none)
    m = ItemLog()
    with pytest.raises(DataReadError) as err:
        cv.capture(getattr(m, method), given)
    message = str(err.value)
    assert "logs the value of" in message and "as a Python number" in message
    assert f"Fix: log the tensor itself: {fixed} " in message
    assert len(message.splitlines()) <= 3 and m.losses == [] and m.ppl == []
    step = "step_exp" if method == "step_exp" else "step"

    class Fixed(ItemLogFixed):
        pass

    Fixed.step = getattr(ItemLogFixed, step)
    _replays_as_eager(Fixed, lambda m: (m.losses, m.ppl), given=given)
    _replays_as_eager(Fixed, lambda m: (m.losses, m.ppl), given=given, warm=True)


def test_a_number_read_then_logged_is_refused_at_the_logging_line_with_its_fix():
    m = ItemLog()
    with pytest.raises(DataReadError, match="capture with an example array"):
        cv.capture(m.step_two_lines, SPEC)  # (its fix applied below)
    with pytest.raises(UnsupportedOperationError) as err:
        cv.capture(m.step_two_lines, XS[0])
    message = str(err.value)
    line = inspect.getsourcelines(ItemLog.step_two_lines)[1] + 3
    assert f"test_logging_idioms.py:{line}" in message.splitlines()[0]
    assert "self.losses is given a Python number read from a tensor" in message
    assert "(.item() at " in message
    assert "Fix: keep it the tensor (value = loss) and log that" in message
    assert m.losses == []

    class Fixed(ItemLog):
        def step(self, x):
            loss = (x ** 2).mean()
            value = loss
            self.losses.append(value)
            return x * 2.0

    _replays_as_eager(Fixed, lambda m: m.losses, given=XS[0])
