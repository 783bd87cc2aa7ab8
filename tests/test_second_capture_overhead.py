"""What ``cv.capture``'s second capture (capviz/trace/recapture.py) does beyond running ``fn``
again, and what it no longer does (#20, the capture row of benchmarks/state.py): the planted
values come from capviz's own generator, never a new one the user's hooks or the generator
backstop would see; the randomness hooks are installed once for both captures; the second
capture names each state as the first did; a state NumPy wrote before the first write is still
refused. Counted, never timed."""

import collections

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import CaptureViolation
from capviz.randomness import backstop, hooks
from capviz.trace import names, recapture
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("two_passes")  # (the two passes' refusals: a first
#   capture that lifts its guess runs lifted, tests/test_first_capture_guessed.py)


class Optimiser:
    def __init__(self, n=3):
        self.params = [np.full(4, float(k + 1)) for k in range(n)]
        self.mems = [np.zeros(4) for _ in range(n)]

    def step(self, g):
        for w, m in zip(self.params, self.mems):
            m += g * g
            w -= 0.1 * g / np.sqrt(m + 1e-8)
        return g * 1.0


def test_a_stateful_capture_inside_an_open_scope_records_nothing_on_it():
    """The planted values were drawn from a new ``np.random.default_rng(seed)``, which an open
    outer scope's hooks took for the user's reseed: a ``seed`` violation on the outer graph at
    the user's line, of capviz's own making."""
    opt = Optimiser()
    before = [w.copy() for w in opt.params]
    g = np.ones(4)
    with cv.CaptureDevice("outer").capture_scope(on_violation="record") as scope:
        x = scope.input("x", (4,))
        inner = cv.capture(opt.step, g)
        scope.output(x * 3.0, "y")
    assert scope.graph.violations == [] and scope.graph.complete
    assert inner.complete and len(inner.state_nodes) == 6
    assert all(np.array_equal(w, b) for w, b in zip(opt.params, before))


def test_the_second_capture_makes_no_generator():
    """Every generator made in the process makes the next scope look for it among the objects
    the collector tracks (capviz/randomness/backstop.py); planting makes none."""
    opt = Optimiser()
    g = np.ones(4)
    cv.capture(opt.step, g)  # (the thread's generator of other values, made once)
    made = backstop._made[0]
    planted = []
    real = recapture.OtherValues.plant

    def counted(self):
        planted.append(1)
        return real(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recapture.OtherValues, "plant", counted)
        cv.capture(Optimiser().step, g)  # (a new object each: a later capture of the same
        cv.capture(Optimiser().step, g)  # one lifts its states, trace/lifted.py)
    assert planted == [1, 1]  # two second captures ran
    assert backstop._made[0] == made


def test_the_planted_values_do_not_depend_on_what_was_planted_before():
    """One generator per thread, put back to its seed before and after each planting: the same
    arrays get the same other values, and its state is what an open scope noted."""
    gen, start = recapture._seeded()
    graph = cv.capture(Optimiser().step, np.ones(4))
    first = recapture.OtherValues(graph)
    first.plant()
    first.restore()
    assert gen.bit_generator.state == start
    gen.standard_normal(10)  # (anything drawn meanwhile)
    second = recapture.OtherValues(graph)
    second.plant()
    second.restore()
    assert all(np.array_equal(a, b) for a, b in zip(first.planted, second.planted))
    assert gen.bit_generator.state == start


def test_the_hooks_are_installed_once_for_both_captures_and_removed_after():
    opt = Optimiser()
    g = np.ones(4)
    plans = []
    real = hooks._plan

    def counted():
        plans.append(1)
        return real()

    default_rng = np.random.default_rng
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hooks, "_plan", counted)
        graph = cv.capture(opt.step, g)
        assert len(graph.state_nodes) == 6 and plans == [1]  # both captures, one plan
        cv.capture(lambda x: x * 2.0, g)  # no state: one capture, one plan
        assert plans == [1, 1]
    assert hooks._installed == [] and not hooks._users
    assert np.random.default_rng is default_rng


def test_the_hooks_are_removed_when_the_captured_function_raises():
    def broken(x):
        raise ValueError("broken")

    default_rng = np.random.default_rng
    with pytest.raises(ValueError, match="broken"):
        cv.capture(broken, np.ones(2))
    assert hooks._installed == [] and not hooks._users
    assert np.random.default_rng is default_rng


