"""The graph model: one :class:`Node` type with a fixed set of kinds, and the :class:`Graph` data.

A graph is a list of nodes in program order. Each node's ``index`` is its position in that list,
its id in ``graph.nx`` and its ``order`` attribute, so ids never depend on ``id()``
and the same program always gives the same graph.

Node kinds:

``input``      a declared graph input (``name``, ``shape``, ``dtype``).
``constant``   a recorded value (an ndarray met during capture, or ``scope.constant``).
``op``         one op of :mod:`capviz.ops.table`; ``args`` holds operand nodes and static literals.
``output``     a declared graph output (``name``); its one arg is the node it returns.
``violation``  something the capture could not represent (see :class:`Violation`).
``guard``      a value the capture read on its example inputs (``bool(t)``, ``int(t)``...): its
               ``op`` is the read, its one arg the tensor read, ``params["value"]`` what it
               returned; every replay checks it (:mod:`capviz.core.guards`).
``state``      something from outside the capture that the captured code writes: an ndarray
               (an attribute, a global, a container item, an argument: ``name`` says which) or
               a random generator drawn from. A replay reads its live value when it starts;
               the ``output`` node whose ``params["state"]`` is the state's index holds the
               value a replay writes back (:mod:`capviz.replay.state`). A *view state*
               (``params["of"]``: a state's index; ``"index"``, ``"axes"``: the view) is a view
               of that array read before the capture first wrote it: read from the live array
               when a replay starts, never written back, no output. A *rebind state*
               (``params["rebind"]``) is a name the call binds a new array to: a replay binds
               its output there (:mod:`capviz.trace.rebinding`).

An ``output`` node with ``params["effect"]`` (``"append"``, ``"refill"``, ``"set"`` with
``"key"``) is a value the call logs into a container of the user's (``self.losses.append(loss)``):
a replay logs it there after the graph (:mod:`capviz.trace.effects`); it is no output of the
function. A Python value the call logs (``self.log.append("step")``, ``x.shape``) is a
:class:`LoggedValue` of :attr:`Graph.logged_values`, logged by each replay in the same order;
one holding tensors (``{"loss": loss}``) holds a :class:`LoggedPart` for each, an ``output``
node with ``params["effect"] == "part"``, whose replayed value a replay puts there.

A shape may hold :class:`capviz.core.symbols.Symbol` sizes (``n0``): the length of an axis that
depends on the data, listed in :attr:`Graph.symbols`.

This module holds data only. Printing (:mod:`capviz.io.printing`), saving (:mod:`capviz.io.files`),
replay (:mod:`capviz.replay`) and drawing (:mod:`capviz.render`) live in their own packages above
it; :class:`capviz.CapturedGraph` (``capviz/graph.py``) adds the methods that reach them.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import weakref
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from capviz.core.errors import ReplayError, UnsupportedOperationError
from capviz.core.python_guards import changed_sources, stale_source_error
from capviz.core.references import (
    changed_constants,
    describe_constant,
    edited_copies,
    edited_copy_error,
    fingerprint,
    source_view,
    stale_weight_error,
    take_rebound,
    view_fingerprint,
)
from capviz.core.source import Source, format_source, outside_line

KINDS = ("input", "constant", "op", "output", "violation", "guard", "state")


_DTYPE_NAMES: dict[np.dtype, str] = {}


def dtype_name(dtype: np.dtype | None) -> str | None:
    """``np.dtype("float32")`` -> ``"float32"`` (cached: ``dtype.name`` is slow)."""
    if dtype is None:
        return None
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = np.dtype(dtype).name
    return name


class Node:
    """One node of a captured graph.

    Attributes:
        index: position in program order; also the node id in ``graph.nx``.
        kind: one of ``input``, ``constant``, ``op``, ``output``, ``violation``, ``guard``.
        op: the op name for ``op`` nodes, the violation kind for ``violation`` nodes, the read
            (``bool()``) for ``guard`` nodes.
        args: operands: :class:`Node` objects (tensor operands, one edge each) and static literals.
        params: keyword parameters of the op (static values).
        shape: the output shape (``None`` for multi-output ops and for violations/guards); a
            data-dependent size is a :class:`capviz.core.symbols.Symbol`.
        dtype: the output dtype as a ``numpy.dtype`` (or ``None``).
        source: ``(file, line, function)`` of the user's code that made the node.
        scope: the name-scope path (``"block1/attn"``), ``""`` at top level.
        name: the user's name for inputs, outputs and named constants.
    """

    __slots__ = (
        "__weakref__",
        "args",
        "dtype",
        "index",
        "kind",
        "name",
        "op",
        "params",
        "scope",
        "shape",
        "source",
    )

    def __init__(self, index: int, kind: str, op: str | None, args: tuple, params: dict,
                 shape: tuple | None, dtype: np.dtype | None, source: Source | None,
                 scope: str = "", name: str | None = None) -> None:
        self.index = index
        self.kind = kind
        self.op = op
        self.args = args
        self.params = params
        self.shape = shape
        self.dtype = dtype
        self.source = source
        self.scope = scope
        self.name = name

    @property
    def operands(self) -> list[tuple[int, Node]]:
        """``(argument position, node)`` for each tensor operand."""
        return [(i, a) for i, a in enumerate(self.args) if isinstance(a, Node)]

    @property
    def location(self) -> str | None:
        """The user's source as ``file:line in function``."""
        return format_source(self.source)

    def __repr__(self) -> str:
        what = self.op if self.kind in ("op", "violation") else self.name
        return f"<Node %{self.index} {self.kind} {what}>"

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """A node is no array: NumPy meets one only when code outside capviz read a capture
        tensor's ``_data`` as if it were an ndarray's, as ``numpy.ma`` does for
        ``masked_array + t``. Refused by name, at the user's line."""
        raise UnsupportedOperationError(
            f"a capture tensor ({self.dtype}{list(self.shape or ())}) met code that reads its "
            f"internals as an ndarray{outside_line()}: numpy.ma does this for a masked array "
            "combined with a tensor (masked_array + t), and a masked array cannot be recorded "
            "(its masked elements are left out of results). Pass plain arrays: "
            "m.filled(value) + t, or np.where(m.mask, fill, m.data) and the mask as a "
            "boolean array")


