"""A later capture of the same function in one pass, its states lifted (capviz/trace/lifted.py):
it runs ``fn`` once, replays bit for bit as eager over two calls, leaves every array in its
place (the same object, the same bits), and falls back to the two captures, with today's
refusals and messages, for each thing it cannot decide."""

import dataclasses
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import capviz as cv
from capviz.trace import lifted, recapture
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)
from tests.test_state_properties import _same, programs, replays_equal_calls, run

pytestmark = pytest.mark.usefixtures("two_passes")  # (the two passes' refusals: a first
#   capture that lifts its guess runs once, tests/test_first_capture_guessed.py)


class _Runs(list):
    """Counts the runs of a captured function: a list subclass, which capviz does not walk,
    so each run's append stays (a plain list's Python values are logged by replays)."""


RUNS = _Runs()  # one item per run of a captured function (appended: a side effect both paths make)
MODE = [0]  # what the next call does differently (read by the functions, set by the tests)
ELSEWHERE = {}  # a dict no walk of the functions reaches (they never name it)


def _store_elsewhere(value):
    ELSEWHERE.setdefault("kept", []).append(value)  # (each run appends: the lifted one's too)


class AdaGrad:
    def __init__(self, n=3, size=4):
        gen = np.random.default_rng(0)
        self.params = [gen.standard_normal(size) for _ in range(n)]
        self.mems = [np.zeros(size) for _ in range(n)]

    def step(self, g):
        RUNS.append(1)
        for w, m in zip(self.params, self.mems):
            m += g * g
            w -= 0.1 * g / np.sqrt(m + 1e-8)
        return g * 1.0


class RNN:
    def __init__(self):
        gen = np.random.default_rng(1)
        self.W = gen.standard_normal((3, 3)) * 0.5
        self.h = np.zeros(3)

    def step(self, x):
        RUNS.append(1)
        y = np.tanh(x @ self.W + self.h)
        self.h[...] = y
        return y * 2.0


class Modes:
    """A function whose next call does what ``MODE[0]`` says (0: a plain update)."""

    def __init__(self):
        self.W = np.linspace(-1.0, 1.0, 4).copy()  # (linspace gives a view of its memory)
        self.V = np.zeros(4)
        self.n = np.zeros(1)
        self.log = []

    def step(self, g):
        RUNS.append(1)
        mode = MODE[0]
        if mode in (1, 10):
            if self.W.sum() > 0:  # a branch on a state's value
                g = g * 2.0
        if mode == 2:
            self.W = self.W - 0.5 * g  # a rebinding
            return g * 1.0
        if mode == 3:
            return g * 1.0  # the state is not written
        if mode == 4:
            self.V += g  # a state the last capture did not have
        if mode == 5:
            _store_elsewhere(self.W)  # a reference where no walk looks
        if mode in (6, 10):
            self.n += 1.0  # NumPy writes an outside array unseen
        if mode == 7:
            raise ValueError("mode 7 refuses")
        if mode == 8:
            self.last = self.W  # an attribute added: an ndarray in two passes, a tensor here
        if mode == 9:
            self.log.append(1)  # a Python side effect with no tensor: the same in both
        self.W -= 0.5 * g
        return g * 1.0


W_GLOBAL = np.arange(4.0)


def sgd_on_a_global(g):
    RUNS.append(1)
    W_GLOBAL[...] -= 0.25 * g
    return g * 1.0


def _closure():
    acc = np.ones(4)

    def step(g):
        RUNS.append(1)
        acc[...] += g * g
        return g * 1.0

    return step


@pytest.fixture(autouse=True)
def _fresh():
    RUNS.clear()
    MODE[0] = 0
    ELSEWHERE.clear()
    yield
    MODE[0] = 0


def _places(obj):
    """Every array an object holds, by attribute and list slot: (path, array)."""
    found = []
    for key, value in vars(obj).items():
        if isinstance(value, list):
            found += [(f"{key}[{i}]", item) for i, item in enumerate(value)]
        elif isinstance(value, np.ndarray):
            found.append((key, value))
    return found


