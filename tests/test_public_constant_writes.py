"""A write into ``cv.constant(a)`` of an outside array is a write into ``a`` (eagerly
``cv.constant`` returns ``a`` itself), whatever NumPy spelling makes it. capviz quotes
``b = cv.constant(a), then np.add.at(b, idx, v)`` as the fix of ``np.add.at`` into an
ndarray; before stop 35 the ``ufunc.at``, ``np.put``, ``t.put`` and ``np.putmask`` spellings
recorded no state, so the fix made the program silent: replays never wrote ``a`` where each
eager call did (found by the public-program census, tests/test_public_models.py)."""

import numpy as np
import pytest

import capviz as cv
from tests.helpers.public_census import Program, run

XS = [np.array([4.0, 1.0, 1.0, 3.0, 0.0, 2.0]), np.array([2.0, 2.0, 5.0, 0.0, 1.0, 3.0]),
      np.array([0.0, 3.0, 3.0, 3.0, 4.0, 1.0])]


class Counts:
    def __init__(self):
        self.c = np.array([5.0, 3.0, 4.0, 1.0, 0.0, 2.0])


def _idx(x):
    return x.astype(np.int64)


WRITES = {
    "np.add.at": lambda c, x: np.add.at(cv.constant(c), _idx(x), 1.0),
    "np.subtract.at": lambda c, x: np.subtract.at(cv.constant(c), _idx(x), x),
    "np.maximum.at": lambda c, x: np.maximum.at(cv.constant(c), _idx(x), x * 2.0),
    "np.put": lambda c, x: np.put(cv.constant(c), [0, 2], x[:2]),
    "t.put": lambda c, x: cv.constant(c).put([1], x[:1]),
    "np.putmask": lambda c, x: np.putmask(cv.constant(c), x > 2, x),
    "t.sort": lambda c, x: cv.constant(c).sort(),
    "t.fill": lambda c, x: cv.constant(c).fill(x[0]),
    "np.copyto": lambda c, x: np.copyto(cv.constant(c), x),
    "np.place": lambda c, x: np.place(cv.constant(c), np.arange(6) > 2, x[:3]),
    "setitem": lambda c, x: cv.constant(c).__setitem__(slice(1, 3), x[:2]),
    "+=": lambda c, x: cv.constant(c).__iadd__(x),
    "out=": lambda c, x: np.add(x, 1.0, out=cv.constant(c)),
}


def _program(write, read_back):
    def setup():
        counts = Counts()

        def step(x):
            write(counts.c, x)
            return cv.constant(counts.c) * 1.0 if read_back else x * 2.0

        return Program(step, [[x] for x in XS], lambda: {"counts.c": counts.c})

    return setup


@pytest.mark.parametrize("read_back", [False, True], ids=["state", "read back"])
@pytest.mark.parametrize("spelling", WRITES)
def test_a_write_into_cv_constant_of_an_outside_array_replays_as_each_call(spelling,
                                                                            read_back):
    verdict = run(_program(WRITES[spelling], read_back))
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)
    assert [n.name for n in verdict.graph.state_nodes] == ["counts.c"]


def test_the_quoted_fix_of_np_add_at_into_an_ndarray_replays_as_eager():
    """The refusal's own fix, applied: the histogram counts every call as eager calls do."""
    edges = np.linspace(-2.0, 2.0, 6)
    counts = np.zeros(5, dtype=np.int64)

    def add(x):
        idx = np.clip(np.searchsorted(edges, x) - 1, 0, 4)
        np.add.at(cv.constant(counts), idx, 1)
        return cv.constant(counts) / cv.constant(counts).sum()

    graph = cv.capture(add, cv.spec((6,), "float64"))
    twin = np.zeros(5, dtype=np.int64)
    for x in XS:
        got = graph.replay({"x": x - 2.0})["out"]
        idx = np.clip(np.searchsorted(edges, x - 2.0) - 1, 0, 4)
        np.add.at(twin, idx, 1)
        assert got.tobytes() == (twin / twin.sum()).tobytes()
        assert counts.dtype == twin.dtype and counts.tobytes() == twin.tobytes()


