"""A second capture with other values in the states: what NumPy computed outside the capture.

NumPy's own operators on an outside array (``reg = 0.5 * np.sum(self.W * self.W)`` with
``self.W`` an ndarray, ``self.t += 1``) run on its memory and no hook sees them. After the
capture's first write into a floating-point state its memory holds the poison
(:mod:`capviz.trace.state`), which refuses what NumPy computes from it; *before* that write,
and on an integer or boolean state, the value NumPy computes enters the graph as a number
(a literal) or an array (a constant) frozen at the capture's values. So ``cv.capture(fn)``
captures ``fn`` a second time when the first capture made array states and recorded a value
that may be such a one (:func:`suspects`), with each state's live array holding other values
(:class:`OtherValues`: ``a + 1`` for floats of moderate size, ``a / 2`` past the float's
integers, 0 for a non-finite value, ``a + 1`` wrapping for integers, ``~a`` for booleans), and
compares the two graphs (:func:`first_difference`): same structure, same literals, same
constants. A literal or constant that differs was computed from a state; a structural
difference is a path chosen from a state's values. Both are refused at the node's line. An
outside array NumPy wrote during the second capture (``self.t += 1``: the first capture wrote it
too, and nothing can undo that) is refused naming it, and put back.

What may be such a value (:func:`suspects`): a NumPy scalar operand (``np.float64(4.5)``: what
NumPy's reductions return), a NumPy scalar or array among an op's parameters, a constant
copied when recorded (an array computed at run time, or a small outside array that NumPy may
have written before the capture read it), and a Python number that is neither a number written
on its line nor the value of a global or closure variable named on it (``float(np.sum(W))``
kept in a local). Constants kept by reference (arrays of 1 MiB and more: a model's weights)
are no suspects: snapshotting them would copy the weights, and a change after the capture
read them is refused by their fingerprint (:mod:`capviz.core.references`).
"""

from __future__ import annotations

import io
import linecache
import sys
import tokenize
import weakref
from ast import literal_eval
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

COMPUTED = "a value NumPy computed from a state"
"""The ``call`` of a refused literal or constant (the situation ``computed_from_state``)."""
WRITTEN = "a write NumPy made into an outside array"
"""The ``call`` of an outside array NumPy wrote while the capture ran (``written_by_numpy``)."""
PATH = "a path chosen from a state's values"
"""The ``call`` of a structural difference (the situation ``path_from_state``)."""

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
        if type(target) is weakref.ref and type(target()) is np.ndarray:
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
        fn = next((vars(k)["__call__"] for k in type(fn).__mro__  # a callable object
                   if "__call__" in vars(k)), None)
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


def suspects(graph: Graph, spaces: list[dict]) -> bool:
    """Whether ``graph`` (complete, with array states) recorded a value that NumPy may have
    computed from a state outside the capture's sight (see the module docstring)."""
    lines: dict[tuple, tuple[list, set]] = {}
    seen: set[tuple] = set()  # (line, type, number) written there: checked once
    fingerprinted = graph.constant_fingerprints
    for node in graph.nodes:
        kind = node.kind
        if kind != "op":
            if kind == "constant" and node.index not in fingerprinted:
                return True
            continue
        for arg in node.args:
            if type(arg) is Node:
                continue
            if type(arg) in _NUMBERS:
                key = (node.source, type(arg), arg)  # (-0.0 is 0.0 here: either is written)
                if key not in seen:
                    if not _written(node.source, arg, spaces, lines):
                        return True
                    seen.add(key)
            elif isinstance(arg, (np.generic, np.ndarray)):
                return True
        if node.params and _holds_numpy(node.params):
            return True
    return False


