"""``x[p, 1:]`` with ``p`` a NumPy scalar: a view in eager NumPy, tracked as one in a capture.

``p = np.argmax(...)`` is a NumPy scalar eagerly, so ``x[p, 1:]`` is NumPy's *basic* indexing
(an integer and a slice) and returns a view of ``x``; in a capture ``p`` is a 0-d tensor and the
read is recorded as ``advanced_index`` (:mod:`capviz.ops.advanced_index`). When every tensor
of the index is such a NumPy scalar, no static part is an array and the result is not 0-d (a
0-d result is a NumPy scalar, immutable), the result joins ``x``'s storage as a view
(:mod:`capviz.trace.mutation`): a write through it is recorded as ``advanced_index_put`` into
``x`` with the same index, and a write into ``x`` re-derives it (``advanced_index`` recorded
again, with the same index tensors), so the classic ``tmp = A[p, :]; A[p, :] = A[k, :]`` sees
``tmp`` change as eager NumPy does. Any other advanced read is a copy, as in NumPy.

The same holds for ``x[p]`` with one such tensor (the ``index`` op, :func:`track_index`).

The recorder calls :func:`track` after recording an ``advanced_index``, :func:`track_index`
after an ``index`` (their entries in :data:`capviz.trace.views.VIEWS`, added when this
module is imported, which :mod:`capviz.trace.recorder` does).
"""

from __future__ import annotations

from typing import Any

from capviz import ops
from capviz.core.ir import Node
from capviz.ops.advanced_index import READ, WRITE, is_basic
from capviz.trace import views
from capviz.trace.mutation import Alias, Step, is_numpy_scalar, record
from capviz.trace.tensor import Tensor


def track(rec: Any, op: ops.Op, args: tuple, params: dict, out: Tensor) -> None:
    """After ``advanced_index``: make ``out`` a view of ``args[0]`` when eager NumPy's read was
    basic indexing (see the module docstring); otherwise it stays a copy."""
    base, *tensors = args
    if not out._data.shape or type(base) is not Tensor or base._trace is not rec:
        return
    if is_numpy_scalar(base):
        return  # indexing a NumPy scalar gives a new array
    index, positions = params["index"], params["tensors"]
    if not is_basic(index, positions, tensors,
                    lambda t: type(t) is Tensor and t._trace is rec and is_numpy_scalar(t)):
        return
    alias = views.base_alias(rec, base)
    operands = tuple(t._data for t in tensors)
    step = Step(ops.OPS[READ], params, _put_back(params, operands), operands=operands)
    layout = None
    if alias.layout is not None:  # the strides do not depend on the index's values
        layout = alias.layout[tuple(0 if pos in positions else k for pos, k in enumerate(index))]
    _join(rec, alias, step, out, layout)


def _join(rec: Any, alias: Alias, step: Step, out: Tensor, layout: Any) -> None:
    """Make ``out`` the view ``step`` takes of the tensor whose alias is ``alias``."""
    out._alias = Alias(alias.storage, alias.steps + (step,), alias.path + (out._data,), layout)
    rec.layouts[out._data.index] = layout
    if alias.storage.assumes:
        rec.layout_inputs[out._data.index] = alias.storage.assumes


def _put_back(params: dict, operands: tuple) -> Any:
    def inverse(rec: Any, parent: Node, value: Node) -> Node:
        return record(rec, ops.OPS[WRITE], (parent, value, *operands), params)

    return inverse


def track_index(rec: Any, op: ops.Op, args: tuple, params: dict, out: Tensor) -> None:
    """After ``index`` (``x[p]`` with one tensor ``p``): a view of ``x`` when ``p`` stands for
    a NumPy integer scalar and the result is not 0-d (NumPy's basic indexing, ``x[p]`` of a
    2-d ``x`` is a row view); a write through it is ``index_put`` into ``x``."""
    base, key = args
    if not out._data.shape or type(base) is not Tensor or base._trace is not rec:
        return
    if is_numpy_scalar(base) or type(key) is not Tensor or key._trace is not rec \
            or not is_numpy_scalar(key) or key.dtype.kind not in "iu":
        return
    alias = views.base_alias(rec, base)
    operands = (key._data,)
    step = Step(op, params, _index_put_back(operands), operands=operands)
    _join(rec, alias, step, out, None if alias.layout is None else alias.layout[0])  # any row


def _index_put_back(operands: tuple) -> Any:
    def inverse(rec: Any, parent: Node, value: Node) -> Node:
        return record(rec, ops.OPS["index_put"], (parent, *operands, value), {})

    return inverse


views.VIEWS[READ] = track
views.VIEWS["index"] = track_index
