"""The JAX backend's refusals decided on shapes, dtypes and parameters are capviz refusals made
while tracing (issue 25, "every failure a capviz error"): an UnsupportedOperationError naming
the op, the node and the user's line (``capviz.backends.jax.trace.refusal``), raised before
anything runs, not a ``NotImplementedError`` (or a bare ``TypeError``) wrapped in a ReplayError
at run time. One case per refusal of ``ops.py``, ``writes.py``, ``ufunc_methods.py`` and
``trace.py`` (``sort(order=...)`` is not reached: NumPy refuses an order of an array without
fields at capture). Before this change each case raised ``ReplayError: replay failed at node
... NotImplementedError: ...``."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import capviz as cv
from capviz import ops
from capviz.backends.jax import trace

jax = pytest.importorskip("jax")

XLA = {"arithmetic": "xla"}


def _divide_at(x):
    y = x * 1
    np.divide.at(y, [0, 1, 1], 2.0)
    return y


def _add_at(x):
    y = x * 1
    np.add.at(y, [0, 1, 1], 0.5)
    return y


def _fix_into(x):
    y = np.zeros_like(x)
    np.fix(x, out=y)
    return y


F = np.array([1.5, -2.25, 3.0])
INTS = np.array([2, 3, 4], np.int32)
C = (np.arange(6.0).reshape(2, 3) * (1 + 1j)).astype(np.complex64)

CASES = {
    "ufunc.at without a scatter": (
        _divide_at, F, {}, "ufunc_at",
        "np.divide.at has no scatter form in jax (its repeated indices apply in order); "
        "supported: np.add.at, np.subtract.at, np.multiply.at, np.maximum.at, np.minimum.at"),
    "ufunc.at in another loop": (
        _add_at, INTS, {}, "ufunc_at",
        "np.add.at of float64 values into a int32 array: NumPy computes each update in "
        "float64 and casts it back"),
    "out= of a refused function": (
        _fix_into, F, {}, "into",
        "fix(..., out=...): jax.numpy has no fix (use np.trunc, which rounds the same way)"),
    "reduce that is not a fold": (
        lambda x: np.power.reduce(x), F, {}, "ufunc_reduce",
        "np.power.reduce on the jax backend: NumPy's reduce loop for power is not a left fold"),
    "integer power method": (
        lambda x: np.power.accumulate(x), INTS, {}, "ufunc_accumulate",
        "np.power.accumulate: an integer power checks every exponent's sign"),
    "linear ramp of integers": (
        lambda x: np.pad(x, 1, mode="linear_ramp"), INTS, {}, "pad",
        "np.pad(..., mode='linear_ramp') of int32 on the jax backend: NumPy's ramp is "
        "np.linspace computed in floats"),
    "mean pad of integers": (
        lambda x: np.pad(x, 1, mode="mean"), INTS, {}, "pad",
        "np.pad(..., mode='mean') of int32 on the jax backend: NumPy computes the statistic "
        "in float64 and rounds it half to even"),
    "median pad of complex": (
        lambda x: np.pad(x, 1, mode="median"), C, XLA, "pad",
        "np.pad(..., mode='median') of complex64 on the jax backend: jax.numpy's median takes "
        "no complex values"),
    "odd reflection of booleans": (
        lambda x: np.pad(x, 3, mode="reflect", reflect_type="odd"), np.array([True, False]),
        {}, "pad",
        "np.pad(..., mode='reflect', reflect_type='odd') of bool by more than one reflection "
        "of an axis on the jax backend"),
    "argmax of complex": (
        lambda x: np.argmax(x), C, XLA, "argmax",
        "argmax of complex values: XLA cannot order complex numbers in argmax"),
    "real dtype of a complex mean": (
        lambda x: np.mean(x, dtype=np.float64), C, XLA, "mean",
        "np.mean(..., dtype=float64) of complex values: jax.numpy takes no real dtype for them"),
    "integer dtype of a mean": (
        lambda x: np.mean(x, dtype=np.int64), INTS, {}, "mean",
        "np.mean(..., dtype=int64): NumPy accumulates in that integer type"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_refusal_decided_on_types_is_an_unsupported_operation_at_the_users_line(case):
    fn, x, options, op, reason = CASES[case]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        graph = cv.capture(fn, x)
        eager = fn(x)
        got = graph.replay({graph.inputs[0]: x}, backend="numpy", to_numpy=True)["out"]
    np.testing.assert_array_equal(got, eager)  # NumPy computes it
    with pytest.raises(cv.UnsupportedOperationError) as info:
        graph.replay({graph.inputs[0]: x}, backend="jax", **options)
    err = info.value
    assert type(err) is cv.UnsupportedOperationError
    text = str(err)
    assert text.startswith(f"op {op!r} cannot run on the jax backend: {reason}"), text
    assert re.search(rf"\(node %\d+, recorded at {re.escape(__file__)}:\d+ in \S+\)$", text)
    assert err.node is not None and err.node.op == op
    assert err.__cause__ is None


def test_a_result_type_jax_does_not_give_is_refused_naming_the_node():
    """``trace._call_conformed``: a jax.numpy function giving another dtype than the node's
    was a bare TypeError inside a ReplayError; now the refusal naming the node."""
    graph = cv.capture(lambda x: np.negative(x), F)
    node = graph.nodes[1]
    with trace.tracing([node]) as t:
        t.enter("negative")
        with pytest.raises(cv.UnsupportedOperationError) as info:
            trace._call_conformed(ops.OPS["negative"], node, lambda a: a.astype(np.int8), (F,),
                                  {})
    text = str(info.value)
    assert text.startswith("op 'negative' cannot run on the jax backend: jax.numpy's negative "
                           "gives int8[3] where NumPy gives float64[3]; replay this graph with "
                           "backend='numpy'")
    assert info.value.node is node and f"(node %{node.index}, recorded at" in text


def _putmask_empty(x):
    y = x * 1
    np.putmask(y, y > 1, np.zeros(0))
    return y


def _fill_diagonal_empty(x):
    y = x * 1
    np.fill_diagonal(y, np.zeros(0))
    return y


@pytest.mark.parametrize("fn, x", [(_putmask_empty, F), (_fill_diagonal_empty, np.ones((3, 3)))])
def test_writing_no_values_leaves_the_array_as_numpy_does(fn, x):
    """``np.putmask(y, m, [])`` and ``np.fill_diagonal(y, [])`` write nothing in NumPy; the JAX
    replay raised a bare ValueError ("cannot assign from an empty value") inside a
    ReplayError."""
    graph = cv.capture(fn, x)
    got = graph.replay({graph.inputs[0]: x}, backend="jax", to_numpy=True)["out"]
    want = fn(x)
    assert got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()