def _twin(obj):
    twin = object.__new__(type(obj))
    for key, value in vars(obj).items():
        vars(twin)[key] = [a.copy() for a in value] if isinstance(value, list) else value.copy()
    return twin


@pytest.mark.parametrize("make", [AdaGrad, RNN])
def test_a_later_capture_runs_fn_once_and_replays_as_eager(make):
    model = make()
    x = np.linspace(-1.0, 1.0, 4 if make is AdaGrad else 3)
    first = cv.capture(model.step, x)
    assert len(RUNS) == 2  # the first capture of a stateful function: two passes
    before = [id(a) for _, a in _places(model)]  # (ids: a reference held here would be one
    saved = [a.copy() for _, a in _places(model)]  # the walk does not explain)
    RUNS.clear()
    later = cv.capture(model.step, x)
    assert len(RUNS) == 1  # one pass: the states were lifted
    assert later.complete and len(later.state_nodes) == len(first.state_nodes)
    assert [s.name for s in later.state_nodes] == [s.name for s in first.state_nodes]
    after = _places(model)
    assert [id(a) for _, a in after] == before  # the same objects back (alive all along)
    assert all(np.array_equal(a, s) and a.dtype == s.dtype for (_, a), s in zip(after, saved))
    del after
    eager = _twin(model)
    for call in range(2):  # two replays advance the states as two calls
        out = later.replay({later.inputs[0]: x})
        want = eager.step(x)
        assert np.array_equal(out["out"], want)
        for (_, a), (_, b) in zip(_places(model), _places(eager)):
            assert np.array_equal(a, b), call


def test_a_global_and_a_closure_cell_are_lifted_too():
    x = np.linspace(0.5, 1.0, 4)
    for fn in (sgd_on_a_global, _closure()):
        cv.capture(fn, x)
        RUNS.clear()
        graph = cv.capture(fn, x)
        assert len(RUNS) == 1 and graph.complete and len(graph.state_nodes) == 1
    assert np.array_equal(W_GLOBAL, np.arange(4.0))


class Callable:
    def __init__(self):
        self.h = np.zeros(3)

    def __call__(self, x):
        RUNS.append(1)
        self.h += x
        return x * 1.0


def test_a_callable_object_is_lifted_too():
    model = Callable()
    x = np.ones(3)
    cv.capture(model, x)
    RUNS.clear()
    graph = cv.capture(model, x)
    assert len(RUNS) == 1 and graph.complete and len(graph.state_nodes) == 1
    graph.replay({"x": x})
    assert model.h.tolist() == [1.0, 1.0, 1.0]


def test_the_lifted_graph_replays_as_the_two_pass_graph():
    """The same program captured by both paths computes the same outputs and new states."""
    x = np.linspace(-1.0, 1.0, 4)
    model = AdaGrad()
    two = cv.capture(model.step, x)
    RUNS.clear()
    one = cv.capture(model.step, x)
    assert len(RUNS) == 1
    got, want = one.replay({"g": x}, state="return"), two.replay({"g": x}, state="return")
    assert np.array_equal(got["out"], want["out"])
    assert got.states.keys() == want.states.keys() and len(got.states) == 6
    assert all(np.array_equal(got.states[k], want.states[k]) for k in got.states)


def _fresh_capture(g):
    """The same mode on a new object (no earlier capture: today's two passes)."""
    RUNS.clear()
    model = Modes()  # (named as the test's, for the messages)
    try:
        return cv.capture(model.step, g)
    except cv.CapvizError as err:
        return err


def _program(graph):
    """A graph's text without its lines (the ``cv.capture`` lines differ)."""
    return [line.split("  #")[0] for line in str(graph).splitlines()]


@pytest.mark.parametrize(("mode", "runs"), [(1, 3), (2, 1), (3, 2), (4, 3), (5, 3), (7, 2),
                                            (8, 3), (10, 2)])
