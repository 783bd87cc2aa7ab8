"""Issue 25 on JAX: complex adds and subtracts in NumPy's roundings
(capviz/backends/jax/unfused.py's ``complex_sum_kept``). XLA's CPU code reassociated complex
sums: ``(x - y) + y`` came back as ``x`` where NumPy rounds ``x - y`` first (``(0.7 - 1e8) +
1e8`` is ``0``; ``-0.0 - 0.0 + 0.0`` is ``+0.0``), silently, with tensor operands as with
literals (found after the literal guard: ``x - 0.0 + 0.0`` of complex stayed ``-0-0j``). Each
replay here is eager NumPy's bits (each failed before the change)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")


def _data(dtype):
    x = np.array([complex(-0.0, -0.0), 1e-30 + 1e-30j, 0.7 + 0.7j, -3.5 + 2j, 1.0 - 0.0j], dtype)
    y = np.array([0j, 1 + 1j, 1e8 + 1e8j, 1e20 - 1e20j, complex(0.0, -0.0)], dtype)
    return x, y


def _parts_equal(got, want):
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


SPELLINGS = {
    "(x - y) + y": lambda x, y: (x - y) + y,
    "(x + y) - y": lambda x, y: (x + y) - y,
    "x - 0.0 + 0.0": lambda x, y: x - 0.0 + 0.0,
    "(x + 1e8) - 1e8": lambda x, y: (x + 1e8) - 1e8,
    "np.subtract(np.add(x, y), y)": lambda x, y: np.subtract(np.add(x, y), y),
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=["complex64", "complex128"])
@pytest.mark.parametrize("name", list(SPELLINGS))
def test_a_complex_sum_is_rounded_as_numpy_s(name, dtype):
    fn = SPELLINGS[name]
    x, y = _data(dtype)
    graph = cv.capture(fn, x, y)
    got = graph.replay({graph.inputs[0]: x, graph.inputs[1]: y}, backend="jax",
                       to_numpy=True)["out"]
    want = fn(x, y)
    assert got.dtype == want.dtype
    _parts_equal(got, want)
