"""NumPy's error state set to raise inside the captured function (review 7 #31: the eager call
raises FloatingPointError, every replay returned ``inf``): refused at its line with the fix; a
setting that changes no value ("ignore", "warn") is captured as before."""

import inspect

import numpy as np
import pytest

import capviz as cv

FIX = "Fix: move it around the replay: `with np.errstate(...): graph.replay(...)`."


def _line(fn, code):
    source, start = inspect.getsourcelines(fn)
    return start + next(k for k, text in enumerate(source) if code in text)


def raising(x):
    with np.errstate(divide="raise"):
        return 1.0 / x


def set_and_undone(x):
    old = np.seterr(divide="raise")
    try:
        return 1.0 / x
    finally:
        np.seterr(**old)


def quiet(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / x


@pytest.mark.parametrize(("fn", "call", "code"), [
    (raising, "np.errstate(...)", 'with np.errstate(divide="raise")'),
    (set_and_undone, "np.seterr(...)", 'old = np.seterr(divide="raise")'),
])
def test_an_error_state_that_raises_is_refused_at_its_line(fn, call, code):
    x = np.array([0.0, 1.0, 2.0])
    with pytest.raises(FloatingPointError):
        fn(x)
    before = np.geterr()
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(fn, x)
    lines = str(info.value).splitlines()
    assert f"{__file__}:{_line(fn, code)} in {fn.__name__}: {call} is not supported" in lines[0]
    assert "a replay runs under its caller's NumPy error state" in lines[1]
    assert lines[2] == FIX
    assert np.geterr() == before


def test_the_fix_raises_in_the_replay_where_the_eager_call_raises():
    x = np.array([0.0, 1.0, 2.0])
    run = cv.capture(quiet, x).compile()
    with np.errstate(divide="raise"), pytest.raises(Exception) as info:
        run(x)
    assert isinstance(info.value, FloatingPointError) or \
        isinstance(info.value.__cause__, FloatingPointError)


def test_an_error_state_that_only_quiets_warnings_is_captured():
    x = np.array([0.0, 1.0, 2.0])
    (out,) = cv.capture(quiet, x).compile()(np.array([4.0, 1.0, 2.0]))
    assert out.tolist() == [0.25, 1.0, 0.5]
