"""NumPy's own operators on an outside array that the capture writes (hostile review, finding
2): a value computed from it, a path chosen from its values, an outside array NumPy writes
during the capture. ``cv.capture`` captures a second time with other values in the states and
refuses what differs (capviz/trace/recapture.py); every user array ends bit-identical to what
the first capture left."""

import importlib
import inspect
import os
import re
import sys
import warnings

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import IncompleteGraphError, UnsupportedOperationError
from capviz.trace import recapture
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("two_passes")  # (the two passes' refusals: a first
#   capture that lifts its guess runs once, tests/test_first_capture_guessed.py)

capture_module = importlib.import_module("capviz.capture")


@pytest.fixture
def second_captures(monkeypatch):
    """How many second captures ``cv.capture`` made."""
    calls = []
    real = recapture.OtherValues.plant

    def counted(self):  # called by capviz between the two captures, never during one
        calls.append(1)
        return real(self)

    monkeypatch.setattr(recapture.OtherValues, "plant", counted)
    return calls


def _line_of(function, text):
    """The line number of the first line of ``function`` that holds ``text``."""
    lines, first = inspect.getsourcelines(function)
    return first + next(k for k, line in enumerate(lines) if text in line)


class Regularised:
    """/tmp/review/s22.py: an L2 term of the weights the step then updates in place."""

    def __init__(self):
        self.W = np.ones((3, 3))

    def step(self, x):
        pred = x @ self.W
        reg = 0.5 * np.sum(self.W * self.W)
        loss = np.sum(pred ** 2) + reg
        self.W -= 0.1 * np.outer(x, pred)
        return loss

    def quoted(self, x):  # the refusal's fix, as it quotes it
        pred = x @ cv.constant(self.W)
        reg = 0.5 * np.sum(cv.constant(self.W) * cv.constant(self.W))
        loss = np.sum(pred ** 2) + reg
        self.W -= 0.1 * np.outer(x, pred)
        return loss

    def fixed(self, x):
        pred = x @ self.W
        W_t = self.W + x[:0].sum()  # a read that meets a tensor: also captures
        reg = 0.5 * np.sum(W_t * W_t)
        loss = np.sum(pred ** 2) + reg
        self.W -= 0.1 * np.outer(x, pred)
        return loss


def test_a_number_numpy_computed_from_a_state_before_its_write_is_refused_at_its_line():
    model = Regularised()
    before = model.W.copy()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(model.step, cv.spec((3,), "float64"))
    what, why, fix = str(info.value).splitlines()
    assert what.startswith("`loss = np.sum(pred ** 2) + reg` at ")
    line = _line_of(Regularised.step, "loss =")
    assert f"test_state_second_capture.py:{line} in step: NumPy's own operators computed a " \
           "value from an array the capture writes, outside the capture's sight." in what
    assert why.endswith("(it depends on what model.W holds).")  # no value of capviz's shown
    pred, reg = _line_of(Regularised.step, "pred ="), _line_of(Regularised.step, "reg =")
    assert fix.startswith(f"Fix: write line {pred} as `pred = x @ cv.constant(self.W)`, and line "
                          f"{reg} as `reg = 0.5 * np.sum(cv.constant(self.W) * "
                          "cv.constant(self.W))`: ")
    assert model.W.tobytes() == before.tobytes()
    graph = info.value.graph
    assert not graph.complete and graph.error is info.value
    assert [v.call for v in graph.violation_records] == [recapture.COMPUTED]
    with pytest.raises(IncompleteGraphError):
        graph.replay({"x": np.ones(3)})


@pytest.mark.parametrize("fix", ["fixed", "quoted"])
def test_the_fix_the_refusal_gives_replays_as_eager_calls_compute(fix):
    model, twin = Regularised(), Regularised()
    graph = cv.capture(getattr(model, fix), cv.spec((3,), "float64"))
    for k in range(3):
        x = np.array([0.1, 0.2, 0.3]) * (k + 1)
        assert graph.replay({"x": x})["out"] == twin.fixed(x)
        assert np.array_equal(model.W, twin.W)


def test_an_array_numpy_computed_before_the_write_and_returned_after_it_is_refused():
    """/tmp/review/s21.py: ``y`` is computed before the write and enters the graph after it
    (the function's result), so no position in the graph tells it apart."""

    class S:
        def __init__(self):
            self.W = np.arange(16.0).reshape(4, 4)

        def b(self, g):
            y = self.W[1:] * 2.0
            self.W += g
            return y.sum()

    s = S()
    before = s.W.copy()
    with pytest.raises(UnsupportedOperationError, match=r"^`return y.sum\(\)` at .* the "
                       r"returned value was computed by NumPy's own operators from s\.W, an "
                       r"array the capture writes") as info:
        cv.capture(s.b, cv.spec((4,), "float64"))
    assert "(it depends on what s.W holds)" in str(info.value)
    assert "`y = cv.constant(self.W)[1:] * 2.0`" in str(info.value)
    assert np.array_equal(s.W, before)


class Counter:
    """/tmp/review/s9.py: a step counter written with no tensor."""

    def __init__(self):
        self.t = np.zeros(1)
        self.w = np.ones(3)

    def step(self, g):
        self.t += 1
        self.w -= 0.1 * g / self.t
        return g * 1.0

    def fixed(self, g):
        self.t += cv.constant(np.float64(1))  # the message's fix: a write the capture records
        self.w -= 0.1 * g / self.t
        return g * 1.0


