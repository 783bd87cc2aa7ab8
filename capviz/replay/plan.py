"""The replay's schedule: a register for every value, when each dies, and which results are
written into a dead buffer with ``out=`` (the memory plan).

Everything here is decided from the graph alone, before the first run: shapes and dtypes are
known from capture, and so is the last use of every value. One pass in program order:

* **Registers.** Each value gets a register (a slot of the replay's value list); a register is
  released after the value's last use and handed to the next result (last released, first
  reused), so a chain runs in a few registers. A released register that no result takes at
  once is cleared (``kills``), so every intermediate is freed right after its last use.
* **Buffers.** The result of an op whose :class:`capviz.ops.table.Op` says ``out`` (ufuncs, matmul,
  sum, prod, max...) is a fresh array: a *buffer*. The result of any other op may be a view of
  its operands (``reshape``, ``getitem``, an unknown NumPy function), so it keeps its operands'
  buffers alive. A buffer is dead once every value that may alias it is dead; it then waits in
  a pool by ``(shape, dtype)``, and the next ``out`` op with a result of that shape and dtype,
  strictly after it died, writes into it (``op(..., out=buffer)``). So no operand of that op can
  be a view of the buffer, and a buffer reachable from an output, an input or a constant is never
  written. A pooled buffer that no op takes is freed where it died.

Layout: ``out=`` is planned only where the buffer and every operand are C-ordered (assuming
C-ordered inputs; each planned step checks at run time and allocates instead otherwise), so a
planned result has eager's strides too.

Small results (under ``min_bytes``) and 0-d results are not planned: NumPy allocates them from
its small-block cache faster than ``out=`` is passed, and a 0-d result is a NumPy scalar without
``out=`` but a 0-d array with it.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from capviz import ops
from capviz.core.errors import ReplayInputError, ReplayMemoryError
from capviz.core.ir import Graph, Node
from capviz.core.symbols import has_symbol, upper_shape

MIN_PLAN_BYTES = 1 << 16
"""Results smaller than this are left to NumPy's allocator (its small-block cache is faster)."""

# Ops whose result is a view of their first operand when NumPy can make one (for the byte
# figures of the plan only: a view allocates nothing). Every other non-``out`` op is counted as
# allocating its result, an upper bound.
VIEW_OPS = frozenset(("reshape", "transpose", "swapaxes", "expand_dims", "squeeze",
                      "broadcast_to", "getitem", "unpack", "split", "array_split"))

# Ops without ``out`` whose result is always a new array, never a view of an operand (NumPy
# allocates it): their results keep no operand's buffer alive. Any other op may return a view.
FRESH_OPS = frozenset(("create", "draw", "mean", "var", "std", "argmax", "argmin", "dot",
                       "where", "clip", "round", "astype", "take", "index", "concatenate",
                       "stack", "hstack", "vstack", "zeros_like", "ones_like", "full_like",
                       "setitem", "index_put", "put", "put_along_axis", "into", "ufunc_at"))

# Layout: a result is planned only when its operands and its buffer are C-ordered, so that it has
# eager's layout as well as its bits. An ``out`` op, a fresh op or one of these views is C-ordered
# when every array operand is (NumPy allocates in the operands' order); ALWAYS_C ones always are.
_C_PRESERVING_VIEWS = frozenset(("reshape", "expand_dims", "squeeze"))
ALWAYS_C = frozenset(("matmul", "setitem", "index_put", "put", "put_along_axis", "into",
                      "ufunc_at"))
"""Ops whose result is C-ordered whatever their operands' layout (matmul allocates its result
in C order; the update ops write into ``x.copy()``)."""

_NEVER = math.inf


def nbytes(node: Node) -> int:
    """Bytes of ``node``'s value (0 for multi-output ops and nodes without a shape); a size
    symbol counts at its upper bound."""
    if node.shape is None or node.dtype is None:
        return 0
    return math.prod(upper_shape(node.shape)) * np.dtype(node.dtype).itemsize


