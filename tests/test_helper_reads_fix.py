"""A value NumPy computed in a helper from a state the captured function passes it
(``idx = systematic_resample(self.weights)``, whose ``np.cumsum(weights)`` NumPy reads unseen):
the refusal's fix wraps that argument on the function's line, the one fix that applies (stop
35's particle filter was told ``cv.constant(self.particles)``, a state the helper never reads);
applied, the program replays as eager."""

from __future__ import annotations

import numpy as np

import capviz as cv
from tests.helpers.public_census import Program, line_of, run


def systematic_resample(weights, u):
    N = len(weights)
    positions = (u + np.arange(N)) / N
    cumulative_sum = np.cumsum(weights)
    cumulative_sum[-1] = 1.0
    return np.searchsorted(cumulative_sum, positions)


class Filter:
    def __init__(self, n=5):
        self.particles = np.linspace(-1.0, 1.0, n)
        self.weights = np.full(n, 1.0 / n)

    def update(self, z, u):
        self.weights *= np.exp(-0.5 * (cv.constant(self.particles) - z) ** 2)
        self.weights /= np.sum(cv.constant(self.weights))
        idx = systematic_resample(self.weights, u)
        self.particles[:] = cv.constant(self.particles)[idx]
        return cv.constant(self.particles).mean()


class FixedFilter(Filter):
    def update(self, z, u):
        self.weights *= np.exp(-0.5 * (cv.constant(self.particles) - z) ** 2)
        self.weights /= np.sum(cv.constant(self.weights))
        idx = systematic_resample(cv.constant(self.weights), u)
        self.particles[:] = cv.constant(self.particles)[idx]
        return cv.constant(self.particles).mean()


def _setup(kind):
    def setup():
        f = kind()
        calls = [[np.asarray(z), np.asarray(u)] for z, u in ((0.3, 0.1), (-0.2, 0.7), (0.5, 0.4))]
        return Program(f.update, calls, lambda: {"particles": f.particles, "weights": f.weights})
    return setup


def test_a_state_a_helper_reads_through_numpy_is_told_at_the_call_that_passes_it():
    """Told "write each read of the written array as cv.constant(self.particles)" before this
    change (checked)."""
    verdict = run(_setup(Filter))
    assert verdict.kind == "refused" and type(verdict.error) is cv.UnsupportedOperationError
    what, _why, fix = str(verdict.error).splitlines()
    at = line_of(__file__, "return np.searchsorted(cumulative_sum, positions)")
    assert what.startswith(f"`return np.searchsorted(cumulative_sum, positions)` at {__file__}:"
                           f"{at} in systematic_resample: NumPy's own operators computed "
                           "`cumulative_sum` from an array the capture writes")
    call = line_of(__file__, "idx = systematic_resample(self.weights, u)")
    assert fix == (f"Fix: write line {call} as `idx = systematic_resample(cv.constant("
                   "self.weights), u)`: cv.constant(self.weights) is the value the capture "
                   "records for it, before and after its write, and self.weights itself "
                   "outside a capture.")
    assert run(_setup(FixedFilter)).kind == "exact"


class DecayedWeights:
    def __init__(self):
        self.W = np.linspace(1.0, 2.0, 3)

    def step(self, x):
        h = x * self.W
        self.W *= (1 - 1e-2)
        self.W -= 0.1 * h
        return h


class FixedDecayedWeights(DecayedWeights):
    def step(self, x):
        h = x * self.W
        self.W *= cv.constant(np.float64(1 - 0.01))
        self.W -= 0.1 * h
        return h


def test_numpys_write_between_a_read_and_the_captures_write_is_named_with_its_fix():
    """Hostile review 8, finding 8: decoupled weight decay was told 'make that read after the
    write, or read it as an index', neither of which applies (checked before this change);
    the write NumPy made unseen is named, with the tensor form that, applied, replays."""
    with np.errstate(all="ignore"):
        verdict = run(lambda: Program(DecayedWeights().step, [[np.ones(3)], [np.arange(3.0)]]))
    assert verdict.kind == "refused"
    what, why, fix = str(verdict.error).splitlines()
    decay = line_of(__file__, "self.W *= (1 - 1e-2)")
    assert what.startswith("`self.W -= 0.1 * h` at ")
    assert why.endswith(f"then NumPy's own operators wrote it at line {decay} (`self.W *= (1 - "
                        "1e-2)`), a write no replay makes.")
    assert fix == ("Fix: write it with a tensor, which the capture records as a state: "
                   "`self.W *= cv.constant(np.float64(1 - 0.01))`.")
    model, twin = FixedDecayedWeights(), FixedDecayedWeights()
    graph = cv.capture(model.step, np.ones(3))
    for x in (np.ones(3), np.arange(3.0), -np.ones(3)):
        assert np.array_equal(graph.replay({"x": x})["out"], twin.step(x))
        assert np.array_equal(model.W, twin.W)
