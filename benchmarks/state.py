"""What states and creation hooks cost. Run: python benchmarks/state.py [--rounds N]

1. A program with 100 state writes (an optimiser step updating 100 outside arrays in place,
   ``m += g * g; w -= lr * g / np.sqrt(m + eps)`` on each of 50 parameter/memory pairs) against
   the same program written functionally (the arrays passed as inputs, their new values
   returned as outputs): capture time, and replay time (the stateful replay reads the live arrays
   and writes the new values back; the functional one takes them as inputs and returns them).
   Goal: <= 1.2x. ``cv.capture`` captures a function that writes outside arrays twice (the
   second time with other values planted in them, then compares the two graphs:
   capviz/trace/recapture.py), so the capture row is both captures; the row under it is the
   first capture alone (the same ``cv.capture`` call with the second capture switched off,
   which no user can do: it shows what the second one costs on top), against the same
   functional capture, in the same interleaved rounds.
2. The creation hooks' cost on a capture that makes no buffer (an elementwise chain of 200 ops):
   capture with the hooks as shipped against capture with the creation hooks left out (no
   ``np.zeros``... stand-ins, no rebinding of names bound before the capture), 20 captures to
   a measurement. Goal: <= 1.02x.

All timed in interleaved rounds (each call after a collection, with the cycle collector off),
medians, by the clock ``--clock`` names: ``cpu`` (the default: this process's CPU time,
``time.process_time``, which other processes on a busy machine disturb less) or ``wall``
(``time.perf_counter``). Replays are timed 20 to a measurement (a replay takes under 1 ms,
finer than the CPU clock's step on some systems).
"""

from __future__ import annotations

import argparse
import importlib
import time

import numpy as np
from _common import chain, header, interleaved, row

import capviz as cv
from capviz.randomness import creation
from capviz.trace import recapture

PAIRS = 50
SIZE = 256
LR = 0.01
HOOK_CAPTURES = 20  # captures per measurement of the hooks' cost: a 2% difference is ~25 us
#                     a capture, finer than one capture's noise on a shared machine


class Optimiser:
    """AdaGrad over 50 parameter arrays: 100 arrays written in place per step."""

    def __init__(self) -> None:
        gen = np.random.default_rng(0)
        self.params = [gen.standard_normal(SIZE) for _ in range(PAIRS)]
        self.mems = [np.zeros(SIZE) for _ in range(PAIRS)]

    def step(self, g):
        for w, m in zip(self.params, self.mems):
            m += g * g
            w -= LR * g / np.sqrt(m + 1e-8)
        return g * 1.0


def functional(g, *arrays):
    ws, ms = arrays[:PAIRS], arrays[PAIRS:]
    new_ws, new_ms = [], []
    for w, m in zip(ws, ms):
        m = m + g * g
        new_ms.append(m)
        new_ws.append(w - LR * g / np.sqrt(m + 1e-8))
    return (g * 1.0, *new_ws, *new_ms)


def twenty(fn):
    """``fn`` run 20 times."""

    def run() -> None:
        for _ in range(20):
            fn()

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parsed = parser.parse_args()
    rounds = parsed.rounds
    clock = time.process_time if parsed.clock == "cpu" else time.perf_counter

    opt = Optimiser()
    g = np.random.default_rng(1).standard_normal(SIZE)
    arrays = [*opt.params, *opt.mems]
    specs = [cv.spec((SIZE,), "float64") for _ in range(1 + 2 * PAIRS)]

    def capture_state():
        return cv.capture(opt.step, g)

    def capture_functional():
        return cv.capture(functional, *specs)

    writes_arrays = recapture.writes_arrays

    def capture_state_once():
        recapture.writes_arrays = lambda graph: False  # no second capture
        try:
            return cv.capture(opt.step, g)
        finally:
            recapture.writes_arrays = writes_arrays

    stateful, pure = capture_state(), capture_functional()
    assert len(stateful.state_nodes) == 2 * PAIRS
    t_state, t_once, t_pure = interleaved([capture_state, capture_state_once,
                                           capture_functional], rounds, clock=clock)
    header(f"100 state writes vs the same program functional (medians of {rounds} rounds, "
           f"{parsed.clock} time)")
    row("capture (ms): both captures", f"{1e3 * t_state:.2f}", f"functional {1e3 * t_pure:.2f}",
        t_state / t_pure, "<= 1.2x")
    row("  the first capture alone (ms)", f"{1e3 * t_once:.2f}",
        f"functional {1e3 * t_pure:.2f}", t_once / t_pure)
    row("  the second on top of it (ms)", f"{1e3 * (t_state - t_once):.2f}",
        f"functional {1e3 * t_pure:.2f}", (t_state - t_once) / t_pure)

    feed = dict(zip(pure.inputs, [g, *arrays]))
    run_state = stateful.compile()
    run_pure = pure.compile()
    r_state, r_pure = interleaved([twenty(lambda: stateful.replay({"g": g})),
                                   twenty(lambda: pure.replay(feed))], rounds, clock=clock)
    row("replay (ms)", f"{1e3 * r_state / 20:.3f}", f"functional {1e3 * r_pure / 20:.3f}",
        r_state / r_pure, "<= 1.2x")
    positional = [g, *arrays]
    c_state, c_pure = interleaved([twenty(lambda: run_state(g)),
                                   twenty(lambda: run_pure(*positional))], rounds, clock=clock)
    row("compiled replay (ms)", f"{1e3 * c_state / 20:.3f}", f"functional {1e3 * c_pure / 20:.3f}",
        c_state / c_pure, "<= 1.2x")

    x = cv.spec((64,), "float32")
    capture_module = importlib.import_module("capviz.capture")
    plan, namespaces = creation.plan, capture_module.CaptureScope._namespaces

    def with_hooks():
        for _ in range(HOOK_CAPTURES):
            cv.capture(lambda x: chain(x, 200), x)

    def without_hooks():
        creation.plan = list
        capture_module.CaptureScope._namespaces = lambda self: []
        try:
            for _ in range(HOOK_CAPTURES):
                cv.capture(lambda x: chain(x, 200), x)
        finally:
            creation.plan = plan
            capture_module.CaptureScope._namespaces = namespaces

    t_with, t_without = interleaved([with_hooks, without_hooks], max(rounds, 21), clock=clock)
    t_with, t_without = t_with / HOOK_CAPTURES, t_without / HOOK_CAPTURES
    header("creation hooks on a capture that makes no buffer (200-op chain)")
    row("capture (ms)", f"{1e3 * t_with:.3f}", f"no creation hooks {1e3 * t_without:.3f}",
        t_with / t_without, "<= 1.02x")


if __name__ == "__main__":
    main()