def test_an_outside_array_numpy_writes_during_the_capture_is_refused_naming_it():
    opt = Counter()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(opt.step, cv.spec((3,), "float64"))
    what, why, fix = str(info.value).splitlines()
    assert what.startswith("`self.t += 1` at ")  # the line that writes it (W=20r)
    assert what.endswith("in step: NumPy's own operators wrote the outside ndarray self.t, a "
                         "write no state of the graph records.")
    assert "(it held [0.] (float64[1]) when the call started and NumPy made it [1.] " \
           "(float64[1]); the capture put it back)" in why
    assert fix == ("Fix: write it with a tensor, which the capture records as a state: "
                   "self.t += cv.constant(np.float64(1)), or pass it as an input and return its "
                   "new value.")
    assert opt.t.tolist() == [0.0]  # put back: the capture changed nothing
    assert opt.w.tolist() == [1.0, 1.0, 1.0]


def test_the_counters_fix_replays_as_eager_calls_compute():
    opt, twin = Counter(), Counter()
    graph = cv.capture(opt.fixed, cv.spec((3,), "float64"))
    assert opt.t.tolist() == [0.0]
    g = np.ones(3)
    for _ in range(3):
        graph.replay({"g": g})
        twin.fixed(g)
    assert np.array_equal(opt.t, twin.t) and np.array_equal(opt.w, twin.w)


def test_a_state_numpy_writes_before_the_captures_first_write_is_refused_naming_it():
    class Decay:
        def __init__(self):
            self.m = np.ones(3)

        def step(self, g):
            scale = np.float64(0.5) * g  # a NumPy scalar: the second capture runs
            self.m *= 0.9  # no tensor: NumPy's own ufunc
            self.m += scale
            return g * 1.0

    d = Decay()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(d.step, cv.spec((3,), "float64"))
    what, why, _ = str(info.value).splitlines()
    assert what.startswith("`self.m *= 0.9` at ")
    assert "NumPy's own operators wrote the outside ndarray self.m" in what
    assert "(NumPy wrote it before the capture's first write to it, so the graph would start " \
           "from the value NumPy made ([0.9 0.9 0.9] (float64[3])) where a call starts from " \
           "[1. 1. 1.] (float64[3]); the capture put it back)" in why
    assert d.m.tolist() == [1.0, 1.0, 1.0]  # put back (W=20r: the copy made before the call)


def test_a_path_chosen_from_a_states_values_is_refused_at_the_first_difference():
    W = np.ones(3)

    def f(x):
        top = W.max()
        y = x * 2.0 if top > 1 else x + top
        np.subtract(W, y, out=W)
        return y

    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(f, cv.spec(3, "float64"))
    what, why, fix = str(info.value).splitlines()
    assert what.startswith("`y = x * 2.0 if top > 1 else x + top` at ")
    assert "the captured code recorded other operations here when W held other values" in what
    assert why.endswith("(when W holds other values the capture records another program from "
                        "here on).")
    assert fix.startswith("Fix: keep the choice in the graph")
    assert W.tolist() == [1.0, 1.0, 1.0]


def test_a_second_run_that_fails_says_so_and_every_array_is_put_back():
    counts = np.zeros(2, np.int64)
    table = np.arange(4.0)

    def f(x):
        k = int(counts[0])  # a Python int from a state's value: on its line, no number
        np.add(counts, x[:2].astype(np.int64) * 0 + 1, out=counts)
        if k:
            raise ValueError("the counter moved")
        return x * table[k]

    before = counts.copy()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(f, cv.spec(3, "float64"))
    what, why, fix = str(info.value).splitlines()
    assert what.startswith('`raise ValueError("the counter moved")` at ')
    assert what.endswith(": the second run of the captured function failed here, with counts "
                         "holding other values.")
    assert "the second run raised ValueError: the counter moved; either this line uses a value " \
        "computed from counts, or the function cannot run twice" in why
    assert fix.startswith("Fix: if the line reads the array, compute it from tensors")
    assert np.array_equal(counts, before) and counts.dtype == np.int64


def test_values_that_agree_capture_once_more_and_replay_as_eager():
    """A NumPy scalar and a constant that do not come from the state: the second capture
    finds nothing; the user's arrays, NaN payloads and signed zeros included, are as they
    were; a seeded random op draws the same indices; nothing warns twice."""
    dev = cv.Device("numpy")
    dev.seed(3)
    mask = np.array([1.0, 0.0, 1.0])
    state = np.array([np.nan, -0.0, 2.5])
    payload = np.array([0x7FF8000000000123], np.uint64).view(np.float64)[0]
    state[0] = payload
    bits = state.tobytes()

    def f(x):
        noise = cv.random.normal((3,))
        np.add(state, x * np.float64(0.5) * mask + noise, out=state)
        return x * 1.0

    seen = []
    remove = capture_module.observe(seen.append)
    try:
        graph = cv.capture(f, cv.spec(3, "float64"), rng=dev)
    finally:
        remove()
    assert graph.complete and len(seen) == 1
    assert state.tobytes() == bits
    assert dev._draws == 1  # one draw index taken, by the first capture
    assert [n.params["draw"] for n in graph.ops if n.op.startswith("random")] == [0]