def _holds_numpy(value: Any) -> bool:
    if isinstance(value, (np.generic, np.ndarray)):
        return True
    if isinstance(value, dict):
        return any(_holds_numpy(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return any(_holds_numpy(v) for v in value)
    return False


def _written(source: Any, number: Any, spaces: list[dict], lines: dict) -> bool:
    """Whether Python ``number`` is written on its line: a number token (maybe negated), or a
    global or closure variable named there that holds it."""
    if source is None:
        return False
    key = (source[0], source[1])
    tokens = lines.get(key)
    if tokens is None:
        tokens = lines[key] = _tokens(linecache.getline(source[0], source[1]))
    numbers, names = tokens
    kind = type(number)
    if kind is bool:
        return str(number) in names
    if any(type(n) is kind and (n == number or n == -number) for n in numbers):
        return True
    wanted = repr(number)
    for space in spaces:
        if _holds(space, names, kind, wanted):
            return True
    module = _module_space(source[0])  # the line's own module, when not the function's
    return module is not None and _holds(module, names, kind, wanted)


def _holds(space: dict, names: set, kind: type, wanted: str) -> bool:
    for name in names:
        value = space.get(name, space)
        if type(value) is kind and repr(value) == wanted:
            return True
    return False


def _code(line: str) -> str:
    """A source line without its comment."""
    line = line.strip()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line + "\n").readline):
            if tok.type == tokenize.COMMENT:
                return line[:tok.start[1]].rstrip()
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return line


_TOKENS: dict[str, tuple[list, set]] = {}  # a line's text -> its numbers and names


def _tokens(line: str) -> tuple[list, set]:
    """The numbers and names written on one source line (as far as it tokenizes alone)."""
    found = _TOKENS.get(line)
    if found is None:
        if len(_TOKENS) > 4096:
            _TOKENS.clear()
        found = _TOKENS[line] = _tokenize(line)
    return found


def _tokenize(line: str) -> tuple[list, set]:
    numbers: list = []
    names: set = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if tok.type == tokenize.NUMBER:
                try:
                    numbers.append(literal_eval(tok.string))
                except (ValueError, SyntaxError):
                    continue
            elif tok.type == tokenize.NAME:
                names.add(tok.string)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # a line of a longer statement: what it held up to there
    return numbers, names


_MODULES: dict[str, Any] = {}  # file -> its module's globals (None: no module has that file)
_MODULES_SEEN = [0]


def _module_space(file: str) -> dict | None:
    space = _MODULES.get(file)
    if space is None and len(sys.modules) != _MODULES_SEEN[0]:
        _MODULES_SEEN[0] = len(sys.modules)
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str):
                _MODULES[path] = vars(module)
        space = _MODULES.get(file)
    return space


# --- other values in the states, and everything put back --------------------------------------

def other_values(array: np.ndarray) -> np.ndarray:
    """An array of ``array``'s shape and dtype whose every element differs from ``array``'s and
    holds no NaN (see the module docstring)."""
    kind = array.dtype.kind
    if kind == "b":
        return ~array
    if kind in "iu":
        return array + array.dtype.type(1)  # wraps at the dtype's end: still another value
    if kind == "c":
        out = np.empty_like(array)
        out.real = _other_floats(array.real)
        out.imag = _other_floats(array.imag)
        return out
    return _other_floats(array)


def _other_floats(array: np.ndarray) -> np.ndarray:
    big = 2.0 ** np.finfo(array.dtype).nmant  # from here on, a + 1 may round back to a
    with np.errstate(all="ignore"):
        out = np.where(np.abs(array) < big, array + 1, array * 0.5)
        out = np.where(np.isfinite(array), out, 0)
    return out.astype(array.dtype)


class OtherValues:
    """The states' live arrays given other values for a second capture, and the outside arrays
    the first capture copied as constants noted, so that :meth:`restore` puts every one back,
    bit for bit, and says which of the noted ones NumPy wrote meanwhile."""

    def __init__(self, graph: Graph) -> None:
        self.states = [(node, root) for node, root in array_states(graph)
                       if root.flags.writeable]
        self.saved = [root.copy(order="K") for _, root in self.states]
        self.planted: list[np.ndarray] = []
        taken = {id(root) for _, root in self.states}
        self.noted: list[tuple[Node, np.ndarray, np.ndarray]] = []
        for index, ref in graph.constant_origins.items():
            root = ref()
            if type(root) is not np.ndarray or id(root) in taken or referenceable(root):
                continue
            taken.add(id(root))
            self.noted.append((graph.nodes[index], root, root.copy(order="K")))

    def plant(self) -> None:
        for (_, root), saved in zip(self.states, self.saved):
            other = other_values(saved)
            np.copyto(root, other)
            self.planted.append(other)

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

