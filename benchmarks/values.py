"""Cost of example values and guards (docs/guide/values.md). Run: python benchmarks/values.py

1. Capture with an example array against capture from a spec, on a program that reads no value
   (a 200-op elementwise chain on a 256x256 float64 input): the example is kept by reference
   and nothing is computed, so the two should cost the same (goal <= 1.05x). Interleaved,
   medians of 15 rounds of 20 captures, in this process's CPU time (other processes on a busy
   machine disturb it less than wall time).
2. The guard check's cost per replay: a graph of 100 guarded reads (``while x.max() > 1:
   x = x * 0.9``, unrolled to 100 tests on a 64-element input) replayed on NumPy, against the
   same 100 ops without their guards (the graph with its guard nodes dropped), per guard and
   as a ratio of the replay. Interleaved, medians of 15 rounds of 200 replays.
"""

from __future__ import annotations

import time

import numpy as np
from _common import chain, header, interleaved, row

import capviz as cv
from capviz.core.ir import Graph

CAPTURES = 20
REPLAYS = 200


def reads_nothing(x):
    return chain(x, 200)


def captures(spec):
    def run():
        for _ in range(CAPTURES):
            cv.capture(reads_nothing, spec)

    return run


def guarded(x):
    while x.max() > 1.0:  # one guard per test
        x = x * 0.9
    return x


def without_guards(graph: Graph) -> Graph:
    """The same graph with its guard nodes dropped (operands re-linked by node object)."""
    bare = type(graph)()
    bare.constant_values.update(graph.constant_values)
    for n in graph.nodes:
        if n.kind == "guard":
            continue
        bare.nodes.append(n)
    for i, n in enumerate(bare.nodes):
        n.index = i
    bare.complete = True
    return bare


def replays(graph, x):
    compiled = graph.compile(backend="numpy")

    def run():
        for _ in range(REPLAYS):
            compiled(x)

    return run


def main() -> None:
    example = np.random.default_rng(0).random((256, 256))
    spec = cv.spec(example.shape, example.dtype)
    captures(example)()  # warm up
    captures(spec)()
    t_spec, t_example = interleaved([captures(spec), captures(example)], rounds=15,
                                    clock=time.process_time)  # this process's CPU time
    per = 1e3 / CAPTURES
    header(f"capture of a 200-op program reading no value, per capture, medians of 15 rounds "
           f"of {CAPTURES}")
    row("example array (ms)", f"{per * t_example:.2f}", f"spec {per * t_spec:.2f}",
        t_example / t_spec, "<= 1.05x")

    x = np.full(64, 0.9999 / 0.9 ** 99)  # 99 tests true, the 100th false
    x[0] = 1.0
    graph = cv.capture(guarded, x)
    guards = len(graph.guards)
    assert guards == 100, guards
    import copy

    bare = without_guards(copy.deepcopy(graph))
    replays(graph, x)()
    t_guarded, t_bare = interleaved([replays(graph, x), replays(bare, x)], rounds=15,
                                    clock=time.process_time)
    per = 1e6 / REPLAYS
    header(f"replay of a graph of {guards} guards (and {len(graph.ops)} ops) on NumPy, per "
           f"replay, medians of 15 rounds of {REPLAYS}")
    row("with the guards' checks (us)", f"{per * t_guarded:.1f}", f"without {per * t_bare:.1f}",
        t_guarded / t_bare, "(report)")
    row("one guard's check (us)", f"{per * (t_guarded - t_bare) / guards:.2f}",
        f"one op {per * t_bare / len(graph.ops):.2f}",
        (t_guarded - t_bare) / t_bare * len(graph.ops) / guards, "(report)")


if __name__ == "__main__":
    main()
