"""The scope form's NaN mark carried by NumPy into outside arrays (capviz/trace/marked.py,
review 4, finding 6): closure cells of the stepped function, weights of a mebibyte or more
(copied, put back bit for bit), one past the copy budget (refused with what it holds), and the
arrays the frame holds beyond the names the ``with`` block uses (review 5, finding 3)."""

from __future__ import annotations

import contextlib
import inspect

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import UnsupportedOperationError
from capviz.trace import marked, outside_writes

DATA = np.ones(300_000)  # a module-level data set no block below names


def _momentum(fixed: bool):
    """/tmp/review4/scope1.py A: momentum whose velocity and weight are closure cells."""
    W = np.linspace(-1, 1, 4)
    v = np.zeros(4)

    def step(g):
        nonlocal W
        v[...] -= 0.1 * g
        if fixed:
            W += cv.constant(v)  # the message's fix
        else:
            W += v
        return g * 1.0

    step.W = lambda: W
    step.v = v
    return step


class Big:
    """/tmp/review4/scope1.py B: a weight of 2.3 MiB (too large for the function form's copy)."""

    def __init__(self, n=300_000):
        self.W = np.linspace(-1, 1, n)
        self.v = np.zeros(n)

    def step(self, g):
        self.v -= 0.1 * g
        self.W += self.v
        return g * 1.0

    def fixed(self, g):
        self.v -= 0.1 * g
        self.W += cv.constant(self.v)  # the message's fix
        return g * 1.0


def _lines(err):
    what, why, fix = str(err).splitlines()
    return what, why, fix


def _here(offset: int) -> int:
    return inspect.currentframe().f_back.f_code.co_firstlineno + offset


def test_momentum_on_closure_cells_is_refused_and_both_cells_are_put_back():
    step = _momentum(False)
    line = _here(4)
    with pytest.raises(UnsupportedOperationError) as info:
        with cv.CaptureDevice().capture_scope() as scope:
            scope.output(step(scope.input("g", (4,), "float64")))
    what, why, fix = _lines(info.value)
    assert what == (f"an outside array NumPy wrote unseen at {__file__}:{line} in test_momentum"
                    "_on_closure_cells_is_refused_and_both_cells_are_put_back: NumPy's own "
                    "operators wrote the outside ndarray W, a write no state of the graph "
                    "records.")
    assert why.endswith("(NumPy computed it from v, which held capviz's NaN mark once the "
                        "capture wrote it, so it held [-1. -0.333333 0.333333 1. ] (float64[4]) "
                        "when the capture wrote v and NumPy made it [nan nan nan nan] "
                        "(float64[4]); the capture put it back).")
    assert fix == ("Fix: write W from tensors: read v through cv.constant once the capture "
                   "wrote it (W += cv.constant(v) for W += v), or pass W as an input and return "
                   "its new value.")
    assert step.W().tobytes() == np.linspace(-1, 1, 4).tobytes()
    assert step.v.tobytes() == np.zeros(4).tobytes()


def test_the_closure_fix_captures_and_replays_as_eager_calls_do():
    step, twin = _momentum(True), _momentum(False)
    with cv.CaptureDevice().capture_scope() as scope:
        scope.output(step(scope.input("g", (4,), "float64")))
    assert sorted(n.name for n in scope.graph.state_nodes) == ["W", "v"]
    for i in range(2):
        g = np.full(4, 1.0 + i)
        out = scope.graph.replay({"g": g})
        expected = twin(g)
        assert out[next(iter(out))].tobytes() == expected.tobytes()
        assert step.W().tobytes() == twin.W().tobytes()
        assert step.v.tobytes() == twin.v.tobytes() and step.W().dtype == twin.W().dtype


def test_a_large_weight_numpy_wrote_from_the_mark_is_put_back_bit_for_bit():
    m = Big()
    before = m.W.copy()
    with pytest.raises(UnsupportedOperationError) as info:
        with cv.CaptureDevice().capture_scope() as scope:
            scope.output(m.step(scope.input("g", (300_000,), "float64")))
    what, why, fix = _lines(info.value)
    assert "NumPy's own operators wrote the outside ndarray m.W" in what
    assert "it keeps NumPy's change" not in why and why.endswith("; the capture put it back).")
    assert "NumPy computed it from m.v, which held capviz's NaN mark" in why
    assert fix == ("Fix: write m.W from tensors: read m.v through cv.constant once the capture "
                   "wrote it (m.W += cv.constant(m.v) for m.W += m.v), or pass m.W as an input "
                   "and return its new value.")
    assert m.W.tobytes() == before.tobytes() and not np.isnan(m.W).any()
    assert not m.v.any()


def test_the_large_weights_fix_captures_and_replays_as_eager_calls_do():
    m, twin = Big(1 << 17), Big(1 << 17)
    with cv.CaptureDevice().capture_scope() as scope:
        scope.output(m.fixed(scope.input("g", (1 << 17,), "float64")))
    assert sorted(n.name for n in scope.graph.state_nodes) == ["m.W", "m.v"]
    rng = np.random.default_rng(0)
    for _ in range(2):
        g = rng.standard_normal(1 << 17)
        scope.graph.replay({"g": g})
        twin.step(g)
        assert m.W.tobytes() == twin.W.tobytes() and m.v.tobytes() == twin.v.tobytes()


