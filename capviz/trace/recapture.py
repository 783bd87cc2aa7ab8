"""A second capture with other values in the states: what NumPy computed outside the capture.

NumPy's own operators on an outside array (``reg = 0.5 * np.sum(self.W * self.W)`` with
``self.W`` an ndarray, ``self.t += 1``) run on its memory and no hook sees them. After the
capture's first write into a floating-point state its memory holds the poison
(:mod:`capviz.trace.state`), which refuses what NumPy computes from it and carries the NaN;
*before* that write, on an integer or boolean state, and through a read that swallows a NaN (a
comparison, a mask, ``isnan``), the value NumPy computes enters the graph as a number (a
literal), an array (a constant) or a path (a branch) frozen at the capture's values.

So ``cv.capture(fn)`` captures ``fn`` a second time whenever the first capture made array states
(no look at the recorded values can tell that a second capture cannot matter: a branch on a
state records nothing), with each state's live array holding other values
(:class:`OtherValues`, :func:`other_values`): a seeded draw of another scale, sign and order
(floats: normal values of scale 7 whose sum has the other sign, placed in reversed rank order;
integers: the elements in reversed rank order plus an offset; booleans: ``~a``), no element
equal to the original, no NaN. At each capture's first write into a float state, in place of
the NaN mark of the scope form, the first capture writes large positive values and the second
large negative ones of another scale and order (:func:`capviz.trace.state.post_write_fill`,
:meth:`OtherValues.fill`), so every comparison, mask, sign, order or sum read after the write
differs too. Only NumPy's own code and Python's see these values: capviz's own
reads of a planted array (a constant recorded from it, a state's start value, a guard computed
from them) read the first capture's values (:meth:`OtherValues.seen`). The two graphs are then
compared (:func:`first_difference`), and *any* difference comes from code that read a state
outside the capture's sight: a literal, parameter or constant that differs is refused at its
line (``computed_from_state``), another op, shape, line or guard value as a path chosen from a
state's values (``path_from_state``). An outside array NumPy wrote during the second capture
(``self.t += 1``: the first capture wrote it too, and nothing can undo that) is refused naming
it, and put back; so is a state NumPy wrote before the capture's first write to it. One
difference is no refusal: a constant that is bit for bit a state's start value in the first
capture and its planted one in the second is a whole copy NumPy made of it before the write
(``q = self.q.copy()``: ``ndarray.copy`` reaches no hook), a read of the state when the call
starts, and both graphs record it as one (a view state of the whole array: :func:`_copy_read`).

What it cannot see: a read whose answer is the same for both sets of values (a step function:
``np.sign(W.sum())`` of two positive sums; ``np.isnan(W)`` after the write, both captures'
values being finite, since a NaN in either would make one of ``W.sum() < 0`` and ``W.sum() >
0`` answer alike). fn runs twice, and its Python side
effects happen twice (docs/guide/state.md).
"""

from __future__ import annotations

import collections
import functools
import inspect
import io
import linecache
import math
import threading
import tokenize
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.errors import CaptureViolation
from capviz.core.ir import Graph, Node, Violation
from capviz.core.layout import same_bits
from capviz.core.references import referenceable
from capviz.core.source import display_file, is_user_file
from capviz.core.symbols import Symbol
from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain, make_error
from capviz.trace import state_fixes
from capviz.trace.state import PLAIN, post_write_fill

COMPUTED = "a value NumPy computed from a state"
"""The ``call`` of a refused literal or constant (the situation ``computed_from_state``)."""
RETURNED = "a returned value NumPy computed from a state"
"""The ``call`` of a refused returned value (the situation ``returned_from_state``)."""
WRITTEN = "a write NumPy made into an outside array"
"""The ``call`` of an outside array NumPy wrote while the capture ran (``written_by_numpy``)."""
PATH = "a path chosen from a state's values"
"""The ``call`` of a structural difference (the situation ``path_from_state``)."""
GROWS = "a list the call grows"
"""The ``call`` of a walked list or deque the first run grew and ``fn`` reads (the situation
``grows_per_call``: a warm-up by ``len(self.log)``, hostile review 6, finding 1)."""
PYTHON_PATH = "a path chosen from a Python value the call changes"
"""The ``call`` of a structural difference after the first run grew a walked list or dict
(the situation ``path_from_python``: ``if len(HIST) % 2:``, hostile review 6, finding 8)."""
CHANGES = "a Python number that changes from call to call"
"""The ``call`` of a refused Python number (the situation ``changes_per_call``)."""
MADE = "a value NumPy read from a buffer the call made"
"""The ``call`` of a NumPy read of an ndarray the call made by a spelling no creation hook sees,
after the capture wrote it (the situation ``read_from_made_buffer``: review 6, finding 9)."""
FAILED = "a second run of the captured function"
"""The ``call`` of a second capture that raised (the situation ``second_run_failed``)."""

_NUMBERS = (bool, int, float, complex)


# --- when a second capture can matter -------------------------------------------------------

def array_states(graph: Graph) -> list[tuple[Node, np.ndarray]]:
    """Each array state (not a view state) with its live array, in program order."""
    found = []
    for node in graph.state_nodes:
        target = graph.state_targets.get(node.index)
        if "of" in node.params or not isinstance(target, weakref.ref):
            continue
        root = target()
        if type(root) is np.ndarray:
            found.append((node, root))
    return found


