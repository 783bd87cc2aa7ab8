"""Complex ``np.log1p`` and ``np.expm1`` on JAX in NumPy's own formulas
(``capviz/backends/jax/functions/complex_exponentials.py``): refused at bind before (no check saw
a subnormal part of the result). complex128 ``log1p`` is NumPy's bits (glibc's hypot, written
out); the rest within a few ulps of ``|w|``, inside the tolerance the backend declares for them;
signed zeros as NumPy's; what NumPy would make subnormal, or infinite, fails at the node."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv
from capviz.backends.jax import carried_sources

jax = pytest.importorskip("jax")

RNG = np.random.default_rng(25)

VALUES = [0.0, -0.0, 1e-30, -1e-30, 1e-8, -1e-8, 0.5, -0.5, 1.0, -1.0, -1 + 2.0 ** -20, 2.0,
          -2.0, 3.14159, 10.0, -10.0, 1e10, -1e10, 80.0, -80.0]
GRID = np.array([complex(x, y) for x in VALUES for y in VALUES])


def _replay(fn, z):
    graph = cv.capture(fn, z)
    return graph.replay({graph.inputs[0]: z}, backend="jax", to_numpy=True)["out"]


def _same_parts(got, want):
    """Bit for bit per part, signed zeros included, NaN as NaN."""
    same = np.ones(got.shape, bool)
    for part in (np.real, np.imag):
        g, w = part(got), part(want)
        same &= ((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))
    return same


def _ulps_of_modulus(got, want):
    eps = np.finfo(got.real.dtype).eps
    apart = np.abs(got.astype(np.complex128) - want)
    with np.errstate(invalid="ignore"):
        return np.where(apart == 0, 0.0, apart / (np.abs(want) * eps))


def _random(dtype, n=20_000):
    a = RNG.standard_normal(n) * 10.0 ** RNG.integers(-12, 3, n)
    b = RNG.standard_normal(n) * 10.0 ** RNG.integers(-12, 3, n)
    a = np.where(RNG.random(n) < 0.3, -1 + a * 1e-3, a)  # near the branch point of log1p
    return (a + 1j * b).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", ["log1p", "expm1"])
def test_complex_log1p_and_expm1_replay_within_the_declared_ulps(name, dtype):
    fn = getattr(np, name)
    z = _random(dtype)
    with np.errstate(all="ignore"):
        want = fn(z)
    info = np.finfo(want.real.dtype)
    near = 4 * float(info.tiny) * 2.0 ** (info.nmant + 1)
    keep = np.isfinite(want) & (np.abs(want) < 1e15)  # huge results: the complex check's
    keep &= (np.abs(want.real) > near) & (np.abs(want.imag) > near)  # tiny: the subnormal one
    z = z[keep]
    want = fn(z)
    assert len(z) > 15_000
    got = _replay(fn, z)
    assert got.dtype == want.dtype
    ulps = _ulps_of_modulus(got, want)
    assert ulps.max() <= carried_sources.APPROXIMATED[name], ulps.max()
    if name == "log1p" and dtype == np.complex128:  # glibc's hypot, written out: its bits
        assert _same_parts(got, want).all()


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", ["log1p", "expm1"])
def test_the_signs_of_zeros_and_exact_values_are_numpys(name, dtype):
    fn = getattr(np, name)
    z = GRID.astype(dtype)
    with np.errstate(all="ignore"):
        want = fn(z)
    finite = np.isfinite(want) & (np.abs(want.real) < 1e15) & (np.abs(want.imag) < 1e15)
    z, want = z[finite], want[finite]
    # a part below tiny * 2**(nmant + 1) fails at the node unless NumPy's formula makes it 0
    # (the check's rule, subnormals/complex_functions._parts): those are tested apart
    info = np.finfo(want.real.dtype)
    near = float(info.tiny) * 2.0 ** (info.nmant + 1)
    a, b = z.real, z.imag
    if name == "expm1":
        real_zero = (a == 0) & (np.abs(b) < np.sqrt(float(info.smallest_subnormal)) / 2)
    else:
        real_zero = want.real == 0
    keep = ((np.abs(want.real) >= near) | real_zero) & ((np.abs(want.imag) >= near) | (b == 0))
    z, want = z[keep], want[keep]
    assert len(z) > 250
    got = _replay(fn, z)
    assert (np.signbit(got.real) == np.signbit(want.real)).all()
    assert (np.signbit(got.imag) == np.signbit(want.imag)).all()
    for part in (np.real, np.imag):  # NumPy's zeros are zeros of the same sign
        zero = part(want) == 0
        assert (part(got)[zero] == 0).all()
    assert _ulps_of_modulus(got, want).max() <= carried_sources.APPROXIMATED[name]


@pytest.mark.parametrize("name, z, what", [
    ("log1p", 1e300 + 1e300j, "not finite, or its real or imaginary part reaches"),
    ("expm1", 800.0 + 1j, "not finite, or its real or imaginary part reaches"),
    ("log1p", 1e10 + 1e-300j, "not one NumPy makes exactly 0"),
    ("expm1", -720.0 + 1j, "not one NumPy makes exactly 0"),
    ("expm1", 0.0 + 1e-160j, "not one NumPy makes exactly 0"),
])
def test_values_xla_would_not_give_as_numpy_fail_at_the_node(name, z, what):
    fn = getattr(np, name)
    x = np.array([0.5 + 0.5j, z])
    graph = cv.capture(fn, x)
    with pytest.raises(cv.ReplayError) as info:
        graph.replay({graph.inputs[0]: x}, backend="jax")
    text = str(info.value)
    assert f"({name})" in text and what in text, text
    assert re.search(rf"recorded at {re.escape(__file__)}:\d+", text)


def test_a_real_operand_takes_jax_numpys_own():
    x = np.array([1e-10, 0.5, -0.5, 3.0])
    for fn in (np.log1p, np.expm1):
        np.testing.assert_allclose(_replay(fn, x), fn(x), rtol=1e-14)
