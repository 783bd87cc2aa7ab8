"""Generators held where no walk of a captured function looks: in the closure of a function
kept on an object of this module (tests/test_backstop.py)."""

from __future__ import annotations

import random

import numpy as np


def _make_sampler(rng):
    def sample(shape):
        return rng.standard_normal(shape)

    return sample


class Noise:
    """Noise whose generator lives in a closure cell of its ``_draw`` function."""

    def __init__(self, rng):
        self._draw = _make_sampler(rng)

    def __call__(self, shape):
        return self._draw(shape)


def _make_jitter(seed):
    gen = random.Random(seed)

    def jitter():
        return gen.random()

    return jitter


NOISE = Noise(np.random.default_rng(7))
LEGACY = Noise(np.random.RandomState(7))
JITTER = [_make_jitter(3)]
