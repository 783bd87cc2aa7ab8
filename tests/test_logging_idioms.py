"""Common logging code in training loops replays exactly as eager, or is refused at the user's
line with the one fix that applies, and the fix, applied, replays exactly (issue #20, stop 37):
a 0-d ndarray logged (review 7, finding 23), ``losses.append(loss.item())`` (review 8, finding
18), a dict or a tuple holding a tensor appended (``history.append({"loss": l})``, ``(step,
loss)``), an AverageMeter on Python floats, a cold ``setdefault(k, []).append``.
Each replay is compared with an eager twin: outputs, and the containers' items with their types
(``np.float64`` is not a 0-d ndarray, a tuple is not a list)."""

from __future__ import annotations

import collections

import numpy as np

import capviz as cv

SPEC = cv.spec((3,), "float64")
XS = [np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0]), np.array([3.0, 1.0, -2.0])]


def _same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple, collections.deque)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (np.ndarray, np.generic)):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return a == b


def _replays_as_eager(make, world, given=SPEC, warm=False):
    """Capture ``make()``'s step (after one eager call on both twins where ``warm``), then
    replay it and call the eager twin on each of XS: outputs and ``world(obj)`` the same."""
    eager, captured = make(), make()
    if warm:
        eager.step(XS[0])
        captured.step(XS[0])
    graph = cv.capture(captured.step, given)
    assert _same(world(captured), world(eager))  # (the capture leaves them as it found them)
    for x in XS:
        out = graph.replay({"x": x})
        assert _same(out[next(iter(out))], eager.step(x))
        assert _same(world(captured), world(eager)), (world(captured), world(eager))
    return graph


class ZeroD:
    def __init__(self):
        self.log = []

    def step(self, x):
        self.log.append(np.asarray(x.sum()))
        self.log.append(np.array(x[1]))
        self.log.append(np.asarray(x.mean(), dtype=np.float32))
        self.log.append(x.sum())
        return x * 2.0


def test_a_logged_0d_ndarray_comes_back_a_0d_ndarray_as_eager():
    # review 7, finding 23: np.asarray(x.sum()) was logged back as np.float64
    for warm in (False, True):
        _replays_as_eager(ZeroD, lambda m: m.log, warm=warm)
    m = ZeroD()
    cv.capture(m.step, SPEC).replay({"x": XS[0]})
    assert [type(v) for v in m.log] == [np.ndarray, np.ndarray, np.ndarray, np.float64]
    assert m.log[2].dtype == np.float32 and m.log[2].shape == ()
