"""Replay against eager NumPy (issue 14). Run: python benchmarks/replay.py [--quick]

Every ratio divides capviz by the same NumPy code run eagerly in the same process, the two run
in turn (interleaved rounds), each figure the median of its rounds. The first replay of a graph
(which compiles it) is reported apart from the steady state.

- tiny tensors: a 10,000-op chain on shape (4,), per op (goal <= 1.1x eager);
- fixed cost per call: a 1-op graph through ``graph.compile()`` and through ``graph.replay()``
  (NumPy, and the default ``backend="auto"``, which looks for CuPy),
  minus the eager op (goal <= 3 us);
- a 100-op elementwise chain on (1024, 1024) float32 (goal <= 0.8x eager: the memory plan
  writes every result into one buffer, where eager allocates 100);
- the NumPy transformer block of ``capviz.models`` at width 768, 1024 tokens (goal <= 0.95x);
- compile (the table and the memory plan) per op and its peak memory per op, at 1e3, 1e4, 1e5
  and 1e6 ops (goal <= 5 us and <= 1 KB per op), one row per size so non-linearity shows.

``--quick`` stops the compile rows at 1e5 ops (the 1e6-op capture alone takes seconds).
"""

from __future__ import annotations

import sys
import time
import tracemalloc

import numpy as np
from _common import chain, header, interleaved, row

import capviz as cv
from capviz.models import transformer_block, transformer_weights
from capviz.replay.program import Program


def tiny(n: int = 10_000) -> None:
    graph = cv.capture(lambda x: chain(x, n), cv.spec((4,)))
    x4 = np.ones(4, np.float32)
    fn = graph.compile(backend="numpy")
    t_first = _once(lambda: fn(x4))
    t_compiled, t_replay, t_eager = interleaved(
        [lambda: fn(x4), lambda: graph.replay({"x": x4}, backend="numpy"),
         lambda: chain(x4, n)], rounds=11)
    header(f"tiny tensors: {n:,}-op chain on shape (4,), per op (medians of 11 rounds)")
    row("graph.compile() call per op (us)", f"{1e6 * t_compiled / n:.3f}",
        f"eager numpy {1e6 * t_eager / n:.3f}", t_compiled / t_eager, "goal <= 1.1x")
    row("graph.replay() per op (us)", f"{1e6 * t_replay / n:.3f}",
        f"eager numpy {1e6 * t_eager / n:.3f}", t_replay / t_eager, "goal <= 1.1x")
    row("first call (compiles) per op (us)", f"{1e6 * t_first / n:.3f}",
        f"eager numpy {1e6 * t_eager / n:.3f}", t_first / t_eager, "(once per graph)")


def fixed_cost(calls: int = 2_000) -> None:
    graph = cv.capture(lambda x: x * 2.0, cv.spec((4,)))
    x4 = np.ones(4, np.float32)
    fn = graph.compile(backend="numpy")
    feed = {"x": x4}

    def repeat(call):
        def run():
            for _ in range(calls):
                call()
        return run

    t_fn, t_replay, t_auto, t_eager = interleaved(
        [repeat(lambda: fn(x4)), repeat(lambda: graph.replay(feed, backend="numpy")),
         repeat(lambda: graph.replay(feed)), repeat(lambda: x4 * 2.0)], rounds=11)
    header("fixed cost per call: a 1-op graph minus the eager op (medians of 11 rounds)")
    row("graph.compile() call beyond its op (us)", f"{1e6 * (t_fn - t_eager) / calls:.2f}",
        f"eager op {1e6 * t_eager / calls:.2f}", (t_fn - t_eager) / calls / 3e-6,
        "goal <= 3 us (ratio to 3 us)")
    row("graph.replay() beyond its op (us)", f"{1e6 * (t_replay - t_eager) / calls:.2f}",
        f"eager op {1e6 * t_eager / calls:.2f}", (t_replay - t_eager) / calls / 3e-6,
        "(dict in, dict out; ratio to 3 us)")
    row("graph.replay(), backend auto (us)", f"{1e6 * (t_auto - t_eager) / calls:.2f}",
        f"eager op {1e6 * t_eager / calls:.2f}", (t_auto - t_eager) / calls / 3e-6,
        "(the default: looks for CuPy; ratio to 3 us)")


def large_chain() -> None:
    big = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    graph = cv.capture(lambda x: chain(x, 100), cv.spec(big.shape))
    fn = graph.compile(backend="numpy")
    t_first = _once(lambda: fn(big))
    assert fn(big)[0].tobytes() == chain(big, 100).tobytes()
    t_fn, t_eager = interleaved([lambda: fn(big), lambda: chain(big, 100)], rounds=9)
    plan = graph.memory_plan()
    header("large tensors: 100-op chain on (1024, 1024) float32 (medians of 9 rounds)")
    row("planned replay (ms)", f"{1e3 * t_fn:.2f}", f"eager numpy {1e3 * t_eager:.2f}",
        t_fn / t_eager, "goal <= 0.8x")
    row("first call, compiles (ms)", f"{1e3 * t_first:.2f}", f"eager numpy {1e3 * t_eager:.2f}",
        t_first / t_eager, "(once per graph)")
    row("peak bytes of results (plan)", f"{plan.peak_bytes:,}", f"one value {big.nbytes:,}",
        plan.peak_bytes / big.nbytes, f"({len(plan.reuses)} of 100 results in a reused buffer)")


def transformer() -> None:
    p = transformer_weights(d=768, heads=12)
    x = np.random.default_rng(1).standard_normal((1024, 768)).astype(np.float32)
    graph = cv.capture(lambda x: transformer_block(x, p), cv.spec(x.shape))
    fn = graph.compile(backend="numpy")
    t_first = _once(lambda: fn(x))
    assert fn(x)[0].tobytes() == transformer_block(x, p).tobytes()
    t_fn, t_eager = interleaved([lambda: fn(x), lambda: transformer_block(x, p)], rounds=7)
    header("NumPy transformer block, width 768, 1024 tokens (medians of 7 rounds)")
    row("planned replay (ms)", f"{1e3 * t_fn:.1f}", f"eager numpy {1e3 * t_eager:.1f}",
        t_fn / t_eager, "goal <= 0.95x")
    row("first call, compiles (ms)", f"{1e3 * t_first:.1f}", f"eager numpy {1e3 * t_eager:.1f}",
        t_first / t_eager, "(once per graph)")


def compile_sizes(sizes: tuple[int, ...]) -> None:
    header("compile (table + memory plan) per op; goal <= 5 us and <= 1 KB per op")
    for n in sizes:
        graph = cv.capture(lambda x, n=n: chain(x, n), cv.spec((4,)))
        rounds = 5 if n <= 10_000 else 3 if n <= 100_000 else 1
        (t,) = interleaved([lambda graph=graph: Program(graph, "numpy")], rounds=rounds)
        tracemalloc.start()
        try:
            Program(graph, "numpy")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        row(f"compile time per op at {n:,} ops (us)", f"{1e6 * t / n:.2f}", "goal 5.00",
            1e6 * t / n / 5, "goal <= 1x (ratio to 5 us)")
        row(f"compile memory per op at {n:,} ops (B)", f"{peak / n:.0f}", "goal 1024",
            peak / n / 1024, "goal <= 1x (ratio to 1 KB)")



def _once(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    quick = "--quick" in sys.argv
    tiny()
    fixed_cost()
    large_chain()
    transformer()
    compile_sizes((1_000, 10_000, 100_000) if quick else (1_000, 10_000, 100_000, 1_000_000))


if __name__ == "__main__":
    main()
