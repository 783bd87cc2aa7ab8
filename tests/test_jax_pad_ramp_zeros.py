"""Issue 25 on JAX: np.pad(..., mode='linear_ramp') keeps NumPy's +0.0 (the review 7, finding
29). NumPy's ramp is ``arange(n) * step + end``: with an end value of 0.0 a zero ramp value is
+0.0 (``-0.0 + 0.0``), and with -0.0 the step ``edge - (-0.0)`` of a zero edge is +0.0; XLA
folded ``x + 0.0`` and ``x - (-0.0)`` to ``x`` and kept -0.0 next to a -0.0 edge, silently
(1 / the padded value: -inf for NumPy's inf). Fails before (checked on 05621bc)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=["float16", "float32", "float64"])
@pytest.mark.parametrize("end", [None, 0.0, -0.0])
@pytest.mark.parametrize("width", [1, 2])
def test_a_ramp_to_a_negative_zero_edge_is_numpy_s_zero(width, end, dtype):
    x = np.array([[-0.0, 0.5, -1.0], [0.0, -0.0, 2.0]], dtype)
    kw = {} if end is None else {"end_values": end}

    def fn(a):
        return np.pad(a, width, mode="linear_ramp", **kw)

    graph = cv.capture(fn, x)
    got = graph.replay({graph.inputs[0]: x}, backend="jax", to_numpy=True)["out"]
    want = fn(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))