def same_value(a: Any, b: Any, depth: int = 8) -> bool:
    """Whether ``a`` and ``b`` (nodes or literals) hold the same value whatever the inputs: the
    same node, or the same op with the same params on operands that are (``y > 0`` written
    twice; two random ops differ by their ``draw`` param). Literals compare by type and value;
    ``depth`` bounds the walk."""
    if a is b:
        return True
    if not isinstance(a, Node) or not isinstance(b, Node):
        return type(a) is type(b) and not isinstance(a, Node) and a == b
    if depth == 0 or a.kind != "op" or b.kind != "op" or a.op != b.op:
        return False
    if a.params != b.params or len(a.args) != len(b.args):
        return False
    return all(same_value(x, y, depth - 1) for x, y in zip(a.args, b.args))


@dataclasses.dataclass
class Violation:
    """A thing the capture could not represent faithfully.

    Attributes:
        kind: ``seed``, ``frozen_random``, ``data_read``, ``unsupported_op`` or
            ``unseeded_random``.
        level: ``error`` or ``warning``.
        message: the full message, with the fixes.
        call: the API that caused it (``np.random.seed``, ``float()``...).
        source: ``(file, line, function)`` of the user's code.
        order: the index of its node in the graph.
    """

    kind: str
    level: str
    message: str
    call: str
    source: Source | None
    order: int

    @property
    def location(self) -> str | None:
        """The user's source as ``file:line in function``."""
        return format_source(self.source)


VIOLATION_LEVELS = {"seed": "error", "frozen_random": "error", "data_read": "error",
                    "unsupported_op": "error", "unseeded_random": "warning"}


class _Noted(NamedTuple):
    """A node's fields as :func:`_fields` noted them (:attr:`Graph.captured_nodes`)."""

    node: Node
    kind: str
    op: Any
    args: tuple
    params: dict
    items: tuple  # its params' items
    shape: Any
    dtype: Any
    name: Any
    held: tuple  # (value, a copy of it) of each list, dict, set, tuple or ndarray it holds


