"""Complex ``np.tan`` and ``np.tanh`` on JAX in glibc's formulas (``ctan``, ``ctanh``, which NumPy
calls: ``capviz/backends/jax/functions/complex_tangents.py``): refused at bind before (no check
saw a subnormal part of the result; XLA's own forms are 225 ulps of ``|w|`` off). Within a few
ulps of ``|w|``, inside the tolerance the backend declares for them; NumPy's zeros and their
signs; what NumPy would make subnormal, or infinite, fails at the node."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv
from capviz.backends.jax import carried_sources

jax = pytest.importorskip("jax")

RNG = np.random.default_rng(25)

VALUES = [0.0, -0.0, 1e-30, -1e-30, 1e-8, -1e-8, 0.5, -0.5, 1.0, -1.0, 1.5707963267948966,
          -1.5707963267948966, 2.0, 3.141592653589793, -3.141592653589793, 10.0, -10.0, 30.0,
          -30.0, 50.0, -50.0, 400.0, -400.0, 800.0, -800.0, 1e10, -1e10]
GRID = np.array([complex(x, y) for x in VALUES for y in VALUES])


def _replay(fn, z):
    graph = cv.capture(fn, z)
    return graph.replay({graph.inputs[0]: z}, backend="jax", to_numpy=True)["out"]


def _ulps_of_modulus(got, want):
    eps = np.finfo(got.real.dtype).eps
    apart = np.abs(got.astype(np.complex128) - want)
    with np.errstate(invalid="ignore"):
        return np.where(apart == 0, 0.0, apart / (np.abs(want) * eps))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", ["tan", "tanh"])
def test_complex_tan_and_tanh_replay_within_the_declared_ulps(name, dtype):
    fn = getattr(np, name)
    n = 20_000
    z = (RNG.standard_normal(n) * 10.0 ** RNG.integers(-8, 2, n)
         + 1j * RNG.standard_normal(n) * 10.0 ** RNG.integers(-8, 2, n)).astype(dtype)
    with np.errstate(all="ignore"):
        want = fn(z)
    info = np.finfo(want.real.dtype)
    near = 4 * float(info.tiny) * 2.0 ** (info.nmant + 1)
    keep = np.isfinite(want) & (np.abs(want.real) > near) & (np.abs(want.imag) > near)
    z, want = z[keep], want[keep]
    assert len(z) > 19_000
    got = _replay(fn, z)
    assert got.dtype == want.dtype
    assert _ulps_of_modulus(got, want).max() <= carried_sources.APPROXIMATED[name]


def _kept(name, z, want):
    """The grid values the subnormal check lets through: each part at least tiny * 2**(nmant
    + 1), or 0 by glibc's formula (its hyperbolic part where that argument is 0; its trig part
    where that argument is 0, or the other past 2t)."""
    info = np.finfo(want.real.dtype)
    near = float(info.tiny) * 2.0 ** (info.nmant + 1)
    past = 2 * int((info.maxexp - 1) * np.log(2) / 2)
    h, g = (z.real, z.imag) if name == "tanh" else (z.imag, z.real)
    zero_h, zero_g = h == 0, (g == 0) | (np.abs(h) > past)
    zero_re, zero_im = (zero_h, zero_g) if name == "tanh" else (zero_g, zero_h)
    return ((np.abs(want.real) >= near) | zero_re) & ((np.abs(want.imag) >= near) | zero_im)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", ["tan", "tanh"])
def test_the_zeros_signs_and_large_arguments_are_numpys(name, dtype):
    fn = getattr(np, name)
    z = GRID.astype(dtype)
    with np.errstate(all="ignore"):
        want = fn(z)
    keep = np.isfinite(want) & (np.abs(z) < np.sqrt(np.finfo(want.real.dtype).max))
    keep &= _kept(name, z, want)
    z, want = z[keep], want[keep]
    assert len(z) > 300
    got = _replay(fn, z)
    assert (np.signbit(got.real) == np.signbit(want.real)).all()
    assert (np.signbit(got.imag) == np.signbit(want.imag)).all()
    h = np.abs(z.real if name == "tanh" else z.imag)
    one = h > np.log(np.finfo(want.real.dtype).max) / 2  # past t: copysign(1, .) exactly
    for part in (np.real, np.imag):  # NumPy's zeros are zeros
        exact = part(want) == 0
        assert (part(got)[exact] == 0).all()
    exact = one & ((np.abs(want.real) == 1) | (np.abs(want.imag) == 1))
    assert (got[exact] == want[exact]).all()
    assert _ulps_of_modulus(got, want).max() <= carried_sources.APPROXIMATED[name]


@pytest.mark.parametrize("name, z, what", [
    ("tan", np.pi + 350j, "not one NumPy makes exactly 0"),  # sin(pi) / cosh(700): subnormal
    ("tanh", 350 + np.pi * 1j, "not one NumPy makes exactly 0"),
    ("tanh", 400 + 1j, "not one NumPy makes exactly 0"),
    ("tan", 1e300 + 1j, "not finite, or its real or imaginary part reaches"),
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
