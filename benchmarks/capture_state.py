"""What per-context capture state costs each recorded op. Run: python benchmarks/capture_state.py

Every recorded op asks "is this recorder open in the current context?" and reads the current
name-scope entries. capviz keeps both in ``contextvars`` (so asyncio tasks have their own
captures); the baseline is the thread-local design it replaced (``threading.get_ident()``
compared with the recorder's thread, a ``threading.local`` attribute), run on the same recorder
in the same process. Timed in alternating rounds; medians of 15 rounds of 200,000 checks. The
last row puts the difference next to the capture cost of one op of the 10,000-op chain.
"""

from __future__ import annotations

import statistics
import threading
import time

from _common import chain, header, row

import capviz as cv
from capviz.trace import context


class _ThreadState(threading.local):
    """The baseline: the thread-local state capviz used before contextvars."""

    def __init__(self) -> None:
        self.scope_path = ""


def interleaved(fns, rounds=15):
    """Median seconds of each function, timed in alternating rounds."""
    times = [[] for _ in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def main() -> None:
    n = 200_000
    state = _ThreadState()
    with cv.CaptureDevice("bench").capture_scope() as scope:
        recorder = scope.recorder
        recorders = context.RECORDERS
        scopes = context.NAME_SCOPE
        get_ident = threading.get_ident

        def contextvars_check():
            for _ in range(n):
                if recorder.closed or recorder not in recorders.get():
                    raise AssertionError
                scopes.get()

        def thread_local_check():
            for _ in range(n):
                if recorder.closed or recorder.thread != get_ident():
                    raise AssertionError
                state.scope_path

        t_new, t_old = interleaved([contextvars_check, thread_local_check])
    header("per-op capture state check (medians of 15 interleaved rounds)")
    row("contextvars: open here? + name scopes (ns)", f"{1e9 * t_new / n:.1f}",
        f"thread-local {1e9 * t_old / n:.1f}", t_new / t_old)

    ops = 10_000
    spec = cv.spec((4,), "float32")
    (t_capture,) = interleaved([lambda: cv.capture(lambda x: chain(x, ops), spec)], rounds=5)
    per_op = t_capture / ops
    row("difference, as a share of capturing one op", f"{1e9 * (t_new - t_old) / n:.1f} ns",
        f"capture {1e6 * per_op:.2f} us/op", (t_new - t_old) / n / per_op)


if __name__ == "__main__":
    main()