def writes_arrays(graph: Graph) -> bool:
    """Whether ``graph`` has an array state whose live array is alive (cheaper than
    :func:`array_states`)."""
    for target in graph.state_targets.values():
        if isinstance(target, weakref.ref) and type(target()) is np.ndarray:
            return True
    return False


def entry_spaces(fn: Callable) -> list[dict]:
    """The variables ``fn`` sees by name outside its locals: its module's globals and its
    closure (of the function under a bound method, a ``functools.partial``, a callable
    object)."""
    while callable(getattr(fn, "func", None)):  # functools.partial
        fn = fn.func
    fn = getattr(fn, "__func__", fn)
    if not hasattr(fn, "__code__"):
        fn = call_method(fn)
    spaces = []
    space = getattr(fn, "__globals__", None)
    if isinstance(space, dict):
        spaces.append(space)
    code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None)
    if code is not None and cells:
        closure = {}
        for name, cell in zip(code.co_freevars, cells):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # an empty cell
                continue
        spaces.append(closure)
    return spaces


def call_method(obj: Any) -> Callable | None:
    """The ``__call__`` function of a callable object's class (or a base's)."""
    for klass in type(obj).__mro__:
        if "__call__" in vars(klass):
            return vars(klass)["__call__"]
    return None


_SOURCES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def source_lines(function: Any) -> tuple[list[str], int]:
    """``inspect.getsourcelines(function)``, kept per code object (of the function decorators
    wrap: what inspect reads) for the next capture: every capture reads the source of the
    functions it reaches again, and inspect tokenized each block again (a fifth of a small
    capture's time). A code object's lines are those of the file it was compiled from; a read
    that fails (no source) is not kept. Raises what inspect raises (``OSError``, ``TypeError``).
    """
    code = getattr(inspect.unwrap(function), "__code__", None) \
        if callable(function) else None
    if type(code) is not types.CodeType:
        return inspect.getsourcelines(function)
    found = _SOURCES.get(code)
    if found is None:
        lines, start = inspect.getsourcelines(function)
        found = _SOURCES[code] = (tuple(lines), start)
    return list(found[0]), found[1]


@functools.lru_cache(maxsize=8192)
def line_code(line: str) -> str:
    """A source line without its comment (kept for the next capture: every capture reads the
    lines of the functions it reaches again, and tokenizing them was most of a small capture's
    time)."""
    line = line.strip()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line + "\n").readline):
            if tok.type == tokenize.COMMENT:
                return line[:tok.start[1]].rstrip()
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return line


# --- other values in the states, and everything put back --------------------------------------

SEED = 20_2026
"""The seed of the other values: the same program planted twice gets the same ones."""

_PCG64, _GENERATOR = np.random.PCG64, np.random.Generator  # (NumPy's own, never the hooks')
_generators = threading.local()


def _seeded() -> tuple[np.random.Generator, dict]:
    """This thread's generator of the other values and its state seeded with :data:`SEED`
    (``default_rng(SEED)``'s). It is made once per thread: every generator made in the
    process makes the next capture scope look for it among the objects the collector tracks
    (:mod:`capviz.randomness.backstop`), a pass over the young objects or over all."""
    made = getattr(_generators, "made", None)
    if made is None:
        bits = _PCG64(SEED)
        made = _generators.made = (_GENERATOR(bits), bits.state)
    return made


def other_values(array: np.ndarray, draw: int = 0,
                 gen: np.random.Generator | None = None) -> np.ndarray:
    """An array of ``array``'s shape and dtype whose every element differs from ``array``'s,
    holding no NaN and no infinity: a seeded draw of another scale, order and sign than
    ``array``'s values, so shifts, scalings and sorts of them differ too (see the module
    docstring). Draw 0 (planted before the capture) sums to the other sign than ``array``;
    draw 1 (:meth:`OtherValues.fill`, where the first capture's memory holds NaN, for which
    every comparison is False) sums to a positive number. ``gen``: the generator to draw
    from (one per second capture: making one costs more than a small array's draw)."""
    if gen is None:
        gen = np.random.default_rng((SEED, draw, array.size))
    with np.errstate(all="ignore"):
        return _other(array, draw, gen)


def _other(array: np.ndarray, draw: int, gen: np.random.Generator) -> np.ndarray:
    kind = array.dtype.kind
    if kind == "b":
        return ~array
    if kind in "iu":
        return _other_ints(array, gen)
    if kind == "c":
        out = np.empty_like(array)
        out.real = _other_floats(array.real, gen, draw)
        out.imag = _other_floats(array.imag, gen, draw)
        return out
    return _other_floats(array, gen, draw)


def _other_floats(array: np.ndarray, gen: np.random.Generator, draw: int) -> np.ndarray:
    flat = array.reshape(-1)
    drawn = gen.standard_normal(flat.size) * 7
    positive = not np.sum(flat, dtype=np.float64) > 0 if draw == 0 else True
    drawn += (3.0 if positive else -3.0) - drawn.mean()  # `if W.sum() > 0` flips
    if draw == 0:
        drawn = _reversed_ranks(flat, drawn)  # argmax(W) is argmin(other)
    out = drawn.astype(array.dtype)
    same_value = out == flat
    if same_value.any():  # (a draw is never exactly a value; a cast may round onto one)
        out[same_value] = out[same_value] * 2 + 1
    return out.reshape(array.shape)


_FLOAT64 = np.dtype(np.float64)


