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
