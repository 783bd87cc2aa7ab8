"""Sums over several chunks whose order of addition can decide an overflow, computed as NumPy.

dask.array adds each chunk's partial sum, then the partial sums (and for ``matmul``, ``dot``,
``tensordot``, ``vdot`` and ``einsum`` over a chunked contracted axis, the blocks' partial
products), where NumPy adds along the axis in its own order (pairwise, row after row, or
BLAS's). The two orders round differently, within the backend's tolerance, and a sum of both
signs can overflow in one order and not in the other: float32 ``[3e38, -3e38, 3e38 | 3e38,
-3e38]`` is ``inf`` in NumPy's order and ``3e38`` in chunks of 3; ``[3e38, 3e38 | -3e38,
-3e38]`` is ``inf`` and ``nan``. A result from an overflow may then be ``inf``, ``nan`` or a
number in either order, so no test of the result can tell.

The rule: a sum of ``n`` terms, each at most ``m`` in magnitude, cannot overflow in any order
while ``n * m < finfo.max * exp(-n * eps)`` of the dtype it adds in (each partial sum is at most
``n * m`` before rounding, and rounding adds at most a factor ``1 + eps`` per addition). ``m``
is the largest finite magnitude of the operand (``max |re| + max |im|`` of a complex one; for a
product the product of its operands' largest magnitudes; for ``var``/``std`` and their ``nan``
forms, whose second sum adds squared deviations, ``max(m, 4 m**2)``), one max over each operand
computed with the result. Infinities and NaNs are left out of ``m``: while no finite partial sum
can overflow, what they make of a sum (``inf``, ``-inf``, ``nan``) is every order's. Where the
bound is reached, the node's task fails with :class:`OrderMatters`, and the replay builds its
expression again with that node computed as NumPy does (``DaskBackend.execute``,
:mod:`capviz.backends.dask.in_order`): NumPy's result, bit for bit, for the price of a second
run (in the memory layout NumPy gives the node's operands, which decides NumPy's order:
:mod:`capviz.backends.dask.in_order` follows it, or refuses the node where it cannot). Where the
operand's dtype cannot reach the bound (the float32 sum of a float16 ``mean``), nothing is
checked. With one chunk along the reduced axes dask.array runs NumPy's own function,
unchecked, where NumPy adds pairwise; where it keeps a running sum, a block that cuts the axes
after the reduced ones adds otherwise and is checked (:func:`blocks_add_otherwise`).
``sum``, ``nansum``, ``mean`` and ``trace`` take instead the per-output form of this bound, with
their terms' magnitudes summed (:mod:`capviz.backends.dask.cancellation`, which checks them for
cancellation too).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import dask.array as da
import numpy as np

from capviz.backends.dask import contractions

SUMS = frozenset(("sum", "nansum", "mean", "nanmean", "var", "std", "nanvar", "nanstd",
                  "trace"))
"""Reductions that add their operand's values over the reduced axes."""

_SQUARES = frozenset(("var", "std", "nanvar", "nanstd"))
"""Reductions whose second sum adds squared deviations from the mean."""

_PRODUCTS = frozenset(("matmul", "dot", "tensordot", "linalg.tensordot", "vdot", "einsum"))
_BLAS = frozenset(("matmul", "dot", "tensordot", "linalg.tensordot"))
"""The products NumPy hands to BLAS, whose kernel, and so what an overflow makes of a sum
(``inf``, ``-inf`` or NaN), depends on the whole operands' shapes and on whether they share a
buffer (:mod:`capviz.backends.dask.shared`): dask.array's product of the output's blocks calls
it on other shapes, so these are checked wherever an operand has several blocks, not only where
the contracted axis spans several chunks."""


WHOLE = "chunks= that keep each operand in one chunk"
"""The chunks fix of a product checked because its output spans several blocks."""


class OrderMatters(FloatingPointError):
    """A sum over several chunks whose terms can overflow in one order of addition and not in
    another (picklable, so a cluster's worker sends it back)."""


