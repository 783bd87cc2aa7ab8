"""Buffers made inside a capture are tensors: NumPy's creation functions record a ``create`` op
while a capture is open (capviz/randomness/creation.py, capviz/ops/creation.py)."""

from __future__ import annotations

import functools
import threading

import numpy as np
import pytest
from numpy import zeros  # bound before any capture: rebound to the hook while one is open

import capviz as cv
from capviz.randomness import creation

RNG = np.random.default_rng(20)


def same(a, b):
    assert type(a) is type(b) or isinstance(a, np.ndarray)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a, b, equal_nan=True)


def rnn(x, W, U):
    """The public-code RNN: a preallocated state array filled in a loop."""
    n, h = x.shape[0], W.shape[1]
    out = np.zeros((n, h), dtype=x.dtype)
    for t in range(n):
        out[t] = np.tanh(x[t] @ W + out[t - 1] @ U)
    return out


def test_a_preallocated_output_filled_in_a_loop_replays_bit_for_bit():
    W, U = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 4))
    x = RNG.standard_normal((6, 3))
    graph = cv.capture(lambda x: rnn(x, W, U), x)
    create = graph.ops[0]
    assert (create.op, create.params["function"], create.params["args"]) == \
        ("create", "zeros", ((6, 4),))
    assert create.source[2] == "rnn"
    for _ in range(2):
        x = RNG.standard_normal((6, 3))
        same(graph.replay({"x": x})["out"], rnn(x, W, U))
    assert not graph.constants[0].shape == (6, 4)  # the buffer is no constant


def conv1d(x, k):
    """A convolution output preallocated with np.empty and filled."""
    n = x.shape[0] - k.shape[0] + 1
    y = np.empty(n, dtype=np.float32)
    for i in range(n):
        y[i] = (x[i:i + k.shape[0]] * k).sum()
    return y


def test_an_empty_buffer_filled_whole_replays_bit_for_bit():
    k = np.array([0.25, 0.5, 0.25], np.float32)
    x = RNG.standard_normal(8).astype(np.float32)
    graph = cv.capture(lambda x: conv1d(x, k), x)
    for _ in range(2):
        x = RNG.standard_normal(8).astype(np.float32)
        same(graph.replay({"x": x})["out"], conv1d(x, k))


def bound_before(x):
    buf = zeros((2, 3))  # `from numpy import zeros` at the top of this module
    buf[0] = x
    return buf


def test_a_function_bound_before_the_capture_is_seen():
    x = np.arange(3.0)
    graph = cv.capture(bound_before, x)
    assert graph.ops[0].op == "create"
    same(graph.replay({"x": x})["out"], bound_before(x))
    assert zeros is np.zeros and not hasattr(zeros, "__wrapped__")  # put back at exit


PROTO = RNG.standard_normal((2, 3)).astype(np.float32)
FORTRAN = np.asfortranarray(RNG.standard_normal((3, 2)))

MADE = {
    "zeros": lambda x: np.zeros(3, np.int32) + x.astype(np.int32),
    "zeros keywords": lambda x: np.zeros(shape=(3,), dtype="int8") + x.astype(np.int8),
    "ones": lambda x: np.ones((3,), np.float32) * x,
    "full": lambda x: np.full((3,), 2, np.float32) * x,
    "full int": lambda x: np.full(3, 7) + x.astype(np.int64),
    "eye": lambda x: np.eye(3, 4, 1) * x[:, None],
    "identity": lambda x: np.identity(3, np.float32) @ x,
    "arange": lambda x: np.arange(3.0) + x,
    "arange int": lambda x: np.arange(1, 7, 2) * x,
    "linspace": lambda x: np.linspace(0, 1, 3) + x,
    "logspace": lambda x: np.logspace(0, 2, 3) + x,
    "zeros_like": lambda x: np.zeros_like(PROTO) + x[:, None].T[:, :3].sum(),
    "ones_like": lambda x: np.ones_like(PROTO, dtype=np.float64) * x[0],
    "full_like": lambda x: np.full_like(PROTO, 0.5) + x[1],
    "empty_like fortran": lambda x: _filled(np.empty_like(FORTRAN), x),
    "copy": lambda x: _written(np.copy(PROTO), x),
    "array": lambda x: _written(np.array(PROTO), x),
    "array dtype": lambda x: _written(np.array(PROTO, np.float64), x),
}


def _filled(buf, x):
    buf[...] = x[:, None]
    return buf.reshape(-1)  # the layout decides the order of the elements


def _written(buf, x):
    buf[0] = x
    return buf


@pytest.mark.parametrize("fn", MADE.values(), ids=MADE.keys())
def test_each_creation_function_records_a_tensor_and_replays_as_eager(fn):
    x = np.array([1.0, 2.0, 3.0], np.float32)
    graph = cv.capture(fn, x)
    assert not graph.constants or all(c.name in ("PROTO", "FORTRAN") for c in graph.constants)
    for _ in range(2):
        same(graph.replay({"x": x})["out"], fn(x))
        x = x * 2


