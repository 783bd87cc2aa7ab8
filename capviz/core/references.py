"""Constants kept by reference: the user's array itself, and a fingerprint that sees it change.

A capture keeps an ndarray operand of :data:`REFERENCE_BYTES` or more (a model's weight) as the
array itself, not a copy: copying every weight cost a capture of GPT-2 small 0.7 s of its
0.8 s and doubled the memory it held. The graph then holds a :func:`fingerprint` of each such
array, taken when the capture met it, and compares it:

* when the capture meets the array again (a changed array cannot be recorded anew: the earlier
  node's value is gone, so the capture refuses it at that line),
* at every replay, compiled call, stepping executor and save (:func:`changed_constants`):
  an array changed since the capture read it, later in the captured code or after the capture,
  is refused, naming the constant, until ``graph.changed()`` accepts its new value, after which
  every backend replays with it (the NumPy and Dask programs read the array itself; CuPy and
  JAX copy it to the device again). Checking a change before the capture ends there rather
  than at the scope's exit costs the capture one pass over the weights instead of two, and
  refuses the same graphs: nothing replays without the check.

A replay's check reads every weight once, as the program itself does, so it is made while the
program runs (:func:`begin_check`: on a thread of its own, the hash holding no lock of
Python's) and waited for before the results are returned: no result of a changed constant is
ever handed back, and on two cores it costs the replay little more than the program's own
time. Memory two constants share (``w`` and ``w.T``) is hashed once per check.

Why a fingerprint, and which (measured on this 2-core CPU, 471 MiB of float32 weights, CPU
time):

* a copy (what capviz did): 56 ms per 324 MiB when the pages are warm, 0.7 s in a fresh
  process (page faults), and twice the memory;
* a write watch: a NumPy array has no write counter, setting ``writeable=False`` on the user's
  array would break their own in-place updates, and the kernel's soft-dirty page bits
  (``/proc/self/clear_refs``) reported no write here;
* copy-on-write: NumPy offers no hook to copy a page before the user writes it;
* reading the memory once is the floor: a NumPy sum of the bits as ``uint64`` words takes
  15 ms; ``zlib.crc32`` 118 ms, ``hashlib.sha1`` and ``blake2b`` several times that;
  capviz's earlier fingerprint (row and column sums of the words on a 1021-column grid: two
  sums per word, each blind to some edits, such as two sign flips in one row) 28 ms;
* XXH3-128 (the ``xxhash`` package) 16.6 ms: memory speed, a 128-bit hash of every bit and
  its position, so no edit has a blind spot beyond a 2**-128 chance.

A smaller operand is copied (a copy costs little there), and where the array it was copied from
outlives the call (a bias, a layer norm's gain, a 0-d learning rate: the user may change it in
place between replays, as an optimiser step does) the graph keeps that array beside the copy,
with its fingerprint, and checks it on the same path (:func:`guard_copies`, hostile review 9,
finding 3: the copy replayed silently); ``graph.changed()`` copies its new values in.

The fingerprint is the 16-byte XXH3-128 digest of the array's bytes in memory order, followed
by its dtype, shape and strides (a reshape or a new ``dtype`` set on the array in place is a
change too).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import xxhash

from capviz.core.errors import ReplayError
from capviz.core.own_weakrefs import OwnRef
from capviz.core.source import format_source

REFERENCE_BYTES = 1 << 20
"""ndarray operands of this many bytes or more are kept by reference (smaller ones are copied:
a copy costs little there, and keeps every value a buffer held at each use)."""

OVERLAP_BYTES = 16 << 20
"""A replay whose constants kept by reference hold this many bytes or more checks them on a
thread of its own while the program runs; below it the check is made at once (hashing 16 MiB
takes 0.4 ms, starting and joining a thread 0.1 ms of CPU)."""

_KINDS = "biufc"


def referenceable(value: Any) -> bool:
    """Whether a capture keeps ndarray ``value`` by reference: a plain ndarray of numbers of
    :data:`REFERENCE_BYTES` or more, C- or Fortran-contiguous (a strided view is copied with
    its layout, :mod:`capviz.core.layout`)."""
    return (type(value) is np.ndarray and value.nbytes >= REFERENCE_BYTES
            and value.dtype.kind in _KINDS
            and (value.flags.c_contiguous or value.flags.f_contiguous))


def _memory_digest(value: np.ndarray) -> bytes:
    """XXH3-128 of contiguous ``value``'s bytes in memory order (one read, no copy)."""
    flat = value.reshape(-1, order="C" if value.flags.c_contiguous else "F")
    return xxhash.xxh3_128_digest(flat.view(np.uint8))


