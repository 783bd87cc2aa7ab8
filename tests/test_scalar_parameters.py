"""A NumPy scalar in a parameter NumPy computes with (``q``, ``discont``, ``period``, ``range``
items, ``np.logspace``'s ``base``: ``capviz/numpy_api/registry.py``): NEP 50 promotes a
narrower operand to the scalar's type, which the Python number a graph records would not, so
the capture refuses it with the fix; a parameter whose type changes nothing replays as NumPy
(hostile review, finding 6)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv


def assert_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), (got, want)
    assert got.tobytes() == np.ascontiguousarray(want).tobytes(), (got, want)


@pytest.mark.parametrize("call, expr, wide", [
    (lambda a: np.quantile(a, np.float64(0.3)), "np.quantile(..., q=np.float64(...))", "float64"),
    (lambda a: np.percentile(a, np.int64(30)), "np.percentile(..., q=np.int64(...))", "float64"),
    (lambda a: np.unwrap(a, discont=np.float64(3.0)), "np.unwrap(..., discont=np.float64(...))",
     "float64"),
    (lambda a: np.histogram_bin_edges(a, 4, range=(np.float64(0.1), np.float64(0.9))),
     "np.histogram_bin_edges(..., range=np.float64(...))", "float64"),
    # (review W=25a: base=np.float64(10) was recorded as 10.0: float32 where NumPy gives float64)
    (lambda a: np.logspace(a[0], a[1], 3, base=np.float64(10)),
     "np.logspace(..., base=np.float64(...))", "float64"),
    (lambda a: np.logspace(a[0], a[1], 3, base=np.int64(10)),
     "np.logspace(..., base=np.int64(...))", "float64"),
])
def test_a_numpy_scalar_that_promotes_a_narrow_operand_is_refused_with_the_fix(call, expr, wide):
    # the capture recorded np.float64(0.3) as the Python float 0.3, which NEP 50 treats as weak:
    # every replay gave float32 where NumPy gives float64 (and unwrap another period)
    a = np.array([3.0, 1.0, 2.0, 7.5], np.float32)
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(call, a)
    message = str(info.value)
    assert expr in message
    assert "NumPy computes a float32 operand with a NumPy scalar" in message
    assert f"Fix: cast the operand (a.astype(np.{wide}))" in message


@pytest.mark.parametrize("call", [
    lambda a: np.quantile(a, 0.3),  # weak: float32, as recorded
    lambda a: np.percentile(a, [np.int64(30)]),  # a list is strong either way
    lambda a: np.quantile(a.astype(np.float64), np.float64(0.3)),  # nothing narrower
    lambda a: np.unwrap(a, discont=3.0),
    lambda a: np.histogram_bin_edges(a, 4, range=(0.1, 0.9)),
    lambda a: np.logspace(a[0], a[1], 3, base=10.0),
    lambda a: np.logspace(a[0], a[1], 3, base=float(np.float64(2.5))),  # the fix applied
    lambda a: np.logspace(*a.astype(np.float64)[:2], 3, base=np.float64(10)),  # the other fix
])
def test_a_parameter_whose_type_changes_nothing_still_replays_as_numpy(call):
    a = np.array([3.0, 1.0, 2.0, 7.5], np.float32)
    graph = cv.capture(call, a)
    assert_bits(graph.replay({"a": a})["out"], call(a))


def test_the_fix_for_a_numpy_scalar_in_range_passes_its_items_as_python_numbers():
    a = np.array([0.15, 0.3, 0.77, 0.5], np.float32)
    with pytest.raises(cv.UnsupportedOperationError, match=re.escape(
            "or pass range=tuple(float(v) for v in range) to compute in float32")):
        cv.capture(lambda a: np.histogram(a, 4, range=(np.float64(0.1), 0.9))[1], a)
