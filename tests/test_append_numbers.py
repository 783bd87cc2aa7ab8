"""``np.append(x, number)`` ravels the number into an array (int64, float64, complex128, bool)
before concatenating, so it promotes as an array, not as NumPy 2's weak scalar: ``np.append``
of float32 ``x`` and ``0`` or ``0.5`` is float64, of int8 ``x`` and ``0`` int64 (the hostile
review 6, finding 5: the graph recorded float32, the NumPy replay gave float64 against its own
graph, the JAX replay float32, silently)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

CASES = [(np.float32, 0), (np.float32, 0.5), (np.float16, 0.5), (np.int8, 0), (np.int8, 0.5),
         (np.complex64, 1.5), (np.float32, np.float32(0.5)), (np.int8, [1, 2]),
         (np.float32, True), (np.uint8, -1)]


@pytest.mark.parametrize("backend", ["numpy", "jax", "dask"])
@pytest.mark.parametrize("dtype, value", CASES)
def test_append_of_a_number_has_numpys_dtype_and_values(backend, dtype, value):
    pytest.importorskip({"numpy": "numpy", "jax": "jax", "dask": "dask.array"}[backend])
    x = np.arange(3).astype(dtype)
    fn = lambda a: np.append(a, value)  # noqa: E731
    want = fn(x)
    graph = cv.capture(fn, x)
    node = next(n for n in graph.nodes if n.op == "append")
    assert np.dtype(node.dtype) == want.dtype
    got = graph.replay({graph.inputs[0]: x}, backend=backend, to_numpy=True)["out"]
    assert got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()


JOINS = [(np.float32, 1), (np.float32, 0.5), (np.int8, 1), (np.int8, 0.5), (np.float16, True),
         (np.complex64, 2.0)]


@pytest.mark.parametrize("backend", ["numpy", "jax", "dask"])
@pytest.mark.parametrize("name", ["column_stack", "dstack"])
@pytest.mark.parametrize("dtype, value", JOINS)
def test_column_stack_and_dstack_of_a_number_have_numpys_dtype(backend, name, dtype, value):
    """NumPy makes each number an array (asanyarray) before joining: np.column_stack((x, 1))
    of float32 x is float64 (the lead's note on finding 5: the graph and the JAX replay said
    float32)."""
    pytest.importorskip({"numpy": "numpy", "jax": "jax", "dask": "dask.array"}[backend])
    join = getattr(np, name)
    x = np.arange(1).astype(dtype)
    fn = lambda a: join((a, value))  # noqa: E731
    want = fn(x)
    graph = cv.capture(fn, x)
    node = next(n for n in graph.nodes if n.op == name)
    assert np.dtype(node.dtype) == want.dtype
    got = graph.replay({graph.inputs[0]: x}, backend=backend, to_numpy=True)["out"]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
