"""A layer keeping what its backward reads (``self.x = x``, ``self.out = out``) is set by
each replay as the call sets it, also after an eager call made the attribute (review 8, finding
3: refused at the caller's ``cv.capture`` line with a fix rewriting the capture call). Where the
code the call runs asks whether the attribute exists (``hasattr``, ``getattr(self, "prev",
None)``, ``vars``), the first call takes a path later calls do not: refused at the line that sets
it, with the fix (one eager call first), where it was removed and never set by a replay
(silent). Another method asking (``backward``'s ``hasattr(self, "x")``) is not on the path: the
attribute is set by each replay. Each test runs the graph against an eager twin."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import UnsupportedOperationError

SPEC = cv.spec((2, 3), "float64")
XS = [np.arange(6.0).reshape(2, 3) - k for k in range(3)]


class Dense:
    def __init__(self):
        self.W = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
        self.b = np.zeros(4)

    def forward(self, x):
        self.x = x                      # for backward
        out = x @ self.W + self.b
        self.out = out                  # (returned too: the same array)
        return out

    def backward(self, dout):
        if not hasattr(self, "x"):
            raise RuntimeError("call forward first")
        return dout @ self.W.T, self.x.T @ dout, self.out.sum()


def _check(model, twin, graph):
    for x in XS:
        got = graph.replay({"x": x})["out"]
        want = twin.forward(x)
        assert np.array_equal(got, want) and np.array_equal(model.out, twin.out)
        dout = np.ones((2, 4))
        for a, b in zip(model.backward(dout), twin.backward(dout)):
            assert np.array_equal(a, b) and type(a) is type(b)


def test_a_layer_cache_set_over_an_earlier_calls_is_set_by_each_replay():
    """Before: refused at the caller's cv.capture line (review 8, finding 3)."""
    model, twin = Dense(), Dense()
    model.forward(XS[0])
    twin.forward(XS[0])
    old = model.x
    graph = cv.capture(model.forward, SPEC)
    assert model.x is old  # the capture changes nothing
    _check(model, twin, graph)


def test_a_cache_asked_for_only_by_another_method_is_set_by_each_replay():
    """backward's hasattr is not on forward's path. Before: removed, never set (silent)."""
    model, twin = Dense(), Dense()
    graph = cv.capture(model.forward, SPEC)
    assert not hasattr(model, "x") and not hasattr(model, "out")
    _check(model, twin, graph)


class Lazy:
    def __init__(self):
        self.W = np.ones(3)

    def step(self, x):
        if not hasattr(self, "first"):
            self.first = x * 1.0
        return x * self.W + self.first


class Previous:
    def __init__(self):
        self.W = np.ones(3)

    def step(self, x):
        prev = getattr(self, "prev", None)
        out = x * self.W if prev is None else x * self.W + prev
        self.prev = out
        return out


@pytest.mark.parametrize("make, line", [(Lazy, "self.first = x * 1.0"),
                                        (Previous, "self.prev = out")])
def test_a_cache_the_call_asks_for_is_refused_at_its_line_then_captures_warm(make, line):
    """Before: removed by the capture and never set by a replay, where the next eager call
    takes the path it exists on (silent, review 8's baseline of item 4)."""
    model = make()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(model.step, cv.spec((3,), "float64"))
    message = str(info.value)
    assert message.splitlines()[0].startswith(f"`{line}` at ")
    assert "asks whether" in message and "create" in message and "by one eager call" in message
    assert len(message.splitlines()) <= 3
    x0 = np.array([1.0, 2.0, 3.0])
    model.step(x0)  # the fix: one eager call
    twin = make()
    twin.step(x0)
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    for k in range(3):
        x = x0 * (k + 2)
        assert np.array_equal(graph.replay({"x": x})["out"], twin.step(x))


class Smoothed:
    def __init__(self):
        self.x = np.zeros(3)

    def mean_before(self):
        return float(self.x.sum())  # NumPy reads the last call's cache

    def step(self, x):
        m = self.mean_before()
        self.x = x
        return x * 2.0 + m


