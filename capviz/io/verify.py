"""``graph.verify()``: structural checks, with errors that show the listing around the failure."""

from __future__ import annotations

import numpy as np

from capviz import ops
from capviz.core.errors import CapvizError, GraphVerifyError
from capviz.core.guards import SIZE
from capviz.core.ir import KINDS, Graph, Node, same_value
from capviz.core.symbols import Pending, Symbol, has_symbol, probe, shape_text, symbols_in
from capviz.io.printing import format_window

_VALUE_KINDS = ("input", "constant", "op", "state")


def _fail(graph: Graph, node: Node, what: str) -> GraphVerifyError:
    window = format_window(graph, node.index)
    return GraphVerifyError(f"node %{node.index}: {what}\n{window}")


def _check_read_target(graph: Graph, node: Node) -> None:
    """A data read's ``target`` (the tensor read, drawn as a ``reads`` edge) is an earlier
    tensor node."""
    if "target" not in node.params:
        return
    target = node.params["target"]
    if node.op != "data_read" or type(target) is not int or not 0 <= target < node.index \
            or graph.nodes[target].kind in ("violation", "output") \
            or (graph.nodes[target].kind == "op" and graph.nodes[target].shape is None):
        raise _fail(graph, node, f"a data read's target must be an earlier tensor node, got "
                                 f"{target!r}")


def _check_op(graph: Graph, node: Node, results: dict[int, list]) -> None:
    """Check one op node; ``results`` caches each multi-output op's result types by index, so a
    k-way split and its k unpacks cost O(k), not O(k**2)."""
    op = ops.OPS.get(node.op)
    if op is None:
        raise _fail(graph, node, f"unknown op {node.op!r}")
    lo, hi = op.nargs
    if len(node.args) < lo or (hi is not None and len(node.args) > hi):
        raise _fail(graph, node, f"{node.op} takes {lo}..{hi if hi is not None else 'n'} "
                                 f"arguments, got {len(node.args)}")
    extra = set(node.params) - op.params
    if extra:
        raise _fail(graph, node, f"{node.op} has unknown params {sorted(extra)}")
    if op.random and set(node.params) != op.params:
        raise _fail(graph, node, f"{node.op} needs params {sorted(op.params)}")
    if _symbolic(node):
        _check_symbolic(graph, node, op)
        return
    if node.op == "unpack":
        parent = node.args[0]
        if not isinstance(parent, Node) or parent.kind != "op" or \
                not ops.OPS[parent.op].multi:
            raise _fail(graph, node, "unpack must read a multi-output op")
        metas = results.get(parent.index)
        if metas is None:
            metas = results[parent.index] = ops.OPS[parent.op].meta(list(parent.args),
                                                                    parent.params)
        index = node.params.get("index")
        if not isinstance(index, int) or not 0 <= index < len(metas):
            raise _fail(graph, node, f"unpack index {index!r} out of range "
                                     f"({parent.op} gives {len(metas)} results)")
        expected = metas[index]
    else:
        try:
            expected = op.meta(list(node.args), node.params)
        except (CapvizError, ValueError, TypeError, IndexError, KeyError,
                OverflowError) as err:  # OverflowError: an update op's literal (ops/updates.py)
            raise _fail(graph, node, f"operands do not fit {node.op}: {err}") from None
        if op.multi:
            results[node.index] = expected
            if node.shape is not None or node.dtype is not None:
                raise _fail(graph, node, "a multi-output op has no shape of its own")
            return
    shape, dtype = expected
    if tuple(shape) != node.shape or np.dtype(dtype) != node.dtype:
        raise _fail(graph, node, f"recorded as {node.dtype}{list(node.shape or ())} but "
                                 f"{node.op} of its operands gives {np.dtype(dtype)}{list(shape)}")


def _symbolic(node: Node) -> bool:
    """Whether the node's shape, an operand's, or (an unpack's) its parent's operands' hold a
    size symbol."""
    if node.shape and has_symbol(node.shape):
        return True
    args = node.args[0].args if node.op == "unpack" and isinstance(node.args[0], Node) \
        else node.args
    return any(isinstance(a, Node) and a.shape and has_symbol(a.shape) for a in args)