def test_a_warning_of_the_first_capture_is_not_given_twice():
    state = np.zeros(3)

    def f(x):
        np.add(state, x * np.float64(2.0) + cv.random.normal((3,)), out=state)
        return x * 1.0

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cv.capture(f, cv.spec(3, "float64"), rng=cv.Device("numpy"))
    assert len([w for w in caught if issubclass(w.category, cv.UnseededRandomWarning)]) == 1


def test_a_generator_state_is_not_advanced_by_the_second_capture():
    class Noisy:
        def __init__(self):
            self.rng = np.random.default_rng(0)
            self.m = np.zeros(3)

        def step(self, x):
            self.m += x * np.float64(2.0) + self.rng.standard_normal(3)
            return x * 1.0

    noisy, twin = Noisy(), Noisy()
    graph = cv.capture(noisy.step, cv.spec(3, "float64"))
    assert noisy.rng.bit_generator.state == twin.rng.bit_generator.state
    x = np.ones(3)
    graph.replay({"x": x})
    twin.step(x)
    assert np.array_equal(noisy.m, twin.m)


def test_record_mode_keeps_the_refusal_on_the_graph():
    model = Regularised()
    graph = cv.capture(model.step, cv.spec((3,), "float64"), on_violation="record")
    assert not graph.complete
    assert [v.kind for v in graph.violation_records] == ["unsupported_op"]
    with pytest.raises(cv.UnsupportedOperationError, match="from an array the capture writes"):
        graph.check()


