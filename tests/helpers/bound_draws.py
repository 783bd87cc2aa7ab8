"""A helper module that binds NumPy's and Python's global draws before any capture (the
scope rebinds such names only in the captured function's own module): tests/test_bound_draws.py."""

from __future__ import annotations

from random import random as python_random

from numpy.random import random as pre_bound_random


def jitter():
    return pre_bound_random()


def python_jitter():
    return python_random()
