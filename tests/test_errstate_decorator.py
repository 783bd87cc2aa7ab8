"""``@np.errstate(divide="raise")`` as a decorator on a helper the captured function calls:
NumPy's wrapper sets the error state without ``__enter__`` (which the hooks refuse for ``with
np.errstate(...)``), so the capture recorded the division and every replay returned inf where
the eager call raises FloatingPointError (silent, checked before this change). Refused at the
decorator's line, as ``with np.errstate`` is at its line, with its fix (the decorator taken off,
around the replay: applied here, the replay raises where the eager call does); a helper
decorated with a setting that changes no value (``ignore``) is captured."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import capviz as cv
from tests.helpers.public_census import line_of


@np.errstate(divide="raise")
def inverse(x):
    return 1.0 / x


@np.errstate(divide="ignore")
def quiet_inverse(x):
    return 1.0 / x


def step(x):
    return inverse(x) * 2.0


class Layer:
    @np.errstate(over="raise")
    def scale(self, x):
        return np.exp(x)

    def forward(self, x):
        return self.scale(x) + 1.0


def test_a_helper_decorated_with_a_raising_errstate_is_refused_at_the_decorator():
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(step, np.ones(3))
    what, why, fix = str(info.value).splitlines()
    line = line_of(__file__, "def inverse(x):") - 1
    assert what == (f"`@np.errstate(divide=\"raise\")` at {__file__}:{line} in inverse: "
                    "np.errstate(...) is not supported by capviz.")
    assert why.startswith("capviz cannot record it: inverse is decorated with "
                          "np.errstate(divide=\"raise\"), and a replay runs under its caller's")
    assert fix == ("Fix: take the decorator off inverse and put it around the replay: "
                   "`with np.errstate(divide=\"raise\"): graph.replay(...)`.")
    with pytest.raises(cv.UnsupportedOperationError, match=r"scale is decorated with "):
        cv.capture(Layer().forward, np.ones(3))


def plain_inverse(x):  # (inverse with the decorator taken off: the fix applied)
    return 1.0 / x


def test_the_fix_applied_raises_where_eager_does_and_replays_exactly():
    graph = cv.capture(lambda x: plain_inverse(x) * 2.0, np.ones(3))
    zero, x = np.array([0.0, 1.0, 2.0]), np.array([0.5, 4.0, 3.0])
    with np.errstate(divide="raise"), pytest.raises(Exception) as info:
        graph.replay({graph.inputs[0]: zero})
    assert isinstance(info.value.__cause__, FloatingPointError)  # (a ReplayError naming the node)
    with pytest.raises(FloatingPointError):
        step(zero)
    with np.errstate(divide="raise"):
        got = graph.replay({graph.inputs[0]: x})[graph.outputs[0]]
    assert got.tobytes() == step(x).tobytes()


def test_a_helper_decorated_with_ignore_is_captured():
    graph = cv.capture(lambda x: quiet_inverse(x) * 2.0, np.ones(3))
    x = np.array([0.0, 1.0, 2.0])
    with np.errstate(divide="ignore"):
        assert np.array_equal(graph.replay({graph.inputs[0]: x})[graph.outputs[0]],
                              quiet_inverse(x) * 2.0)


RAISING = np.errstate(divide="raise")


@RAISING
def reused(x):
    return 1.0 / x


class Model:
    @np.errstate(over="raise")
    def f(self, x):
        return np.exp(x * 1000.0)


def via_method(x):
    return Model().f(x)


def via_lambda(x):
    return (lambda v: reused(v))(x) * 1.0


@pytest.mark.parametrize("fn", [inverse, reused, via_method, via_lambda])
def test_the_captured_function_itself_a_prebuilt_errstate_a_method_and_a_lambda_are_seen(fn):
    """Hostile review 8, finding 29 (silent after e7cf72f, checked): the captured function
    decorated itself, ``@ER`` of a prebuilt errstate, a decorated method of a class the code
    names, a call inside a lambda."""
    with pytest.raises(cv.UnsupportedOperationError, match=r"is decorated with np\.errstate"):
        cv.capture(fn, np.ones(3))


class Kinds:
    @staticmethod
    @np.errstate(divide="raise")
    def s(x):
        return 1.0 / x

    @classmethod
    @np.errstate(divide="raise")
    def c(cls, x):
        return 1.0 / x

    @np.errstate(divide="raise")
    def __call__(self, x):
        return 1.0 / x


OBJECT = Kinds()


LAMBDA = functools.partial(np.errstate(divide="raise")(lambda x, k: k / x), k=1.0)
LAMBDA_LINE = "LAMBDA = functools.partial(np.errstate(divide=\"raise\")(lambda x, k: k / x), k=1.0)"


@pytest.mark.parametrize(("fn", "at", "name"), [
    (lambda x: Kinds.s(x), "def s(x):", "s"),
    (lambda x: Kinds.c(x), "def c(cls, x):", "c"),
    (lambda x: OBJECT(x), "def __call__(self, x):", "__call__"),
    (lambda x: getattr(Kinds, "s")(x), "def s(x):", "s"),
    (lambda x: LAMBDA(x), LAMBDA_LINE, "the lambda")])
def test_a_decorated_static_class_or_call_method_is_refused_at_its_decorator(fn, at, name):
    """Hostile review 8, finding 29 (silent after 0ece947, checked): the wrapper's own call of
    NumPy's _make_extobj is hooked, whatever reaches it; the remnant (the caller's line named,
    checked before this change) is the decorator's line now, with its fix."""
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(fn, np.ones(3))
    what, why, fix = str(info.value).splitlines()
    line = line_of(__file__, at) - (name != "the lambda")
    assert what.startswith("`") and f"` at {__file__}:{line} in " in what
    assert "errstate" in what.split("` at ")[0]
    assert why.startswith(f"capviz cannot record it: {name} is decorated with np.errstate(")
    assert fix.startswith(f"Fix: take the decorator off {name} and put it around the replay")