class Held:
    def __init__(self):
        self.c = np.arange(6.0)
        self.v = self.c[::2]
        self.M = np.arange(6.0).reshape(2, 3)


VIEW_WRITES = {  # hostile review 7, finding 3: silent on 00d0622, every spelling
    "np.add.at into cv.constant(a[3:])":
        lambda h, x: np.add.at(cv.constant(h.c[3:]), _idx(x) % 3, 1.0),
    "np.add.at into cv.constant(a held view)":
        lambda h, x: np.add.at(cv.constant(h.v), _idx(x)[:3] % 3, x[:3]),
    "np.put into cv.constant(M.T)": lambda h, x: np.put(cv.constant(h.M.T), [0, 1, 4], x[:3]),
    "np.add.at into cv.constant(M[0])":
        lambda h, x: np.add.at(cv.constant(h.M[0]), _idx(x) % 3, 1.0),
    "setitem into cv.constant(a[3:])": lambda h, x: cv.constant(h.c[3:]).__setitem__(0, x[0]),
    "+= into cv.constant(a[3:])": lambda h, x: cv.constant(h.c[3:]).__iadd__(x[:3]),
    "out=cv.constant(a[3:])": lambda h, x: np.add(x[:3], 1.0, out=cv.constant(h.c[3:])),
    "setitem into cv.constant(a held view)": lambda h, x: cv.constant(h.v).__setitem__(
        slice(None), x[:3]),
    "a view of cv.constant(a) written": lambda h, x: np.add.at(cv.constant(h.c)[1:], [0], x[0]),
    "a view of cv.constant(a) set": lambda h, x: cv.constant(h.c)[2:4].__setitem__(0, x[1]),
}


@pytest.mark.parametrize("spelling", VIEW_WRITES)
def test_a_write_into_cv_constant_of_a_view_or_a_view_of_it_replays_as_each_call(spelling):
    def setup():
        held = Held()

        def step(x):
            VIEW_WRITES[spelling](held, x)
            return x * 2.0

        return Program(step, [[x] for x in XS], lambda: {"c": held.c, "M": held.M})

    verdict = run(setup)
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)
    assert verdict.graph.state_nodes  # a state of held.c or held.M, written back by replays


class Emissions:
    def __init__(self, own):
        self.B = np.arange(15.0).reshape(3, 5)
        if own:
            self.B = self.B.copy()

    def step(self, obs):
        col = cv.constant(self.B)[:, obs[0]]  # basic index: a view of B, eagerly
        col += 1.0
        return col * 1.0


def test_a_view_of_cv_constant_by_a_0d_tensor_written_writes_the_table():
    """Review 7 (finding 3, more): ``cv.constant(self.B)[:, obs[0]]`` is a view of B eagerly,
    and ``col += 1.0`` writes B; the replays write it too."""
    def setup():
        hmm = Emissions(own=True)
        calls = [[np.array([1, 0])], [np.array([3, 2])], [np.array([1, 1])]]
        return Program(hmm.step, calls, lambda: {"B": hmm.B})

    verdict = run(setup)
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)


def test_a_view_of_cv_constant_of_a_reshaped_array_written_is_refused_with_the_fix():
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(Emissions(own=False).step, cv.spec(2, "int64"))
    what, why, fix = str(info.value).splitlines()
    line = Emissions.step.__code__.co_firstlineno + 2
    assert what.startswith(f"`col += 1.0` at {__file__}:{line} in step: ")
    assert why == ("capviz cannot record it: cv.constant(a) is written through a view of it, "
                   "and a is itself a view of another array's memory (a reshape, a slice), "
                   "which capviz cannot follow through both.")
    assert fix == ("Fix: write a itself where the index holds no tensor (r = a[0]; r[1] = t), "
                   "else make a an array of its own where it is made (a = np.arange(6.0)"
                   ".reshape(2, 3).copy()).")
