"""A value the call logs into a container that outlives it (``self.losses.append(loss)``,
``hist["last"] = x * 2.0``, a scratch list emptied and filled, frames in a ``deque(maxlen)``)
is logged by each replay after the graph, with the replayed value, as the eager call logs it
(capviz/trace/effects.py); what a replay cannot repeat (an insert at the front, a tuple of
values) is refused at the line that logs. Each test runs the graph against an eager twin for
three calls: outputs, the containers' items, their types (NumPy's scalar where the call logged
one) bit for bit."""

from __future__ import annotations

import collections
import os

import numpy as np
import pytest

import capviz as cv


def _same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, collections.deque)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


class Trainer:
    def __init__(self):
        self.W = np.ones(3)
        self.losses = []
        self.hist = {}
        self.acts = [np.zeros(3)]  # what an earlier call left
        self.frames = collections.deque(maxlen=2)

    def step(self, x):
        loss = np.mean((x * self.W) ** 2)  # NumPy's scalar
        self.losses.append(loss)
        self.hist["last"] = x * 2.0
        self.acts.clear()
        self.acts.append(x + 1.0)
        self.acts.append(self.acts[-1] * 2.0)
        self.frames.append(x * 3.0)
        self.W -= 0.1 * x
        return x * 1.0


def test_values_logged_into_lists_dicts_and_deques_are_logged_by_each_replay():
    """Before: the capture gave each container its items back and no replay logged (the
    census's LoggedRegression, review 7's fx_log.py L1, L2, L10, L12...: silent)."""
    model, twin = Trainer(), Trainer()
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    assert model.losses == [] and model.hist == {} and len(model.acts) == 1  # as before
    assert "log self.losses.append %" in str(graph)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.normal(size=3)
        assert _same(graph.replay({"x": x})["out"], twin.step(x))
        for name in ("losses", "hist", "acts", "frames", "W"):
            assert _same(getattr(model, name), getattr(twin, name)), name
    assert type(model.losses[0]) is np.float64
    model.losses = []  # a reset binds a new list: the replay logs there, as a call does
    twin.losses = []
    x = rng.normal(size=3)
    graph.replay({"x": x})
    twin.step(x)
    assert _same(model.losses, twin.losses) and len(model.losses) == 1


def test_state_return_logs_nothing_and_returns_the_values(tmp_path):
    model = Trainer()
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    x = np.ones(3)
    got = graph.replay({"x": x}, state="return")
    assert model.losses == [] and model.hist == {}
    name = next(k for k in got.states if k.startswith("self.losses[+"))
    assert _same(got.states[name], np.mean(x ** 2))
    path = os.path.join(tmp_path, "g.json")
    graph.save(path)
    loaded = cv.load(path)
    with pytest.raises(cv.ReplayInputError, match=r"the graph logs a value into self\.losses "
                       r"each call .*, and self\.losses is gone \(a loaded graph"):
        loaded.replay({"x": x}, states={"m.W": np.ones(3)})


class Front:
    def __init__(self):
        self.log = []
        self.pairs = []

    def insert(self, x):
        self.log.insert(0, x.sum())
        return x * 2.0

    def pair(self, x):
        self.pairs.append((x.sum(), x.max()))
        return x * 2.0


def test_what_a_replay_cannot_log_is_refused_at_the_line_that_logs():
    """Review 7, finding 2: an insert at the front (on a later capture the user's log got a
    duplicated item). A tuple of values logged is built by each replay since stop 37 (07be8b0:
    tests/test_logging_idioms.py), below."""
    model = Front()
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(model.insert, cv.spec((3,), "float64"))
    what, why, _fix = str(info.value).splitlines()
    assert what.startswith("`self.log.insert(0, x.sum())` at ")
    assert what.endswith("in insert: self.log keeps a value of the capture.")
    assert "the call puts values of the capture before its items (insert" in why
    graph = cv.capture(model.pair, cv.spec((3,), "float64"))
    assert model.log == [] and model.pairs == []
    eager = Front()
    for x in (np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])):
        graph.replay({"x": x})
        eager.pair(x)
    assert _same(model.pairs, eager.pairs) and type(model.pairs[0]) is tuple


MASKS = collections.deque(maxlen=4)


def _masked(x):
    if not MASKS:  # a memo of constants, made on the first call: no log
        MASKS.append(np.tril(np.ones((3, 3))))
    return x @ MASKS[0]


def test_a_memo_of_constants_is_no_log():
    MASKS.clear()
    graph = cv.capture(_masked, cv.spec((3,), "float64"))
    assert not graph.effect_outputs
    x = np.array([1.0, 2.0, 3.0])
    for _ in range(2):
        assert graph.replay({"x": x})["out"].tolist() == [6.0, 5.0, 3.0]
    assert len(MASKS) == 0


