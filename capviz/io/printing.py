"""The jaxpr-like listing of a graph; names (``%3``) are given here, at print time."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from capviz import ops
from capviz.core import python_guards
from capviz.core.guards import SIZE, short
from capviz.core.ir import Graph, Node, dtype_name

_HIDDEN = ("draw", "shape", "dtype")


def type_text(node: Node) -> str:
    """``float32[4,4]``."""
    if node.dtype is None or node.shape is None:
        return ""
    return f"{dtype_name(node.dtype)}[{','.join(map(str, node.shape))}]"


def literal_text(value: object) -> str:
    """A static argument as it is printed."""
    if isinstance(value, slice):
        parts = ["" if v is None else str(v) for v in (value.start, value.stop, value.step)]
        return ":".join(parts[:2] if value.step is None else parts)
    if value is Ellipsis:
        return "..."
    return repr(value)


def index_text(index: tuple, short: bool = False) -> str:
    """``[0, 1:3]``; with ``short``, long index lists are abbreviated (:func:`short_text`)."""
    text = short_text if short else literal_text
    return "[" + ", ".join(text(i) for i in index) + "]"


LONG = 6  # sequences longer than this are abbreviated in labels


def short_text(value: object) -> str:
    """A static argument as a label shows it: long lists abbreviated, ``[0, 1, ..., 199]``."""
    if isinstance(value, (list, tuple)) and len(value) > LONG:
        head = ", ".join(short_text(v) for v in value[:2])
        text = f"{head}, ..., {short_text(value[-1])}"
        return f"[{text}]" if isinstance(value, list) else f"({text})"
    if isinstance(value, list):
        return "[" + ", ".join(short_text(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(short_text(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, np.generic):
        return str(value)  # 1e-05, not np.float32(1e-05): the dtype is on the node's type
    return literal_text(value)


def constant_text(node: Node, value: object = None) -> str:
    """How a constant shows on the ops that read it: a scalar (0-d or one element) by its
    value (``eps = 1e-05``, ``0.5``), an array by name and type (``w float32[8,8]``)."""
    size = getattr(value, "size", None)
    if size == 1:
        shown = str(value.reshape(())[()])  # NumPy's own shortest text: 1e-05 for float32
        return f"{node.name} = {shown}" if node.name else shown
    return f"{node.name or 'const'} {type_text(node)}"


def short_source(node: Node) -> str:
    if node.source is None:
        return ""
    file, line, _ = node.source
    return f"  # {os.path.basename(file)}:{line}"


def format_node(node: Node, names: dict[int, str] | None = None) -> str:
    """One line of the listing."""
    def name(n: Node) -> str:
        return names.get(n.index, f"%{n.index}") if names else f"%{n.index}"

    me = name(node)
    where = short_source(node)
    if node.kind == "input":
        label = node.name if node.name is not None else "<undeclared>"
        return f"{me} = input {label!s} : {type_text(node)}{where}"
    if node.kind == "constant":
        label = f" {node.name}" if node.name else ""
        return f"{me} = constant{label} : {type_text(node)}{where}"
    if node.kind == "state":
        label = node.name if node.name is not None else "<unnamed>"
        of = node.params.get("of")  # a view state: that state's array read before a write
        view = "" if of is None else f", a view of %{of} at the start"
        if "rebind" in node.params:  # (replay/state.py: a new array bound there each replay)
            view = ", bound to a new array each replay"
        return f"{me} = state {label!s} : {type_text(node) or 'generator'}{view}{where}"
    if node.kind == "output":
        if "state" in node.params:  # the value a replay writes back
            return f"state {node.name} = {name(node.args[0])}"
        if "effect" in node.params:  # a value a replay logs (capviz/trace/effects.py)
            kind, key = node.params["effect"], node.params.get("key")
            where = f"{node.name}[{key!r}] =" if kind == "set" else \
                f"{node.name}.{key} =" if kind == "attr" else \
                f"{node.name}.append" if kind == "append" else \
                f"{node.name} <- part" if kind == "part" else f"{node.name} (emptied).append"
            return f"log {where} {name(node.args[0])}"
        return f"output {node.name} = {name(node.args[0])}"
    if node.kind == "violation":
        level = node.params.get("level", "error")
        return f"!! {level} {node.op}: {node.params.get('call', '')}{where}"
    if node.kind == "guard":
        return f"guard {me}: {guard_text(node, name)}{where}"
    args = " ".join(name(a) if isinstance(a, Node) else literal_text(a) for a in node.args)
    params = dict(node.params)
    if node.op == "getitem":
        args += index_text(params.pop("index"))
    elif node.op == "setitem":  # %3 = setitem %0[1:] %2: the written part, then the value
        target, value = args.split(" ", 1)
        args = f"{target}{index_text(params.pop('index'))} {value}"
    if ops.is_random(node.op):
        params = {k: v for k, v in params.items() if k not in _HIDDEN or k == "draw"}
    extra = " ".join(f"{k}={literal_text(v)}" for k, v in params.items() if v is not None)
    text = f"{me} = {node.op}"
    if args:
        text += f" {args}"
    if extra:
        text += f" {extra}"
    type_part = type_text(node)
    if type_part:
        text += f" : {type_part}"
    return text + where


def guard_text(node: Node, name: Any = None) -> str:
    """``bool(%2) == True``, ``len(%3, axis=0) == 5``: what a guard read and the value it
    had on the capture's examples."""
    target = name(node.args[0]) if name is not None else f"%{node.args[0].index}"
    call = node.op
    inner = f"{target}, axis={node.params['axis']}" if call == SIZE else target
    if call.startswith("."):  # .item(), .tolist(): a method
        read = f"{target}{call}"
    elif call.endswith("()"):
        read = f"{call[:-2]}({inner})"
    else:
        read = f"{call} {inner}"
    return f"{read} == {short(node.params.get('value'))}"


