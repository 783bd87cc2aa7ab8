"""The peak memory of a first ``cv.capture`` of a step writing one large state (review 4,
finding 15: a 61 MiB float64 state peaked at 923 MiB traced, 15 times its size, from the
second capture's planted values and the post-write fills). Measured with ``tracemalloc``
(what Python and NumPy allocate; deterministic, never timed), against the state's bytes."""

import tracemalloc

import numpy as np
import pytest

import capviz as cv
from tests.helpers.lifting import pinned

SIZE = 1 << 20  # 8 MiB of float64


class Model:
    def __init__(self, init):
        self.W = init

    def step(self, x):
        self.W += (x[:1] * 2).astype(self.W.dtype)
        return x * 1.0


def _peak(model, pin):
    held = pinned(model.W) if pin else []
    tracemalloc.start()
    try:
        graph = cv.capture(model.step, cv.spec((3,), "float64"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del held
    assert graph.complete
    return peak / model.W.nbytes


@pytest.mark.parametrize("init", [np.linspace(-1.0, 1.0, SIZE).copy(), np.ones(SIZE),
                                  np.zeros(SIZE, np.int64)], ids=["distinct", "tied", "int64"])
def test_a_first_capture_peaks_at_a_few_times_the_state(init):
    """Lifted second pass: the first pass's start value and post-write fill, the lifted
    pass's start value (2.1x measured for 61 MiB; was 15x). Pinned, the second capture with
    other values: its planted values, made with 32-bit temporaries and without a sorted copy
    (6.3x measured for 61 MiB)."""
    lifted = _peak(Model(init.copy()), pin=False)  # (not inside an assert: pytest's rewriting
    planted = _peak(Model(init.copy()), pin=True)  # would hold the array, which pins it)
    assert lifted < 3.0 and planted < 7.5, (lifted, planted)