def test_the_second_capture_names_each_state_as_the_first_did():
    """No second walk of the user's namespaces: the names and places are the first capture's."""
    opt = Optimiser()
    g = np.ones(4)
    looked = []
    real = names.Namer.find_place

    def counted(self, value, frames, placed=True):
        looked.append(1)
        return real(self, value, frames, placed)

    seconds = []
    real_plant = recapture.OtherValues.plant

    def plant(self):  # called by capviz between the two captures, never during one
        seconds.append(len(looked))
        return real_plant(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(names.Namer, "find_place", counted)
        mp.setattr(recapture.OtherValues, "plant", plant)
        graph = cv.capture(opt.step, g)
    assert seconds == [6] and len(looked) == 6  # the first capture's six, none after
    assert sorted(n.name for n in graph.state_nodes) == sorted(
        [f"opt.params[{k}]" for k in range(3)] + [f"opt.mems[{k}]" for k in range(3)])


class Decaying:
    """A state NumPy writes before the capture's first write to it (the graph would start from
    NumPy's value), held in a deque, whose items the copies of trace/outside_writes.py do not
    look into (a tuple's they do, since review 3's finding 9): seen by the second capture at its
    first write, without a copy of each state."""

    def __init__(self):
        self.ms = collections.deque([np.ones(4)])

    def step(self, g):
        m = self.ms[0]
        np.multiply(m, 0.9, out=m)
        np.add(m, g, out=m)
        return g * 1.0


def test_a_state_numpy_wrote_before_the_first_write_is_still_refused():
    d = Decaying()
    with pytest.raises(CaptureViolation, match=r"NumPy wrote m before the capture's first "
                                               r"write to it"):
        cv.capture(d.step, np.ones(4))
    assert np.array_equal(d.ms[0], np.full(4, 0.9))  # (the first capture's write stays)


def test_the_comparison_decides_0_d_and_1_d_shapes_of_ints_inline(monkeypatch):
    """The two graphs' 0-d and 1-d shapes of plain ints are compared inline, not by a call of
    recapture._same_shape per node (a quarter of the comparison's time on benchmarks/state.py's
    first capture); the capture is the same."""
    calls = []
    real = recapture._same_shape
    monkeypatch.setattr(recapture, "_same_shape", lambda a, b: calls.append((a, b)) or real(a, b))
    opt = Optimiser()
    graph = cv.capture(opt.step, cv.spec((4,), "float64"))
    assert graph.complete and calls == []
    g = np.arange(4.0)
    expected = Optimiser().step(g)
    np.testing.assert_array_equal(graph.replay({"g": g})["out"], expected)


class _Shaped:
    def __init__(self):
        self.W = np.ones(4)

    def step(self, x):
        n = 2 if self.W.sum() > 0 else 3  # NumPy's read of the state: a length from it
        y = x[:n] * 1.0
        self.W += x[:1] * 0.5
        return y


class _Matrix(_Shaped):
    def step(self, x):
        n = 2 if self.W.sum() > 0 else 3
        y = x.reshape(2, 2)[:, :1] * np.ones((1, n))  # a 2-d shape: compared by _same_shape
        self.W += x[:1] * 0.5
        return y


@pytest.mark.parametrize("kind", [_Shaped, _Matrix])
def test_a_shape_the_other_values_change_is_still_a_path_from_a_state(kind):
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"recorded other operations here when self\.W held other values"):
        cv.capture(kind().step, cv.spec((4,), "float64"))


def test_the_comparison_decides_each_state_output_s_parameters_inline(monkeypatch):
    """Each state's output node holds one parameter, ``{"state": i}``: the two graphs'
    are compared inline, not by recapture.same's recursion over the dict (a sixth of the
    comparison's time on benchmarks/state.py's first capture); the capture is the same."""
    calls = []
    real = recapture.same
    monkeypatch.setattr(recapture, "same", lambda a, b: calls.append((a, b)) or real(a, b))
    opt = Optimiser()
    graph = cv.capture(opt.step, cv.spec((4,), "float64"))
    assert graph.complete and calls == []
    assert sum(node.kind == "output" and "state" in node.params for node in graph.nodes) == 6


@pytest.mark.parametrize("a, b", [
    ({"state": 2}, {"state": 2}), ({"state": 2}, {"state": 3}), ({"state": True}, {"state": 1}),
    ({"state": 1}, {"state": 1.0}), ({"state": None}, {"state": None}), ({"k": "a"}, {"k": "a"}),
    ({"k": 1}, {"j": 1}), ({"k": 1.0}, {"k": 1.0}), ({"k": (1,)}, {"k": (1,)}), ({}, {}),
    ({"k": 1, "j": 2}, {"k": 1, "j": 2}), ({1: 1}, {1: 1}), ({"k": np.int64(1)}, {"k": 1}),
    ({"k": 1}, None), (None, None)])
def test_the_inline_parameter_test_says_same_only_where_same_says_same(a, b):
    if recapture._same_plain_item(a, b):
        assert recapture.same(a, b)
    assert recapture._same_plain_item(a, b) == (
        a in ({"state": 2}, {"state": None}, {"k": "a"}) and recapture.same(a, b))
