"""Cost of watching generator objects (capviz/randomness/generator_watch.py) when a capture scope
opens and closes. Run: python benchmarks/generator_watch.py

The same small function (``x * 2 + 1``) captured with ``cv.capture`` from two modules: one with
a handful of globals (the baseline) and one with 1,000 globals (ints, strings, functions, 40
lists and 40 dicts of 100 items each, 10 generator objects), so every scope scans 1,000 values
and one level into 80 containers. Interleaved, medians of 15 rounds of 200 captures. Also the
watch alone on the big module (note the states, then compare them), as a share of a capture.

Then the process-wide backstop (capviz/randomness/backstop.py) in the same process (the 10
generators of the big module and every other one): a capture with it against the same capture
with it left out; the backstop alone per scope when no generator was made since the last scope
(note, then compare), and when one was (a look at the young objects); and its one pass over
every object of the process, made once, at the first capture.
"""

from __future__ import annotations

import gc
import time
import types

import numpy as np
from _common import header, interleaved, row

import capviz as cv
from capviz.randomness import backstop, generator_watch

SOURCE = "def small(x):\n    return x * 2 + 1\n"
CAPTURES = 200


def module(globals_count: int) -> types.ModuleType:
    """A module defining ``small``, with ``globals_count`` extra globals of mixed kinds."""
    mod = types.ModuleType(f"watch_bench_{globals_count}")
    exec(SOURCE, mod.__dict__)  # our own fixed source text
    for i in range(globals_count):
        kind = i % 25
        if kind == 0:
            value = list(range(100))
        elif kind == 1:
            value = {f"k{j}": j for j in range(100)}
        elif kind == 2 and i < 250:
            value = np.random.default_rng(i)
        elif kind % 2:
            value = f"text {i}"
        else:
            value = i
        mod.__dict__[f"g{i}"] = value
    return mod


def captures(fn):
    spec = cv.spec((4,), "float64")

    def run():
        for _ in range(CAPTURES):
            cv.capture(fn, spec)

    return run


def main() -> None:
    few, many = module(5), module(1000)
    assert len(generator_watch.note(generator_watch.function_roots(many.small))) == 10

    def watch_only():
        for _ in range(CAPTURES):
            generator_watch.changed(generator_watch.note(
                generator_watch.function_roots(many.small)))

    captures(few.small)()  # warm up
    t_few, t_many, t_watch = interleaved([captures(few.small), captures(many.small), watch_only],
                                         rounds=15)
    per = 1e6 / CAPTURES
    header(f"cv.capture(x * 2 + 1), per capture, medians of 15 rounds of {CAPTURES}")
    row("module of 1,000 globals (us)", f"{per * t_many:.1f}",
        f"module of 5 globals {per * t_few:.1f}", t_many / t_few, "(report)")
    row("watch alone, 1,000 globals (us)", f"{per * t_watch:.1f}",
        f"capture, 5 globals {per * t_few:.1f}", t_watch / t_few, "(report)")

    note = backstop.note

    def without_backstop():
        backstop.note = lambda others: []
        try:
            captures(few.small)()
        finally:
            backstop.note = note

    def backstop_only():
        for _ in range(CAPTURES):
            backstop.changed(backstop.note([]))

    def backstop_after_one_made():
        for _ in range(CAPTURES):
            np.random.default_rng(0)
            backstop.changed(backstop.note([]))

    t_with, t_without, t_alone, t_made = interleaved(
        [captures(few.small), without_backstop, backstop_only, backstop_after_one_made],
        rounds=15, clock=time.process_time)
    held = len(backstop._held)
    header(f"the process-wide backstop ({held} generators held), per scope, cpu time")
    row("capture with the backstop (us)", f"{per * t_with:.1f}",
        f"without {per * t_without:.1f}", t_with / t_without, "(report)")
    row("backstop alone, none made (us)", f"{per * t_alone:.1f}",
        f"capture {per * t_without:.1f}", t_alone / t_without, "(report)")
    row("backstop alone, one made (us)", f"{per * t_made:.1f}",
        f"capture {per * t_without:.1f}", t_made / t_without, "(report)")
    start = time.process_time()
    objects = gc.get_objects()
    backstop._take(objects)
    once = time.process_time() - start
    row("first capture's pass (ms)", f"{1e3 * once:.1f}", f"{len(objects)} objects", 1.0,
        "once")


if __name__ == "__main__":
    main()
