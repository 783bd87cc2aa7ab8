"""The randomness hooks' plan (capviz/randomness/hooks.py) is made once and again only when
something it is made from changed: every capture used to make ~160 hooks anew (a third of a
capture of a 200-op chain)."""

import random

import numpy as np

import capviz as cv
from capviz.randomness import hooks


def test_the_plan_is_made_once():
    first = hooks._plan()
    assert hooks._plan() is first
    cv.capture(lambda x: x * 2.0, cv.spec((3,), "float64"))
    assert hooks._plan() is first


def test_a_patched_draw_gets_a_new_hook_wrapping_the_patch(monkeypatch):
    first = hooks._plan()

    def rand(*args):
        return np.zeros(args)

    monkeypatch.setattr(np.random, "rand", rand)
    again = hooks._plan()
    assert again is not first
    wrapped = [hook for target, name, hook, _ in again
               if target is np.random and name == "rand"]
    assert [hook.__wrapped__ for hook in wrapped] == [rand]
    monkeypatch.undo()
    assert hooks._plan() is not again


def test_a_new_global_generator_or_python_random_instance_gets_a_new_plan(monkeypatch):
    first = hooks._plan()
    monkeypatch.setattr(np.random.mtrand, "_rand", np.random.RandomState(1))
    second = hooks._plan()
    assert second is not first
    monkeypatch.undo()
    monkeypatch.setattr(random._inst, "gauss", lambda mu, sigma: 0.0)  # an instance attribute
    assert hooks._plan() is not second


def test_a_cached_plan_still_records_a_draw_and_refuses_a_reseed():
    hooks._plan()

    def draw(x):
        return x * np.random.rand()

    x = np.ones(3)
    for _ in range(2):  # the second capture installs the cached plan
        graph = cv.capture(draw, cv.spec((3,), "float64"))
        np.random.seed(5)
        replayed = graph.replay({"x": x})["out"]
        np.random.seed(5)
        assert replayed.tobytes() == draw(x).tobytes()
    for _ in range(2):
        try:
            cv.capture(lambda x: (np.random.seed(0), x * 2.0)[1], cv.spec((3,), "float64"))
        except cv.SeedViolationError:
            continue
        raise AssertionError("SeedViolationError not raised")