def _check_symbolic(graph: Graph, node: Node, op: ops.Op) -> None:
    """An op on data-dependent sizes: its rule run with a stand-in number for each symbol
    (:func:`capviz.core.symbols.probe`) must give the recorded dtype and rank, each recorded
    symbol of an operand where the rule gives its stand-in, a new symbol (one whose origin is
    this node) where the rule gives a new size, and the recorded ints elsewhere; a rule that
    needed the numbers (the capture guarded them) is checked for its dtype and rank only."""
    parent = node.args[0] if node.op == "unpack" else node
    try:
        expected, stand_ins = probe(ops.OPS[parent.op].meta, list(parent.args),
                                    parent.params)
    except (CapvizError, ValueError, TypeError, IndexError, KeyError, OverflowError):
        expected, stand_ins = None, {}
    if op.multi:
        if node.shape is not None or node.dtype is not None:
            raise _fail(graph, node, "a multi-output op has no shape of its own")
        return
    if expected is not None and node.op == "unpack":
        index = node.params.get("index")
        if not isinstance(index, int) or not 0 <= index < len(expected):
            raise _fail(graph, node, f"unpack index {index!r} out of range")
        expected = expected[index]
    guarded = {(g.args[0].index, g.params.get("axis")) for g in graph.nodes[:node.index]
               if g.kind == "guard" and g.op == SIZE}
    if expected is None:
        if any((s.origin, s.axis) not in guarded for s in _operand_symbols(parent)):
            raise _fail(graph, node, f"operands do not fit {parent.op} for every length of "
                                     "their size symbols, and no guard fixes those lengths")
        return
    shape, dtype = expected
    fits = np.dtype(dtype) == node.dtype and len(shape) == len(node.shape)
    specialized = any((s.origin, s.axis) in guarded for s in _operand_symbols(parent))
    for want, got in zip(shape, node.shape or ()):
        if not fits:
            break
        if type(got) is Symbol:
            origin = graph.nodes[got.origin] if got.origin < len(graph.nodes) else None
            made_here = got.origin == node.index or (  # or by another result of this op,
                origin is not None and _same_op(origin, node, parent))  # or of its twin
            fits = stand_ins.get(id(got)) == want or (
                made_here and (type(want) is Pending or want not in stand_ins.values()))
        else:
            fits = want == got or specialized or (type(want) is Pending and specialized)
    if not fits:
        raise _fail(graph, node, f"recorded as {node.dtype}[{shape_text(node.shape)}] but "
                                 f"{node.op} of its operands gives {np.dtype(dtype)}"
                                 f"[{shape_text(shape)}] (size symbols at stand-in lengths)")


def _same_op(origin: Node, node: Node, parent: Node) -> bool:
    """Whether symbol origin ``origin`` is a result of ``parent`` (the op of ``node``) or of an
    earlier op computing the same (``y[y > 0]`` twice: one symbol)."""
    first = origin.args[0] if origin.op == "unpack" else origin
    return first is parent or (first.index < parent.index and same_value(first, parent))


def _operand_symbols(node: Node) -> list[Symbol]:
    return [s for a in node.args if isinstance(a, Node) for s in symbols_in(a.shape)]


