"""What call-stack scopes cost a capture (issue 12). Run: python benchmarks/scopes.py

Captures of 10,000 ops with scope tracking on, against the same captures with the tracker's
per-op lookup replaced by one returning "" (scopes off), and against bare Python recording the
same nodes into networkx (benchmarks/capture_replay.py's baseline). Two programs: the
benchmarks' elementwise chain (every op in one frame: the fast path) and the same chain with a
function call per two ops (a new scope every two ops: the slow path). Rounds interleaved in
rotating order, medians of CPU time (``time.process_time``, less disturbed by other processes).
"""

from __future__ import annotations

import statistics
import time

from _common import chain, header, row
from capture_replay import bare_networkx

import capviz as cv
from capviz.trace import scopes

N = 10_000
ROUNDS = 15


def linear(x):
    x = x * 1.0001
    return x + 0.5


def calls(x, n):
    for _ in range(n // 2):
        x = linear(x)
    return x


def _off(self, frame, explicit):
    return ""


def main() -> None:
    spec = cv.spec((4,), "float32")
    real = scopes.ScopeTracker.path
    jobs = [("chain on", real, lambda: cv.capture(lambda x: chain(x, N), spec)),
            ("chain off", _off, lambda: cv.capture(lambda x: chain(x, N), spec)),
            ("calls on", real, lambda: cv.capture(lambda x: calls(x, N), spec)),
            ("calls off", _off, lambda: cv.capture(lambda x: calls(x, N), spec)),
            ("bare", real, lambda: bare_networkx(N))]
    times: dict[str, list[float]] = {name: [] for name, _, _ in jobs}
    try:
        for r in range(ROUNDS):
            for name, path, fn in jobs[r % len(jobs):] + jobs[:r % len(jobs)]:
                scopes.ScopeTracker.path = path
                start = time.process_time()
                fn()
                times[name].append(time.process_time() - start)
    finally:
        scopes.ScopeTracker.path = real
    us = {name: 1e6 * statistics.median(t) / N for name, t in times.items()}
    header(f"capture per op (us, CPU time, medians of {ROUNDS} rotating rounds)")
    row("chain, scopes on", f"{us['chain on']:.2f}", f"scopes off {us['chain off']:.2f}",
        us["chain on"] / us["chain off"], "the fast path")
    row("chain, scopes on", f"{us['chain on']:.2f}", f"bare nx {us['bare']:.2f}",
        us["chain on"] / us["bare"], "goal <= 1.4x")
    row("a call per 2 ops, scopes on", f"{us['calls on']:.2f}",
        f"scopes off {us['calls off']:.2f}", us["calls on"] / us["calls off"],
        "a new scope per 2 ops")
    row("a call per 2 ops, scopes on", f"{us['calls on']:.2f}", f"bare nx {us['bare']:.2f}",
        us["calls on"] / us["bare"], "")


if __name__ == "__main__":
    main()
