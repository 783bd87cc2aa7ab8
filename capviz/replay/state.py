"""Replaying a graph with states: live values in, new values written back.

A ``state`` node (:mod:`capviz.core.ir`) is something from outside the capture that the
captured code writes: an ndarray, or a random generator. A replay reads each state's live
object when it starts (the compiled program takes the states' values after the inputs) and,
with ``state="write"`` (the default), writes each state's final value back into the live array
once every op has run, as calling the function eagerly would: two replays advance the states
twice, like two calls. ``state="return"`` leaves them as they are and returns the new values
(``result.states``, by state name); a generator is then drawn from a copy.

The live objects are those the capture met (held weakly for arrays), or ``states={name:
value}`` given to the replay (a loaded graph has no live objects: it needs them). A backend
whose arrays are not written in place (Dask, JAX) is refused by name.

On NumPy, a state whose last write is a ufunc of its own dtype that nothing after it reads
around is computed straight into the live array (:func:`in_place`, a second program kept on
the first: ``Program(graph, backend, into=...)``), not copied back: a replay failing at a later
node leaves it written, as an eager call failing there would.
"""

from __future__ import annotations

import copy
import operator
import random
import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.random

from capviz import ops
from capviz.backends.host import subclass_fix, type_name
from capviz.backends.registry import Backend
from capviz.core.errors import ReplayInputError, UnsupportedOperationError
from capviz.core.ir import Graph, LoggedPart, Node
from capviz.core.layout import layout_key
from capviz.core.python_guards import check as check_python
from capviz.core.source import format_source
from capviz.replay.plan import FRESH_OPS
from capviz.replay.program import Program

MODES = ("write", "return")
GLOBAL_GENERATORS = {"np.random": lambda: numpy.random.mtrand._rand,
                     "random": lambda: random._inst}  # type: ignore[attr-defined]
"""The process's global generators, by the state names a loaded graph gives them."""


def label(node: Node) -> str:
    """A state's name, or ``state %i`` for one the capture found no name for."""
    return node.name or f"state %{node.index}"


def check_backend(graph: Graph, engine: Backend) -> None:
    """Refuse a backend that cannot write the states back, naming the first."""
    if not engine.mutable:
        node = graph.state_nodes[0]
        raise UnsupportedOperationError(
            f"the graph writes the state {label(node)} (recorded at "
            f"{format_source(node.source)}), which backend {engine.name!r} cannot write back "
            "(its arrays are not written in place); replay it with backend='numpy' or 'cupy'")


def view_of(node: Node, root: Any) -> Any:
    """The value of view state ``node`` (``params["of"]``: a view of another state's array,
    read before the capture first wrote it) in that array ``root`` (``params["reshape"]``: of
    its C-order reshape to that shape, a view of it)."""
    key, axes = node.params["index"], node.params["axes"]
    shape = node.params.get("reshape")
    if shape is not None:
        root = root.reshape(shape)
    value = root[tuple(key)] if key else root
    return value if axes is None else value.transpose(axes)


def live(graph: Graph, node: Node, given: Mapping[str, Any] | None) -> Any:
    """The live object of state ``node``: ``given[name]``, else the one the capture met (a
    view state: that view of its array's)."""
    if "of" in node.params:
        return view_of(node, live(graph, graph.nodes[node.params["of"]], given))
    if given and label(node) in given:
        value = given[label(node)]
        if "python" in node.params:  # (a kept number given: its Python type checked)
            return _number_in(node, value)
    elif "rebind" in node.params:
        value = _rebind_live(graph, node)
        if "python" in node.params:  # a Python number an object keeps (trace/kept_numbers)
            value = _number_in(node, value)
    else:
        ref = graph.state_targets.get(node.index)
        value = ref() if isinstance(ref, weakref.ref) else ref
        if type(value) is np.ndarray and value.shape == node.shape \
                and value.dtype == node.dtype:
            return value  # the usual case: the array the capture met, unchanged in kind
        if value is None and node.dtype is None and node.name in GLOBAL_GENERATORS:
            value = GLOBAL_GENERATORS[node.name]()  # a global generator: found by its name
        place = graph.state_places.get(node.index)
        if value is None and place is not None and not _held(place, None):
            raise _rebound(graph, node)  # its old array freed: the path holds another one
        if value is None:
            raise ReplayInputError(
                f"the graph writes the state {label(node)}, whose live array is gone (a loaded "
                f"graph, or the array was freed); pass it: graph.replay(inputs, "
                f"states={{{label(node)!r}: array}})")
    if node.dtype is not None:  # an array: of the captured shape and dtype
        if not isinstance(value, np.ndarray) or value.shape != node.shape \
                or value.dtype != node.dtype:
            got = f"{value.dtype}{list(value.shape)}" if isinstance(value, np.ndarray) else \
                type(value).__name__
            raise ReplayInputError(f"state {label(node)!r}: expected an ndarray "
                                   f"{node.dtype}{list(node.shape)}, got {got}")
        if given and label(node) in given:
            _check_given(graph, node, value)
    return value


