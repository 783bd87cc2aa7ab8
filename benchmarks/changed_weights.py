"""What ``graph.changed()`` costs a loop that edits its weights in place every step (an
optimiser's ``W *= ...``, then ``graph.changed()``, then a replay): python
benchmarks/changed_weights.py [--size 256] [--layers 12] [--rounds 7].

A changed weight makes ``graph.changed()`` capture the function again from the live objects
(lead rulings 38 10:51, 39 14:10): the function may also have read the weight through NumPy
outside the graph (``x @ W / np.linalg.norm(W)``, a branch on ``W.sum()``, ``int(W[0, 0])``),
whose results the graph holds as the capture computed them, and no hook on a plain ndarray
tells whether it did (hostile review 11, finding 8: 3.5 -> 8-10 ms a step). Measured: 12 layers
``relu(x @ W + b)`` of ``size`` x ``size`` float64 weights (256: copied constants checked
against the user's arrays; 512: kept by reference), a batch of 8 rows, CPU time of one
thread (``time.process_time``), 20 steps a round, the three loops in turn in each round
(medians): the eager step (edit + the function), a replay alone, and edit + ``changed()`` +
replay; ratios against the replay alone and the eager step measured in the same rounds.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from _common import header, interleaved, row

import capviz as cv
from capviz.core import references


class MLP:
    def __init__(self, size: int, layers: int) -> None:
        r = np.random.default_rng(0)
        self.Ws = [r.standard_normal((size, size)) / size ** 0.5 for _ in range(layers)]
        self.bs = [np.zeros(size) for _ in range(layers)]

    def forward(self, x):
        for W, b in zip(self.Ws, self.bs):
            x = np.maximum(x @ W + b, 0)
        return x


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    model, eager_model = MLP(args.size, args.layers), MLP(args.size, args.layers)
    x = np.random.default_rng(1).standard_normal((8, args.size))
    graph = cv.capture(model.forward, x)
    kept = "kept by reference" if all(
        references.referenceable(w) for w in model.Ws) else "copied, checked"
    steps = args.steps

    def eager():
        for _ in range(steps):
            for W in eager_model.Ws:
                W *= 1.0001
            eager_model.forward(x)

    def replay():
        for _ in range(steps):
            graph.replay({"x": x})

    def changed():
        for _ in range(steps):
            for W in model.Ws:
                W *= 1.0001
            graph.changed()
            graph.replay({"x": x})

    changed()
    eager()
    np.testing.assert_array_equal(graph.replay({"x": x})["out"], eager_model.forward(x))
    t_eager, t_replay, t_changed = (t / steps for t in interleaved(
        [eager, replay, changed], rounds=args.rounds, clock=time.process_time))
    header(f"{args.layers} layers relu(x @ W + b), W {args.size}x{args.size} float64 ({kept}),"
           f" 8 rows: CPU ms a step (medians of {args.rounds} rounds of {steps} steps)")
    row("replay alone", f"{t_replay * 1e3:.3f} ms", f"eager {t_eager * 1e3:.3f} ms",
        t_replay / t_eager)
    row("edit + changed() + replay", f"{t_changed * 1e3:.3f} ms",
        f"replay alone {t_replay * 1e3:.3f} ms", t_changed / t_replay)
    row("edit + changed() + replay", f"{t_changed * 1e3:.3f} ms",
        f"eager {t_eager * 1e3:.3f} ms", t_changed / t_eager)


if __name__ == "__main__":
    main()