def _other_floats_together(arrays: list[np.ndarray], gen: np.random.Generator
                           ) -> list[np.ndarray]:
    """:func:`_other_floats` (draw 0) of each of ``arrays`` (non-empty floating arrays), drawn
    in one go: a second capture of 100 states pays a few passes, not a few per state."""
    if not arrays:
        return []
    sizes = np.array([a.size for a in arrays])
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    if len(arrays) == 1:  # (no copy of one array: review 4, finding 15, the peak of a big one)
        flat = arrays[0].reshape(-1).astype(np.float64, copy=False)
    else:
        flat = np.concatenate([a.reshape(-1) for a in arrays], dtype=np.float64)
    drawn = gen.standard_normal(flat.size)
    drawn *= 7
    positive = ~(np.add.reduceat(flat, starts) > 0)
    shift = np.where(positive, 3.0, -3.0) - np.add.reduceat(drawn, starts) / sizes
    few = len(arrays) > 1 and flat.size <= _CHUNK  # (small states: whole passes, not a loop)
    if few:
        drawn += np.repeat(shift, sizes)  # each sums to the other sign than its array
    else:
        for value, start, size in zip(shift.tolist(), starts.tolist(), sizes.tolist()):
            drawn[start:start + size] += value
    out = np.empty_like(drawn)
    for start, size, count in (_equal_sized(sizes.tolist()) if few else
                               ((start, size, 1) for start, size in
                                zip(starts.tolist(), sizes.tolist()))):
        stop = start + size * count
        if count == 1:
            _reversed_ranks(flat[start:stop], drawn[start:stop], out[start:stop])
        else:  # a block of states of one size: rows of one matrix, a few calls for them all
            _reversed_ranks_rows(flat[start:stop].reshape(count, size),
                                 drawn[start:stop].reshape(count, size),
                                 out[start:stop].reshape(count, size))
    del drawn
    if few:
        same_value = out == flat
        same_value &= np.repeat([a.dtype == _FLOAT64 for a in arrays], sizes)
        if same_value.any():
            out[same_value] = out[same_value] * 2 + 1
    for a, start in zip(arrays, starts.tolist()):
        if few or a.dtype != _FLOAT64:
            continue
        part, values = out[start:start + a.size], flat[start:start + a.size]
        same_value = part == values
        if same_value.any():
            part[same_value] = part[same_value] * 2 + 1
    others = []
    for a, start in zip(arrays, starts.tolist()):
        other = out[start:start + a.size]
        if a.dtype != _FLOAT64:  # cast, then checked against the array's own values
            other = other.astype(a.dtype)
            flat_a = a.reshape(-1)
            same_value = other == flat_a
            if same_value.any():
                other[same_value] = other[same_value] * 2 + 1
        others.append(other.reshape(a.shape))
    return others


def _equal_sized(sizes: list[int]) -> list[tuple[int, int, int]]:
    """``(start, size, count)`` of each run of consecutive ``sizes`` that are equal (the
    flat positions of ``count`` arrays of ``size`` elements each, one after the other)."""
    runs: list[tuple[int, int, int]] = []
    start = 0
    for size in sizes:
        if runs and runs[-1][1] == size and size:
            first, _, count = runs[-1]
            runs[-1] = (first, size, count + 1)
        else:
            runs.append((start, size, 1))
        start += size
    return runs


_ROWS_AT_ONCE = 8192  # elements of the rows placed together: their temporaries stay small
#   (64 KiB each; at 2,048 the 100 states of benchmarks/state.py took 13 passes of ~14
#   NumPy calls, 0.3 ms of a 9 ms first capture; the peak grew by 78 KiB, 5% of it)