def _owner(place: tuple | None) -> Any:
    """The object a place's path starts from (``None``: no place, or its object freed)."""
    anchor = None if place is None else place[0]
    return anchor() if type(anchor) is weakref.ref else anchor


def _rebind_live(graph: Graph, node: Node) -> Any:
    """The array a rebind state's place holds now (``params["rebind"]``: the captured code
    binds a new array to it each call, :mod:`capviz.trace.rebinding`)."""
    place = graph.state_places.get(node.index)
    owner = _owner(place)
    if owner is None:
        raise ReplayInputError(
            f"the graph binds a new array to {label(node)} each replay, and what held it is "
            f"gone (a loaded graph, or the object was freed); pass the array: "
            f"graph.replay(inputs, states={{{label(node)!r}: array}})")
    try:
        return _follow(owner, place[1])
    except Exception as err:
        raise ReplayInputError(
            f"the graph reads {label(node)} when a replay starts (an eager call does), and it "
            f"holds nothing now ({type(err).__name__}: {err}). Fix: bind an array to it, or "
            "capture again") from err


def _number_in(node: Node, value: Any) -> np.ndarray:
    """The 0-d array of the Python number a kept number's place holds when a replay starts;
    one of another type (an int where the capture met a float, a NumPy scalar, a bool, an
    int past int64) would compute otherwise eagerly: refused."""
    kind = node.params["python"]
    if type(value) is int and "from_int" in node.params and -2 ** 63 <= value < 2 ** 63:
        return np.array(float(value), dtype=node.dtype)  # (a meter reset to 0: every use
    #                                       makes it a float first, as Python's int + float)
    if type(value) is not (float if kind == "float" else int) or (
            kind == "int" and not -2 ** 63 <= value < 2 ** 63):
        raise ReplayInputError(
            f"{label(node)} holds {type(value).__name__} {value}, and the graph replays it as "
            f"the Python {kind} it held when captured (recorded at "
            f"{format_source(node.source)}), with that type's arithmetic. Fix: set it to "
            f"{'an' if kind == 'int' else 'a'} {kind}, or capture again")
    return np.array(value, dtype=node.dtype)


def python_value(node: Node, value: Any) -> Any:
    """``value`` (a state's new 0-d array) as the Python number eager code holds, for a kept
    number (``params["python"]``: ``float``, ``int``); other values as they are."""
    kind = node.params.get("python")
    if kind is None:
        return value
    return float(value) if kind == "float" else int(value)


def rebind(graph: Graph, node: Node, value: Any) -> None:
    """Bind ``value`` (a rebind state's new array) to the place, as the eager call binds it
    (a kept Python number as its Python type: ``float``, ``int``)."""
    value = python_value(node, value)
    anchor, steps = graph.state_places[node.index]
    owner = anchor() if type(anchor) is weakref.ref else anchor
    if owner is None:
        return
    owner = _follow(owner, steps[:-1])
    is_attribute, key = steps[-1]
    if is_attribute:
        setattr(owner, key, value)
    else:
        owner[key] = value


def _layout_text(key: Any, value: np.ndarray) -> str:
    if key == "C":
        return "a C-contiguous array"
    if key == "F":
        return "a Fortran-ordered array"
    return f"an array of strides {value.strides}"


