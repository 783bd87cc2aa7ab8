"""Outside arrays NumPy wrote while ``cv.capture(fn)`` ran, that no state of the graph explains.

NumPy's own operators on an outside ndarray that meet no tensor (``self.n += 1.0``,
``np.add(self.calls, 1, out=self.calls)``, ``self.buf[0] = 2.0``) write its memory and reach
no hook: the capture runs the write once, the graph has no trace of it, and no replay makes it
(review 2, finding 3 and d10). A state the captured code writes with a tensor is the graph's
and is put back when the scope exits (:mod:`capviz.trace.state`); so after the function form's
captures every outside array holds the value it held before the call, unless NumPy wrote it
unseen: an array no state names, or a state NumPy wrote before the capture's first write to it
(``self.m *= 0.9; self.m += t``: the graph would start from NumPy's value).

So before the first capture :func:`note` copies the ndarrays the function can reach by name
(where :func:`capviz.trace.places.note` looks: a bound method's ``self`` attributes, the
globals its code names, its closure cells, and the lists, dicts and plain objects inside them,
three levels down, 256 items each), and after each capture :meth:`Snapshot.put_back` compares
them with their copies, puts back every one that differs, and says which:
:func:`refuse` refuses the first on the graph, naming it, at the line of ``fn`` that writes
it (else the ``cv.capture`` line), with the write through a tensor as the fix.

The bound: an array is copied when it is a plain writeable ndarray of numbers or booleans of
less than :data:`~capviz.core.references.REFERENCE_BYTES` (1 MiB, where capviz starts keeping a
constant by reference), and until the copies reach :data:`TOTAL_BYTES`. Counters, step sizes,
statistics and small buffers are covered; a larger array (a weight) and one past the budget
are watched (below), and an array only a called function names is not seen.

An array too large to copy (a weight) is **watched** instead: its fingerprint
(:func:`capviz.core.references.fingerprint`, XXH3-128 of every byte of its memory, the digest
capviz keeps for constants held by reference) is kept, and an array whose fingerprint differs
after a capture was written by NumPy unseen (``self.W *= 0.99``, weight decay; ``self.W +=
self.v`` after ``self.v`` became a state; one count ``self.table[7] += 1.0`` of a 2.4 MB
table: review 3, findings 1 and 9). It cannot be put back (its old bytes were not kept): it is
refused all the same, naming it, and the message says it now holds NumPy's value. The digest
reads the memory at memory speed, before and after each capture: about 6 ms for a 100 MB
weight, both reads (``benchmarks/outside_writes.py --big``).

The scope form (``with cap.capture_scope()``) writes the NaN mark into a state's memory at its
first write, and NumPy's own operators can carry it into another outside array: that is
:mod:`capviz.trace.marked`, which notes the arrays with :func:`note` (copying large ones too).

**Threads.** Another thread can write an array the function reaches while the capture runs (a
loader filling ``self.buf``), and NumPy's write leaves no trace of which thread made it. What
does leave a trace is which threads ran: :func:`cpu_times` reads each other thread's CPU clock
(Linux keeps one per thread, in nanoseconds; about 3 us a thread) when the snapshot is taken
and again when it is compared. A thread whose clock did not move ran no instruction meanwhile
(a notebook kernel's threads waiting on their sockets, a pool's idle workers), so it wrote
nothing: an array that changed while no other thread ran is the function's own write, even one
its code never names (a callback reached through a dict, a registered hook), and is put back
and refused as such, the message saying the code wrote it through a function it does not
name. Only where another thread ran (or its clock cannot be read: it ended, it started during
the capture, the system has no thread clocks) is an array that changed put back and refused as
the function's only if the function's code can name it
(:func:`capviz.trace.code_reach.reach`: every attribute and variable name on a path to its
memory appears in the code the function reaches by name, or that code uses ``getattr``,
``vars``...); otherwise it is left as it is and refused at the ``cv.capture`` line as a change
taken for one of the threads that ran (``changed_by_thread``, naming them), blaming no line of
the function: a write the function made through code capviz cannot follow would not be
replayed. docs/guide/capture.md "Threads" says what another thread sees.

The arrays inside a tuple the walk reaches (``self.pair = (h, c)``; a tuple cannot be rebound
in place, so :mod:`capviz.trace.rebound` has no place for its items) are noted too, two levels
of tuples down, labelled ``self.pair[0]``.
"""