@dataclasses.dataclass
class Schedule:
    """Registers, deaths and buffer reuse of one graph (see the module docstring).

    Attributes:
        registers: number of value registers.
        reg: register of each input and op node, by node index (a list; -1 for others).
        out: op nodes that write into their register's dead buffer with ``out=``.
        reuses: for each node in ``out``, the node whose buffer it writes into.
        kills: registers to clear after each node, by node index.
    """

    registers: int
    reg: list[int]
    out: set[int]
    reuses: dict[int, int]
    kills: dict[int, list[int]]


def schedule(graph: Graph, min_bytes: int = MIN_PLAN_BYTES, plan: bool = True,
             into: Mapping[int, int] | None = None) -> Schedule:
    """Plan registers and buffer reuse for ``graph`` (``plan=False``: registers only).

    ``into`` maps op nodes to the state nodes whose live arrays they write into (the last write
    of each, :func:`capviz.replay.state.in_place`): such a state keeps its register to the end
    (it is never handed to another value) and the op writes into it with ``out=``."""
    nodes = graph.nodes
    last = [-1] * len(nodes)  # by node index: the last node reading it (-1: none)
    held: set[int] = set(into.values()) if into else set()
    for n in nodes:
        i = n.index
        for a in n.args:
            if isinstance(a, Node):
                last[a.index] = i
        if n.kind == "output":
            held.add(n.args[0].index)
    # buffers: which fresh results each value may alias, and when each buffer dies
    roots: dict[int, tuple] = {}
    death: dict[int, float] = {}
    plannable: set[int] = set()
    if plan:
        table = ops.OPS
        sizes: dict[tuple, int] = {}
        c_order: set[int] = set()  # values C-ordered when every input is
        constants = graph.constant_values
        for n in nodes:
            i = n.index
            if n.kind != "op":
                if n.kind == "input" or (n.kind == "constant" and _c_array(constants.get(i))):
                    c_order.add(i)
                continue
            op = table[n.op]
            operands_c = True
            if n.op not in ALWAYS_C:
                for a in n.args:
                    if isinstance(a, Node) and a.index not in c_order:
                        operands_c = False
                        break
            if n.op in ALWAYS_C or (operands_c and (op.out or op.random or n.op in FRESH_OPS
                                                    or (n.op in _C_PRESERVING_VIEWS
                                                        and n.params.get("order", "C") == "C"))):
                c_order.add(i)
            if op.out and operands_c and i in c_order and _plannable(n, op, min_bytes, sizes):
                plannable.add(i)
                mine: tuple = (i,)
            elif op.out or op.random or n.op in FRESH_OPS:
                mine = ()
            else:
                mine = _union(roots, n.args)
            if mine:
                roots[i] = mine
                end = _NEVER if i in held else max(last[i], i)
                for r in mine:
                    if death.get(r, -1) < end:
                        death[r] = end
    dying_roots: dict[float, list[int]] = {}
    for r, end in death.items():
        if end is not _NEVER:
            dying_roots.setdefault(end, []).append(r)

    reg = [-1] * len(nodes)  # by node index: its register
    free: list[int] = []
    count = 0
    for n in graph.input_nodes + graph.state_nodes:  # inputs first, then the states: a call
        reg[n.index] = count                           # fills registers 0..k-1
        count += 1
    pool: dict[tuple, list[tuple[int, int]]] = {}  # (shape, dtype) -> [(root, died at)]
    out: set[int] = set()
    reuses: dict[int, int] = {}
    kills: dict[int, list[int]] = {}
    for n in nodes:
        if n.kind != "op":
            if n.kind == "guard":  # a read: its operand may die here (no result, no register)
                _after_guard(n, last, held, death, reg, free, kills, dying_roots, pool, nodes)
            continue
        i = n.index
        released: list[int] = []
        for a in n.args:
            if isinstance(a, Node):
                k = a.index
                if last[k] == i and k not in held and k not in death and a.kind != "constant" \
                        and reg[k] not in released:  # x * x releases x's register once
                    released.append(reg[k])
        buffer = into.get(i) if into else None
        if buffer is None and i in plannable:
            buffer = _in_place(n, roots, death)
            waiting = pool.get((n.shape, n.dtype))
            if buffer is None and waiting and waiting[-1][1] < i:
                buffer = waiting.pop()[0]
        for r in dying_roots.get(i, ()):
            if r != buffer:
                node = nodes[r]
                pool.setdefault((node.shape, node.dtype), []).append((r, i))
        free.extend(released)
        if buffer is not None:
            mine_reg = reg[buffer]
            out.add(i)
            reuses[i] = buffer
        elif free:
            mine_reg = free.pop()
        else:
            mine_reg = count
            count += 1
        reg[i] = mine_reg
        dead = None
        for r in released:
            if r != mine_reg:
                dead = [r] if dead is None else dead + [r]
        if last[i] < 0 and i not in held and i not in death:  # never read: freed at once
            dead = [mine_reg] if dead is None else dead + [mine_reg]
            free.append(mine_reg)
        if dead:
            kills[i] = dead
    for waiting in pool.values():  # buffers no op took: freed where they died
        for root, died in waiting:
            kills.setdefault(died, []).append(reg[root])
    return Schedule(count, reg, out, reuses, kills)