def _check_given(graph: Graph, node: Node, value: np.ndarray) -> None:
    """Refuse an array given with ``states=`` that is an ndarray subclass computing otherwise
    (``np.matrix``), is read-only (the replay writes it back, after the other states), or has
    another memory layout than the array the capture met (C-contiguous
    when the graph does not know it: a loaded graph): the graph reads and writes the state
    through views (``W.T``, a reshape) whose view-or-copy answer in NumPy depends on it."""
    name = label(node)
    fix = subclass_fix(value)
    if fix is not None:
        raise ReplayInputError(f"state {name!r}: expected a numpy.ndarray "
                               f"{node.dtype}{list(node.shape)}, got {type_name(value)} "
                               f"(replay computes on plain arrays, and {fix})")
    if not value.flags.writeable:
        raise ReplayInputError(
            f"state {name!r}: expected a writeable array, got a read-only one: the replay "
            f"writes the state's new value into it. Fix: pass a writeable array "
            f"(states={{{name!r}: a.copy()}})")
    captured = graph.state_values.get(node.index)
    expected = "C" if captured is None else layout_key(captured)
    got = layout_key(value)
    if got != expected:
        wanted = "the array the capture met" if captured is not None else "a loaded graph's state"
        raise ReplayInputError(
            f"state {name!r}: expected {_layout_text(expected, captured)} ({wanted}), got "
            f"{_layout_text(got, value)}: the graph was recorded for the layout the capture "
            "met (NumPy's view-or-copy answer for a reshape or ravel of the state depends on "
            "it), so eager code may compute otherwise on this array. Fix: give an array "
            "of that layout (np.ascontiguousarray(a) for a C-contiguous one) and keep using "
            "that array")


def _follow(owner: Any, steps: tuple) -> Any:
    for is_attribute, key in steps:
        owner = getattr(owner, key) if is_attribute else owner[key]
    return owner


def _held(place: tuple, value: Any) -> bool:
    """Whether the path ``place`` (``graph.state_places``) still leads to ``value`` (or its
    owner is gone: nothing holds another object there)."""
    anchor, steps = place[0], place[1]
    owner = anchor() if type(anchor) is weakref.ref else anchor
    if owner is None:
        return True
    try:
        found = _follow(owner, steps)
    except Exception:  # the path leads nowhere now (an attribute deleted, a shorter list)
        return False
    if len(place) == 3:  # a state named by a view of it: a view of the same memory
        return isinstance(found, np.ndarray) and value is not None and _root(found) is value
    return found is value


def _rebound(graph: Graph, node: Node) -> ReplayInputError:
    name = label(node)
    what = ("draws from the generator it held then, where a call would draw from the one it "
            "holds now") if node.dtype is None else ("reads and writes the array it held then, "
                                                     "where a call would use the one it holds "
                                                     "now")
    fix = f"pass the live one, graph.replay(inputs, states={{{name!r}: {name}}}), or " \
        "capture again"
    if len(graph.state_places.get(node.index, ())) == 3:  # named by a view of the state
        fix = (f"capture again (the state is the array that owns the memory {name} viewed "
               f"then, {node.dtype}{list(node.shape)})")
    return ReplayInputError(
        f"{name} was rebound after the capture (recorded at {format_source(node.source)}): "
        f"the graph {what}. Fix: {fix}")


def _place_groups(graph: Graph, nodes: list[Node]) -> list[tuple]:
    """The states of ``nodes`` with a place, grouped by owner (``self.params`` for
    ``self.params[0]``, ``self.params[1]``...) so that a replay follows each owner's path once
    and compares its items with two C-level gets: ``(anchor, steps to the owner, the getter
    of the items there, the getter of the live objects in the replay's list, their
    positions)``."""
    groups: dict[tuple, tuple] = {}
    for k, node in enumerate(nodes):
        place = graph.state_places.get(node.index)
        if place is None or "rebind" in node.params:  # (its place is where it is read)
            continue
        if len(place) == 3:  # named by a view of it: checked by itself (its own group)
            groups[(k,)] = (None, place, None, None, [k])
            continue
        anchor, steps = place
        is_attribute, key = steps[-1]
        found = groups.setdefault((id(anchor), steps[:-1], is_attribute),
                                  (anchor, steps[:-1], is_attribute, [], []))
        found[3].append(key)
        found[4].append(k)
    return [(anchor, path, None if keys is None else (
                operator.attrgetter if is_attribute else operator.itemgetter)(*keys),
             operator.itemgetter(*positions), positions)
            for anchor, path, is_attribute, keys, positions in groups.values()]