def same(a: Any, b: Any) -> bool:
    """Whether two static values of two captures are the same: type and bits."""
    if type(a) is not type(b):
        return False
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
    shape or line); ``None`` when they are the same program up to their end, or up to a guard
    that read another value (a capture with examples: every replay checks it again, so the
    path after it is the one its value takes). States' values are not compared (the second
    capture's are the other values)."""
    for a, b in zip(one.nodes, two.nodes):
        if (a.kind, a.op, a.dtype, a.source, len(a.args)) != \
                (b.kind, b.op, b.dtype, b.source, len(b.args)) or not same(a.shape, b.shape):
            return a, "path", None, None
        for x, y in zip(a.args, b.args):
            if (type(x) is Node) != (type(y) is Node):
                return a, "path", None, None
            if not same(x, y):
                return (a, "value", x, y) if type(x) is not Node else (a, "path", None, None)
        if not same(a.params, b.params):
            if a.kind == "guard":  # a read of a value that every replay checks again: what
                return None        # follows it is the path of its value (GuardError else)
            return a, "value", a.params, b.params
        if a.kind == "constant" and not _same_constant(one, two, a.index):
            return a, "value", one.constant_values[a.index], two.constant_values[a.index]
    if len(one.nodes) != len(two.nodes):
        shorter = min(len(one.nodes), len(two.nodes))
        return one.nodes[min(shorter, len(one.nodes) - 1)], "path", None, None
    return None


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
    text = _code(linecache.getline(source[0], source[1])) if source else ""
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
               written: list[tuple[Node, np.ndarray]], failure: Exception | None
               ) -> CaptureViolation | None:
    """What the second capture (``second``, its graph, partial when it raised ``failure``)
    shows of the first (``graph``), refused on ``graph``: an outside array NumPy wrote, a
    path chosen from a state's values, a value computed from a state, a state NumPy wrote
    before the capture's first write to it; ``None`` when the two captures agree."""
    states = " and ".join(node.name or "an outside ndarray" for node, _ in others.states)
    hold = f"{states} {'holds' if len(others.states) == 1 else 'hold'} other values"
    if written:
        node, made = written[0]
        name = node.name or "an outside ndarray"
        return refuse(graph, node, WRITTEN, name, (
            f"the capture read it as {shown(graph.constant_values[node.index])} here, and a "
            f"second capture made it {shown(made)}, put back; the first capture's write stays"),
            array=name)
    if second is None:
        raise failure  # the second scope did not even open: nothing was captured
    found = first_difference(graph, second)
    if failure is not None:
        node = found[0] if found is not None else graph.nodes[-1]
        first = str(failure).splitlines()[0] if str(failure) else type(failure).__name__
        return refuse(graph, node, PATH, states, (
            f"when {hold} the capture fails here: "
            f"{type(failure).__name__}: {shorten(first, 120)}"), source=_raised_at(failure))
    if found is not None:
        node, what, one, two = found
        if what == "path":
            return refuse(graph, node, PATH, states, (
                f"when {hold} the capture records another program from here on"))
        operand = node.name if node.kind == "constant" and node.name else shown(one)
        python = type(one) in _NUMBERS  # maybe from a Python value the call changes too
        return refuse(graph, node, COMPUTED, operand, (
            f"it is {shown(one)} here and {shown(two)} when {hold}"
            f"{', or when the call ran again' if python else ''}"))
    for (node, _), planted in zip(others.states, others.planted):
        start = second.state_values.get(node.index)
        if start is not None and not same_bits(np.asarray(start), planted):
            name = node.name or "an outside ndarray"
            return refuse(graph, node, WRITTEN, name, (
                f"NumPy wrote {name} before the capture's first write to it, so the graph "
                "starts from the value NumPy made (the first capture's write stays in it)"),
                array=name)
    return None


def _raised_at(error: BaseException) -> Any:
    """``(file, line, function)`` of the innermost user frame ``error`` passed through."""
    found = None
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_user_file(code.co_filename):
            found = (display_file(code.co_filename), tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return found