def _after_guard(n: Node, last: list, held: set, death: dict, reg: list, free: list,
                 kills: dict, dying_roots: dict, pool: dict, nodes: list) -> None:
    """A guard reads its operand: the operand's register is released after it when the guard
    is its last reader, and buffers dying there are pooled."""
    a = n.args[0]
    i = n.index
    for r in dying_roots.get(i, ()):
        node = nodes[r]
        pool.setdefault((node.shape, node.dtype), []).append((r, i))
    k = a.index
    if last[k] == i and k not in held and k not in death and a.kind != "constant" \
            and reg[k] >= 0:
        free.append(reg[k])
        kills[i] = [reg[k]]


def _c_array(value: object) -> bool:
    """Whether a constant's array is C-contiguous (planning assumes inputs are; a planned step
    checks at run time and allocates instead when one is not)."""
    flags = getattr(value, "flags", None)
    return flags is not None and bool(flags.c_contiguous)


def _in_place(node: Node, roots: dict[int, tuple], death: dict[int, float]) -> int | None:
    """An operand of elementwise ufunc ``node`` whose buffer it may write in place: a buffer
    of the result's shape and dtype that dies at ``node``, passed as itself (no other operand
    may be a view of it). NumPy defines a ufunc whose output is exactly one of its inputs to
    compute what it computes into fresh memory, element by element."""
    if node.op not in ops.UFUNCS:
        return None
    i = node.index
    tensors = [a for a in node.args if isinstance(a, Node)]
    for a in tensors:
        k = a.index
        if roots.get(k) != (k,) or death.get(k) != i or a.shape != node.shape \
                or a.dtype != node.dtype:
            continue
        if all(b is a or k not in roots.get(b.index, ()) for b in tensors):
            return k
    return None


def _plannable(node: Node, op: ops.Op, min_bytes: int, sizes: dict[tuple, int]) -> bool:
    if not node.shape or node.dtype is None or op.random or op.multi or has_symbol(node.shape):
        return False
    key = (node.shape, node.dtype)
    size = sizes.get(key)
    if size is None:
        size = sizes[key] = nbytes(node)
    if size < min_bytes:
        return False
    if op.name in ops.UFUNCS:
        if node.params:  # ufunc keywords (where=, dtype=) are not planned
            return False
    elif not set(node.params) <= {"axis", "keepdims"}:
        return False
    return True


