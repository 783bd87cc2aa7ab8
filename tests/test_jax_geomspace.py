"""Issue 25 on JAX: ranges as NumPy makes them. A range of plain numbers made inside a capture
(``np.arange``, ``np.linspace``, ``np.logspace``, ``np.geomspace``: the ``create`` op) was
jax.numpy's, whose points are others (``np.arange(-2.0, 1e3, 1 / 3)``: 2,844 of 3,006 an ulp
or more off; ``np.geomspace(1e10, 1e14, 101)``: 60 of 101): ``x - np.geomspace(...)`` of
``x`` holding NumPy's points was not NumPy's 0, beyond the tolerance for large ends, silently.
It is now NumPy's own, made when the program is traced (capviz/backends/jax/ops.py,
``_create``). ``np.geomspace`` of array ends is XLA's ``log10`` and ``pow``, whose gap to
NumPy's grows with the ends' exponents (measured: 5 ulps for ends in [1, 10], 52 in [1e-5,
1e5], 293 in [1e-30, 1e30], 2,238 in [1e-300, 1e300] in float64, 398 in float32 over its
range); it is declared among the approximated functions (capviz/backends/jax/carried.py,
``APPROXIMATED``), its bound carried to the add or subtract that cancels it, which fails there
with the user's line (before: silent)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")

RANGES = {
    "np.arange(-2.0, 1e3, 1 / 3)": lambda: np.arange(-2.0, 1e3, 1 / 3),
    "np.linspace(-3.3, 1e12, 101)": lambda: np.linspace(-3.3, 1e12, 101),
    "np.logspace(-5, 12, 101)": lambda: np.logspace(-5, 12, 101),
    "np.geomspace(1e10, 1e14, 101)": lambda: np.geomspace(1e10, 1e14, 101),
    "np.geomspace(-1, -1000, 4)": lambda: np.geomspace(-1, -1000, 4),
    "np.linspace(0, 1, 7, dtype=np.float32)": lambda: np.linspace(0, 1, 7, dtype=np.float32),
    "np.logspace(0, 3, 7, base=2.0)": lambda: np.logspace(0, 3, 7, base=2.0),
}


@pytest.mark.parametrize("name", list(RANGES))
def test_a_range_of_numbers_is_numpy_s_points(name):
    make = RANGES[name]
    x = make().copy()
    fn = lambda x: x - make()  # noqa: E731
    graph = cv.capture(fn, x)
    got = graph.replay({graph.inputs[0]: x}, backend="jax", to_numpy=True)["out"]
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, np.zeros_like(x))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(fn(x)))


def test_geomspace_of_array_ends_is_declared_where_a_subtract_cancels_it():
    ends = np.array([1e10, 1e14])
    want = np.geomspace(1e10, 1e14, 101)
    graph = cv.capture(lambda e, w: np.geomspace(e[0], e[1], 101) - w, ends, want)
    with pytest.raises(cv.ReplayError, match=r"np\.subtract: .*computed by XLA's own "
                                             r"np\.geomspace"):
        graph.replay({graph.inputs[0]: ends, graph.inputs[1]: want}, backend="jax")


def test_geomspace_of_array_ends_without_a_cancellation_is_within_the_tolerance():
    ends = np.array([1e-3, 1e5], np.float32)
    graph = cv.capture(lambda e: np.geomspace(e[0], e[1], 50), ends)
    got = graph.replay({graph.inputs[0]: ends}, backend="jax", to_numpy=True)["out"]
    want = np.geomspace(ends[0], ends[1], 50)
    np.testing.assert_allclose(got, want, rtol=400 * np.finfo(np.float32).eps)