_DIGEST = 16
"""The bytes of :func:`fingerprint`'s digest (before the layout)."""


def _layout(value: np.ndarray) -> bytes:
    return repr((value.dtype.str, value.shape, value.strides)).encode()


def fingerprint(value: np.ndarray) -> bytes:
    """A digest of contiguous ``value``'s bits (16 bytes, see the module docstring) followed by
    its dtype, shape and strides."""
    return _memory_digest(value) + _layout(value)


def view_fingerprint(value: np.ndarray) -> bytes:
    """:func:`fingerprint` of a view of any layout (a small copied constant's source:
    ``self.W[:, 0]``, a column, whose memory is no block: hostile review 9, finding 18, a raw
    ValueError): its values read in order, then its layout."""
    if value.flags.c_contiguous or value.flags.f_contiguous:
        return fingerprint(value)
    return _memory_digest(np.ascontiguousarray(value)) + _layout(value)


def changed_constants(graph: Any) -> list[int]:
    """The constants of ``graph`` kept by reference whose array changed since it was recorded
    (or accepted by ``graph.changed()``), by node index; memory that several share is read
    once."""
    values, sources = graph.constant_values, graph.constant_sources
    places = graph.constant_places
    digests: dict[tuple[int, int], bytes] = {}
    changed = []
    for index, kept in graph.constant_fingerprints.items():
        if index in places and rebound(places[index]) is not None:
            changed.append(index)
            continue
        source = sources.get(index)
        if source is not None:  # a small array's copy: the user's array checked (not shared:
            live = source_view(source)  # a view's memory is no contiguous block)
            if live is not None and view_fingerprint(live) != kept:
                changed.append(index)
            continue
        value = values[index]
        where = (value.__array_interface__["data"][0], value.nbytes)
        digest = digests.get(where)
        if digest is None:
            digest = digests[where] = _memory_digest(value)
        if digest + _layout(value) != kept:
            changed.append(index)
    return changed


_GONE = object()


def rebound(place: tuple) -> Any:
    """What the path ``place`` (:attr:`capviz.core.ir.Graph.constant_places`) holds now where
    it is not the array the capture read there (the user bound another one: ``self.b =
    self.b - 0.5``; :data:`_GONE` where the path leads nowhere), else ``None`` (the same array,
    or its owner is gone: no one can bind there)."""
    anchor, steps, ref = place
    owner = anchor() if type(anchor) is weakref.ref else anchor
    if owner is None:
        return None
    try:
        for is_attribute, key in steps:
            owner = getattr(owner, key) if is_attribute else owner[key]
    except Exception:  # (an attribute deleted, a shorter list)
        return _GONE
    return None if owner is ref() else owner


