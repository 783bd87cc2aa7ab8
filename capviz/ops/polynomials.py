"""Polynomials as coefficient arrays (highest degree first): polyval, polyadd, polysub, polymul,
polyint, polyder, poly, polyfit.

Shapes are written rules over the coefficient counts; dtypes come from one-element proxies.
``np.polydiv`` stays refused: the length of its remainder depends on the values (leading
near-zero coefficients are trimmed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.errors import ReplayError
from capviz.ops import table as ops
from capviz.ops.spec import FunctionSpec, define


def _of(position: int) -> object:
    def rule(shapes: list, params: dict) -> tuple:
        return tuple(shapes[position])

    return rule


def _poly_lengths(shapes: list) -> list[int]:
    for s in shapes:
        if len(s) > 1:
            raise ValueError("polynomial coefficients must be 1-d")
    return [ops.numel(s) for s in shapes]


def _polyadd(shapes: list, params: dict) -> tuple:
    a, b = (tuple(s) or (1,) for s in shapes)
    if a[0] == b[0]:
        return tuple(np.broadcast_shapes(a, b))
    return (max(_poly_lengths(shapes)),)


def _polymul(shapes: list, params: dict) -> tuple:
    n, m = _poly_lengths(shapes)
    return (n + m - 1,)


def _polyint(shapes: list, params: dict) -> tuple:
    m = params.get("m", 1)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    return (_poly_lengths(shapes)[0] + m,)


def polyder_shape(shapes: list, params: dict) -> tuple:
    """``p[:-1] * np.arange(n, 0, -1)`` ``m`` times (NumPy's recursion, on shapes; it computes
    that product once more, at ``m == 0``, before returning, and so raises its error)."""
    shape = tuple(shapes[0])
    m = int(params.get("m", 1))
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    result = shape
    for step in range(m + 1):
        if not shape:
            raise TypeError("len() of unsized object")
        rows = max(shape[0] - 1, 0)
        try:
            shape = tuple(np.broadcast_shapes((rows, *shape[1:]), (rows,)))
        except ValueError:
            raise ValueError("operands could not be broadcast together with shapes "
                             f"{_numpy_shape((rows, *shape[1:]))} {_numpy_shape((rows,))} ") \
                from None
        if step == m - 1:
            result = shape
    return result


def _numpy_shape(shape: tuple) -> str:
    """A shape as NumPy's broadcast error prints it: ``(0,3,2)``, ``(0,)``."""
    return "(" + ",".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _poly(shapes: list, params: dict) -> tuple:
    """One more coefficient than roots; a non-empty square matrix has as many roots as rows
    (its eigenvalues: only a 1 x 1 one gets here, larger ones are refused first)."""
    shape = tuple(shapes[0])
    if len(shape) == 2 and shape[0] == shape[1] != 0:
        return (shape[0] + 1,)
    if len(shape) != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    return (shape[0] + 1,)


_EIGVALS = ("its coefficients come from np.linalg.eigvals of the matrix, whose dtype (real or "
            "complex) depends on the values; pass the roots as a 1-d tensor, np.poly(roots)")
_CONJUGATE = ("its result is real when the roots come in conjugate pairs and complex otherwise, "
              "a dtype that depends on the values; build the coefficients with np.convolve "
              "(a = np.convolve(a, [1, -z]) per root z) or call np.poly on replayed roots")


def _poly_refusal(operands: list, params: dict) -> tuple[str, str] | None:
    """recorded for real roots (and a real 1 x 1 matrix); complex roots and larger matrices
    are refused (their values would decide the result's dtype)"""
    (z,) = operands
    if not ops.is_tensor_meta(z):
        return None
    shape = tuple(z.shape)
    square = len(shape) == 2 and shape[0] == shape[1] != 0
    if square and shape[0] > 1:  # a 1 x 1 matrix's one eigenvalue is real
        return "of a square matrix", _EIGVALS
    if (square or len(shape) <= 1) and z.dtype.kind == "c":
        return "of complex roots", _CONJUGATE
    return None


def _polyfit(shapes: list, params: dict) -> tuple:
    x, y = tuple(shapes[0]), tuple(shapes[1])
    w = tuple(shapes[2]) if len(shapes) > 2 and shapes[2] is not None else None
    deg = params["deg"]
    order = int(deg) + 1
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if len(x) != 1:
        raise TypeError("expected 1D vector for x")
    if x[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if not 1 <= len(y) <= 2:
        raise TypeError("expected 1D or 2D array for y")
    if x[0] != y[0]:
        raise TypeError("expected x and y to have same length")
    if w is not None:
        if len(w) != 1:
            raise TypeError("expected a 1-d array for weights")
        if w[0] != y[0]:
            raise TypeError("expected w and y to have the same length")
    return (order, *y[1:])


_FULL = ("np.polyfit(x, y, deg) for the coefficients: full=True also returns the rank and "
         "singular values (values) and residuals whose length depends on the rank")
_COV = ("np.polyfit(x, y, deg) for the coefficients: cov= scales by residuals that are empty or "
        "not depending on the rank of the data")

define(FunctionSpec("polyval", ("p", "x"), _of(1)))
define(FunctionSpec("polyadd", ("a1", "a2"), _polyadd))
define(FunctionSpec("polysub", ("a1", "a2"), _polyadd))
POLYMUL_TRIMS = ("np.polymul drops leading zero coefficients of its operands (it reads them as "
                 "np.poly1d), so the length of its result depends on their values; a replay "
                 "keeps the captured length: give operands whose first coefficient is not 0, or "
                 "use np.convolve(a1, a2), which keeps every coefficient")
"""Why a replay fails at ``np.polymul`` of an operand whose first coefficient is 0."""


def _polymul_checked(impl: Callable) -> Callable:
    """``np.polymul`` that fails (a ReplayError at its node) where NumPy's result would be
    shorter than the captured one: an operand of several coefficients, the first of them 0."""

    def make(xp: Any) -> Callable:
        fn = impl(xp)

        def polymul(a1: Any, a2: Any) -> Any:
            for a in (a1, a2):
                if getattr(a, "ndim", 0) == 1 and a.shape[0] > 1 and bool(a[0] == 0):
                    raise ReplayError(POLYMUL_TRIMS)
            return fn(a1, a2)

        return polymul

    return make


_POLYMUL = define(FunctionSpec("polymul", ("a1", "a2"), _polymul))
_POLYMUL.impl = _polymul_checked(_POLYMUL.impl)
define(FunctionSpec("polyint", ("p",), _polyint, probe={"m": 1}))
define(FunctionSpec("polyder", ("p",), polyder_shape, probe={"m": 1}))
define(FunctionSpec("poly", ("seq_of_zeros",), _poly, refuse_if=_poly_refusal))
define(FunctionSpec("polyfit", ("x", "y", "w"), _polyfit, probe={"deg": 0},
                    refuse={"full": _FULL, "cov": _COV}))