def _union(roots: dict[int, tuple], args: tuple) -> tuple:
    found: tuple = ()
    for a in args:
        if isinstance(a, Node):
            mine = roots.get(a.index)
            if mine and mine != found:
                found = mine if not found else tuple(dict.fromkeys(found + mine))
    return found


# --- the plan's figures -----------------------------------------------------------------------


@dataclasses.dataclass
class MemoryPlan:
    """What a replay allocates, from the schedule (``graph.memory_plan()``).

    Attributes:
        peak_bytes: the most bytes of op results alive at once during a replay (inputs and
            constants not counted: the replay never allocates them).
        sizes: bytes of each op's result, by node index.
        allocated: bytes each op allocates (0 when it writes into a reused buffer, or is a
            view such as ``reshape``), by node index.
        reuses: node index -> the node whose dead buffer it writes into with ``out=``.
        input_bytes: bytes of the graph's inputs.
        constant_bytes: bytes of its constants.
    """

    peak_bytes: int
    sizes: dict[int, int]
    allocated: dict[int, int]
    reuses: dict[int, int]
    input_bytes: int
    constant_bytes: int

    @property
    def saved_bytes(self) -> int:
        """Bytes not allocated because a result went into a reused buffer."""
        return sum(self.sizes[i] for i in self.reuses)

    def __str__(self) -> str:
        return (f"memory plan: peak {self.peak_bytes:,} bytes of results; "
                f"{len(self.reuses)} of {len(self.sizes)} ops write into a reused buffer "
                f"({self.saved_bytes:,} bytes not allocated); inputs {self.input_bytes:,}, "
                f"constants {self.constant_bytes:,} bytes")


def memory_plan(graph: Graph, min_bytes: int = MIN_PLAN_BYTES) -> MemoryPlan:
    """The figures of the plan replay uses for ``graph`` (see :class:`MemoryPlan`).

    A result is alive from the op that makes it until the last use of every value that may be a
    view of it; an op outside :data:`VIEW_OPS` and without ``out`` is counted as allocating its
    result, so for such ops the peak is an upper bound.
    """
    sched = schedule(graph, min_bytes)
    nodes = graph.nodes
    last: dict[int, float] = {}
    for n in nodes:
        for a in n.args:
            if isinstance(a, Node):
                last[a.index] = n.index
        if n.kind == "output":
            last[n.args[0].index] = _NEVER
    sizes: dict[int, int] = {}
    allocated: dict[int, int] = {}
    storage: dict[int, tuple] = {}  # value -> the allocations it may keep alive
    end: dict[int, float] = {}  # allocation -> when it is freed
    for n in nodes:
        if n.kind != "op":
            continue
        i = n.index
        size = nbytes(n)
        sizes[i] = size
        if i in sched.reuses:
            allocated[i] = 0
            mine: tuple = (_first_owner(sched.reuses, i),)
        elif n.op in VIEW_OPS:
            allocated[i] = 0
            mine = _union(storage, n.args)
        else:
            allocated[i] = size if not ops.OPS[n.op].multi else _multi_bytes(graph, i)
            mine = (i,)
        storage[i] = mine
        for r in mine:
            finish = last.get(i, i)
            if end.get(r, -1) < finish:
                end[r] = finish
    live = peak = 0
    freeing: dict[float, int] = {}
    for n in nodes:
        i = n.index
        if allocated.get(i):
            live += allocated[i]
            owner_end = end.get(i, i)
            freeing[owner_end] = freeing.get(owner_end, 0) + allocated[i]
        peak = max(peak, live)
        live -= freeing.pop(i, 0)
    return MemoryPlan(peak, sizes, allocated, dict(sched.reuses),
                      sum(nbytes(n) for n in graph.input_nodes),
                      sum(int(v.nbytes) for v in graph.constant_values.values()))


def _first_owner(reuses: dict[int, int], i: int) -> int:
    while i in reuses:
        i = reuses[i]
    return i