def test_a_cache_a_helper_reads_with_numpy_stays_refused():
    """The array it held is read by NumPy in a method fn calls: a replay would use that read's
    value every time."""
    model = Smoothed()
    model.step(np.ones(3))
    with pytest.raises(UnsupportedOperationError, match="self.x is rebound to a value of the "
                                                        "capture"):
        cv.capture(model.step, cv.spec((3,), "float64"))


class Ema:
    def __init__(self):
        self.W = np.zeros(3)

    def step(self, x): self.W = 0.9 * self.W + 0.1 * x; return x * 1.0  # noqa: E702


def test_a_running_value_on_a_one_line_def_is_rebound_not_set_from_the_capture():
    """Review 8, finding 17 (silent regression of 5234dae): the read of self.W on a one-line
    def was not seen, and each replay set W from the capture-time W."""
    model, twin = Ema(), Ema()
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    for k in range(3):
        x = np.arange(3.0) + k
        graph.replay({"x": x})
        twin.step(x)
        assert np.array_equal(model.W, twin.W)


class Momentum:
    """CS231n's momentum over lists of parameters."""

    def __init__(self):
        self.params = [np.ones(3), np.full(3, 2.0)]
        self.vs = [np.zeros(3), np.zeros(3)]

    def step(self, x):
        grads = [x * self.params[0], x * self.params[1]]
        for i in range(2):
            self.vs[i] = 0.9 * self.vs[i] - 0.1 * grads[i]
            self.params[i] += self.vs[i]
        return grads[0]


def test_momentum_over_a_list_of_velocities_replays_as_eager():
    """Review 8, finding 22 (silent): the velocities, which NumPy computes from first (0.9 *
    self.vs[i] has no tensor), were refilled each replay from the capture's values."""
    model, twin = Momentum(), Momentum()
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    for x in ([1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [3.0, 1.0, -2.0]):
        x = np.array(x)
        assert np.array_equal(graph.replay({"x": x})["out"], twin.step(x))
        for a, b in zip(model.params + model.vs, twin.params + twin.vs):
            assert np.array_equal(a, b)


class DequeSlot:
    def __init__(self):
        import collections
        self.h = collections.deque([np.zeros(3)])

    def step(self, x):
        self.h[0] = 0.9 * self.h[0] + 0.1 * x
        return x * 1.0


def test_a_deque_slot_updated_from_itself_is_refused_at_its_line():
    """Review 8, finding 22 (silent): taken for a deque emptied and filled."""
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(DequeSlot().step, cv.spec((3,), "float64"))
    assert "stores values of the capture over items it held" in str(info.value)


class Last:
    def __init__(self, start):
        self.W = np.ones(3)
        self.last = start

    def step(self, x):
        out = x * self.W
        self.last = out.mean()
        return out


@pytest.mark.parametrize("start", [None, 0.0])
def test_the_last_loss_kept_on_an_attribute_is_set_by_each_replay(start):
    """Review 8, finding 19 / review 7, finding 20 (refusal of common code): refused with
    'create self.last before the capture', which refused again once applied."""
    for warm in (False, True):
        model, twin = Last(start), Last(start)
        if warm:
            model.step(np.ones(3))
            twin.step(np.ones(3))
        graph = cv.capture(model.step, cv.spec((3,), "float64"))
        for k in range(3):
            x = np.arange(3.0) + k
            graph.replay({"x": x})
            twin.step(x)
            assert type(model.last) is type(twin.last) and model.last == twin.last


class LoopAlias:
    def __init__(self):
        self.vs = [np.ones(3)]

    def step(self, x):
        for i, v in enumerate(self.vs):
            self.vs[i] = 0.9 * v - 0.1 * x
        return x * 1.0


def test_a_list_slot_rebound_from_its_loop_alias_replays_as_eager():
    """W=20t 05:17 (silent, pre-existing): 0.9 * v was baked and the slot refilled with it."""
    model, twin = LoopAlias(), LoopAlias()
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    for _ in range(3):
        graph.replay({"x": np.ones(3)})
        twin.step(np.ones(3))
        assert np.array_equal(model.vs[0], twin.vs[0])
