"""Products whose two operands NumPy reads from one buffer: ``x @ x.T``, ``x.T @ x``,
``np.dot(x, x.T)``.

NumPy's ``matmul`` and ``dot`` of a matrix and its own transpose (the same data pointer, the
strides swapped) call BLAS's ``syrk`` (a symmetric rank-k update), and any other pair of
matrices BLAS's ``gemm``; the two kernels, and ``gemm`` on other block sizes, round the same
sums in other orders and, where a product or a partial sum overflows, give other infinities and
NaNs: float32 values near ``finfo.max / 4`` (the differential harness's extreme values) make
``x @ x.T`` ``-inf`` in ``syrk`` where ``gemm`` of a copy makes it NaN, and ``gemm`` of the
output's row blocks or column blocks is NaN where the whole ``gemm`` is ``inf``. So where the
overflow bound of such a product is reached (:mod:`capviz.backends.dask.overflow`), the replay
computes it as NumPy does on one block, and there, where NumPy's operands were one value and
its transpose, the task passes the block and its own transpose (a view of it, as NumPy's was:
:class:`SelfProduct`), in the memory layout NumPy gives that value
(:mod:`capviz.backends.dask.in_order`).
"""

from __future__ import annotations

from typing import Any

import dask
import dask.array as da
import numpy as np

from capviz.backends.dask.kinds import one_block
from capviz.backends.dask.shapes import meta_array
from capviz.core.ir import Node, same_value

PRODUCTS = frozenset(("matmul", "dot"))
"""The products whose NumPy kernel is ``syrk`` where one operand is the other's transpose."""


def _transposes(node: Any) -> Any:
    """The value ``node`` is the 2-d transpose of (``.T``, ``np.transpose``, ``swapaxes``,
    ``.mT``), or ``None``."""
    if not isinstance(node, Node) or node.kind != "op" or node.shape is None \
            or len(node.shape) != 2 or not node.args or not isinstance(node.args[0], Node):
        return None
    if node.op == "transpose" and node.params.get("axes") in (None, (1, 0), [1, 0]):
        return node.args[0]
    if node.op in ("matrix_transpose", "linalg.matrix_transpose"):
        return node.args[0]
    if node.op == "swapaxes":
        first, second = node.params.get("axis1"), node.params.get("axis2")
        if isinstance(first, int) and isinstance(second, int) and first % 2 != second % 2:
            return node.args[0]
    return None


def transposed(node: Node) -> int | None:
    """Which operand (0 or 1) of product ``node`` is the transpose of its other operand, a
    2-d value (``x @ x.T``: 1; ``x.T @ x``: 0), or ``None``."""
    if node.op not in PRODUCTS or len(node.args) != 2:
        return None
    first, second = node.args
    if same_value(_transposes(second), first):
        return 1
    if same_value(_transposes(first), second):
        return 0
    return None


_SCALINGS = frozenset(("multiply", "divide", "true_divide", "negative", "positive"))


def _scaled(node: Any) -> Any:
    """The value ``node`` is a scaling of (a product or quotient by a number, a negation), or
    ``node`` itself."""
    while isinstance(node, Node) and node.kind == "op" and node.op in _SCALINGS:
        tensors = [a for a in node.args if isinstance(a, Node)]
        numbers = [a for a in node.args if not isinstance(a, Node)]
        if len(tensors) != 1 or (node.op in ("divide", "true_divide")
                                 and node.args[0] is not tensors[0]) \
                or not all(isinstance(n, (int, float, np.integer, np.floating))
                           and not isinstance(n, bool) for n in numbers):
            return node
        node = tensors[0]
    return node


def gram(node: Node) -> bool:
    """Whether contraction ``node`` is of a value and itself, each operand up to a scaling by a
    number, so that some outputs are sums of squares times one factor (one sign): a 2-d value
    and its own transpose in ``matmul``/``dot`` (``x @ x.T``, ``2 * x @ x.T``, ``x.T @ (x /
    n)``), ``np.inner(x, x)``, and an ``einsum`` of two such operands whose subscripts agree
    where they share a letter (``"ij,kj->ik"``, ``"ij,ij->i"``)."""
    tensors = [a for a in node.args if isinstance(a, Node)]
    if len(tensors) != 2:
        return False
    first, second = (_scaled(a) for a in tensors)
    if node.op in PRODUCTS:
        return same_value(_scaled(_transposes(second)), first) \
            or same_value(_scaled(_transposes(first)), second)
    if not same_value(first, second):
        return False
    if node.op == "inner":
        return True
    subscripts = node.params.get("subscripts")
    if node.op != "einsum" or not isinstance(subscripts, str) or "..." in subscripts:
        return False
    pair = subscripts.replace(" ", "").split("->")[0].split(",")
    if len(pair) != 2 or len(pair[0]) != len(pair[1]):
        return False
    a, b = pair
    return all(p == q or (p not in b and q not in a) for p, q in zip(a, b))


class SelfProduct:
    """A task (picklable): ``fn`` of a block and its own transpose, the transpose operand
    ``which``; the block is laid out in memory as NumPy's value was."""

    def __init__(self, fn: Any, which: int, params: dict) -> None:
        self.fn = fn
        self.which = which
        self.params = params

    def __call__(self, block: np.ndarray) -> np.ndarray:
        pair = [block, block]
        pair[self.which] = block.T  # a view: the same data pointer, the strides swapped
        return self.fn(*pair, **self.params)


def product(fn: Any, value: Any, which: int, params: dict, shape: tuple,
            dtype: np.dtype) -> Any:
    """``fn(value, value.T)`` (``which`` 1) or ``fn(value.T, value)`` (``which`` 0) on one
    block holding dask array ``value`` (already laid out as NumPy's operand), one task."""
    task = dask.delayed(SelfProduct(fn, which, params), pure=True)(one_block(value))
    return da.from_delayed(task, shape, dtype=dtype, meta=meta_array(shape, dtype))
