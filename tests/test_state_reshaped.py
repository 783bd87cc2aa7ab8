"""An outside array made by a reshape (``W = np.arange(9.0).reshape(3, 3)``: the memory's owner
is the 1-D ``arange``) is written and read as an index of the owner's C-order reshape
(capviz/trace/state.py ``view_path``): ``W -= g`` and ``W += W.T * g[0]`` capture and replay as
eager NumPy computes them (they were refused with a fix recommending what the code did)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv

W = np.arange(9.0).reshape(3, 3)


def step(g):
    global W
    W += W.T * g[0]
    return g * 1.0


def step_twin(w, g):
    w += w.T * g[0]
    return g * 1.0


def test_a_transposed_read_of_a_reshaped_global_before_its_write_is_a_view_state():
    global W
    W = np.arange(9.0).reshape(3, 3)
    twin = W.copy()
    graph = cv.capture(step, cv.spec((2,), "float64"))
    assert np.array_equal(W, np.arange(9.0).reshape(3, 3))  # the capture changed nothing
    assert "a view of %" in str(graph)
    run = graph.compile()
    for k in range(3):
        g = np.array([0.5 + k, 2.0])
        out = graph.replay({"g": g})["out"] if k < 2 else run(g)[0]
        assert np.array_equal(out, step_twin(twin, g))
        assert np.array_equal(W, twin)
    assert W.base is not None and W.base.shape == (9,)  # still a view of the arange


def test_writes_through_views_of_a_reshaped_array_replay_as_eager():
    owner = np.arange(12.0)
    w = owner.reshape(3, 4)
    twin_owner = owner.copy()
    twin = twin_owner.reshape(3, 4)

    def update(g, w):
        left = g * 0.0 + w[:, 1:]   # a read of an index of the reshape, before the writes
        w[:, 1:] -= 0.5 * g         # a write through an index of it
        w -= g.sum()                # a write of the whole (w: the written tensor from here)
        return left.sum() + w[0].sum()

    graph = cv.capture(lambda g: update(g, w), cv.spec((3, 3), "float64"))
    assert np.array_equal(owner, np.arange(12.0))
    for k in range(2):
        g = np.full((3, 3), 0.25 * (k + 1))
        assert graph.replay({"g": g})["out"] == update(g, twin)
        assert np.array_equal(owner, twin_owner)
    returned = graph.replay({"g": np.ones((3, 3))}, state="return")
    assert np.array_equal(owner, twin_owner)  # state="return" writes nothing
    (new,) = returned.states.values()
    assert new.shape == (12,) and not np.array_equal(new, owner)


def test_a_view_that_is_no_index_of_any_reshape_is_still_refused_naming_the_read():
    base = np.arange(16.0).reshape(4, 4)
    bits = base.view(np.int64)[0]  # another dtype: no index of any reshape of base's memory

    def update(g):
        d = g.astype(np.int64) * 0 + bits
        base[0] += g
        return d

    with pytest.raises(cv.UnsupportedOperationError, match=(
            r"a write into an ndarray from outside is not supported by capviz.\ncapviz cannot "
            r"record it: the capture read bits at .*test_state_reshaped.py:\d+ in update before "
            r"this write, through a view capviz cannot map back to an index of it \(another "
            r"dtype, a reshape of memory that is not C-contiguous\)")):
        cv.capture(update, cv.spec((4,), "float64"))


def test_rebinding_a_reshaped_global_is_refused_a_new_view_of_its_memory_is_not():
    global W
    W = np.arange(9.0).reshape(3, 3)
    graph = cv.capture(step, cv.spec((2,), "float64"))
    assert [n.name for n in graph.state_nodes if "of" not in n.params] == ["W"]
    owner = W.base  # (taken after the capture: a name for it would name the state)
    W = owner.reshape(3, 3)  # another view of the same memory: what a call writes too
    twin = W.copy()
    g = np.array([1.0, 0.0])
    graph.replay({"g": g})
    step_twin(twin, g)
    assert np.array_equal(W, twin)
    W = np.zeros((3, 3))  # a reset: a call would write the new array, no view of the old one
    try:
        with pytest.raises(cv.ReplayInputError, match=re.escape(
                "W was rebound after the capture (recorded at ")) as err:
            graph.replay({"g": g})
        assert str(err.value).endswith(
            "the graph reads and writes the array it held then, where a call would use the one "
            "it holds now. Fix: capture again (the state is the array that owns the memory W "
            "viewed then, float64[9])")
        assert not W.any() and np.array_equal(owner.reshape(3, 3), twin)
    finally:
        W = np.arange(9.0).reshape(3, 3)
