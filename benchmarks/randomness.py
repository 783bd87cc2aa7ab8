"""Seeding hooks and random-op replay (issue: seed violations). Run: python benchmarks/randomness.py

- np.random.seed / random.seed outside a capture vs the same calls before capviz ever captured
  (the hooks exist only while a capture is open, so the goal is 1.00x), and while another thread
  holds a capture open (the hooks are in place, this thread is not capturing);
- replay of a recorded (1024, 1024) random draw vs NumPy's own generator (np.random.Generator on
  Philox) making the same number of values.
"""

from __future__ import annotations

import random
import threading

import numpy as np
from _common import best, header, row

import capviz as cv


def seed_cost(fn):
    return best(lambda: [fn(i) for i in range(2000)], repeat=7) / 2000


def main() -> None:
    base_np = seed_cost(np.random.seed)
    base_py = seed_cost(random.seed)
    with cv.CaptureDevice().capture_scope() as scope:
        scope.output(scope.input("x", (1,)) + 1)
    after_np = seed_cost(np.random.seed)
    after_py = seed_cost(random.seed)

    opened, release = threading.Event(), threading.Event()

    def hold_capture():
        with cv.CaptureDevice().capture_scope() as s:
            s.output(s.input("x", (1,)) + 1)
            opened.set()
            release.wait(60)

    t = threading.Thread(target=hold_capture)
    t.start()
    opened.wait(10)
    during_np = seed_cost(np.random.seed)
    during_py = seed_cost(random.seed)
    release.set()
    t.join()

    header("seeding outside a capture (per call)")
    row("np.random.seed after captures (us)", f"{1e6 * after_np:.2f}",
        f"never hooked {1e6 * base_np:.2f}", after_np / base_np, "goal <= 1.05x")
    row("random.seed after captures (us)", f"{1e6 * after_py:.2f}",
        f"never hooked {1e6 * base_py:.2f}", after_py / base_py, "goal <= 1.05x")
    row("np.random.seed, other thread capturing (us)", f"{1e6 * during_np:.2f}",
        f"never hooked {1e6 * base_np:.2f}", during_np / base_np, "(report)")
    row("random.seed, other thread capturing (us)", f"{1e6 * during_py:.2f}",
        f"never hooked {1e6 * base_py:.2f}", during_py / base_py, "(report)")

    dev = cv.Device("numpy")
    dev.seed(0)
    shape = (1024, 1024)
    header("random-op replay, (1024, 1024) draws")
    for name, draw, numpy_draw in [
        ("uniform float32", lambda: cv.random.uniform(shape),
         lambda g: g.random(shape, dtype=np.float32)),
        ("normal float32", lambda: cv.random.normal(shape),
         lambda g: g.standard_normal(shape, dtype=np.float32)),
        ("bernoulli p=0.1", lambda: cv.random.bernoulli(shape, p=0.1),
         lambda g: g.random(shape) < 0.1),
    ]:
        graph = cv.capture(lambda draw=draw: draw(), rng=dev)
        graph.replay({}, backend="numpy")
        t_replay = best(lambda graph=graph: graph.replay({}, backend="numpy"), repeat=7)
        gen = np.random.Generator(np.random.Philox(0))
        t_numpy = best(lambda numpy_draw=numpy_draw, gen=gen: numpy_draw(gen), repeat=7)
        row(f"replay {name} (ms)", f"{1e3 * t_replay:.2f}",
            f"numpy Philox {1e3 * t_numpy:.2f}", t_replay / t_numpy, "goal <= 2x")


if __name__ == "__main__":
    main()