def _fields(node: Node) -> _Noted:
    """What an edit of ``node`` in place changes: its fields, its params' items, and a copy of
    each list, dict, set or ndarray its args and params hold (edited in place, it stays the
    same object: ``node.params["pad_width"].reverse()``, review 11, finding 13)."""
    held = [v for v in (*node.args, *node.params.values()) if isinstance(v, _MUTABLE)]
    return _Noted(node, node.kind, node.op, node.args, node.params, tuple(node.params.items()),
                  node.shape, node.dtype, node.name, tuple((v, copy.deepcopy(v)) for v in held))


_MUTABLE = (list, dict, set, tuple, np.ndarray)


def _same_value(now: Any, was: Any) -> bool:
    """Whether ``now`` holds what its copy ``was`` holds (arrays bit for bit)."""
    if type(now) is not type(was):
        return False
    if isinstance(now, np.ndarray):
        return now.shape == was.shape and now.dtype == was.dtype and \
            now.tobytes() == was.tobytes()
    if isinstance(now, (list, tuple)):
        return len(now) == len(was) and all(map(_same_value, now, was))
    if isinstance(now, dict):
        return now.keys() == was.keys() and all(_same_value(now[k], was[k]) for k in now)
    try:
        return bool(now == was)
    except Exception:  # (a value that compares by no truth value)
        return False


def _same_fields(node: Node, was: _Noted) -> bool:
    """Whether ``node`` holds the fields :func:`_fields` noted (``was``)."""
    if node is not was.node or node.args is not was.args or node.params is not was.params:
        return False  # (another node there, its args or params replaced)
    try:
        if (node.kind, node.op, node.shape, node.dtype, node.name) != (
                was.kind, was.op, was.shape, was.dtype, was.name):
            return False
    except Exception:  # (a shape's size that compares by no value)
        return False
    items = tuple(node.params.items())
    return len(items) == len(was.items) and all(k == j and v is w for (k, v), (j, w) in
                                                zip(items, was.items)) and \
        all(_same_value(v, kept) for v, kept in was.held)


class ConstantValues(dict):
    """The constants' values by node index; replacing or removing one moves the graph's
    ``version``, so a compiled replay never runs with an old value."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self._graph = weakref.ref(graph)  # a graph is freed without the cycle collector

    def _changed(self, result: Any = None) -> Any:
        graph = self._graph()
        if graph is not None:
            graph.version += 1
        return result

    def _forget(self, keys: Any) -> None:
        """A constant replaced or removed is no longer the user's array kept by reference."""
        graph = self._graph()
        if graph is not None and graph.constant_fingerprints:
            for key in list(keys):
                graph.constant_fingerprints.pop(key, None)
                graph.constant_sources.pop(key, None)
                graph.copy_fingerprints.pop(key, None)
                graph.constant_places.pop(key, None)

    def __setitem__(self, key: int, value: Any) -> None:
        self._forget((key,))
        super().__setitem__(key, value)
        self._changed()

    def __delitem__(self, key: int) -> None:
        self._forget((key,))
        super().__delitem__(key)
        self._changed()

    def update(self, *args: Any, **kwargs: Any) -> None:
        new = dict(*args, **kwargs)
        self._forget(new)
        self._changed(super().update(new))

    def pop(self, *args: Any) -> Any:
        self._forget(args[:1])
        return self._changed(super().pop(*args))

    def popitem(self) -> tuple:
        item = super().popitem()
        self._forget(item[:1])
        return self._changed(item)

    def setdefault(self, key: int, default: Any = None) -> Any:
        return self._changed(super().setdefault(key, default))

    def clear(self) -> None:
        self._forget(list(self))
        self._changed(super().clear())

    def __ior__(self, other: Any) -> ConstantValues:
        self.update(other)
        return self


@dataclasses.dataclass(frozen=True)
class LoggedPart:
    """Where a tensor's replayed value goes in a tuple, list or dict the call logs
    (``history.append({"loss": loss})``, ``(step, loss)``): the index of its ``output`` node
    (``params["effect"] == "part"``, logged only inside the :class:`LoggedValue` that holds
    this)."""

    index: int

    def __repr__(self) -> str:
        return f"%{self.index}"


