"""A whole copy NumPy makes of a state before the capture writes it (``q = self.q.copy()``:
HMC's "work on a copy, store it back", a Kalman filter's ``x = self.x.copy()``; review 3,
finding 29) is a read of the state when the call starts: the second capture sees it bit for bit
the state's start value in the first capture and its planted one in the second, and records it
as a view state of the whole array (capviz/trace/recapture.py). It was refused with the
``W_t = W + x[:0].sum()`` trick. A part of it, or a copy made after the write, stays refused."""

import numpy as np
import pytest

import capviz as cv
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("two_passes")  # (the two passes' refusals: a first
#   capture that lifts its guess runs once, tests/test_first_capture_guessed.py)


class HMC:
    def __init__(self):
        self.q = np.array([0.5, -1.0, 2.0])

    def step(self, p):
        q = self.q.copy()
        q += 0.1 * p
        self.q[:] = q
        return q * 1.0


class Cast:
    def __init__(self):
        self.x = np.array([1.0, -2.0, 3.0], np.float32)

    def step(self, p):
        x = self.x.astype(np.float32)  # a copy too (same dtype)
        x *= p
        self.x += x
        return x + 0.0


class Part:
    def __init__(self):
        self.q = np.array([0.5, -1.0, 2.0])

    def step(self, p):
        q = self.q[:2].copy()  # a part: not the state's value
        q += 0.1 * p[:2]
        self.q[:2] = q
        return p * 1.0


class After:
    def __init__(self):
        self.q = np.array([0.5, -1.0, 2.0])

    def step(self, p):
        self.q += p
        q = self.q.copy()  # after the write: NumPy read the written memory
        q *= 2.0
        return q + 0.0


@pytest.mark.parametrize("make", [HMC, Cast])
def test_a_whole_copy_of_a_state_captures_and_replays_as_eager(make):
    model, eager = make(), make()
    dtype = next(iter(vars(model).values())).dtype
    p = np.array([1.0, 2.0, -3.0], dtype)
    graph = cv.capture(model.step, cv.spec((3,), dtype.name))
    kinds = [(n.kind, "of" in n.params) for n in graph.nodes]
    assert ("state", True) in kinds  # the copy: a view state read when a replay starts
    assert graph.complete and graph.violations == []
    for call in range(2):
        out = graph.replay({"p": p})["out"]
        want = eager.step(p)
        assert out.dtype == want.dtype and np.array_equal(out, want), call
        _same_states(model, eager)
    later = cv.capture(model.step, cv.spec((3,), dtype.name))  # one pass: .copy() recorded
    assert {"copy", "astype"} & {n.op for n in later.nodes if n.kind == "op"}
    out = later.replay({"p": p})["out"]
    assert np.array_equal(out, eager.step(p))
    _same_states(model, eager)


def _same_states(model, eager):
    """(In a function: a loop variable left holding a state is a reference no walk explains,
    and the later capture would take two passes.)"""
    for a, b in zip(vars(model).values(), vars(eager).values()):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("make", [Part, After])
def test_a_part_or_a_copy_after_the_write_stays_refused(make):
    model = make()
    before = model.q.copy()
    with pytest.raises(cv.UnsupportedOperationError, match="outside the capture's sight"):
        cv.capture(model.step, cv.spec((3,), "float64"))
    assert np.array_equal(model.q, before)
