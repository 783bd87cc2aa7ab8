"""``@np.errstate(divide="raise")`` as a decorator on a helper the captured function calls:
NumPy's wrapper sets the error state without ``__enter__`` (which the hooks refuse for ``with
np.errstate(...)``), so the capture recorded the division and every replay returned inf where
the eager call raises FloatingPointError (silent, checked before this change). Refused at the
line that calls the helper, with the fix of ``with np.errstate``; a helper decorated with a
setting that changes no value (``ignore``) is captured."""

from __future__ import annotations

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


def test_a_helper_decorated_with_a_raising_errstate_is_refused_at_its_call():
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(step, np.ones(3))
    what, why, fix = str(info.value).splitlines()
    line = line_of(__file__, "return inverse(x) * 2.0")
    assert what == (f"`return inverse(x) * 2.0` at {__file__}:{line} in step: np.errstate(...) "
                    "is not supported by capviz.")
    assert why.startswith("capviz cannot record it: inverse is decorated with np.errstate(...)")
    assert fix == "Fix: move it around the replay: `with np.errstate(...): graph.replay(...)`."
    with pytest.raises(cv.UnsupportedOperationError, match=r"scale is decorated with "):
        cv.capture(Layer().forward, np.ones(3))


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


@pytest.mark.parametrize("fn", [lambda x: Kinds.s(x), lambda x: Kinds.c(x), lambda x: OBJECT(x),
                                lambda x: getattr(Kinds, "s")(x)])
def test_a_decorated_static_class_or_call_method_is_refused_where_it_is_called(fn):
    """Hostile review 8, finding 29 (silent after 0ece947, checked): the wrapper's own call of
    NumPy's _make_extobj is hooked, whatever reaches it."""
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(fn, np.ones(3))
    assert "np.errstate(...) is not supported by capviz" in str(info.value).splitlines()[0]
    assert f"at {__file__}:" in str(info.value).splitlines()[0]