def check_places(graph: Graph, nodes: list[Node], targets: list, groups: list[tuple] | None,
                 given: Mapping[str, Any] | None) -> None:
    """Refuse a replay of a state whose path (``model.m``, ``model.rng``) holds another object
    than the live one the replay would use (the user rebound it: ``model.m = np.zeros(3)``, a
    reset): an eager call would read, write or draw from the new one. ``groups`` is
    :func:`_place_groups` of ``nodes`` (``None``: states given, each checked by itself)."""
    if groups is None:
        for node, target in zip(nodes, targets):
            place = graph.state_places.get(node.index)
            if place is not None and label(node) not in given and "rebind" not in node.params \
                    and not _held(place, target):
                raise _rebound(graph, node)
        return
    for anchor, path, get_now, get_met, positions in groups:
        if get_now is None:  # a state named by a view of it: path is its place
            if not _held(path, targets[positions[0]]):
                raise _rebound(graph, nodes[positions[0]])
            continue
        owner = anchor() if type(anchor) is weakref.ref else anchor
        if owner is None:
            continue
        try:
            now = get_now(_follow(owner, path))
        except Exception:
            now = None
        met = get_met(targets)
        if len(positions) == 1:
            if now is not met:
                raise _rebound(graph, nodes[positions[0]])
        elif now is None or not all(map(operator.is_, now, met)):
            for k in positions:
                if not _held(graph.state_places[nodes[k].index], targets[k]):
                    raise _rebound(graph, nodes[k])


def _live_all(graph: Graph, prog: Any, given: Mapping[str, Any] | None) -> list:
    """:func:`live` of each state node of ``prog``; the usual case (the arrays the capture
    met, unchanged in kind) from the program's list of them, without a call per state."""
    nodes = prog.states
    if given:
        found = [live(graph, n, given) for n in nodes]
        _check_given_apart(nodes, found, given)
        _numbers_apart(graph, [n for n in nodes if "python" in n.params and "rebind" in
                               n.params and n.index in graph.state_places and
                               label(n) not in given])
        if graph.state_places:
            check_places(graph, nodes, found, None, given)
        return found
    plan = prog.live_plan
    if plan is None or plan[0] is not graph:
        targets = graph.state_targets
        plan = prog.live_plan = (graph, [
            (node, targets.get(node.index) if node.dtype is not None and "of" not in
             node.params and "rebind" not in node.params else None, node.shape, node.dtype)
            for node in nodes],
            _place_groups(graph, nodes),
            [node for node in nodes if "python" in node.params and "rebind" in node.params
             and node.index in graph.state_places])  # (kept numbers: _numbers_apart)
    found = []
    append = found.append
    for node, ref, shape, dtype in plan[1]:
        value = ref() if ref is not None and isinstance(ref, weakref.ref) else None
        if type(value) is not np.ndarray or value.shape != shape or (
                value.dtype is not dtype and value.dtype != dtype):
            value = live(graph, node, given)
        append(value)
    if plan[2]:
        check_places(graph, nodes, found, plan[2], given)
    if len(plan[3]) > 1:
        _numbers_apart(graph, plan[3])
    return found


def _follow_or_none(owner: Any, steps: tuple) -> Any:
    if owner is None:
        return None
    try:
        return _follow(owner, steps)
    except (AttributeError, LookupError, TypeError):
        return None


