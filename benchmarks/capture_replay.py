"""Capture and replay cost (issue: core). Run: python benchmarks/capture_replay.py

Figures are ratios against baselines measured in the same run:
- capture per op of a 10,000-op elementwise chain vs bare Python recording the same nodes (with
  shape, dtype and source line) into a networkx MultiDiGraph;
- replay per op on (4,) tensors vs the same NumPy code run eagerly;
- replay of 100 ops on (1024, 1024) float32 vs eager NumPy;
- bytes per captured op (tracemalloc), with the networkx view built.
"""

from __future__ import annotations

import sys
import tracemalloc

import networkx as nx
import numpy as np
from _common import best, chain, header, row

import capviz as cv


def bare_networkx(n):
    """The baseline recorder: one node with attributes and one keyed edge per op."""
    g = nx.MultiDiGraph()
    g.add_node(0, kind="input", shape=[4], dtype="float32")
    frame = sys._getframe()
    for i in range(1, n + 1):
        g.add_node(i, kind="op", op="multiply", shape=[4], dtype="float32",
                   source=f"{frame.f_code.co_filename}:{frame.f_lineno}", order=i)
        g.add_edge(i - 1, i, key=0)
    return g


def main() -> None:
    n = 10_000
    spec = cv.spec((4,), "float32")
    t_capture = best(lambda: cv.capture(lambda x: chain(x, n), spec), repeat=5)
    t_bare = best(lambda: bare_networkx(n), repeat=5)
    graph = cv.capture(lambda x: chain(x, n), spec)
    t_nx = best(lambda: (setattr(graph, "_nx", None), graph.nx), repeat=3)
    header("capture (10,000-op elementwise chain)")
    row("capture per op (us)", f"{1e6 * t_capture / n:.2f}", f"bare nx {1e6 * t_bare / n:.2f}",
        t_capture / t_bare, "goal <= 4 us/op")
    row("  + building graph.nx on first access (us/op)", f"{1e6 * t_nx / n:.2f}", "-", 0.0)

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
