"""Capture and replay cost (issue: core). Run: python benchmarks/capture_replay.py

Figures are ratios against baselines measured in the same run. Capture figures are medians of
interleaved rounds (capviz, baseline, capviz, baseline, ...) of this process's CPU time
(``time.process_time``: on a shared machine, wall time mostly measures the other processes),
the same work on both sides:
- capture per op of a 10,000-op elementwise chain, including building ``graph.nx``, vs bare
  Python recording the same program into networkx: a minimal tracer object whose ``*`` and
  ``+`` add a node (with the attributes ``graph.nx`` has: kind, op, shape, dtype, params, the
  caller's source line, order, scope, name, the literal operand) and one keyed edge per tensor
  operand through networkx's public API, run on the same ``chain`` function. Both sides run
  the user's code and build the networkx graph; the baseline infers nothing (it copies the
  operand's shape and dtype) and tracks no scopes, so it does less than capture. For reference,
  the same nodes recorded by an inline loop (no user code run, no operator dispatch) are
  printed too;
- capture with NumPy scalars (``x * np.float32(1.0001)``) vs the same chain with Python floats:
  both are inlined literals (goal <= 1.1x);
- re-using one (256, 256) float32 ndarray operand per op (each re-use compares its bits with the
  recorded snapshot, so a mutated buffer is recorded anew) vs the same ops on a constant tensor
  recorded once with scope.constant;
- replay per op on (4,) tensors vs the same NumPy code run eagerly (interleaved, CPU time);
- replay of 100 ops on (1024, 1024) float32 vs eager NumPy (interleaved, CPU time);
- bytes per captured op (tracemalloc), with the networkx view built.
"""

from __future__ import annotations

import sys
import time
import tracemalloc

import networkx as nx
import numpy as np
from _common import chain, header, interleaved, row

import capviz as cv


class BareTracer:
    """The baseline's tensor: what a user writes to record a program into networkx without
    capviz. Each operator adds a node carrying the attributes of capviz's ``graph.nx`` and one
    keyed edge per tensor operand, with networkx's public API."""

    __slots__ = ("dtype", "graph", "index", "shape")

    def __init__(self, graph, index, shape, dtype):
        self.graph = graph
        self.index = index
        self.shape = shape
        self.dtype = dtype

    def record(self, op, other):
        g = self.graph
        i = len(g)
        frame = sys._getframe(2)  # the user's line: record <- __mul__ <- user code
        code = frame.f_code
        traced = type(other) is BareTracer
        g.add_node(i, kind="op", op=op, shape=list(self.shape), dtype=self.dtype, params={},
                   source=f"{code.co_filename}:{frame.f_lineno} in {code.co_name}", order=i,
                   scope="", name=None, **({} if traced else {"literals": {"1": other}}))
        g.add_edge(self.index, i, key=0, kind="operand")
        if traced:
            g.add_edge(other.index, i, key=1, kind="operand")
        return BareTracer(g, i, self.shape, self.dtype)

    def __mul__(self, other):
        return self.record("multiply", other)

    def __add__(self, other):
        return self.record("add", other)


def traced_networkx(n):
    """The baseline: ``chain(x, n)`` recorded by :class:`BareTracer`, with an input node and
    an output node as capviz records them."""
    g = nx.MultiDiGraph(inputs=["x"], outputs=["out"], rng_seed=None)
    g.add_node(0, kind="input", op=None, shape=[4], dtype="float32", params={}, source=None,
               order=0, scope="", name="x")
    y = chain(BareTracer(g, 0, (4,), "float32"), n)
    i = len(g)
    g.add_node(i, kind="output", op=None, shape=list(y.shape), dtype=y.dtype, params={},
               source=None, order=i, scope="", name="out")
    g.add_edge(y.index, i, key=0, kind="operand")
    return g


def bare_networkx(n):
    """The same nodes recorded by an inline loop: no user code run, no operator dispatch (the
    earlier baseline, which benchmarks/scopes.py compares a capture without graph.nx with)."""
    g = nx.MultiDiGraph()
    g.add_node(0, kind="input", op=None, shape=[4], dtype="float32", params={}, source=None,
               order=0, scope="", name="x")
    frame = sys._getframe()
    for i in range(1, n + 1):
        code = frame.f_code
        g.add_node(i, kind="op", op="multiply", shape=[4], dtype="float32", params={},
                   source=f"{code.co_filename}:{frame.f_lineno} in {code.co_name}", order=i,
                   scope="", name=None, literals={"1": 1.0001})
        g.add_edge(i - 1, i, key=0, kind="operand")
    return g


