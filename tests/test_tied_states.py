"""Order reads of a state that starts with tied values (review 3, finding 26): the second
capture's other values (capviz/trace/recapture.py, ``_reversed_ranks``) break every run of
equal elements against NumPy's first-of-equals order, so ``np.argmax(self.W)`` of
``np.ones(3)`` read before the write is refused, not captured as the constant 0 (a replay
answered 0 forever where the second eager call answers 1)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import UnsupportedOperationError
from capviz.trace.recapture import _reversed_ranks
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)


class Strongest:
    """/tmp/review3/s23.py: which unit is strongest, read before the update."""

    def __init__(self, init):
        self.W = init

    def step(self, x):
        i = np.argmax(self.W)
        self.W -= 0.1 * x
        return x * i


def test_argmax_of_a_state_read_before_its_write_replays_as_eager_on_a_first_capture():
    # 7c2430d: the first capture lifts self.W (its statement writes it), so np.argmax(self.W)
    # is recorded on the state, ties included: four replays as four eager calls
    m, twin = Strongest(np.ones(3)), Strongest(np.ones(3))
    graph = cv.capture(m.step, cv.spec((3,), "float64"))
    rng = np.random.default_rng(1)
    for _ in range(4):
        x = rng.standard_normal(3)
        assert graph.replay({"x": x})["out"].tobytes() == twin.step(x).tobytes()
        assert m.W.tobytes() == twin.W.tobytes()


@pytest.mark.usefixtures("two_passes")  # (where the first capture takes the two passes)
def test_argmax_of_a_tied_state_read_before_its_write_is_refused_at_the_line_using_it():
    m = Strongest(np.ones(3))
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((3,), "float64"))
    what, why, fix = str(info.value).splitlines()
    line = Strongest.step.__code__.co_firstlineno + 3
    assert what == (f"`return x * i` at {__file__}:{line} in step: NumPy's own operators "
                    "computed a value from an array the capture writes, outside the capture's "
                    "sight.")
    assert why.endswith("(it depends on what m.W holds).")
    assert fix.startswith(f"Fix: write line {line - 2} as `i = np.argmax(cv.constant(self.W))`")
    assert m.W.tolist() == [1.0, 1.0, 1.0]


class Fixed(Strongest):
    def step(self, x):  # the message's fix
        i = np.argmax(cv.constant(self.W))
        self.W -= 0.1 * x
        return x * i


def test_the_quoted_fix_replays_as_calls_do():
    m, twin = Fixed(np.ones(3)), Fixed(np.ones(3))
    graph = cv.capture(m.step, cv.spec((3,), "float64"))
    x = np.array([1.0, 0.0, 0.0])
    for _ in range(3):
        assert np.array_equal(graph.replay({"x": x})["out"], twin.step(x))
        assert m.W.tobytes() == twin.W.tobytes()


def _step(read, init):
    source = (f"class M:\n    def __init__(self):\n        self.W = {init}\n"
              f"    def step(self, x):\n        i = {read}\n"
              "        self.W += (x[0] * 0 + 1).astype(self.W.dtype)\n"
              "        return x * i\n")
    space = {"np": np}
    exec(compile(source, "<tied>", "exec"), space)
    return space["M"]().step


@pytest.mark.parametrize("read, init", [
    ("np.argmax(self.W)", "np.zeros(4)"),
    ("np.argmax(self.W)", "np.ones(2)"),
    ("np.argmax(self.W, axis=1)[0]", "np.ones((2, 3))"),  # a row of a tied run
    ("np.argmax(self.W, axis=0)[0]", "np.ones((3, 3))"),
    ("np.argmax(self.W)", "np.zeros(3, np.int64)"),  # a count table
    ("np.argmin(self.W)", "np.zeros(4, np.int32)"),
    ("np.argmin(self.W)", "np.ones(3)"),
    ("np.argsort(self.W, kind='stable')[0]", "np.ones(5)"),
])
def test_order_reads_of_tied_states_are_refused(read, init):
    with pytest.raises(UnsupportedOperationError, match=r"computed a value from an array the "
                                                        r"capture writes"):
        cv.capture(_step(read, init), cv.spec((3,), "float64"))


@pytest.mark.parametrize("flat", [np.ones(3), np.zeros(7), np.array([1.0, 1.0, 0.0, 0.0, 0.0, 2.0]),
                                  np.array([3.0, 1.0, 2.0]), np.ones(12)])
def test_the_planted_values_move_the_first_of_every_run_of_equals(flat):
    values = np.arange(10.0, 10.0 + flat.size)
    out = _reversed_ranks(flat, values)
    assert sorted(out.tolist()) == values.tolist()
    assert np.argmax(out) != np.argmax(flat) and np.argmin(out) != np.argmin(flat)
    distinct = flat[:, None] != flat[None, :]  # every pair that differs compares the other way
    assert np.array_equal((out[:, None] < out[None, :])[distinct],
                          (flat[:, None] > flat[None, :])[distinct])
    if flat.size == 12:  # every row of ones((4, 3)) but the last: its largest is not first
        assert all(np.argmax(row) != 0 for row in out.reshape(4, 3)[:-1])


@pytest.mark.parametrize("flat", [np.zeros(3), np.ones(4), np.zeros(256), np.full(7, -0.0),
                                  np.array([0.0, -0.0, 0.0, -0.0, 0.0]), np.full(9, np.inf),
                                  np.ones(300, np.float32), np.zeros(5, np.int64),
                                  np.zeros(2), np.ones(1)])
def test_a_state_of_equal_elements_gets_the_values_of_the_general_steps(flat, monkeypatch):
    """The one-run shortcut (np.zeros(n): 50 of the benchmark's 100 states) places the values
    as the general steps do, bit for bit (those forced here by a chunk of 2 elements)."""
    values = np.random.default_rng(flat.size).standard_normal(flat.size) * 7
    short = _reversed_ranks(flat, values.copy())
    monkeypatch.setattr("capviz.trace.recapture._CHUNK", 2)
    assert short.tobytes() == _reversed_ranks(flat, values.copy()).tobytes()


def test_many_small_states_are_planted_as_one_at_a_time(monkeypatch):
    """The other values of many small states, drawn in whole passes, are those of the loop per
    state (forced here by a chunk of 2 elements), bit for bit: float64, float32 and float16
    states, tied and not, a value the cast lands on."""
    from capviz.trace.recapture import _other_floats_together

    gen = np.random.default_rng(3)
    arrays = [gen.standard_normal(5), np.zeros(4), np.ones((2, 3), np.float32),
              gen.standard_normal(7).astype(np.float16), np.array([1.0, 1.0, 0.0]),
              np.full(3, -0.0), np.array([np.nan, 2.0, np.inf])]

    def planted():
        with np.errstate(all="ignore"):
            return _other_floats_together(arrays, np.random.default_rng(9))

    whole = planted()
    monkeypatch.setattr("capviz.trace.recapture._CHUNK", 2)
    for a, b, array in zip(whole, planted(), arrays):
        assert a.dtype == b.dtype == array.dtype and a.shape == array.shape
        assert a.tobytes() == b.tobytes()
