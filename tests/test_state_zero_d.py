"""A writeable 0-d ndarray (``self.b = np.zeros(())``, a global, a dict item, a local alias)
read by a tensor op before the call writes it: each replay reads the value the array holds when
it starts, as eager NumPy does (census of stop 36, W=20c: silent before, the read was a literal
of the capture's value)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("two_passes")  # (the two passes' refusals: a first
#   capture that lifts its guess runs once, tests/test_first_capture_guessed.py)

B = np.zeros(())


class Offsets:
    def __init__(self):
        self.b = np.zeros(())
        self.d = {"b": np.zeros(())}
        self.n = np.zeros((), np.int64)

    def attribute(self, x):
        y = x - self.b
        self.b -= 0.1 * y.mean()
        return y

    def item(self, x):
        y = x + self.d["b"]
        self.d["b"] -= 0.1 * y.mean()
        return y

    def glob(self, x):
        y = x + B
        B[...] = y.mean()
        return y

    def alias(self, x):
        b = self.b
        y = np.add(x, b)
        b -= 0.1 * y.mean()
        return y

    def running_max(self, x):
        y = np.maximum(x, self.b)
        self.b[...] = y.max()
        return y

    def count(self, x):
        y = x + self.n
        self.n += 1
        return y


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("name", ["attribute", "item", "alias", "running_max"])
def test_a_named_zero_d_array_read_before_its_write_replays_as_eager(name):
    """Silent before this change (checked: call 2 returned x + the capture's 0.0, eagerly
    x - 0.1)."""
    model, twin = Offsets(), Offsets()
    graph = cv.capture(getattr(model, name), np.arange(3.0))
    for k in range(4):
        x = np.arange(3.0) * (k - 1.5)
        b = model.b
        assert _same(graph.replay({"x": x})["out"], getattr(twin, name)(x))
        assert model.b is b and _same(model.b, twin.b) and _same(model.d["b"], twin.d["b"])


def test_a_zero_d_global_read_before_its_write_replays_as_eager():
    global B
    B = held = np.zeros(())
    graph = cv.capture(Offsets().glob, np.arange(3.0))
    want = 0.0
    for k in range(4):
        x = np.arange(3.0) * (k - 1.5)
        assert _same(graph.replay({"x": x})["out"], x + want)
        want = (x + want).mean()
        assert B is held and _same(B, np.array(want))


def test_a_zero_d_counter_numpy_writes_stays_refused_at_its_line():
    model = Offsets()
    with pytest.raises(cv.UnsupportedOperationError, match=r"^`self\.n \+= 1` at .* in count: "
                       r"NumPy's own operators wrote the outside ndarray self\.n"):
        cv.capture(model.count, np.arange(3.0))
    assert model.n.tolist() == 0


class ReshapedView:
    def __init__(self):
        self.a = np.zeros(1)
        self.v = self.a.reshape(())

    def step(self, x):
        y = x + self.v
        self.a[:] = y.max()
        return y


def test_a_zero_d_view_of_an_array_the_call_writes_read_before_the_write_is_refused():
    """Hostile review 8, finding 14 (silent before: the view was a literal of the capture's
    number, checked): refused at the write, naming the read."""
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(ReshapedView().step, np.arange(3.0))
    what, why, _fix = str(info.value).splitlines()
    assert what.startswith("`self.a[:] = y.max()` at ")
    assert "the capture read" in why and "before this write" in why
