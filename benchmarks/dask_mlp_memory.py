"""Peak memory and time of Dask replays of a plain MLP past dask's array.chunk-size (the hostile
review 11's finding 12), against the bare ``dask.array`` expression in the same run.

Run: ``python benchmarks/dask_mlp_memory.py [--rows 16384] [--rounds 3] [--only relu]``

``x`` float64 (rows, 512) in row chunks of 256 (a dask array: the input is held, as the bare
expression holds it), weights 512 x 512, ``array.chunk-size`` 2 MiB (so each product's operands
do not fit one block), the single-threaded scheduler; ``tracemalloc``'s peak of one replay
(computed to NumPy: the output is counted) and its wall time, the median of ``--rounds``
rounds run in turn with the bare expression (each program run once first: first-call costs).
Since stop 41 (``capviz/backends/dask/tails.py``) a squared loss (``((y - t) ** 2).mean()``, ``t``
a NumPy array in both) and a softmax of the last layer are tested at their last op, so their
products keep dask.array's blocks too (stop 40: 2.5x the peak, both products gathered).
Since stop 40 (``capviz/backends/dask/chained.py``) the first layer's bias add carries its
bound into the next product, tested at the next bias add, so both products keep dask.array's
row blocks; before, the first product was gathered onto one block (R11: 2.4-2.6x the peak).
Each row says whether the replay is within the tolerance of NumPy's (``exact`` where bit for
bit) or refused.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
import warnings

import dask
import dask.array as da
import numpy as np

import capviz as cv


def _programs(w1, b1, w2, b2, t):
    def relu(x):
        return np.maximum(np.maximum(x @ w1 + b1, 0) @ w2 + b2, 0)

    def loss(x):
        return ((np.maximum(x @ w1 + b1, 0) @ w2 + b2) ** 2).mean()

    def squared(x):
        return ((np.maximum(x @ w1 + b1, 0) @ w2 + b2 - t) ** 2).mean()

    def softmax(x):
        z = np.maximum(x @ w1 + b1, 0) @ w2 + b2
        e = np.exp(z - z.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    def three(x):
        return np.maximum(np.maximum(x @ w1 + b1, 0) @ w2 + b2, 0) @ w1 + b1

    return {"mlp relu (2 layers)": relu, "mlp 3 layers": three, "mlp loss": loss,
            "mlp squared loss (y - t)": squared, "mlp softmax (features)": softmax}


def _measured(run) -> tuple[float, float]:
    """(peak MiB, seconds) of one call of ``run``."""
    tracemalloc.start()
    try:
        start = time.perf_counter()
        run()
        seconds = time.perf_counter() - start
        return tracemalloc.get_traced_memory()[1] / 2**20, seconds
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16384)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="", help="the programs whose name holds this")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    d = 512
    host = rng.standard_normal((args.rows, d))
    w1, w2 = (rng.standard_normal((d, d)) / d ** 0.5 for _ in range(2))
    b1, b2 = (0.1 * rng.standard_normal(d) for _ in range(2))
    t = rng.standard_normal((args.rows, d))  # the squared loss's target, a NumPy array both sides
    print(f"\nx float64 ({args.rows}, {d}), {host.nbytes / 2**20:.0f} MiB in row chunks of 256; "
          f"array.chunk-size 2MiB; medians of {args.rounds} rounds")
    print(f"{'program':<26} {'capviz MiB':>10} {'dask MiB':>9} {'ratio':>6} "
          f"{'capviz s':>9} {'dask s':>7} {'ratio':>6}  verdict")
    with dask.config.set({"array.chunk-size": "2MiB", "scheduler": "single-threaded"}):
        x = da.from_array(host, chunks=(256, d))
        for label, fn in _programs(w1, b1, w2, b2, t).items():
            if args.only not in label:
                continue
            graph = cv.capture(fn, cv.spec(host.shape, host.dtype))
            want = fn(host)
            try:
                got = graph.replay({"x": x}, backend="dask")["out"]
            except cv.CapvizError as error:
                print(f"{label:<26} refused: {str(error)[:80]}")
                continue
            verdict = "exact" if np.array_equal(got, want) else (
                "within" if np.allclose(got, want, rtol=1e-5, atol=1e-5) else "BEYOND")

            def ours(graph=graph):
                return graph.replay({"x": x}, backend="dask")["out"]

            def bare(fn=fn):
                return np.asarray(fn(x).compute())

            kept: list[list[tuple[float, float]]] = [[], []]
            for _ in range(args.rounds):
                for run, into in ((ours, kept[0]), (bare, kept[1])):
                    into.append(_measured(run))
            (mine, mine_s), (theirs, theirs_s) = (
                (statistics.median(p for p, _ in k), statistics.median(s for _, s in k))
                for k in kept)
            print(f"{label:<26} {mine:10.1f} {theirs:9.1f} {mine / theirs:6.2f} "
                  f"{mine_s:9.2f} {theirs_s:7.2f} {mine_s / theirs_s:6.2f}  {verdict}")


if __name__ == "__main__":
    main()