class OutOfRange(OrderMatters):
    """A float cast to an integer type out of its range, whose integer NumPy's cast loop gives
    by the element's place in it (:mod:`capviz.backends.dask.casts`)."""


def _axes(name: str, x: Any, params: dict) -> tuple:
    if name == "trace":
        return _normal((params.get("axis1", 0), params.get("axis2", 1)), x.ndim)
    axis = params.get("axis")
    return tuple(range(x.ndim)) if axis is None else _normal(axis, x.ndim)


def _normal(axis: Any, ndim: int) -> tuple:
    items = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(operator.index(a) % ndim for a in items)


def _largest(dtype: np.dtype) -> float:
    """The largest finite magnitude of a value of ``dtype`` (``|re| + |im|`` of a complex)."""
    if dtype.kind == "c":
        return 2 * float(np.finfo(dtype).max)
    if dtype.kind == "f":
        return float(np.finfo(dtype).max)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return float(max(-int(info.min), int(info.max)))
    return 1.0


class _Bound:
    """A task's check: ``n`` terms of at most the product of the magnitudes (squared, for a
    variance's second sum) stay below ``limit`` (picklable)."""

    def __init__(self, name: str, n: int, limit: float, squares: bool, dtype: np.dtype,
                 blocks: bool = False) -> None:
        self.name = name
        self.n = n
        self.limit = limit
        self.squares = squares
        self.dtype = dtype
        self.blocks = blocks  # a product whose contracted axes are whole, its output split

    def largest(self, m: float) -> float:
        """The largest partial sum, before rounding, of ``n`` terms from magnitudes ``m``."""
        with np.errstate(over="ignore"):
            term = max(m, 4.0 * m * m) if self.squares else m
            return self.n * term

    def __call__(self, result: np.ndarray, *magnitudes: np.ndarray) -> np.ndarray:
        m = math.prod(float(v) for v in magnitudes)
        if not self.largest(m) < self.limit and self.blocks:
            raise OrderMatters(
                f"np.{self.name} over several blocks adds {self.n} products of up to {m:.3g} "
                f"in magnitude, so a product or a partial sum can overflow {self.dtype}, and "
                "BLAS's kernel on dask.array's blocks makes other infinities and NaNs of it "
                "than NumPy's one call on the whole operands; replay with compute=True "
                f"(which computes this node as NumPy does), backend='numpy', or {WHOLE}")
        if not self.largest(m) < self.limit:
            raise OrderMatters(
                f"np.{self.name} over several chunks adds {self.n} terms of up to {m:.3g} in "
                f"magnitude, so a partial sum can overflow {self.dtype} in dask.array's order of "
                "addition and not in NumPy's, or in NumPy's only; replay with compute=True "
                "(which computes this node as NumPy does), backend='numpy', or chunks= that "
                "keep the reduced axes in one chunk")
        return result

    def needed(self, dtypes: list) -> bool:
        """Whether operands of ``dtypes`` can reach the bound at all."""
        return not self.largest(math.prod(_largest(np.dtype(d)) for d in dtypes)) < self.limit


def _limit(dtype: np.dtype, n: int) -> float:
    info = np.finfo(dtype)
    return float(info.max) * math.exp(-n * float(info.eps))


def _block_magnitude(block: np.ndarray, axis: Any = None, keepdims: bool = False) -> Any:
    """The largest finite magnitude in ``block``, a float64 (kept as a 1-element array of
    ``block``'s rank for dask.array's reduction): ``max |re| + max |im|`` of complex values
    (at least each ``|re| + |im|``), an integer's in float64."""
    total = 0.0
    for part in (block.real, block.imag) if block.dtype.kind == "c" else (block,):
        magnitude = np.abs(part if part.dtype.kind == "f" else part.astype(np.float64))
        largest = float(np.max(magnitude, initial=0.0))
        if not math.isfinite(largest):  # an infinity or a NaN: the finite values' largest
            largest = float(np.max(magnitude, initial=0.0, where=np.isfinite(magnitude)))
        total += largest
    value = np.float64(total)
    return np.full((1,) * block.ndim, value) if keepdims else value


