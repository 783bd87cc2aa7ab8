"""``cv.constant(a)`` of an outside array is ``a`` itself eagerly, so a name holding it sees every
later write of ``a``: ``level = cv.constant(self.level); self.level[...] = 0.5 * level + x;
return level * 1.0`` returns the new level. capviz quotes cv.constant as the fix for NumPy's
reads of an array the capture writes ("write each read of the written array as
cv.constant(self.level)"), and a user applying it once per step into a name made the program
silent: the first capture read the value from before the write, from the first call on (found
by census round 2, stop 36: Holt's smoothing, tests/test_public_simulations.py). Views of it
(``cv.constant(B)[:, 0]``) and ``cv.constant`` of a view (``cv.constant(self.c[3:])``) the same.
"""

import numpy as np
import pytest

import capviz as cv
from tests.helpers.public_census import Program, run

XS = [np.random.default_rng(k).standard_normal(3) for k in range(3)]


class Held:
    def __init__(self):
        self.a = np.arange(3.0)
        self.A = np.arange(9.0).reshape(3, 3).copy()
        self.c = np.arange(6.0)
        self.z = np.zeros(())


def _held_write_read(h, x):
    c = cv.constant(h.a)
    h.a[...] = 0.5 * c + x
    return c * 1.0


def _view_of_held(h, x):
    c = cv.constant(h.a)
    v = c[1:]
    h.a[1] = x[0]
    return v * 1.0


def _two_held(h, x):
    c = cv.constant(h.a)
    d = cv.constant(h.a)
    h.a += x
    return c + d


def _two_held_with_views(h, x):
    v = cv.constant(h.a)[:2]
    w = cv.constant(h.a)[1:]
    h.a += x
    return v.sum() + w.sum()


def _two_writes(h, x):
    c = cv.constant(h.a)
    h.a += x
    h.a *= cv.constant(np.float64(0.5))
    return c.copy()


def _reversed_view(h, x):
    c = cv.constant(h.a)
    v = c[::-1]
    h.a[0] = x.sum()
    return v + c


def _column(h, x):
    col = cv.constant(h.A)[:, 0]
    h.A[0, 0] = x.sum()
    return col * 1.0


def _transposed(h, x):
    c = cv.constant(h.A)
    h.A += x[:, None]
    return c.T @ x


def _constant_of_a_view(h, x):
    v = cv.constant(h.c[3:])
    h.c[3] = x[0]
    return v * 1.0


def _constant_of_a_view_root_written(h, x):
    v = cv.constant(h.c[3:])
    h.c[3:] += x
    return v * 1.0


def _zero_d_held(h, x):  # refused before ("a view capviz cannot map back"), silent warm
    c = cv.constant(h.z)
    h.z += x.sum()
    return c * 1.0


def _zero_d_read_before_the_write(h, x):  # Welford's `delta = x - cv.constant(self.mean)`
    y = x - cv.constant(h.z)
    h.z += 0.1 * y.mean()
    return y


def _value_before_the_write(h, x):  # exact before too: y holds the value from before
    c = cv.constant(h.a)
    y = c * 2.0
    h.a -= 0.1 * y
    return y


HELD = {
    "held, the array written, read": _held_write_read,
    "a view of it taken, the array written, the view read": _view_of_held,
    "two of it, both read": _two_held,
    "two of it, a view of each": _two_held_with_views,
    "two writes, then read": _two_writes,
    "a reversed view": _reversed_view,
    "a column of a 2-D array": _column,
    "a 2-D array read transposed": _transposed,
    "cv.constant of a view, the array written at it": _constant_of_a_view,
    "cv.constant of a view, the array's view written": _constant_of_a_view_root_written,
    "a value computed before the write": _value_before_the_write,
    "a 0-d array held across its write": _zero_d_held,
    "a 0-d array read before its write": _zero_d_read_before_the_write,
}


def _setup(body):
    def setup():
        h = Held()
        return Program(lambda x: body(h, x), [[x] for x in XS],
                       lambda: {"a": h.a, "A": h.A, "c": h.c, "z": h.z})
    return setup


@pytest.mark.parametrize("spelling", HELD)
def test_a_held_constant_sees_a_later_write_of_its_array_as_eagerly(spelling):
    """Silent on main before (10 of 11: the first capture's replays read the value from
    before the write); each replays as its three eager calls."""
    verdict = run(_setup(HELD[spelling]))
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)


class Smoother:
    def __init__(self):
        self.level = np.zeros(3)

    def step(self, x):
        level = cv.constant(self.level)
        self.level[...] = 0.5 * level + x
        return level * 1.0


@pytest.mark.parametrize("warm", [False, True])
def test_a_first_and_a_later_capture_replay_as_eager(warm):
    eager = Smoother()
    want = [eager.step(x.copy()) for x in XS]
    model = Smoother()
    if warm:  # a later capture of the same function (lifted: exact before too)
        cv.capture(model.step, cv.spec((3,), np.float64))
    graph = cv.capture(model.step, cv.spec((3,), np.float64))
    for x, expected in zip(XS, want):
        got = graph.replay({graph.inputs[0]: x.copy()})[graph.outputs[0]]
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
    assert np.array_equal(model.level, eager.level)


def _viewed_again(h, x):
    v = cv.constant(h.c[3:])
    w = v[1:]
    h.c[3:] += x
    return w * 1.0


def test_cv_constant_of_a_view_viewed_again_before_the_write_is_refused_with_the_fix():
    """Its own view's storage cannot be put under the state's: refused at the write, never
    silent (it was silent before)."""
    h = Held()

    def step(x):
        return _viewed_again(h, x)

    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(step, cv.spec((3,), np.float64))
    what, why, fix = str(info.value).splitlines()
    line = _viewed_again.__code__.co_firstlineno
    assert what.startswith(f"`h.c[3:] += x` at {__file__}:{line + 3} in _viewed_again: ")
    assert why == (f"capviz cannot record it: cv.constant of a view of it, taken at {__file__}:"
                   f"{line + 1} in _viewed_again and viewed again before this write, is that "
                   "view eagerly and sees the write, which capviz cannot follow through both.")
    assert fix == ("Fix: index cv.constant of the array itself (cv.constant(a)[3:]), or take it "
                   "after the write.")