def test_a_copy_of_an_outside_array_changes_nothing_outside():
    keep = PROTO.copy()
    cv.capture(lambda x: _written(np.copy(PROTO), x), np.ones(3, np.float32))
    same(PROTO, keep)


def test_sizes_stay_plain_python():
    graph = cv.capture(lambda x: np.zeros((x.shape[0], 2)) + x[:, None], cv.spec((4,)))
    assert graph.ops[0].params == {"function": "zeros", "args": ((4, 2),), "kwargs": {}}


def test_a_buffer_made_of_plain_values_keeps_its_value_for_reads():
    def f(x):
        total = 0
        for i in np.arange(3):  # iterating a known buffer reads its values
            total += int(i)
        return x * total + cv.constant(np.eye(2))[0, 0]

    graph = cv.capture(f, cv.spec((2,), "float64"))
    same(graph.replay({"x": np.ones(2)})["out"], f(np.ones(2)))


def test_a_buffer_written_with_a_tensor_is_no_longer_known():
    def f(x):
        buf = np.zeros(2)
        buf[0] = x[0]
        return float(buf[0])

    with pytest.raises(cv.DataReadError, match=r"reads the value of %\d+ \(getitem, float64\[\]\)"):
        cv.capture(f, cv.spec((2,), "float64"))


class _Seen(dict):
    """What the captured code saw: a dict subclass capviz does not walk (a type logged into a
    plain dict is refused: type(t) in a capture is not what a call sees)."""


def test_calls_from_libraries_and_other_threads_get_ndarrays():
    seen = _Seen()

    def other_thread():
        seen["thread"] = type(np.zeros(2))

    def f(x):
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
        seen["numpy"] = type(np.pad(PROTO, 1))  # np.pad calls np.empty inside
        return x + np.zeros(2)

    cv.capture(f, cv.spec((2,)))
    assert seen == {"thread": np.ndarray, "numpy": np.ndarray}


def test_hooks_are_removed_when_the_capture_fails():
    originals = {name: getattr(np, name) for name in creation.HOOKED}

    def f(x):
        np.zeros(2)
        raise KeyError("boom")

    with pytest.raises(KeyError):
        cv.capture(f, cv.spec((2,)))
    assert {name: getattr(np, name) for name in creation.HOOKED} == originals
    assert type(np.zeros(2)) is np.ndarray


def test_a_tensor_argument_goes_to_numpys_dispatch():
    graph = cv.capture(lambda x: np.zeros_like(x) + np.full_like(x, 2.0), cv.spec((2,)))
    assert [n.op for n in graph.ops] == ["zeros_like", "full_like", "add"]


def test_the_hooks_are_made_once_and_again_only_for_a_function_numpy_holds_anew(monkeypatch):
    """Every capture installs the creation hooks: their plan is made once (before: a new list
    of new tuples at each capture) and made again where one of NumPy's functions was replaced
    (a user's or a library's patch of ``np.zeros``), whose hook wraps the new function."""
    first = creation.plan()
    assert creation.plan() is first
    assert set(first.hooks) == set(creation.HOOKED) == set(first.originals)
    assert first.originals["zeros"] is np.zeros and first.hooks["zeros"].__wrapped__ is np.zeros
    patched = functools.partial(np.zeros)  # (not the user's code: its calls are NumPy's)
    monkeypatch.setattr(np, "zeros", patched)
    again = creation.plan()
    assert again is not first and again.hooks["zeros"].__wrapped__ is patched
    assert creation.plan() is again
    graph = cv.capture(lambda x: np.zeros(3) + x, cv.spec((3,), "float64"))  # np.zeros: the hook
    assert "create" in [node.op for node in graph.nodes]
    assert np.zeros is patched  # put back: the patch, as it was
    monkeypatch.undo()
    assert creation.plan().hooks["zeros"].__wrapped__ is np.zeros


def test_the_hooks_are_placed_for_the_scope_and_a_name_replaced_meanwhile_is_left():
    """The creation hooks are placed together and put back together when the last scope
    closes, except a name the user set meanwhile."""
    originals = {name: getattr(np, name) for name in creation.HOOKED}

    def step(x):
        assert all(getattr(np, name).__wrapped__ is f for name, f in originals.items())
        np.identity = mine
        return x * 2.0

    def mine(n):
        return originals["identity"](n)

    try:
        cv.capture(step, cv.spec((3,), "float64"))
        assert np.identity is mine
        assert all(getattr(np, name) is f for name, f in originals.items() if name != "identity")
    finally:
        np.identity = originals["identity"]
