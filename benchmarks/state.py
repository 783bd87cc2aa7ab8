"""What states and creation hooks cost. Run: python benchmarks/state.py [--rounds N]

1. A program with 100 state writes (an optimiser step updating 100 outside arrays in place,
   ``m += g * g; w -= lr * g / np.sqrt(m + eps)`` on each of 50 parameter/memory pairs) against
   the same program written functionally (the arrays passed as inputs, their new values
   returned as outputs): capture time, and replay time (the stateful replay reads the live arrays
   and writes the new values back; the functional one takes them as inputs and returns them).
   Goal: <= 1.2x. Two capture rows, honestly labelled:

   - **a later capture of the same function** (``opt.step`` of an object captured before):
     its states are lifted into the graph's signature and ``step`` runs once
     (capviz/trace/lifted.py; checked before timing: the run stood, no fall-back);
   - **the first capture of an object** (a new ``Optimiser`` each round, made before timing):
     the arrays ``step``'s statements write (``m += ...; w -= ...`` through the names of a loop
     over ``zip(self.params, self.mems)``: capviz/trace/loop_writes.py) are lifted before it
     runs, and it runs twice so lifted, the two graphs compared (checked before timing: both
     runs stood, no fall-back); the row under it is the same capture held to the two passes it
     took before (the guess left out, as tests/helpers/two_passes.py does: ``step`` captured
     twice, the second time with other values planted in the states,
     capviz/trace/recapture.py), which a first capture still takes where its guess does not
     stand.

   All against the same functional capture, in the same interleaved rounds. Then the peak
   memory each capture allocates (``tracemalloc``, not timed), against the states' bytes.
2. The creation hooks' cost on a capture that makes no buffer (an elementwise chain of 200 ops):
   capture with the hooks as shipped against capture with the creation hooks left out (no
   ``np.zeros``... stand-ins, no rebinding of names bound before the capture; the scope's other
   work on the same namespaces, ``memoised.note``, done on both sides), 20 captures to a
   measurement, 41 rounds at least, each round in the order with, without, with again, with
   again, without, with (the place in a round alone moved the ratio by ~1%); the row under it
   is the with-hooks capture against itself, the noise of the ratio on this machine. Goal:
   <= 1.02x.

All timed in interleaved rounds (each call after a collection, with the cycle collector off),
medians, by the clock ``--clock`` names: ``cpu`` (the default: this process's CPU time,
``time.process_time``, which other processes on a busy machine disturb less) or ``wall``
(``time.perf_counter``). Replays are timed 20 to a measurement (a replay takes under 1 ms,
finer than the CPU clock's step on some systems).
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np
from _common import chain, header, interleaved, row

import capviz as cv
from capviz.randomness import creation
from capviz.trace import lifted

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


def capture_state_checked(opt: Optimiser, g: np.ndarray):
    """Capture ``opt.step`` twice (a first capture, then a later one) and check that each lifted
    its 100 states and kept its lifted runs (no fall-back to the two passes)."""
    kept = []
    real = lifted.kept

    def spied(*args):
        kept.append(real(*args))
        return kept[-1]

    lifted.kept = spied
    try:
        first = cv.capture(opt.step, g)
        assert kept == [True, True], f"the first capture's lifted runs did not stand: {kept}"
        graph = cv.capture(opt.step, g)
    finally:
        lifted.kept = real
    assert len(first.state_nodes) == len(graph.state_nodes) == 2 * PAIRS
    assert kept == [True] * 3, f"a later capture did not stand in one pass: {kept}"
    return graph


def two_passes(fn):
    """``fn()`` with a first capture held to the two passes (its guess left out:
    tests/helpers/two_passes.py)."""
    real = lifted.plan

    def plan(fn, places, floats=True):
        made = real(fn, places, floats)
        return None if made is not None and made.guessed else made

    lifted.plan = plan
    try:
        return fn()
    finally:
        lifted.plan = real


def _peak(fn) -> int:
    """The peak bytes ``fn()`` allocates (tracemalloc; not timed)."""
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


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
    specs = [cv.spec((SIZE,), "float64") for _ in range(1 + 2 * PAIRS)]
    fresh = [Optimiser() for _ in range(2 * rounds + 2)]  # one new object per first capture

    def capture_first():
        return cv.capture(fresh.pop().step, g)

    def capture_later():
        return cv.capture(opt.step, g)

    def capture_functional():
        return cv.capture(functional, *specs)

    def capture_first_twice():
        return two_passes(capture_first)

    stateful, pure = capture_state_checked(opt, g), capture_functional()
    t_first, t_twice, t_later, t_pure = interleaved(
        [capture_first, capture_first_twice, capture_later, capture_functional], rounds,
        clock=clock)
    header(f"100 state writes vs the same program functional (medians of {rounds} rounds, "
           f"{parsed.clock} time)")
    row("capture (ms): a later capture of the same fn", f"{1e3 * t_later:.2f}",
        f"functional {1e3 * t_pure:.2f}", t_later / t_pure, "<= 1.2x")
    row("  (one pass, states lifted: trace/lifted.py)", "", "", t_later / t_pure)
    row("capture (ms): the first capture of an object", f"{1e3 * t_first:.2f}",
        f"functional {1e3 * t_pure:.2f}", t_first / t_pure, "<= 1.2x")
    row("  (two lifted runs, compared: trace/loop_writes.py)", "", "", t_first / t_pure)
    row("  held to the two passes (no guess; as before)", f"{1e3 * t_twice:.2f}",
        f"functional {1e3 * t_pure:.2f}", t_twice / t_pure)
    states_bytes = 2 * PAIRS * SIZE * 8
    header(f"peak memory a capture allocates (tracemalloc), against the states' "
           f"{states_bytes / 1024:.0f} KiB")
    for name, fn in (("the first capture (two lifted runs)", capture_first),
                     ("the first capture held to two passes", capture_first_twice),
                     ("a later capture (one pass)", capture_later),
                     ("the functional program's capture", capture_functional)):
        peak = _peak(fn)
        row(f"peak (KiB): {name}", f"{peak / 1024:.0f}", f"states {states_bytes / 1024:.0f}",
            peak / states_bytes)

    arrays = [*opt.params, *opt.mems]  # (taken only now: a reference held while capturing
    #                                    is one the walk does not explain, and nothing lifts)
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
    plan, rebind = creation.plan, creation.rebind

    def with_hooks():
        for _ in range(HOOK_CAPTURES):
            cv.capture(lambda x: chain(x, 200), x)

    def without_hooks():  # no stand-ins placed, no name bound before the capture rebound; the
        creation.plan = lambda: creation.NO_HOOKS  # rest of the scope's work (memoised.note
        #                                              of the same namespaces)
        creation.rebind = lambda *args: []  # as shipped
        try:
            for _ in range(HOOK_CAPTURES):
                cv.capture(lambda x: chain(x, 200), x)
        finally:
            creation.plan = plan
            creation.rebind = rebind

    def with_hooks_again():  # the same as with_hooks: the noise floor of the ratio
        with_hooks()

    # in each round the order with, without, again, again, without, with: a 1% difference is
    # finer than what the place in a round costs
    w1, wo1, a1, a2, wo2, w2 = interleaved(
        [with_hooks, without_hooks, with_hooks_again, with_hooks_again, without_hooks,
         with_hooks], max(rounds, 41), clock=clock)
    t_with, t_without, t_again = ((w1 + w2) / 2 / HOOK_CAPTURES, (wo1 + wo2) / 2 / HOOK_CAPTURES,
                                  (a1 + a2) / 2 / HOOK_CAPTURES)
    header("creation hooks on a capture that makes no buffer (200-op chain)")
    row("capture (ms)", f"{1e3 * t_with:.3f}", f"no creation hooks {1e3 * t_without:.3f}",
        t_with / t_without, "<= 1.02x")
    row("  the same capture against itself (noise)", f"{1e3 * t_again:.3f}",
        f"with hooks {1e3 * t_with:.3f}", t_again / t_with)


if __name__ == "__main__":
    main()
