"""Issue 25 on JAX: ``np.power`` with an exponent XLA approximates (the hostile review 4,
finding 18's rest; capviz/backends/jax/carried.py's ``approximated``, ops.py's
``_float_power``). XLA's ``pow`` is within a few units in the last place of NumPy's, so a
difference of two powers that cancels was far beyond the tolerance, silently (``x ** y - y **
x`` of float32 values near 10: 1,000 times it; ``np.power(x, 3.3) - np.power(y, 3.3)``: 2.4
times). Such a power now carries its bound to the add or subtract, which fails there with the
user's line; a power NumPy computes exactly (``x * x``, ``sqrt``, ``1 / x``) is NumPy's bits."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")


def _near(dtype):
    r = np.random.default_rng(0)
    x = (10 + r.random(4096)).astype(dtype)
    step = dtype(1e-6) if dtype == np.float32 else dtype(1e-14)
    y = (x + step * r.random(4096).astype(dtype) * x).astype(dtype)
    return x, y


def _replay(fn, args):
    graph = cv.capture(fn, *args)
    return graph.replay(dict(zip(graph.inputs, args)), backend="jax", to_numpy=True)["out"]


def _apart(dtype, scale):
    """Values near ``scale`` and others a few units in the last place from them: where a
    power of them is large (beyond ``1e-4 / eps``), the difference of the two powers is far
    smaller than the powers' own error, as in ``x ** y - y ** x`` near 10."""
    x, y = _near(dtype)
    return (x * dtype(scale / 10)).astype(dtype), (y * dtype(scale / 10)).astype(dtype)


