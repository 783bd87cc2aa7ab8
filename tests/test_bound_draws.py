"""A draw from a global generator through a name bound before the capture in a helper's module
(where the scope cannot rebind it), beside a draw the hooks record: refused at the scope's exit
with the fix, never baked into the graph as the capture's number (stop 35's particle filter,
whose resampling helper drew ``pre_bound_random()`` in its own module: told "a Python number
that changes"; with no array state written, silent)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import capviz as cv
from tests.helpers import bound_draws
from tests.helpers.bound_draws import jitter, python_jitter
from tests.helpers.public_census import line_of


def numpy_step(x):
    return x * np.random.rand() + jitter()


def python_step(x):
    return x * random.random() + python_jitter()


@pytest.mark.parametrize("fn, which", [(numpy_step, "NumPy's global generator"),
                                       (python_step, "Python's random")])
def test_a_pre_bound_draw_in_a_helpers_module_beside_a_hooked_draw_is_refused(fn, which):
    """Silent before this change (checked: the replay added the capture's number each call;
    the hooked draw counted as a call that explained the generator's change)."""
    np.random.seed(0)
    random.seed(0)
    numpy_before, python_before = np.random.get_state()[1].copy(), random.getstate()
    with pytest.raises(cv.FrozenRandomError) as info:
        cv.capture(fn, cv.spec((3,), np.float64))
    what, fix = str(info.value).splitlines()
    helper = "jitter" if fn is numpy_step else "python_jitter"
    name = "pre_bound_random" if fn is numpy_step else "python_random"
    line = line_of(bound_draws.__file__, f"return {name}()")
    assert what.startswith(f"{which} changed with no call capviz saw at "
                           f"{bound_draws.__file__}:{line} in {helper}: a draw through a "
                           f"function bound before the capture (`{name}()` bound before the "
                           f"capture in {helper}'s module where the scope cannot rebind it)")
    assert fix == ("Fix: call it through its module (np.random.rand(...)), or bind it at the "
                   "top of the captured function's module, where the scope rebinds it")
    assert (np.random.get_state()[1] == numpy_before).all() and random.getstate() == python_before
