"""Helpers memoised by hand, as public code writes them (/tmp/review4/memo/helpers.py): a memo
dict in this module, a cache dict on a class (tests/test_memoised.py)."""

import numpy as np

MEMO = {}


def mask(n):
    if n not in MEMO:
        MEMO[n] = np.tril(np.ones((n, n)))
    return MEMO[n]


TABLES = {"pos": np.arange(4.0)}


def shift_table(x):
    TABLES["pos"] = TABLES["pos"] + x  # stores a capture tensor over the array it held
    return x * 1.0


class Layer:
    shared = {}

    def mask(self, n):
        if n not in Layer.shared:
            Layer.shared[n] = np.tril(np.ones((n, n)))
        return Layer.shared[n]