CANCELLING = {
    "np.power(x, 3.3) - np.power(y, 3.3)": (lambda x, y: np.power(x, 3.3) - np.power(y, 3.3),
                                            1e4),
    "x ** y - y ** x": (lambda x, y: x ** y - y ** x, 20),
    "x ** 2.5 - y ** 2.5": (lambda x, y: x ** 2.5 - y ** 2.5, 1e5),
    "x ** 3 - y ** 3": (lambda x, y: x ** 3 - y ** 3, 1e4),
    "x ** -2 - y ** -2": (lambda x, y: x ** -2 - y ** -2, 1e-6),
    "np.power(x, y) - np.power(y, y) (a tensor exponent)":
        (lambda x, y: np.power(x, y) - np.power(y, y), 20),
    "np.float_power(x, 2) - np.float_power(y, 2)":
        (lambda x, y: np.float_power(x, 2) - np.float_power(y, 2), 1e6),
    "x ** 7 * 1e-3 - y ** 7 * 1e-3 (scaled on the way)":
        (lambda x, y: x ** 7 * 1e-3 - y ** 7 * 1e-3, 1e3),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", list(CANCELLING))
def test_a_cancelling_difference_of_approximated_powers_fails_at_the_subtract(name, dtype):
    fn, scale = CANCELLING[name]
    x, y = _apart(dtype, scale)
    graph = cv.capture(fn, x, y)
    with pytest.raises(cv.ReplayError) as info:
        graph.replay(dict(zip(graph.inputs, (x, y))), backend="jax")
    message = str(info.value)
    assert "(subtract), recorded at" in message and __file__ in message
    assert "computed by XLA's own np." in message
    assert "power" in message  # np.power or np.float_power
    assert "replay with backend='numpy'" in message
    assert info.value.node.op == "subtract"


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_the_same_powers_without_the_cancellation_replay_within_the_tolerance(dtype):
    x, y = _near(dtype)
    fn = lambda x, y: (np.power(x, 3.3) - 1.0, x ** y + y ** x, x ** 3 - 2.0)  # noqa: E731
    graph = cv.capture(fn, x, y)
    got = graph.replay(dict(zip(graph.inputs, (x, y))), backend="jax", to_numpy=True)
    for name, want in zip(graph.outputs, fn(x, y)):
        np.testing.assert_allclose(got[name], want, rtol=1e-6 if dtype == np.float32 else 1e-14)


EXACT = {
    "np.power(x, 2) - y * y": lambda x, y: np.power(x, 2) - y * y,
    "np.power(x, 2.0) - y * y": lambda x, y: np.power(x, 2.0) - y * y,
    "np.power(x, 0.5) - np.sqrt(y)": lambda x, y: np.power(x, 0.5) - np.sqrt(y),
    "np.power(x, -1) - 1 / y": lambda x, y: np.power(x, -1.0) - 1 / y,
    "np.power(x, 1) - y": lambda x, y: np.power(x, 1) - y,
    "np.power(x, 0) - 1": lambda x, y: np.power(x, 0) - 1.0,
    "x ** 2 - y ** 2": lambda x, y: x ** 2 - y ** 2,
    "np.float_power(x, 1) - y": lambda x, y: np.float_power(x, 1) - y,
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", list(EXACT))
def test_a_power_numpy_computes_exactly_is_numpy_s_bits(name, dtype):
    x, y = _near(dtype)
    fn = EXACT[name]
    got = _replay(fn, (x, y))
    want = fn(x, y)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_np_power_by_one_half_is_numpy_s_square_root_at_special_values(dtype):
    """NumPy's loop takes ``sqrt`` for an exponent of 0.5: ``-0.0`` and ``-inf`` give ``-0.0``
    and NaN, where XLA's ``pow`` gave ``0.0`` and ``inf``."""
    x = np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, -1.0, 4.0, 2.0], dtype)
    with np.errstate(invalid="ignore"):
        want = np.power(x, 0.5)
    got = _replay(lambda x: np.power(x, 0.5), (x,))
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_a_negative_integer_power_of_a_small_float32_is_finite_as_numpy_s():
    """jax.numpy raised ``x`` to -16 as ``1 / x ** 16``: ``x ** 16`` of 0.0041 is below
    float32's smallest normal, flushed to 0, and the replay gave ``inf`` where NumPy's is
    1.57e38."""
    x = np.array([0.0041, 0.005, 2.0, 0.0039, -0.0041], np.float32)
    with np.errstate(over="ignore"):
        want = x ** -16
    got = _replay(lambda x: x ** -16, (x,))
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def _assert_as_numpy_within_pow(fn, args):
    """The replay of ``fn`` has NumPy's dtype, NaNs and infinities where NumPy has them, and
    finite values within the ulps of XLA's ``pow``."""
    with np.errstate(all="ignore"):
        want = fn(*args)
    got = _replay(fn, args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    tol = 8 * np.finfo(want.dtype).eps if want.dtype.kind == "f" else 0
    np.testing.assert_allclose(got, want, rtol=tol, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=["float16", "float32", "float64"])
def test_np_logspace_of_infinite_and_nan_ends_has_numpy_s_nans(dtype):
    """The differential profile's 3 silent cases: jax.numpy's logspace gave ``inf`` and ``0.0``
    where NumPy's points, ``0 * inf + inf``, are NaN."""
    a = np.array([np.inf, -1.0, 0.0, 1.0, -np.inf, 0.5], dtype)
    b = np.array([-1.5, 2.0, np.nan, -np.inf, 1.0, 0.25], dtype)
    _assert_as_numpy_within_pow(lambda a, b: np.logspace(a, b, 3), (a, b))
    _assert_as_numpy_within_pow(lambda a, b: np.logspace(b, a, 4, endpoint=False), (a, b))


def test_np_logspace_forms_are_numpy_s():
    r = np.random.default_rng(5)
    a = r.uniform(-3, 3, 5).astype(np.float32)
    b = r.uniform(-3, 3, 5).astype(np.float32)
    base = [2.0, 3.0, 10.0, 0.5, 7.0]
    _assert_as_numpy_within_pow(lambda a, b: np.logspace(a, b, 7, base=2.0, axis=1), (a, b))
    _assert_as_numpy_within_pow(lambda a, b: np.logspace(a, b, 6, base=base, axis=-1),
                                (a, b))
    _assert_as_numpy_within_pow(lambda a, b: np.logspace(a, b, 6, dtype=np.int64), (a, b))


def test_a_cancelling_difference_of_logspaces_fails_at_the_subtract():
    r = np.random.default_rng(6)
    a = (10 + r.random(64)).astype(np.float32)
    b = (a * np.float32(1 + 1e-6)).astype(np.float32)
    fn = lambda a, b: np.logspace(a, a + 1, 3) - np.logspace(b, b + 1, 3)  # noqa: E731
    graph = cv.capture(fn, a, b)
    with pytest.raises(cv.ReplayError, match=r"\(subtract\), recorded at .*computed by "
                       r"XLA's own np.logspace") as info:
        graph.replay(dict(zip(graph.inputs, (a, b))), backend="jax")
    assert __file__ in str(info.value)