def _reversed_ranks_rows(flat: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
    """:func:`_reversed_ranks` of each row of ``flat`` (2-d, C-contiguous) with the same row of
    ``values``, into the same row of ``out``: bit for bit the same, in a few NumPy calls for
    the rows of one run of equals (``np.zeros(n)``) and the rows with no NaN and no two equal
    elements, the others one by one; :data:`_ROWS_AT_ONCE` elements at a time (a few
    temporaries of that size, not of all the rows: review 4, finding 15, the peak). ``values``
    is sorted in place, row by row."""
    count, size = flat.shape
    step = max(1, _ROWS_AT_ONCE // size)
    for low in range(0, count, step):
        high = min(low + step, count)
        _rows(flat[low:high], values[low:high], out[low:high])


def _rows(flat: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
    count, size = flat.shape
    values.sort(axis=1)
    left = np.ones(count, bool)  # rows not placed yet
    if 2 < size:  # one run of equals: the values ascending, the smallest last
        equal = (flat == flat[:, :1]).all(axis=1)
        if equal.any():
            out[equal, :-1] = values[equal, 1:]
            out[equal, -1] = values[equal, 0]
            left &= ~equal
    batched = left.copy()
    if flat.dtype.kind in "fc":  # a NaN compares unequal to itself: its row one by one
        batched &= ~np.isnan(flat).any(axis=1)
    if batched.any():
        every = bool(batched.all())
        part = flat if every else flat[batched]
        # no two equal elements (checked below) and no NaN: one order sorts the row, which
        # the unstable sort finds as the stable one does (ties: their row one by one, stable)
        order = np.argsort(part, axis=1)
        order += np.arange(0, part.size, size)[:, None]  # positions in part's memory
        ranked = part.reshape(-1)[order]
        distinct = (ranked[:, 1:] != ranked[:, :-1]).all(axis=1)  # the plain reversal
        del ranked
        rows = np.flatnonzero(batched)
        if every and distinct.all():  # (the usual case: straight into out)
            out.reshape(-1)[order] = values[:, ::-1]
        elif distinct.any():
            placed = np.empty_like(part)
            placed.reshape(-1)[order] = values[rows, ::-1]
            out[rows[distinct]] = placed[distinct]
        left[rows[distinct]] = False
    for row in np.flatnonzero(left).tolist():
        _reversed_ranks(flat[row], values[row], out[row])


def _other_ints(array: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """``array``'s elements in reversed rank order, each made distinct (its rank added), plus
    an offset (wrapping at the dtype's end), each element that still equals the original moved
    on by one more."""
    flat = array.reshape(-1)
    kind = array.dtype.type
    offset = kind(int(gen.integers(3, 100)))
    distinct = np.sort(flat) + np.arange(flat.size, dtype=array.dtype)  # (ties broken too)
    out = (_reversed_ranks(flat, distinct) + offset).astype(array.dtype)
    same_value = out == flat
    out[same_value] = flat[same_value] + offset + kind(1)
    return out.reshape(array.shape)


_CHUNK = 1 << 20  # elements compared at once: no sorted copy of a big state is made


def _reversed_ranks(flat: np.ndarray, values: np.ndarray, out: np.ndarray | None = None
                    ) -> np.ndarray:
    """``values`` placed so that the largest stands where ``flat`` has its smallest element,
    and so on: a comparison of two elements that differ is the other way round.

    Elements of ``flat`` that are equal (``np.ones(n)``, ``np.zeros(n)``: the usual initial
    weights, gains and counts) compare alike whatever is planted, but NumPy's order reads
    take the *first* of equals (``argmax``, ``argmin``, a stable ``argsort``): so within each
    run of equals (in index order) the values ascend from its first index to its one before
    last, and its last gets the smallest: the first of the run holds neither its largest nor
    (from three equals on) its smallest value, and in every part of the run that does not end
    at its last index (a row of ``np.ones((m, n))``) the largest is not first either. A run
    of two gets its values ascending (argmax moves; argmin of two equals cannot move with it).
    Review 3, finding 26: ``np.argmax(self.W)`` of ``np.ones(3)`` was 0 for both captures.

    Written into ``out`` when given; ``values`` is sorted in place. Its temporaries are the
    order and, where ``flat`` has equal elements, a few arrays of its size of 32-bit integers
    where they fit (review 4, finding 15: a 61 MiB state's second capture peaked at 15 times
    its size)."""
    size = flat.size
    if out is None:
        out = np.empty_like(values)
    values.sort()
    if 2 < size <= _CHUNK and flat[0] == flat[-1] and (flat == flat[0]).all():
        out[:-1] = values[1:]  # one run of equals (np.zeros(n), np.ones(n)): as below, the
        out[-1] = values[0]    # values ascending, the smallest last, in 2 calls, not 20
        return out
    order = np.argsort(flat, kind="stable")  # ties in index order
    descending = values[::-1]
    new_run = np.empty(size, bool)
    if size:
        new_run[0] = True
    for low in range(1, size, _CHUNK):  # flat[order][1:] != flat[order][:-1], a block at once
        high = min(low + _CHUNK, size)
        np.not_equal(flat[order[low:high]], flat[order[low - 1:high - 1]],
                     out=new_run[low:high])
    if new_run.all():  # no two equal: the plain reversal
        out[order] = descending
        return out
    starts = np.flatnonzero(new_run)
    del new_run
    lengths = np.diff(np.append(starts, size))
    small = np.int32 if size < 2**31 else np.int64
    m = np.arange(size, dtype=small)
    m -= np.repeat(starts.astype(small), lengths)  # the rank within its run
    length = np.repeat(lengths.astype(small), lengths)
    within = length - 1  # where(length >= 3, where(m == length - 1, m, length - 2 - m),
    within -= m          #       length - 1 - m)
    three = length >= 3
    within[three] -= 1
    three &= m == length - 1
    del length
    within[three] = m[three]
    del three
    within -= m  # the run's start plus within: position - m + within
    del m
    for low in range(0, size, _CHUNK):
        high = min(low + _CHUNK, size)
        target = within[low:high]
        target += np.arange(low, high, dtype=small)
        out[order[target]] = descending[low:high]
    return out


def grown(places: list[Any], kinds: tuple = (list, dict, collections.deque)) -> list[str]:
    """The walked lists, dicts and deques (:func:`capviz.trace.places.note`'s ``items``
    places; of the types ``kinds``) whose length the first run changed (``HIST.append(1)``):
    the second run sees another one, so a path that differs may have been chosen from it."""
    found = []
    for place in places:
        if place.kind == "items" and type(place.holder) in kinds and \
                type(place.value) in (list, dict) and place.label not in found and \
                (len(place.holder) != len(place.value) or place.grew):  # (tensors: put back)
            found.append(place.label)
    return found


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _saved(graph: Graph, node: Node, root: np.ndarray) -> np.ndarray:
    """The values of state ``root`` to put back after the second capture: the first
    capture's start value (which its exit put back into ``root``) where it is a plain copy of
    the same layout, else a new copy (review 4, finding 15: one copy of a big state less)."""
    kept = graph.state_values.get(node.index)
    if type(kept) is np.ndarray and kept.dtype == root.dtype and kept.shape == root.shape \
            and kept.strides == root.strides and not np.may_share_memory(kept, root) \
            and same_bits(kept, root):
        return kept
    return root.copy(order="K")


class OtherValues:
    """The states' live arrays given other values for a second capture, and the outside arrays
    the first capture copied as constants noted, so that :meth:`restore` puts every one back,
    bit for bit, and says which of the noted ones NumPy wrote meanwhile.

    While the second capture runs, only NumPy's own code sees the other values: capviz's own
    reads of a planted array's value (a constant recorded from it, a state's start value, the
    value a guard computes from them) read the first capture's (:meth:`seen`), so every
    difference between the two graphs comes from NumPy's own code or Python code reading it."""

    def __init__(self, graph: Graph) -> None:
        self.states = [(node, root) for node, root in array_states(graph)
                       if root.flags.writeable]
        self.saved = [_saved(graph, node, root) for node, root in self.states]
        self.planted: list[np.ndarray] = []
        self.met: dict[int, np.ndarray] = {}  # id(root) -> its values at the first write,
        #                                       where they are not the planted ones
        self.fills: dict[int, np.ndarray] = {}  # id(root) -> the values written there then
        self.roots = {id(root): (root, saved) for (_, root), saved in zip(self.states,
                                                                           self.saved)}
        self.names = {id(root): (root, node.name, graph.state_places.get(node.index))
                      for node, root in self.states if node.name is not None}
        taken = set(self.roots)
        self.noted: list[tuple[Node, np.ndarray, np.ndarray]] = []
        for index, ref in graph.constant_origins.items():
            root = ref()
            if type(root) is not np.ndarray or id(root) in taken or referenceable(root):
                continue
            taken.add(id(root))
            self.noted.append((graph.nodes[index], root, root.copy(order="K")))

    def plant(self) -> None:
        """Other values into every state, and the ones :meth:`fill` writes made (before the
        second capture opens: it would take a generator made inside it for the user's)."""
        gen, start = _seeded()
        gen.bit_generator.state = start
        try:
            self._plant(gen)
        finally:  # as it was: a capture open around this one noted it so
            gen.bit_generator.state = start

    def _plant(self, gen: np.random.Generator) -> None:
        with np.errstate(all="ignore"):
            floats = [saved for saved in self.saved if saved.dtype.kind == "f" and saved.size]
            drawn = dict(zip(map(id, floats), _other_floats_together(floats, gen)))
            for (_, root), saved in zip(self.states, self.saved):
                other = drawn.get(id(saved))
                if other is None:
                    other = _other(saved, 0, gen)
                root[...] = other
                self.planted.append(other)
                self.fills[id(root)] = other

    def named(self, root: np.ndarray) -> tuple[str, Any] | None:
        """The name and place the first capture gave state ``root`` (``None`` for an array it
        did not name): the second capture writes the same arrays, and takes their names from
        the first instead of walking the user's namespaces again (names are not compared, and
        a message that quotes one reads the same in both)."""
        hit = self.names.get(id(root))
        if hit is None or hit[0] is not root:
            return None
        return hit[1], hit[2]

    def fill(self, root: np.ndarray) -> np.ndarray | None:
        """At the second capture's first write into planted ``root``: other values again
        (where the first capture wrote the NaN mark), so that what NumPy computes from the
        array after the write differs too, also where a NaN would not show (a comparison, a
        mask, ``isnan``). The values written (checked when the scope exits: NumPy's own write
        after the capture's, ``np.maximum(W, 0, out=W)``, which the first capture's positive
        fill hides), or ``None`` where ``root`` is not planted."""
        hit = self.roots.get(id(root))
        if hit is None or hit[0] is not root:
            return None
        if not same_bits(root, self.fills[id(root)]):  # NumPy wrote it before this write:
            self.met[id(root)] = root.copy(order="K")  # what it left there (refused after)
        if root.dtype.kind in "fc" and root.size:  # the other sign than the first capture's
            made = post_write_fill(root, second=True)
        else:
            made = self.fills[id(root)]
        root[...] = made
        return made

    def seen(self, value: np.ndarray) -> np.ndarray:
        """What capviz reads of ndarray ``value``: the first capture's values where ``value``
        is (a view of) a planted array, ``value`` itself elsewhere."""
        root = value
        while isinstance(root.base, np.ndarray):
            root = root.base
        hit = self.roots.get(id(root))
        if hit is None or hit[0] is not root:
            return value
        saved = hit[1]
        if saved.strides != root.strides:  # (a copy in K order has the owner's strides)
            return value
        if value is root:
            return saved
        start = _address(value) - _address(root)
        try:
            return np.ndarray(value.shape, value.dtype, buffer=saved, offset=start,
                              strides=value.strides)
        except (TypeError, ValueError):  # memory no buffer exposes as one block
            return value

    def restore(self) -> list[tuple[Node, np.ndarray]]:
        """Put every array back; the noted outside arrays NumPy wrote meanwhile: the constant
        node that read each, and what NumPy made of it."""
        for (_, root), saved in zip(self.states, self.saved):
            np.copyto(root, saved)
        written = []
        for node, root, saved in self.noted:
            if not same_bits(root, saved):
                written.append((node, root.copy(order="K")))
                np.copyto(root, saved)
        return written


# --- the two graphs compared ------------------------------------------------------------------

_EXACT = frozenset((int, bool, str, type(None)))


def same(a: Any, b: Any) -> bool:
    """Whether two static values of two captures are the same: type and bits."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind in _EXACT:  # (the common case first: ints, shapes' sizes, strings, None)
        return a == b
    if kind is float:
        return (a == b and math.copysign(1.0, a) == math.copysign(1.0, b)) or (a != a and b != b)
    if kind is Node:
        return a.index == b.index
    if kind is tuple:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return same_bits(a, b)
    if isinstance(a, (float, complex, np.generic)):
        return repr(a) == repr(b)  # NaN equals NaN; -0.0 differs from 0.0
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, slice):
        return same((a.start, a.stop, a.step), (b.start, b.stop, b.step))
    if isinstance(a, Node):
        return a.index == b.index
    if isinstance(a, Symbol):  # a size known at replay: where it comes from (its == asks the
        return (a.name, a.origin, a.axis) == (b.name, b.origin, b.axis)  # capture for a number)
    try:
        return bool(a == b)
    except Exception:  # a value with no truth of ==: compared by what it prints
        return repr(a) == repr(b)


def first_difference(one: Graph, two: Graph) -> tuple[Node, str, Any, Any] | None:
    """Where ``two`` first differs from ``one``: ``(node of one, what, one's value, two's)``,
    ``what`` ``"value"`` (a literal, a parameter or a constant) or ``"path"`` (another op,
    shape or line, or a guard that read another value); ``None`` when they are the same
    program. capviz's own reads in the second capture read the first capture's values
    (:meth:`OtherValues.seen`), so a guard computed from tensors reads the same value in both:
    one that differs read a value NumPy computed from a state.

    Each pair of nodes is compared as :func:`same` compares them, with the common cases (a
    tensor operand, an int size, a float literal, one dtype object) decided inline: a
    second capture of 100 states compares ~550 nodes."""
    for a, b in zip(one.nodes, two.nodes):
        if a.kind != b.kind or a.op != b.op or a.source != b.source or (
                a.dtype is not b.dtype and a.dtype != b.dtype) or len(a.args) != len(b.args):
            return a, "path", None, None
        shape, other = a.shape, b.shape  # a 0-d or 1-d shape of ints decided inline (types
        #   first: a size known at replay, a Symbol, is never compared by its own ==)
        plain = type(shape) is tuple and type(other) is tuple and len(shape) == len(other) \
            and (not shape or (len(shape) == 1 and type(shape[0]) is int
                               and type(other[0]) is int and shape[0] == other[0]))
        if not plain and not _same_shape(shape, other):
            return a, "path", None, None
        for x, y in zip(a.args, b.args):
            kind = type(x)
            if kind is Node:
                if type(y) is not Node or x.index != y.index:
                    return a, "path", None, None
            elif type(y) is Node:
                return a, "path", None, None
            elif not (kind is float and type(y) is float and x == y and x != 0.0) \
                    and not same(x, y):  # (a nonzero float equal to another is the same)
                return a, "value", x, y
        params, others = a.params, b.params
        if (params or others) and not _same_plain_item(params, others) \
                and not same(params, others):
            if a.kind == "guard":
                return a, "path", None, None
            return a, "value", a.params, b.params
        if a.kind == "constant" and not _same_constant(one, two, a.index):
            return a, "value", one.constant_values[a.index], two.constant_values[a.index]
    if len(one.nodes) != len(two.nodes):
        shorter = min(len(one.nodes), len(two.nodes))
        return one.nodes[min(shorter, len(one.nodes) - 1)], "path", None, None
    return None


def _same_plain_item(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are dicts of one item each, the same ``str`` key and values of
    one exact kind that are equal (``{"state": 2}``, each state's output node): :func:`same`'s
    answer for them, decided without its recursion (``False`` sends any other pair to it;
    the types are compared first: ``{"k": True}`` is not ``{"k": 1}``)."""
    if type(a) is not dict or type(b) is not dict or len(a) != 1 or len(b) != 1:
        return False
    (key, value), = a.items()
    (other_key, other), = b.items()
    kind = type(value)
    return type(key) is str and type(other_key) is str and key == other_key \
        and kind in _EXACT and type(other) is kind and value == other

def _same_shape(a: Any, b: Any) -> bool:
    """:func:`same` of two shapes, ints compared inline."""
    if type(a) is not tuple or type(b) is not tuple or len(a) != len(b):
        return same(a, b)
    for x, y in zip(a, b):
        if type(x) is int and type(y) is int:
            if x != y:
                return False
        elif not same(x, y):
            return False
    return True


def _same_constant(one: Graph, two: Graph, index: int) -> bool:
    kept = one.constant_fingerprints.get(index)
    if kept is not None:
        return kept == two.constant_fingerprints.get(index)
    a, b = one.constant_values[index], two.constant_values[index]
    return type(a) is type(b) and same_bits(np.asarray(a), np.asarray(b))


def shown(value: Any) -> str:
    """A literal or constant, short, for a message."""
    if isinstance(value, np.ndarray):
        text = np.array2string(value, threshold=6, precision=6)
        return shorten(f"{text} ({value.dtype}{list(value.shape)})", 60)
    return shorten(repr(value), 60)


# --- the refusal, recorded on the first graph -----------------------------------------------

def refuse(graph: Graph, node: Node, call: str, operand: str, reason: str,
           array: str = "", source: Any = None) -> CaptureViolation:
    """Record an ``unsupported_op`` violation at ``node``'s line (or ``source``) on the
    finished ``graph`` (its message from :data:`capviz.core.violations.SITUATIONS`, quoting
    that line) and return its error; the graph is no longer complete."""
    source = node.source if source is None else source
    text = line_code(linecache.getline(source[0], source[1])) if source else ""
    code = UserCode("other", shorten(text), {"array": array or "a"})
    message = explain(Failure("unsupported_op", call, operand, source, code, None, reason))
    params = {"level": "error", "call": call, "message": message}
    mark = Node(len(graph.nodes), "violation", "unsupported_op", (), params, None, None, source,
                node.scope)
    graph.nodes.append(mark)
    record = Violation("unsupported_op", "error", message, call, source, mark.index)
    graph.violation_records.append(record)
    graph.rebuilt()
    err = make_error(record, graph)
    graph.error = err
    graph.complete = False
    return err


def difference(graph: Graph, second: Graph | None, others: OtherValues,
               written: list[tuple[Node, np.ndarray]], failure: Exception | None,
               grown: list[str] = (), inside: list[str] = ()) -> CaptureViolation | None:
    """What the second capture (``second``, its graph, partial when it raised ``failure``)
    shows of the first (``graph``), refused on ``graph``: an outside array NumPy wrote, a
    path chosen from a state's values (or from ``grown``, the walked lists and dicts the
    first run grew: :func:`grown`), a value computed from a state, a state NumPy wrote
    before the capture's first write to it, a NumPy read of an ndarray the call made and
    dropped (``inside``: their names) when no outside array is a state; ``None`` when the two
    captures agree."""
    # the names and fixes the messages quote, computed only for a refusal (each reads the
    # graph after every state: on every capture they made a 100-state step's first capture
    # 8.8x the functional program's, the hostile review 4's finding 14)
    exprs = _Lazy(lambda: state_fixes.expressions(graph, [node for node, _ in others.states]))
    states = _Lazy(lambda: state_fixes.listed([
        node.name or next(iter(state_fixes.expressions(graph, [node])), "an outside ndarray")
        for node, _ in others.states]))
    hold = _Lazy(lambda: f"{states} {'holds' if len(others.states) == 1 else 'hold'} "
                         "other values")
    if written:  # (values read after a state's write come from capviz's fills: not shown)
        node, _made = written[0]
        name = node.name or "an outside ndarray"
        return refuse(graph, node, WRITTEN, name, (
            f"a second capture, with {hold}, wrote other values into it: NumPy computed them "
            f"from {states}, and the capture put them back; "
            f"{_reads_fix(node.source, exprs.value)}"),
            array=name)
    if second is None:
        raise failure  # the second scope did not even open: nothing was captured
    found = first_difference(graph, second)
    while failure is None and found is not None and _copy_read(graph, second, others, found):
        found = first_difference(graph, second)  # (a copy of a state: a read of it, go on)
    plain = _plain_write(graph, others, failure)
    if plain is not None:  # NumPy's write after the capture's, which the first's fill hid
        return plain
    if inside and not others.states and (failure is not None or found is not None):
        node = found[0] if found is not None else graph.nodes[-1]
        buffers = state_fixes.listed(list(dict.fromkeys(inside)))
        return refuse(graph, node, MADE, buffers, (
            f"{buffers} was made by a spelling capviz does not make a tensor: np.array of a "
            "list, np.tile, np.fromiter, a helper's bound zeros...; make "
            f"{inside[0]} with np.zeros, np.empty, np.ones or np.full in the captured code (a "
            "tensor the capture records whole)"), array=buffers,
            source=raised_at(failure) if failure is not None else None)
    if failure is not None:
        node = found[0] if found is not None else graph.nodes[-1]
        text = str(failure).splitlines()[0] if str(failure) else ""
        raised = f"{type(failure).__name__}: {shorten(text, 120)}" if text else \
            type(failure).__name__
        return refuse(graph, node, FAILED, str(states), raised, source=raised_at(failure))
    if found is not None:
        node, what, one, two = found
        if what == "path" and grown:  # (the second run saw another list: either may choose)
            return refuse(graph, node, PYTHON_PATH, state_fixes.listed(list(grown)), (
                f"after the first run, or when {hold}, the capture records another program "
                "from here on"))
        if what == "path":
            return refuse(graph, node, PATH, str(states), (
                f"when {hold} the capture records another program from here on"))
        if node.kind == "constant" and _only_returned(graph, node):  # fn's return line
            return refuse(graph, node, RETURNED, node.name or "out",
                          f"it depends on what {states} {_holds(others)}; "
                          f"{_reads_fix(node.source, exprs.value)}", array=str(states))
        named = node.kind == "constant" and node.name and node.name != "out"
        operand = f"`{node.name}`" if named else "a value"
        if isinstance(one, dict) and isinstance(two, dict):  # parameters: the one that differs
            key = next(k for k in one if not same(one[k], two.get(k)))
            one, two = one[key], two.get(key)
            operand = f"the {key}"
        if type(one) in _NUMBERS:  # maybe from a Python value the call changes
            operand = operand if operand != "a value" else "the number this line uses"
            return refuse(graph, node, CHANGES, operand, (
                f"it differs when the function runs a second time, with {states} holding "
                "other values"))
        return refuse(graph, node, COMPUTED, operand, (
            f"it depends on what {states} {_holds(others)}; "
            f"{_reads_fix(node.source, exprs.value, graph)}"))
    met = [node for (node, root), planted in zip(others.states, others.planted)
           if others.met and (start := others.met.get(id(root))) is not None
           and not same_bits(start, planted)]
    if met:  # (the fix covers each such write: self.cache_k's and self.cache_v's shifts)
        node = met[0]
        line, fix = state_fixes.numpy_write_fix(graph, node, met[1:])
        said = next(iter(state_fixes.expressions(graph, [node])), "") if line else ""
        name = node.name or said or "an outside ndarray"
        if said.startswith("self.") and name.endswith(said[4:]):  # self.cache_k in the
            name = said                                         # method: program.fn.cache_k
        return refuse(graph, node, WRITTEN, name, (
            f"NumPy wrote {name} before the capture's first write to it, so the graph "
            "starts from the value NumPy made (the first capture's write stays in it); "
            f"{fix}"), array=name, source=line)
    return None


def _plain_write(graph: Graph, others: OtherValues, failure: Exception | None
                 ) -> CaptureViolation | None:
    """Where the second capture was refused for NumPy's own write into a state after the
    capture's (``np.maximum(self.W, 0.0, out=self.W)``: the first capture's positive fill
    came out of it unchanged, the second's did not), that refusal on ``graph``, at the line
    that writes (``None`` otherwise)."""
    records = getattr(getattr(failure, "graph", None), "violation_records", None)
    if not records or records[-1].call != PLAIN:
        return None
    for node, _ in others.states:
        line, _text, reason = state_fixes.plain_write(graph, node)
        if line is not None and line[:2] == tuple(records[-1].source or ())[:2]:
            name = node.name or next(iter(state_fixes.expressions(graph, [node])), "a")
            return refuse(graph, node, PLAIN, name, reason, array=name, source=line)
    return None


class _Lazy:
    """A value computed when first asked for (``.value``, or ``str()`` of it)."""

    __slots__ = ("_make", "_value")

    def __init__(self, make: Any) -> None:
        self._make = make
        self._value: Any = _UNSET

    @property
    def value(self) -> Any:
        if self._value is _UNSET:
            self._value = self._make()
        return self._value

    def __str__(self) -> str:
        return str(self.value)


_UNSET = object()


def _copy_read(one: Graph, two: Graph, others: OtherValues,
               found: tuple[Node, str, Any, Any]) -> bool:
    """Whether the differing constant of ``found`` is a whole copy NumPy made of a state
    before the capture wrote it (``q = self.q.copy()``: ``ndarray.copy`` reaches no hook;
    review 3, finding 29): bit for bit the state's start value in the first capture and its
    planted one in the second, two sets of values of other signs, scales and orders. It is
    then what a read of the state when the call starts gives, and becomes one in both graphs:
    a view state of the whole array, which a replay reads from the live array when it starts
    (as a view read before the first write, :mod:`capviz.trace.state`)."""
    node, what, first, second = found
    if what != "value" or node.kind != "constant" or type(first) is not np.ndarray \
            or type(second) is not np.ndarray:
        return False
    for (state, root), saved, planted in zip(others.states, others.saved, others.planted):
        if first.dtype != saved.dtype or first.shape != saved.shape \
                or not same_bits(first, saved) or not same_bits(second, planted):
            continue
        other = next((index for index, ref in two.state_targets.items()
                      if isinstance(ref, weakref.ref) and ref() is root
                      and "of" not in two.nodes[index].params), None)
        if other is None or other != state.index:
            return False
        _read_at_start(one, node, state.index)
        _read_at_start(two, two.nodes[node.index], other)
        return True
    return False


def _read_at_start(graph: Graph, node: Node, state: int) -> None:
    """Constant ``node`` of ``graph`` made a view state of the whole array of state ``state``
    (node index)."""
    value = graph.constant_values.pop(node.index)
    graph.constant_origins.pop(node.index, None)
    graph.constant_fingerprints.pop(node.index, None)
    node.kind = "state"
    node.params = {"of": state, "index": (), "axes": None}
    graph.state_values[node.index] = value
    graph.state_targets[node.index] = graph.state_targets[state]
    graph.rebuilt()


def _holds(others: OtherValues) -> str:
    return "holds" if len(others.states) == 1 else "hold"


def _reads_fix(source: Any, exprs: list[str], graph: Graph | None = None) -> str:
    """The fix for a value NumPy computed from the states the user's code names ``exprs``:
    their reads wrapped in ``cv.constant`` on the user's line (:mod:`capviz.trace.
    state_fixes`), or on the line of the captured function that passes them to the helper
    whose line it is (``graph``'s), or a general form of it."""
    made = state_fixes.fix_for_reads(source, exprs)
    if made is None and graph is not None:
        made = state_fixes.fix_at_call(graph, source, exprs)
    if made is not None:
        return f"{made}: {state_fixes.constant_note(exprs, made)}."
    first = exprs[0] if exprs else "a"
    return (f"write each read of the written array as cv.constant({first}) (the value the "
            "capture records for it, before and after its write; outside a capture the array "
            "itself), or pass the value as an input.")


def _only_returned(graph: Graph, node: Node) -> bool:
    """Whether constant ``node`` is a value ``fn`` returned as it is (only outputs use it)."""
    users = graph.users().get(node.index, [])
    return bool(users) and all(user.kind == "output" for user in users)


def raised_at(error: BaseException) -> Any:
    """``(file, line, function)`` of the innermost user frame ``error`` passed through."""
    found = None
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_user_file(code.co_filename):
            found = (display_file(code.co_filename), tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return found
