"""Issue 25 on JAX: complex ``multiply`` and ``square`` in NumPy's fused form
(``capviz/backends/jax/complex_products.py``; the hostile review 6, finding 24). NumPy's SIMD
loop computes ``fma(a, c, -(b d)) + j fma(a, d, b c)``; XLA's own form differed on 25,244 of
200,000 drawn complex64 pairs and 7,310 complex128 ones, and ``x * y - y * x`` of complex64
values near 50 and 5e8 replayed ``0j`` where NumPy gives ``512j``, silently. Every test here
compares bits; all but the zero-sign and real-operand ones fail before (checked on f1d2523)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv
from capviz.backends.jax import complex_products

jax = pytest.importorskip("jax")

pytestmark = pytest.mark.skipif(not complex_products.NUMPY_FUSES,
                                reason="this machine's NumPy multiplies complex values unfused")

DTYPES = {"complex64": (np.complex64, np.float32, 40), "complex128": (np.complex128, np.float64,
                                                                      200)}


def _replay(fn, *arrays):
    graph = cv.capture(fn, *arrays)
    return graph.replay(dict(zip(graph.inputs, arrays)), backend="jax", to_numpy=True)["out"]


def _same_bits(got, want):
    assert got.dtype == want.dtype
    for part in (np.real, np.imag):
        g, w = part(got), part(want)
        np.testing.assert_array_equal(g.view(f"u{g.itemsize}"), w.view(f"u{w.itemsize}"))


def _draw(rng, n, real, emax):
    m = (rng.random(n) + 0.5) * np.sign(rng.random(n) - 0.5)
    v = np.ldexp(m, rng.integers(-emax, emax, n)).astype(real)
    v[rng.random(n) < 0.05] = 0.0
    v[rng.random(n) < 0.05] = -0.0
    return v


def _pairs(name, n=20000, seed=0):
    dtype, real, emax = DTYPES[name]
    rng = np.random.default_rng(seed)
    x = (_draw(rng, n, real, emax) + 1j * _draw(rng, n, real, emax)).astype(dtype)
    y = (_draw(rng, n, real, emax) + 1j * _draw(rng, n, real, emax)).astype(dtype)
    y[: n // 4] = (x[: n // 4] * (1 + 1e-3j)).astype(dtype)  # nearly cancelling parts
    return x, y


@pytest.mark.parametrize("name", list(DTYPES))
def test_a_complex_product_is_numpy_s_bits(name):
    x, y = _pairs(name)
    _same_bits(_replay(lambda x, y: x * y, x, y), x * y)


@pytest.mark.parametrize("name", list(DTYPES))
def test_products_that_cancel_keep_numpy_s_rounding(name):
    # review 6's cplx_add.py: complex64 x near 50, y near 5e8; 0j in the replay before
    dtype = DTYPES[name][0]
    rng = np.random.default_rng(3)
    x = ((rng.random(32) - 0.5) * 100 + 1j * (rng.random(32) - 0.5) * 100).astype(dtype)
    y = x * dtype(1e7)
    _same_bits(_replay(lambda x, y: x * y - y * x, x, y), x * y - y * x)
    got = _replay(lambda x, y: (x * y).real - (x.real * y.real - x.imag * y.imag), x, y)
    np.testing.assert_array_equal(got, (x * y).real - (x.real * y.real - x.imag * y.imag))


@pytest.mark.parametrize("name", list(DTYPES))
def test_a_complex_square_is_numpy_s_bits(name):
    dtype, real, _ = DTYPES[name]
    rng = np.random.default_rng(1)
    emax = 20 if dtype == np.complex64 else 200  # part products normal, below sqrt(max)
    x = (_draw(rng, 20000, real, emax) + 1j * _draw(rng, 20000, real, emax)).astype(dtype)
    _same_bits(_replay(lambda x: np.square(x), x), np.square(x))


@pytest.mark.parametrize("name", list(DTYPES))
def test_signed_zeros_and_real_operands(name):
    dtype, real, _ = DTYPES[name]
    zeros = np.array([0.0, -0.0, 1.0, -1.0], real)
    x = np.array([complex(a, b) for a in zeros for b in zeros], dtype)
    y = x[::-1].copy()
    _same_bits(_replay(lambda x, y: x * y, x, y), x * y)
    _same_bits(_replay(lambda x: x * 2.5, x), x * 2.5)
    r = np.linspace(-3, 3, x.size).astype(real)
    _same_bits(_replay(lambda x, r: x * r, x, r), x * r)


SPREAD = {
    "np.outer(x, y)[0] - x[0] * y": lambda x, y: np.outer(x, y)[0] - x[0] * y,
    "np.outer": lambda x, y: np.outer(x, y),
    "np.linalg.outer": lambda x, y: np.linalg.outer(x, y),
    "np.kron": lambda x, y: np.kron(x, y),
    "np.kron 2-d": lambda x, y: np.kron(x[:6].reshape(2, 3), y[:4].reshape(2, 2)),
    "np.kron of a real": lambda x, y: np.kron(x[:6].reshape(2, 3), y.real[:4]),
    # np.<ufunc>.outer of complex values: refused by name before (no subnormal check)
    "np.multiply.outer": lambda x, y: np.multiply.outer(x, y),
    "np.multiply.outer 2-d": lambda x, y: np.multiply.outer(x[:6].reshape(2, 3), y[:4]),
    "np.multiply.outer(x, y) - np.outer(x, y)":
        lambda x, y: np.multiply.outer(x, y) - np.outer(x, y),
    "np.multiply.outer of a real": lambda x, y: np.multiply.outer(x.real, y),
    "np.add.outer": lambda x, y: np.add.outer(x, y),
    "np.subtract.outer": lambda x, y: np.subtract.outer(x, y),
}


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("spelling", list(SPREAD))
def test_outer_and_kron_use_numpy_s_multiply(spelling, name):
    # NumPy's outer and kron call its multiply loop (fused): the review 7, finding 26,
    # np.outer(x, y)[0] - x[0] * y of complex128 was 15j for NumPy's 0j after 63c93fd
    dtype = DTYPES[name][0]
    rng = np.random.default_rng(5)
    x = ((rng.random(40) - 0.5) * 100 + 1j * (rng.random(40) - 0.5) * 100).astype(dtype)
    y = ((rng.random(30) - 0.5) * 5e8 + 1j * (rng.random(30) - 0.5) * 5e8).astype(dtype)
    fn = SPREAD[spelling]
    _same_bits(_replay(fn, x, y), fn(x, y))


def _cancelling_to_subnormal(name, above):
    """Pairs whose part products are ``2**above`` times the old gate ``tiny * 2**(nmant + 1)``
    and whose real parts ``ac - bd`` cancel (``d = ac / b``): NumPy's fused real part is a
    subnormal for many of them."""
    dtype, real, _ = DTYPES[name]
    info = np.finfo(real)
    half = (np.log2(float(info.tiny)) + info.nmant + 1 + above) / 2
    rng = np.random.default_rng(1)
    a, b, c = (((rng.random(256) + 1) * 2.0 ** half).astype(real) for _ in range(3))
    d = (a.astype(np.float64) * c / b).astype(real)
    return (a + 1j * b).astype(dtype), (c + 1j * d).astype(dtype)


SUBNORMAL = {
    "(x * y).real * s * s": lambda x, y: (x * y).real * _scale(x) * _scale(x),
    "(x * y).real != 0": lambda x, y: (x * y).real != 0,
    "(x * y).imag": lambda x, y: (x * y).imag,
    "np.outer": lambda x, y: np.outer(x, y)[:, :2],
}


def _scale(x):
    real = x.real.dtype.type
    return real(2.0 ** 100) if real == np.float32 else real(2.0 ** 450)


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("spelling", list(SUBNORMAL))
def test_a_fused_part_that_is_subnormal_fails_at_the_node(spelling, name):
    # 63c93fd's fused form keeps ac exact: ac - bd may then be a subnormal NumPy keeps though
    # each part product passes the flush check's gate (multiples of 2 * tiny only once
    # rounded), and complex128's Dekker halves may be subnormal: XLA flushed them, (x * y).real
    # * 2**200 was 0 where NumPy gives 1.6e22 (complex64), silently (fails before: the replay
    # returned)
    x, y = _cancelling_to_subnormal(name, above=1)
    fn = SUBNORMAL[spelling]
    with np.errstate(all="ignore"):
        assert ((x * y).real != 0).all() and (np.abs((x * y).real) < np.finfo(
            x.real.dtype).tiny).any()
    graph = cv.capture(fn, x, y)
    with pytest.raises(cv.ReplayError) as info:
        graph.replay(dict(zip(graph.inputs, (x, y))), backend="jax")
    text = str(info.value)
    op = "outer" if spelling == "np.outer" else "multiply"
    assert re.match(rf"replay failed at node %\d+ \({op}\), recorded at "
                    rf"{re.escape(__file__)}:\d+ in ", text), text
    if name == "complex64":
        assert f"complex {op}: a part of NumPy's fused product (or its rounded part product " \
               "b*d, b*c) is a nonzero value below 1.18e-38, a subnormal float NumPy keeps " \
               "and XLA flushes to zero; replay with backend='numpy', or scale the operands " \
               "up" in text, text
    else:
        assert f"complex {op}: a part of an operand is below 2e-292, or a product of two " \
               "parts below 1.81e-276: NumPy's fused product then makes subnormal floats on " \
               "the way, which it keeps and XLA flushes to zero; replay with " \
               "backend='numpy', or scale the operands up" in text, text


@pytest.mark.parametrize("name", list(DTYPES))
def test_products_far_from_tiny_still_replay_numpy_s_bits(name):
    # the check refuses no product whose parts stay 0 or normal on the way
    x, y = _cancelling_to_subnormal(name, above=120)
    for fn in SUBNORMAL.values():
        with np.errstate(all="ignore"):
            want = fn(x, y)
        got = _replay(fn, x, y)
        if want.dtype.kind == "b":
            np.testing.assert_array_equal(got, want)
        else:
            _same_bits(np.asarray(got, want.dtype) + 0j, want + 0j)


SCALAR = {  # a complex NumPy scalar's own *, NumPy's scalar math: (ac - bd) + (ad + bc)j unfused
    "x[i] * y[i]": lambda x, y: np.stack([x[i] * y[i] for i in range(24)]),
    "x[i] * 2.5": lambda x, y: np.stack([x[i] * 2.5 for i in range(8)]),
    "3 * x[i]": lambda x, y: np.stack([3 * x[i] for i in range(8)]),
    "x[i] * np.float64(0.1)": lambda x, y: np.stack([x[i] * np.float64(0.1) for i in range(8)]),
    "x[i] * 1j": lambda x, y: np.stack([x[i] * 1j for i in range(8)]),
}


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("spelling", list(SCALAR))
def test_a_complex_scalar_product_is_numpy_s_scalar_math(spelling, name):
    # the hostile review 8, finding 10: refused by name before ('scalar_multiply': no run-time
    # check); NumPy's scalar math rounds each product apart (/work/notes/s36/25j/scalarform.py:
    # 9,456 of 20,000 complex64 pairs differ from the fused loop's)
    dtype = DTYPES[name][0]
    rng = np.random.default_rng(7)
    x = ((rng.random(32) - 0.5) * 100 + 1j * (rng.random(32) - 0.5) * 100).astype(dtype)
    y = ((rng.random(32) - 0.5) * 5e8 + 1j * (rng.random(32) - 0.5) * 5e8).astype(dtype)
    y[::2] = (x[::2] * dtype(1e7 * (1 + 1e-3j))).astype(dtype)  # parts that nearly cancel
    fn = SCALAR[spelling]
    _same_bits(np.asarray(_replay(fn, x, y)), np.asarray(fn(x, y)))


EINSUM = {  # one term per output: NumPy's einsum loop multiplies unfused, into a zeroed output
    "np.einsum('i,i->i', x, y)": lambda x, y: np.einsum("i,i->i", x, y),
    "np.einsum('ij,ij->ij', ...)": lambda x, y: np.einsum("ij,ij->ij", x.reshape(4, 8),
                                                          y.reshape(4, 8)),
    "np.einsum('ji,ij->ij', ...)": lambda x, y: np.einsum("ji,ij->ij", x.reshape(8, 4),
                                                          y.reshape(4, 8)),
    "np.einsum('i,j->ij', x, y)": lambda x, y: np.einsum("i,j->ij", x[:6], y[:5]),
    "np.einsum(',i->i', x[0], y)": lambda x, y: np.einsum(",i->i", x[0], y),
    "np.einsum('...,...', x, y)": lambda x, y: np.einsum("...,...", x, y),
    "np.einsum('i,i->i', x, y.real)": lambda x, y: np.einsum("i,i->i", x, y.real),
}


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("spelling", list(EINSUM))
def test_a_complex_einsum_of_one_term_is_numpy_s_loop(spelling, name):
    # #25's item (R7 #26's rest): XLA's own complex product differed in the last bits, and
    # np.einsum('i,i->i', x, y) - x * y cancels them (fails before on these values: checked)
    dtype = DTYPES[name][0]
    rng = np.random.default_rng(9)
    x = ((rng.random(32) - 0.5) * 100 + 1j * (rng.random(32) - 0.5) * 100).astype(dtype)
    y = ((rng.random(32) - 0.5) * 5e8 + 1j * (rng.random(32) - 0.5) * 5e8).astype(dtype)
    y[::2] = (x[::2] * dtype(1e7 * (1 + 1e-3j))).astype(dtype)
    zeros = np.array([0.0, -0.0, 1.0, -1.0], DTYPES[name][1])
    x[:16] = np.array([complex(a, b) for a in zeros for b in zeros], dtype)  # signed zeros
    fn = EINSUM[spelling]
    _same_bits(np.asarray(_replay(fn, x, y)), np.asarray(fn(x, y)))