def numpy_scalar_chain(x, n):
    """:func:`chain` with NumPy scalars instead of Python floats (strong float32 literals)."""
    a, b = np.float32(1.0001), np.float32(0.5)
    for _ in range(n // 2):
        x = x * a
        x = x + b
    return x


def capture_reused(n, array, as_constant):
    """Capture n adds of ``array`` (as an ndarray operand, or as one constant tensor)."""
    with cv.CaptureDevice().capture_scope() as scope:
        x = scope.input("x", array.shape, "float32")
        c = scope.constant(array, name="c") if as_constant else array
        for _ in range(n):
            x = x + c
        scope.output(x, name="y")


def main() -> None:
    n = 10_000
    spec = cv.spec((4,), "float32")
    t_capture, t_bare, t_inline = interleaved([
        lambda: cv.capture(lambda x: chain(x, n), spec).nx, lambda: traced_networkx(n),
        lambda: bare_networkx(n)], clock=time.process_time)
    header("capture (10,000-op elementwise chain; CPU time, medians of 11 interleaved rounds)")
    row("capture + graph.nx per op (us)", f"{1e6 * t_capture / n:.2f}",
        f"bare tracer + nx {1e6 * t_bare / n:.2f}", t_capture / t_bare, "goal <= 1.4x")
    row("  (same, vs inline recording)", f"{1e6 * t_capture / n:.2f}",
        f"inline nx {1e6 * t_inline / n:.2f}", t_capture / t_inline, "no user code run")
    t_np, t_py = interleaved([lambda: cv.capture(lambda x: numpy_scalar_chain(x, n), spec),
                              lambda: cv.capture(lambda x: chain(x, n), spec)],
                             clock=time.process_time)
    row("capture with NumPy scalars per op (us)", f"{1e6 * t_np / n:.2f}",
        f"Python floats {1e6 * t_py / n:.2f}", t_np / t_py, "goal <= 1.1x")
    m = 200
    array = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    t_reuse, t_const = interleaved([lambda: capture_reused(m, array, False),
                                    lambda: capture_reused(m, array, True)],
                                   clock=time.process_time)
    row("re-used (256,256) ndarray operand per op (us)", f"{1e6 * t_reuse / m:.2f}",
        f"constant tensor {1e6 * t_const / m:.2f}", t_reuse / t_const, "(bit compare per use)")
    graph = cv.capture(lambda x: chain(x, n), spec)

    x4 = np.ones(4, np.float32)
    graph.replay({"x": x4}, backend="numpy")
    t_replay, t_eager = interleaved([lambda: graph.replay({"x": x4}, backend="numpy"),
                                     lambda: chain(x4, n)], clock=time.process_time)
    header("replay, tiny tensors (shape (4,); CPU time, medians of 11 interleaved rounds)")
    row("replay per op (us)", f"{1e6 * t_replay / n:.3f}", f"eager numpy {1e6 * t_eager / n:.3f}",
        t_replay / t_eager, "goal <= 1.3x")

    big = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    g100 = cv.capture(lambda x: chain(x, 100), cv.spec(big.shape))
    g100.replay({"x": big}, backend="numpy")
    t_big, t_big_eager = interleaved([lambda: g100.replay({"x": big}, backend="numpy"),
                                      lambda: chain(big, 100)], rounds=7,
                                     clock=time.process_time)
    header("replay, large tensors (100 ops on (1024, 1024) float32; CPU time, medians of 7)")
    row("replay (ms)", f"{1e3 * t_big:.1f}", f"eager numpy {1e3 * t_big_eager:.1f}",
        t_big / t_big_eager, "goal <= 1.03x")

    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    kept = cv.capture(lambda x: chain(x, n), spec)
    captured = tracemalloc.take_snapshot()
    _ = kept.nx
    with_nx = tracemalloc.take_snapshot()
    tracemalloc.stop()
    size = sum(s.size_diff for s in captured.compare_to(before, "filename"))
    size_nx = sum(s.size_diff for s in with_nx.compare_to(before, "filename"))
    header("memory")
    row("bytes per captured op", f"{size / n:.0f}", "goal 2048", size / n / 2048,
        "goal <= 2 KB")
    row("bytes per op with graph.nx built", f"{size_nx / n:.0f}", "goal 2048",
        size_nx / n / 2048, "goal <= 2 KB")


if __name__ == "__main__":
    main()