def _numbers_apart(graph: Graph, nodes: list[Node]) -> None:
    """Refuse two kept Python numbers (``self.meter.sum``, ``self.other.sum``: two places when
    captured) whose paths lead to one attribute of one object now (``self.other =
    self.meter`` since): eager code updates it twice, each from what the other left, where a
    replay computes both from its start and binds one (review 12, finding 5: silent)."""
    seen: dict[tuple[int, Any], Node] = {}
    for node in nodes:
        anchor, steps = graph.state_places[node.index]
        owner = anchor() if type(anchor) is weakref.ref else anchor
        holder = _follow_or_none(owner, steps[:-1])
        if holder is None:  # (what holds it is gone: live() says so)
            continue
        key = (id(holder), steps[-1][1])
        other = seen.setdefault(key, node)
        if other is not node:
            raise ReplayInputError(
                f"{label(other)} and {label(node)} are one number now (one object holds both "
                f"paths), which the graph updates as two (captured apart, recorded at "
                f"{format_source(other.source)} and {format_source(node.source)}): eager code "
                "updates it twice. Fix: capture again")


def _check_given_apart(nodes: list[Node], found: list, given: Mapping[str, Any]) -> None:
    """Refuse two array states, one of them given with ``states=``, whose memory overlaps:
    eager NumPy's second write reads what its first left there, where a replay computes both
    new values from the values at its start (view states of one array are views by design)."""
    arrays = [(node, value) for node, value in zip(nodes, found)
              if node.dtype is not None and "of" not in node.params]
    for k, (node, value) in enumerate(arrays):
        for other, other_value in arrays[k + 1:]:
            if label(node) not in given and label(other) not in given:
                continue  # two arrays the capture met: distinct states by construction
            try:
                shared = np.shares_memory(value, other_value, max_work=100_000)
            except np.exceptions.TooHardError:
                shared = True
            if shared:
                raise ReplayInputError(
                    f"states {label(node)!r} and {label(other)!r} share memory: the graph "
                    "computes each state's new value from both as they were when the replay "
                    "started, where a call writes one and then reads that write through the "
                    "other. Fix: give each state its own array")


def in_place(graph: Graph) -> dict[int, int]:
    """The op nodes whose result a replay writes straight into a state's live array (``np.add(m,
    t, out=m)``, not a new array copied back after the run), by the state node.

    A state's last value is written in place when it is a NumPy ufunc of one result and no
    parameter computing exactly the state's shape and dtype from operands of that dtype (so
    ``out=`` cannot change the loop NumPy picks), and nothing reads the array's value from
    before the write after it: no op, guard or output after that op reads the state, a view
    state of it, or a value that may be a view of either (an op that makes no fresh array, as
    the memory plan counts them). A ufunc whose operand overlaps ``out`` computes as if the
    operand were copied first (NumPy's rule), so that op may read the state itself."""
    nodes = graph.nodes
    last = [-1] * len(nodes)  # the last node reading each node (an op, a guard, an output)
    for n in nodes:
        for a in n.args:
            if isinstance(a, Node):
                last[a.index] = n.index
    aliases: dict[int, set[int]] = {}  # node -> the states whose live memory it may view
    for n in nodes:
        if n.kind == "state" and n.dtype is not None:
            aliases[n.index] = {n.params.get("of", n.index)}
        elif n.kind == "op" and not (ops.OPS[n.op].out or ops.OPS[n.op].random
                                     or n.op in FRESH_OPS):
            for a in n.args:
                if isinstance(a, Node) and a.index in aliases:
                    aliases.setdefault(n.index, set()).update(aliases[a.index])
    read_until: dict[int, int] = {}  # state -> the last node reading its memory's old value
    for i, states in aliases.items():
        for s in states:
            read_until[s] = max(read_until.get(s, -1), last[i])
    finals = [n.args[0].index for n in graph.state_outputs]
    # a guard refuses the replay by design (another branch than the capture's): an array
    # written before it would be changed by a replay that GuardError says did not run
    last_guard = max((n.index for n in nodes if n.kind == "guard"), default=-1)
    into: dict[int, int] = {}
    for out in graph.state_outputs:
        state, final = nodes[out.params["state"]], out.args[0]
        if final.kind != "op" or finals.count(final.index) > 1 or final.params \
                or "rebind" in state.params \
                or final.index < last_guard \
                or read_until.get(state.index, -1) > final.index \
                or final.shape != state.shape or final.dtype != state.dtype:
            continue
        op = ops.OPS[final.op]
        fn = op.bind(np) if op.out and not op.multi and not op.random else None
        if isinstance(fn, np.ufunc) and fn.nout == 1 and fn.nin == len(final.args) <= 2 \
                and all(_same_dtype_operand(a, final.dtype) for a in final.args):
            into[final.index] = state.index
    return into


