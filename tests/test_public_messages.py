"""Refusals of public-code idioms with the one fix that applies (issue #20, stop 35): an
ndarray table indexed by a 0-d tensor (``B[:, obs[t]]``, an HMM's emission column) was told
"take sizes from shapes", and ``np.r_[x, 0]`` was told ``cv.constant(np.r_)[x, 0]``; each fix
quoted now is applied below and replays as NumPy computes, dtypes included."""

import _weakref
import os
import sys
import weakref

import numpy as np
import pytest

import capviz as cv

B = np.arange(15.0).reshape(3, 5)


def emission(obs):
    return B[:, obs[0]] * 2.0


def row(obs):
    col = obs[1]
    return B[1, col] + B[obs[2]].sum()


def pad_zero(x):
    return np.r_[x, 0]


ZERO = 0.0


def pad_name(x):
    return np.r_[x, ZERO]


def pad_f32(x):
    return np.r_[x, np.float32(0)]


def pad_list(x):
    return np.r_[x, [1.5, 2], (1, 2)]


LST = [1, 2]


def pad_held_list(x):
    return np.r_[x, LST]


def pad_sum(x):
    return np.r_[x, x.sum()]


def twice(x):
    return np.r_[x, -1.5, x]


def columns(x):
    return np.c_[x, x * 2]


def head(x, n):
    return x[:n[0]]


def _message(fn, *specs):
    with pytest.raises(cv.DataReadError) as info:
        cv.capture(fn, *specs)
    lines = str(info.value).splitlines()
    assert len(lines) == 3
    return lines


def _line(fn, k):
    return f"{os.path.abspath(__file__)}:{fn.__code__.co_firstlineno + k} in {fn.__name__}"


def test_an_ndarray_indexed_by_a_0d_tensor_is_told_to_record_the_table():
    what, why, fix = _message(emission, cv.spec(4, "int64"))
    assert what == (f"`B[:, obs[0]]` at {_line(emission, 1)}: an ndarray or a list indexed "
                    "by the 0-d tensor %1 (getitem, int64[]) in `:, obs[0]`.")
    assert why == ("capviz cannot record it: NumPy converts an integer index with "
                   "operator.index, which no hook reaches, and a captured tensor has no value "
                   "until the graph is replayed.")
    assert fix == ("Fix: record the array first: cv.constant(B)[:, obs[0]] (outside a capture "
                   "cv.constant returns the array itself).")
    what, _, fix = _message(row, cv.spec(4, "int64"))
    assert what.startswith(f"`B[1, col]` at {_line(row, 2)}: an ndarray or a list indexed ")
    assert fix.startswith("Fix: record the array first: cv.constant(B)[1, col] ")


def test_a_slice_bound_read_from_data_keeps_the_size_message():
    what, _, fix = _message(head, cv.spec(4), cv.spec(2, "int64"))
    assert "as a count, size or position" in what
    assert fix.startswith("Fix: take sizes from shapes")