from __future__ import annotations

import ast
import mmap
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.ir import Graph
from capviz.core.references import REFERENCE_BYTES, fingerprint
from capviz.core.violations import CaptureViolation
from capviz.trace import code_reach, fn_lines, other_methods, recapture, state_fixes
from capviz.trace import places as walk
from capviz.trace.recapture import shown
from capviz.trace.state import root_of

TOTAL_BYTES = 16 << 20
"""At most this many bytes of outside arrays are copied per capture (the arrays met first)."""

_KINDS = "biufc"

_TUPLES = 2  # levels of tuples inside a place whose arrays are noted (self.state = ((h, c), n))

OUTSIDE = "an outside array NumPy wrote unseen"
"""The ``call`` of the refusal (the situation ``written_outside``)."""

SHARED = "an outside array in shared memory that changed"
"""The ``call`` of the refusal of a change in shared memory (``changed_in_shared_memory``)."""

OTHER_THREAD = "an outside array another thread may have written"
"""The ``call`` of the refusal of a change taken for another thread's (``changed_by_thread``)."""


class Written:
    """An outside array NumPy wrote: where the function holds it, what it held, what NumPy
    made of it (the array itself holds its old value again, unless ``threads``: then it was
    left as it is, the change taken for one of those threads'); ``unnamed``: the function's
    code never names it (it wrote it through a function it does not name); ``idle``: the other
    threads that lived and did not run meanwhile."""

    __slots__ = ("array", "before", "idle", "label", "made", "shared", "threads", "unnamed")

    def __init__(self, label: str, array: np.ndarray, before: np.ndarray | None,
                 made: np.ndarray, threads: list[str] | None = None,
                 unnamed: bool = False, idle: list[str] | None = None,
                 shared: bool = False) -> None:
        self.label, self.array, self.before, self.made = label, array, before, made
        self.threads, self.unnamed, self.idle = threads, unnamed, idle or []
        self.shared = shared  # its memory is an mmap another process can write: left as it is


class Snapshot:
    """The outside arrays a function can reach by name: the small ones with copies of their
    values, the large ones (``watched``) with their fingerprints; the other threads' CPU
    clocks when it was taken (:func:`cpu_times`); the function and its places (for
    :func:`capviz.trace.code_reach.reach`, asked only when an array changed)."""

    __slots__ = ("_reach", "clocks", "fn", "noted", "places", "watched")

    def __init__(self, noted: list[tuple[str, np.ndarray, bytes]],
                 watched: list[tuple[str, np.ndarray, bytes]],
                 clocks: dict[int, int | None] | None = None,
                 fn: Callable | None = None, places: list | None = None) -> None:
        self.noted, self.watched = noted, watched
        self.clocks, self.fn, self.places = clocks or {}, fn, places
        self._reach: code_reach.Reach | None = None

    def put_back(self) -> list[Written]:
        """Every noted array whose bits differ from its copy, each given its copy back, then
        every watched one whose fingerprint differs (which cannot be: its ``before`` is
        ``None``); a watched array is reported once. Where other threads ran since the
        snapshot was taken and the function's code names no place that holds the array's
        memory, the change is taken for one of those threads' and left as it is (see the
        module docstring, "Threads")."""
        written = []
        ran: list[str] | None = None  # the other threads that ran (asked once, if needed)
        for label, array, saved in self.noted:
            if array.tobytes() == saved:
                continue
            if ran is None:
                ran = self._ran()
            made = array.copy()
            before = np.frombuffer(saved, array.dtype).reshape(array.shape)
            unnamed = self._unnamed(array)
            threads = ran if ran and unnamed else None
            shared = threads is None and shared_memory(array)
            if threads is None and not shared:
                array[...] = before
            written.append(Written(label, array, before, made, threads, unnamed,
                                   self._idle(ran), shared))
        changed = [item for item in self.watched if fingerprint(item[1]) != item[2]]
        for item in changed:
            if ran is None:
                ran = self._ran()
            self.watched.remove(item)
            unnamed = self._unnamed(item[1])
            threads = ran if ran and unnamed else None
            shared = threads is None and shared_memory(item[1])
            written.append(Written(item[0], item[1], None, item[1], threads, unnamed,
                                   self._idle(ran), shared))
        written.sort(key=lambda w: (w.threads is not None, w.shared))  # the function's own first
        return written

    def _ran(self) -> list[str]:
        """The names of the other threads that ran since the snapshot was taken (their CPU
        clocks moved, or cannot be compared): ``[]`` when none did."""
        if self.fn is None:
            return []
        return ran_since(self.clocks)

    def _idle(self, ran: list[str]) -> list[str]:
        """The names of the other threads that lived when the snapshot was taken and did not
        run since (none of ``ran``)."""
        if not self.clocks or ran:
            return []
        names = {thread.ident: thread.name for thread in threading.enumerate()}
        return [names.get(ident, f"thread {ident}") for ident in self.clocks]

    def _unnamed(self, array: np.ndarray) -> bool:
        """Whether the function's code names no place holding ``array``'s memory."""
        if self.fn is None or self.places is None:
            return False
        if self._reach is None:
            self._reach = code_reach.reach(self.fn, self.places)
        root = root_of(array)
        return not any(type(value) is np.ndarray and root_of(value) is root and
                       self._reach.may_name(label) for label, value in _arrays(self.places))