class Counted:
    def __init__(self):
        self.W = np.ones(3)
        self.log = []

    def step(self, x):
        self.log.append(1)
        _ = f"step {len(self.log)}"  # a message, dropped
        print(f"step {len(self.log)}", end="\r")
        self.W -= 0.1 * x
        return x * 2.0

    def from_message(self, x):
        self.log.append(1)
        _ = f"step {len(self.log)}"
        self.W -= 0.001 * len(_) * x  # a number from the message
        return x * 2.0

    def warmup(self, x):
        self.log.append(1)
        lr = 0.0 if len(self.log) < 2 else 0.1  # a number the graph keeps
        self.W -= lr * x
        return x * 2.0


def test_a_grown_list_read_only_for_a_message_is_captured_and_a_number_from_it_is_not():
    """Review 6, listreads.py LogLen: refused since 1620fb3, where the length reaches no
    value of the graph; a warm-up by the length stays refused at its line."""
    model, twin = Counted(), Counted()
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    model.log, twin.log = [1], [1]  # (the capture's runs appended, a Python side effect)
    for k in range(3):
        x = np.full(3, float(k))
        assert _same(graph.replay({"x": x})["out"], twin.step(x))
        assert _same(model.W, twin.W)
    with pytest.raises(cv.UnsupportedOperationError, match=r"`lr = 0\.0 if len\(self\.log\) < 2 "
                       r"else 0\.1` at .* in warmup: self\.log is a list that grows at every "
                       r"call, read here\."):
        cv.capture(Counted().warmup, cv.spec((3,), "float64"))
    with pytest.raises(cv.UnsupportedOperationError, match=r"`_ = f\"step \{len\(self\.log\)\}\"` "
                       r"at .* in from_message: self\.log is a list that grows at every call"):
        cv.capture(Counted().from_message, cv.spec((3,), "float64"))  # (review 7, finding 16)


class Scratch:
    def __init__(self):
        self.acts = []
        self.cache = [None, None]

    def step(self, x):
        self.acts.clear()
        self.acts.append(np.tanh(x))
        self.cache[0] = x * 1.0
        self.cache[1] = x * 2.0
        return x * 2.0


def test_a_scratch_list_emptied_or_slots_set_is_logged_on_a_later_capture_too():
    """Review 7, finding 22 (silent on 77558a0): a list emptied and filled, or its slots set,
    when it held items at the capture (an eager call before it): replays never logged."""
    model, twin = Scratch(), Scratch()
    x = np.ones(3)
    model.step(x)
    twin.step(x)
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    for k in range(3):
        x = np.full(3, float(k))
        assert _same(graph.replay({"x": x})["out"], twin.step(x))
        assert _same(model.acts, twin.acts) and _same(model.cache, twin.cache)


def test_check_finite_of_a_graph_that_logs_is_refused_by_name():
    """Review 7, finding 19 (silent on 77558a0: the stepping replay logged nothing)."""
    model = Front()
    graph = cv.capture(lambda x: model.log.append(x.sum()) or x * 2.0, cv.spec((3,), "float64"))
    with pytest.raises(cv.UnsupportedOperationError, match=r"check_finite=True steps node by "
                       r"node, which does not log the values the call logs \(model\.log\.\.\.\); "
                       r"replay without it"):
        graph.replay({"x": np.ones(3)}, check_finite=True)
    assert model.log == []


class WeightHistory:
    def __init__(self):
        self.W = np.array([1.0, 2.0, 3.0])
        self.hist = []

    def step(self, x):
        self.W -= 0.1 * x
        self.hist.append(self.W * 1.0)  # NumPy's own operator on the written array
        return x * 2.0

    def copied(self, x):
        self.W -= 0.1 * x
        self.hist.append(self.W.copy())
        return x * 2.0


def test_a_value_numpy_computes_from_a_state_and_logs_is_refused_and_the_log_left_alone():
    """Review 7, finding 17 (silent: the capture left the second pass's planted values in the
    user's log, and no replay logged)."""
    for name in ("step", "copied"):
        model = WeightHistory()
        with pytest.raises(cv.UnsupportedOperationError) as info:
            cv.capture(getattr(model, name), cv.spec((3,), "float64"))
        what = str(info.value).splitlines()[0]
        assert what.startswith("`self.hist.append(self.W")
        assert what.endswith(f"in {name}: self.hist keeps a value of the capture.")
        assert model.hist == [] and model.W.tolist() == [1.0, 2.0, 3.0]


