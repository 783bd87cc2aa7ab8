"""A state is named by where the user holds it (``model.m``, ``model.rng``, a global,
``opt.params[1]``); a replay after the user rebound that name (``model.m = np.zeros(3)``, a
reset) would write the old array and draw from the old generator while an eager call uses the
new ones, so it is refused by name with the fix (capviz/replay/state.py ``check_places``)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv


class Model:
    def __init__(self):
        self.m = np.zeros(3)
        self.rng = np.random.default_rng(0)

    def __call__(self, g):
        self.m += g
        return g + self.rng.standard_normal(3)


def eager_step(m, rng, g):
    m += g
    return g + rng.standard_normal(3)


def test_a_rebound_array_attribute_is_refused_by_name_and_states_gives_the_fix():
    model = Model()
    graph = cv.capture(model, cv.spec((3,), "float64"))
    old = model.m  # still alive: the replay would write it, silently
    model.m = np.zeros(3)
    model.rng = np.random.default_rng(123)
    g = np.ones(3)
    with pytest.raises(cv.ReplayInputError, match=re.escape(
            "model.m was rebound after the capture (recorded at ")) as err:
        graph.replay({"g": g})
    assert "the graph reads and writes the array it held then, where a call would use the " \
        "one it holds now. Fix: pass the live one, graph.replay(inputs, states={'model.m': " \
        "model.m}), or capture again" in str(err.value)
    assert not old.any() and not model.m.any()  # nothing written
    # the fix: both rebound states given
    twin_m, twin_rng = np.zeros(3), np.random.default_rng(123)
    out = graph.replay({"g": g}, states={"model.m": model.m, "model.rng": model.rng})["out"]
    assert np.array_equal(out, eager_step(twin_m, twin_rng, g))
    assert np.array_equal(model.m, twin_m) and not old.any()


def test_a_rebound_generator_attribute_is_refused_by_name():
    model = Model()
    graph = cv.capture(model, cv.spec((3,), "float64"))
    model.rng = np.random.default_rng(123)
    with pytest.raises(cv.ReplayInputError, match=re.escape(
            "model.rng was rebound after the capture (recorded at ")) as err:
        graph.replay({"g": np.ones(3)}, states={"model.m": model.m})
    assert "the graph draws from the generator it held then, where a call would draw from " \
        "the one it holds now. Fix: pass the live one, graph.replay(inputs, states={" \
        "'model.rng': model.rng}), or capture again" in str(err.value)
    with pytest.raises(cv.ReplayInputError, match=r"^model\.rng was rebound"):
        graph.replay({"g": np.ones(3)}, state="return")  # a returning replay reads it too
    # the same generator, advanced by a call, is no rebinding: replays draw on from it
    model.rng = np.random.default_rng(5)
    graph = cv.capture(model, cv.spec((3,), "float64"))
    twin_m, twin_rng = model.m.copy(), np.random.default_rng(5)
    for _ in range(2):
        out = graph.replay({"g": np.ones(3)})["out"]
        assert np.array_equal(out, eager_step(twin_m, twin_rng, np.ones(3)))
    assert np.array_equal(model.m, twin_m)


M_GLOBAL = np.zeros(3)


def bump(g):
    global M_GLOBAL
    M_GLOBAL += g
    return g * 2.0


def test_a_rebound_global_is_refused_and_values_written_in_place_are_not():
    global M_GLOBAL
    graph = cv.capture(bump, cv.spec((3,), "float64"))
    M_GLOBAL[:] = 5.0  # the same array, new values: replays read them, as a call does
    graph.replay({"g": np.ones(3)})
    assert M_GLOBAL.tolist() == [6.0, 6.0, 6.0]
    kept = M_GLOBAL
    M_GLOBAL = np.zeros(3)
    try:
        with pytest.raises(cv.ReplayInputError, match=re.escape(
                "M_GLOBAL was rebound after the capture")):
            graph.replay({"g": np.ones(3)})
        assert kept.tolist() == [6.0, 6.0, 6.0] and not M_GLOBAL.any()
        compiled = graph.compile()
        with pytest.raises(cv.ReplayInputError, match=re.escape(
                "M_GLOBAL was rebound after the capture")):
            compiled(np.ones(3))
    finally:
        M_GLOBAL = np.zeros(3)


class Optimiser:
    def __init__(self):
        self.params = [np.ones(4) for _ in range(3)]

    def step(self, g):
        for w in self.params:
            w -= 0.5 * g
        return g * 1.0


def test_a_rebound_list_item_is_refused_naming_its_path_the_others_replay():
    opt = Optimiser()
    graph = cv.capture(opt.step, cv.spec((4,), "float64"))
    assert [n.name for n in graph.state_nodes] == [
        "opt.params[0]", "opt.params[1]", "opt.params[2]"]
    run = graph.compile()
    run(np.ones(4))
    assert all(w.tolist() == [0.5] * 4 for w in opt.params)
    old = opt.params[1]
    opt.params[1] = np.ones(4)  # a reset of one parameter
    for replay in (lambda: graph.replay({"g": np.ones(4)}), lambda: run(np.ones(4))):
        with pytest.raises(cv.ReplayInputError, match=re.escape(
                "opt.params[1] was rebound after the capture")):
            replay()
    assert [w.tolist() for w in opt.params] == [[0.5] * 4, [1.0] * 4, [0.5] * 4]
    assert old.tolist() == [0.5] * 4
    del old  # the old array freed: still named a rebinding, not a freed array
    with pytest.raises(cv.ReplayInputError, match=re.escape(
            "opt.params[1] was rebound after the capture")):
        graph.replay({"g": np.ones(4)})
    fresh = Optimiser()
    graph = cv.capture(fresh.step, cv.spec((4,), "float64"))
    popped = fresh.params.pop()  # alive, but the path leads nowhere now
    with pytest.raises(cv.ReplayInputError, match=re.escape(
            "fresh.params[2] was rebound after the capture")):
        graph.replay({"g": np.ones(4)})
    assert popped.tolist() == [1.0] * 4