def test_the_100_write_optimiser_of_the_benchmark_is_captured_twice(second_captures):
    """benchmarks/state.py's stateful program: every capture that makes array states is
    captured a second time (no value heuristic can tell that one cannot matter: a branch on a
    state records nothing suspect), and this one is refused by nothing."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    try:
        state_benchmark = importlib.import_module("state")
    finally:
        sys.path.pop(0)
    opt = state_benchmark.Optimiser()
    before = [w.copy() for w in opt.params]
    g = np.random.default_rng(1).standard_normal(state_benchmark.SIZE)
    graph = cv.capture(opt.step, g)
    assert len(graph.state_nodes) == 100 and graph.complete
    assert second_captures == [1]
    assert all(np.array_equal(w, b) for w, b in zip(opt.params, before))


def test_only_a_capture_with_array_states_is_captured_twice(second_captures):
    state = np.zeros(3)

    def stateless(x):
        return x * 0.5 + float(x.shape[0]) / 7

    def stateful(x):
        np.add(state, x * 0.5, out=state)
        return x * 1.0

    cv.capture(stateless, cv.spec(3, "float64"))
    assert second_captures == []
    cv.capture(stateful, cv.spec(3, "float64"))
    assert second_captures == [1]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "int8",
                                   "uint8", "int64", "bool"])
def test_other_values_differ_everywhere_and_hold_no_nan(dtype):
    info = np.finfo(dtype) if np.dtype(dtype).kind in "fc" else None
    if np.dtype(dtype).kind == "b":
        values = np.array([True, False])
    elif info is None:
        limits = np.iinfo(dtype)
        values = np.array([limits.min, limits.max, 0, 1], dtype)
    else:
        real = np.array([0.0, -0.0, 1.0, -1.0, info.max, -info.max, info.tiny, np.inf,
                         -np.inf, np.nan, 2.0 ** info.nmant, 0.5], info.dtype)
        values = real.astype(dtype)
        if np.dtype(dtype).kind == "c":
            values = values.copy()
            values.imag = real[::-1]
    other = recapture.other_values(values)
    assert other.dtype == values.dtype and other.shape == values.shape
    parts = (np.real(other), np.imag(other)) if other.dtype.kind == "c" else (other,)
    assert not any(np.isnan(p).any() for p in parts if p.dtype.kind == "f")
    same = values.view(f"u{values.itemsize}") == other.view(f"u{values.itemsize}") \
        if values.dtype.kind != "c" else values == other
    assert not same.any()


# --- the loose ends: states= layouts, compare(fn) on a graph with states ---------------------

def _accumulator():
    m = np.zeros((3, 4))

    def f(g):
        m[...] += g
        return g * 2.0

    return m, cv.capture(f, cv.spec((3, 4), "float64"))


@pytest.mark.parametrize("given, got", [
    (np.asfortranarray(np.zeros((3, 4))), "got a Fortran-ordered array"),
    (np.zeros((3, 8))[:, ::2], "got an array of strides (64, 16)"),
])
def test_a_state_given_with_another_layout_is_refused_with_expected_and_got(given, got):
    _, graph = _accumulator()
    with pytest.raises(cv.ReplayInputError) as info:
        graph.replay({"g": np.ones((3, 4))}, states={"m": given})
    assert str(info.value).startswith("state 'm': expected a C-contiguous array (the array "
                                      f"the capture met), {got}: ")
    assert "Fix: give an array of that layout" in str(info.value)
    assert not given.any()  # refused before anything ran


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix itself
def test_a_state_given_as_a_matrix_is_refused_and_a_plain_one_replays():
    m, graph = _accumulator()
    with pytest.raises(cv.ReplayInputError, match=r"state 'm': expected a numpy.ndarray "
                       r"float64\[3, 4\], got numpy.matrix"):
        graph.replay({"g": np.ones((3, 4))}, states={"m": np.asmatrix(np.zeros((3, 4)))})
    mine = np.zeros((3, 4))
    graph.replay({"g": np.ones((3, 4))}, states={"m": mine})
    assert np.array_equal(mine, np.ones((3, 4))) and not m.any()


def test_a_loaded_graphs_state_must_be_c_contiguous(tmp_path):
    _, graph = _accumulator()
    graph.save(tmp_path / "g")
    loaded = cv.load(tmp_path / "g")
    with pytest.raises(cv.ReplayInputError, match=r"expected a C-contiguous array \(a loaded "
                       r"graph's state\), got a Fortran-ordered array"):
        loaded.replay({"g": np.ones((3, 4))}, states={"m": np.asfortranarray(np.zeros((3, 4)))})


def test_compare_fn_on_a_graph_with_states_is_refused_by_name_before_anything_runs():
    """/tmp/review/s19.py: it reported a divergence where the programs agree."""

    class Acc:
        def __init__(self):
            self.m = np.zeros(3)

        def __call__(self, g):
            self.m += g
            return g * 2.0

    acc = Acc()
    graph = cv.capture(acc, cv.spec((3,), "float64"))
    with pytest.raises(UnsupportedOperationError) as info:
        graph.compare(acc, inputs={"g": np.ones(3)})
    assert str(info.value).startswith("graph.compare(fn) cannot follow a graph with states "
                                      "(acc.m): the eager call writes them in place")
    assert "Fix: capture fn written functionally" in str(info.value)
    assert not acc.m.any()
    assert not graph.compare(inputs={"g": np.ones(3)}, against="numpy")


def test_a_graph_recorded_with_violations_is_not_captured_again(second_captures):
    W = np.ones(3)

    def f(x):
        reg = np.sum(W * W)
        np.subtract(W, x, out=W)
        return x * reg + float(x.sum())  # a data read: a violation, recorded

    graph = cv.capture(f, cv.spec(3, "float64"), on_violation="record")
    assert [v.kind for v in graph.violation_records] == ["data_read"]
    assert second_captures == []


def test_a_guard_on_a_states_value_is_checked_by_replays_and_not_refused():
    """With an example, a branch on a value computed from a state is a guard that every
    replay checks again: the second capture, which reads another value there, refuses
    nothing."""

    class M:
        def __init__(self):
            self.W = np.full(3, -0.5)

        def step(self, x):
            y = x * 2.0 if (x * self.W).sum() > 0 else x + 1.0
            self.W += x * np.float64(0.25)
            return y

    m, twin = M(), M()
    x = np.ones(3)
    graph = cv.capture(m.step, x)
    assert [n.params for n in graph.nodes if n.kind == "guard"] == [{"value": False}]
    for _ in range(3):  # W sums to -1.5, -0.75, 0.0
        assert np.array_equal(graph.replay({"x": x})["out"], twin.step(x))
    with pytest.raises(cv.GuardError):
        graph.replay({"x": x})  # W sums to 0.75 > 0: eager takes the other branch


def test_the_generators_a_second_capture_meets_are_left_as_they_were(second_captures):
    import random

    class M:
        def __init__(self):
            self.m = np.zeros(3)
            self.rs = np.random.RandomState(0)
            self.gen = np.random.default_rng(5)

        def step(self, x):
            a, b = random.random(), np.random.rand(3)
            c, d = self.rs.standard_normal(3), self.gen.random(3)
            self.m += x * np.float64(2.0) + a + b + c + d
            return x * 1.0

    m = M()
    python, legacy = random.getstate(), np.random.get_state()[1].copy()
    rs, gen = m.rs.get_state()[1].copy(), m.gen.bit_generator.state
    graph = cv.capture(m.step, cv.spec(3, "float64"))
    assert graph.complete and second_captures == [1]
    assert random.getstate() == python and np.array_equal(np.random.get_state()[1], legacy)
    assert np.array_equal(m.rs.get_state()[1], rs) and m.gen.bit_generator.state == gen


def test_a_python_number_the_call_changes_is_refused_too():
    """``self.n += 1`` on a Python int that steers Python (``if self.n > 2:``): the graph
    would take the branch the capture took for ever. Refused as a Python number that changes
    from call to call (review 2, finding 14: the message blamed NumPy and quoted another
    program's fix). Without the branch the counter replays (the next test)."""

    class M:
        def __init__(self):
            self.n = 0
            self.m = np.zeros(3)

        def step(self, x):
            self.n += 1
            self.m += x * self.n
            if self.n > 2:
                self.m += x
            return x * 1.0

    model = M()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(model.step, cv.spec(3, "float64"))
    what, why, fix = str(info.value).splitlines()
    # (since review 3's finding 25, capviz/trace/rebound.py: seen when the first capture ends,
    # named, and put back, before any second capture)
    assert what.endswith("self.n is a Python number that changes from call to call.")
    assert "test_state_second_capture.py" in what
    assert why.endswith("(the call changes self.n (0 -> 1) every time it runs, and the capture "
                        "put it back).")
    assert fix == "Fix: pass it as an input (an argument of the captured function), or keep " \
        "the counter in an ndarray written with a tensor (self.t += cv.constant(np.float64(1)))."
    assert model.n == 0 and not model.m.any()


def test_a_counter_beside_an_array_state_replays_on_a_first_capture():
    """``self.n += 1`` then ``self.m += x * self.n`` (ruling 40 17:35, 20L): the counter is a
    kept Python number, lifted on the first capture with the array its lines write; four
    replays as four eager calls (the array, the counter's value and type). Refused before."""

    class M:
        def __init__(self):
            self.n = 0
            self.m = np.zeros(3)

        def step(self, x):
            self.n += 1
            self.m += x * self.n
            return x * 1.0

    model, eager = M(), M()
    graph = cv.capture(model.step, cv.spec(3, "float64"))
    for k in range(4):
        x = np.array([1.0, -2.0, 0.5]) * (k + 1)
        graph.replay({"x": x})
        eager.step(x)
        assert model.m.tobytes() == eager.m.tobytes()
        assert type(model.n) is int and model.n == eager.n == k + 1


def test_graphs_with_size_symbols_are_compared_without_asking_the_closed_capture():
    """A data-dependent length (``n0``) compares by where it comes from: its ``==`` would ask
    the capture that made it, which has ended."""

    class M:
        def __init__(self):
            self.m = np.zeros(3)

        def step(self, x):
            pos = x[x > 0]
            self.m += x * np.float64(2.0)
            return pos.sum() * 1.0

    m, twin = M(), M()
    x = np.array([1.0, -1.0, 2.0])
    graph = cv.capture(m.step, x)
    assert graph.complete and "n0" in str(graph)
    assert graph.replay({"x": x})["out"] == twin.step(x)
    assert np.array_equal(m.m, twin.m)


# --- hostile review 2: every capture with array states is captured twice, with other values
# that change what shifts, scalings and orders do not (lead decisions 1, 2, 3, 7) ------------

def _captured(step_body, W, spec=None):
    """Capture ``step_body(self, x)`` of an object holding ``W``; the error raised, or None."""

    class M:
        def __init__(self):
            self.W = W.copy()

        step = step_body

    m = M()
    before = m.W.copy()
    try:
        cv.capture(m.step, cv.spec((3,), "float64") if spec is None else spec)
    except UnsupportedOperationError as err:
        assert np.array_equal(m.W, before)  # every array put back
        return err
    return None


def _variance(self, x):
    reg = np.var(self.W)  # shift-invariant: W + 1 gave the same value
    y = x * reg
    self.W -= 0.1 * x * self.W
    return y


def _centred(self, x):
    c = self.W - self.W.mean()
    y = x * c
    self.W -= 0.1 * x * self.W
    return y


def _argmax(self, x):
    i = np.argmax(self.W)
    y = x[i] * x
    self.W -= x * self.W
    return y


def _branch(self, x):
    if self.W.sum() > 0:  # records nothing but literals written on their lines
        y = x * 2.0
    else:
        y = x * 3.0
    self.W -= x * 2.0
    return y


def _float_equal_to_a_token(self, x):
    s = float(self.W.sum())  # 3.0, the token written on the next line
    y = x * s + 3.0
    self.W += x
    return y


@pytest.mark.parametrize("step, line, message", [
    (_variance, "y = x * reg", r"NumPy's own operators computed (a value|`reg`) from an array "
     r"the capture writes"),
    (_centred, "y = x * c", r"NumPy's own operators computed `c` from an array the capture"),
    (_argmax, "y = x[i] * x", r"NumPy's own operators computed the index from an array the "),
    (_branch, "y = x * 2.0", r"the captured code recorded other operations here when m\.W held "
     r"other values"),
    (_float_equal_to_a_token, "y = x * s + 3.0", r"the number this line uses is a Python number "
     r"that changes from call to call"),
])
def test_a_read_of_a_state_that_a_shift_or_a_value_filter_missed_is_refused_at_its_line(
        step, line, message):
    """Review 2, findings 1 and 2: ``W + 1`` left var, centring and argmax unchanged, and the
    suspect filter never captured a branch or a number equal to a token again."""
    W = np.array([1.0, 1.0, 1.0]) if step is _float_equal_to_a_token else \
        np.array([1.0, 2.0, 4.0])
    err = _captured(step, W)
    assert type(err) is UnsupportedOperationError
    what = str(err).splitlines()[0]
    assert what.startswith(f"`{line}` at ")
    assert f"test_state_second_capture.py:{_line_of(step, line)} in {step.__name__}:" in what
    assert re.search(message, str(err))


def test_an_int_state_read_by_python_before_its_write_is_refused():
    """Review 2, finding 2: ``np.roll(x, int(self.k[0]))`` with ``k`` an int64 counter."""

    class M:
        def __init__(self):
            self.k = np.zeros(1, np.int64)

        def step(self, x):
            y = np.roll(x, int(self.k[0]))
            self.k += (x[:1] > 0).astype(np.int64)
            return y

    m = M()
    with pytest.raises(UnsupportedOperationError, match=r"`y = np\.roll\(x, int\(self\.k\[0\]\)\)"
                       r"` at .*: the shift is a Python number that changes from call to call"):
        cv.capture(m.step, cv.spec((3,), "float64"))
    assert m.k.tolist() == [0]


def test_a_guard_that_reads_a_value_numpy_computed_does_not_end_the_comparison():
    """Review 2, finding 7 (/tmp/review2/s6.py): capviz's own reads in the second capture read
    the first capture's values, so the guard ``x @ self.W < 0`` agrees and ``reg``, computed by
    NumPy from the state after it, is refused."""

    class G:
        def __init__(self):
            self.W = np.array([-0.5, -0.6, -0.7])

        def step(self, x):
            if x @ self.W < 0:
                y = x * 2.0
            else:
                y = x * 3.0
            reg = np.sum(self.W * self.W)
            self.W -= 0.1 * x
            return y + reg

    m = G()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, np.array([1.0, 2.0, 3.0]))
    what = str(info.value).splitlines()[0]
    assert what.startswith("`return y + reg` at ")
    assert "NumPy's own operators computed a value from an array the capture writes" in what
    assert np.array_equal(m.W, [-0.5, -0.6, -0.7])


