"""A helper memoised with ``functools.lru_cache`` that builds a constant with NumPy's
creation functions inside a capture (capviz/randomness/memoised.py; review 3, finding 24): its
cache is cleared when the scope exits, so the user's next eager call gets an ndarray, not a
dead capture tensor (it raised ScopeClosedError)."""

from __future__ import annotations

import functools

import numpy as np

import capviz as cv


@functools.lru_cache(maxsize=8)
def causal_mask(n):
    return np.tril(np.ones((n, n)))


@functools.cache
def scale_table(n):
    return np.arange(n) * 0.5


def attend(x):
    return (x @ x.T) * causal_mask(x.shape[0])


class Step:
    def __init__(self):
        self.W = np.ones(4)

    def step(self, x):  # a state: cv.capture captures twice
        self.W += x * scale_table(4)
        return x * causal_mask(4)[1]


def test_the_users_next_eager_call_of_a_memoised_helper_works_after_the_capture():
    causal_mask.cache_clear()
    x = np.arange(16.0).reshape(4, 4)
    graph = cv.capture(attend, cv.spec((4, 4), "float64"))
    assert causal_mask.cache_info().currsize == 0  # cleared: it held a capture tensor
    eager = attend(x)  # raised ScopeClosedError before the change
    assert type(causal_mask(4)) is np.ndarray
    assert np.array_equal(graph.replay({"x": x})["out"], eager)


def test_a_stateful_step_with_memoised_helpers_replays_as_calls_do():
    causal_mask.cache_clear()
    scale_table.cache_clear()
    m, twin = Step(), Step()
    graph = cv.capture(m.step, cv.spec((4,), "float64"))
    assert causal_mask.cache_info().currsize == scale_table.cache_info().currsize == 0
    for i in range(2):
        x = np.full(4, 1.0 + i)
        assert np.array_equal(graph.replay({"x": x})["out"], twin.step(x))
        assert m.W.tobytes() == twin.W.tobytes()
    assert type(scale_table(4)) is np.ndarray


def test_a_cache_the_capture_only_read_keeps_its_entries():
    causal_mask.cache_clear()
    causal_mask(4)  # cached eagerly, before the capture: an ndarray
    graph = cv.capture(attend, cv.spec((4, 4), "float64"))
    assert causal_mask.cache_info().currsize == 1 and type(causal_mask(4)) is np.ndarray
    x = np.eye(4)
    assert np.array_equal(graph.replay({"x": x})["out"], attend(x))