@dataclasses.dataclass
class LoggedValue:
    """A Python value (``None``, a bool, number or str, a tuple, list or dict of them) the call
    logs into a container of the user's, the same on every call: ``kind`` ``"append"``,
    ``"refill"`` or ``"set"`` (at ``key``), ``order`` the index of the first effect output
    logged after it (a replay logs it before that one), ``name`` the container's label,
    ``path`` its ``(anchor, steps)`` from what the user holds (``None`` once loaded)."""

    order: int
    kind: str
    key: Any
    value: Any
    name: str
    source: Source | None
    path: Any = None


class Graph:
    """A captured program's data: nodes in program order, constants, boundaries and violations.

    :class:`capviz.CapturedGraph` is this class with the methods that print, save, replay and
    draw it (``capviz/graph.py``); code below that face takes a :class:`Graph`.

    Attributes:
        nodes: every node, in program order.
        constant_values: the recorded value of each constant node, by node index.
        constant_origins: for a constant recorded from a user's ndarray, a weak reference to
            that array's base, by node index (a replay refuses an input that shares its memory
            when the graph writes into that input; not saved with the graph).
        constant_fingerprints: for a constant kept by reference (the user's array itself, not
            a copy: :mod:`capviz.core.references`), the fingerprint of its value when recorded
            or last accepted by :meth:`changed`, by node index; a replay refuses a constant
            whose array changed since (not saved: a loaded graph owns its arrays).
        constant_sources: for a constant copied (under ``REFERENCE_BYTES``: a bias, a gain, a
            0-d learning rate) from a user's ndarray that outlives the call, that array (the
            view the code read), whose fingerprint :attr:`constant_fingerprints` holds: a
            replay refuses it changed as it refuses a constant kept by reference, and
            :meth:`changed` copies its new values in (hostile review 9, finding 3: the copy
            replayed silently; not saved).
        copy_fingerprints: the fingerprint of each such copy as the graph holds it (when
            recorded or last copied in by :meth:`changed`): an in-place edit of the graph's
            copy is refused by :meth:`changed`, which would copy the user's array over it
            (hostile review 10, finding 10; not saved).
        constant_places: for a checked constant (kept by reference, or a checked copy) read
            from a path the user holds (``self.b``, ``params["w"]``), ``(anchor, steps, a weak
            reference to the array)``: a replay refuses the path holding another array (the
            user rebound it: ``self.b = self.b - lr * g``, hostile review 9, finding 19), and
            :meth:`changed` takes the array it holds now (not saved).
        rng_seed: the seed random ops replay with by default (``None``: unknown, fresh entropy).
        marks: nodes flagged by the debugger (``{"nonfinite": index, "diverged": index}``).
        stats: per-node statistics (``graph.compute_stats``), shown in tooltips.
        complete: ``False`` while recording and for the partial graph of a failed capture.
        error: the error that ended a failed capture, if any.
        version: moves on every change a compiled replay depends on (a node added through
            :meth:`add`, a constant set or removed); call :meth:`changed` after editing a
            node or a constant's array in place.
        replay_cache: compiled replays of this graph by backend name, each rebuilt when
            :attr:`version` moved (:mod:`capviz.replay.run`).
        symbols: the data-dependent sizes its shapes hold, by name (``{"n0": Symbol}``).
    """

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.version = 0
        self.constant_values: dict[int, Any] = ConstantValues(self)
        self.constant_origins: dict[int, Any] = {}
        self.constant_fingerprints: dict[int, bytes] = {}
        self.constant_sources: dict[int, Any] = {}
        self.copy_fingerprints: dict[int, bytes] = {}
        self.scope_form: str | None = None  # the scope form's block (``the with block at
        #   cell.py:7``): its graph.changed() cannot capture it again (not saved)
        self.captured_nodes: tuple | None = None  # each node's fields as captured, where
        #   graph.changed() may capture again: an edit it would drop is refused (not saved)
        self.constant_places: dict[int, Any] = {}
        self.violation_records: list[Violation] = []
        self.rng_seed: int | None = None
        self.marks: dict[str, int] = {}
        self.stats: dict[int, dict[str, float]] = {}
        self.complete = False
        self.error: BaseException | None = None
        self.replay_cache: dict[str, Any] = {}
        self.symbols: dict[str, Any] = {}
        self.state_values: dict[int, Any] = {}  # a state array's value when first written
        self.state_targets: dict[int, Any] = {}  # the live object of each state (a weak
        #                                          reference for an array; not saved)
        self.state_places: dict[int, Any] = {}  # where the user held it: (anchor, steps),
        #   anchor a module's globals or a weak reference, steps ((is_attribute, key), ...);
        #   a replay refuses a path that holds another object now (not saved)
        self.effect_places: dict[int, Any] = {}  # an effect output's container: (anchor,
        #   steps) from what the user holds (capviz/trace/effects.py; not saved)
        self.logged_values: list[LoggedValue] = []  # Python values a replay logs (the
        #   same each call: self.log.append("step"), capviz/trace/effects.py)
        self.python_guards: list[Any] = []  # the Python values the capture read from objects
        #   that outlive the call, checked when a replay starts (capviz/core/python_guards.py)

    # --- structure ------------------------------------------------------------------------------

    def add(self, node: Node) -> Node:
        """Append a node (its ``index`` must be the next position)."""
        self.nodes.append(node)
        self.version += 1
        return node

    def rebuilt(self) -> None:
        """Say capviz edited the graph in place (nodes added or removed at a capture's end):
        compiled replays are rebuilt. Unlike :meth:`changed`, which the user calls, it
        accepts no new value of a constant kept by reference: a change of the user's array
        since the capture read it stays refused."""
        self.version += 1

    def changed(self) -> None:
        """Say the graph was edited in place (a node's fields, a constant's array), or that the
        user's arrays it read changed: compiled replays are rebuilt at their next call.

        Where an array the graph's constants were read from changed (a weight kept by
        reference, a small array's copy, in place or bound anew at its path), or an array the
        capture's NumPy read outside the graph (``np.linalg.norm(self.W)``, a guard holding
        its fingerprint), the graph is captured again from the live objects (:attr:`recapture`,
        set by ``cv.capture``; lead rulings 38 10:51, 39 14:10): the function may have read
        such an array through NumPy too, and no check tells which it did. A node the user
        edited in place since the capture, which the new capture would drop, is refused
        (:class:`capviz.ReplayError`); so is a copy the user edited in place in the graph
        (``graph.constant_values[i][...] = 5.0``: hostile review 10, finding 10), whose values
        the array it was copied from would replace (``graph.constant_values[i] =
        graph.constant_values[i]`` keeps them as the graph's own). Where the graph holds no
        function (the scope form, a loaded graph) the change is refused, saying to capture
        again; a graph made by hand takes the arrays' new values."""
        edited = edited_copies(self)
        if edited:
            raise edited_copy_error(self, edited[0])
        if self.python_guards:
            stale = changed_sources(self.python_guards)
            if stale:
                again = getattr(self, "recapture", None)
                if again is None:
                    raise stale_source_error(stale[0])
                self._again(again, f"array {stale[0].label} changed, and the graph holds "
                                   "values NumPy computed from it outside the graph")
                return
        if self.constant_fingerprints:
            stale = changed_constants(self)
            if stale:  # (fn may have read the array through NumPy outside the graph too:
                again = getattr(self, "recapture", None)  # x @ self.W / norm(self.W),
                if again is not None:                      # ruling 39 14:10: capture again)
                    self._again(again, f"constant {describe_constant(self, stale[0])} changed, "
                                       "and the function may also have read its array "
                                       "through NumPy outside the graph")
                    return
                if self.scope_form is not None:
                    raise stale_weight_error(self, stale[0], self.scope_form)
            take_rebound(self)  # (an array the user bound at a constant's path since)
            values, sources = self.constant_values, self.constant_sources
            for i, source in list(sources.items()):  # (its new values, with the copy's layout)
                if i not in self.constant_fingerprints:  # (noted, not checked: see
                    continue  # references.guard_copies)
                live = source_view(source)
                if live is None:  # (the user's array is gone: the copy stays, unchecked)
                    del sources[i]
                    self.constant_fingerprints.pop(i, None)
                    self.copy_fingerprints.pop(i, None)
                    continue
                dict.__setitem__(values, i, np.array(live, order="K", copy=True))
                self.copy_fingerprints[i] = view_fingerprint(values[i])
            self.constant_fingerprints = {
                i: view_fingerprint(source_view(sources[i])) if i in sources else
                fingerprint(values[i]) for i in self.constant_fingerprints}
        self.version += 1

    def remember_nodes(self) -> None:
        """Note each node's fields as captured (:attr:`captured_nodes`)."""
        self.captured_nodes = tuple(_fields(node) for node in self.nodes)

    def _again(self, again: Any, why: str) -> None:
        """Capture the function again (``again``: :attr:`recapture`) and become the new
        capture; refused where the user edited a node in place since the capture, an edit the
        new capture would drop."""
        kept = self.captured_nodes
        if kept is not None:
            edited = next((node for node, was in itertools.zip_longest(self.nodes, kept)
                           if node is None or was is None or not _same_fields(node, was)),
                          False)
            if edited is not False:
                where = "the graph's nodes" if edited is None else \
                    f"node %{edited.index} ({edited.op or edited.kind})"
                err = ReplayError(
                    f"graph.changed() must capture the function again ({why}), which would "
                    f"drop your edit of {where} in the graph.\nFix: capture the function "
                    "again after the change, and edit the new graph")
                err.node = edited
                raise err
        self._take(again())

    def _take(self, new: Graph) -> None:
        """Become ``new`` (a capture of the same function again), keeping this object, which
        the user holds, and moving :attr:`version` past both."""
        version = max(self.version, new.version) + 1
        values = new.constant_values
        self.__dict__.update(new.__dict__)
        values._graph = weakref.ref(self)
        self.version = version

    def _of_kind(self, kind: str) -> list[Node]:
        return [n for n in self.nodes if n.kind == kind]

    @property
    def input_nodes(self) -> list[Node]:
        """Input nodes in declaration order."""
        return self._of_kind("input")

    @property
    def output_nodes(self) -> list[Node]:
        """Output nodes in declaration order (the states' final values are not outputs:
        :attr:`state_outputs`)."""
        return [n for n in self.nodes if n.kind == "output" and "state" not in n.params
                and "effect" not in n.params]

    @property
    def state_nodes(self) -> list[Node]:
        """State nodes (see the module docstring), in program order."""
        return self._of_kind("state")

    @property
    def state_outputs(self) -> list[Node]:
        """The output nodes of the states' final values, in the order of :attr:`state_nodes`
        (``params["state"]`` is the state's index)."""
        return sorted((n for n in self.nodes if n.kind == "output" and "state" in n.params),
                      key=lambda n: n.params["state"])

    @property
    def effect_outputs(self) -> list[Node]:
        """The output nodes of values a replay logs into the user's containers after the
        graph (``params["effect"]``: capviz/trace/effects.py), in program order."""
        return [n for n in self.nodes if n.kind == "output" and "effect" in n.params]

    @property
    def inputs(self) -> list[str]:
        """Input names in declaration order."""
        return [n.name for n in self.input_nodes]

    @property
    def outputs(self) -> list[str]:
        """Output names in declaration order."""
        return [n.name for n in self.output_nodes]

    @property
    def ops(self) -> list[Node]:
        """Op nodes in program order."""
        return self._of_kind("op")

    @property
    def guards(self) -> list[Node]:
        """Guard nodes in program order."""
        return self._of_kind("guard")

    @property
    def constants(self) -> list[Node]:
        """Constant nodes in program order."""
        return self._of_kind("constant")

    @property
    def violations(self) -> list[Violation]:
        """Violations in program order."""
        return list(self.violation_records)

    def node(self, ref: int | str | Node) -> Node:
        """Find a node by index, by input/output/constant name, or return the node itself."""
        if isinstance(ref, Node):
            return ref
        if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool):
            if 0 <= ref < len(self.nodes):
                return self.nodes[ref]
            raise KeyError(f"graph has no node %{ref} (it has {len(self.nodes)} nodes)")
        for n in self.nodes:
            if n.name == ref and n.kind in ("input", "output", "constant", "state"):
                return n
        raise KeyError(f"graph has no input, output, constant or state named {ref!r}")

    def users(self) -> dict[int, list[Node]]:
        """For each node index, the nodes that take it as an operand."""
        out: dict[int, list[Node]] = {}
        for n in self.nodes:
            for _, a in n.operands:
                out.setdefault(a.index, []).append(n)
        return out

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)