def _max(blocks: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return np.max(blocks, axis=axis, keepdims=keepdims)


def magnitude(x: Any) -> Any:
    """The largest finite magnitude of ``x`` (:func:`_block_magnitude`), a 0-d float64 dask
    array: one pass over each block."""
    return da.reduction(x, _block_magnitude, _max, dtype=np.float64,
                        meta=np.empty((), np.float64))


def blocks_add_otherwise(x: Any, axes: tuple, pairwise: bool) -> bool:
    """Whether dask.array's blocks of ``x`` can add the terms of a reduction over ``axes``
    (normalized) in another order than NumPy's loop over the whole array: a reduced axis spans
    several chunks, or NumPy keeps a running sum (``pairwise`` false) and an axis after the
    first reduced one does (a ``(n, 1)`` block's column is added pairwise, NumPy's column of a
    C-ordered ``(n, 3)`` array row after row)."""
    if not x.ndim or not axes:
        return False
    if any(len(x.chunks[a]) > 1 for a in axes):
        return True
    return not pairwise and any(len(c) > 1 for c in x.chunks[min(axes):])


def _bound(name: str, args: tuple, params: dict, dtype: np.dtype,
           pairwise: bool = True) -> tuple[_Bound, list] | None:
    """The check of node ``name`` and the operands it bounds, or ``None`` where no order of
    addition can overflow or dask.array adds in NumPy's order (one chunk)."""
    if name in _PRODUCTS:
        operands = tuple(a for a in args if isinstance(a, da.Array))
        axes, n = contractions.contracted(name, operands, params)
        blocks = not contractions.split(operands, axes)
        if blocks and not (name in _BLAS and any(x.npartitions > 1 for x in operands)):
            return None
    else:
        blocks = False
        operands = (args[0],)
        axes = _axes(name, args[0], params)
        if not blocks_add_otherwise(args[0], axes, pairwise):
            return None
        n = math.prod(args[0].shape[a] for a in axes) if name != "trace" else min(
            args[0].shape[a] for a in axes)
    if any(0 in x.shape for x in operands) or any(
            np.dtype(x.dtype).kind not in "biufc" for x in operands):
        return None
    check = _Bound(name, n, _limit(dtype, n), name in _SQUARES, dtype, blocks)
    if not check.needed([x.dtype for x in operands]):
        return None
    return check, list(operands)


def _adds_in(name: str, args: tuple, params: dict, result: Any) -> np.dtype:
    """The dtype a sum adds in: the result's, but float32 for a float16 ``mean`` (NumPy's and
    :func:`capviz.backends.dask.moments.mean`'s)."""
    if name == "mean" and params.get("dtype") is None and args[0].dtype == np.float16:
        return np.dtype(np.float32)
    return np.dtype(result.dtype)


def checked(name: str, args: tuple, params: dict, result: Any, guard: Any,
            pairwise: bool = True) -> Any:
    """``result`` of reduction or product ``name`` of ``args``, failing at the node (through
    ``guard``, which names it) with :class:`OrderMatters` where :mod:`this module's
    <capviz.backends.dask.overflow>` bound is reached; ``pairwise``: whether NumPy adds each
    output of a reduction pairwise (else its blocks are checked with the reduced axes in one
    chunk too: :func:`blocks_add_otherwise`)."""
    dtype = _adds_in(name, args, params, result)
    if (name not in SUMS and name not in _PRODUCTS) or dtype.kind not in "fc":
        return result
    found = _bound(name, args, params, dtype, pairwise)
    if found is None:
        return result
    check, operands = found
    index = tuple(range(result.ndim))
    pairs: list = [result, index]
    for x in operands:
        pairs += [magnitude(x), ()]
    return da.blockwise(guard(check), index, *pairs, dtype=result.dtype,
                        meta=np.empty((0,) * result.ndim, result.dtype))
