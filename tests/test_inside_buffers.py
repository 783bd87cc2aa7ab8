"""Buffers the captured code makes with a spelling no creation hook sees (``np.array(list)``,
``np.tile``, ``np.ndarray(...)``, a helper module's ``from numpy import zeros``...), written with
a tensor, then read by NumPy (review 6, finding 9: 14 of 38 spellings replayed capviz's fill,
``[1.0, 999999.0]`` where eager gives ``[1.0, 0.0]``, silently).

Such a buffer is an ndarray, so NumPy's own read of it after the capture's write reads its
memory, not the recorded value. It becomes a state of the first capture and dies with it; now
it makes :func:`capviz.capture` capture a second time, as a state does, and a NumPy read after
its write (which reads other values there: the NaN mark, or for integers and booleans every
bit inverted) makes the two graphs differ and is refused at its line. A buffer that NumPy
never reads after the write still replays exactly."""

import functools
import sys
import threading

import numpy as np
import pytest

import capviz as cv

XS = [np.random.default_rng(3).standard_normal(4) for _ in range(3)]
PARTIAL = functools.partial(np.zeros, dtype=np.float64)


def fill(out, x):
    for t in range(4):
        out[t] = np.tanh(x[t] + out[t - 1])  # NumPy reads out[t - 1], an ndarray element
    return out


def _thread_buf():
    box = []
    thread = threading.Thread(target=lambda: box.append(np.zeros(4)))
    thread.start()
    thread.join()
    return box[0]


UNHOOKED = {
    "np.array(list)": lambda x: fill(np.array([0.0, 0.0, 0.0, 0.0]), x),
    "np.asarray(list)": lambda x: fill(np.asarray([0.0] * 4), x),
    "functools.partial(np.zeros)": lambda x: fill(PARTIAL(4), x),
    "getattr(np, 'zeros')": lambda x: fill(getattr(np, "zeros")(4), x),
    "np.ndarray((4,))": lambda x: fill(np.ndarray((4,)) * 0, x),
    "np.tile": lambda x: fill(np.tile(0.0, 4), x),
    "np.repeat": lambda x: fill(np.repeat(0.0, 4), x),
    "np.fromiter": lambda x: fill(np.fromiter((0.0 for _ in range(4)), float), x),
    "np.frombuffer().copy()": lambda x: fill(np.frombuffer(bytes(32)).copy(), x),
    "np.require": lambda x: fill(np.require(np.zeros(4)), x),
    "np.ascontiguousarray": lambda x: fill(np.ascontiguousarray(np.zeros(4)), x),
    "another thread's buffer": lambda x: fill(_thread_buf(), x),
    "as_strided().copy()": lambda x: fill(
        np.lib.stride_tricks.as_strided(np.zeros(4)).copy(), x),
}


@pytest.mark.parametrize("name", list(UNHOOKED))
def test_a_numpy_read_of_an_unhooked_buffer_after_its_write_is_refused_at_its_line(name):
    """Before: each replayed [0.97, 1, 1, 1] (tanh of capviz's fill), eager [0.97, -0.92...]."""
    fn = UNHOOKED[name]
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(fn, cv.spec((4,), "float64"))
    what, _, fix = str(info.value).splitlines()
    assert what.startswith("`out[t] = np.tanh(x[t] + out[t - 1])` at ") and what.endswith(
        "NumPy read out, an ndarray the captured code made and wrote, from its memory."), what
    assert "test_inside_buffers.py:" in what
    assert fix.startswith("Fix: make out with np.zeros, np.empty, np.ones or np.full")


def _smallest(x):
    h = np.array([0.0, 0.0])
    h[0] = x[0] * 2
    h[1] = h[0] + x[1]
    return h


def _ints(x):
    h = np.array([0, 0])
    h[0] = x[0] * 2
    h[1] = h[0] + x[1]
    return h


def _bools(x):
    h = np.array([False, False])
    h[0] = x[0] > 0
    return h | np.array([h[0], False])


def _returned_by_numpy(x):
    h = np.array([0.0, 0.0])
    h[0] = x[0] * 2
    return h * 1.0  # NumPy's multiply of the buffer: computed from its memory


@pytest.mark.parametrize("fn, dtype, line", [
    (_smallest, "float64", "h[1] = h[0] + x[1]"),
    (_smallest, "float32", "h[1] = h[0] + x[1]"),
    (_ints, "int64", "h[1] = h[0] + x[1]"),
    (_bools, "float64", "return h | np.array([h[0], False])"),
    (_returned_by_numpy, "float64", "return h * 1.0"),
])
def test_the_smallest_spellings_are_refused_at_the_line_that_reads(fn, dtype, line):
    """Before: [1.0, 1000001.0] for [1.0, 2.0] (float64), [6, 4] for [6, 10] (int64), [False,
    False] for [True, False] (bool), [1e6, 1.5e6] for [1.0, 0.0] (the buffer NumPy multiplied):
    each captured whole, silently."""
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(fn, cv.spec((2,), dtype))
    what, why, fix = str(info.value).splitlines()
    assert what.startswith(f"`{line}` at ") and what.endswith(
        "NumPy read h, an ndarray the captured code made and wrote, from its memory."), what
    assert why == (
        "capviz cannot record it: the capture records the writes into the buffer, but NumPy's "
        "own read of its memory does not see them, so every replay would use other values (h "
        "was made by a spelling capviz does not make a tensor: np.array of a list, np.tile, "
        "np.fromiter, a helper's bound zeros...).")
    assert fix == ("Fix: make h with np.zeros, np.empty, np.ones or np.full in the captured code "
                   "(a tensor the capture records whole).")


def _written_only(x):
    h = np.array([0.0, 0.0])
    h[0] = x[0] * 2
    h[1] = x[1]
    return h


def _ints_written_only(x):
    h = np.array([0, 0])
    h[1] = x[0] + x[1]
    return h


@pytest.mark.parametrize("fn, dtype", [(_written_only, "float64"),
                                       (_ints_written_only, "int64")])
def test_an_unhooked_buffer_numpy_does_not_read_after_its_write_replays_exactly(fn, dtype):
    graph = cv.capture(fn, cv.spec((2,), dtype))
    for x in ([0.5, 1.0], [-3.0, 2.0], [7.0, 0.0]):
        x = np.array(x, dtype)
        got = graph.replay({"x": x})["out"]
        want = fn(x.copy())
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


class _Runs(list):
    """Counts runs: a list subclass, which capviz does not walk (a plain list's Python values
    are logged by each replay, and a function logging them runs twice)."""


def test_the_hooked_spellings_still_capture_whole_in_one_pass():
    runs = _Runs()

    def fn(x):
        runs.append(1)
        return fill(np.zeros(4), x)

    graph = cv.capture(fn, cv.spec((4,), "float64"))
    assert len(runs) == 1
    for x in XS:
        assert graph.replay({"x": x})["out"].tobytes() == fn(x.copy()).tobytes()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
