"""Issue 25 on JAX: literal operands kept out of XLA's algebraic simplifier
(capviz/backends/jax/unfused.py's ``opaque_operands``; the hostile review 5, finding 2). XLA
knows a number an add, a subtract or a multiply reads (and an array made of numbers alone: a
``np.zeros``, a ``np.full_like``) as a constant, and rewrites what NumPy computes in two
roundings: ``(x + 12582912.0) - 12582912.0`` to ``x`` (4,270 times the tolerance), ``x * 2 *
0.5`` to ``x`` (NumPy overflows to inf), ``(x * 10) * 0`` to ``x * 0`` (NumPy: NaN where ``x *
10`` is inf), ``x + 0.0`` to ``x`` (NumPy's ``-0.0 + 0.0`` is ``+0.0``), silently. Each replay
here is NumPy's bits (every case but the multiplications by one and the double negation failed
before the guard)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.0, 0.7, 7.5, 4097.3, 1e-30, -1e30,
           65504.0, 1e38, 3e38, 1.7e308]
DTYPES = [np.float16, np.float32, np.float64]


def _data(dtype):
    r = np.random.default_rng(0)
    with np.errstate(over="ignore"):
        return np.concatenate([np.array(SPECIAL), r.standard_normal(64) * 100]).astype(dtype)


def _replayed(fn, args):
    with np.errstate(all="ignore"):  # NumPy's own overflows, when the capture runs fn
        graph = cv.capture(fn, *args)
    return graph.replay(dict(zip(graph.inputs, args)), backend="jax", to_numpy=True)["out"]


def _assert_numpy_s_bits(fn, args):
    """The JAX replay of ``fn`` on ``args`` is eager NumPy's result: dtype, values, NaNs where
    NumPy has them and the signs of everything else (of zeros included)."""
    with np.errstate(all="ignore"):
        eager = np.asarray(fn(*args))
    got = _replayed(fn, args)
    assert got.dtype == eager.dtype
    nan = np.isnan(eager)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], eager[~nan])
    np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(eager[~nan]))


def _sub_in_place(x):
    y = x + 1.0
    y -= 1.0
    return y


def _add_in_place(x):
    y = x * 3.0
    y += 0.0
    return y


C0 = np.float32(0.0)

SPELLINGS = {
    "(x + 12582912.0) - 12582912.0": lambda x: (x + 12582912.0) - 12582912.0,
    "(x + 1e20) - 1e20": lambda x: (x + 1e20) - 1e20,
    "(x - 1e20) + 1e20": lambda x: (x - 1e20) + 1e20,
    "(x + 1) - 1": lambda x: (x + 1) - 1,
    "(x - 3.0) + 3.0": lambda x: (x - 3.0) + 3.0,
    "x + 1 + 2": lambda x: x + 1 + 2,
    "x * 2 * 0.5": lambda x: x * 2 * 0.5,
    "x * 3 * 5": lambda x: x * 3 * 5,
    "x * 0.1 * 10": lambda x: x * 0.1 * 10,
    "(x * 10) * 0": lambda x: (x * 10) * 0,
    "x + 0.0": lambda x: x + 0.0,
    "0.0 + x": lambda x: 0.0 + x,
    "x - -0.0": lambda x: x - (-0.0),
    "x - 0.0 + 0.0": lambda x: x - 0.0 + 0.0,
    "np.add(x, 0)": lambda x: np.add(x, 0),
    "x + np.float32(0)": lambda x: x + np.float32(0),
    "x + a closure's 0-d constant": lambda x: x + C0,
    "x * x + 0.0": lambda x: x * x + 0.0,
    "-x + 0.0": lambda x: -x + 0.0,
    "np.where(x > 0, x, -0.0) + 0.0": lambda x: np.where(x > 0, x, -0.0) + 0.0,
    "y -= 1.0 after y = x + 1.0": _sub_in_place,
    "y += 0.0": _add_in_place,
    "x + np.zeros((), x.dtype)": lambda x: x + np.zeros((), x.dtype),
    "x + np.zeros_like(x)": lambda x: x + np.zeros_like(x),
    "(x + np.ones_like(x)) - np.ones_like(x)": lambda x: (x + np.ones_like(x))
    - np.ones_like(x),
    "(x + full_like(C)) - full_like(C)": lambda x: (x + np.full_like(x, 12582912.0))
    - np.full_like(x, 12582912.0),
    "x + np.arange(n) * 0": lambda x: x + np.arange(x.size, dtype=x.dtype) * 0,
    "x * (np.ones(n) * 3) * 0": lambda x: x * (np.ones(x.shape, x.dtype) * 3) * 0,
    # identities XLA kept NumPy's values for already: kept so
    "x - 0.0": lambda x: x - 0.0,
    "x * 1.0": lambda x: x * 1.0,
    "x / 1.0": lambda x: x / 1.0,
    "x ** 1": lambda x: x ** 1,
    "-(-x)": lambda x: -(-x),
    "x * 0": lambda x: x * 0,
    "np.maximum(x, -inf)": lambda x: np.maximum(x, -np.inf),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=["float16", "float32", "float64"])
@pytest.mark.parametrize("name", list(SPELLINGS))
def test_a_literal_operand_is_computed_as_numpy_computes_it(name, dtype):
    _assert_numpy_s_bits(SPELLINGS[name], (_data(dtype),))


def test_the_cancellation_the_review_found_is_numpy_s_rounding():
    """R5 #2's figure: float32 values near 1 lose their fraction in NumPy (``x + 2**23 *
    1.5`` rounds to an integer), and the replay gave ``x`` back."""
    x = (np.random.default_rng(1).random(4096) + 0.5).astype(np.float32)
    got = _replayed(lambda x: (x + 12582912.0) - 12582912.0, (x,))
    np.testing.assert_array_equal(got, (x + 12582912.0) - 12582912.0)
    assert set(np.unique(got)) <= {0.0, 1.0, 2.0}


def test_an_integer_operand_with_a_float_literal_is_numpy_s_loop():
    """An int32 array plus a float runs in NumPy's float64 loop; the literal made opaque in
    that type, not the array's."""
    x = np.array([0, 1, -7, 2**31 - 1], np.int32)
    _assert_numpy_s_bits(lambda x: (x + 0.5) - 0.5, (x,))
    _assert_numpy_s_bits(lambda x: x * 2 * 0.5, (x,))


def test_a_complex_operand_plus_a_literal_keeps_numpy_s_signed_zeros():
    x = np.array([complex(-0.0, -0.0), 1 + 2j, complex(-0.0, 3.0)], np.complex128)
    got = _replayed(lambda x: -x + 0.0, (x,))
    want = -x + 0.0
    np.testing.assert_array_equal(np.signbit(got.real), np.signbit(want.real))
    np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))