NUMPYS = "NumPy's own operators computed a value from an array the capture writes"
PYTHONS = "the number this line uses is a Python number that changes from call to call"


@pytest.mark.parametrize("read, shown, situation", [
    (lambda s, x: x * (s.W > 0).sum(), r"np\.int64\(3\)", NUMPYS),
    (lambda s, x: x * 2 if s.W.sum() > 0 else x * 3, "2", PYTHONS),
    (lambda s, x: x * len(s.W[s.W > 0]), "3", PYTHONS),
    (lambda s, x: x * np.nan_to_num(s.W),
     r"\[1000000\. 1333333\.333333 1666666\.666667\] \(float64\[3\]\)", NUMPYS),
    (lambda s, x: x * int(s.W.sum()), "3999999", PYTHONS),
    (lambda s, x: x * float(np.maximum(s.W, -1.0).max() < -0.5), "0.0", PYTHONS),
])
def test_a_nan_blind_read_after_the_write_is_refused(read, shown, situation):
    """Review 2, findings 20 (/tmp/review2/s18.py) and its residue (s27.py): a NaN mark after
    the write is swallowed by comparisons and masks; the first of the two captures writes large
    positive values there, the second large negative ones, so the value differs and is refused
    at its line."""

    class M:
        def __init__(self):
            self.W = np.ones(3)

        def step(self, x):
            self.W += x
            return read(self, x)

    m = M()
    with pytest.raises(UnsupportedOperationError, match=rf"in <lambda>: {situation}") as info:
        cv.capture(m.step, cv.spec((3,), "float64"))
    # what capviz's fills made (the value once shown) is no value of the user's: never shown
    assert not re.search(rf"\b{shown}\b", str(info.value).split(": ", 1)[1].split("\n", 1)[1])
    assert np.array_equal(m.W, np.ones(3))