def take_rebound(graph: Any) -> None:
    """For ``graph.changed()``: each checked constant whose path holds another array now
    takes it, where it has the constant's shape and dtype (the copy its values, a constant
    kept by reference the array itself); another stays refused (:func:`_refusal` says to
    capture again)."""
    values = graph.constant_values
    for index, place in list(graph.constant_places.items()):
        found = rebound(place)
        value = values.get(index)
        if found is None or type(found) is not np.ndarray or not isinstance(value, np.ndarray) \
                or found.shape != value.shape or found.dtype != value.dtype:
            continue
        root = found
        while isinstance(root.base, np.ndarray):
            root = root.base
        graph.constant_places[index] = (place[0], place[1], OwnRef(found))
        graph.constant_origins[index] = OwnRef(root)
        if index in graph.constant_sources:  # a copy: its source is the new array
            graph.constant_sources[index] = (
                OwnRef(root), found.__array_interface__["data"][0] -
                root.__array_interface__["data"][0], found.shape, found.strides, found.dtype)
        elif referenceable(found):  # kept by reference: the array itself
            dict.__setitem__(values, index, found)


def guard_copies(graph: Any) -> None:
    """At the end of a complete capture: each constant copied from a user's ndarray (under
    :data:`REFERENCE_BYTES`) whose array outlives the call, holds the values copied, and is
    no array the graph writes (a state), is checked as one kept by reference is
    (:attr:`capviz.core.ir.Graph.constant_sources`; hostile review 9, finding 3, silent: a
    bias or a 0-d learning rate the user changed in place between replays replayed the
    capture's copy, also after ``graph.changed()`` had accepted a big weight's change). Its
    place in its root array was noted when it was copied (:func:`note_copy`); one the code
    changed after reading it keeps its copy unchecked (the read before the change); whether
    the array still holds the values copied is told by the two fingerprints the checks keep
    anyway where the copy has the array's layout (one hash pass each, no byte copies: the
    capture again of ``graph.changed()``, hostile review 11, finding 8), else by their bytes.
    The paths
    the checked constants were read from (``self.b``) are kept where they still lead to them
    (:func:`rebound`)."""
    noted = graph.constant_sources
    graph.constant_sources = {}
    written = set()
    for ref in graph.state_targets.values():
        target = ref() if callable(ref) else None
        while isinstance(target, np.ndarray) and isinstance(target.base, np.ndarray):
            target = target.base
        if target is not None:
            written.add(id(target))
    values = graph.constant_values
    for index, (offset, shape, strides, dtype) in noted.items():
        ref = graph.constant_origins.get(index)
        root = ref() if ref is not None else None
        copy = values.get(index)
        if type(root) is not np.ndarray or id(root) in written or \
                not isinstance(copy, np.ndarray):
            continue
        source = (ref, offset, shape, strides, dtype)
        live = source_view(source)
        if live is None or live.shape != copy.shape or live.dtype != copy.dtype:
            continue
        kept, copied = view_fingerprint(live), view_fingerprint(copy)
        if live.strides == copy.strides and (copy.flags.c_contiguous or  # (one memory order:
                                             copy.flags.f_contiguous):   # the digests tell)
            if kept[:_DIGEST] != copied[:_DIGEST]:
                continue
        elif live.tobytes() != copy.tobytes():  # (another layout: the values compared)
            continue
        graph.constant_sources[index] = source
        graph.constant_fingerprints[index] = kept
        graph.copy_fingerprints[index] = copied
    origins = graph.constant_origins
    graph.constant_places = {  # (the checked ones whose path leads to them as the call left
        index: place for index, place in graph.constant_places.items()  # it)
        if index in graph.constant_fingerprints and place[2]() is not None and
        rebound(place) is None and index in origins and id(origins[index]()) not in written}


def edited_copies(graph: Any) -> list[int]:
    """The checked copies (:attr:`capviz.core.ir.Graph.constant_sources`) whose values in the
    graph differ from those it copied or last copied in (the user edited the graph's own
    copy in place: ``graph.constant_values[i][...] = 5.0``), by node index."""
    kept, values = graph.copy_fingerprints, graph.constant_values
    return [i for i in graph.constant_sources if i in kept and
            isinstance(values.get(i), np.ndarray) and view_fingerprint(values[i]) != kept[i]]


