"""A plain Python value the call logs into a container that outlives it
(``self.log.append("step")``, ``self.seen.append(x.shape)``, ``hist["phase"] = "train"``) is
logged by each replay as the value the capture's runs logged, in the call's order among the
tensors it logs; the capture itself leaves the container as it found it. Where two runs of the
capture log different values (``time.perf_counter()``), or where a replay could not repeat what
the call does (a ``deque(maxlen)`` of Python values, a read of the grown list), it is refused
at the logging line (lead ruling of stop 35, 03:00; review 7, finding 28: silent before, the
capture's runs left their values in the list and no replay logged).
Each test runs the graph against an eager twin: outputs, the containers' items and types."""

from __future__ import annotations

import collections
import os
import time

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import ReplayInputError, UnsupportedOperationError
from tests.helpers.twins import same

SPEC = cv.spec((3,), "float64")


def _replayed_beside(graph, model, twin, world, calls):
    """``graph`` (captured from ``model.step``) replayed on ``np.arange(3.0) + k`` for each
    ``k < calls``, the eager ``twin`` called beside it: ``world`` of each the same."""
    for k in range(calls):
        x = np.arange(3.0) + k
        graph.replay({"x": x})
        twin.step(x.copy())
        assert same(world(model), world(twin))


LOG = []


class Model:
    def __init__(self):
        self.W = np.ones(3)
        self.log = ["start"]
        self.seen = []
        self.meta = {}
        self.events = []

    def step(self, x):
        self.log.append("step")
        self.seen.append(x.shape)
        self.meta["phase"] = "train"
        self.events.append({"n": x.shape[0], "tag": ("fwd", 1)})
        LOG.append(1)
        return x * 2.0


def _world(m):
    return [m.log, m.seen, m.meta, m.events]


def test_python_values_logged_are_logged_by_each_replay_as_eager():
    """Before: the capture left "step", (3,), 1... in the lists (twice where it ran twice)
    and no replay logged (review 7, finding 28: silent)."""
    model, twin = Model(), Model()
    LOG.clear()
    graph = cv.capture(model.step, SPEC)
    assert same(_world(model), [["start"], [], {}, []]) and LOG == []  # left as found
    assert "log self.log.append 'step'  # the same each replay" in str(graph)
    for k in range(3):
        x = np.arange(3.0) + k
        got = graph.replay({"x": x})["out"]
        logged = LOG[:]
        LOG.clear()
        want = twin.step(x.copy())
        assert same(got, want)
        assert same(_world(model), _world(twin)) and logged == LOG
        LOG.clear()
    assert model.events[0] is not model.events[1]  # a new dict each replay, as each call


class Stepper:
    def __init__(self):
        self.W = np.ones(3)
        self.log = []

    def step(self, x):
        self.log.append("begin")
        self.log.append(x.sum())
        self.W -= 0.1 * x  # a state: the capture runs twice
        self.log.append("end")
        return x * 2.0


def test_python_values_and_tensors_are_logged_in_the_call_order():
    """Before: refused (a Python value before a tensor: 'keeps a value of the capture')."""
    model, twin = Stepper(), Stepper()
    graph = cv.capture(model.step, SPEC)
    assert model.log == []
    for k in range(2):
        x = np.arange(3.0) * (k + 1)
        graph.replay({"x": x})
        twin.step(x.copy())
        assert same(model.log, twin.log) and same(model.W, twin.W)
    assert [type(v) for v in model.log[:3]] == [str, np.float64, str]


class Scratch:
    def __init__(self):
        self.acts = ["old"]

    def step(self, x):
        self.acts.clear()
        self.acts.append("fwd")
        self.acts.append(x * 2.0)
        return x + 1.0


def test_a_list_emptied_and_filled_with_python_values_and_tensors_is_refilled():
    """Before: refused at self.acts.append("fwd")."""
    model, twin = Scratch(), Scratch()
    graph = cv.capture(model.step, SPEC)
    assert model.acts == ["old"]
    _replayed_beside(graph, model, twin, lambda o: o.acts, calls=2)


class Stamps:
    def __init__(self):
        self.log = []

    def step(self, x):
        self.log.append(time.perf_counter())
        return x * 2.0


def test_a_value_two_runs_log_differently_is_refused_at_its_line():
    """Before: the capture left its time in the list and every replay logged nothing
    (silent); a replay logging the capture's time would be silent too."""
    model = Stamps()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(model.step, SPEC)
    message = str(info.value)
    assert "self.log.append(time.perf_counter())" in message
    assert "self.log is given a Python value that a replay would not log as the call does" \
        in message
    assert "two runs of the capture logged" in message
    assert "Fix: log it outside the captured function, after each replay" in message
    assert len(message.splitlines()) <= 3
    assert model.log == []