def format_graph(graph: Graph) -> str:
    """The whole listing: one line per node in program order; a multi-output op is printed
    once, naming its results (``%3, %4 = split %1 ...``). A ``# block[0]/mha`` line precedes
    the nodes of each scope (``# (top level)`` when the code returns to the top)."""
    results: dict[int, list[Node]] = {}
    for n in graph.nodes:
        if n.op == "unpack":
            results.setdefault(n.args[0].index, []).append(n)
    lines = []
    scope = ""
    for n in graph.nodes:
        if n.op == "unpack":
            continue
        if n.scope != scope and n.kind != "output":
            scope = n.scope
            lines.append(f"# {scope or '(top level)'}")  # the scope the next lines are in
        line = format_node(n)
        parts = results.get(n.index)
        if parts:
            names = ", ".join(f"%{p.index}" for p in parts)
            types = ", ".join(type_text(p) for p in parts)
            body, sep, where = line.partition("  # ")
            line = f"{names} = {body.split(' = ', 1)[1]} : {types}" + (f"  # {where}" if sep
                                                                        else "")
        lines.append(line)
    for v in graph.logged_values:  # Python values a replay logs (capviz/trace/effects.py)
        where = f"{v.name}[{v.key!r}] =" if v.kind == "set" else \
            f"{v.name}.append" if v.kind == "append" else f"{v.name} (emptied).append"
        lines.append(f"log {where} {short_text(v.value)}  # the same each replay")
    lines += python_guards.listing(graph.python_guards)  # read again by every replay
    guards = sum(1 for n in graph.nodes if n.kind == "guard") + len(graph.python_guards)
    counted = f"{guards} guards, " if guards else ""
    head = (f"graph({', '.join(graph.inputs)}) -> ({', '.join(graph.outputs)})"
            f"  [{len(graph.ops)} ops, {counted}{len(graph.violation_records)} violations]")
    if graph.symbols:
        sizes = ", ".join(f"{s.name} = len(%{s.origin}, axis={s.axis}) <= {s.bound}"
                          for s in graph.symbols.values())
        head += f"\n  # sizes: {sizes}"
    return "\n".join([head] + ["  " + line for line in lines])


def format_window(graph: Graph, index: int, radius: int = 3) -> str:
    """The listing around node ``index``, the node marked with ``>>``."""
    lo, hi = max(0, index - radius), min(len(graph.nodes), index + radius + 1)
    out = []
    for n in graph.nodes[lo:hi]:
        mark = ">> " if n.index == index else "   "
        out.append(mark + format_node(n))
    return "\n".join(out)
