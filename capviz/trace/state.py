"""Arrays from outside the capture that the captured code writes: the graph's states.

An ndarray that existed before the capture (an attribute, a global, a closure cell, a list or
dict item, an argument) and that the captured code writes (``a += t``, ``np.add(a, t,
out=a)``, ``np.clip(a, lo, hi, out=a)``, ``a[idx] = t``, a write through a view of it) becomes
a ``state`` node: its value when a replay starts. The writes are recorded on a capture tensor
standing for it (functionalized, as every write: :mod:`capviz.trace.mutation`), every later
read of the array or of a view of it inside the capture reads that tensor's current value,
and the scope's exit adds an ``output`` node (``params["state"]``) with the final value, which
a replay writes back into the live array (:mod:`capviz.replay.state`). The capture itself
changes nothing outside: ``a[idx] = t`` stores the values ``a[idx]`` already holds.

A constant the capture recorded for the array before writing it (``y = x @ W; W -= lr * g``)
becomes the state node itself, so the read before the write reads the live value too; a view
read before it (``W[0]``) is refused at the write, naming that read.

NumPy's own operators on the array after the write (``np.sqrt(mem + 1e-8)`` with ``mem`` the
ndarray) run on its memory, which still holds the old values: no hook sees them. So, from the
first write until the scope exits, a floating-point state's live memory holds a marked NaN
(:data:`POISON_BITS`, which NumPy's arithmetic, casts and reductions carry along); a value
computed from it that reaches the capture is refused at that line, naming the array, and a
plain value NumPy stored into it (``a[0] = 1.0``) is refused at the exit. The scope's exit puts
the array's values back. :func:`capviz.capture`, which captures twice, writes finite values of
opposite signs instead (:func:`post_write_fill`): a NaN answers False to every comparison, so
``W.sum() < 0`` would look alike in both captures; with them the comparison of the two graphs
refuses every comparison after the write (:mod:`capviz.trace.recapture`). (Integer and
boolean states hold no NaN: in the scope form their NumPy reads after a write are not seen.)

An array the capture made itself through a path no hook sees (``acc = W.copy(); acc += t``,
``h = np.array([0.0]); h[0] = t``) is no state of the program: it is dead when the scope
exits, and its state node becomes the constant it was (the value when first written), written
back nowhere. NumPy's reads of it after the write read its memory, so it counts
(``recorder.inside_states``) and :func:`capviz.capture` captures a second time for it as for
a state: there it holds other values from its first write on (the NaN mark; integers and
booleans every bit inverted, :func:`_invert`), and such a read differs and is refused
(review 6, finding 9).
"""

from __future__ import annotations

import ast
import itertools
import linecache
import sys
import weakref
from types import FrameType
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.host import host_copy
from capviz.core.ir import Node
from capviz.core.layout import same_bits
from capviz.core.own_weakrefs import OwnRef
from capviz.core.source import format_source, source_of, user_frame
from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.ops import python_numbers
from capviz.trace import fold, kept_numbers, mutation, state_fixes, statements
from capviz.trace.python_ints import python_bounds, refuse_wrap, within_int64, wrapped_ints
from capviz.trace.tensor import Tensor


def root_of(array: np.ndarray) -> np.ndarray:
    """The ndarray owning ``array``'s memory (``array`` itself when it owns it)."""
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    return root


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def view_key(root: np.ndarray, view: np.ndarray) -> tuple | None:
    """The basic index ``key`` with ``root[key]`` the same view as ``view`` (same memory,
    shape and strides), or ``None`` when no such index is found (a transpose, a reshape,
    another dtype)."""
    if view is root:
        return ()
    if view.dtype != root.dtype or any(s <= 0 for s in root.strides) or not root.size:
        return None
    rest = _address(view) - _address(root)
    starts = []
    for size, stride in zip(root.shape, root.strides):
        start = rest // stride
        if not 0 <= start < size:
            return None
        starts.append(start)
        rest -= start * stride
    if rest:
        return None
    key: list[Any] = []
    j = 0
    for d, (start, stride) in enumerate(zip(starts, root.strides)):
        left = root.ndim - d
        if j < view.ndim and view.ndim - j <= left and view.strides[j] % stride == 0 \
                and view.strides[j] // stride >= 1:
            step = view.strides[j] // stride
            stop = start + (view.shape[j] - 1) * step + 1
            whole = start == 0 and step == 1 and stop == root.shape[d]
            key.append(slice(None) if whole else slice(start, stop, None if step == 1 else step))
            j += 1
        else:
            key.append(start)
    if j != view.ndim:
        return None
    made = root[tuple(key)]
    if _address(made) != _address(view) or made.shape != view.shape or any(
            a != b and n > 1 for a, b, n in zip(made.strides, view.strides, view.shape)):
        return None  # (an axis of length 1 holds one element whatever its stride)
    return tuple(key)