class Counted:
    def __init__(self):
        self.log = []

    def step(self, x): self.log.append(len(self.log)); return x * 2.0  # noqa: E702


def test_a_read_of_the_grown_list_on_a_one_line_def_is_refused():
    """Before: silent (the line read was looked for below the def line only)."""
    with pytest.raises(UnsupportedOperationError, match="self.log is a list that grows at "
                                                        "every call, read here"):
        cv.capture(Counted().step, SPEC)


class Recent:
    def __init__(self):
        self.last = collections.deque([1, 2, 3], maxlen=3)

    def step(self, x):
        self.last.append(1)
        return x * 2.0


def test_a_full_deque_of_python_values_is_refused():
    """A deque(maxlen) of Python values drops an item a replay cannot tell (1 is 1):
    before, the capture left it shifted and no replay shifted it (silent)."""
    model = Recent()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(model.step, SPEC)
    assert "self.last.append(1)" in str(info.value)
    assert "self.last is given a Python value" in str(info.value)
    assert list(model.last) == [1, 2, 3]


def test_a_loaded_graph_refuses_to_log_and_returns_the_values(tmp_path):
    model = Model()
    LOG.clear()
    graph = cv.capture(model.step, SPEC)
    path = os.fspath(tmp_path / "g.json")
    graph.save(path)
    loaded = cv.load(path)
    with pytest.raises(ReplayInputError, match=r"the graph logs 'step' into self\.log each "
                                               r"call .* Fix: replay with state='return'"):
        loaded.replay({"x": np.ones(3)})
    states = loaded.replay({"x": np.ones(3)}, state="return").states
    assert states["self.log[+v0]"] == "step" and states["self.meta['phase']"] == "train"
    assert states["self.seen[+v1]"] == (3,)
    with pytest.raises(UnsupportedOperationError, match="does not log the values"):
        graph.replay({"x": np.ones(3)}, check_finite=True)
    assert model.log == ["start"]


class Counts:
    def __init__(self):
        self.counts = {}

    def step(self, x):
        self.counts["calls"] = self.counts.get("calls", 0) + 1
        return x * 2.0


def test_a_counter_in_a_dict_is_refused_at_its_line():
    """Review 8, finding 4 (silent, 79b3413): replayed as the constant 1 where eager counts
    1, 2, 3. The second run sees the dict as the first left it, as a second call does."""
    model = Counts()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(model.step, SPEC)
    message = str(info.value)
    assert message.startswith('`self.counts["calls"] = self.counts.get("calls", 0) + 1` at ')
    assert "self.counts['calls'] is a Python number that changes from call to call" in message
    assert "the call sets it to 1, then to 2 when it runs again" in message
    assert model.counts == {}


class Config:
    def __init__(self):
        self.cfg = {}

    def step(self, x):
        if "scale" not in self.cfg:
            self.cfg["scale"] = 2.0
        return x * self.cfg["scale"]


def test_a_value_set_once_and_found_by_the_second_run_is_logged_by_each_replay():
    model, twin = Config(), Config()
    graph = cv.capture(model.step, SPEC)
    assert model.cfg == {}
    for k in range(2):
        x = np.arange(3.0) + k
        assert same(graph.replay({"x": x})["out"], twin.step(x.copy()))
        assert same(model.cfg, twin.cfg)


class Objects:
    def __init__(self):
        self.W = np.ones(3)
        self.log = []

    def step(self, x):
        self.log.append(("W", self.W))
        return x * 2.0


class Itself:
    def __init__(self):
        self.log = []

    def step(self, x):
        self.log.append(self)
        return x * 2.0


@pytest.mark.parametrize("make, what", [(Objects, "a tuple holding an ndarray"),
                                        (Itself, "a Itself")])
def test_an_object_logged_is_refused_at_its_line(make, what):
    """Review 8, finding 6 (silent): the capture's runs left it in the list, no replay
    logged it."""
    model = make()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(model.step, SPEC)
    message = str(info.value)
    assert message.startswith("`self.log.append(")
    assert f"the call logs {what}, which a replay cannot log again" in message
    assert model.log == []


class Tallies:
    def __init__(self):
        self.c = collections.Counter()

    def step(self, x):
        self.c["calls"] += 1
        return x * 2.0


def test_a_counter_object_is_walked_and_refused_at_its_line():
    """Review 8, finding 6 (silent): a collections.Counter was not walked, the capture's runs
    counted 2 and no replay counted."""
    model = Tallies()
    with pytest.raises(UnsupportedOperationError, match=r"self\.c\['calls'\] is a Python number "
                                                        r"that changes from call to call"):
        cv.capture(model.step, SPEC)
    assert model.c == collections.Counter()