def shared_memory(array: np.ndarray) -> bool:
    """Whether ``array``'s memory is an mmap (``multiprocessing.shared_memory``, ``np.ndarray(
    buffer=shm.buf)``, ``np.frombuffer(mm)``): another process can write it, and no clock of
    this process sees that (review 6, finding 14), so a change is not put back."""
    base = root_of(array).base
    if isinstance(base, memoryview):
        base = base.obj
    return isinstance(base, mmap.mmap)


def _clock_id(native_id: int) -> int:
    """The id of the CPU clock of this process's thread ``native_id`` (Linux: what glibc's
    ``pthread_getcpuclockid`` computes, from the thread id, so an ended thread gives
    ``EINVAL``, never a read of freed memory)."""
    return ((~native_id) << 3) | 6  # CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED


def _thread_clock(native_id: int | None) -> int | None:
    """Thread ``native_id``'s CPU time in nanoseconds, or ``None`` where it cannot be read."""
    if native_id is None or not _CLOCKS:
        return None
    try:
        return time.clock_gettime_ns(_clock_id(native_id))
    except (OSError, OverflowError, ValueError):
        return None


def _clocks_work() -> bool:
    if not sys.platform.startswith("linux") or not hasattr(time, "clock_gettime_ns"):
        return False
    try:
        time.clock_gettime_ns(_clock_id(threading.get_native_id()))
    except (OSError, OverflowError, ValueError):
        return False
    return True


_CLOCKS = _clocks_work()


def cpu_times() -> dict[int, int | None]:
    """``{ident: CPU nanoseconds}`` of the threads other than this one that hold a Python
    frame now (``None``: not readable)."""
    idents = list(sys._current_frames())  # (the idents only: a frame kept in a local here
    if len(idents) <= 1:                    # would hold itself, a cycle keeping the graph)
        return {}
    me = threading.get_ident()
    natives = {thread.ident: thread.native_id for thread in threading.enumerate()}
    return {ident: _thread_clock(natives.get(ident)) for ident in idents if ident != me}


def ran_since(clocks: dict[int, int | None]) -> list[str]:
    """The names of the threads other than this one that ran since ``clocks``
    (:func:`cpu_times`) were read: a thread whose clock moved or cannot be read, one that
    started since, and "a thread that has ended" for one that is gone."""
    now = cpu_times()
    if not now and not clocks:
        return []
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    ran = [names.get(ident, f"thread {ident}") for ident, ns in now.items()
           if ns is None or clocks.get(ident) != ns]
    if clocks.keys() - now.keys():
        ran.append("a thread that has ended")
    return ran


