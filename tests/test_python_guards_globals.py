"""A module global named like an attribute the code reads (review 11, finding 2: refusal of
common code): ``x * self.scale`` with a global ``scale`` in the module (a notebook's ``lr = 0.1``
cell, then ``self.lr = lr``) guarded the global, so a new value of it (the next cell) refused
every replay, naming a value the code never reads. Only names the code loads as globals
(``LOAD_GLOBAL`` / ``LOAD_NAME``) are guarded as globals now; one it does read stays guarded."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import GuardError

X = np.array([1.0, 2.0, 3.0])
scale = 2.0
lr = 0.1


class Model:
    def __init__(self):
        self.scale, self.lr = 3.0, 0.5

    def forward(self, x):
        return x * self.scale - self.lr * x

    def reads_the_global(self, x):
        return x * scale


def test_a_global_named_like_an_attribute_is_not_guarded():
    global scale, lr
    m = Model()
    graph = cv.capture(m.forward, X)
    assert [g.label for g in graph.python_guards if g.label in ("scale", "lr")] == []
    try:
        for step in range(3):
            scale, lr = 5.0 + step, 0.2 + step  # (the module's, not the model's)
            assert np.array_equal(graph.replay({"x": X})["out"], m.forward(X))
    finally:
        scale, lr = 2.0, 0.1


def test_a_global_the_code_reads_is_still_guarded():
    global scale
    m = Model()
    graph = cv.capture(m.reads_the_global, X)
    assert np.array_equal(graph.replay({"x": X})["out"], m.reads_the_global(X))
    try:
        scale = 5.0
        with pytest.raises(GuardError, match=r"^scale was 2\.0 when reads_the_global was "
                                             r"captured \(read at .*\) and is 5\.0 now"):
            graph.replay({"x": X})
    finally:
        scale = 2.0