def test_an_anonymous_array_numpy_computed_from_a_big_state_is_refused():
    """Review 2, finding 5 (/tmp/review2/s4.py): ``W * 0.5`` of a 1.28 MB state is kept by
    reference, and was no suspect."""

    class Big:
        def __init__(self):
            self.W = np.eye(400)

        def step(self, x):
            Wn = self.W * 0.5
            y = x @ Wn
            self.W -= 0.01 * np.outer(x, x)
            return y

    m = Big()
    with pytest.raises(UnsupportedOperationError, match=r"`y = x @ Wn` at .*: NumPy's own "
                       r"operators computed `Wn` from an array the capture writes(?s:.*)Fix: "
                       r"write line \d+ as `Wn = cv\.constant\(self\.W\) \* 0\.5`"):
        cv.capture(m.step, cv.spec((400,), "float64"))
    assert np.array_equal(m.W, np.eye(400))


def test_other_values_change_sums_orders_and_are_seeded():
    values = np.array([1.0, 2.0, 4.0, 3.0])
    other = recapture.other_values(values)
    assert np.array_equal(other, recapture.other_values(values))  # the same program twice
    assert (other.sum() > 0) != (values.sum() > 0)  # a branch on the sum flips
    assert np.argmax(other) == np.argmin(values) and np.argmin(other) == np.argmax(values)
    assert np.var(other) != np.var(values) and np.isfinite(other).all()
    fill = recapture.other_values(values, draw=1)  # where the first capture wrote NaN
    assert fill.sum() > 0 and not np.array_equal(fill, other)
    counts = np.array([5, 1, 3], np.int64)
    ints = recapture.other_values(counts)
    assert np.argmax(ints) == np.argmin(counts) and not (ints == counts).any()


def test_a_read_only_state_given_to_a_replay_is_refused_before_anything_runs():
    """Review 2, finding 9 (/tmp/review2/s9.py): NumPy's bare ValueError came from the
    write-back, after the other states were written."""

    class M:
        def __init__(self):
            self.A = np.zeros(3)
            self.B = np.zeros(3)

        def step(self, x):
            self.A += x
            self.B += x
            return x * 1.0

    m = M()
    graph = cv.capture(m.step, cv.spec((3,), "float64"))
    A, B = np.zeros(3), np.zeros(3)
    B.flags.writeable = False
    with pytest.raises(cv.ReplayInputError, match=r"state 'm\.B': expected a writeable array, "
                       r"got a read-only one: the replay writes the state's new value into "
                       r"it\. Fix: pass a writeable array \(states=\{'m\.B': a\.copy\(\)\}\)"):
        graph.replay({"x": np.ones(3)}, states={"m.A": A, "m.B": B})
    assert np.array_equal(A, np.zeros(3))


def test_one_array_given_for_two_states_is_refused_before_anything_runs():
    """Review 2, finding 23 (/tmp/review2/s19.py): one array given for m.A and m.B replayed
    [2, 2, 2] where a call writing the same memory twice gives [3, 3, 3]."""

    class M:
        def __init__(self):
            self.A = np.zeros(3)
            self.B = np.zeros(3)

        def step(self, x):
            self.A += x
            self.B += 2 * x
            return x * 1.0

    m = M()
    graph = cv.capture(m.step, cv.spec((3,), "float64"))
    shared = np.zeros(3)
    with pytest.raises(cv.ReplayInputError, match=r"^states 'm\.A' and 'm\.B' share memory: .*"
                       r"Fix: give each state its own array$"):
        graph.replay({"x": np.ones(3)}, states={"m.A": shared, "m.B": shared})
    assert np.array_equal(shared, np.zeros(3))
    with pytest.raises(cv.ReplayInputError, match=r"^states 'm\.A' and 'm\.B' share memory"):
        graph.replay({"x": np.ones(3)}, states={"m.B": m.A})  # given, against a live one
    out = graph.replay({"x": np.ones(3)}, states={"m.A": np.zeros(3), "m.B": np.zeros(3)})
    assert np.array_equal(next(iter(out.values())), np.ones(3))  # apart: replayed