def _arrays(places: list[walk.Place]) -> list[tuple[str, Any]]:
    """``(label, value)`` of every place, and of the items of the tuples they hold
    (:data:`_TUPLES` levels down)."""
    found = []
    for place in places:
        found.append((place.label, place.value))
        found += _tuple_items(place.value, place.label, _TUPLES)
    return found


def _tuple_items(value: Any, label: str, depth: int) -> list[tuple[str, Any]]:
    """``(label[i], item)`` of tuple ``value``'s items, and of the tuples among them."""
    if type(value) is not tuple or depth <= 0:
        return []
    found = []
    for index, item in enumerate(value[:256]):
        found.append((f"{label}[{index}]", item))
        found += _tuple_items(item, f"{label}[{index}]", depth - 1)
    return found


def note(places: list[walk.Place], copy_below: int = REFERENCE_BYTES,
         copy_bytes: int = TOTAL_BYTES, fn: Callable | None = None) -> Snapshot:
    """The ndarrays among ``places`` (:func:`capviz.trace.places.note` of the function: what
    it can reach by name, see the module docstring), copied as bytes: those smaller than
    ``copy_below`` until the copies reach ``copy_bytes``; the others watched. (A read-only
    array is copied too: testing its flag costs more than its copy.) ``fn``: the captured
    function, whose code tells its writes from another thread's ("Threads"); ``None``: every
    change is the function's."""
    noted: list[tuple[str, np.ndarray, bytes]] = []
    watched: list[tuple[str, np.ndarray, bytes]] = []
    seen: set[int] = set()
    total = 0
    ndarray = np.ndarray
    for label, value in _arrays(places):
        if type(value) is not ndarray or id(value) in seen:
            continue
        seen.add(id(value))
        if value.dtype.kind not in _KINDS:
            continue
        size = value.nbytes
        if size < copy_below and total + size <= copy_bytes:
            total += size
            noted.append((label, value, value.tobytes()))
        elif value.size and (value.flags.c_contiguous or value.flags.f_contiguous):
            watched.append((label, value, fingerprint(value)))
    if fn is None:
        return Snapshot(noted, watched)
    return Snapshot(noted, watched, cpu_times(), fn, places)


def refuse(graph: Graph, written: list[Written], fn: Callable, caller: Any
           ) -> CaptureViolation:
    """Refuse the first of ``written`` on ``graph`` (recorded, the graph no longer complete),
    at the line of ``fn`` that writes it, else at ``caller`` (the ``cv.capture`` line)."""
    first = written[0]
    label = first.label
    if first.threads is not None:
        return _refuse_threaded(graph, first, fn, caller)
    if first.shared:
        return _refuse_shared(graph, first, fn, caller)
    source, text = fn_lines.writing_line(fn, label)
    state = _state_node(graph, first.array)
    written_as = label  # (self.t in the method of self.opt that writes self.opt.t)
    if source is None and state is None:  # written in a method of another object fn calls:
        source, text = other_methods.line(fn, label)  # its line there (self.t += 1)
        written_as = _target(text) or label if source is not None else label
    if source is None and state is None:  # else the line of fn naming that object
        source, text = fn_lines.naming_line(fn, label)  # (self.opt.update(...): self.opt.t)
    if source is None:  # written through another name (v = self.v; v *= 0.9): its state's line
        source = state.source if state is not None and state.source else caller
    reads = _reads_fix(graph, source)  # NumPy's values read from a state: cv.constant
    if reads is None and written_as != label:  # v of `for k, v in params.items()`
        reads = _items_fix(source, text)
    if first.before is None:
        happened = (f"it keeps NumPy's change: it is too large ({mib(first.array)}) for the "
                    "capture to keep a copy of, so the capture could not put it back; set it "
                    "back from a copy of your own")
    elif state is not None:
        happened = (f"NumPy wrote it before the capture's first write to it, so the graph "
                    f"would start from the value NumPy made ({shown(first.made)}) where a call "
                    f"starts from {shown(first.before)}")
    elif reads is not None:  # what NumPy made comes from a state's fill: not shown
        happened = f"it held {shown(first.before)} when the call started"
    else:
        happened = (f"it held {shown(first.before)} when the call started and NumPy made it "
                    f"{shown(first.made)}")
    if first.unnamed and state is None:  # no line of fn writes it: say how it was written
        name = getattr(fn, "__name__", "the function")
        idle = _names(first.idle)
        happened = (f"{name}'s code never names it, so a function it calls without naming it "
                    "(one held in a dict or a list, a registered callback) wrote it"
                    + (f", and no other thread ran meanwhile ({idle} waited)" if idle else "")
                    + f"; {happened}")
    others = [w.label for w in written[1:]]
    also = f"; NumPy also wrote {', '.join(others)}" if others else ""
    back = "" if first.before is None else "; the capture put it back"
    if state is not None and first.before is not None:  # NumPy's write, then the capture's
        more = [node for w in written[1:] if w.before is not None and w.threads is None
                and (node := _state_node(graph, w.array)) is not None]
        line, fix = state_fixes.numpy_write_fix(graph, state, more)
        source = line or source  # (u[1:-1] = ... of u = self.u: that line, not the next)
    elif first.unnamed and state is None and reads is None:
        fix = (f"write {label} with a tensor in the function that writes it, which the capture "
               "records as a state, or pass it as an input and return its new value")
    else:
        fix = _fix(written_as, text, first.array, reads)
    reason = f"{happened}{also}{back}; {fix}"
    node = state if state is not None else graph.nodes[-1]
    return recapture.refuse(graph, node, OUTSIDE, label, reason, array=label, source=source)


