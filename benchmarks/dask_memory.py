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

CASES = {  # the program, whether its output is the whole array (a corner measured), its input
    "x - x.mean()": (lambda x: x - x.mean(), True),
    "(x - x.mean()) / x.std()": (lambda x: (x - x.mean()) / x.std(), True),
    "np.abs(x - x.mean()).max()": (lambda x: abs(x - x.mean()).max(), False),
    "((x - x.mean()) ** 2).mean(0)": (lambda x: ((x - x.mean()) ** 2).mean(0), False),
    "x.sum() - x[:1000].sum() * 400": (lambda x: x.sum() - x[:1000].sum() * 400, False),
    "x - x.var()": (lambda x: x - x.var(), True),
    "(x - x.mean(0)).max(0) (column centring)": (lambda x: (x - x.mean(0)).max(0), False),
    "x.sum() (no subtraction)": (lambda x: x.sum(), False),
    "x - x.mean() [complex64]": (lambda x: x - x.mean(), True, "complex64"),
    "x - x.var() [complex64]": (lambda x: x - x.var(), True, "complex64"),
    "x - np.nanmean(x) [NaNs]": (lambda x: x - np.nanmean(x), True, "nan"),
    "x - np.nanstd(x) [NaNs]": (lambda x: x - np.nanstd(x), True, "nan"),
    "x - x.mean(dtype=np.float64)": (lambda x: x - x.mean(dtype=np.float64), True),
    "x.sum(dtype=np.float64) - x[:1000].sum() * 400":
        (lambda x: x.sum(dtype=np.float64) - x[:1000].sum() * 400, False),
    "x - x.sum() [float16]": (lambda x: x - x.sum(), True, "float16"),
    "x - x.mean() [float16]": (lambda x: x - x.mean(), True, "float16"),
    "x3 - x3.sum(axis=(0, 1)) [3-d]": (lambda x: x - x.sum(axis=(0, 1)), True, "3d"),
    "x3 - x3.mean(axis=(1, 2), keepdims=True) [3-d]":
        (lambda x: x - x.mean(axis=(1, 2), keepdims=True), True, "3d"),
    "x3 - x3.sum(axis=(0, 2), keepdims=True) [3-d]":
        (lambda x: x - x.sum(axis=(0, 2), keepdims=True), True, "3d"),
}


def _input(host: np.ndarray, kind: str, offset: float) -> np.ndarray:
    """The benchmark's input of ``kind`` made from the float32 ``host``."""
    if kind == "complex64":
        return (host + 1j * host[::-1]).astype(np.complex64)
    if kind == "nan":
        out = host.copy()
        out.reshape(-1)[::13] = np.nan
        return out
    if kind == "float16":
        return (host - np.float32(offset) - np.float32(0.5)).astype(np.float16)
    if kind == "3d":  # (20, 20,000, 8): the 3-d rows' chunks are the 2-d input's
        return host.reshape(20, 20_000, 8)
    return host


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
    base = (args.offset + np.random.default_rng(0).random((400_000, 8))).astype(np.float32)
    x = da.from_array(base, chunks=(20_000, 8))
    host = base
    print(f"\nPeak memory (MiB), input {host.nbytes / 2**20:.1f} MiB in "
          f"{x.blocks[0].nbytes / 2**20:.1f} MiB chunks, values {args.offset:g} + U[0, 1)")
    print(f"{'program':<48} {'capviz':>8} {'dask':>8} {'ratio':>6}  NumPy's bits")
    label_notes: set = set()
    with dask.config.set(scheduler="single-threaded"):
        for label, (fn, corner, *kind) in CASES.items():
            host = _input(base, kind[0] if kind else "float32", args.offset)
            x = da.from_array(host, chunks=(1, 20_000, 8) if host.ndim == 3 else (20_000, 8))
            graph = cv.capture(fn, cv.spec(host.shape, host.dtype.name))
            tail = (slice(-5, None),) if host.ndim == 2 else (-1, slice(-5, None))
            want = fn(host)

            def ours(graph=graph, corner=corner, x=x, tail=tail):
                if corner:
                    lazy = graph.replay({"x": x}, backend="dask", compute=False)["out"]
                    try:
                        return np.asarray(lazy[tail].compute())
                    except cv.CapvizError:  # a lazy replay that fails: the computed one's
                        label_notes.add(label)  # peak, its 12.2 MiB output included
                        return graph.replay({"x": x}, backend="dask")["out"][tail]
                return graph.replay({"x": x}, backend="dask")["out"]

            def bare(fn=fn, corner=corner, x=x, tail=tail):
                out = fn(x)
                return np.asarray((out[tail] if corner else out).compute())

            got = ours()
            wanted = want[tail] if corner else want
            exact = np.asarray(got).tobytes() == np.asarray(wanted).tobytes()
            peak, baseline = _peak(ours), _peak(bare)
            note = " (lazy replay failed: computed, output included)" \
                if label in label_notes else ""
            print(f"{label:<48} {peak:8.1f} {baseline:8.1f} {peak / baseline:6.2f}  "
                  f"{exact}{note}")


if __name__ == "__main__":
    main()
