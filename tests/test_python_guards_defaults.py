"""An object bound to a default argument of the captured function (``lambda x, m=model: ...``,
``def step(x, s=state)``: the usual way to bind a loop's object into a callback; review 11,
finding 3, silent): the walk read only list and dict defaults, so the Python values the code
read inside such an object (``m.scale``, ``m.training``) were not guarded, an array NumPy read
there (``np.linalg.norm(m.W)``) was not a source, and a value written there (``s.v =
x.sum()``) was left holding capviz's closed tensor. Every default of the function is walked now,
as its closure cells are."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import GuardError

X = np.array([1.0, 2.0, 3.0])


class Model:
    def __init__(self):
        self.scale, self.training, self.W, self.v = 2.0, True, np.ones(3), 0.0


def _cases(m):
    def step(x, s=m):
        return x * s.scale

    def keyword_only(x, *, s=m):
        return x * s.scale

    return {
        "lambda_scale": (lambda x, m=m: x * m.scale, "m.scale", lambda: setattr(m, "scale", 3.0)),
        "lambda_training": (lambda x, m=m: x * (2.0 if m.training else 1.0), "m.training",
                            lambda: setattr(m, "training", False)),
        "def_default": (step, "s.scale", lambda: setattr(m, "scale", 3.0)),
        "keyword_only": (keyword_only, "s.scale", lambda: setattr(m, "scale", 3.0)),
        "array_source": (lambda x, m=m: x / np.linalg.norm(m.W), "array m.W",
                         lambda: m.W.__iadd__(1.0)),
    }


@pytest.mark.parametrize("case", ["lambda_scale", "lambda_training", "def_default",
                                  "keyword_only", "array_source"])
def test_a_value_read_through_a_default_argument_is_guarded(case):
    m = Model()
    fn, label, change = _cases(m)[case]
    graph = cv.capture(fn, X)
    for _ in range(3):
        assert np.array_equal(graph.replay({"x": X})["out"], fn(X))
    change()
    with pytest.raises(GuardError, match=rf"^{label} "):
        graph.replay({"x": X})
    again = cv.capture(fn, X)  # the fix, applied
    for _ in range(3):
        assert np.array_equal(again.replay({"x": X})["out"], fn(X))


def test_a_value_written_through_a_default_argument_is_written_back():
    s, eager = Model(), Model()

    def make(target):
        def step(x, s=target):
            s.v = x.sum()
            return x * 2.0
        return step

    fn, want = make(s), make(eager)
    graph = cv.capture(fn, cv.spec((3,), "float64"))
    for k in range(3):
        x = X + k
        graph.replay({"x": x})
        want(x)
        assert type(s.v) is type(eager.v) and s.v == eager.v, (k, s.v, eager.v)


# --- a helper reached through a default argument or a functools.partial (review 12, #1) --------
#
# A helper that reads ``m.W`` through NumPy (``x * m.W.sum()``, ``x / np.linalg.norm(m.W)``),
# reached by fn only through its defaults (``lambda x, m=m, fn=helper: fn(m, x)``, a kw-only
# default, a default tuple or dict) or a ``functools.partial(helper, m)`` held in a closure cell:
# the guard walk did not enter the helper (or the partial's arguments), so after ``m.W *= -2``
# every replay returned the capture's value, silently.

class Net:
    def __init__(self):
        self.W = np.arange(1.0, 13.0).reshape(3, 4) / 7


def _sum_helper(m, x):
    return x * m.W.sum()


def _norm_helper(m, x):
    return x / np.linalg.norm(m.W)


def _reached(kind, helper):
    m = Net()
    if kind == "lambda_default":
        return m, (lambda x, m=m, fn=helper: fn(m, x)), "m.W"

    def def_default(x, fn=helper):
        return fn(m, x)

    def keyword_only(x, *, fn=helper):
        return fn(m, x)

    def default_tuple(x, t=(helper,)):
        return t[0](m, x)

    held = functools.partial(helper, m)

    def partial_in_closure(x):
        return held(x)

    table = {"def_default": (def_default, "m.W"), "keyword_only": (keyword_only, "m.W"),
             "default_tuple": (default_tuple, "m.W"),
             "partial_in_closure": (partial_in_closure, r"held\.args\[0\]\.W")}
    return (m, *table[kind])


@pytest.mark.parametrize("helper", [_sum_helper, _norm_helper], ids=["sum", "norm"])
@pytest.mark.parametrize("kind", ["lambda_default", "def_default", "keyword_only",
                                  "default_tuple", "partial_in_closure"])
def test_a_helper_reached_through_a_default_or_a_partial_guards_what_it_reads(kind, helper):
    m, fn, label = _reached(kind, helper)
    x = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    graph = cv.capture(fn, x)
    m.W *= -2.0
    with pytest.raises(GuardError, match=rf"^array {label} holds other values than when "):
        graph.replay({"x": x})
    graph.changed()  # the fix the message gives: capture fn again from the live objects
    assert np.array_equal(graph.replay({"x": x})["out"], fn(x))
