"""A helper memoised with ``functools.lru_cache`` that builds a constant with NumPy's
creation functions inside a capture (capviz/randomness/memoised.py; review 3, finding 24): its
cache is cleared when the scope exits, so the user's next eager call gets an ndarray, not a
dead capture tensor (it raised ScopeClosedError)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import UnsupportedOperationError
from tests.helpers import memo_helpers as H


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


# --- memo dicts written by hand (review 4, finding 12: /tmp/review4/memo24.py) ----------------

def _masked(x):
    return (x @ x.T) * H.mask(x.shape[0])


_LAYER = H.Layer()


def _layer_masked(x):
    return (x @ x.T) * _LAYER.mask(x.shape[0])


@pytest.mark.parametrize("fn, cache", [(_masked, H.MEMO), (_layer_masked, H.Layer.shared)],
                         ids=["module-memo", "class-cache"])
def test_a_memo_dict_the_capture_filled_is_given_its_items_back(fn, cache):
    cache.clear()
    x = np.arange(16.0).reshape(4, 4)
    graph = cv.capture(fn, cv.spec((4, 4), "float64"))
    assert cache == {}  # the capture's entry removed: it held a capture tensor
    eager = fn(x)  # raised ScopeClosedError before the change
    assert type(cache[4]) is np.ndarray
    assert graph.replay({"x": x})["out"].tobytes() == eager.tobytes()
    assert graph.replay({"x": x + 1})["out"].tobytes() == fn(x + 1).tobytes()


def test_a_memo_entry_made_before_the_capture_is_kept():
    H.MEMO.clear()
    kept = H.mask(4)
    graph = cv.capture(_masked, cv.spec((4, 4), "float64"))
    assert H.MEMO == {4: kept} and H.MEMO[4] is kept
    x = np.eye(4)
    assert graph.replay({"x": x})["out"].tobytes() == _masked(x).tobytes()


def test_the_scope_form_gives_a_memo_dict_its_items_back():
    H.MEMO.clear()
    x = np.arange(9.0).reshape(3, 3)
    with cv.CaptureDevice().capture_scope() as scope:
        scope.output(_masked(scope.input("x", (3, 3), "float64")))
    assert H.MEMO == {}
    (out,) = scope.graph.replay({"x": x}).values()
    assert out.tobytes() == _masked(x).tobytes()


def test_a_tensor_stored_over_an_array_of_a_module_dict_is_refused_naming_it():
    before = H.TABLES["pos"]
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(H.shift_table, cv.spec((4,), "float64"))
    what = str(info.value).splitlines()[0]
    assert what.startswith("`TABLES[\"pos\"] = TABLES[\"pos\"] + x` at ")
    assert what.endswith("in shift_table: TABLES['pos'] is rebound to a value of the capture.")
    assert H.TABLES["pos"] is before  # put back