def test_each_thing_a_lifted_run_cannot_decide_falls_back_to_two_passes(mode, runs):
    """A branch on a state's value (1), a state not written (3), a state the
    last capture did not have (4), a reference stored where no walk looks (5), fn's own error
    (7), a lifted tensor stored in a walked object (8), a branch and an outside array NumPy
    writes (10, refused by the first capture as ever): the lifted run is thrown away, and the
    two captures run (``runs``: the lifted run, then the first capture, and the second where
    the first made states and stood) and give what a first capture of the same program
    gives. A rebinding (2) is kept in the one run, as a rebind state (trace/rebinding.py),
    the program a first capture gives."""
    g = np.linspace(-1.0, 1.0, 4)
    model = Modes()
    ids = [id(model.W), id(model.V), id(model.n)]  # (no reference held here: see above)
    saved = model.W.copy()

    def later():
        cv.capture(model.step, g)
        MODE[0] = mode
        RUNS.clear()
        return cv.capture(model.step, g)

    if mode == 7:
        with pytest.raises(ValueError, match="mode 7 refuses"):
            later()
        assert len(RUNS) == runs
    else:
        try:
            got = later()
        except cv.CapvizError as err:
            got = err
        assert len(RUNS) == runs
        if mode == 5:  # the array, not a dead capture tensor, as eager left it: each run's
            assert len(ELSEWHERE["kept"]) == 3
            assert all(kept is model.W for kept in ELSEWHERE["kept"])
        ELSEWHERE.clear()  # (the namer finds the arrays there: the same names for both)
        want = _fresh_capture(g)
        assert type(got) is type(want)
        if isinstance(want, cv.CapvizError):
            assert str(got) == str(want)
        else:
            assert _program(got) == _program(want)  # the same program, the same names
    assert [id(model.W), id(model.V), id(model.n)] == ids
    assert np.array_equal(model.W, saved)
    if mode == 8:  # as two passes leave it: the array itself
        assert model.last is model.W


def test_an_outside_array_numpy_writes_in_a_lifted_run_is_refused_as_in_a_first_capture():
    g = np.linspace(-1.0, 1.0, 4)
    model = Modes()
    cv.capture(model.step, g)
    MODE[0] = 6
    RUNS.clear()
    with pytest.raises(cv.UnsupportedOperationError) as got:
        cv.capture(model.step, g)
    assert len(RUNS) == 1  # refused after the one run, as the first of two captures refuses it
    with pytest.raises(cv.UnsupportedOperationError) as want:
        cv.capture(Modes().step, g)
    assert str(got.value) == str(want.value)
    assert "`self.n += 1.0` at " in str(got.value)
    assert model.n.tolist() == [0.0]  # put back


def test_a_reference_the_walk_does_not_explain_keeps_two_passes():
    """An alias where no walk looks, a view of the state, a state that is a view: the count of
    references says NumPy could read the array unseen, so nothing is lifted."""
    g = np.linspace(-1.0, 1.0, 4)
    for hold in ("alias", "view", "owned"):
        model = Modes()
        if hold == "alias":
            ELSEWHERE["alias"] = model.W
        elif hold == "view":
            ELSEWHERE["view"] = model.W[1:]
        else:
            model.W = np.linspace(-1.0, 1.0, 8)[::2]  # a view: its owner is not the state
        cv.capture(model.step, g)
        RUNS.clear()
        graph = cv.capture(model.step, g)
        assert graph.complete and len(RUNS) == 2, hold  # the two passes
        ELSEWHERE.clear()


def test_a_lifted_run_is_planned_only_for_the_same_function_and_object():
    from capviz.trace import places as walk

    g = np.ones(4)
    model = AdaGrad()
    cv.capture(model.step, g)
    assert lifted.plan(model.step, walk.note(model.step)) is not None
    other = AdaGrad()
    assert lifted.plan(other.step, walk.note(other.step)) is None


