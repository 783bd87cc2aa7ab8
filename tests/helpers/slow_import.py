"""A module whose import takes two seconds: the eager worker of tests/differential imports a
pickled function's module before the call's time limit starts (tests/test_differential.py)."""

from __future__ import annotations

import time

IMPORT_SECONDS = 2.0
time.sleep(IMPORT_SECONDS)


def doubles(x):
    return x * 2