def edited_copy_error(graph: Any, index: int) -> ReplayError:
    """``graph.changed()``'s refusal of a copy the user edited in the graph (hostile review
    10, finding 10: changed() copied the user's array over the edit, silently)."""
    err = ReplayError(
        f"graph.changed() found constant {describe_constant(graph, index)} edited in place in "
        "the graph: it is a copy of the user's array, whose values graph.changed() takes again, "
        f"which would undo the edit.\nFix: keep the edit as the graph's own value, no longer "
        f"read from the user's array: graph.constant_values[{index}] = "
        f"graph.constant_values[{index}]")
    err.node = graph.nodes[index]
    return err


def stale_weight_error(graph: Any, index: int, block: str) -> ReplayError:
    """``graph.changed()``'s refusal in the scope form of a constant whose user's array
    changed (ruling 39 14:10): the block may also have read it through NumPy outside the graph
    (``x @ W / np.linalg.norm(W)``), whose results the graph holds as the capture computed
    them, and the graph holds no function to capture again."""
    err = ReplayError(
        f"graph.changed() cannot take the new values of constant "
        f"{describe_constant(graph, index)}: {block} may also have read its array through "
        "NumPy outside the graph (np.linalg.norm, .mean(), a branch on it), which the graph "
        "holds as computed when it was captured, and it holds no function to capture again."
        f"\nFix: capture {block} again after changing the array (cv.capture(fn)'s "
        "graph.changed() captures fn again)")
    err.node = graph.nodes[index]
    return err


def source_view(source: tuple) -> np.ndarray | None:
    """The user's array a small constant was copied from, a view made anew of its root's
    memory (the graph holds only a weak reference to the root, so that it keeps no user's
    array alive and adds no reference a later capture's lift counts:
    :mod:`capviz.trace.lifted`); ``None`` once the root is gone (no one can change it)."""
    ref, offset, shape, strides, dtype = source
    root = ref()
    if root is None:
        return None
    try:
        return np.ndarray(shape, dtype, buffer=root, offset=offset, strides=strides)
    except (TypeError, ValueError, BufferError):  # (memory no buffer shows as one block)
        return None


def note_copy(graph: Any, index: int, value: np.ndarray, root: np.ndarray) -> None:
    """Note where the ndarray ``value`` a constant ``index`` copied lies in its root array
    ``root`` (its byte offset, shape, strides, dtype), for :func:`guard_copies`."""
    try:
        offset = value.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    except (AttributeError, KeyError, TypeError):
        return
    graph.constant_sources[index] = (offset, value.shape, value.strides, value.dtype)


def describe_constant(graph: Any, index: int) -> str:
    """``%3 'w' (float32[768, 2304], recorded at model.py:12 in mlp)`` for constant ``index``."""
    node = graph.nodes[index]
    value = graph.constant_values[index]
    name = f" {node.name!r}" if node.name else ""
    shape = ", ".join(map(str, value.shape))
    where = format_source(node.source)
    where = f", recorded at {where}" if where else ""
    return f"%{index}{name} ({value.dtype}[{shape}]{where})"


def changed_between_uses(what: str) -> str:
    """Why a capture refuses an array kept by reference met again with other values."""
    return (f"array {what} changed in place between two uses in this capture; capviz keeps an "
            f"array of {REFERENCE_BYTES >> 20} MiB or more by reference, not by copy, so the "
            "graph cannot hold both values the program read. Pass a copy where the array is "
            "used before the change (x @ w.copy()), or record it as a buffer of the capture "
            "(b = cv.constant(w); b[...] = new_values)")


def changed_since_capture(what: str) -> str:
    """Why a replay, executor or save refuses a graph whose referenced array changed."""
    return (f"constant {what} is the user's array, kept by reference, and it was changed in "
            "place since the capture read it (later in the captured code, or after the "
            "capture); a replay never computes with values the program did not use. Call "
            "graph.changed() to replay with the array's new values (every backend then uses "
            "them), or pass a copy where the array is used (x @ w.copy()) and capture again")


