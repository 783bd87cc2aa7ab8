"""Issue 25 on JAX: np.convolve and np.correlate with a length-1 operand
(capviz/backends/jax/functions/polynomials.py's ``one_term``; the hostile review 5, finding
14). Each element is then a sum of one product, which NumPy's ``dot`` adds to +0.0: a zero
product is +0.0 (``np.convolve([-0.0, 1.0], [1.0])`` is ``[0.0, 1.0]``), where XLA simplified
the convolution to the product and kept ``-0.0``, silently, in every mode. Each replay here is
eager NumPy's bits, signs of zeros included (the float64 cases failed before the change;
float16 and float32 were refused by the cancellation check of a sum of one term, and now
compute)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")

VALUES = [0.0, -0.0, 1.0, -1.0, 3.0, 0.7, -7.5, 1e-3, -2.5e3, 1e4, -0.0, 0.0]
DTYPES = [np.float16, np.float32, np.float64]
IDS = ["float16", "float32", "float64"]


def _replayed(fn, args):
    with np.errstate(all="ignore"):
        graph = cv.capture(fn, *args)
    return graph.replay(dict(zip(graph.inputs, args)), backend="jax", to_numpy=True)["out"]


def _assert_numpy_s_bits(fn, args):
    eager = np.asarray(fn(*args))
    got = _replayed(fn, args)
    assert got.dtype == eager.dtype and got.shape == eager.shape
    np.testing.assert_array_equal(got, eager)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(eager))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("kernel", [-0.0, 0.0, 1.0, -2.5], ids=["-0", "0", "1", "-2.5"])
def test_a_length_1_operand_gives_numpy_s_signed_zeros(kernel, name, mode, dtype):
    fn = getattr(np, name)
    a = np.array(VALUES, dtype)
    k = np.array([kernel], dtype)
    _assert_numpy_s_bits(lambda a, k: fn(a, k, mode=mode), (a, k))
    _assert_numpy_s_bits(lambda k, a: fn(k, a, mode=mode), (k, a))


def test_a_length_1_float32_kernel_of_a_float64_array_is_computed_in_float64():
    a = np.array([-0.0, 1.0 / 3.0, 2.0], np.float64)
    k = np.array([0.1], np.float32)
    _assert_numpy_s_bits(lambda a, k: np.convolve(a, k), (a, k))


def test_a_complex_length_1_correlation_is_conjugated_as_numpy_s():
    a = np.array([1 + 2j, -0.5j, 3.0], np.complex128)
    v = np.array([0.5 - 1j])
    want = np.correlate(a, v)
    np.testing.assert_allclose(_replayed(lambda a, v: np.correlate(a, v), (a, v)), want,
                               rtol=1e-12)
    want = np.correlate(v, a, "full")
    np.testing.assert_allclose(_replayed(lambda v, a: np.correlate(v, a, "full"), (v, a)),
                               want, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=["float16", "float32", "float64"])
@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_a_length_1_operand_with_an_infinity_or_nan_is_numpy_s(name, dtype):
    """Each element one product: no padding spreads an infinity or NaN, so the convolution
    check lets it through (capviz/backends/jax/checks.py ``_one_term``); refused before 25j's
    change (216 of 216 cases of /tmp/w25j/conv1.py), NumPy's bits now (NaN's too)."""
    fn = getattr(np, name)
    x = np.array([1.0, np.inf, np.nan, -0.0, 0.0, -np.inf, 3.5, -2.0], dtype)
    for one in ([2.0], [np.inf], [-np.inf], [np.nan], [-0.0]):
        w = np.array(one, dtype)
        for mode in ("full", "same", "valid"):
            for args in ((x, w), (w, x)):
                f = lambda a, b, mode=mode: fn(a, b, mode=mode)  # noqa: E731
                graph = cv.capture(f, *args)
                with np.errstate(all="ignore"):
                    want = f(*args)
                    got = graph.replay(dict(zip(graph.inputs, args)), backend="jax",
                                       to_numpy=True)["out"]
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got.view(f"u{got.itemsize}"),
                                              want.view(f"u{want.itemsize}"))


def test_a_longer_operand_with_an_infinity_stays_checked():
    x = np.array([0.0, 0.5, 1.0])
    graph = cv.capture(lambda a, b: np.convolve(a, b), x, x[:2])
    with pytest.raises(cv.ReplayError, match="an operand of convolve holds an infinity or NaN"):
        graph.replay({graph.inputs[0]: x, graph.inputs[1]: np.array([1.0, np.inf])},
                     backend="jax")
