"""Constants kept by reference: the user's array itself, and a fingerprint that sees it change.

A capture keeps an ndarray operand of :data:`REFERENCE_BYTES` or more (a model's weight) as the
array itself, not a copy: copying every weight cost a capture of GPT-2 small 0.7 s of its
0.8 s and doubled the memory it held. The graph then holds a :func:`fingerprint` of each such
array, taken when the capture met it, and compares it:

* when the capture meets the array again (a changed array cannot be recorded anew: the earlier
  node's value is gone, so the capture refuses it at that line),
* before every replay, compiled call, stepping executor and save (:func:`changed_constants`):
  an array changed since the capture read it, later in the captured code or after the capture,
  is refused, naming the constant, until ``graph.changed()`` accepts its new value, after which
  every backend replays with it (the NumPy and Dask programs read the array itself; CuPy and
  JAX copy it to the device again). Checking a change before the capture ends there rather
  than at the scope's exit costs the capture one pass over the weights instead of two, and
  refuses the same graphs: nothing replays without the check.

Why a fingerprint, and which (measured on this 2-core CPU, 324 MiB of float32 weights):

* a copy (what capviz did): 56 ms when the pages are warm, 0.7 s in a fresh process (page
  faults), and twice the memory;
* a write watch: a NumPy array has no write counter, setting ``writeable=False`` on the user's
  array would break their own in-place updates, and the kernel's soft-dirty page bits
  (``/proc/self/clear_refs``) reported no write here;
* copy-on-write: NumPy offers no hook to copy a page before the user writes it;
* fingerprints: ``zlib.crc32`` 91 ms, ``hashlib.sha1`` 177 ms, ``blake2b`` 372 ms; NumPy
  reductions of the bits as ``uint64`` words run near memory speed: a sum 13 ms, a product
  with per-position weights 28 ms.

The fingerprint is two sums of the array's bits as ``uint64`` words laid out in rows of
:data:`_COLUMNS` (a prime) words: the sum of each row and the sum of each column, modulo 2**64,
hashed with BLAKE2 together with the dtype, shape, strides and the bytes left over. A change of
one element changes its row's sum; moving values (a sort, a shuffle, a transpose, a reversal)
changes column sums unless every value moves by a multiple of 1021 words and keeps every
row's sum; a sign flip of two float64 elements (adding 2**63 twice cancels in one sum) is seen
by the row sums when they share a column and by the column sums when they share a row.
"""

from __future__ import annotations

import contextvars
import hashlib
from typing import Any

import numpy as np

from capviz.core.errors import ReplayError
from capviz.core.source import format_source

REFERENCE_BYTES = 1 << 20
"""ndarray operands of this many bytes or more are kept by reference (smaller ones are copied:
a copy costs little there, and keeps every value a buffer held at each use)."""

_COLUMNS = 1021
_CHUNK_ROWS = 256  # 2 MiB of rows: both sums of a chunk read memory once (19.5 ms, not 31)
_KINDS = "biufc"


def referenceable(value: Any) -> bool:
    """Whether a capture keeps ndarray ``value`` by reference: a plain ndarray of numbers of
    :data:`REFERENCE_BYTES` or more, C- or Fortran-contiguous (a strided view is copied with
    its layout, :mod:`capviz.core.layout`)."""
    return (type(value) is np.ndarray and value.nbytes >= REFERENCE_BYTES
            and value.dtype.kind in _KINDS
            and (value.flags.c_contiguous or value.flags.f_contiguous))


def fingerprint(value: np.ndarray) -> bytes:
    """A 16-byte digest of contiguous ``value``'s bits, dtype, shape and strides (see the
    module docstring); one pass over the memory per sum, no copy."""
    flat = value.reshape(-1, order="F" if not value.flags.c_contiguous else "C")
    raw = flat.view(np.uint8)
    n = raw.size // 8 // _COLUMNS * _COLUMNS
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr((value.dtype.str, value.shape, value.strides)).encode())
    if n:
        grid = raw[:n * 8].view(np.uint64).reshape(-1, _COLUMNS)
        columns = np.zeros(_COLUMNS, np.uint64)
        for start in range(0, grid.shape[0], _CHUNK_ROWS):  # each chunk read once, from cache
            chunk = grid[start:start + _CHUNK_ROWS]
            digest.update(np.add.reduce(chunk, axis=1).tobytes())
            columns += np.add.reduce(chunk, axis=0)
        digest.update(columns.tobytes())
    digest.update(raw[n * 8:].tobytes())
    return digest.digest()


def changed_constants(graph: Any) -> list[int]:
    """The constants of ``graph`` kept by reference whose array changed since it was recorded
    (or accepted by ``graph.changed()``), by node index."""
    values = graph.constant_values
    return [index for index, kept in graph.constant_fingerprints.items()
            if fingerprint(values[index]) != kept]


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


PENDING: contextvars.ContextVar[Any] = contextvars.ContextVar("capviz_pending_check",
                                                             default=None)
"""The graph whose constants a replay still has to check, while a backend runs its program: a
backend that dispatches its program and waits for it (JAX) calls :func:`check_pending` in
between, so that the check reads host memory while the device computes."""


def check_pending() -> None:
    """Run the pending check of :data:`PENDING` (a backend calls it while its program runs)."""
    graph = PENDING.get()
    if graph is not None:
        PENDING.set(None)
        check_unchanged(graph)


def check_unchanged(graph: Any) -> None:
    """Raise :class:`capviz.ReplayError` naming the first constant kept by reference whose
    array changed since the capture (or the last ``graph.changed()``); free when the graph
    keeps none."""
    if not graph.constant_fingerprints:
        return
    changed = changed_constants(graph)
    if changed:
        err = ReplayError(changed_since_capture(describe_constant(graph, changed[0])))
        err.node = graph.nodes[changed[0]]
        raise err