def _multi_bytes(graph: Graph, i: int) -> int:
    """Bytes of a multi-output op's results (the sum of its ``unpack`` nodes' sizes)."""
    total = 0
    for n in graph.nodes[i + 1:]:
        if n.kind == "op" and n.op == "unpack" and n.args[0] is graph.nodes[i]:
            total += nbytes(n)
        elif n.kind == "op" and n.op != "unpack":
            break
    return total


def check_specs(graph: Graph, inputs_or_specs: Mapping[str, Any] | None) -> None:
    """Check arrays, ``cv.spec(...)`` or ``(shape, dtype)`` pairs by input name against the
    graph's inputs (names, shapes, dtypes).

    Raises:
        ReplayInputError: a missing, extra or mistyped input, naming it, expected and got.
    """
    if inputs_or_specs is None:
        return
    names = graph.inputs
    for name in names:
        if name not in inputs_or_specs:
            raise ReplayInputError(f"missing input {name!r} (the graph's inputs are "
                                   f"{', '.join(names)})")
    for name in inputs_or_specs:
        if name not in names:
            raise ReplayInputError(f"unexpected input {name!r}: the graph's inputs are "
                                   f"{', '.join(names) or '(none)'}")
    for node in graph.input_nodes:
        value = inputs_or_specs[node.name]
        shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
        if shape is None and type(value) is tuple and len(value) == 2:
            shape, dtype = value  # a (shape, dtype) pair
            shape = (shape,) if isinstance(shape, int) else shape
        if shape is None or dtype is None:
            raise ReplayInputError(f"input {node.name!r} must be an array, cv.spec(...) or a "
                                   f"(shape, dtype) pair, got {type(value).__name__}")
        if tuple(shape) != node.shape or np.dtype(dtype) != node.dtype:
            raise ReplayInputError(f"input {node.name!r}: expected {_text(node.shape, node.dtype)}"
                                   f", got {_text(tuple(shape), dtype)}")


def _text(shape: tuple, dtype: Any) -> str:
    return f"{np.dtype(dtype)}[{','.join(map(str, shape))}]"


# --- knowing before running: does a replay fit in memory? -------------------------------------


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation now: ``MemAvailable`` of
    ``/proc/meminfo`` (Linux), else free physical pages (``os.sysconf``); ``None`` when the
    system says neither."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024  # the figure is in kB
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(graph: Graph, available: int | None = None) -> None:
    """Refuse a replay whose memory plan needs more than ``available`` bytes (default:
    :func:`available_memory`), before anything is allocated.

    The bytes of every op result together bound the plan's peak from above, so the plan itself
    is computed only when that sum does not fit.

    Raises:
        ReplayMemoryError: with the plan's peak, the bytes available, and the way out (Dask).
    """
    upper = sum(nbytes(n) for n in graph.nodes if n.kind == "op")
    if available is None:
        if upper < MIN_CHECKED_BYTES:
            return
        available = available_memory()
        if available is None:
            return
    if upper <= available:
        return
    plan = memory_plan(graph)
    if plan.peak_bytes <= available:
        return
    err = ReplayMemoryError(
        f"this replay needs {_size(plan.peak_bytes)} of results at its peak "
        f"(graph.memory_plan().peak_bytes = {plan.peak_bytes:,}), more than the "
        f"{_size(available)} of memory available ({available:,} bytes); nothing was "
        "allocated. Replay it on Dask, which computes in chunks and can spread them over a "
        "cluster: graph.replay(inputs, backend='dask', chunks=...) (pip install "
        "'.[dask]' in the capviz checkout), or replay smaller inputs")
    err.peak_bytes = plan.peak_bytes
    err.available_bytes = available
    raise err


MIN_CHECKED_BYTES = 1 << 26
"""A replay whose op results total less than this (64 MiB) is not checked: reading the memory
available costs more than such a replay risks."""


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}" if unit != "bytes" else f"{n} bytes"
        n /= 1024
    return f"{n} bytes"  # pragma: no cover
