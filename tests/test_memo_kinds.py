"""Memo caches past a plain module or class dict (hostile review 5, finding 9): a dict in a
closure cell, an OrderedDict, a defaultdict, a function attribute, a dict inside a dict, a list
(appended to, or slots), functools.lru_cache on a class or in a closure, each called with a
hashable of the tensor (its shape), functools.cache of a helper returning a dict, an instance's
dict (R6 #6: /work/notes/review6/memo.py), an lru_cache of a namedtuple or a SimpleNamespace
and a memo of SimpleNamespaces (R6 #10: lru_tuple.py). Before: each kept the capture tensor,
and the user's next eager call raised ScopeClosedError. Now the capture finds the container by
what it wrote into it (capviz/randomness/memoised.py) and leaves it as it was before the
capture (an lru_cache: cleared), the next eager call filling it with an ndarray. A value of the
data kept there, and an array stored over, are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import UnsupportedOperationError
from capviz.trace.tensor import Tensor
from tests.helpers import memo_kinds as K

KINDS = ["closure_mask", "ordered_mask", "default_mask", "attribute_mask", "nested_mask",
         "listed_mask", "slot_mask", "lru_mask", "closure_lru_mask", "cached_dict_mask",
         "method_mask", "namedtuple_lru_mask", "namespace_lru_mask", "namespace_memo_mask"]
TRIL = np.tril(np.ones((4, 4)))


def _masked(name):
    mask = getattr(K, name)

    def fn(x):
        return (x @ x.T) * mask(x.shape[0])

    return fn


@pytest.mark.parametrize("name", KINDS)
def test_the_users_next_eager_call_after_the_capture_gets_an_ndarray(name):
    fn = _masked(name)
    graph = cv.capture(fn, cv.spec((4, 4), "float64"))
    made = getattr(K, name)(4)  # raised ScopeClosedError before the change
    assert type(made) is np.ndarray and made.dtype == TRIL.dtype
    assert made.tobytes() == TRIL.tobytes()
    for i in range(3):
        x = np.arange(16.0).reshape(4, 4) * (i + 1) - 3.5
        out = graph.replay({"x": x})["out"]
        eager = fn(x)
        assert out.dtype == eager.dtype and out.tobytes() == eager.tobytes()


def test_a_memo_is_left_as_it_was_before_the_capture():
    slots = list(K.SLOTS)
    graph = cv.capture(_masked("nested_mask"), cv.spec((5, 5), "float64"))
    assert 5 not in K.NESTED["masks"] and K.NESTED["sizes"] == [1, 2]
    graph = cv.capture(_masked("slot_mask"), cv.spec((5, 5), "float64"))
    assert K.SLOTS == slots
    graph.replay({"x": np.eye(5)})
    assert K.SLOTS == slots  # a replay stores nothing there
    assert type(K.slot_mask(5)) is np.ndarray


def _stashed(x):
    return x * K.stash(4, np.tril(np.ones((4, 4))))


def _stashed_outside(x):
    return x * K.stash(3, np.ones((3, 3)) + K.TABLE)


def test_a_value_first_seen_in_a_memo_that_reads_an_outside_array_is_refused():
    K._STASH.clear()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(_stashed_outside, cv.spec((3, 3), "float64"))
    what = str(info.value).splitlines()[0]
    assert what.startswith("`return x * K.stash(3, np.ones((3, 3)) + K.TABLE)` at ")
    assert what.endswith(" in _stashed_outside: _STASH[3] keeps a value of the capture.")
    assert K._STASH == {}  # removed: no dead tensor left there


def test_a_memo_first_seen_holding_the_capture_s_value_gets_what_eager_leaves():
    K._STASH.clear()
    graph = cv.capture(_stashed, cv.spec((4, 4), "float64"))
    assert type(K._STASH[4]) is np.ndarray and K._STASH[4].tobytes() == TRIL.tobytes()
    x = np.arange(16.0).reshape(4, 4)
    assert graph.replay({"x": x})["out"].tobytes() == _stashed(x).tobytes()


class Step:
    """A stateful step (cv.capture captures it twice) reading memos of six kinds."""

    def __init__(self):
        self.W = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(6, 1) * np.ones(6, np.float32)

    def step(self, x):
        self.W -= 0.5 * x * K.ordered_mask(6)[2].astype(np.float32)
        self.W += K.slot_mask(6).astype(np.float32) * x.sum()
        return ((self.W * K.closure_mask(6)).sum(0) + K.lru_mask(6)[5]
                + K.cached_dict_mask(6)[4] * K.method_mask(6)[3])


def test_a_stateful_step_reading_memos_replays_as_calls_do():
    m, twin = Step(), Step()
    graph = cv.capture(m.step, cv.spec((6,), "float32"))
    for i in range(3):
        x = np.arange(6, dtype=np.float32) * (0.25 + i)
        out, eager = graph.replay({"x": x})["out"], twin.step(x)
        assert out.dtype == eager.dtype and out.tobytes() == eager.tobytes()
        assert m.W.dtype == twin.W.dtype and m.W.tobytes() == twin.W.tobytes()


def _log(x):
    return K.logged(x) * 3.0


def test_a_value_of_the_data_kept_in_a_container_is_refused_naming_it():
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(_log, cv.spec((4,), "float64"))
    lines = str(info.value).splitlines()
    assert lines[0].startswith("`seen.append(x * 2.0)` at ")
    line = K.logged.__code__.co_firstlineno + 1  # seen.append(x * 2.0)
    assert lines[0].endswith(f"memo_kinds.py:{line} in logged: seen[0] keeps a value of the "
                             "capture.")
    assert lines[1] == (
        "capviz cannot record it: the value is computed from the data (an input, a state, a "
        "draw, an array from outside), so the capture cannot know what a call leaves in that "
        "list, dict or cache, and a replay cannot store into one (the capture removed it from "
        "seen).")
    assert lines[2] == (
        "Fix: return the value and store what the replay returns, or keep it in an ndarray the "
        "call writes in place (buf[...] = value), which the capture records as a state.")
    seen = K.logged.__closure__[0].cell_contents
    assert seen == []  # removed: no dead tensor left there
    assert K.logged(np.ones(4)).tobytes() == np.full(4, 2.0).tobytes()
    seen.clear()


def test_the_scope_forms_own_list_is_left_to_it():
    outs = []
    with cv.CaptureDevice().capture_scope() as scope:
        x = scope.input("x", (3,), "float64")
        outs.append(x * 2.0)
        scope.output(outs[-1])
    assert len(outs) == 1 and type(outs[0]) is Tensor  # the user's own, in their block


def test_a_counter_kept_in_a_closures_dict_is_refused_and_its_fix_replays_as_calls():
    """R6 on c788b32: ``box["n"] = box["n"] + np.ones(1)`` in a helper's closure dict was
    given its old array back and every replay gave 1.0 where calls give 1.0, 2.0, 3.0, silently
    (on 2ca97ac the user's next eager call raised ScopeClosedError). Refused as the walk's
    containers are, with the in-place write as the fix; the fix captures and replays as calls."""
    box = K.bump.__closure__[0].cell_contents
    before = box["n"]
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(lambda x: x * K.bump(), cv.spec((1,), "float64"))
    line = K.bump.__code__.co_firstlineno + 1
    what, why, fix = str(info.value).splitlines()
    assert what.startswith('`box["n"] = box["n"] + np.ones(1)` at ')
    assert what.endswith(f"memo_kinds.py:{line} in bump: box['n'] is rebound to a value of the "
                         "capture.")
    assert why == ("capviz cannot record it: a replay computes values, writes arrays in place "
                   "and binds a new array only to a name that held an array of its shape and "
                   "dtype that nothing else holds, so it would compute from the old array "
                   "every time (the capture put the original object back).")
    assert fix == 'Fix: write in place: box["n"] += np.ones(1) (the capture records it as a state).'
    assert box["n"] is before and before.tobytes() == np.zeros(1).tobytes()

    fixed = K.bump_in_place
    start = fixed.__closure__[0].cell_contents["n"].copy()
    graph = cv.capture(lambda x: x * fixed(), cv.spec((1,), "float64"))
    outs = [graph.replay({"x": np.full(1, 2.0)})["out"] for _ in range(3)]
    fixed.__closure__[0].cell_contents["n"][...] = start
    eager = [np.full(1, 2.0) * fixed() for _ in range(3)]
    assert [o.tobytes() for o in outs] == [e.tobytes() for e in eager]
    assert [o.dtype for o in outs] == [e.dtype for e in eager]


def test_a_memo_local_to_the_code_calling_capture_is_a_memo_and_the_calls_own_list_is_not():
    # the code that calls cv.capture outlives the capture: an lru_cache helper it defines is a
    # memo (11a8b2a: 7f49547 took it for the call's local and left the dead tensor in it);
    # a list the captured function makes and a nested function fills dies with the call
    import functools

    @functools.lru_cache
    def mask(n):
        return np.tril(np.ones((n, n)))

    def fn(x):
        rows = []

        def keep(row):
            rows.append(row)
            return row * mask(4)[0]

        return np.stack([keep(r) for r in x]) + len(rows)

    x = np.arange(16.0).reshape(4, 4)
    graph = cv.capture(fn, cv.spec((4, 4), "float64"))
    want = fn(x)  # the next eager call: an ndarray from the cache, no ScopeClosedError
    assert type(mask(4)) is np.ndarray
    got = graph.replay({"x": x})["out"]
    assert got.tobytes() == want.tobytes() and got.dtype == want.dtype
