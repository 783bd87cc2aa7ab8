"""Helpers shared by the benchmarks: best-of-N timing and table printing."""

from __future__ import annotations

import time
from collections.abc import Callable


def chain(x, n):
    """The benchmarks' elementwise chain: n ops, alternating multiply and add."""
    for _ in range(n // 2):
        x = x * 1.0001
        x = x + 0.5
    return x


def best(fn: Callable[[], object], repeat: int = 5, number: int = 1) -> float:
    """Best wall time of ``number`` calls, over ``repeat`` runs, in seconds per call."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return min(times)


def row(name: str, value: str, baseline: str, ratio: float, goal: str = "") -> None:
    print(f"{name:<46} {value:>14} {baseline:>24} {ratio:>8.2f}x  {goal}")


def header(title: str) -> None:
    print(f"\n{title}")
    print(f"{'measure':<46} {'capviz':>14} {'baseline':>24} {'ratio':>9}  goal")


def interleaved(fns: list[Callable[[], object]], rounds: int = 11,
                clock: Callable[[], float] = time.perf_counter,
                rotate: bool = False) -> list[float]:
    """Median time of each of ``fns`` by ``clock`` (wall time; ``time.process_time`` counts
    this process's CPU time only, which other processes on a busy machine disturb less), run in
    turn for ``rounds`` rounds, in seconds; ``rotate``: each round starts one later in
    ``fns`` (no function always runs first after another).

    As ``timeit`` does, each call runs with the cycle collector off, after a collection, so no
    side pays for garbage the other left.
    """
    import gc
    import statistics

    times: list[list[float]] = [[] for _ in fns]
    for r in range(rounds):
        start_at = r % len(fns) if rotate and fns else 0
        order = list(zip(fns, times))
        for fn, kept in order[start_at:] + order[:start_at]:
            gc.collect()
            gc.disable()
            try:
                start = clock()
                fn()
                kept.append(clock() - start)
            finally:
                gc.enable()
    return [statistics.median(kept) for kept in times]


def ten_calls(jax, call, x) -> Callable[[], None]:
    """A round of the JAX benchmarks: ``call(x)`` ten times, each waited for."""
    def run() -> None:
        for _ in range(10):
            jax.block_until_ready(call(x))
    return run


def traced_with(graph, probe, module, name: str, value):
    """``graph`` compiled for jax and traced once on ``probe`` with ``module.name`` set to
    ``value`` for that trace, then put back (also where the trace fails): the compiled program
    keeps what it was traced with. The JAX benchmarks' "before" and "after" programs of one
    source: a switch of the backend off for one trace (``NUMPY_FUSES``, ``LITERAL_GUARDED``,
    the overflow check)."""
    import jax

    fn = graph.compile(backend="jax")
    kept = getattr(module, name)
    setattr(module, name, value)
    try:
        jax.block_until_ready(fn(probe))
    finally:
        setattr(module, name, kept)
    return fn