class BnAndLog:
    def __init__(self):
        self.W = np.eye(3)
        self.bn = {"mean": np.zeros(3)}
        self.losses = []
        self.lr = 0.1

    def step(self, x):
        h = x @ self.W
        self.bn["mean"] = 0.9 * self.bn["mean"] + 0.1 * h
        self.losses.append(h.sum())
        return h

    def decay(self, x):
        h = x @ self.W
        self.bn["mean"] = 0.9 * self.bn["mean"] + 0.1 * h
        self.lr = self.lr * 0.99
        return h * self.lr

    def decay_steering(self, x):
        h = x @ self.W
        self.bn["mean"] = 0.9 * self.bn["mean"] + 0.1 * h
        self.lr = self.lr * 0.99
        if self.lr < 0.098:  # (the lr steers Python: refused)
            h = h * 2.0
        return h * self.lr


def test_a_rebinding_and_a_log_in_one_step_replay_as_calls_and_a_refusal_blames_its_cause():
    """Review 7, finding 25: a rebound running mean was refused as soon as the step also logged
    its loss, and a step that also decays a Python lr was refused blaming the rebinding (which
    captures alone), not the lr. Since ruling 40 17:35 (20L) the decayed lr is a kept Python
    number, lifted with the rebound mean: it replays; one that steers Python is refused, at
    the lr's line."""
    model, twin = BnAndLog(), BnAndLog()
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    for k in range(3):
        x = np.array([1.0, -2.0, 0.5]) * (k + 1)
        assert _same(graph.replay({"x": x})["out"], twin.step(x))
        assert _same(model.bn, twin.bn) and _same(model.losses, twin.losses)
    model, twin = BnAndLog(), BnAndLog()
    graph = cv.capture(model.decay, cv.spec((3,), "float64"))
    for k in range(3):
        x = np.array([1.0, -2.0, 0.5]) * (k + 1)
        assert _same(graph.replay({"x": x})["out"], twin.decay(x))
        assert _same(model.bn, twin.bn) and model.lr == twin.lr and type(model.lr) is float
    with pytest.raises(cv.UnsupportedOperationError, match=r"^`self\.lr = self\.lr \* 0\.99` at "
                       r".* in decay_steering: self\.lr is a Python number that changes from "
                       r"call to call\."):
        cv.capture(BnAndLog().decay_steering, cv.spec((3,), "float64"))


class Layer:
    def __init__(self):
        self.W = np.full((3, 2), 0.5)

    def forward(self, x):
        self.x = x  # kept for backward
        return x @ self.W

    def backward(self, dout):
        self.dW = self.x.T @ dout
        return dout @ self.W.T


class DeclaredLayer(Layer):
    def __init__(self):
        super().__init__()
        self.x = None  # declared, as CS231n's layers do
        self.dW = None


class TwoLayer:
    def __init__(self, layer=Layer):
        self.l1 = layer()

    def step(self, x):
        out = self.l1.forward(x)
        self.l1.backward(out)
        self.l1.W -= 0.1 * self.l1.dW
        return out


def test_an_attribute_a_layer_keeps_for_backward_is_set_again_by_each_replay():
    """The CS231n layer cache (self.x = x, self.dW = ...): removed at the capture's end as
    before, and set by each replay as by each call (was left stale: silent for a backward
    called eagerly after a replay)."""
    for layer in (Layer, DeclaredLayer):
        net, twin = TwoLayer(layer), TwoLayer(layer)
        graph = cv.capture(net.step, cv.spec((4, 3), "float64"))
        assert getattr(net.l1, "x", None) is None and getattr(net.l1, "dW", None) is None
        for k in range(3):
            x = np.full((4, 3), k + 1.0)
            assert _same(graph.replay({"x": x})["out"], twin.step(x))
            assert _same(net.l1.x, twin.l1.x) and _same(net.l1.dW, twin.l1.dW)
            assert _same(net.l1.W, twin.l1.W)


class TupleCache:
    def __init__(self):
        self.W = np.ones((3, 2))

    def forward(self, x):
        out = x @ self.W
        self.cache = (x, out)  # no replay builds a tuple
        return out


def test_a_tuple_cache_a_layer_adds_is_refused_at_its_line():
    """Review 7, finding 35 (silent: removed by the capture, never set by replays)."""
    layer = TupleCache()
    with pytest.raises(cv.UnsupportedOperationError, match=r"^`self\.cache = \(x, out\)` at .* in "
                       r"forward: self\.cache is rebound to a value of the capture\."):
        cv.capture(layer.forward, cv.spec((4, 3), "float64"))
    assert not hasattr(layer, "cache")
