"""Arrays made inside a capture (the ``create`` op) and draws from a live generator (``draw``).

While a capture is open, NumPy's creation functions called by the user's code (``np.zeros``,
``np.ones``, ``np.empty``, ``np.full``, ``np.eye``, ``np.identity``, ``np.arange``,
``np.linspace``, and the ``_like`` forms on ndarrays; :mod:`capviz.randomness.creation` hooks
them) record one ``create`` op instead of allocating: a node with no operands whose params say
which function NumPy runs and with what plain arguments. Every later write and read of the
buffer is then recorded like any tensor's (``out = np.zeros((n, h)); out[t] = np.tanh(...)``).

The op's callable is the function of the backend's namespace called as the user called it, so
replay on NumPy is the eager allocation. ``np.empty`` replays as ``zeros``: the elements NumPy
leaves unset hold whatever memory held, which no replay can reproduce, so the graph makes them
zeros (code that reads them before writing them reads garbage eagerly).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from capviz.ops.table import Op, register

SHAPED = ("zeros", "ones", "empty", "full")
"""Functions taking a shape first: ``np.zeros(shape, dtype=float, order="C")``..."""
SQUARE = ("eye", "identity")
"""Functions taking a size: ``np.eye(N, M=None, k=0, dtype=float, order="C")``, ``identity``."""
RANGES = ("arange", "linspace", "logspace", "geomspace")
"""1-d ranges, whose length follows from their plain arguments."""
FUNCTIONS = SHAPED + SQUARE + RANGES
"""Every function the ``create`` op runs."""
LIKE = ("zeros_like", "ones_like", "empty_like", "full_like")
"""Hooked for an ndarray prototype: a ``create`` of its shape, dtype and memory order."""
COPIES = ("copy", "array")
"""Hooked for an ndarray argument: the value the capture recorded for it, copied."""
CONVERTS = ("asarray", "asanyarray")
"""Hooked for a tensor argument (or a list holding tensors): the tensor itself, or a stack
(:mod:`capviz.trace.conversions`); ``np.array`` of one too. Of an ndarray: NumPy's own."""
HOOKED = SHAPED + SQUARE + RANGES + LIKE + COPIES + CONVERTS
"""The NumPy functions :mod:`capviz.randomness.creation` hooks while a capture is open."""


def shape_of(value: Any) -> tuple:
    """A NumPy shape argument (an int or a sequence of ints) as a tuple of Python ints."""
    dims = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    shape = tuple(operator.index(d) for d in dims)
    if any(d < 0 for d in shape):
        raise ValueError("negative dimensions are not allowed")
    return shape


def _meta(args: Sequence, params: dict) -> tuple:
    function = params["function"]
    call_args = tuple(params.get("args", ()))
    kwargs = dict(params.get("kwargs", {}))
    dtype = kwargs.get("dtype")
    if function in SHAPED:
        shape = shape_of(call_args[0])
        if function == "full" and dtype is None:
            return shape, np.array(call_args[1]).dtype
        return shape, np.dtype(float if dtype is None else dtype)
    if function == "eye":
        n = operator.index(call_args[0])
        m = kwargs.get("M")
        return (n, n if m is None else operator.index(m)), np.dtype(float if dtype is None
                                                                     else dtype)
    if function == "identity":
        n = operator.index(call_args[0])
        return (n, n), np.dtype(float if dtype is None else dtype)
    made = getattr(np, function)(*call_args, **kwargs)  # a 1-d range: its length is its values'
    return tuple(made.shape), made.dtype


def _impl(xp: Any) -> Any:
    def create(*, function: str, args: tuple = (), kwargs: dict | None = None) -> Any:
        name = "zeros" if function == "empty" else function
        return getattr(xp, name)(*args, **(kwargs or {}))

    return create


register(Op("create", _impl, _meta, params=("function", "args", "kwargs"), nargs=(0, 0)))


# --- draws from a live random generator (a state of the graph) ---------------------------------


def _draw_meta(args: Sequence, params: dict) -> tuple:
    return tuple(params["shape"]), np.dtype(params["dtype"])


def _draw_impl(xp: Any) -> Any:
    def draw(generator: Any, *, method: str, args: tuple = (), kwargs: dict | None = None,
             shape: tuple = (), dtype: str = "float64", python: bool = False) -> Any:
        value = getattr(generator, method)(*args, **(kwargs or {}))
        return xp.asarray(value, dtype) if python else xp.asarray(value)

    return draw


register(Op("draw", _draw_impl, _draw_meta,
            params=("method", "args", "kwargs", "shape", "dtype", "python")))
"""``rng.standard_normal(shape)`` recorded from the generator ``rng`` (operand: its ``state``
node, :mod:`capviz.randomness.generators`): a replay calls the method on the live generator,
which advances it as the eager call did. ``python``: the draw is one Python number
(``random.random()``), held as a 0-d array of ``dtype`` (float64 or int64)."""
