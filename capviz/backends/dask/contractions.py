"""Which axes of each operand a product contracts, and how many products each result adds.

dask.array's ``matmul``, ``dot``, ``tensordot``, ``vdot`` and ``einsum`` multiply each pair of
blocks with NumPy's function and add the blocks' partial products along a contracted axis:
another order of addition than NumPy's, which :mod:`capviz.backends.dask.overflow` checks.
Where each operand holds one element, NumPy's product keeps a ``-0.0`` that dask.array's does
not (:func:`lone`).
"""

from __future__ import annotations

import operator
from typing import Any

from capviz.backends.dask.shapes import is_array

_MATRIX = frozenset(("matmul", "dot"))


def _normal(axes: Any, ndim: int) -> tuple:
    items = (axes,) if isinstance(axes, int) else tuple(axes)
    return tuple(operator.index(a) % ndim for a in items)


def _tensordot(a: Any, b: Any, axes: Any) -> tuple[tuple, tuple]:
    if isinstance(axes, int):
        return tuple(range(a.ndim - axes, a.ndim)), tuple(range(axes))
    first, second = axes
    return _normal(first, a.ndim), _normal(second, b.ndim)


def _labels(term: str, ndim: int) -> list[str]:
    """One operand's subscripts as one label per axis, its ``...`` axes labelled by their
    place from the right (they broadcast right-aligned, as NumPy's)."""
    if "..." not in term:
        return list(term)
    before, after = term.split("...")
    hidden = ndim - len(before) - len(after)
    return [*before, *(f"...{hidden - k}" for k in range(hidden)), *after]


def _einsum(operands: tuple, subscripts: str) -> tuple[list[tuple], int]:
    inputs, arrow, output = subscripts.replace(" ", "").partition("->")
    labels = [_labels(term, x.ndim) for term, x in zip(inputs.split(","), operands)]
    flat = [label for ls in labels for label in ls]
    if arrow:
        kept = set(output.replace("...", ""))
        if "..." in output:
            kept |= {label for label in flat if label.startswith("...")}
    else:  # implicit: the labels seen once, and the broadcast ones
        kept = {label for label in flat if flat.count(label) == 1 or label.startswith("...")}
    sizes: dict[str, int] = {}
    for ls, x in zip(labels, operands):
        for label, size in zip(ls, x.shape):
            sizes[label] = max(sizes.get(label, 1), size)
    count = 1
    for label in sizes.keys() - kept:
        count *= sizes[label]
    return [tuple(k for k, label in enumerate(ls) if label not in kept) for ls in labels], count


def _product(x: Any, axes: tuple) -> int:
    count = 1
    for a in axes:
        count *= x.shape[a]
    return count


def contracted(name: str, operands: tuple, params: dict) -> tuple[list[tuple], int]:
    """The axes product ``name`` contracts, one tuple per operand (every axis of a ``vdot``
    operand, which NumPy flattens), and how many products each result element adds."""
    if name in _MATRIX:
        a, b = operands
        return [(a.ndim - 1,), (0,) if b.ndim == 1 else (b.ndim - 2,)], a.shape[-1]
    if name == "vdot":
        return [tuple(range(x.ndim)) for x in operands], _product(operands[0], range(
            operands[0].ndim))
    if name in ("tensordot", "linalg.tensordot"):
        axes = list(_tensordot(*operands, params.get("axes", 2)))
        return axes, _product(operands[0], axes[0])
    return _einsum(operands, params["subscripts"])


def split(operands: tuple, axes: list[tuple]) -> bool:
    """Whether a contracted axis spans several chunks of an operand."""
    return any(len(x.chunks[a]) > 1 for x, ax in zip(operands, axes) for a in ax)


def lone(args: tuple) -> bool:
    """Whether every tensor operand of a product holds one element: run as NumPy on one block.

    NumPy adds a contraction's products into a ``+0.0`` (BLAS's ``dot``, ``gemv``, ``gemm``,
    ``einsum``'s zeroed output), so a zero result is ``+0.0`` even where every product is
    ``-0.0``, as dask.array's sum of its blocks' products is; but ``np.dot`` (and
    ``np.tensordot``, ``np.inner``, which call it) of two float32, float64, complex64 or
    complex128 operands of one element each is their product (its ``cblas_matrixproduct``
    multiplies by an operand of one element as by a scalar), keeping ``-0.0``, where
    dask.array's ``tensordot`` of them gave ``+0.0``: ``1 / np.dot(x[:1], y[:1])`` of ``-0.0``
    and ``1.0`` was ``inf`` against NumPy's ``-inf`` (hostile review 6, finding 20). Measured on
    NumPy 2.4: lengths 1 to 100,000, C-ordered, reversed and strided vectors, ``gemv`` and
    ``gemm`` shapes, products that underflow; only the one-element products keep ``-0.0``."""
    tensors = [a for a in args if is_array(a)]
    return len(tensors) >= 2 and all(a.size == 1 for a in tensors)