def _same_dtype_operand(arg: Any, dtype: Any) -> bool:
    """Whether a ufunc's operand leaves NumPy's loop for ``out=`` of ``dtype`` unchanged: a
    node of that dtype, a Python scalar (weak under NEP 50), or a NumPy scalar of that dtype."""
    if isinstance(arg, Node):
        return arg.dtype == dtype
    if type(arg) in (bool, int, float, complex):
        return True
    return isinstance(arg, np.generic) and arg.dtype == dtype


def live_program(graph: Graph, prog: Any) -> Any:
    """The program of ``graph`` that writes the states' last values into their live arrays
    (:func:`in_place`; made once, kept on ``prog``), ``None`` when none can be or the engine is
    not NumPy's."""
    live = prog.live_program
    if live is None:
        into = in_place(graph) if prog.backend.name == "numpy" else {}
        live = prog.live_program = Program(graph, prog.backend, into=into) if into else False
    return live or None


def _root(array: Any) -> Any:
    """The object that owns ``array``'s memory: its ``.base`` chain followed, through a
    ``memoryview`` (``np.frombuffer(memoryview(a))``) to the array it views, and through the
    ``DummyArray`` of ``as_strided`` (``sliding_window_view``) to the array it wraps."""
    while True:
        base = array.obj if isinstance(array, memoryview) else getattr(array, "base", None)
        if base is None:
            return array
        array = base


def check_apart(graph: Graph, prog: Any, args: Any, nodes: list[Node], targets: list) -> None:
    """Refuse an input whose memory overlaps a state's live array: eager NumPy reads the values
    its writes leave there through the input, where a replay reads the input as it was when it
    started (or, written in place, as its order of ops left it): no replay can promise eager's
    values, so none is run."""
    arrays = [(k, a) for k, a in enumerate(args) if isinstance(a, np.ndarray)]
    if not arrays:
        return
    # run on every replay: a target's root is looked for only when it has a base
    roots = {id(_root(a)) for _, a in arrays}
    hits = [(node, target) for node, target in zip(nodes, targets)
            if "rebind" not in node.params and (  # (a rebind state's array is not written)
                id(target) in roots
                or (getattr(target, "base", None) is not None and id(_root(target)) in roots))]
    for k, a in arrays if hits else ():
        for node, target in hits:
            if not isinstance(target, np.ndarray):
                continue
            try:
                shared = np.shares_memory(a, target, max_work=100_000)
            except np.exceptions.TooHardError:
                shared = True
            if shared:
                name = prog.input_names[k] if k < len(prog.input_names) else f"#{k}"
                state = label(graph.nodes[node.params["of"]] if "of" in node.params else node)
                raise ReplayInputError(
                    f"input {name!r} shares memory with the state {state}, which the graph "
                    f"writes: eager NumPy would read the values written there through "
                    f"{name!r}, and a replay cannot promise the same reads. Fix: pass a copy "
                    f"({name}.copy()), or give the state with states={{{state!r}: ...}}")


def _check_effect_places(graph: Graph, prog: Any) -> None:
    """Refuse a replay that logs into a container it has no path to (a loaded graph, or the
    object holding it freed): the eager call would log there."""
    for node in prog.effects:
        if _owner(graph.effect_places.get(node.index)) is None:
            raise ReplayInputError(
                f"the graph logs a value into {node.name} each call (capviz/trace/effects.py), "
                f"and {node.name} is gone (a loaded graph, or its object was freed). Fix: "
                f"replay with state='return' and log result.states[{_effect_name(node)!r}] "
                "yourself")
    for k, logged in enumerate(graph.logged_values):
        if _owner(logged.path) is None:
            raise ReplayInputError(
                f"the graph logs {logged.value!r} into {logged.name} each call "
                f"(capviz/trace/effects.py), and {logged.name} is gone (a loaded graph, or its "
                "object was freed). Fix: replay with state='return' and log "
                f"result.states[{_logged_name(logged, k)!r}] yourself")