def test_a_function_that_cannot_run_twice_is_told_so_with_both_fixes():
    """Review 2, finding 6 (/tmp/review2/s5.py): ``next(self.batches)`` with one batch left
    was refused as a path chosen from a state's values, with np.where as the fix."""

    class Loader:
        def __init__(self):
            self.W = np.ones(3)
            self.batches = iter([np.array([1.0, 2.0, 3.0])])

        def step(self, x):
            b = next(self.batches)
            y = x * b
            self.W += x
            return y

    m = Loader()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((3,), "float64"))
    what, why, fix = str(info.value).splitlines()
    line = _line_of(Loader.step, "next(self.batches)")
    # (since stop 36, the first run sees the iterator move: tests/test_counters_outside.py)
    assert what == (f"`b = next(self.batches)` at {__file__}:{line} in step: self.batches is an "
                    "iterator that outlives the call, and the call takes its next item.")
    assert why.startswith("capviz cannot record it: no hook sees next()")
    assert fix == ("Fix: take the item outside the captured function and pass it as an input "
                   "(an argument of the captured function).")
    assert np.array_equal(m.W, np.ones(3))


# --- review 2, finding 16: a capture tensor left in a name outside the capture (decision 5) ---

class _Rebinding:
    def __init__(self):
        self.W = np.ones(3)

    def step(self, g):
        self.W = self.W - 0.5 * g
        return self.W * 2.0


def test_an_attribute_rebound_to_a_capture_tensor_is_refused_and_put_back():
    """/tmp/review2/s14.py: every replay computed from the old W and the user's object held a
    closed capture tensor."""
    m = _Rebinding()
    W = m.W
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((3,), "float64"))
    what, why, fix = str(info.value).splitlines()
    line = _line_of(_Rebinding.step, "self.W = self.W")
    assert what == (f"`self.W = self.W - 0.5 * g` at {__file__}:{line} in step: self.W is "
                    "rebound to a value of the capture.")
    assert why.startswith("capviz cannot record it: a replay computes values, writes arrays in "
                          "place and binds a new array only to a name that held an array of "
                          "its shape and dtype that nothing else holds")
    assert fix == "Fix: write in place: self.W -= 0.5 * g (the capture records it as a state)."
    assert m.W is W and np.array_equal(W, np.ones(3))
    assert np.array_equal(m.step(np.ones(3)), np.ones(3))  # the user's object works eagerly


TOTAL = np.zeros(2)


def _global_update(x):
    global TOTAL
    TOTAL = TOTAL + x
    return x * 1.0


def test_a_global_or_a_closure_variable_rebound_to_a_capture_tensor_is_refused():
    before = TOTAL
    with pytest.raises(UnsupportedOperationError, match=r"`TOTAL = TOTAL \+ x` at .* TOTAL is "
                       r"rebound to a value of the capture\.\n.*\nFix: write in place: "
                       r"TOTAL \+= x "):
        cv.capture(_global_update, cv.spec((2,), "float64"))
    assert TOTAL is before

    acc = np.zeros(2)

    def closure_update(x):
        nonlocal acc
        acc = np.maximum(acc, x)
        return x * 1.0

    kept = acc
    with pytest.raises(UnsupportedOperationError, match=r"acc is rebound to a value of the "
                       r"capture\.\n.*\nFix: write the new value into the array in place"):
        cv.capture(closure_update, cv.spec((2,), "float64"))
    assert acc is kept and not acc.any()


def test_an_error_numpy_raises_on_the_nan_mark_is_refused_at_its_line_naming_the_state():
    """Review 2, finding 20: ``int()`` of a value NumPy computed from a written state raised
    NumPy's bare ValueError from the user's line. The scope form (one capture) still writes
    the NaN mark."""

    class M:
        def __init__(self):
            self.W = np.ones(3)

        def step(self, x):
            self.W += x
            return x * int(self.W.sum())

    m = M()
    with pytest.raises(UnsupportedOperationError) as info:
        with cv.CaptureDevice().capture_scope() as scope:
            scope.output(m.step(scope.input("x", (3,), "float64")))
    what, why, fix = str(info.value).splitlines()
    line = _line_of(M.step, "int(self.W.sum())")
    assert what == (f"`return x * int(self.W.sum())` at {__file__}:{line} in step: raised an "
                    "error while m.W held the capture's NaN mark.")
    assert "and this line raised ValueError: cannot convert float NaN to integer" in why
    assert fix.startswith("Fix: make the read meet a tensor")
    assert type(info.value.__cause__) is ValueError
    assert np.array_equal(m.W, np.ones(3))


