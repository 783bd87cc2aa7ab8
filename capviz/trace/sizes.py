"""Shape rules on shapes that hold size symbols, and the naming of new symbols.

The op table's rules are written for ints. On operands whose shapes hold symbols (``n0``),
:func:`meta` runs an op's rule three times: with each symbol replaced by one large number,
by another, and by its length on the capture's examples. An axis that comes out as the first
number and then the second is that symbol; one that does not move is a plain int (and must
agree with the examples' run); one that moves otherwise (``np.concatenate`` of ``n0`` and
``n1`` rows, ``np.diff``) is a new size, a :class:`~capviz.core.symbols.Pending` the recorder
names like the sizes of a mask read. A rule that fails on the stand-in numbers, or whose plain
ints disagree with the examples' run, needs the numbers themselves (``x[m] + y[m2]`` is valid
only when both masks select as many elements): the examples' result is taken and every symbol
involved gets a guard (:func:`capviz.trace.guards.resolve`), so a replay checks them.
"""

from __future__ import annotations

from typing import Any

from capviz import ops
from capviz.core.ir import Node, same_value
from capviz.core.symbols import Pending, Symbol, has_symbol
from capviz.trace import guards

UNSIZED = ("its result's length depends on the values, and a capture given specs has no "
           "values to give it a size symbol; pass an example array instead of a spec "
           "(cv.capture(f, x) with x an array, scope.input(name, x)): the capture then records "
           "it with a symbolic length (n0), checked by guards where the code needs the number")
"""Why a data-dependent length is refused in a capture without examples."""

_FIRST = 1_000_003
_SECOND = 2_000_029
_STEP = 1_013  # stand-ins of the k-th symbol: _FIRST + k * _STEP, _SECOND + k * _STEP


def symbolic(args: tuple) -> bool:
    """Whether an operand node's shape holds a symbol."""
    for a in args:
        if type(a) is Node and a.shape and has_symbol(a.shape):
            return True
    return False


def _symbols(args: tuple) -> list[Symbol]:
    found: list[Symbol] = []
    for a in args:
        if type(a) is Node and a.shape:
            for s in a.shape:
                if type(s) is Symbol and not any(s is f for f in found):
                    found.append(s)
    return found


def _stand_in(node: Node, values: dict) -> Node:
    shape = tuple(values[s] if type(s) is Symbol else s for s in node.shape)
    return Node(node.index, node.kind, node.op, node.args, node.params, shape, node.dtype,
                node.source, node.scope, node.name)


def _run(op: ops.Op, args: tuple, params: dict, values: dict) -> Any:
    conv = tuple(_stand_in(a, values) if type(a) is Node and a.shape and has_symbol(a.shape)
                 else a for a in args)
    return op.meta(conv, params)


def meta(rec: Any, op: ops.Op, args: tuple, params: dict) -> Any:
    """``op.meta`` on operands with symbolic shapes (see the module docstring)."""
    found = _symbols(args)
    first = {s: _FIRST + k * _STEP for k, s in enumerate(found)}
    second = {s: _SECOND + k * _STEP for k, s in enumerate(found)}
    example = {s: guards.example_length(rec, s) for s in found}
    result = _run(op, args, params, example)  # NumPy's own error, for the examples' sizes
    try:
        a = _run(op, args, params, first)
        b = _run(op, args, params, second)
    except Exception:
        return _specialized(rec, found, result)
    results_a, results_b, results_e = (list(m) if op.multi else [m] for m in (a, b, result))
    if len(results_a) != len(results_e) or len(results_b) != len(results_e):
        return _specialized(rec, found, result)
    by_first = {v: s for s, v in first.items()}
    bounds = {s: s.bound for s in found}
    out = []
    for (sa, _), (sb, _), (se, de) in zip(results_a, results_b, results_e):
        if sa is None or se is None:
            out.append((se, de))
            continue
        if len(sa) != len(se) or len(sb) != len(se):
            return _specialized(rec, found, result)
        shape: list = []
        for da_, db_, de_ in zip(sa, sb, se):
            if type(de_) is Pending:  # a new size of a sized op: its bound at the bounds
                shape.append(Pending(_derived_bound(op, args, params, bounds, len(shape),
                                                    len(out), de_.bound)))
            elif da_ == db_:
                if da_ != de_:
                    return _specialized(rec, found, result)
                shape.append(de_)
            elif da_ in by_first and second[by_first[da_]] == db_:
                symbol = by_first[da_]
                if example[symbol] != de_:
                    return _specialized(rec, found, result)
                shape.append(symbol)
            else:
                shape.append(Pending(_derived_bound(op, args, params, bounds, len(shape),
                                                    len(out), de_), de_))
        out.append((tuple(shape), de))
    return out if op.multi else out[0]