def test_a_weight_past_the_copy_budget_is_refused_saying_it_holds_the_mark(monkeypatch):
    monkeypatch.setattr(marked, "COPY_BYTES", 1 << 20)
    m = Big()
    with pytest.raises(UnsupportedOperationError) as info:
        with cv.CaptureDevice().capture_scope() as scope:
            scope.output(m.step(scope.input("g", (300_000,), "float64")))
    _, why, _ = _lines(info.value)
    assert why.endswith("(NumPy computed it from m.v, which held capviz's NaN mark once the "
                        "capture wrote it, so it holds that mark now: it is too large (2.3 MiB; "
                        "the scope form copies 1 MiB of arrays) for the capture to have kept a "
                        "copy of, so it could not put it back; set it back from a copy of your "
                        "own).")
    assert np.isnan(m.W).all()  # what the message says
    assert not m.v.any()


def test_large_arrays_are_copied_smallest_first_within_the_budget(monkeypatch):
    """A weight the block reaches is copied before a data set it names (``X[:8]``); past
    :data:`marked.COPY_BYTES` the data set is only fingerprinted (it cost 763 MiB and 1.1 s
    copied whole: /tmp/w20c/scope_cost_named.py)."""
    monkeypatch.setattr(marked, "COPY_BYTES", 3 << 20)
    m = Big()  # m.W, m.v: 2.3 MiB each; m.v becomes a state
    data = np.ones(1 << 19)  # 4 MiB
    with cv.CaptureDevice().capture_scope() as scope:
        scope.output(m.fixed(scope.input("g", (300_000,), "float64")) + data[:300_000])
        noted, kept = scope.recorder.marked_outside
        copied = {item[0] for item in kept.arrays}
        watched = {item[0] for item in noted.watched}
    assert copied == {"m.W"} and {"data", "m.v", "DATA"} <= watched


def test_a_scope_that_writes_no_state_copies_nothing():
    m = Big(8)
    with cv.CaptureDevice().capture_scope() as scope:
        scope.output(scope.input("g", (8,), "float64") * m.W)
        assert scope.recorder.marked_outside is None
    assert scope.graph.complete and outside_writes.OUTSIDE


W_GLOBAL = np.linspace(-1, 1, 4)
V_GLOBAL = np.zeros(4)


def _update(g):
    global W_GLOBAL
    W_GLOBAL += V_GLOBAL  # NumPy adds the marked velocity into the global weight


def _step(g):
    V_GLOBAL[...] -= 0.1 * g
    _update(g)
    return g * 1.0


def test_a_global_a_called_helper_names_is_put_back():
    """The block names only ``_step``; ``_step`` calls ``_update``, whose code names the
    global it writes: the walk follows the functions the code names, two levels."""
    before = W_GLOBAL.copy()
    with pytest.raises(UnsupportedOperationError, match="wrote the outside ndarray W_GLOBAL"):
        with cv.CaptureDevice().capture_scope() as scope:
            scope.output(_step(scope.input("g", (4,), "float64")))
    assert W_GLOBAL.tobytes() == before.tobytes() and not V_GLOBAL.any()


W_CHAIN = np.linspace(-1, 1, 4)
V_CHAIN = np.zeros(4)


def _apply_chain(g):
    V_CHAIN[...] -= 0.1 * g
    W_CHAIN[...] += V_CHAIN  # NumPy's own += carries the mark into the weight


def _update_chain(g):
    _apply_chain(g)


def _train_chain(g):
    _update_chain(g)
    return g * 1.0


def test_a_global_three_helpers_down_is_put_back():
    """Hostile review 5, finding 3: the walk of the block's names (two levels of helpers) missed
    this weight and left it all NaN, captured; the frame's every global is walked now."""
    before = W_CHAIN.copy()
    with pytest.raises(UnsupportedOperationError, match="wrote the outside ndarray W_CHAIN"):
        with cv.CaptureDevice().capture_scope() as scope:
            scope.output(_train_chain(scope.input("g", (4,), "float64")))
    assert W_CHAIN.tobytes() == before.tobytes() and not V_CHAIN.any()


W_OWN = np.linspace(-1, 1, 4)
V_OWN = np.zeros(4)


@contextlib.contextmanager
def _capturing():
    with cv.CaptureDevice().capture_scope() as inner:
        yield inner


def test_a_scope_opened_in_the_users_own_context_manager_puts_the_weight_back():
    """Hostile review 5, finding 3: the scope's frame is the context manager's; its block named
    no weight, and W_OWN was left all NaN, captured."""
    global W_OWN, V_OWN
    before = W_OWN.copy()
    with pytest.raises(UnsupportedOperationError, match="wrote the outside ndarray W_OWN"):
        with _capturing() as scope:
            g = scope.input("g", (4,), "float64")
            V_OWN -= 0.1 * g
            W_OWN += V_OWN
            scope.output(g * 1.0)
    assert W_OWN.tobytes() == before.tobytes() and not V_OWN.any()