def test_the_remembered_states_do_not_keep_the_object_alive():
    import gc
    import weakref

    def captured():  # (its frame, whose locals the capture read, is gone after the call)
        model = AdaGrad()
        cv.capture(model.step, np.ones(4))
        return weakref.ref(model)

    ref = captured()
    gc.collect()
    assert ref() is None


def test_a_lifted_capture_plants_nothing():
    model = AdaGrad()
    g = np.ones(4)
    cv.capture(model.step, g)
    planted = []
    real = recapture.OtherValues.plant

    def counted(self):
        planted.append(1)
        return real(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recapture.OtherValues, "plant", counted)
        cv.capture(model.step, g)
    assert planted == []


def test_a_python_side_effect_with_no_tensor_keeps_the_one_pass():
    g = np.linspace(-1.0, 1.0, 4)
    model = Modes()
    cv.capture(model.step, g)
    MODE[0] = 9
    RUNS.clear()
    graph = cv.capture(model.step, g)
    assert len(RUNS) == 1 and graph.complete and model.log == []  # (the capture logs nothing:
    graph.replay({graph.inputs[0]: g})  # each replay logs the Python value, as a call does)
    assert model.log == [1]


@given(programs(), st.integers(0, 2**32 - 1))
def test_a_later_capture_of_a_generated_program_replays_as_eager_over_two_calls(program, seed):
    """tests/test_state_properties.py's generated programs (states written in place, through
    ``out=``, rows and slice views, read before and after, buffers, draws), each captured, then
    captured again: the later capture lifts its states (every array it planned to lift stands
    in one pass: nothing in these programs is left to decide), changes nothing outside, and two
    replays equal two eager calls bit for bit."""
    specs, inputs, steps = program
    gen = np.random.default_rng(seed)
    initial = [(gen.standard_normal(s) * 2).astype(d) for s, d in specs]
    xs = [(gen.standard_normal(s) * 2).astype(d) for s, d in inputs]
    captured = [a.copy() for a in initial]  # (held by the list only: no reference here)
    eager = [a.copy() for a in initial]

    def fn(*xs):
        return run(steps, captured, xs)

    stood = []
    real = lifted.kept

    def kept(*args):
        stood.append(real(*args))
        return stood[-1]

    with np.errstate(all="ignore"), mock.patch.object(lifted, "kept", kept):
        first = cv.capture(fn, *xs)
        graph = cv.capture(fn, *xs)
        assert graph.complete  # (a view read before a write is a view state of the first only)
        assert len(recapture.array_states(graph)) == len(recapture.array_states(first))
        assert stood == ([True] if recapture.array_states(first) else [])
        for k in range(len(initial)):  # the capture changed nothing outside
            _same(captured[k], initial[k], "state after capture")
        replays_equal_calls(graph, steps, captured, eager, xs, seed)


@dataclasses.dataclass
class _DataclassModel:
    """A ``@dataclass`` model: ``eq=True`` makes it unhashable (``__hash__ = None``)."""

    W: np.ndarray

    def step(self, x):
        RUNS.append(1)
        self.W -= 0.1 * x
        return x * self.W


def test_a_dataclass_model_is_captured_and_lifted_though_it_cannot_be_hashed():
    """The review 4, finding 10: the cache of remembered states hashed the owner, and every
    ``cv.capture(m.step)`` of a ``@dataclass`` raised TypeError from capviz's own code."""
    model, eager = _DataclassModel(np.ones(3)), _DataclassModel(np.ones(3))
    x = np.linspace(0.5, 1.0, 3)
    RUNS.clear()
    cv.capture(model.step, x)
    assert len(RUNS) == 2
    RUNS.clear()
    later = cv.capture(model.step, x)
    assert len(RUNS) == 1  # lifted: one pass
    for _ in range(2):
        out = later.replay({later.inputs[0]: x})
        np.testing.assert_array_equal(out["out"], eager.step(x))
        np.testing.assert_array_equal(model.W, eager.W)
