"""A write into ``cv.constant(a)`` of an outside ndarray ``a`` is a write into ``a``, as it is
eagerly, where ``cv.constant`` returns ``a`` itself (review 3, finding 15: the quoted fix
``cv.constant(self.c)[idx] += 1.0`` for ``self.c[idx] += 1.0`` captured with no state and the
replays never counted)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)


class Counts:
    """/tmp/review3/s10.py and m4.py: a count per label, the label a tensor."""

    def __init__(self):
        self.c = np.zeros(4)

    def step(self, idx):
        self.c[idx] += 1.0  # the user's line: refused, with the fix below
        return idx * 1

    def fixed(self, idx):
        cv.constant(self.c)[idx] += 1.0  # the quoted fix, applied to the user's line
        return idx * 1


def test_a_tensor_index_into_an_outside_array_replays_as_eager_on_a_first_capture():
    # the first capture lifts the array the statement writes (7c2430d): self.c is a state
    m, twin = Counts(), Counts()
    graph = cv.capture(m.step, cv.spec((3,), "int64"))
    assert [n.name for n in graph.state_nodes] == ["m.c"]
    for labels in ([0, 1, 3], [2, 2, 0], [0, 1, 3]):
        idx = np.array(labels)
        assert np.array_equal(graph.replay({"idx": idx})["out"], twin.step(idx))
        assert m.c.tobytes() == twin.c.tobytes()


@pytest.mark.usefixtures("two_passes")  # (where the first capture takes the two passes)
def test_the_refusal_of_a_tensor_index_into_an_outside_array_quotes_cv_constant():
    with pytest.raises(cv.DataReadError) as info:
        cv.capture(Counts().step, cv.spec((3,), "int64"))
    assert str(info.value).splitlines()[-1] == (
        "Fix: record the array first: cv.constant(self.c)[idx] (outside a capture cv.constant "
        "returns the array itself).")


@pytest.mark.parametrize("labels, counts", [([0, 1, 3], [2.0, 2.0, 0.0, 2.0]),
                                            ([2, 2, 0], [2.0, 0.0, 2.0, 0.0])])  # (once each)
def test_the_quoted_fix_makes_the_array_a_state_and_replays_count_as_calls_do(labels, counts):
    m, twin = Counts(), Counts()
    graph = cv.capture(m.fixed, cv.spec((3,), "int64"))
    assert [n.name for n in graph.state_nodes] == ["m.c"]
    assert m.c.tolist() == [0.0] * 4  # the capture computes nothing
    idx = np.array(labels)
    for _ in range(2):
        out = graph.replay({"idx": idx})["out"]
        assert np.array_equal(out, twin.fixed(idx))
        assert m.c.tobytes() == twin.c.tobytes()
    assert m.c.tolist() == counts


class Buffer:
    """A constant tensor written in place, then read again (both names see the write), and a
    ufunc writing it through ``out=``."""

    def __init__(self):
        self.buf = np.zeros(3)

    def step(self, x):
        b = cv.constant(self.buf)
        b[0] = x[0]
        np.add(b, x, out=b)
        return b * 2.0 + cv.constant(self.buf)


def test_every_write_into_the_constant_writes_the_array_and_later_reads_see_them():
    m, twin = Buffer(), Buffer()
    graph = cv.capture(m.step, cv.spec((3,), "float64"))
    assert [n.name for n in graph.state_nodes] == ["m.buf"]
    for i in range(2):
        x = np.array([1.0, 2.0, 3.0]) * (i + 1)
        assert np.array_equal(graph.replay({"x": x})["out"], twin.step(x))
        assert m.buf.tobytes() == twin.buf.tobytes()


def test_a_constant_only_read_stays_a_constant():
    table = np.arange(12.0).reshape(4, 3)

    def lookup(labels):
        return cv.constant(table)[labels]

    graph = cv.capture(lookup, cv.spec((2,), "int64"))
    assert graph.state_nodes == [] and [n.name for n in graph.constants] == ["table"]