@pytest.mark.parametrize("fn, spec, code, quoted", [
    (pad_zero, cv.spec(3, "float32"), "np.r_[x, 0]",
     "np.concatenate([np.atleast_1d(x), [0]]).astype(np.result_type(x, 0))"),
    (pad_zero, cv.spec(3, "int8"), "np.r_[x, 0]",
     "np.concatenate([np.atleast_1d(x), [0]]).astype(np.result_type(x, 0))"),
    (twice, cv.spec(3, "float32"), "np.r_[x, -1.5, x]",
     "np.concatenate([np.atleast_1d(x), [-1.5], np.atleast_1d(x)])."
     "astype(np.result_type(x, -1.5, x))"),
    (pad_name, cv.spec(3, "float32"), "np.r_[x, ZERO]",
     "np.concatenate([np.atleast_1d(x), np.atleast_1d(ZERO)]).astype(np.result_type(x, ZERO))"),
    (pad_f32, cv.spec(3, "float16"), "np.r_[x, np.float32(0)]",
     "np.concatenate([np.atleast_1d(x), np.atleast_1d(np.float32(0))])."
     "astype(np.result_type(x, np.float32(0)))"),
    (pad_list, cv.spec(3, "float32"), "np.r_[x, [1.5, 2], (1, 2)]",
     "np.concatenate([np.atleast_1d(x), np.asarray([1.5, 2]), np.asarray((1, 2))])."
     "astype(np.result_type(x, np.asarray([1.5, 2]), np.asarray((1, 2))))"),
    (pad_held_list, cv.spec(3, "float32"), "np.r_[x, LST]",
     "np.concatenate([np.atleast_1d(x), np.asarray(LST)]).astype(np.result_type(x, "
     "np.asarray(LST)))"),
    (pad_sum, cv.spec(3, "float32"), "np.r_[x, x.sum()]",
     "np.concatenate([np.atleast_1d(x), np.atleast_1d(x.sum())])."
     "astype(np.result_type(x, x.sum()))"),
    (columns, cv.spec(3, "float32"), "np.c_[x, x * 2]", "np.column_stack([x, x * 2])"),
])
def test_np_r_of_a_tensor_is_told_the_concatenation_numpy_makes(fn, spec, code, quoted):
    what, why, fix = _message(fn, spec)
    assert what.startswith(f"`{code}` at {_line(fn, 1)}: np.{code[3]}_ converts the tensors "
                           f"of `{code[6:-1]}` to ndarrays")
    assert why.startswith(f"capviz cannot record it: the Python code of np.{code[3]}_[...] "
                          "converts each item with np.array")
    assert fix == f"Fix: write {quoted}: the same values and dtype, recorded."
    # the quoted fix, applied, replays as the eager np.r_ computes (values and dtype)
    fixed = eval(f"lambda x: {quoted}", {"np": np, "ZERO": ZERO, "LST": LST})
    x = np.array([1.0, -2.0, 3.0]).astype(spec.dtype)
    graph = cv.capture(fixed, spec)
    got, want = graph.replay({"x": x})["out"], fn(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def test_the_quoted_table_fix_replays_as_eager():
    graph = cv.capture(lambda obs: cv.constant(B)[:, obs[0]] * 2.0, cv.spec(4, "int64"))
    for obs in (np.array([0, 4, 2, 1]), np.array([3, 0, 0, 1])):
        got, want = graph.replay({"obs": obs})["out"], emission(obs)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


# --- a buffer no hook makes, in a stateful step (review 6, hooks_state.py) --------------------

class ArrayBuffer:
    def __init__(self):
        self.W = np.array([1.0, 2.0, 3.0])

    def step(self, x):
        h = np.array([0.0, 0.0, 0.0])
        h[0] = x[0] * 2
        h[1] = h[0] + x[1]
        h[2] = h[1] * x[2]
        self.W -= 0.1 * h
        return h * 1.0


class TileBuffer(ArrayBuffer):
    def step(self, x):
        h = np.tile(0.0, 3)
        for t in range(3):
            h[t] = np.tanh(x[t] + h[t - 1])
        self.W -= 0.1 * h
        return h * 1.0


class FixedBuffer(ArrayBuffer):
    def step(self, x):
        h = np.zeros(3)
        for t in range(3):
            h[t] = np.tanh(x[t] + h[t - 1])
        self.W -= 0.1 * h
        return h * 1.0


@pytest.mark.parametrize("make, code, line", [
    (ArrayBuffer, "h[1] = h[0] + x[1]", 3), (TileBuffer, "h[t] = np.tanh(x[t] + h[t - 1])", 3)])
def test_a_stateful_step_blames_the_buffer_no_hook_made_not_the_state(make, code, line):
    """The unhooked buffer h, written with tensors and read by NumPy, is the cause of what
    NumPy then writes into self.W; the message blamed self.W with a fix that did not apply
    (review 6, low: 'make 0.1 * h a tensor before it meets self.W')."""
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(make().step, cv.spec(3, "float64"))
    what, why, fix = str(info.value).splitlines()
    assert why.startswith("capviz cannot record it: the capture records the writes into the buffer")
    assert what == (f"`{code}` at {_line(make.step, line)}: NumPy read h, an ndarray the "
                    "captured code made and wrote, from its memory.")
    assert fix == ("Fix: make h with np.zeros, np.empty, np.ones or np.full in the captured "
                   "code (a tensor the capture records whole).")


def test_the_buffer_made_with_np_zeros_replays_as_eager():
    model, twin = FixedBuffer(), FixedBuffer()
    graph = cv.capture(model.step, cv.spec(3, "float64"))
    for x in (np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0]), np.array([3.0, 1.0, -2.0])):
        got, want = graph.replay({"x": x})["out"], twin.step(x)
        assert got.tobytes() == want.tobytes() and model.W.tobytes() == twin.W.tobytes()


# --- reference counts of a state (review 6, identity2.py J9/J10) -----------------------------

class Counted:
    def __init__(self):
        self.W = np.array([1.0, 2.0, 3.0])

    def step(self, x):
        k = 2.0 if weakref.getweakrefcount(self.W) == 0 else 3.0
        self.W -= 0.1 * x
        return x * k


class RefCounted(Counted):
    def step(self, x):
        k = 2.0 if sys.getrefcount(self.W) < 6 else 3.0
        self.W -= 0.1 * x
        return x * k


@pytest.mark.parametrize("warm", [False, True], ids=["first capture", "later capture"])
def test_a_weak_reference_count_of_a_state_is_refused_at_its_line(warm):
    """J9: capviz's own weak references on a state's array made a later capture branch on a
    count the program never sees (silent: every replay x * 3, eager calls x * 2)."""
    model = Counted()
    if warm:
        with pytest.raises(cv.UnsupportedOperationError):
            cv.capture(model.step, cv.spec(3, "float64"))
        model.step(np.ones(3))
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(model.step, cv.spec(3, "float64"))
    what, why, fix = str(info.value).splitlines()
    assert what == (f"`weakref.getweakrefcount(self.W)` at {_line(Counted.step, 1)}: "
                    "weakref.getweakrefcount() is not supported by capviz.")
    assert why.startswith("capviz cannot record it: capviz holds weak references to the "
                          "arrays a capture records")
    assert fix == ("Fix: pass what this line decides in as an input (an argument of the "
                   "captured function), computed before the capture.")
    assert weakref.getweakrefcount is _weakref.getweakrefcount  # put back


@pytest.mark.parametrize("warm", [False, True], ids=["first capture", "later capture"])
def test_a_reference_count_of_a_state_is_refused_at_a_line_of_the_step(warm):
    """J10: the two runs count capviz's references differently: refused where k is used."""
    model = RefCounted()
    if warm:
        with pytest.raises(cv.UnsupportedOperationError):
            cv.capture(model.step, cv.spec(3, "float64"))
        model.step(np.ones(3))
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(model.step, cv.spec(3, "float64"))
    assert str(info.value).startswith(f"`return x * k` at {_line(RefCounted.step, 3)}: ")