def rebound_since(what: str, same: bool) -> str:
    """Why a replay, executor or save refuses a graph whose constant's path (``self.b``) the
    user bound another array to since the capture read it there."""
    fix = ("Call graph.changed() to replay with the array it holds now (every backend then "
           "uses it), or pass it as an input and capture again") if same else (
        "it holds no array of the constant's shape and dtype now: capture again, or pass it as "
        "an input")
    return (f"constant {what} was read where the user holds another object now (bound since "
            "the capture read it there: self.b = self.b - lr * g); a replay never computes "
            f"with values the program did not use. {fix}")


def changed_copy(what: str) -> str:
    """Why a replay, executor or save refuses a graph whose small array, copied by the capture,
    the user changed since."""
    return (f"constant {what} is a copy of the user's array, which was changed in place since "
            "the capture read it (later in the captured code, or after the capture); a replay "
            "never computes with values the program did not use. Call graph.changed() to "
            "replay with the array's new values (every backend then uses them), or pass it as "
            "an input and capture again")


def _refusal(graph: Any, changed: list[int]) -> ReplayError | None:
    """The error naming the first of ``changed`` (``None`` when it is empty)."""
    if not changed:
        return None
    index = changed[0]
    place = graph.constant_places.get(index)
    found = rebound(place) if place is not None else None
    if found is not None:
        value = graph.constant_values.get(index)
        same = type(found) is np.ndarray and isinstance(value, np.ndarray) and \
            found.shape == value.shape and found.dtype == value.dtype
        same = same and getattr(graph, "scope_form", None) is None  # (the scope form:
        err = ReplayError(rebound_since(describe_constant(graph, index), same))  # capture
        #                                                                  again, no changed())
        err.node = graph.nodes[index]
        return err
    why = changed_copy if index in graph.constant_sources else changed_since_capture
    text = why(describe_constant(graph, index))
    block = getattr(graph, "scope_form", None)
    if block is not None:  # (its graph.changed() cannot take the values: stale_weight_error)
        text = text[:text.index(" Call graph.changed()")] + (
            f" Capture {block} again after changing the array, or pass it as an input")
    err = ReplayError(text)
    err.node = graph.nodes[changed[0]]
    return err


def check_unchanged(graph: Any) -> None:
    """Raise :class:`capviz.ReplayError` naming the first constant kept by reference whose
    array changed since the capture (or the last ``graph.changed()``); free when the graph
    keeps none."""
    if not graph.constant_fingerprints:
        return
    err = _refusal(graph, changed_constants(graph))
    if err is not None:
        raise err


def _referenced_bytes(graph: Any) -> int:
    values = graph.constant_values
    return sum(values[index].nbytes for index in graph.constant_fingerprints)


def _unchanged() -> None:
    return None


def begin_check(graph: Any) -> Callable[[], ReplayError | None]:
    """Start :func:`check_unchanged` of ``graph`` while the caller runs its program; returns
    the function that waits for it and gives its error (``None``: every constant unchanged),
    which the caller raises before handing back any result. Large constants are hashed on a
    thread of their own (XXH3 releases Python's lock); small ones are checked at once, and a
    change among them raised here, before the program runs."""
    if _referenced_bytes(graph) < OVERLAP_BYTES:
        check_unchanged(graph)
        return _unchanged
    found: list[list[int]] = []
    failed: list[BaseException] = []

    def check() -> None:
        try:
            found.append(changed_constants(graph))
        except BaseException as exc:  # handed to the waiting thread
            failed.append(exc)

    worker = threading.Thread(target=check, name="capviz-constant-check", daemon=True)
    worker.start()

    def wait() -> ReplayError | None:
        worker.join()
        if failed:
            raise failed[0]
        return _refusal(graph, found[0])

    return wait
