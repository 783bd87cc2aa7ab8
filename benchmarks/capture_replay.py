"""Capture and replay cost (issue: core). Run: python benchmarks/capture_replay.py

Figures are ratios against baselines measured in the same run. Capture figures are medians of
interleaved rounds (capviz, baseline, capviz, baseline, ...), the same work on both sides:
- capture per op of a 10,000-op elementwise chain, including building ``graph.nx``, vs bare
  Python recording the same nodes (with shape, dtype and source line) into a networkx
  MultiDiGraph (both sides build the networkx graph);
- capture with NumPy scalars (``x * np.float32(1.0001)``) vs the same chain with Python floats:
  both are inlined literals (goal <= 1.1x);
- re-using one (256, 256) float32 ndarray operand per op (each re-use compares its bits with the
  recorded snapshot, so a mutated buffer is recorded anew) vs the same ops on a constant tensor
  recorded once with scope.constant;
- replay per op on (4,) tensors vs the same NumPy code run eagerly;
- replay of 100 ops on (1024, 1024) float32 vs eager NumPy;
- bytes per captured op (tracemalloc), with the networkx view built.
"""

from __future__ import annotations

import sys
import tracemalloc

import networkx as nx
import numpy as np
from _common import best, chain, header, interleaved, row

import capviz as cv


def bare_networkx(n):
    """The baseline recorder: one node per op carrying the same attributes as capviz's
    ``graph.nx`` (kind, op, shape, dtype, params, source, order, scope, name, the literal
    operand), and one keyed edge per tensor operand."""
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
    t_capture, t_bare = interleaved([lambda: cv.capture(lambda x: chain(x, n), spec).nx,
                                     lambda: bare_networkx(n)])
    header("capture (10,000-op elementwise chain; medians of 11 interleaved rounds)")
    row("capture + graph.nx per op (us)", f"{1e6 * t_capture / n:.2f}",
        f"bare nx {1e6 * t_bare / n:.2f}", t_capture / t_bare, "goal <= 1.4x")
    t_np, t_py = interleaved([lambda: cv.capture(lambda x: numpy_scalar_chain(x, n), spec),
                              lambda: cv.capture(lambda x: chain(x, n), spec)])
    row("capture with NumPy scalars per op (us)", f"{1e6 * t_np / n:.2f}",
        f"Python floats {1e6 * t_py / n:.2f}", t_np / t_py, "goal <= 1.1x")
    m = 200
    array = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    t_reuse, t_const = interleaved([lambda: capture_reused(m, array, False),
                                    lambda: capture_reused(m, array, True)])
    row("re-used (256,256) ndarray operand per op (us)", f"{1e6 * t_reuse / m:.2f}",
        f"constant tensor {1e6 * t_const / m:.2f}", t_reuse / t_const, "(bit compare per use)")
    graph = cv.capture(lambda x: chain(x, n), spec)

    x4 = np.ones(4, np.float32)
    graph.replay({"x": x4}, backend="numpy")
    t_replay = best(lambda: graph.replay({"x": x4}, backend="numpy"), repeat=7)
    t_eager = best(lambda: chain(x4, n), repeat=7)
    header("replay, tiny tensors (shape (4,))")
    row("replay per op (us)", f"{1e6 * t_replay / n:.3f}", f"eager numpy {1e6 * t_eager / n:.3f}",
        t_replay / t_eager, "goal <= 1.3x")

    big = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    g100 = cv.capture(lambda x: chain(x, 100), cv.spec(big.shape))
    g100.replay({"x": big}, backend="numpy")
    t_big = best(lambda: g100.replay({"x": big}, backend="numpy"), repeat=5)
    t_big_eager = best(lambda: chain(big, 100), repeat=5)
    header("replay, large tensors (100 ops on (1024, 1024) float32)")
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
