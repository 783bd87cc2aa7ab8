"""Save, load and verify at 1e3, 1e4 and 1e5 nodes (issue 11). Run: python benchmarks/load_save.py

The graphs are a block repeated: a 4-way split (one split node, four unpack nodes), a
concatenate, an add of a recorded constant, and a data read recorded as a violation, so unpack
and violation nodes are a large share of every size. Each figure is the median over rounds (the
sizes interleaved within each round) of the time per node, in CPU time of this process
(``time.process_time``): the machine may be shared, and the goal is about how the work grows.

Baselines, measured in the same rounds on the same graphs:
- per node at 1e3: the goal is that the per-node time at 1e5 stays within 1.5x of it (linear);
- plain json + np.savez: ``json.dump``/``json.load`` of the same document and ``np.savez`` /
  ``np.load`` of the same constants, with no checks and no graph built: the floor of the I/O.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import tempfile
import time

import numpy as np

import capviz as cv
from capviz.io.nx import to_networkx

SIZES = (1_000, 10_000, 100_000)
ROUNDS = 5
W = np.arange(8, dtype=np.float32).reshape(2, 4)


def block_graph(n_nodes: int) -> cv.CapturedGraph:
    """About ``n_nodes`` nodes: blocks of nine (split, 4 unpacks, concatenate, add, the
    getitem read and its violation)."""
    def f(x):
        for _ in range(n_nodes // 9):
            parts = np.split(x, 4, axis=1)
            x = np.concatenate(parts[::-1], axis=1) + W
            float(x[0, 0])  # a data read: a violation node (record mode)
        return x
    return cv.capture(f, cv.spec((2, 4)), on_violation="record")


def timed(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def timed_without_gc(fn) -> float:
    """:func:`timed` with Python's cyclic garbage collector paused: how much of a figure is the
    collector walking a larger heap more often, not the work itself."""
    gc.disable()
    try:
        return timed(fn)
    finally:
        gc.enable()


def plain_round_trip(doc_path: str, arrays: dict, path: str) -> tuple[float, float]:
    """The same document and arrays through json and np.savez/np.load, unchecked."""
    with open(doc_path, encoding="utf-8") as f:
        doc = json.load(f)

    def save():
        np.savez(path + ".npz", **arrays)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)

    def load():
        with open(path, encoding="utf-8") as f:
            json.load(f)
        with np.load(path + ".npz", allow_pickle=False) as data:
            for key in data.files:
                data[key]
    return timed(save), timed(load)


def main() -> None:
    directory = tempfile.mkdtemp(prefix="capviz-bench-")
    graphs = {n: block_graph(n) for n in SIZES}
    times: dict[tuple[int, str], list[float]] = {}
    for _ in range(ROUNDS):
        for n, g in graphs.items():
            path = os.path.join(directory, f"g{n}.json")
            nodes = len(g.nodes)
            loaded = []
            measures = {
                "save": timed(lambda: g.save(path)),
                "load": timed(lambda: loaded.append(cv.load(path))),
                "verify": timed(lambda: loaded[0].verify()),
                "nx": timed(lambda: to_networkx(loaded[0])),
                "nx, gc off": timed_without_gc(lambda: to_networkx(loaded[0])),
            }
            arrays = {f"c{i}": np.asarray(v) for i, v in g.constant_values.items()}
            plain_save, plain_load = plain_round_trip(path, arrays,
                                                      os.path.join(directory, f"p{n}.json"))
            measures["plain save"], measures["plain load"] = plain_save, plain_load
            for name, seconds in measures.items():
                times.setdefault((n, name), []).append(seconds / nodes)

    def per_node(n: int, name: str) -> float:
        return statistics.median(times[(n, name)])

    print(f"save / load / verify per node, median of {ROUNDS} rounds (sizes interleaved)")
    for n, g in graphs.items():
        kinds = [node.kind for node in g.nodes]
        unpacks = sum(1 for node in g.nodes if node.op == "unpack")
        print(f"  size {n:>7,}: {len(kinds):,} nodes, {unpacks:,} unpack, "
              f"{kinds.count('violation'):,} violation, {kinds.count('constant'):,} constant")
    print(f"\n{'measure':<11} {'size':>8} {'us/node':>9} {'vs 1e3/node':>12} "
          f"{'plain json+npz us/node':>23} {'vs plain':>9}")
    for name, plain in (("save", "plain save"), ("load", "plain load"), ("verify", None),
                        ("nx", None), ("nx, gc off", None)):
        base = per_node(SIZES[0], name)
        for n in SIZES:
            t = per_node(n, name)
            plain_text, plain_ratio = "", ""
            if plain is not None:
                p = per_node(n, plain)
                plain_text, plain_ratio = f"{1e6 * p:.2f}", f"{t / p:.2f}x"
            goals = ("save", "load", "verify")
            goal = "  goal <= 1.5x" if n == SIZES[-1] and name in goals else ""
            print(f"{name:<11} {n:>8,} {1e6 * t:>9.2f} {t / base:>11.2f}x "
                  f"{plain_text:>23} {plain_ratio:>9}{goal}")


if __name__ == "__main__":
    main()
