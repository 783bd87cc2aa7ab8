"""Diagnostics on top of replay: per-node statistics, and where a graph first differs from a
reference (eager code, or another backend)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends import contraction_bound, registry
from capviz.backends.registry import host_array
from capviz.core.errors import UnsupportedOperationError
from capviz.core.ir import Graph, Node
from capviz.core.source import format_source
from capviz.core.stats import Stats, value_stats
from capviz.replay.exactness import inexact_nodes, origin_text
from capviz.replay.run import Executor, resolve_seed
from capviz.trace.eager import EagerTrace
from capviz.trace.tensor import Tensor


def compute_stats(graph: Graph, inputs: Mapping[str, Any] | None, backend: str = "numpy",
                  seed: int | None = None, allow_violations: bool = False) -> dict[int, Stats]:
    """Replay keeping every value; store and return per-node :class:`Stats`."""
    ex = Executor(graph, inputs, backend=backend, keep=True, seed=seed,
                  allow_violations=allow_violations)
    ex.run()
    stats = {}
    for index, value in ex.values.items():
        s = value_stats(host_array(value))
        if s is not None:
            stats[index] = s
    graph.stats = stats
    return stats


@dataclasses.dataclass
class Divergence:
    """Where a graph first differs from a reference (``graph.compare``)."""

    node: Node | None
    max_abs: float = 0.0
    max_rel: float = 0.0
    message: str = ""

    def __bool__(self) -> bool:
        return self.node is not None


def _differs(a: Any, b: Any, rtol: float, atol: float) -> tuple[bool, float, float]:
    a = host_array(a)
    b = host_array(b)
    if a.shape != b.shape:
        return True, float("inf"), float("inf")
    if a.size == 0:
        return False, 0.0, 0.0
    if a.dtype.kind == "c" or b.dtype.kind == "c":  # each part on its own: a cast drops .imag
        parts = [_differs(f(a), f(b), rtol, atol) for f in (np.real, np.imag)]
        return parts[0][0] or parts[1][0], max(p[1] for p in parts), max(p[2] for p in parts)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    same = (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(a64 - b64))
    diff = np.where(np.isnan(diff), np.inf, diff)  # a NaN against a number
    # a reference that is not finite scales no tolerance: an infinity against a finite value
    # differs (inf > atol + rtol * inf would not say so)
    scale = np.where(np.isfinite(b64), np.abs(b64), 0.0)
    rel = diff / np.maximum(scale, np.finfo(np.float64).tiny)
    bad = diff > atol + rtol * scale
    if not (rtol or atol) and a.dtype.kind in "biu" and b.dtype.kind in "biu":
        bad |= a != b  # exact integers: float64 cannot tell them apart past 2**53
    return bool(bad.any()), float(diff.max()), float(rel.max())


def _eager_trace(graph: Graph, fn: Callable, inputs: Mapping[str, Any]) -> list:
    """Run ``fn`` eagerly on NumPy, logging ``(op name, result)`` of every op in order."""
    log: list[tuple[str, Any]] = []

    class Tracing(EagerTrace):
        def apply(self, op: ops.Op, args: tuple, params: dict) -> Any:
            out = super().apply(op, args, params)
            if op.multi:
                log.append((op.name, None))
                log.extend(("unpack", t._data) for t in out)
            else:
                log.append((op.name, out._data))
            return out

    backend = Tracing(registry.host())
    args = [Tensor(np.array(inputs[name], copy=True), backend) for name in graph.inputs]
    fn(*args)
    return log


DEFAULT_RTOL, DEFAULT_ATOL = 1e-5, 1e-6


def _tolerance(rtol: float | None, atol: float | None, dtype: Any, names: tuple[str | None, ...]
               ) -> tuple[float, float]:
    """``rtol``/``atol`` as given, else the default widened to every inexact backend's own
    tolerance for values of ``dtype`` (:meth:`capviz.backends.registry.Backend.tolerance_for`)."""
    if np.dtype(dtype).kind in "biu":  # integers and booleans: exact (capviz.replay.exactness)
        return (0.0 if rtol is None else rtol), (0.0 if atol is None else atol)
    r, a = DEFAULT_RTOL, DEFAULT_ATOL
    for name in names:
        if name is None:
            continue
        chosen = registry.get(name)
        if not chosen.exact:
            own_r, own_a = chosen.tolerance_for(np.dtype(dtype))
            r, a = max(r, own_r), max(a, own_a)
    return (r if rtol is None else rtol), (a if atol is None else atol)


def _why_inexact(graph: Graph, node: Node, dtype: Any, names: tuple[str | None, ...]) -> str:
    """For an integer or boolean computed from floats an inexact backend taking part rounds
    otherwise: why it differs (``capviz.replay.exactness``); else nothing."""
    inexact = [name for name in names if name is not None and not registry.get(name).exact]
    if not inexact or np.dtype(dtype).kind not in "biu":
        return ""
    origin = inexact_nodes(graph, registry.get(inexact[0])).get(node.index)
    if origin is None:
        return ""
    return (f"; an integer or boolean computed from floats (from {origin_text(origin)}) that "
            f"the {inexact[0]} backend rounds otherwise than NumPy: exact only on an exact "
            "backend")


def _own_arithmetic(graph: Graph, node: Node, names: tuple[str | None, ...]) -> str:
    """For a backend taking part that computes ``node`` or one of the values it is computed
    from with its engine's own arithmetic, unchecked (:meth:`Backend.own_arithmetic`: a replay
    there refuses such a node unless told to take that arithmetic), the first such node and
    why; else nothing. Stepping runs every op as the engine computes it, as the opt-in does."""
    for name in names:
        if name is None:
            continue
        engine = registry.get(name)
        found = _first_own_arithmetic(engine, node)
        if found is not None:
            other, why = found
            return (f"; the {name} backend computes %{other.index} ({other.op}, recorded at "
                    f"{format_source(other.source)}), which this value is computed from, with "
                    f"its own arithmetic: {why}. A {name} replay refuses that node unless "
                    f"given {engine.own_arithmetic_option}, which accepts this difference; "
                    "compare steps it as that option does")
    return ""


def _declared_contraction(node: Node, names: tuple[str | None, ...]) -> str:
    """For ``node`` computed from a contraction of linear algebra (not one itself), where a
    backend taking part has an arithmetic opt-in (JAX's ``arithmetic='xla'``, under which the
    contractions and what is computed from them take its engine's order, untested: the lead's
    ruling 37 07:30 (c)), the nearest such contraction, named with the option; else nothing."""
    engines = [name for name in names if name is not None
               and registry.get(name).own_arithmetic_option and not registry.get(name).exact]
    if not engines or contraction_bound.is_contraction_node(node):
        return ""
    seen: set[int] = set()
    stack = [a for a in node.args if isinstance(a, Node)]
    found: Node | None = None
    while stack:
        current = stack.pop()
        if current.index in seen:
            continue
        seen.add(current.index)
        if current.kind == "op" and contraction_bound.is_contraction_node(current):
            if found is None or current.index > found.index:
                found = current
            continue
        stack.extend(a for a in current.args if isinstance(a, Node))
    if found is None:
        return ""
    name = engines[0]
    option = registry.get(name).own_arithmetic_option
    return (f"; computed from %{found.index} ({found.op}, recorded at "
            f"{format_source(found.source)}), a contraction of linear algebra, declared "
            f"(NumPy's BLAS and the {name} engine add its products in their own orders, within "
            f"2 gamma_k |A| @ |B| of each other): a {name} replay fails where this difference "
            f"can pass the tolerance, unless given {option}, which takes the engine's order")


def _first_own_arithmetic(engine: registry.Backend, node: Node) -> tuple[Node, str] | None:
    """The first node, in program order, among ``node`` and the nodes it is computed from,
    that ``engine`` computes with its own arithmetic, unchecked, with the reason."""
    seen: set[int] = set()
    stack = [node]
    found: list[tuple[Node, str]] = []
    while stack:
        current = stack.pop()
        if current.index in seen:
            continue
        seen.add(current.index)
        if current.kind == "op":
            why = engine.own_arithmetic(current)
            if why is not None:
                found.append((current, why))
        stack.extend(a for a in current.args if isinstance(a, Node))
    return min(found, key=lambda item: item[0].index) if found else None


class _EagerValues:
    """The values eager NumPy gave the graph's ops (by node index), else the replay's (its
    inputs, constants and states are eager NumPy's too)."""

    def __init__(self, replayed: Mapping) -> None:
        self.replayed = replayed
        self.eager: dict[int, Any] = {}

    def __getitem__(self, node: Node) -> Any:
        held = self.eager.get(node.index)
        return self.replayed[node] if held is None else held


def _contraction_limit(node: Node, reference: Any, mine: Any, dtype: Any) -> np.ndarray | None:
    """The declared componentwise bound on ``node``'s difference from NumPy where it is a
    contraction of linear algebra (:mod:`capviz.backends.contraction_bound`), from its
    operands' values in ``reference`` (NumPy's side) and in ``mine`` (the engine's: each side
    ran the whole graph, so an operand may already differ within its own node's tolerance,
    and the bound then takes in what that moves the result by); else ``None``."""
    if not contraction_bound.is_contraction_node(node):
        return None
    try:
        args = [a for a in node.args if isinstance(a, Node)]
        operands = [host_array(reference[a]) for a in args]
        engine = [host_array(mine[a]) for a in args]
    except KeyError:  # an operand a side did not keep: the flat tolerance
        return None
    if all(not contraction_bound.apart(m, r).any() for m, r in zip(engine, operands)):
        return contraction_bound.bound(node.op, operands, node.params, dtype)
    return contraction_bound.perturbed(node.op, engine, operands, node.params, dtype)


def _refuse_states(graph: Graph) -> None:
    """Refuse ``compare(fn)`` on a graph with states, before anything runs: the eager call
    writes them in place through NumPy's own operators (``self.m += g``), which log no op to
    line up with the graph's, and would advance the user's arrays."""
    states = [n.name or f"%{n.index}" for n in graph.state_nodes
              if "of" not in n.params and n.dtype is not None]  # arrays (generators: draws)
    if not states:
        return
    raise UnsupportedOperationError(
        f"graph.compare(fn) cannot follow a graph with states ({', '.join(states)}): the "
        "eager call writes them in place through NumPy's own operators, which log no op to "
        "line up with the graph's, and it would advance them. Fix: capture fn written "
        "functionally (each state an input, its new value returned) and compare that graph "
        "with it, or compare replays' outputs with an eager call on copies of the arrays")


def compare(graph: Graph, fn: Callable | None, inputs: Mapping[str, Any] | None,
            rtol: float | None = None, atol: float | None = None, backend: str = "numpy",
            against: str | None = None, seed: int | None = None,
            allow_violations: bool = False) -> Divergence:
    """Find the first node, in program order, whose value differs beyond tolerance.

    The tolerance defaults to ``rtol=1e-5, atol=1e-6``, widened to the documented tolerance of
    an inexact backend taking part (``backend`` or ``against``) for each compared value's dtype
    (``Backend.tolerance_for``: JAX's ``(1e-4, 1e-4)``, float16's ``(1e-2, 1e-1)`` on JAX and
    Dask, see ``docs/guide/replay.md``), so that a difference within what the backend promises
    is not reported as a divergence. A contraction of linear algebra (``matmul``, ``dot``,
    ``einsum`` of two operands or more, ``tensordot``, ``inner``, ``vdot``, ``vecdot``,
    ``matvec``, ``vecmat``, ``linalg.multi_dot``) compared where an inexact backend takes part
    is held instead to its declared componentwise bound, ``|c - c_numpy| <= 2 * gamma_k *
    (|A| @ |B|)`` (:mod:`capviz.backends.contraction_bound`: the bound every order of its sum
    meets, ``|A| @ |B|`` computed by NumPy from the reference's operands). Pass
    ``rtol``/``atol`` to override both.

    With ``fn``: ``fn`` runs eagerly on NumPy (called with the inputs in graph order) while every
    op's result is logged; the graph replays on ``backend``; op results are compared in program
    order. With ``against``: the graph replays on ``backend`` and on ``against``. Both run
    node by node, each op as its engine computes it: an op whose result the engine's own
    arithmetic may change with no run-time check to see it (on JAX, ``np.linalg``, ``np.fft``,
    ``np.cov``... where XLA flushes subnormal floats to zero; a JAX replay refuses them unless
    given ``arithmetic="xla"``) is computed with that arithmetic, as the opt-in does, and a
    divergence at or after one names it.
    The first differing node is marked (``graph.marks["diverged"]``). A graph with error-level
    violations raises :class:`capviz.IncompleteGraphError` unless ``allow_violations``; a graph
    with states compared with ``fn`` raises :class:`capviz.UnsupportedOperationError` naming
    them, before anything runs (the eager call would write them in place).
    """
    if fn is not None and against is None:
        _refuse_states(graph)
    names = (backend, against)
    key = resolve_seed(graph, seed)
    ex = Executor(graph, inputs, backend=backend, keep=True, seed=key,
                  allow_violations=allow_violations)
    ex.run()
    op_nodes = [n for n in graph.nodes if n.kind == "op"]
    if against is not None:
        other = Executor(graph, inputs, backend=against, keep=True, seed=key,
                         allow_violations=allow_violations)
        other.run()
        pairs = [(n, ex.values[n], other.values[n]) for n in op_nodes]
        reference = other.values
    elif fn is not None:
        log = _eager_trace(graph, fn, inputs or {})
        # a buffer made inside the capture (np.zeros) and a generator's draw are NumPy's own
        # calls when fn runs eagerly: no op of the eager trace (their users are compared)
        op_nodes = [n for n in op_nodes if n.op not in ("create", "draw")]
        pairs = []
        reference = _EagerValues(ex.values)
        for n, (name, value) in zip(op_nodes, log):
            if name != n.op:
                graph.marks["diverged"] = n.index
                return Divergence(n, float("inf"), float("inf"),
                                  f"eager ran {name} where the graph has %{n.index} {n.op}: the "
                                  "programs differ here")
            pairs.append((n, ex.values[n], value))
            reference.eager[n.index] = value
        if len(log) != len(op_nodes):
            n = op_nodes[min(len(log), len(op_nodes) - 1)] if op_nodes else None
            if n is not None:
                graph.marks["diverged"] = n.index
            return Divergence(n, float("inf"), float("inf"),
                              f"eager ran {len(log)} ops, the graph has {len(op_nodes)}")
    else:
        raise TypeError("compare needs fn (an eager function) or against (a backend)")
    declared = rtol is None and atol is None and any(
        name is not None and not registry.get(name).exact for name in names)
    for n, mine, ref in pairs:
        if mine is None or ref is None or isinstance(mine, (tuple, list)):
            continue
        ref = host_array(ref)
        limit = _contraction_limit(n, reference, ex.values, ref.dtype) if declared else None
        if limit is not None:  # the contraction's declared componentwise bound
            _, max_abs, max_rel = _differs(mine, ref, 0.0, 0.0)
            bad = bool(contraction_bound.outside(host_array(mine), ref, limit).any())
            within = (" beyond the contraction's declared bound, 2 * gamma_k * (|A| @ |B|) "
                      "and what its operands' own differences move it by (docs/guide/replay.md)")
        else:
            bad, max_abs, max_rel = _differs(mine, ref, *_tolerance(rtol, atol, ref.dtype, names))
            within = ""
        if bad:
            graph.marks["diverged"] = n.index
            return Divergence(n, max_abs, max_rel,
                              f"%{n.index} ({n.op}, recorded at {format_source(n.source)}) "
                              f"differs{within}: max abs error {max_abs:.3g}, max rel error "
                              f"{max_rel:.3g}{_why_inexact(graph, n, ref.dtype, names)}"
                              f"{_own_arithmetic(graph, n, names)}"
                              f"{_declared_contraction(n, names)}")
    graph.marks.pop("diverged", None)
    return Divergence(None, 0.0, 0.0, "no node differs beyond tolerance")
