"""A first capture of a function that writes outside arrays lifts the arrays its statements
name as written (``self.W -= ...``, ``self.m[...] = ...``, ``for w, m in zip(self.params,
self.mems): m += ...``: capviz/trace/loop_writes.py) into the graph's signature before ``fn``
runs (capviz/trace/lifted.py, as torch.export lifts the buffers a program mutates), so every read
of them, NumPy's own operators included, is a read of a tensor and is recorded; it runs ``fn``
twice so lifted and compares the two graphs (a Python value the call changes from one run to
the next is refused, as ruling 36 asks of a first capture). Before, such a capture ran ``fn``
twice with other values planted in the states the second time and refused what NumPy computed
from a state outside the capture's sight; those programs now replay as eager. Where the guess
does not stand (an array the statements write is not written, an array held by a name the walk
does not explain, a list the call grows) the runs are thrown away and the two passes decide, as
before.

Each program is compared with eager calls of a twin over three calls: outputs, every state,
dtypes, bit for bit."""

import numpy as np
import pytest

import capviz as cv


class _Runs(list):
    """Counts the runs of a captured function: a list subclass, which capviz does not walk, so
    each run's append stays."""


RUNS = _Runs()


class AdaGrad:
    """The 100-write optimiser of benchmarks/state.py, smaller: states written through the names
    a loop over two zipped lists binds."""

    def __init__(self, pairs=5):
        gen = np.random.default_rng(0)
        self.params = [gen.standard_normal(4) for _ in range(pairs)]
        self.mems = [np.zeros(4) for _ in range(pairs)]

    def step(self, g):
        RUNS.append(1)
        for w, m in zip(self.params, self.mems):
            m += g * g
            w -= 0.01 * g / np.sqrt(m + 1e-8)
        return g * 1.0

    def arrays(self):
        return [*self.params, *self.mems]


class Regularised:
    """An L2 term NumPy computes from the weights before the step updates them in place
    (refused by the two passes: tests/test_state_second_capture.py)."""

    def __init__(self):
        self.W = np.ones((3, 3))

    def step(self, x):
        RUNS.append(1)
        pred = x @ self.W
        reg = 0.5 * np.sum(self.W * self.W)
        loss = np.sum(pred ** 2) + reg
        self.W -= 0.1 * np.outer(x, pred)
        return loss

    def arrays(self):
        return [self.W]


class Counter:
    """A step counter NumPy writes with no tensor (refused by the two passes)."""

    def __init__(self):
        self.t = np.zeros(1)
        self.w = np.ones(3)

    def step(self, g):
        RUNS.append(1)
        self.t += 1
        self.w -= 0.1 * g / self.t
        return g * 1.0

    def arrays(self):
        return [self.t, self.w]


class CopyAfter:
    """A copy NumPy makes after the write, and an int 0-d counter (refused by the two
    passes)."""

    def __init__(self):
        self.q = np.array([0.5, -1.0, 2.0])
        self.n = np.zeros((), np.int64)

    def step(self, x):
        RUNS.append(1)
        self.q += x
        q = self.q.copy()
        q *= 2.0
        self.n += 1
        return q + self.n

    def arrays(self):
        return [self.q, self.n]


class IndexedList:
    """Items of a list written by index (``self.ws[i] -= ...``)."""

    def __init__(self):
        self.ws = [np.full(3, 1.0 + i) for i in range(3)]

    def step(self, x):
        RUNS.append(1)
        for i in range(len(self.ws)):
            self.ws[i] -= 0.5 * x * self.ws[i].sum()
        return x * 2.0

    def arrays(self):
        return self.ws


class NotWritten:
    """A statement that writes the array runs only on a flag the capture does not take: the
    guess lifts an array the run does not write, and the two passes decide."""

    def __init__(self):
        self.W = np.ones(3)
        self.V = np.zeros(3)
        self.decay = False

    def step(self, x):
        RUNS.append(1)
        if self.decay:
            self.W *= 0.5
        self.V += x * self.W.sum()
        return x * 1.0

    def arrays(self):
        return [self.W, self.V]


