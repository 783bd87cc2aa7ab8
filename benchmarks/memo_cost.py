"""What finding the memo caches a capture filled costs. Run: python benchmarks/memo_cost.py

A capture of a 40-op chain whose module namespace also holds 50 plain dicts of 5,000 items
each (lookup tables, a vocabulary, results: not memos, not named by the function), against the
same function in a namespace without them (hostile review 5, finding 10: every capture noted the
user's plain dicts, 71.7 ms against 0.96 ms). The memos are found by the code the capture ran
(capviz/randomness/memoised.py), so the dicts the code does not name cost nothing. A second
row: the same with the function filling a memo dict held in a closure of a helper (found,
given its items back at the exit) against the same function with the memo filled eagerly first.

Interleaved rounds, medians (benchmarks/_common.interleaved); ``--clock cpu`` for process time.
"""

from __future__ import annotations

import argparse
import atexit
import os
import tempfile
import time
import types

import numpy as np
from _common import chain, header, interleaved, row

import capviz as cv

SOURCE = '''
def f(x):
    return chain(x, 40)


def g(x):
    return chain(x, 40) * mask(x.shape[0])[0]
'''


def _masks():
    cache = {}

    def mask(n):
        if n not in cache:
            cache[n] = np.tril(np.ones((n, n)))
        return cache[n]

    return mask, cache


def _function(tables: int, items: int, mask, name: str = "f") -> types.FunctionType:
    space: dict = {"__name__": "user_namespace", "chain": chain, "mask": mask, "np": np}
    for k in range(tables):
        space[f"table_{k}"] = {i: float(i) for i in range(items)}
    exec(compile(SOURCE, _source_file(), "exec"), space)  # (a user's file: memo walk applies)
    return space[name]


def _source_file() -> str:
    """A file holding :data:`SOURCE`, as a user's module holds its functions: the capture
    reads the lines of the functions it runs (the lines that read a guarded value), and a
    function compiled under this file's name found other lines here, tokenizing the module's
    docstring as its body (a heavier capture: a ratio that flattered the memo walk)."""
    path = os.path.join(tempfile.gettempdir(), f"capviz_memo_cost_{os.getpid()}.py")
    if not os.path.exists(path):
        with open(path, "w") as out:
            out.write(SOURCE)
        atexit.register(os.remove, path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    spec = cv.spec((8,), "float64")

    mask, cache = _masks()
    with_tables = _function(50, 5000, mask)
    without = _function(0, 0, mask)
    t_with, t_without = interleaved([lambda: cv.capture(with_tables, spec),
                                     lambda: cv.capture(without, spec)], args.rounds, clock)
    header("capture with 50 dicts of 5,000 items in the function's namespace")
    row("capture (ms)", f"{1e3 * t_with:.3f}", f"no such dicts {1e3 * t_without:.3f}",
        t_with / t_without, "<= 1.05x")

    masked = _function(0, 0, mask, "g")

    def filled():
        cache.clear()
        cv.capture(masked, spec)

    def prefilled():
        mask(8)
        cv.capture(masked, spec)

    t_fill, t_pre = interleaved([filled, prefilled], args.rounds, clock)
    row("capture filling a closure memo (ms)", f"{1e3 * t_fill:.3f}",
        f"memo filled before {1e3 * t_pre:.3f}", t_fill / t_pre)


if __name__ == "__main__":
    main()
