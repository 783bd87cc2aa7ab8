"""Seeding hooks and random-op replay (issue: seed violations). Run: python benchmarks/randomness.py

- np.random.seed / random.seed, and global-generator draws (np.random.rand, random.random),
  outside a capture vs the same calls before capviz ever captured (the hooks exist only while a
  capture is open, so the goal is 1.00x), and while another thread holds a capture open (the
  hooks are in place, this thread is not capturing: a hooked call vs the original function,
  interleaved, medians of 9 rounds);
- replay of a recorded (1024, 1024) random draw vs NumPy's own generator (np.random.Generator on
  Philox) making the same number of values.
"""

from __future__ import annotations

import random
import statistics
import threading
import time

import numpy as np
from _common import best, header, row

import capviz as cv


def seed_cost(fn):
    return best(lambda: [fn(i) for i in range(2000)], repeat=7) / 2000


def draw_cost(fn):
    return best(lambda: [fn() for _ in range(2000)], repeat=7) / 2000


def interleaved(hooked, original, rounds=9, calls=2000):
    """Median per-call seconds of ``hooked()`` and ``original()``, timed in alternating rounds."""
    times = {hooked: [], original: []}
    for _ in range(rounds):
        for fn in (hooked, original):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times[fn].append((time.perf_counter() - start) / calls)
    return statistics.median(times[hooked]), statistics.median(times[original])


def rand16():
    return np.random.rand(16)


def py_random():
    return random.random()


def main() -> None:
    original_rand, original_random = np.random.rand, random.random
    for warm_up in (np.random.seed, random.seed):
        seed_cost(warm_up)
    for warm_up in (rand16, py_random):
        draw_cost(warm_up)
    base_np = seed_cost(np.random.seed)
    base_py = seed_cost(random.seed)
    base_rand = draw_cost(rand16)
    base_random = draw_cost(py_random)
    with cv.CaptureDevice().capture_scope() as scope:
        scope.output(scope.input("x", (1,)) + 1)
    assert np.random.rand is original_rand and random.random is original_random
    after_np = seed_cost(np.random.seed)
    after_py = seed_cost(random.seed)
    after_rand = draw_cost(rand16)
    after_random = draw_cost(py_random)

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
    assert np.random.rand is not original_rand  # hooked while the other thread captures
    hooked_rand, plain_rand = interleaved(rand16, lambda: original_rand(16))
    hooked_random, plain_random = interleaved(py_random, original_random)
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

    header("global-generator draws outside a capture (per call)")
    row("np.random.rand(16) after captures (us)", f"{1e6 * after_rand:.2f}",
        f"never hooked {1e6 * base_rand:.2f}", after_rand / base_rand, "goal <= 1.05x")
    row("random.random() after captures (us)", f"{1e6 * after_random:.2f}",
        f"never hooked {1e6 * base_random:.2f}", after_random / base_random, "goal <= 1.05x")
    row("np.random.rand(16), other thread capturing (us)", f"{1e6 * hooked_rand:.2f}",
        f"original {1e6 * plain_rand:.2f}", hooked_rand / plain_rand, "(report)")
    row("random.random(), other thread capturing (us)", f"{1e6 * hooked_random:.2f}",
        f"original {1e6 * plain_random:.2f}", hooked_random / plain_random, "(report)")

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
