"""What the guards on Python values cost a replay. Run: python benchmarks/python_guards.py

Each replay (``graph.replay`` and a compiled ``graph.compile()`` call) first reads every place
a guard names (``self.cfg.c17``: a weak reference, a ``getattr`` per step) and compares its
value with the captured one (capviz/core/python_guards.py). Measured on one graph: a model
whose config object holds N floats, all guarded (its forward reads one by ``getattr``, so the
walk takes every name as reachable); the baseline is the same graph with its guards removed,
timed in alternating rounds in the same process by its CPU time (medians of 15 rounds of
2,000 replays of a 4x3 input: the smallest replay, where the check weighs most). Each row
also holds the guards of the model's other values and of the module's globals the code names
(N + 5 in all).
"""

from __future__ import annotations

import os
import time

import numpy as np
from _common import header, interleaved, row

import capviz as cv

ROUNDS, CALLS = 15, 2000
CLOCK = time.process_time  # (this process's CPU time: a loaded machine disturbs it less)


class Config:
    def __init__(self, n: int) -> None:
        for k in range(n):
            setattr(self, f"c{k}", 0.5 + k)


class Model:
    def __init__(self, n: int) -> None:
        self.cfg = Config(n)
        self.training = True

    def forward(self, x):
        scale = getattr(self.cfg, "c0")  # (a name built at run time: every attribute guarded)
        if self.training:
            return x * scale
        return x


def graphs(n: int):
    model = Model(n)
    x = np.ones((4, 3))
    guarded = cv.capture(model.forward, x)
    plain = cv.capture(model.forward, x)
    plain.python_guards = []
    return model, x, guarded, plain


def main() -> None:
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    header("replay with N guards on Python values vs the same graph without them "
           f"(median of {ROUNDS} rounds of {CALLS} replays, 4x3 float64)")
    for n in (1, 10, 100, 1000):
        _model, x, guarded, plain = graphs(n)  # (held: a freed model's guards are skipped)
        count = len(guarded.python_guards)
        inputs = {"x": x}

        def replay(graph=None, inputs=inputs):
            for _ in range(CALLS):
                graph.replay(inputs)

        a, b = interleaved([lambda g=guarded: replay(g), lambda g=plain: replay(g)], ROUNDS,
                           CLOCK)
        row(f"graph.replay, {count} guards", f"{a / CALLS * 1e6:.2f} us",
            f"{b / CALLS * 1e6:.2f} us (none)", a / b,
            f"{(a - b) / CALLS / max(count, 1) * 1e9:.0f} ns per guard")
        fa, fb = guarded.compile(), plain.compile()

        def called(fn=None, x=x):
            for _ in range(CALLS):
                fn(x)

        a, b = interleaved([lambda f=fa: called(f), lambda f=fb: called(f)], ROUNDS, CLOCK)
        row(f"compiled call, {count} guards", f"{a / CALLS * 1e6:.2f} us",
            f"{b / CALLS * 1e6:.2f} us (none)", a / b,
            f"{(a - b) / CALLS / max(count, 1) * 1e9:.0f} ns per guard")


if __name__ == "__main__":
    main()