ALIASED = np.errstate(divide="raise")


class Aliased:
    @staticmethod
    @ALIASED
    def s(y):
        return 1.0 / y


def test_a_prebuilt_errstate_under_staticmethod_is_refused_at_its_own_line():
    """Review 9, finding 1: ``@ALIASED`` under ``@staticmethod`` was refused at the
    ``@staticmethod`` line (no line names errstate); checked to fail before this change."""
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(lambda x: Aliased.s(x), np.ones(3))
    line = line_of(__file__, "@ALIASED")
    assert str(info.value).splitlines()[0] == (
        f"`@ALIASED` at {__file__}:{line} in s: np.errstate(...) is not supported by capviz.")


@np.errstate(all="ignore")
def quiet_log(x):
    return np.log(x)


def plain_log(x):  # (quiet_log with the decorator taken off: the fix applied)
    return np.log(x)


def test_an_ignoring_errstate_under_a_raising_caller_is_refused_with_the_fix_that_replays():
    """Review 9, finding 2: ``@np.errstate(all="ignore")`` (or ``with``) under the caller's
    ``np.seterr(all="raise")``: the eager call passes, every replay (run under the caller's
    state) raised FloatingPointError; refused at its line now (checked to fail before), and the
    fix applied replays exactly what eager returns."""
    x = np.array([0.0, 1.0, 2.0])
    before = np.seterr(all="raise")
    try:
        want = quiet_log(x)
        with pytest.raises(cv.UnsupportedOperationError) as info:
            cv.capture(quiet_log, np.ones(3))
        what, why, fix = str(info.value).splitlines()
        line = line_of(__file__, "def quiet_log(x):") - 1
        assert what == (f"`@np.errstate(all=\"ignore\")` at {__file__}:{line} in quiet_log: "
                        "np.errstate(...) is not supported by capviz.")
        assert "so it would raise where this call does not" in why
        assert fix == ("Fix: take the decorator off quiet_log and put it around the replay: "
                       "`with np.errstate(all=\"ignore\"): graph.replay(...)`.")
        with pytest.raises(cv.UnsupportedOperationError, match="would raise where this call "
                                                                "does not"):
            cv.capture(inside_ignore, np.ones(3))
        graph = cv.capture(plain_log, np.ones(3))
        with np.errstate(all="ignore"):
            got = graph.replay({graph.inputs[0]: x})[graph.outputs[0]]
        assert got.tobytes() == want.tobytes()
    finally:
        np.seterr(**before)
    assert np.array_equal(cv.capture(quiet_log, np.ones(3)).replay({"x": x + 1.0})["out"],
                          quiet_log(x + 1.0))  # (under a caller that does not raise: captured)


def inside_ignore(x):
    with np.errstate(all="ignore"):
        return np.log(x)


@np.errstate(all="ignore")
def _quiet_log(x):
    return np.log(x)


def test_a_function_decorated_to_ignore_replays_each_time_as_eager():
    # capviz's own errstate hook, in place while the capture ran, was taken for a Python value
    # the user could change (a guard on NumPy's _make_extobj): every replay was refused
    graph = cv.capture(_quiet_log, cv.spec((3,), "float64"))
    x = np.array([1.0, 0.0, -1.0])
    for _ in range(2):
        out = graph.replay({"x": x})["out"]
        assert np.array_equal(out, _quiet_log(x), equal_nan=True)
