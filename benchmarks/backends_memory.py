"""Know before you run: the peak memory of a NumPy replay vs ``graph.memory_plan()``'s estimate.
Run: python benchmarks/backends_memory.py [--rounds N]

The measured peak is ``tracemalloc``'s (NumPy reports every array buffer it allocates to it)
over one ``graph.replay(..., backend="numpy")``, after a first replay compiled the graph; inputs
and constants exist before the measure starts, as the plan's ``peak_bytes`` leaves them out. The
figure is the median of ``rounds`` replays, and the ratio is measured / estimated (goal: within
10%, 0.9x to 1.1x). Graphs: a 3-layer MLP (batch 1024, width 1024), the transformer block of
``capviz.models`` (512 tokens, width 256), and the benchmarks' 100-op elementwise chain over
(1024, 1024) float32.

``run(rounds)`` returns the rows ``(name, figure, goal)`` for ``benchmarks/backends.py``.
"""

from __future__ import annotations

import argparse
import statistics
import tracemalloc

import numpy as np
from _common import chain

import capviz as cv
from capviz.models import transformer_block, transformer_weights


def _mlp_graph():
    rng = np.random.default_rng(0)
    ws = [(rng.standard_normal((1024, 1024)).astype(np.float32) / 32,
           np.zeros(1024, np.float32)) for _ in range(3)]

    def mlp(x):
        for k, (w, b) in enumerate(ws):
            x = x @ w + b
            if k < len(ws) - 1:
                x = np.maximum(x, 0)
        return x

    x = rng.standard_normal((1024, 1024)).astype(np.float32)
    return "MLP 3 x (1024, 1024)", cv.capture(mlp, cv.spec(x.shape)), x


def _transformer_graph():
    p = transformer_weights(d=256, heads=4)
    x = np.random.default_rng(1).standard_normal((512, 256)).astype(np.float32)
    graph = cv.capture(lambda x: transformer_block(x, p), cv.spec(x.shape))
    return "transformer block (512 tokens, width 256)", graph, x


def _chain_graph():
    x = np.ones((1024, 1024), np.float32)
    return "100-op chain over (1024, 1024) float32", cv.capture(lambda x: chain(x, 100),
                                                                 cv.spec(x.shape)), x


def traced_peak(graph, x) -> int:
    """Bytes ``tracemalloc`` saw at the peak of one NumPy replay (the graph compiled before)."""
    tracemalloc.start()
    try:
        graph.replay({"x": x}, backend="numpy")
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run(rounds: int = 5) -> list[tuple[str, str, str]]:
    """Measured peak vs the plan's estimate per graph: rows ``(name, figure, goal)``."""
    rows = []
    for make in (_mlp_graph, _transformer_graph, _chain_graph):
        name, graph, x = make()
        graph.replay({"x": x}, backend="numpy")  # compile outside the measure
        estimate = graph.memory_plan({"x": x}).peak_bytes
        peaks = []
        for _ in range(rounds):
            peaks.append(traced_peak(graph, x))
        measured = statistics.median(peaks)
        ratio = measured / estimate
        verdict = "ok" if 0.9 <= ratio <= 1.1 else "MISSED"
        rows.append((f"memory: {name}",
                     f"{measured / 2**20:.1f} MiB measured / {estimate / 2**20:.1f} MiB plan "
                     f"= {ratio:.3f}x",
                     f"within 10% (0.9x-1.1x), tracemalloc median of {rounds}: {verdict}"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="replays measured per graph")
    args = parser.parse_args()
    rows = run(args.rounds)
    width = max(len(name) for name, _, _ in rows)
    for name, figure, goal in rows:
        print(f"{name:<{width}}  {figure:<44}  goal: {goal}")


if __name__ == "__main__":
    main()
