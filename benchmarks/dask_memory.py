"""Peak memory of Dask replays whose sum over all the axes feeds a subtraction (the hostile
review 4's finding 8), against the bare ``dask.array`` expression in the same run.

Run: ``python benchmarks/dask_memory.py [--offset 1e3]``

A (400,000, 8) float32 dask-array input (12.2 MiB) in chunks of 20,000 rows (0.6 MiB), the
single-threaded scheduler, ``tracemalloc``'s peak of one replay (a lazy replay's last five rows
where the output is the whole array, so the output does not dominate), each program run once
before it is measured (dask's and NumPy's first-call costs). Such a sum must be NumPy's bits
(``capviz/backends/dask/before_cancel.py``): its NumPy order over all axes was one block holding
the whole input (12.3 MiB for ``x.sum() - x[:1000].sum() * 400``); it is now NumPy's pairwise
tree over the chunks (``capviz/backends/dask/pairwise.py``). Each row says whether the replay is
NumPy's bits.
"""

from __future__ import annotations

import argparse
import tracemalloc
import warnings

import dask
import dask.array as da
import numpy as np

import capviz as cv

CASES = {  # the program, and whether its output is the whole array (a corner measured)
    "x - x.mean()": (lambda x: x - x.mean(), True),
    "(x - x.mean()) / x.std()": (lambda x: (x - x.mean()) / x.std(), True),
    "np.abs(x - x.mean()).max()": (lambda x: abs(x - x.mean()).max(), False),
    "((x - x.mean()) ** 2).mean(0)": (lambda x: ((x - x.mean()) ** 2).mean(0), False),
    "x.sum() - x[:1000].sum() * 400": (lambda x: x.sum() - x[:1000].sum() * 400, False),
    "x - x.var()": (lambda x: x - x.var(), True),
    "(x - x.mean(0)).max(0) (column centring)": (lambda x: (x - x.mean(0)).max(0), False),
    "x.sum() (no subtraction)": (lambda x: x.sum(), False),
}


def _peak(run) -> float:
    run()  # first-call costs
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offset", type=float, default=1e3,
                        help="the values are offset + U[0, 1)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    host = (args.offset + np.random.default_rng(0).random((400_000, 8))).astype(np.float32)
    x = da.from_array(host, chunks=(20_000, 8))
    print(f"\nPeak memory (MiB), input {host.nbytes / 2**20:.1f} MiB in "
          f"{x.blocks[0].nbytes / 2**20:.1f} MiB chunks, values {args.offset:g} + U[0, 1)")
    print(f"{'program':<44} {'capviz':>8} {'dask':>8}  NumPy's bits")
    label_notes: set = set()
    with dask.config.set(scheduler="single-threaded"):
        for label, (fn, corner) in CASES.items():
            graph = cv.capture(fn, cv.spec(host.shape, "float32"))
            want = fn(host)

            def ours(graph=graph, corner=corner):
                if corner:
                    lazy = graph.replay({"x": x}, backend="dask", compute=False)["out"]
                    try:
                        return np.asarray(lazy[-5:].compute())
                    except cv.CapvizError:  # a lazy replay that fails: the computed one's
                        label_notes.add(label)  # peak, its 12.2 MiB output included
                        return graph.replay({"x": x}, backend="dask")["out"][-5:]
                return graph.replay({"x": x}, backend="dask")["out"]

            def bare(fn=fn, corner=corner):
                out = fn(x)
                return np.asarray((out[-5:] if corner else out).compute())

            got = ours()
            exact = np.array_equal(got, want[-5:] if corner else want)
            peak = _peak(ours)
            note = " (lazy replay failed: computed, output included)" \
                if label in label_notes else ""
            print(f"{label:<44} {peak:8.1f} {_peak(bare):8.1f}  {exact}{note}")


if __name__ == "__main__":
    main()