def _effect_name(node: Node) -> str:
    """The name ``result.states`` gives an effect output's value."""
    key = node.params.get("key")
    if node.params.get("effect") == "attr":
        return f"{node.name}.{key}"
    return f"{node.name}[{key!r}]" if key is not None else f"{node.name}[+{node.index}]"


def _logged_name(logged: Any, k: int) -> str:
    """The name ``result.states`` gives the ``k``-th Python value a replay logs."""
    key = logged.key
    return f"{logged.name}[{key!r}]" if key is not None else f"{logged.name}[+v{k}]"


def _in_order(graph: Graph, nodes: tuple, values: Any, to_host: Any) -> list[tuple]:
    """``(name, container, kind, key, value, path)`` of each value a replay logs, in the
    call's order:
    the effect outputs ``nodes`` with their replayed ``values``, and between them the graph's
    Python values (a new copy of a list or dict each replay, as each call makes one)."""
    out = []
    constants = list(enumerate(graph.logged_values))
    parts: dict[int, Any] = {}  # (a tensor's value in a logged dict or tuple: LoggedPart)
    for node, value in zip(nodes, values):
        while constants and constants[0][1].order <= node.index:
            out.append(_constant(*constants.pop(0), parts))
        value = to_host(value)
        if node.params.get("scalar") and isinstance(value, np.ndarray) and value.shape == ():
            value = value[()]
        if node.params.get("python") in _PYTHON:  # (random.random(): a Python float in eager)
            value = _PYTHON[node.params["python"]](value)
        if node.params["effect"] == "part":
            parts[node.index] = value
            continue
        out.append((_effect_name(node), node.name, node.params["effect"],
                    node.params.get("key"), value, graph.effect_places.get(node.index)))
    out += [_constant(k, logged, parts) for k, logged in constants]
    return out


_PYTHON = {"bool": bool, "int": int, "float": float, "complex": complex}
"""The Python types an effect output marked ``python`` is written back as
(:func:`capviz.trace.effects.python_number`)."""


def _constant(k: int, logged: Any, parts: dict[int, Any]) -> tuple:
    value = _filled(logged.value, parts) if _mutable(logged.value) or \
        type(logged.value) is tuple else logged.value
    return _logged_name(logged, k), logged.name, logged.kind, logged.key, value, logged.path


def _filled(value: Any, parts: dict[int, Any]) -> Any:
    """A new copy of the logged tuple, list or dict ``value`` (as each call makes one), each
    :class:`capviz.core.ir.LoggedPart` in it given the replayed value ``parts`` holds."""
    kind = type(value)
    if kind is LoggedPart:
        return parts[value.index]
    if kind is dict:
        return {k: _filled(v, parts) for k, v in value.items()}
    if kind in (list, tuple):
        return kind(_filled(v, parts) for v in value)
    return copy.deepcopy(value)


def _mutable(value: Any) -> bool:
    """Whether ``value`` is or holds a list or dict (a new one each call: a copy each replay)."""
    return type(value) in (list, dict) or (type(value) is tuple and any(map(_mutable, value)))


def effects(graph: Graph, nodes: tuple, values: Any, to_host: Any, write: bool
            ) -> dict[str, Any]:
    """Log ``values`` (the effect outputs ``nodes``' replayed values) and the graph's Python
    values (:attr:`capviz.core.ir.Graph.logged_values`) into the user's containers, in program
    order, as the eager call logs them (``write``), and return them by name: appended (after
    emptying the container, for ``"refill"``: once per container and replay), or stored at
    their key; a NumPy scalar where the call logged one."""
    found: dict[str, Any] = {}
    emptied: set[int] = set()
    for name, container, kind, key, value, place in _in_order(graph, nodes, values, to_host):
        found[name] = value
        if not write:
            continue
        anchor, steps = place
        owner = anchor() if type(anchor) is weakref.ref else anchor
        try:
            holder = _follow(owner, steps)
        except Exception as err:
            raise ReplayInputError(
                f"the graph logs a value into {container} each call, and it holds nothing now "
                f"({type(err).__name__}: {err}). Fix: make it again, or capture again") from err
        if kind == "set":
            holder[key] = value
            continue
        if kind == "attr":
            setattr(holder, key, value)
            continue
        if kind == "refill" and id(holder) not in emptied:
            holder.clear()
        emptied.add(id(holder))
        holder.append(value)
    return found


