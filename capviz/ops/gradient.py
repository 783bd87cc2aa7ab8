"""``np.gradient``: central differences inside, one-sided differences at the edges.

One op for every form of the call: the spacing arguments (scalars, or 1-d coordinate arrays,
one per axis) are operands after ``f``, so replay calls ``np.gradient(f, *varargs, axis=...,
edge_order=...)`` exactly as the user did. The op always has one result per differentiated axis;
the handler returns the single array NumPy returns for one axis, or the tuple.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.ops.spec import FunctionSpec, axis_index, define


def _axes(ndim: int, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    return tuple(np.lib.array_utils.normalize_axis_tuple(axis, ndim))


def _gradient(shapes: list, params: dict) -> list:
    """NumPy's checks, in NumPy's order, on shapes; one result of ``f``'s shape per axis."""
    f, *spacing = (tuple(s) if s is not None else () for s in shapes)
    axes = _axes(len(f), params.get("axis"))
    if len(spacing) == 1 and not spacing[0]:
        pass  # one scalar spacing for every axis
    elif len(spacing) == len(axes):
        for ax, s in zip(axes, spacing):
            if not s:
                continue
            if len(s) != 1:
                raise ValueError("distances must be either scalars or 1d")
            if s[0] != f[ax]:
                raise ValueError("when 1d, distances must match the length of the "
                                 "corresponding dimension")
            if s[0] < 2:  # NumPy's diff(distances)[0]
                raise IndexError("index 0 is out of bounds for axis 0 with size 0")
    elif spacing:
        raise TypeError("invalid number of arguments")
    edge_order = params.get("edge_order", 1)
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    for ax in axes:
        if f[axis_index(ax, len(f))] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
    return [f] * len(axes)


def _gradient_dtype(dtypes: list, params: dict) -> np.dtype:
    """NumPy's output type, every result alike: an inexact ``f`` keeps its dtype, anything else
    is float64. (A boolean ``f`` fails NumPy's subtraction on some spacings and not others: the
    handler raises NumPy's error, :mod:`capviz.numpy_api.adapters`.)"""
    f = np.dtype(dtypes[0])
    return f if np.issubdtype(f, np.inexact) else np.dtype(np.float64)


def _one_or_tuple(*results: Any) -> Any:
    """NumPy returns the array for one axis, else a tuple with one array per axis."""
    return results[0] if len(results) == 1 else results


define(FunctionSpec("gradient", ("f", "*varargs"), _gradient, _gradient_dtype, multi=True,
                    container=_one_or_tuple))
