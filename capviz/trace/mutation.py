"""Mutation and views in a capture: NumPy's writes, functionalized into the graph.

A graph holds values, not memory, so a write is recorded as an *update op* that computes the new
value (:mod:`capviz.ops.updates`), and the written tensor object takes that node: every Python
reference to it sees the new value, as with an ndarray. This is torch's functionalization and
JAX's ``x.at[idx].set(v)``, done by the recorder instead of by the user.

Views. A tensor made by a view op (basic indexing, ``transpose``, ``reshape`` when NumPy
returns a view, ...) shares memory with its base, as in NumPy. The first view of a tensor gives
it a :class:`Storage`: the node holding the current value of the whole buffer, and a version.
Every tensor of that storage carries an :class:`Alias`: the view steps from the buffer to it,
the nodes it was derived through, and the version it was derived at.

* A write through a tensor records the update of that tensor's value, then walks its steps back
  to the buffer (a basic index becomes ``setitem`` into the parent; a transpose, reshape,
  squeeze... is undone by its inverse), sets the storage's node and bumps its version.
* A tensor whose storage version moved is re-derived (its steps recorded again from the buffer's
  current node) the next time it is used: the recorder checks one attribute per operand.

Which ops make views, and how a write goes back through each, is :mod:`capviz.trace.views`.

Where NumPy's answer cannot be known (a reshape of a buffer whose memory layout capture does not
know may or may not copy) or a view cannot be written through in a graph, the write raises at
the user's line, naming the view and what to write instead. Never a stale value.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.host import host_copy
from capviz.core.errors import UnsupportedOperationError
from capviz.core.ir import Node, same_value
from capviz.core.source import format_source, user_source
from capviz.core.symbols import Symbol
from capviz.ops import advanced_index, updates
from capviz.ops.table import rule_key
from capviz.trace import conversions
from capviz.trace.tensor import Tensor, normalize_index, tuple_index_fix

# --- the records --------------------------------------------------------------------------------


class Storage:
    """One NumPy buffer as the graph sees it.

    Attributes:
        node: the node holding the buffer's current (whole) value.
        version: bumped by every write into the buffer.
        uncertain: weak references to the views whose sharing with the buffer capture cannot
            decide.
        assumes: indices of the graph inputs whose C-contiguous layout the buffer's layout
            stand-in assumes (see :mod:`capviz.trace.views`).
        decided: the inputs whose assumed layout a view-or-copy decision on this buffer read
            (a ``reshape`` or ``ravel``): a write into the buffer makes the graph need them
            C-contiguous at replay (:func:`require_c_layout`).
    """

    __slots__ = ("assumes", "decided", "node", "uncertain", "version")

    def __init__(self, node: Node, assumes: frozenset = frozenset()) -> None:
        self.node = node
        self.version = 0
        self.uncertain: list[weakref.ref] = []
        self.assumes = assumes
        self.decided: frozenset = frozenset()


class Step:
    """One view step: ``op(parent, *operands, **params)`` gives the view.

    Attributes:
        op: the op recorded to derive the view from its parent.
        params: its parameters.
        inverse: ``inverse(recorder, parent_node, new_view_node) -> new parent node``, or
            ``None`` when a write through the view cannot be recorded.
        refusal: the error a write through the view raises (``None`` when writable).
        operands: the op's operands after the parent (the index tensors' nodes of
            ``x[p, 1:]`` with ``p`` a NumPy scalar; :mod:`capviz.trace.advanced_views`).
    """

    __slots__ = ("inverse", "op", "operands", "params", "refusal")

    def __init__(self, op: ops.Op, params: dict, inverse: Callable | None,
                 refusal: Callable[[], Exception] | None = None, operands: tuple = ()) -> None:
        self.op = op
        self.params = params
        self.inverse = inverse
        self.refusal = refusal
        self.operands = operands


class Alias:
    """How one tensor sees its storage.

    Attributes:
        storage: the buffer.
        steps: the view steps from the buffer to the tensor (empty for the buffer itself).
        path: the nodes the tensor was derived through: ``path[0]`` is the buffer's value,
            ``path[-1]`` the tensor's own node.
        version: the storage version ``path`` was derived at.
        layout: a stand-in array with the tensor's strides in a C-contiguous buffer of 1-byte
            elements (``None``: unknown); NumPy's own reshape on it says whether it copies.
    """

    __slots__ = ("layout", "path", "steps", "storage", "version")

    def __init__(self, storage: Storage, steps: tuple, path: tuple,
                 layout: np.ndarray | None) -> None:
        self.storage = storage
        self.steps = steps
        self.path = path
        self.version = storage.version
        self.layout = layout


# --- recording helpers --------------------------------------------------------------------------


def record(rec: Any, op: ops.Op, args: tuple, params: dict) -> Node:
    """Record ``op`` on operand nodes and literals; NumPy's errors get the user's line."""
    try:
        return rec.record(op, args, params)
    except (ValueError, TypeError, IndexError, OverflowError) as err:
        raise located(rec, err) from None


def located(rec: Any, err: BaseException) -> BaseException:
    """``err`` (NumPy's exception, type and message unchanged) with the user's line as a note
    and the partial graph as ``err.graph``."""
    where = format_source(user_source())
    if where and not any(where in note for note in getattr(err, "__notes__", ())):
        err.add_note(f"(captured at {where})")
    err.graph = rec.graph
    return err


def refused_here(rec: Any, err: UnsupportedOperationError) -> UnsupportedOperationError:
    """A refusal of capviz's own with the user's line in its message (as every
    ``UnsupportedOperationError`` has) and the partial graph as ``err.graph``."""
    where = format_source(user_source())
    new = type(err)(f"{err} (at {where})" if where else str(err))
    new.graph = rec.graph
    return new


def current(rec: Any, tensor: Tensor) -> Node:
    """The tensor's node, re-derived first when its storage was written since."""
    alias = tensor._alias
    if alias is not None and alias.version != alias.storage.version:
        _rederive(rec, tensor, alias)
    return tensor._data


def _rederive(rec: Any, tensor: Tensor, alias: Alias) -> None:
    storage = alias.storage
    node = storage.node
    path = [node]
    for step in alias.steps:
        node = record(rec, step.op, (node, *step.operands), step.params)
        path.append(node)
    alias.path = tuple(path)
    alias.version = storage.version
    tensor._data = node


def operand(rec: Any, value: Any, dtype: np.dtype | None = None) -> Any:
    """A written value as an operand: a node, or a Python literal kept as it is. A list or tuple
    becomes an array of the target ``dtype``, as NumPy converts it for an assignment."""
    if type(value) is Tensor:
        return current(rec, value) if value._trace is rec else rec.adopt(value)
    if type(value) in (bool, int, float, complex):
        return value
    if isinstance(value, (list, tuple)) and dtype is not None:
        made = conversions.convert("asarray", (value,), {"dtype": dtype})  # tensors in it
        if made is not None:  # (samples[i] = [self.x, self.y]): NumPy's array of the list
            return current(rec, made)
        value = np.asarray(value, dtype=dtype)
    if type(value) is np.ndarray and value.ndim == 0:  # cast unsafely, unlike a NumPy scalar
        return rec.constant(host_copy(value), rec.name_of(value), user_source())
    return rec.adopt_value(value)


def basic_write_value(rec: Any, value: Any, dtype: np.dtype) -> Any:
    """The operand for ``t[basic index] = value`` (and ``t.fill``): a NumPy number stays a
    typed literal, since NumPy checks its value against the destination's range as it does a
    Python number's (``int8_t[0] = np.int64(300)`` raises OverflowError), which the op's rule
    then runs on a one-element stand-in; every other value is :func:`operand`'s."""
    if isinstance(value, (np.number, np.bool_)):
        return value
    return operand(rec, value, dtype)


def same_buffer(a: Tensor, b: Any) -> bool:
    """True when ``b`` is a tensor of the same capture that is ``a`` or shares its buffer (a
    view of it, or a view of the same base)."""
    if type(b) is not Tensor:
        return False
    if a is b:
        return True
    alias_a, alias_b = a._alias, b._alias
    return alias_a is not None and alias_b is not None and alias_a.storage is alias_b.storage


def mask_overlaps(target: Tensor, mask: Any) -> bool:
    """True when a boolean ``mask`` written through shares ``target``'s memory in a way NumPy's
    write sees: the mask is another view of the buffer (the target itself is read at each
    element before that element is written, so ``x[x] = v`` is exact)."""
    return mask is not target and same_buffer(target, mask)


MASK_SHARES_TARGET = ("NumPy reads the mask while it writes, so a mask that shares memory "
                      "with the written array sees the writes already made; copy the mask "
                      "first: {fix}")


def is_numpy_scalar(tensor: Tensor) -> bool:
    """True for a 0-d tensor that eager NumPy holds as a scalar (``x.sum()``, ``x[0]`` of a 1-d
    ``x``, any op's 0-d result, an input declared with a NumPy scalar example), not as a 0-d
    array: it is immutable, so ``s += 1`` rebinds."""
    node = tensor._data
    if node.shape or tensor._alias is not None:
        return False
    return node.kind == "op" or (node.kind == "input" and "scalar" in node.params)


# --- writes -------------------------------------------------------------------------------------


def assign(rec: Any, tensor: Tensor, node: Node) -> None:
    """Make ``node`` (same shape and dtype) the tensor's value, through its storage if any."""
    alias = tensor._alias
    root = tensor._data if alias is None else alias.storage.node
    if root.kind == "input":  # replay's copy of a strided input would not keep its strides
        require_c_layout(rec, frozenset((root.index,)))
        if "written" not in root.params:  # replay refuses inputs sharing its memory
            root.params = {**root.params, "written": node.index}
    if alias is None:
        tensor._data = node
        if not node.shape:  # a 0-d array stays an array (not a scalar) once written
            tensor._alias = Alias(Storage(node), (), (node,), None)
        return
    storage = alias.storage
    _check_uncertain(storage, tensor)
    if storage.decided:
        require_c_layout(rec, storage.decided)
    if alias.version != storage.version:  # the inverse steps need the parents' current values
        _rederive(rec, tensor, alias)
    values = [node]
    for step, parent in zip(reversed(alias.steps), reversed(alias.path[:-1])):
        node = step.inverse(rec, parent, node)
        values.append(node)
    values.reverse()
    storage.node = values[0]
    storage.version += 1
    alias.path = tuple(values)
    alias.version = storage.version
    tensor._data = values[-1]


def require_c_layout(rec: Any, inputs: frozenset) -> None:
    """Mark graph inputs (by node index) as needing a C-contiguous array at replay.

    Called for a write into an input's buffer (an update op copies the input; eager writes in
    place, keeping strides the copy would not keep: reversed, gapped), and for a write into a
    buffer on which capture decided view-or-copy (``reshape``, ``ravel``) from the assumed C
    layout of these inputs (with another layout eager NumPy decides otherwise, so the written
    values would differ). The mark is the input node's param ``layout: "C"``; replay refuses a
    non-C-contiguous array for it (it survives save/load).
    """
    nodes = rec.graph.nodes
    for index in inputs:
        node = nodes[index]
        if node.params.get("layout") != "C":
            node.params = {**node.params, "layout": "C"}


def check_writable(tensor: Tensor) -> None:
    """Raise before recording anything when a write into ``tensor`` cannot be recorded."""
    alias = tensor._alias
    if alias is None:
        return
    for step in alias.steps:
        if step.refusal is not None:
            raise refused_here(tensor._trace, step.refusal())
    _check_uncertain(alias.storage, tensor)


def _check_uncertain(storage: Storage, writer: Tensor) -> None:
    if not storage.uncertain:
        return
    storage.uncertain = [ref for ref in storage.uncertain if ref() is not None]
    for ref in storage.uncertain:
        other = ref()
        if other is not None and other is not writer:
            view = other._alias.steps[-1]
            raise refused_here(writer._trace, UnsupportedOperationError(
                f"this write changes a buffer that a live tensor ({_describe(other)}) may or may "
                f"not share: NumPy's {view.op.name} of it returns a view or a copy depending on "
                "memory layout that capture does not know. Make the intent explicit: "
                f"`.copy()` after the {view.op.name} for a copy, or write into the "
                f"{view.op.name} result instead of its base"))


def _describe(tensor: Tensor) -> str:
    node = tensor._data
    return f"%{node.index} {node.op}, {node.dtype}{list(node.shape)} from {node.location}"


# --- in-place operators and out= ------------------------------------------------------------

INPLACE_UFUNCS = {"+=": "add", "-=": "subtract", "*=": "multiply", "/=": "divide",
                  "//=": "floor_divide", "%=": "remainder", "**=": "power", "@=": "matmul",
                  "&=": "bitwise_and", "|=": "bitwise_or", "^=": "bitwise_xor",
                  "<<=": "left_shift", ">>=": "right_shift"}


def inplace(rec: Any, symbol: str, target: Tensor, other: Any) -> Tensor:
    """``target <symbol> other`` (``+=``...): NumPy's in-place operator, functionalized."""
    name = INPLACE_UFUNCS[symbol]
    if is_numpy_scalar(target):  # immutable: `s *= t` is `s = s * t`, a NumPy scalar's own
        return getattr(operator, name_of_operator(symbol))(target, other)  # math included
    op = ops.OPS[name]
    args = (target, other)
    if name == "power" and type(other) is not Tensor:
        op = ops.power_op(target.dtype, other)
        if op.name != "power":  # ndarray's fast path: square, sqrt or reciprocal
            args = (target,)
    if name == "matmul":
        _check_imatmul(rec, target, other)
    return write_ufunc(rec, op, args, target, None)


_OPERATOR_NAMES = {"+=": "add", "-=": "sub", "*=": "mul", "/=": "truediv", "//=": "floordiv",
                   "%=": "mod", "**=": "pow", "@=": "matmul", "&=": "and_", "|=": "or_",
                   "^=": "xor", "<<=": "lshift", ">>=": "rshift"}


def name_of_operator(symbol: str) -> str:
    """The :mod:`operator` function of an augmented assignment's binary operator."""
    return _OPERATOR_NAMES[symbol]


def write_ufunc(rec: Any, op: ops.Op, inputs: tuple, out: Tensor, where: Any) -> Tensor:
    """Record ``ufunc(*inputs, out=out, where=where)`` (NumPy's casting "same_kind")."""
    out = outside_constant(rec, out, f"np.{op.name}(..., out=cv.constant(...))")
    # a tensor owning its buffer, not 0-d (a state's, written with `a += t`): no scalar, no
    # refused view step, its node current, and assign() only sets it (but for an input)
    owner = out._alias is None and bool(out._data.shape) and out._data.kind != "input"
    if not owner:
        if is_numpy_scalar(out):
            raise located(rec, TypeError("return arrays must be of ArrayType"))
        check_writable(out)
    _check_ufunc_out(rec, op.name, inputs, out, where)
    result = rec.apply(op, inputs, {})._data
    node = out._data if owner else current(rec, out)
    if result.shape != node.shape:
        result = record(rec, ops.OPS["broadcast_to"], (result,), {"shape": node.shape})
    if result.dtype != node.dtype:
        result = record(rec, ops.OPS["astype"], (result,), {"dtype": node.dtype.name})
    if where is not None and where is not True:
        result = record(rec, ops.OPS["where"], (operand(rec, where), result, current(rec, out)),
                        {})
    if owner and out._alias is None:  # (recording the op changed nothing of out: checked)
        out._data = result
    else:
        assign(rec, out, result)
    return out


def _standin(a: Any, probe: tuple | None) -> Any:
    """A tensor or array as a one-element array of shape ``probe`` (or a zero-stride array of
    its real shape when ``probe`` is None); a literal stays itself."""
    if type(a) is Tensor or isinstance(a, np.ndarray):
        if probe is None:
            return updates.strided_standin(a.shape, a.dtype)
        return np.ones(probe, a.dtype)
    return a


_FITTING: dict[tuple, tuple] = {}  # the writes _check_ufunc_out found NumPy accepts, by kind
#   (dtypes by id: a key's value holds its dtypes, so an id in a key is theirs while it is kept)
_MAX_FITTING = 4096
_KEYED = frozenset((Tensor, np.ndarray, bool, int, float, complex))


def _check_ufunc_out(rec: Any, name: str, inputs: tuple, out: Tensor, where: Any) -> None:
    """Raise NumPy's own error for a write NumPy refuses: the casting rule first (on one-element
    stand-ins), then the shapes (on stand-ins of the real shapes, only when they fail). A write
    of the same ufunc, operand shapes and dtypes (or literal kinds) and output as one accepted
    before is accepted at once (an optimiser's step writes many arrays alike)."""
    key: Any = None
    dtypes: Any = None
    if (where is None or where is True) and not rec.symbolic:
        node = out._data
        if len(inputs) == 2 and type(inputs[0]) is Tensor and type(inputs[1]) is Tensor:
            x, y = inputs[0]._data, inputs[1]._data  # `a op= t`: the key in one tuple
            key = (name, node.shape, id(node.dtype), (x.shape, id(x.dtype)),
                   (y.shape, id(y.dtype)))
            dtypes = (node.dtype, x.dtype, y.dtype)
        else:
            dtypes = [node.dtype]
            key = [name, node.shape, id(node.dtype)]
            for a in inputs:
                t = type(a)
                if t is Tensor:
                    node = a._data
                    key.append((node.shape, id(node.dtype)))
                    dtypes.append(node.dtype)
                elif t is np.ndarray:
                    key.append((a.shape, id(a.dtype)))
                    dtypes.append(a.dtype)
                elif t in _KEYED or isinstance(a, np.generic):
                    key.append(rule_key(a))
                else:
                    key = None
                    break
            if key is not None:
                key = tuple(key)
        if key is not None:
            try:
                if key in _FITTING:
                    return
            except TypeError:  # a shape that is no tuple: checked each time
                key = None
    _check_ufunc_fits(rec, getattr(np, name), inputs, out, where)
    if key is not None and len(_FITTING) < _MAX_FITTING:
        _FITTING[key] = tuple(dtypes)


def _check_ufunc_fits(rec: Any, ufunc: np.ufunc, inputs: tuple, out: Tensor,
                      where: Any) -> None:
    matmul = ufunc is np.matmul
    probe = (1, 1) if matmul else ()
    try:
        with np.errstate(all="ignore"):
            ufunc(*[_standin(a, probe) for a in inputs], out=np.ones(probe, out.dtype),
                  casting="same_kind")
        shapes = [tuple(np.shape(a)) if type(a) is not Tensor else a.shape for a in inputs]
        if where is not None and where is not True:
            shapes.append(tuple(np.shape(where)))
        try:
            if matmul:
                fits = ops.OPS["matmul"].meta(list(inputs), {})[0] == out.shape
            else:
                fits = tuple(np.broadcast_shapes(*shapes, out.shape)) == out.shape
        except ValueError:
            fits = False
        if not fits:
            dest = updates.strided_standin(out.shape, out.dtype, writeable=True)
            ufunc(*[_standin(a, None) for a in inputs], out=dest, casting="same_kind")
            raise ValueError(f"non-broadcastable output operand with shape {out.shape}")
    except (ValueError, TypeError, OverflowError) as err:
        raise located(rec, err) from None


def _check_imatmul(rec: Any, target: Tensor, other: Any) -> None:
    """``a @= b`` needs ``b`` 2-d or more and a result of ``a``'s shape; NumPy's error else."""
    b_shape = tuple(np.shape(other)) if type(other) is not Tensor else other.shape
    try:
        fits = len(b_shape) >= 2 and target.ndim >= 1 and \
            ops.OPS["matmul"].meta([target, other], {})[0] == target.shape
    except (ValueError, TypeError):
        fits = False
    if fits:
        return
    dest = updates.strided_standin(target.shape, target.dtype, writeable=True)
    b = _standin(other if type(other) is Tensor else np.asarray(other), None)
    try:
        dest @= b
    except (ValueError, TypeError) as err:
        raise located(rec, err) from None
    raise located(rec, ValueError(f"matmul: shapes {target.shape} @= {b_shape} do not keep "
                                  "the target's shape"))


# --- t[key] = value --------------------------------------------------------------------------


def setitem(rec: Any, target: Tensor, key: Any, value: Any) -> None:
    """``target[key] = value``: an update op (``setitem``, or ``index_put`` for a tensor key)."""
    target = outside_constant(rec, target, "a write into cv.constant(...)")
    if is_numpy_scalar(target):
        raise located(rec, TypeError(f"'numpy.{target.dtype.type.__name__}' object does not "
                                     "support item assignment"))
    check_writable(target)
    try:
        key = advanced_index.tensor_key(key, _is_tensor)  # A[[k, p]] with p a tensor
    except IndexError as err:
        raise located(rec, err) from None
    if isinstance(key, tuple) and len(key) == 1 and type(key[0]) is Tensor:
        key = key[0]
    if type(key) is Tensor:
        if key.dtype == np.bool_ and mask_overlaps(target, key):
            raise rec.unsupported("tensor[mask] = value with a mask that shares the tensor's "
                                  "memory", MASK_SHARES_TARGET.format(fix="x[m.copy()] = v"))
        args = (current(rec, target), operand(rec, key), operand(rec, value, target.dtype))
        if key.dtype == np.bool_ and _rows_of_mask(rec, args[2], args[1]):
            node = record(rec, ops.OPS["mask_put"], args, {})  # y[m] = y[m] ** -1.5
            assign(rec, target, node)
            return
        if key.dtype == np.bool_:
            _check_one_value_per_row(rec, target, key, args[2])
        node = record(rec, ops.OPS["index_put"], args, {})
    elif isinstance(key, tuple) and any(type(k) is Tensor for k in key):
        node = _advanced_put(rec, target, key, value)
    else:
        index = normalize_index(key)
        fancy = any(isinstance(k, list) for k in index)  # a fancy write casts unsafely
        written = (operand if fancy else basic_write_value)(rec, value, target.dtype)
        node = record(rec, ops.OPS["setitem"], (current(rec, target), written), {"index": index})
    assign(rec, target, node)


def outside_constant(rec: Any, target: Tensor, call: str) -> Tensor:
    """The tensor a write into ``target`` writes: ``target`` itself, or, where it is
    ``cv.constant(a)`` of an outside ndarray ``a`` (``rec.constant_of``; ``a`` may be a view of
    one: ``cv.constant(self.c[3:])``), the state tensor of ``a``, since eagerly ``cv.constant``
    returns ``a`` and the write writes it (review 3, finding 15: ``cv.constant(self.c)[idx] +=
    1.0`` wrote a copy no replay wrote back). ``target`` then sees the state's buffer: later
    writes through either are seen by both. A view of such a constant (``b = cv.constant(
    self.c); b[1:]`` written) writes the constant's buffer, which becomes the state's
    (review 7, finding 3: both were silent, replays never wrote ``a``)."""
    if target._alias is not None:
        return _outside_buffer(rec, target, call)
    array = rec.constant_of.get(target._data.index)
    if array is None:
        return target
    state = rec.state_target(array, call)
    if state is target:
        return target
    if state._alias is None:
        node = current(rec, state)
        state._alias = Alias(Storage(node), (), (node,), None)
    node = current(rec, state)
    alias = state._alias
    target._data = node
    target._alias = Alias(alias.storage, alias.steps, alias.path, alias.layout)
    return state


def follow_state(rec: Any, node: Node, state: Tensor) -> None:
    """``cv.constant(a)``'s tensors of ``a``'s constant ``node``, which became ``a``'s state at
    its first write (``state``: the state's tensor), read the state from now on: eagerly each
    is ``a`` itself, so a name holding one across a write of ``a`` sees the write (``level =
    cv.constant(self.level); self.level[...] = ...; level + 1``: silent before, the replay
    read the value from before the write). They share one storage (``capture._held``), which a
    view taken of one before (``col = cv.constant(B)[:, 0]``) shares too: it becomes the
    state's."""
    held = rec.held_constants.pop(node.index, ())
    if not held:
        return
    alias = next((t._alias for t in held if t._alias is not None), None)
    storage, layout = (Storage(node), None) if alias is None else (alias.storage, alias.layout)
    state._alias = Alias(storage, (), (node,), layout)  # (its root is node: not written yet)
    for tensor in held:
        if tensor._alias is None:
            tensor._alias = Alias(storage, (), (node,), layout)


def _outside_buffer(rec: Any, target: Tensor, call: str) -> Tensor:
    """``target`` (a view) where its buffer is ``cv.constant(a)``'s, not yet written: the buffer
    becomes the state's of ``a`` (its value the state's), so the write is ``a``'s."""
    storage = target._alias.storage
    array = rec.constant_of.get(storage.node.index)
    if array is None:
        return target
    if array.base is not None:  # (before its root's first write follows it: state.py)
        raise rec.unsupported(call, (
            "cv.constant(a) is written through a view of it, and a is itself a view of another "
            "array's memory (a reshape, a slice), which capviz cannot follow through both; write "
            "a itself where the index holds no tensor (r = a[0]; r[1] = t), else make a an array "
            "of its own where it is made (a = np.arange(6.0).reshape(2, 3).copy())"))
    state = rec.state_target(array, call)
    if state._alias is not None and state._alias.storage is storage:
        return target
    if state._alias is not None:
        raise rec.unsupported(call, (
            "cv.constant(a) is written through a view of it, after a itself was written "
            "another way; take cv.constant(a) after that write, or write a only through it"))
    node = current(rec, state)
    storage.node = node
    storage.version += 1
    state._alias = Alias(storage, (), (node,), None)
    return target


def _rows_of_mask(rec: Any, value: Any, mask: Node) -> bool:
    """Whether written ``value`` has one row per element ``mask`` selects: its leading length
    is the size symbol of a read through that same mask (``y[m] = y[m] ** -1.5``). Another
    symbol there (a read through another mask) is refused by name."""
    if not isinstance(value, Node) or not value.shape or type(value.shape[0]) is not Symbol:
        return False
    origin = rec.graph.nodes[value.shape[0].origin]
    if origin.op == "mask_select" and same_value(origin.args[1], mask):
        return True
    raise rec.unsupported("tensor[mask] = values of a data-dependent length", (
        f"the values have {value.shape[0]} rows, the length of another selection than this "
        "mask's; write through the mask the values were selected with (y[m] = f(y[m])), or "
        "keep the shape: y = np.where(m, f(y), y)"))


def _is_tensor(value: Any) -> bool:
    return type(value) is Tensor


def _advanced_put(rec: Any, target: Tensor, key: tuple, value: Any) -> Node:
    """``target[i, j] = value`` with integer tensors in the tuple index: ``advanced_index_put``
    (:mod:`capviz.ops.advanced_index`); a boolean tensor there is refused by name."""
    if any(type(k) is Tensor and k.dtype == np.bool_ for k in key):
        raise rec.unsupported("tensor[...] = value with a boolean tensor inside a tuple index",
                              tuple_index_fix(key))
    try:
        index, positions, tensors = advanced_index.split_key(key, _is_tensor, normalize_index)
    except IndexError as err:
        raise located(rec, err) from None
    basic = advanced_index.is_basic(index, positions, tensors,
                                    lambda t: t._trace is rec and is_numpy_scalar(t))
    written = (basic_write_value if basic else operand)(rec, value, target.dtype)
    args = (current(rec, target), written, *[operand(rec, t) for t in tensors])
    return record(rec, ops.OPS[advanced_index.WRITE], args,
                  {"index": index, "tensors": positions})


def _check_one_value_per_row(rec: Any, target: Tensor, mask: Tensor, value: Any) -> None:
    """``t[mask] = values`` with several values along the selection: NumPy hands them out in
    order to the True entries, which works only for as many values as True entries (a count
    capture does not have): refused by name. A value that fits no selection is left to the
    op's rule (NumPy's error)."""
    rest = target.shape[mask.ndim:]
    shape = tuple(value.shape) if isinstance(value, Node) else tuple(np.shape(value))
    while len(shape) > len(rest) + 1 and shape[0] == 1:  # NumPy drops leading length-1 axes
        shape = shape[1:]
    if mask.ndim == 0 or len(shape) != len(rest) + 1 or shape[0] == 1:
        return
    try:
        np.broadcast_shapes(shape, (shape[0], *rest))
    except ValueError:
        return
    raise rec.unsupported(
        f"tensor[mask] = value of shape {shape}",
        "NumPy hands the values out in order to the True entries, which works only when there "
        "are as many values as True entries, a count capture does not know; for values laid "
        "out like the tensor write t[...] = np.where(mask, values, t)")


def replace(rec: Any, target: Tensor, new: Tensor) -> Tensor:
    """Make ``new`` (a tensor of ``target``'s shape) ``target``'s value, cast as NumPy's
    assignment casts (``t.sort()``: the sorted value written back). ``target`` may be
    ``cv.constant(a)`` of an outside array: the write is ``a``'s, as for setitem (``np.add.at``,
    ``np.put``, ``np.putmask``: silent before, replays never wrote ``a``)."""
    target = outside_constant(rec, target, "a write into cv.constant(...)")
    if is_numpy_scalar(target):
        raise located(rec, TypeError(
            f"cannot write into a NumPy scalar (numpy.{target.dtype.type.__name__}, the 0-d "
            "result of an op such as x.sum()): NumPy ignores the write or raises; write into "
            "an array instead"))
    check_writable(target)
    node = current(rec, new) if new._trace is rec else rec.adopt(new)
    if node.dtype != target.dtype:
        node = record(rec, ops.OPS["astype"], (node,), {"dtype": target.dtype.name})
    assign(rec, target, node)
    return target