class Metrics:
    def __init__(self):
        self.last = collections.OrderedDict()
        self.hist = collections.defaultdict(list)

    def step(self, x):
        self.last["loss"] = x.sum()
        self.hist["loss"].append(x.mean())
        return x * 2.0


def test_ordered_and_default_dicts_are_logged_by_each_replay():
    """Before: refused at the line (review 7, finding 20: OrderedDict items, defaultdict(list)
    once the key exists)."""
    model, twin = Metrics(), Metrics()
    model.step(np.ones(3))  # (the defaultdict's list made: a first call's)
    twin.step(np.ones(3))
    graph = cv.capture(model.step, SPEC)
    for k in range(3):
        x = np.arange(3.0) * (k + 1)
        assert same(graph.replay({"x": x})["out"], twin.step(x.copy()))
        assert same(dict(model.last), dict(twin.last))
        assert same(dict(model.hist), dict(twin.hist))
    assert type(model.last) is collections.OrderedDict


class Messages:
    def __init__(self):
        self.log = []

    def step(self, x):
        loss = x.sum()
        self.log.append(f"loss {loss}")
        return x * 2.0


def test_text_made_from_a_tensor_is_refused_at_its_line():
    """A replay would log the capture's '<capture tensor ...>' text where each call logs its
    value's (before this stop: left by the capture, never logged)."""
    with pytest.raises(UnsupportedOperationError, match="the call logs text made from a value "
                                                        "of the capture"):
        cv.capture(Messages().step, SPEC)


class Augmented:
    def __init__(self):
        self.m = {"loss": 0.0}

    def step(self, x):
        loss = x.sum()
        self.m["loss"] += loss
        return x * 2.0


class Got:
    def __init__(self):
        self.m = {}

    def step(self, x):
        loss = x.sum()
        self.m["loss"] = self.m.get("loss", 0.0) + loss
        return x * 2.0


class Defaulted:
    def __init__(self):
        self.m = collections.defaultdict(float)

    def step(self, x):
        loss = x.sum()
        self.m["loss"] += loss
        return x * 2.0


class Slot:
    def __init__(self):
        self.slots = [0.0]

    def step(self, x):
        loss = x.sum()
        self.slots[0] += loss
        return x * 2.0


@pytest.mark.parametrize("make", [Augmented, Got, Defaulted, Slot])
def test_a_running_sum_in_a_dict_item_or_list_slot_is_refused(make):
    """Review 8, finding 13 (silent): each replay stored 0.0 + loss where eager adds up."""
    model = make()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(model.step, SPEC)
    message = str(info.value)
    assert message.startswith("`self.")
    assert "+= loss`" in message or "+ loss`" in message
    assert "0-d ndarray" in message


class Drawn:
    def __init__(self):
        self.log = []

    def step(self, x):
        y = x * np.zeros(3) + x[np.arange(3)]
        self.log.append(y.sum())
        return x * 2.0


def test_a_value_from_a_buffer_the_capture_made_appended_is_a_log():
    """W=20c's census (04:13): refused as 'an accumulator made on the first call' with a fix
    that cannot apply to an append; a list fn does not test holds logs."""
    model, twin = Drawn(), Drawn()
    graph = cv.capture(model.step, SPEC)
    _replayed_beside(graph, model, twin, lambda o: o.log, calls=2)


class Ema0:
    def __init__(self):
        self.ema = np.zeros(())

    def step(self, x):
        self.ema[...] = 0.9 * cv.constant(self.ema) + 0.1 * x.sum()
        return x * 1.0


def test_the_running_numbers_fix_as_quoted_replays_as_eager():
    """Review 8, finding 24: the quoted example (ema[...] = 0.9 * ema + ...) was refused."""
    model, twin = Ema0(), Ema0()
    graph = cv.capture(model.step, SPEC)
    _replayed_beside(graph, model, twin, lambda o: o.ema, calls=3)


class Shared:
    def __init__(self):
        self.cfg = {"lr": 0.1}
        self.log = []

    def step(self, x):
        self.log.append(self.cfg)
        return x * 2.0


def test_a_dict_held_outside_the_call_logged_itself_is_refused():
    """Review 8, finding 11 (silent): a replay logged a copy of the capture's cfg, where each
    call logs the user's own dict (edited between calls: every entry shows the edit)."""
    with pytest.raises(UnsupportedOperationError, match=r"the call logs a list or dict it holds "
                                                        r"outside the call itself"):
        cv.capture(Shared().step, SPEC)
