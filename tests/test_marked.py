"""An error the captured code raises while a state holds the scope form's NaN mark
(capviz/trace/marked.py): refused at its line naming the state, and still an instance of what
the code raised, so the user's ``except`` clause catches it (review 3, finding 20)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import UnsupportedOperationError


class Checked:
    def __init__(self):
        self.W = np.ones(4)

    def step(self, x):
        self.W += x
        if x.shape[-1] == 4:
            raise ValueError("expected 3 features")
        return x * 1.0


class Fussy(Exception):
    """An exception of the user's own."""


def _capture(step):
    with cv.CaptureDevice().capture_scope() as scope:
        scope.output(step(scope.input("x", (4,), "float64")))


def test_the_functions_own_error_is_caught_by_its_except_clause_and_is_the_refusal():
    m = Checked()
    with pytest.raises(ValueError) as info:
        with cv.CaptureDevice().capture_scope() as scope:  # m named from this frame
            scope.output(m.step(scope.input("x", (4,), "float64")))
    err = info.value
    assert isinstance(err, UnsupportedOperationError)
    line = Checked.step.__code__.co_firstlineno + 3
    assert str(err).splitlines()[0] == (
        f"`raise ValueError(\"expected 3 features\")` at {__file__}:{line} in step: raised an "
        "error while m.W held the capture's NaN mark.")
    assert type(err.__cause__) is ValueError and str(err.__cause__) == "expected 3 features"
    assert not err.graph.complete
    assert np.array_equal(m.W, np.ones(4))  # put back


def test_a_users_own_exception_class_is_caught_too():
    W = np.ones(4)

    def step(x):
        np.add(W, x, out=W)
        raise Fussy("no")

    with pytest.raises(Fussy) as info:
        _capture(step)
    assert isinstance(info.value, UnsupportedOperationError)


def test_an_error_numpy_raises_on_the_mark_is_a_value_error_and_the_refusal():
    W = np.ones(4)

    def step(x):
        np.add(W, x, out=W)
        return x * int(W.sum())

    with pytest.raises(UnsupportedOperationError) as info:
        _capture(step)
    assert isinstance(info.value, ValueError)
    assert "this line raised ValueError: cannot convert float NaN to integer" in str(info.value)


def test_the_combined_error_pickles_as_the_refusal():
    m = Checked()
    with pytest.raises(ValueError) as info:
        _capture(m.step)
    err = info.value
    err.graph = None  # a graph holds weak references: never pickled
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is UnsupportedOperationError and str(again) == str(err)