def view_path(root: np.ndarray, view: np.ndarray) -> tuple[tuple, tuple | None, tuple | None
                                                           ] | None:
    """``(key, axes, shape)`` with ``root.reshape(shape)[key].transpose(axes)`` the same view
    as ``view`` (``shape`` ``None``: no reshape; ``axes`` ``None``: no transpose), or ``None``
    (see :func:`view_key`).

    A reshape is looked for when ``root`` is C-contiguous (``W = np.arange(9.0).reshape(3,
    3)``: the memory's owner is the 1-D ``arange``, and ``W``, ``W.T``, ``W[:, 1:]`` are
    indexes of its reshape to ``(3, 3)``): the shape whose C-order strides are the view's."""
    path = _index_path(root, view)
    if path is not None:
        return (*path, None)
    shape = _reshaped(root, view)
    if shape is None:
        return None
    path = _index_path(root.reshape(shape), view)
    return None if path is None else (*path, shape)


def _reshaped(root: np.ndarray, view: np.ndarray) -> tuple | None:
    """The shape of a C-order reshape of C-contiguous ``root`` with a dimension for each of
    ``view``'s strides (largest first), or ``None``."""
    if not root.flags.c_contiguous or view.dtype != root.dtype or not root.size:
        return None
    item = root.itemsize
    strides = sorted({s for s, n in zip(view.strides, view.shape) if n > 1}, reverse=True)
    if not strides or strides[-1] <= 0:
        return None
    shape = []
    outer = root.nbytes
    for stride in strides:
        if outer % stride or stride % item:
            return None
        shape.append(outer // stride)
        outer = stride
    if outer != item:
        shape.append(outer // item)
    shape_t = tuple(shape)
    return None if shape_t == tuple(root.shape) else shape_t


def _index_path(root: np.ndarray, view: np.ndarray) -> tuple[tuple, tuple | None] | None:
    """``(key, axes)`` with ``root[key].transpose(axes)`` the same view as ``view``, or
    ``None``."""
    key = view_key(root, view)
    if key is not None or view.ndim < 2:
        return None if key is None else (key, None)
    order = tuple(int(i) for i in np.argsort([-s for s in view.strides], kind="stable"))
    orders: Any = (order,)
    if view.ndim <= 4 and 1 in view.shape:  # axes of length 1: their strides say nothing
        orders = itertools.chain(orders, itertools.permutations(range(view.ndim)))
    for order in orders:
        key = view_key(root, view.transpose(order))
        if key is not None:
            return key, tuple(int(i) for i in np.argsort(order))
    return None


def _view(tensor: Tensor, path: tuple[tuple, tuple | None, tuple | None]) -> Tensor:
    key, axes, shape = path
    if shape is not None:
        tensor = tensor.reshape(shape)
    view = tensor[key] if key else tensor
    return view if axes is None else view.transpose(axes)


class State:
    """One array written by the capture: its live object (weakly), its node, the capture
    tensor standing for it, and whether its memory holds the poison now."""

    __slots__ = ("fill", "filled", "node", "poisoned", "ref", "tensor", "views")

    def __init__(self, ref: weakref.ref, node: Node, tensor: Tensor) -> None:
        self.ref = ref
        self.node = node
        self.tensor = tensor
        self.poisoned = False
        self.filled = False  # finite values in place of the poison (:func:`post_write_fill`)
        self.fill: np.ndarray | None = None  # the first capture's: checked at the exit
        self.views: tuple[Node, ...] = ()  # its view states: views read before the first
        #                                     write


POISON_BITS = 0x7FFA5A5A00000000
"""The float64 NaN a floating-point state's memory holds while the capture runs; float32 and
float16 hold it cast (the same top bits). NumPy propagates a NaN operand's payload."""
_POISON_KEY = (POISON_BITS >> 42) & 0x1FFFFF  # exponent and top 10 mantissa bits, no sign
_POISON = np.array([POISON_BITS], np.uint64).view(np.float64)[0]


_FILLS: dict[tuple[np.dtype, tuple[int, ...], bool], np.ndarray] = {}
_FILL_BYTES = 1 << 20  # a fill this large or larger is made for each capture, never kept
_FILLS_KEPT = 16 << 20  # the kept fills, at most (cleared when they would pass it)
_kept = [0]  # bytes the kept fills hold


def post_write_fill(root: np.ndarray, second: bool) -> np.ndarray:
    """The finite values a state's memory holds after the capture's first write into it when
    :func:`capviz.capture` captures twice (in place of the NaN mark, which answers False to
    every comparison, so that ``W.sum() < 0`` and ``W.sum() > 0`` could not both differ): the
    first capture's are large and positive, increasing along the array (``s * (1 + i/n)``,
    ``s`` 1e6, 1e3 for float16); the second's negative, of another scale and shape and
    decreasing (``-3s * (1 + (i/n)**2)``). Every threshold between them, every sign, sum,
    order (argmax), scale (var) or ratio of them answers differently in the two captures.
    Those of small states are kept for the next capture (16 MiB of them at most); a state of
    1 MiB or more gets its own, which dies with the capture."""
    key = (root.dtype, root.shape, second)
    fill = _FILLS.get(key)
    if fill is None:
        part = np.zeros(0, root.dtype).real.dtype
        scale = 1e3 if part.itemsize == 2 else 1e6
        values = np.arange(root.size, dtype=np.float64)  # computed in place: one array of the
        values /= max(root.size, 1)                       # state's size at a time (review 4,
        if second:                                        # finding 15), the same bits as
            values *= values                              # -3s * (1 + u * u) and s * (1 + u)
            values += 1
            values *= -3 * scale
        else:
            values += 1
            values *= scale
        if root.dtype.kind == "c":
            values = values * (1 + 1j)
        fill = values.astype(root.dtype, copy=False).reshape(root.shape)
        del values
        fill.flags.writeable = False
        if fill.nbytes < _FILL_BYTES:  # (a big state's would outlive the capture: review 3,
            if len(_FILLS) > 256 or _kept[0] + fill.nbytes > _FILLS_KEPT:  # finding 21)
                _FILLS.clear()
                _kept[0] = 0
            _FILLS[key] = fill
            _kept[0] += fill.nbytes
    return fill


def _fill_first(recorder: Any, root: np.ndarray) -> np.ndarray | None:
    """The first of two captures: :func:`post_write_fill` into float ``root`` (the values it
    wrote), ``None`` where the NaN mark is written instead (the scope form, one capture)."""
    if not recorder.twice or root.dtype.kind not in "fc" or not root.size \
            or not root.flags.writeable:
        return None
    fill = post_write_fill(root, second=False)
    root[...] = fill
    return fill


def _parts(array: np.ndarray) -> np.ndarray | None:
    if array.dtype.kind == "f":
        return array
    if array.dtype.kind == "c":
        return np.stack([array.real, array.imag])
    return None


def poisoned(value: np.ndarray) -> bool:
    """Whether ``value`` holds a NaN computed from a poisoned state (see the module
    docstring)."""
    parts = _parts(value)
    if parts is None or not parts.size:
        return False
    nan = np.isnan(parts)
    if not nan.any():
        return False
    bits = parts[nan].astype(np.float64).view(np.uint64)
    return bool((((bits >> 42) & 0x1FFFFF) == _POISON_KEY).any())


FLOATS = (float, complex, np.floating, np.complexfloating)


def check_operands(recorder: Any, args: tuple) -> None:
    """While a state is poisoned: refuse a number among ``args`` (a literal: ``(w * 2).sum()``
    is a NumPy scalar) that NumPy computed from it."""
    for a in args:
        if isinstance(a, FLOATS) and a != a and poisoned(np.asarray(a)):
            refuse_poisoned(recorder, a)


def _poison(root: np.ndarray) -> bool:
    if root.dtype.kind not in "fc" or not root.size or not root.flags.writeable:
        return False
    if root.dtype.kind == "c":
        root.real[...] = _POISON
        root.imag[...] = _POISON
    else:
        root.fill(_POISON)
    return True


def _invert(root: np.ndarray) -> bool:
    """Every element of integer or boolean ``root`` changed (bitwise not): in the second of two
    captures, an array the first did not know (one the call makes with a spelling no hook sees,
    ``np.array([0, 0])``) holds other values than it held in the first from its first write on,
    so a value NumPy reads from it after that write differs between the two graphs and is
    refused (a float one holds the NaN mark instead)."""
    if root.dtype.kind not in "biu" or not root.size or not root.flags.writeable:
        return False
    np.invert(root, out=root)
    return True


_PATTERNS: dict[np.dtype, tuple[np.dtype, Any, bytes]] = {}  # dtype -> (unsigned type, poison
#                                                               bits, as bytes)


def _all_poison(root: np.ndarray) -> bool:
    """Whether every element of poisoned ``root`` still holds the poison's exact bits (a value
    NumPy stored, even a NaN computed from the poison, changes them)."""
    if root.nbytes <= _BYTES_COMPARED and root.flags.c_contiguous:
        whole = _WHOLE.get((root.dtype, root.nbytes))
        if whole is not None:  # (made below at the first array of its type and size)
            return root.tobytes() == whole
    if not root.flags.c_contiguous:
        parts = _parts(root)
        bits = parts.astype(np.float64).view(np.uint64)
        return bool((bits == np.uint64(POISON_BITS)).all())
    pattern = _PATTERNS.get(root.dtype)
    if pattern is None:
        part = np.zeros(0, root.dtype).real.dtype
        unsigned = np.dtype(f"u{part.itemsize}")
        bits = np.array([_POISON]).astype(part).view(unsigned)[0]
        pattern = _PATTERNS[root.dtype] = (unsigned, bits, bits.tobytes())
    if root.nbytes <= _BYTES_COMPARED:  # one memcmp of the bytes (no array made)
        whole = _WHOLE.get((root.dtype, root.nbytes))
        if whole is None:
            if len(_WHOLE) > 64:
                _WHOLE.clear()
            whole = _WHOLE[(root.dtype, root.nbytes)] = pattern[2] * (
                root.nbytes // len(pattern[2]))
        return root.tobytes() == whole
    return bool((root.reshape(-1).view(pattern[0]) == pattern[1]).all())


_BYTES_COMPARED = 1 << 16
_WHOLE: dict[tuple[np.dtype, int], bytes] = {}  # the poison's bytes of a whole small array


def refuse_poisoned(recorder: Any, value: np.ndarray) -> None:
    """Refuse a value NumPy computed, outside the capture's sight, from a written state."""
    names = [s.node.name or "an ndarray from outside" for s in recorder.states.values()
             if s.poisoned]
    raise recorder.refuse_here("a value NumPy computed from a written ndarray", (
        f"this value was computed by NumPy's own operators from {' or '.join(names)} after "
        "the capture wrote it, and NumPy read its memory, which the capture does not change; "
        "make the array meet a tensor first, so the capture records the read (a local name: "
        "a += t rebinds it to the written tensor; else y = x * 0 + a with x a tensor)"))


def find(recorder: Any, array: np.ndarray) -> tuple[State, np.ndarray] | None:
    """The state ``array`` (or the array it views) is, with that root array; ``None`` when
    it is no state."""
    root = root_of(array)
    state = recorder.states.get(id(root))
    if state is None or state.ref() is not root:
        return None
    return state, root


def read(recorder: Any, array: np.ndarray) -> Node | None:
    """The node a read of ``array`` reads when it is (a view of) a state: the state tensor's
    current value, or a ``getitem`` of it; ``None`` when it is no state."""
    found = find(recorder, array)
    if found is None:
        return None
    state, root = found
    if array is root:
        return mutation.current(recorder, state.tensor)
    path = view_path(root, array)
    if path is None:
        raise recorder.refuse_here(f"a view of the state {state.node.name or 'array'}", (
            f"the capture wrote {_called(state.node)} and reads it through a view it cannot "
            "map back to an index of it (another dtype, a reshape of memory that is not "
            "C-contiguous); index the "
            "array itself (a[i], a[:, j:k]) inside the capture"))
    return mutation.current(recorder, _view(state.tensor, path))


def tensor_of(recorder: Any, array: np.ndarray) -> Tensor | None:
    """The capture tensor standing for ``array`` where it is (a view of) a state: the state's
    tensor, or a view of it, through which a write is the state's write, as a write through
    the array itself is eagerly (``t = cv.constant(self.W); t += 1`` with ``self.W`` a view
    of its memory, ``np.linspace``'s result: a new tensor of the view's value dropped that
    write); ``None`` when it is no state or its view cannot be mapped."""
    found = find(recorder, array)
    if found is None:
        return None
    state, root = found
    if array is root:
        return state.tensor
    path = view_path(root, array)
    return None if path is None else _view(state.tensor, path)


def _called(node: Node) -> str:
    return f"the ndarray {node.name}" if node.name else "an ndarray from outside"


def target(recorder: Any, array: np.ndarray, call: str, frame: FrameType | None = None
           ) -> Tensor:
    """The capture tensor a write into ndarray ``array`` (``call``) writes: the state tensor
    of the array it belongs to (made now if it is the first write, at the user's ``frame``:
    found here when not given), or a view of it."""
    root = array if array.base is None else root_of(array)
    state = recorder.states.get(id(root))
    if state is None or state.ref() is not root:  # the first write: (see find)
        state = _new_state(recorder, root, array,
                           user_frame(sys._getframe(1)) if frame is None else frame)
    if array is root:
        return state.tensor
    path = view_path(root, array)
    if path is None:
        raise recorder.refuse_here(call, (
            f"{call} writes a view of {_called(state.node)} that capviz cannot map back to an "
            "index of it (another dtype, a reshape of memory that is not C-contiguous); write "
            "through an index of "
            "the array itself (a[i] = t, a[:, j:k] += t)"))
    return _view(state.tensor, path)


def _new_state(recorder: Any, root: np.ndarray, met: np.ndarray,
               frame: FrameType | None) -> State:
    graph = recorder.graph
    others = recorder.others
    named = None if others is None else others.named(root)  # (a second capture: the first's)
    if named is not None:
        name, place = named
    else:
        namer = recorder.namer  # (Recorder.name_and_place, without its frame)
        name, place = namer.find_place(root, namer.frames(frame, recorder.scopes.entry))
    if name is None and met is not root:
        name, viewed = recorder.name_and_place(met, frame)
        if viewed is not None:  # named by a view of it (W = np.arange(9.0).reshape(3, 3)):
            place = (*viewed, True)  # the path must lead to a view of the same memory
    adopted = recorder._adopted
    hit = adopted.get(id(root)) if adopted else None
    node = hit[1] if hit is not None and hit[0] is root else None
    if node is not None and (node.kind != "constant" or not recorder._unchanged(node, root)):
        node = None  # read before, then changed by NumPy: that read keeps its value
    if node is not None:  # the read before the write reads the state
        node.kind = "state"
        kept = graph.constant_values.pop(node.index)
        if np.may_share_memory(kept, root):  # kept by reference (core/references): the
            kept = host_copy(kept)            # state's value read before the write, copied
        graph.state_values[node.index] = kept
        graph.constant_origins.pop(node.index, None)
        if node.name is None:
            node.name = name
    else:
        if frame is not None and frame.f_code is recorder._user_code:  # (as apply() does)
            source = (recorder._user_file, frame.f_lineno, recorder._user_function)
        else:
            source = source_of(frame)
        node = recorder._append("state", None, (), {}, tuple(root.shape), root.dtype, source,
                                name, frame=frame)
        plain = type(root) is np.ndarray and root.dtype.kind in "biufc"
        seen = recorder.seen(root) if plain else root  # (a second capture: the first's)
        graph.state_values[node.index] = seen.copy("K") if plain else host_copy(root)
    ref = OwnRef(root)
    graph.state_targets[node.index] = ref
    if place is not None:
        graph.state_places[node.index] = place
    state = State(ref, node, Tensor(node, recorder))
    recorder.states[id(root)] = state
    if graph.constant_origins:  # before the poison: they read its values
        _views_read_before(recorder, root, state)
    fill = None if others is not None else _fill_first(recorder, root)
    if fill is not None:  # the first of two captures: finite values, not NaN
        state.poisoned = state.filled = True
        state.fill = fill
    elif others is not None and (fill := others.fill(root)) is not None:  # the second:
        state.poisoned = state.filled = True                                 # other values
        state.fill = fill
        recorder.poisoned += 1
    elif others is not None and named is None and _invert(root):  # the second capture: an
        pass  # array the first did not know (made inside the call), of integers or booleans
    elif _poison(root):  # the live values are in graph.state_values
        state.poisoned = True
        recorder.poisoned += 1
        if recorder.marked_outside is None and recorder.mark_watch is not None:
            recorder.mark_watch(recorder)  # what NumPy may carry the mark into, noted
    if hit is not None:
        adopted.pop(id(root), None)
    if hit is not None and node is hit[1]:  # tensors cv.constant(root) gave: root itself
        mutation.follow_state(recorder, node, state.tensor)  # eagerly, so they see this write
    if recorder.held_views:
        _follow_views(recorder, root, state)
    return state


def _follow_views(recorder: Any, root: np.ndarray, state: State) -> None:
    """``cv.constant(v)`` of a view ``v`` of ``root`` taken before ``root``'s first write
    (``v = cv.constant(self.c[3:])``) is eagerly ``v`` itself, which sees ``root``'s writes: it
    reads the state through that view from now on (silent before: a replay read the value
    from before the write). One a view was taken of already (``v[1:]``: its own storage, which
    capviz cannot put under the state's) is refused at this write."""
    for tensor, view in recorder.held_views.pop(id(root), ()):
        path = view_path(root, view)
        if path is None or tensor._alias is not None:
            raise recorder.refuse_here(f"a write into {_called(state.node)}", (
                f"cv.constant of a view of it, taken at {format_source(tensor._data.source)} "
                "and viewed again before this write, is that view eagerly and sees the "
                "write, which capviz cannot follow through both; index cv.constant of the "
                "array itself (cv.constant(a)[3:]), or take it after the write"))
        followed = _view(state.tensor, path)
        tensor._data = followed._data
        tensor._alias = followed._alias


def _views_read_before(recorder: Any, root: np.ndarray, state: State) -> None:
    """A view of ``root`` the capture recorded as a constant before the first write (``y =
    W.T @ x; W -= lr * g``) reads what eager reads there, ``root``'s value when the call
    starts: it becomes a *view state* (``params["of"]``: the state it views, ``"index"``,
    ``"axes"`` and maybe ``"reshape"``: the view, see :func:`view_path`), which a replay reads
    from the live array when it starts and never writes back. A view capviz cannot map back to
    an index of ``root`` or of its C-order reshape (another dtype), or one whose memory NumPy
    changed since the capture read it, stays refused at the write, naming the read."""
    graph = recorder.graph
    earlier = {index for index, ref in graph.constant_origins.items()
               if ref() is root and index != state.node.index}
    if not earlier:
        return
    met = {node.index: value for value, node in recorder._adopted.values()
           if node.kind == "constant" and node.index in earlier}
    for index in sorted(earlier):
        node = graph.nodes[index]
        view = met.get(index)
        path = None if view is None else view_path(root, view)
        if path is not None and not recorder._unchanged(node, view) and \
                (told := state_fixes.numpy_write_between(
                    node.source, root, source_of(user_frame(sys._getframe())))) is not None:
            raise recorder.refuse_here(f"a write into {_called(state.node)}", (  # (review 8,
                f"the capture read {node.name or 'a part of it'} at "     # finding 8: the
                f"{format_source(node.source)}, then NumPy's own operators wrote it at {told}"))
        if path is None or not recorder._unchanged(node, view):
            raise recorder.refuse_here(f"a write into {_called(state.node)}", (
                f"the capture read {node.name or 'a part of it'} at "
                f"{format_source(node.source)} before this write, through a view capviz "
                "cannot map back to an index of it (another dtype, a reshape of memory that is "
                "not C-contiguous) or whose values NumPy changed since; make that read after "
                "the write, or read it as an index of the array (a[i], a[:, j:k], a.T) before "
                "it"))
        _view_state(graph, node, state, path)


def _view_state(graph: Any, node: Node, state: State,
                path: tuple[tuple, tuple | None, tuple | None]) -> None:
    """Turn constant ``node``, a view of ``state``'s array read before its first write, into
    a view state (see :func:`_views_read_before`)."""
    kept = graph.constant_values.pop(node.index)
    root = state.ref()
    if np.may_share_memory(kept, root):  # kept by reference: its value now, copied
        kept = host_copy(kept)
    graph.constant_origins.pop(node.index, None)
    key, axes, shape = path
    node.kind = "state"
    node.params = {"of": state.node.index, "index": key, "axes": axes}
    if shape is not None:
        node.params["reshape"] = shape
    graph.state_values[node.index] = kept
    graph.state_targets[node.index] = state.ref
    state.views += (node,)


def restore(recorder: Any, source: Any) -> None:
    """Put the poisoned states' values back (called when the scope exits, first); a plain
    value NumPy stored into one meanwhile is queued as a violation at the exit."""
    graph = recorder.graph
    for state in recorder.states.values():
        if not state.poisoned:
            continue
        root = state.ref()
        if root is None:
            continue
        state.poisoned = False
        if state.fill is None or recorder.others is not None:  # (a first capture's fill is
            recorder.poisoned -= 1                               # not counted)
        if not _as_left(state, root):
            _refuse_plain(recorder, state, source)
        saved = graph.state_values[state.node.index]
        if type(root) is np.ndarray and type(saved) is np.ndarray and saved.dtype is root.dtype:
            root[...] = saved  # (np.copyto's work, without its argument parsing)
        else:
            np.copyto(root, saved)


PLAIN = "a write NumPy made into an array the capture wrote"
"""The ``call`` of the situation ``stored_plain``."""


def _refuse_plain(recorder: Any, state: State, source: Any) -> None:
    """Queue the refusal of a write NumPy made into ``state``'s array after the capture's
    (``np.clip(self.W, lo, hi, out=self.W)``: review 3, finding 2) at the user's line that
    makes it, where :func:`capviz.trace.state_fixes.plain_write` finds it, else at
    ``source`` (the scope's exit)."""
    node = state.node
    line, text, reason = state_fixes.plain_write(recorder.graph, node)
    name = node.name or next(iter(state_fixes.expressions(recorder.graph, [node])),
                             "an ndarray from outside")
    where = line or source
    message = explain(Failure("unsupported_op", PLAIN, name, where,
                              UserCode("other", shorten(text), {"array": name}), None, reason))
    recorder.pending.append(("unsupported_op", PLAIN, message, where))


def _as_left(state: State, root: np.ndarray) -> bool:
    """Whether written ``root`` still holds what the capture left in its memory at the first
    write (NumPy stored nothing plain into it since): the fill either capture wrote (a
    second capture's too: ``np.maximum(W, 0, out=W)`` leaves the first's positive fill as it
    was), or the NaN mark."""
    if state.fill is not None:
        return same_bits(root, state.fill)
    return state.filled or _all_poison(root)


def final_values(recorder: Any) -> list[tuple[State, Node]]:
    """Each state with the node of its final value (called when the scope exits)."""
    states = list(recorder.states.values())
    recorder.states = {}
    return [(state, mutation.current(recorder, state.tensor)) for state in states]


def finish(recorder: Any, written: list[tuple[State, Node]], source: Any) -> None:
    """An ``output`` node with each state's final value; a state whose array died with the
    capture (made inside it: called once the scope released its frames) becomes the constant
    it was."""
    graph = recorder.graph
    recorder._adopted = {}  # its references would keep the capture's own arrays alive
    recorder.constant_of = {}  # (cv.constant's arrays: the same)
    recorder.held_constants = {}
    recorder.held_views = {}
    for state, final in written:
        node = state.node
        if state.ref() is None:
            recorder.inside_states.append(node.name or "a buffer")  # its fill may have
            #                                         reached NumPy's reads: compared
            for dead in (node, *state.views):
                dead.kind = "constant"
                dead.params = {}
                graph.constant_values[dead.index] = graph.state_values.pop(dead.index)
                del graph.state_targets[dead.index]
                graph.state_places.pop(dead.index, None)
            continue
        graph.nodes.append(Node(len(graph.nodes), "output", None, (final,),
                                {"state": node.index}, final.shape, final.dtype, source,
                                "", node.name))
    for _, node in recorder.generators.values():  # a generator: the live object, advanced
        graph.nodes.append(Node(len(graph.nodes), "output", None, (node,),
                                {"state": node.index}, None, None, source, "", node.name))
    recorder.generators = {}
    graph.rebuilt()


# --- a draw of one Python number (random.random()): a weak scalar in NumPy's arithmetic -----

# a Python number of each kind, which NumPy promotes weakly by kind (x32 * 1j is complex64)
_WEAK = {"b": True, "i": 1, "u": 1, "f": 1.0, "c": 1j}


def _python(recorder: Any, a: Any) -> bool:
    return type(a) is Tensor and a._trace is recorder and a._data.index in recorder.python_nodes


def python_operands(recorder: Any, op: Any, args: tuple, params: dict) -> tuple[tuple, bool]:
    """``op``'s operands, before it is recorded while the capture holds draws of Python numbers
    (``r = random.random()``: a 0-d float64 or int64 tensor, and what Python arithmetic makes of
    them only: ``1 + 0.1 * r``), and whether its result is a Python number too (every tensor
    operand is one).

    NumPy promotes a Python number weakly: ``x32 * r`` converts ``r`` to float32 first and is
    float32. Where the graph's float64 or int64 would give another dtype, the draw is cast to
    the dtype NumPy converts it to (``np.result_type`` of the other operands and a Python
    number), which is what NumPy computes with, bit for bit; a conversion to a narrower integer
    (which raises OverflowError for a draw out of its range) is refused at the line."""
    kept = recorder.__dict__.get("_kept_nodes")
    if kept:  # (float(t) / int(t) in a kept number's update: kept_numbers.stand_in)
        args = kept_numbers.taken(recorder, args)
    drawn = [k for k, a in enumerate(args) if _python(recorder, a)]
    if not drawn:
        return args, False
    if all(k in drawn or type(a) in (bool, int, float, complex) for k, a in enumerate(args)):
        if kept and any(args[k]._data.index in kept for k in drawn):
            recorder.__dict__["_next_kept"] = True  # (Python's arithmetic: kept_op)
            return args, True
        if getattr(op, "name", "") in python_numbers.OPERATORS and any(
                type(a) is bool or (type(a) is Tensor and a.dtype.kind == "b") for a in args):
            recorder.__dict__["_next_python"] = True  # (True + True is 2 to Python, True to
            return args, True                        # NumPy: Python's operator, kept_op)
        within_int64(recorder, op, args)
        return args, True
    wrapped = wrapped_ints(recorder)
    for k in drawn:  # (a wrapped int64 meets an array: only its % 2**k is Python's)
        if args[k]._data.index in wrapped:
            raise refuse_wrap(recorder, *wrapped[args[k]._data.index])
    strong = tuple(a._data if type(a) is Tensor else a for a in args)  # shapes and dtypes
    weak = tuple(_WEAK[a.dtype.kind] if k in drawn else strong[k] for k, a in enumerate(args))
    try:
        got, want = op.meta(strong, params), op.meta(weak, params)
    except Exception:  # NumPy refuses one of them: the op's own error is raised when recorded
        return args, False
    if got == want:
        return args, False
    others = [a.dtype if hasattr(a, "dtype") else a if type(a) in (bool, int, float, complex)
              else np.asarray(a).dtype for k, a in enumerate(args) if k not in drawn]
    args = list(args)
    for k in drawn:
        node = args[k]._data
        converted = np.result_type(*others, _WEAK[node.dtype.kind])  # by kind, as NumPy
        known = fold.known_value(recorder.graph, node, {}) if converted.kind in "iub" \
            else None  # cv.constant(3) * 2: a number the capture knows, checked as NumPy does
        if known is not None:
            number = known.item()
            if converted.kind != "b" and not \
                    np.iinfo(converted).min <= number <= np.iinfo(converted).max:
                raise OverflowError(f"Python integer {number} out of bounds for {converted}")
        elif converted.kind not in "fc":
            raise recorder.refuse_here(f"a Python int drawn at {format_source(node.source)}", (
                f"the draw is a Python int, which NumPy converts to {converted} here, raising "
                "OverflowError for a draw out of its range, which a graph cannot check; "
                "compute with int64: x.astype(np.int64)"))
        args[k] = Tensor(recorder.record(ops.OPS["astype"], (node,),
                                         {"dtype": converted.name}), recorder)
    return tuple(args), False


def kept_op(recorder: Any, op: Any, args: tuple, params: dict) -> tuple[Any, dict]:
    """The op recorded for ``op`` on Python numbers one of which an object keeps
    (:mod:`capviz.trace.kept_numbers`): ``python_number``, Python's own operator
    (:mod:`capviz.ops.python_numbers`); ``where`` (Python's min/max) as it is; any other
    refused (the lifted run is thrown away, and the two captures give their refusal)."""
    if recorder.__dict__.pop("_next_python", False):
        recorder.__dict__["_next_kept"] = True  # (a bool among draws: Python's operator)
        recorder.__dict__["_draws_only"] = True
    if not recorder.__dict__.get("_next_kept"):
        return op, params
    name = getattr(op, "name", "")
    if name == "where" and not params:
        return op, params
    kinds = [type(a) if type(a) in (bool, int, float) else
             {"f": float, "b": bool}.get(np.dtype(a._data.dtype).kind, int) for a in args]
    if name in python_numbers.POWERS and not params and len(args) == 2:  # (b1 ** self.t)
        found = python_numbers.result_type("power", kinds, args[1])
        if found is not None:
            return ops.OPS["python_number"], {"op": "power", "result": found.__name__}
    if params or python_numbers.result_type(name, kinds) is None:
        recorder.__dict__.pop("_next_kept", None)
        raise recorder.refuse_here(f"np.{name} of a Python number the object keeps", (
            "the capture replays the Python numbers an object keeps with Python's own "
            "operators (+ - * / // % ** and comparisons), and this one is not one of them; keep "
            "the number in a 0-d array written with the tensor itself (np.array(...) before "
            "the capture)"))
    return ops.OPS["python_number"], {"op": name}


def mark_python(recorder: Any, result: Any) -> None:
    """Note that ``result`` (a tensor) is a Python number in eager code
    (:func:`python_operands`), with the bounds
    :func:`capviz.trace.python_ints.within_int64` found for it."""
    if type(result) is tuple:  # (divmod of Python numbers: a tuple of them)
        for each in result:
            mark_python(recorder, each)
        return
    if type(result) is Tensor:
        recorder.python_nodes.add(result._data.index)
        bounds = recorder.__dict__.pop("_next_bounds", None)
        if bounds is not None:
            python_bounds(recorder)[result._data.index] = bounds
        if recorder.__dict__.pop("_next_kept", False) and not \
                recorder.__dict__.pop("_draws_only", False):  # (of a kept number)
            kept_numbers.kept_nodes(recorder).add(result._data.index)
        wrapped = recorder.__dict__.pop("_next_wrapped", None)
        if wrapped is not None:  # (past int64, on its way to a % 2**k: python_ints)
            wrapped_ints(recorder)[result._data.index] = wrapped


# --- `a[idx] = t` with an ndarray `a`: NumPy converts t; the statement says where it goes -----

def storing(frame: FrameType | None) -> tuple[str, Any, Any] | None:
    """When ``frame`` runs ``container[key] = value`` (its STORE_SUBSCR), that statement's
    target text, container and key, read again from the frame (only for a target made of
    names, attributes and plain subscripts, which reading again cannot change); else
    ``None``."""
    if frame is None:
        return None
    instruction = statements.instruction(frame)
    if instruction is None or instruction.opname != "STORE_SUBSCR":
        return None
    text = statements.text_at(frame, instruction)
    if text is None:  # code compiled from a string: the target read from the bytecode
        found = statements.stored_target(frame, instruction)
        return None if found is None else ("a[...]", *found)
    try:
        tree = ast.parse(text.strip(), mode="eval").body if text else None
    except SyntaxError:
        return None
    if not isinstance(tree, ast.Subscript) or not statements.plain(tree):
        return ("", None, None) if text is None else (text.strip(), None, None)
    spaces = (frame.f_locals, frame.f_globals, frame.f_builtins)
    try:
        container = statements.value(tree.value, spaces)
        key = statements.value(tree.slice, spaces)
    except Exception:  # a target that does not read again (a name unbound...): not ours
        return (text.strip(), None, None)
    return text.strip(), container, key


def store(recorder: Any, tensor: Tensor, call: str) -> Any:
    """``a[idx] = t`` with ``a`` an ndarray from outside: record ``t`` written into the state
    ``a`` and give NumPy what ``a[idx]`` holds already (the capture changes nothing outside).
    ``None`` when NumPy is not storing into an ndarray here (a read of ``t``)."""
    frame = user_frame(sys._getframe(2))
    found = storing(frame)
    if found is None:
        return None
    text, container, key = found
    if type(container) is not np.ndarray or _holds_tensor(key):
        if container is None:
            raise recorder.refuse_here(f"{text or 'a[...]'} = <tensor>", (
                f"NumPy stores a capture tensor into an ndarray here ({text} = <tensor>), and "
                "capviz reads the target again only when it is names, attributes and plain "
                "subscripts; write the array to a name first: a = <the expression>, then "
                "a[i] = t"))
        return None
    listed = _listed_value(frame, text)
    if listed is not None:  # NumPy converts the list's items one by one: no write of a tensor
        raise recorder.refuse_here(f"{text} = [<tensors>]", (
            "NumPy converts each item of the list on its own, which capviz cannot write as "
            f"one value; make the list one array: {text} = np.array({listed}, "
            f"dtype={_container_text(text)}.dtype)"))
    dest = target(recorder, container, f"{text} = <tensor>")
    dest[key] = tensor
    return container[key]


def _listed_value(frame: FrameType | None, text: str) -> str | None:
    """The source of the list or tuple display the statement at ``frame``'s line stores into
    ``text`` (``OUT[0] = [x[0], x[1]]``: ``[x[0], x[1]]``), else ``None``."""
    if frame is None or not text:
        return None
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    try:
        target = ast.unparse(ast.parse(text, mode="eval").body)
        tree = ast.parse(f"def _():\n    {line}")  # (a one-line body: `a[0] = [t]; return a`)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.Tuple)) \
                and any(ast.unparse(t) == target for t in node.targets):
            return "[" + ", ".join(ast.unparse(item) for item in node.value.elts) + "]"
    return None


def _container_text(text: str) -> str:
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return "a"
    return ast.unparse(tree.value) if isinstance(tree, ast.Subscript) else "a"


def _holds_tensor(key: Any) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return any(type(k) is Tensor for k in keys)