def verify_graph(graph: Graph) -> None:
    """Check a graph's structure; raise :class:`GraphVerifyError` at the first problem.

    Checks: node kinds and program order (operands come earlier, so the graph is acyclic);
    every op's arity, params, and its recorded shape and dtype against its rule applied to the
    operands; multi-output ops read only through ``unpack``; constants hold arrays of their
    shape and dtype; inputs and outputs are named, unique and typed; violation records match
    their nodes.
    """
    input_names: set[str] = set()
    output_names: set[str] = set()
    results: dict[int, list] = {}
    for position, node in enumerate(graph.nodes):
        if node.index != position:
            raise _fail(graph, node, f"index {node.index} at position {position}")
        if node.kind not in KINDS:
            raise _fail(graph, node, f"unknown kind {node.kind!r}")
        for pos, a in node.operands:
            if a.index >= node.index or graph.nodes[a.index] is not a:
                raise _fail(graph, node, f"operand {pos} (%{a.index}) is not an earlier node "
                                         "of this graph")
            if a.kind not in _VALUE_KINDS:
                raise _fail(graph, node, f"operand {pos} is a {a.kind} node, which has no value")
            if a.kind == "op" and ops.OPS[a.op].multi and node.op != "unpack":
                raise _fail(graph, node, f"operand {pos} is the multi-output op %{a.index}; "
                                         "read it through unpack")
        if node.kind in ("input", "constant"):
            if node.args or node.shape is None or node.dtype is None:
                raise _fail(graph, node, f"a {node.kind} needs a shape and dtype and no args")
        if node.kind == "input" and node.params.get("declared", True):
            if not isinstance(node.name, str) or not node.name:
                raise _fail(graph, node, "an input needs a name")
            if node.name in input_names:
                raise _fail(graph, node, f"duplicate input name {node.name!r}")
            input_names.add(node.name)
        elif node.kind == "input" and graph.complete:
            raise _fail(graph, node, "undeclared input in a complete graph")
        elif node.kind == "constant":
            value = graph.constant_values.get(node.index)
            if value is None:
                raise _fail(graph, node, "constant has no recorded value")
            if tuple(value.shape) != node.shape or value.dtype != node.dtype:
                raise _fail(graph, node, f"constant value is {value.dtype}{list(value.shape)}")
        elif node.kind == "op":
            _check_op(graph, node, results)
        elif node.kind == "guard":
            if len(node.args) != 1 or not isinstance(node.args[0], Node) \
                    or "value" not in node.params:
                raise _fail(graph, node, "a guard reads one node and holds the value it read")
        elif node.kind == "state":
            if node.args or (node.shape is None) != (node.dtype is None):
                raise _fail(graph, node, "a state has no args, and a shape and dtype (an "
                                         "array) or neither (a generator)")
            of = node.params.get("of")
            if of is not None and not (isinstance(of, int) and 0 <= of < len(graph.nodes)
                                       and graph.nodes[of].kind == "state"
                                       and "of" not in graph.nodes[of].params
                                       and graph.nodes[of].dtype == node.dtype):
                raise _fail(graph, node, "a view state names the state of an array of its "
                                         "dtype")
        elif node.kind == "output" and "state" in node.params:
            written = node.params["state"]
            if not isinstance(written, int) or not 0 <= written < node.index \
                    or graph.nodes[written].kind != "state" or len(node.args) != 1:
                raise _fail(graph, node, "a state's output names an earlier state node and "
                                         "returns one node")
        elif node.kind == "output" and "effect" in node.params:
            if len(node.args) != 1 or not isinstance(node.args[0], Node) or \
                    node.params["effect"] not in ("append", "refill", "set", "attr", "part") or \
                    not isinstance(node.name, str):
                raise _fail(graph, node, "a logged value (an effect output) names its container "
                                         "and returns one node")
        elif node.kind == "output":
            if len(node.args) != 1 or not isinstance(node.args[0], Node):
                raise _fail(graph, node, "an output returns exactly one node")
            if not isinstance(node.name, str) or node.name in output_names:
                raise _fail(graph, node, f"output name {node.name!r} is missing or duplicate")
            output_names.add(node.name)
            src = node.args[0]
            if (node.shape, node.dtype) != (src.shape, src.dtype):
                raise _fail(graph, node, "output shape/dtype differs from the node it returns")
    records = {v.order: v for v in graph.violation_records}
    violation_nodes = [n for n in graph.nodes if n.kind == "violation"]
    if sorted(records) != [n.index for n in violation_nodes]:
        raise GraphVerifyError("violation records do not match the violation nodes")
    for n in violation_nodes:
        if records[n.index].kind != n.op:
            raise _fail(graph, n, "violation record kind differs from its node")
        _check_read_target(graph, n)
