import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import capviz as cv

# Hypothesis profiles: "ci" (the default here; CI's budget), "thorough" and "dev"
# (pytest --hypothesis-profile=NAME).
settings.register_profile("ci", max_examples=1000, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=20_000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")



@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def f32(rng):
    def make(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    return make


def eager_vs_replay(fn, *arrays):
    """Capture fn on the arrays' specs, replay on them, and return (eager, replayed, graph)."""
    graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    replayed = graph.replay(dict(zip(graph.inputs, arrays)), backend="numpy")
    eager = fn(*[a.copy() for a in arrays])
    return eager, replayed, graph


def assert_bitwise(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), (a, b)
