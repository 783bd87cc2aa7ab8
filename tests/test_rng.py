"""Philox4x64-10 written in array ops (the code CuPy runs) equals NumPy's own, bit for bit."""

import numpy as np
import pytest

import capviz as cv
from capviz import rng


class OtherNamespace:
    """NumPy under another name: capviz takes the generic array-op path, as it does on CuPy."""

    __name__ = "other"

    def __getattr__(self, name):
        return getattr(np, name)


XP = OtherNamespace()


@pytest.mark.parametrize("seed,draw,n", [(0, 0, 1), (5, 0, 7), (2**64 - 1, 3, 33),
                                         (123456789, 2**63 + 5, 1000)])
def test_generic_philox_equals_numpy_philox(seed, draw, n):
    expected = np.random.Philox(key=np.array([seed, draw], np.uint64)).random_raw(n)
    assert np.array_equal(rng.philox_raw(np, seed, draw, n), expected)
    assert np.array_equal(rng.raw_bits(XP, seed, draw, n), expected)


def test_u32_split_is_the_same_on_both_paths():
    assert np.array_equal(rng.raw_u32(np, 9, 2, 11), rng.raw_u32(XP, 9, 2, 11))


@pytest.mark.parametrize("fn,params", [
    (rng.uniform, {"low": -2.0, "high": 5.0, "dtype": "float32"}),
    (rng.uniform, {"low": 0.0, "high": 1.0, "dtype": "float64"}),
    (rng.normal, {"mean": 1.0, "std": 3.0, "dtype": "float32"}),
    (rng.normal, {"mean": 0.0, "std": 1.0, "dtype": "float64"}),
    (rng.bernoulli, {"p": 0.3, "dtype": "bool"}),
])
def test_transforms_are_identical_on_the_generic_path(fn, params):
    a = fn(np, 77, draw=4, shape=(3, 5), **params)
    b = fn(XP, 77, draw=4, shape=(3, 5), **params)
    assert a.dtype == b.dtype == np.dtype(params["dtype"]) and a.shape == (3, 5)
    assert np.array_equal(a, b)


def test_uniform_bounds_and_bernoulli_extremes():
    u = rng.uniform(np, 1, draw=0, shape=(10_000,), dtype="float32", low=0.0, high=1.0)
    assert u.min() >= 0 and u.max() < 1
    assert rng.bernoulli(np, 1, draw=0, shape=(100,), dtype="bool", p=1.0).all()
    assert not rng.bernoulli(np, 1, draw=0, shape=(100,), dtype="bool", p=0.0).any()


@pytest.mark.parametrize("bad,error,message", [(-1, ValueError, r"\[0, 2\*\*64\)"),
                                               (2**64, ValueError, r"\[0, 2\*\*64\)"),
                                               (1.5, TypeError, "integer"),
                                               (True, TypeError, "integer")])
def test_seed_validation(bad, error, message):
    with pytest.raises(error, match=message):
        cv.Device("numpy").seed(bad)


def test_cupy_backend_without_cupy_names_the_extra():
    try:
        import cupy  # noqa: F401
    except ImportError:
        pass
    else:  # pragma: no cover - on a GPU machine the backend exists
        pytest.skip("CuPy is installed here")
    with pytest.raises(cv.BackendUnavailableError, match=r"pip install '\.\[cuda\]'"):
        cv.Device("cupy")
    g = cv.capture(lambda x: x + 1, cv.spec(2))
    with pytest.raises(cv.BackendUnavailableError, match=r"needs CuPy.*pip install '\.\[cuda\]'"):
        g.replay({"x": np.ones(2, np.float32)}, backend="cupy")
    assert g.replay({"x": np.ones(2, np.float32)}, backend="auto").backend == "numpy"