def _refuse_given_rebind(nodes: list[Node], given: Mapping[str, Any]) -> None:
    """Refuse ``state="write"`` with a rebind state given by ``states=``: an eager call binds
    its new array to the name and leaves the old one as it was, and a replay given the array
    has no name to bind to (writing the given array instead would change the old one)."""
    for node in nodes:
        name = label(node)
        if "rebind" in node.params and name in given:
            raise ReplayInputError(
                f"state {name!r}: the graph binds a new array to {name} each call (a rebind "
                "state), and a replay given the array by states= has no name to bind it to. "
                f"Fix: replay with state='return' and bind result.states[{name!r}] to {name}")


def run(graph: Graph, prog: Any, engine: Backend, args: Any, seed: int, direct: bool,
        options: Mapping[str, Any], mode: str = "write",
        given: Mapping[str, Any] | None = None, named: bool = True
        ) -> tuple[tuple, dict[str, Any]]:
    """Run ``prog`` (the compiled program of ``graph``) on ``args`` and the states' live
    values; returns the outputs and the states' new values by name (written back first when
    ``mode`` is ``"write"``; ``named=False``: written back, no names returned)."""
    if mode not in MODES:
        raise ValueError(f"state must be 'write' or 'return', got {mode!r}")
    if not engine.mutable and graph.state_nodes:
        check_backend(graph, engine)
    if prog.n_effects and mode == "write":
        _check_effect_places(graph, prog)
    nodes = prog.states
    if given:
        known = [label(n) for n in nodes if "of" not in n.params]  # view states: no name
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ReplayInputError(f"unexpected state {unknown[0]!r}: the graph's states are "
                                   f"{known}")
        if mode == "write":
            _refuse_given_rebind(nodes, given)
    targets = _live_all(graph, prog, given)
    if nodes and graph.python_guards:  # the Python values the capture read (self.training)
        check_python(graph.python_guards)
    if prog.n_generators or engine.name != "numpy":
        from_host = engine.from_host
        values = [from_host(target) if node.dtype is not None else  # a generator: drawn from
                  copy.deepcopy(target) if mode == "return" else target  # (a copy, to return)
                  for node, target in zip(nodes, targets)]
    else:  # NumPy's own arrays: taken as they are
        values = targets
    everything = [*args, *values]
    check_apart(graph, prog, args, nodes, targets)
    live = live_program(graph, prog) if mode == "write" and not given and direct else None
    if live is not None:  # last writes into the live arrays
        results = live(everything, seed)
    else:
        results = prog(everything, seed) if direct else engine.execute(prog, everything, seed,
                                                                       options)
    n = len(prog.output_names)
    outputs = tuple(results[:n])
    states: dict[str, Any] = {}
    write = mode == "write"
    to_host = engine.to_host
    if prog.n_views:  # the states written back: those with an output (no view state)
        kept = [k for k, node in enumerate(nodes) if "of" not in node.params]
        nodes, targets, values = ([seq[k] for k in kept] for seq in (nodes, targets, values))
    if prog.n_effects:  # values logged into the user's containers, after the graph
        logged = results[len(results) - len(prog.effects):] if prog.effects else ()
        states.update(effects(graph, prog.effects, logged, to_host, write))
    if write and not named and not prog.n_generators and not prog.n_rebinds:  # the usual
        copyto = np.copyto                                                        # replay
        host = engine.name == "numpy"
        for target, value in zip(targets, results[n:]):
            if value is not target:  # a state the replay left unchanged is the live array
                copyto(target, value if host else to_host(value))
        return outputs, states
    for node, target, value, drawn in zip(nodes, targets, results[n:], values):
        if node.dtype is None:
            states[node.name or label(node)] = drawn
        elif "rebind" in node.params:  # a new array bound to the place, the old one left
            value = to_host(value)
            if write:
                rebind(graph, node, value)
            states[node.name or label(node)] = python_value(node, value)
        elif write:
            if value is not target:
                np.copyto(target, to_host(value))
            states[node.name or label(node)] = target
        else:
            states[node.name or label(node)] = value
    return outputs, states