def test_a_threshold_below_zero_after_the_write_is_refused_as_a_path():
    """Review 2, finding 20's residue (/tmp/review2/s27.py): ``if W.sum() < 0`` after ``W -=
    x`` answered False for the NaN mark and for the second capture's positive fill, and was
    replayed frozen on the wrong branch; the two captures' fills now have opposite signs."""

    class After:
        def __init__(self):
            self.W = np.zeros(3)

        def step(self, x):
            self.W -= x
            if self.W.sum() < 0:
                return x * 2.0
            return x * 3.0

    m = After()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((3,), "float64"))
    what = str(info.value).splitlines()[0]
    line = _line_of(After.step, "return x * 3.0")
    assert what == (f"`return x * 3.0` at {__file__}:{line} in step: the captured code "
                    "recorded other operations here when m.W held other values.")
    assert np.array_equal(m.W, np.zeros(3))


def test_a_plain_store_after_the_write_is_refused_in_both_forms():
    """The first of two captures writes finite values, not the NaN mark, after a state's
    first write: a plain value NumPy stores there is still seen at the exit."""

    class M:
        def __init__(self):
            self.W = np.ones(3)

        def step(self, x):
            self.W += x
            self.W[0] = 1.0
            return x * 1.0

    m = M()
    with pytest.raises(UnsupportedOperationError,
                       match=r"`self\.W\[0\] = 1\.0` at .*: NumPy's own operators wrote m\.W"):
        cv.capture(m.step, cv.spec((3,), "float64"))
    assert np.array_equal(m.W, np.ones(3))


class _Returning:
    def __init__(self):
        self.W = np.zeros(3)

    def step(self, g):
        self.W += g
        return self.W * 2.0

    def fixed(self, g):
        W = self.W
        W += g
        return W * 2.0


def test_a_value_numpy_computed_from_a_written_state_and_returned_is_refused_at_the_return():
    """Review 2, finding 19: the refusal named the ``cv.capture(...)`` line, not the user's
    ``return self.W * 2.0``; the fix it gives replays as eager calls compute."""
    m = _Returning()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((3,), "float64"))
    what, why, fix = str(info.value).splitlines()
    line = _line_of(_Returning.step, "return self.W * 2.0")
    assert what == (f"`return self.W * 2.0` at {__file__}:{line} in step: the returned value "
                    "was computed by NumPy's own operators from m.W, an array the capture "
                    "writes.")  # worded for a returned value (W=20r)
    assert why.endswith("(it depends on what m.W holds).")
    assert fix.startswith("Fix: write `return cv.constant(self.W) * 2.0`: ")
    assert np.array_equal(m.W, np.zeros(3))
    twin = _Returning()
    graph = cv.capture(m.fixed, cv.spec((3,), "float64"))
    for k in range(3):
        g = np.arange(3.0) + k
        assert np.array_equal(graph.replay({"g": g})["out"], twin.fixed(g))
        assert np.array_equal(m.W, twin.W)


class _Inner:
    def __init__(self):
        self.m = np.ones(3)


class _Nested:
    def __init__(self):
        self.ws = [np.ones(3)]
        self.d = {"w": np.ones(3)}
        self.o = _Inner()

    def list_item(self, g):
        self.ws[0] = self.ws[0] - g
        return g * 1.0

    def dict_item(self, g):
        self.d["w"] = self.d["w"] - g
        return g * 1.0

    def nested_attribute(self, g):
        self.o.m = self.o.m - g
        return g * 1.0

    def all_three(self, g):
        self.ws[0] = self.ws[0] - g
        self.d["w"] = self.d["w"] - g
        self.o.m = self.o.m - g
        return self.ws[0] + self.d["w"] + self.o.m


@pytest.mark.parametrize("method, text, place, fix", [
    ("list_item", "self.ws[0] = self.ws[0] - g", "self.ws[0]", "self.ws[0] -= g"),
    ("dict_item", 'self.d["w"] = self.d["w"] - g', "self.d['w']", 'self.d["w"] -= g'),
    ("nested_attribute", "self.o.m = self.o.m - g", "self.o.m", "self.o.m -= g"),
])
def test_a_list_item_dict_item_or_nested_attribute_rebound_to_a_tensor_is_refused(
        method, text, place, fix):
    """Review 2, finding 16's rest (/tmp/review2/s34.py): a capture tensor left in a list
    item, a dict item or a nested attribute was no state, replays computed from the old array,
    and the user's object kept a closed capture tensor."""
    m = _Nested()
    before = (m.ws[0], m.d["w"], m.o.m)
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(getattr(m, method), cv.spec((3,), "float64"))
    what, why, fixed = str(info.value).splitlines()
    line = _line_of(getattr(_Nested, method), text)
    assert what == (f"`{text}` at {__file__}:{line} in {method}: {place} is rebound to a "
                    "value of the capture.")
    assert why.endswith("(the capture put the original object back).")
    assert fixed == f"Fix: write in place: {fix} (the capture records it as a state)."
    assert all(a is b for a, b in zip((m.ws[0], m.d["w"], m.o.m), before))  # put back
    assert all(np.array_equal(w, np.ones(3)) for w in before)


def test_every_rebound_item_is_put_back_when_the_first_is_refused():
    m = _Nested()
    before = (m.ws[0], m.d["w"], m.o.m)
    with pytest.raises(UnsupportedOperationError, match=r"self\.ws\[0\] is rebound"):
        cv.capture(m.all_three, cv.spec((3,), "float64"))
    assert m.ws[0] is before[0] and m.d["w"] is before[1] and m.o.m is before[2]
    assert np.array_equal(m.all_three(np.ones(3)), np.zeros(3))  # eager works on the object
