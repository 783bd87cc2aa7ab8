"""A stand-in for framework code that seeds before creating random weights (burn's trigger)."""

import numpy as np

import capviz as cv


def init_weights(shape, seed=0):
    np.random.seed(seed)  # FRAMEWORK SEED LINE
    return cv.random.normal(shape)


def init_weights_gated(shape, seed=0):
    if not cv.is_capturing():
        np.random.seed(seed)
    return cv.random.normal(shape)
