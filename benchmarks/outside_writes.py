"""What copying the outside arrays costs a capture. Run: python benchmarks/outside_writes.py

``cv.capture(fn)`` copies the small outside arrays ``fn`` reaches by name before it runs and
compares them after each capture (capviz/trace/outside_writes.py: an array NumPy wrote with no
tensor is put back and refused). Measured on ``benchmarks/state.py``'s optimiser step (100
arrays of 2 KiB written in place, so both captures run): the capture as shipped against the
same capture with the copies left out (``outside_writes.note`` returning an empty snapshot),
5 captures to a measurement, in interleaved rounds (each side first in every other round),
medians, by the clock ``--clock`` names (``cpu``: this process's CPU time, the default; or
``wall``). Also the copies alone: ``note`` and one ``put_back`` of the 100 arrays.

``--big``: the same A/B on a layer reading one 100 MB float64 weight (``x @ self.W``), which
is watched by its fingerprint (XXH3-128 of its memory, before and after the capture) rather
than copied, one capture to a measurement; and the watch alone (``note`` and ``put_back``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import header, interleaved, row
from state import Optimiser

import capviz as cv
from capviz.trace import outside_writes
from capviz.trace import places as walk

CAPTURES = 5  # captures per measurement


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--big", action="store_true", help="a 100 MB weight instead")
    parsed = parser.parse_args()
    clock = time.process_time if parsed.clock == "cpu" else time.perf_counter
    if parsed.big:
        big(parsed.rounds, parsed.clock, clock)
        return

    opt = Optimiser()
    g = np.random.default_rng(1).standard_normal(opt.params[0].shape)
    real = outside_writes.note

    def without_copies(places):
        return outside_writes.Snapshot([], [])

    def shipped() -> None:
        outside_writes.note = real
        for _ in range(CAPTURES):
            cv.capture(opt.step, g)

    def left_out() -> None:
        outside_writes.note = without_copies
        try:
            for _ in range(CAPTURES):
                cv.capture(opt.step, g)
        finally:
            outside_writes.note = real

    def copies_alone() -> None:
        for _ in range(CAPTURES):
            real(walk.note(opt.step)).put_back()

    assert len(real(walk.note(opt.step)).noted) == 100
    half = max(parsed.rounds // 2, 1)
    first = interleaved([shipped, left_out], half, clock=clock)
    second = interleaved([left_out, shipped], half, clock=clock)[::-1]
    t_on, t_off = (first[0] + second[0]) / 2, (first[1] + second[1]) / 2
    (t_alone,) = interleaved([copies_alone], half, clock=clock)
    header(f"outside-array copies on the 100-write optimiser (medians of {half} + {half} "
           f"rounds, {parsed.clock} time)")
    row("capture (ms)", f"{1e3 * t_on / CAPTURES:.2f}",
        f"without copies {1e3 * t_off / CAPTURES:.2f}", t_on / t_off)
    row("the copies alone: walk, note, put_back (ms)", f"{1e3 * t_alone / CAPTURES:.3f}",
        f"capture without {1e3 * t_off / CAPTURES:.2f}", t_alone / t_off)


class Layer:
    """A layer whose weight is 100 MB (3536 x 3536 float64)."""

    def __init__(self) -> None:
        self.W = np.random.default_rng(0).standard_normal((3536, 3536))

    def forward(self, x: np.ndarray) -> np.ndarray:
        return x @ self.W


def big(rounds: int, clock_name: str, clock) -> None:
    """The ``--big`` rows (see the module docstring)."""
    layer = Layer()
    x = np.ones(3536)
    real = outside_writes.note

    def shipped() -> None:
        outside_writes.note = real
        cv.capture(layer.forward, x)

    def left_out() -> None:
        outside_writes.note = lambda places: outside_writes.Snapshot([], [])
        try:
            cv.capture(layer.forward, x)
        finally:
            outside_writes.note = real

    def watch_alone() -> None:
        real(walk.note(layer.forward)).put_back()

    assert [label for label, _, _ in real(walk.note(layer.forward)).watched] == ["self.W"]
    half = max(rounds // 2, 1)
    first = interleaved([shipped, left_out], half, clock=clock)
    second = interleaved([left_out, shipped], half, clock=clock)[::-1]
    t_on, t_off = (first[0] + second[0]) / 2, (first[1] + second[1]) / 2
    (t_alone,) = interleaved([watch_alone], half, clock=clock)
    header(f"the fingerprint watch of a 100 MB weight (medians of {half} + {half} rounds, "
           f"{clock_name} time)")
    row("capture of x @ self.W (ms)", f"{1e3 * t_on:.2f}", f"without the watch "
        f"{1e3 * t_off:.2f}", t_on / t_off)
    row("the watch alone: walk, note, put_back (ms)", f"{1e3 * t_alone:.2f}",
        f"capture without {1e3 * t_off:.2f}", t_alone / t_off)


if __name__ == "__main__":
    main()