def _refuse_threaded(graph: Graph, first: Written, fn: Callable, caller: Any
                     ) -> CaptureViolation:
    """Refuse an outside array that changed while other threads ran, which ``fn``'s code never
    names (:meth:`Snapshot.put_back` left it as it is), at the ``cv.capture`` line, blaming
    no one's code: it is most likely the other thread's write, and a write of ``fn``'s through
    code capviz cannot follow would not be replayed."""
    label, threads = first.label, first.threads or []
    name = getattr(fn, "__name__", "the function")
    shown_threads = _names(threads)
    if first.before is None:
        held = f"its bytes changed ({mib(first.array)}, too large to keep a copy of)"
    else:
        held = f"{_changed(first.before, first.made)} of its {first.array.size} values changed"
    reason = (f"{held} and other threads ran ({shown_threads}); keep other threads from "
              f"writing what {name} reaches while it is captured (pause "
              f"{threads[0] if threads else 'them'}, or capture a copy of the object), or keep "
              f"{label} where {name} does not reach it; if {name} writes it itself, write it "
              "with a tensor")
    return recapture.refuse(graph, graph.nodes[-1], OTHER_THREAD, label, reason, array=label,
                            source=caller)


def _refuse_shared(graph: Graph, first: Written, fn: Callable, caller: Any
                   ) -> CaptureViolation:
    """Refuse an outside array in shared memory that changed (left as it is: another process
    may have written it) at the ``cv.capture`` line."""
    label = first.label
    name = getattr(fn, "__name__", "the function")
    if first.before is None:
        held = f"its bytes changed ({mib(first.array)})"
    else:
        held = (f"{_changed(first.before, first.made)} of its {first.array.size} values "
                "changed")
    reason = (f"{held}; keep other processes from writing what {name} reaches while it is "
              f"captured, or pass {label} as an input; if {name} writes it, write it with a "
              "tensor")
    return recapture.refuse(graph, graph.nodes[-1], SHARED, label, reason, array=label,
                            source=caller)


def _names(threads: list[str]) -> str:
    """``peer, loader, pool_0 and 2 more``."""
    return ", ".join(threads[:3]) + (f" and {len(threads) - 3} more" if len(threads) > 3 else "")