def _derived_bound(op: ops.Op, args: tuple, params: dict, bounds: dict, axis: int,
                   result: int, example: int) -> int:
    """An upper bound of a derived size: the rule run with every symbol at its bound (sizes
    grow with their operands' for the rules that derive one: joins, differences, repeats),
    and at least the examples' length."""
    try:
        m = _run(op, args, params, bounds)
        shape = (m[result] if op.multi else m)[0]
        size = shape[axis]
        return max(int(size.bound if type(size) is Pending else size), example)
    except Exception:
        return example


def _specialized(rec: Any, found: list[Symbol], result: Any) -> Any:
    """The examples' result, every symbol of the operands guarded: the rule needed numbers."""
    for s in found:
        guards.resolve(rec, s)
    return result


def twin(rec: Any, nodes: list[Node]) -> list[Node] | None:
    """The results of an earlier op that computes the same thing as the sized op whose
    results are ``nodes`` (the same op and params on operands of the same value: ``y[y > 0]``
    written twice), whose lengths are therefore the same symbols; ``None`` when there is none.
    The new results are remembered for the next op."""
    op = nodes[0].args[0] if nodes[0].op == "unpack" else nodes[0]
    found = None
    for earlier in rec.sized_results:
        first = earlier[0].args[0] if earlier[0].op == "unpack" else earlier[0]
        if len(earlier) == len(nodes) and first.op == op.op and first.params == op.params \
                and len(first.args) == len(op.args) \
                and all(same_value(a, b) for a, b in zip(first.args, op.args)):
            found = earlier
            break
    rec.sized_results.append(nodes)
    return found


def settle(rec: Any, nodes: list[Node], same: list[Node] | None = None) -> None:
    """Name the :class:`Pending` sizes of newly recorded ``nodes`` (one op's results): one new
    symbol per distinct pending size, whose origin is the first result holding it; or, with
    ``same`` (the results of an earlier op computing the same, see :func:`twin`), the symbols
    those hold at the same places."""
    named: dict[int, Symbol] = {}
    if same is not None:
        for node, old in zip(nodes, same):
            for s, t in zip(node.shape or (), old.shape or ()):
                if type(s) is Pending and type(t) is Symbol:
                    named[id(s)] = t
    for node in nodes:
        shape = node.shape
        if not shape or not has_symbol(shape):
            continue
        new = []
        for axis, s in enumerate(shape):
            if type(s) is Pending:
                symbol = named.get(id(s))
                if symbol is None:
                    symbol = named[id(s)] = new_symbol(rec, node, axis, s)
                s = symbol
            new.append(s)
        node.shape = tuple(new)


def new_symbol(rec: Any, node: Node, axis: int, pending: Pending) -> Symbol:
    """A new size symbol of the capture's graph: axis ``axis`` of ``node``."""
    symbols = rec.graph.symbols
    symbol = Symbol(f"n{len(symbols)}", node.index, axis, pending.bound, pending.example)
    symbol.resolver = rec.resolve_size
    symbols[symbol.name] = symbol
    rec.symbolic = True
    return symbol