def _calls(shape):
    gen = np.random.default_rng(7)
    return [gen.standard_normal(shape) for _ in range(3)]


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("make, shape, runs", [
    (AdaGrad, (4,), 2), (Regularised, (3,), 2), (Counter, (3,), 2), (CopyAfter, (3,), 2),
    (IndexedList, (3,), 2),
    (NotWritten, (3,), 3),  # (the lifted run thrown away, then the two passes)
])
def test_a_first_capture_lifts_what_fn_writes_and_replays_as_eager(make, shape, runs):
    model, twin = make(), make()
    RUNS.clear()
    graph = cv.capture(model.step, cv.spec(shape, "float64"))
    assert len(RUNS) == runs
    assert graph.complete and graph.violations == []
    for x in _calls(shape):
        out = graph.replay({graph.inputs[0]: x})["out"]
        assert _same(out, twin.step(x))
        assert all(_same(a, b) for a, b in zip(model.arrays(), twin.arrays()))


def test_an_array_held_by_a_name_the_walk_does_not_explain_takes_the_two_passes():
    model, twin = Counter(), Counter()
    held = model.t  # NumPy could read it through this name: nothing is lifted
    with pytest.raises(cv.UnsupportedOperationError, match=r"^`self\.t \+= 1` at "):
        cv.capture(model.step, cv.spec((3,), "float64"))  # (the two passes' refusal)
    assert held is model.t and _same(model.t, twin.t) and _same(model.w, twin.w)


def test_the_first_capture_names_and_writes_the_states_as_the_two_passes_do():
    """The lifted states carry the names the two passes give them (the caller's:
    ``model.params[0]``), and a replay writes the live arrays in place."""
    model, twin = AdaGrad(2), AdaGrad(2)
    graph = cv.capture(model.step, cv.spec((4,), "float64"))
    assert sorted(n.name for n in graph.state_nodes) == [
        "model.mems[0]", "model.mems[1]", "model.params[0]", "model.params[1]"]
    held = model.arrays()
    x = _calls((4,))[0]
    graph.replay({"g": x})
    twin.step(x)
    assert all(a is b for a, b in zip(model.arrays(), held))
    assert all(_same(a, b) for a, b in zip(model.arrays(), twin.arrays()))


HELPER = {"calls": 0}  # a helper's module state: fn never names it, no walk reaches it


def _bump():
    HELPER["calls"] += 1


def _rate():
    return 0.1 / HELPER["calls"]


class HiddenCounter:
    """A learning rate from a count kept where no walk looks: a Python number that changes
    from call to call, which one run would freeze into the graph (silent: checked with the
    second lifted run switched off)."""

    def __init__(self):
        self.W = np.ones(3)

    def step(self, g):
        _bump()
        self.W -= _rate() * g
        return g * 1.0


def test_a_python_number_that_changes_from_run_to_run_is_refused_at_its_line():
    HELPER["calls"] = 0
    model = HiddenCounter()
    before = model.W.copy()
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(model.step, cv.spec((3,), "float64"))
    first = str(info.value).splitlines()[0]
    assert first.startswith("`self.W -= _rate() * g` at ") and "in step:" in first
    assert "changes from call to call" in first
    assert _same(model.W, before)  # every array put back


class _Calls:
    def __init__(self):
        self.calls = np.zeros(1, np.int64)

    def step(self, x):
        self.calls += 1
        return x * 2.0


@pytest.mark.parametrize("name", ["accumulator", "calls", "decay", "nudge", "momentum"])
def test_the_outside_writes_the_two_passes_refuse_replay_as_eager_calls(name):
    # tests/test_outside_writes.py's programs (refused by the two passes, tested there under
    # them): a first capture lifts the arrays their statements write, and three replays leave
    # the outputs and every array as three eager calls do, dtypes included
    from tests.test_outside_writes import Accumulator, Decay, Momentum, Sparse

    make, method, shape = {
        "accumulator": (Accumulator, "step", (3,)), "calls": (_Calls, "step", (3,)),
        "decay": (Decay, "step", (512,)), "nudge": (Sparse, "nudge", (3,)),
        "momentum": (lambda: Momentum(4), "step", (4, 4))}[name]
    m, twin = make(), make()
    graph = cv.capture(getattr(m, method), cv.spec(shape, "float64"))
    assert graph.state_nodes
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal(shape)
        out = graph.replay({graph.inputs[0]: x})[graph.outputs[0]]
        want = getattr(twin, method)(x)
        assert out.dtype == want.dtype and out.tobytes() == want.tobytes()
        for attribute, value in vars(twin).items():
            assert getattr(m, attribute).dtype == value.dtype
            assert getattr(m, attribute).tobytes() == value.tobytes()