def _changed(before: np.ndarray, made: np.ndarray) -> int:
    """How many elements differ in their bits between two arrays of one shape and dtype."""
    width = before.dtype.itemsize
    old = np.ascontiguousarray(before).view(np.uint8).reshape(-1, width)
    new = np.ascontiguousarray(made).view(np.uint8).reshape(-1, width)
    return int(np.count_nonzero((old != new).any(axis=1)))


def mib(array: np.ndarray) -> str:
    """``array``'s size, in MiB."""
    return f"{array.nbytes / (1 << 20):.1f} MiB"


def _state_node(graph: Graph, array: np.ndarray) -> Any:
    """The state node of ``array``'s memory, if the graph writes it."""
    root = root_of(array)
    for index, ref in graph.state_targets.items():
        node = graph.nodes[index]
        if "of" not in node.params and callable(ref) and ref() is root:
            return node
    return None


def _reads_fix(graph: Graph, source: Any) -> str | None:
    """Where the written value comes from NumPy's reads of the graph's states (``mh =
    self.m / ...``; ``self.W -= 0.01 * mh / ...``): those reads through ``cv.constant`` on the
    user's lines (:mod:`capviz.trace.state_fixes`), or ``None``."""
    exprs = state_fixes.expressions(graph, graph.state_nodes)
    made = state_fixes.fix_for_reads(source, exprs)
    return None if made is None else f"{made}: {state_fixes.constant_note(exprs, made)}"


def _target(text: str) -> str | None:
    """The target of an augmented or subscripted assignment ``text`` (``self.shadow[k]``)."""
    stmt = state_fixes.statement(text)
    if isinstance(stmt, ast.AugAssign):
        return ast.unparse(stmt.target)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        return ast.unparse(stmt.targets[0])
    return None


def _items_fix(source: Any, text: str) -> str | None:
    """For NumPy's write ``text`` in another object's method that reads items of a container
    the method loops over (``self.shadow[k] -= (1 - d) * (self.shadow[k] - v)``, ``for k, v in
    params.items()``, the arrays the capture writes): those reads through ``cv.constant``
    (an item that is a Python number stays weak in NumPy's promotion through cv.constant, as
    outside a capture: 0172f2f), else ``None``."""
    names = other_methods.loop_items(source, text)
    made = state_fixes.read_through_constant(text, names) if names else None
    if made is None:
        return None
    return (f"write `{made}`, which the capture records as a state: "
            f"{state_fixes.constant_note(names, made)}")


def _fix(label: str, text: str, array: np.ndarray, reads: str | None = None) -> str:
    """The write through a tensor: the user's line rewritten where it is ``label <op>= value``
    (``self.n += cv.constant(np.float64(1.0))``), the reads of a state through
    ``cv.constant`` where the value comes from one (``reads``), else the form of it."""
    kind = array.dtype.name
    text = next((part for part in state_fixes.simple_statements(text)  # (a; b on one line)
                 if re.match(rf"^{re.escape(label)}\s*[^=\s]*=(?!=)", part)), text)
    match = re.match(rf"^{re.escape(label)}\s*(?P<op>\*\*|//|>>|<<|[-+*/%@&|^])=\s*(?P<v>.+)$",
                     text)
    if reads is not None and (match is None or not _number(match["v"])):
        return reads
    if match is not None and _number(match["v"]):
        write = f"{label} {match['op']}= cv.constant(np.{kind}({match['v']}))"
    elif match is not None and not match["v"].startswith("cv.constant("):
        value, op = match["v"], match["op"]
        return (f"make {value} a tensor before it meets {label}, so the capture records the "
                f"write as a state: compute it from an input, or, where it is an array the "
                f"call writes in place, read it through the local name of that write "
                f"(v = {value}; v -= ...; {label} {op}= v)")
    else:
        write = f"{label} += cv.constant(np.{kind}(1)) for {label} += 1"
    return (f"write it with a tensor, which the capture records as a state: {write}, or pass "
            "it as an input and return its new value")


def _number(text: str) -> bool:
    """Whether ``text`` is a Python number literal (``1``, ``0.99``, ``-1e-3``)."""
    try:
        float(text.replace("_", ""))
    except ValueError:
        return False
    return True
