"""Philox4x64-10 written in array ops (the code CuPy runs) equals NumPy's own, bit for bit."""

import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry
from capviz.ops import random as rng


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
    assert np.array_equal(registry.get("numpy").random_bits(seed, draw, n), expected)


def test_u32_split_is_the_same_on_both_paths():
    host = registry.get("numpy")
    assert np.array_equal(rng.raw_u32(np, 9, 2, 11, source=host), rng.raw_u32(XP, 9, 2, 11))


class Generic(registry.Backend):
    """A backend that overrides no random hook: Philox in array operations on its namespace."""

    name = "generic"

    def namespace(self):
        return XP


@pytest.mark.parametrize("start,n", [(0, 9), (1, 1), (3, 6), (4, 4), (5, 10), (1001, 37)])
@pytest.mark.parametrize("backend", [registry.get("numpy"), Generic()], ids=["numpy", "generic"])
def test_random_bits_from_any_word_of_the_stream(backend, start, n):
    """A backend drawing one block of a tensor (Dask) asks for the words at its position."""
    stream = np.random.Philox(key=np.array([31, 4], np.uint64)).random_raw(start + n)
    assert np.array_equal(backend.random_bits(31, 4, n, start), stream[start:])
    assert np.array_equal(backend.random_u32(31, 4, 2 * n - 1),
                          stream[:n].view(np.uint32)[:2 * n - 1])


class ReadOnly:
    """NumPy whose results are read-only: ``out=`` into them or an in-place write raises, as
    with immutable arrays (JAX)."""

    __name__ = "readonly"

    def __getattr__(self, name):
        value = getattr(np, name)
        if not callable(value) or isinstance(value, type):
            return value

        def frozen(*args, **kwargs):
            out = value(*args, **kwargs)
            if isinstance(out, np.ndarray):
                out = out.view()
                out.flags.writeable = False
            return out

        return frozen


@pytest.mark.parametrize("fn,params", [
    (rng.uniform, {"low": -2.0, "high": 5.0, "dtype": "float32"}),
    (rng.normal, {"mean": 1.0, "std": 3.0, "dtype": "float64"}),
    (rng.bernoulli, {"p": 0.3, "dtype": "float32"}),
])
def test_transforms_never_write_into_an_array(fn, params):
    expected = fn(np, 5, draw=1, shape=(4, 7), source=registry.get("numpy"), **params)
    got = fn(ReadOnly(), 5, draw=1, shape=(4, 7), **params)
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("fn,params", [
    (rng.uniform, {"low": -2.0, "high": 5.0, "dtype": "float32"}),
    (rng.uniform, {"low": 0.0, "high": 1.0, "dtype": "float64"}),
    (rng.normal, {"mean": 1.0, "std": 3.0, "dtype": "float32"}),
    (rng.normal, {"mean": 0.0, "std": 1.0, "dtype": "float64"}),
    (rng.bernoulli, {"p": 0.3, "dtype": "bool"}),
])
def test_transforms_are_identical_on_the_generic_path(fn, params):
    a = fn(np, 77, draw=4, shape=(3, 5), source=registry.get("numpy"), **params)
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
    with pytest.raises(cv.BackendUnavailableError,
                       match=r"needs CuPy.*pip install '\.\[cuda\]'"):
        g.replay({"x": np.ones(2, np.float32)}, backend="cupy")
    assert g.replay({"x": np.ones(2, np.float32)}, backend="auto").backend == "numpy"
