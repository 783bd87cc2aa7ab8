"""The cost of the Dask backend's checks on sums and products over several chunks.

Run: ``python benchmarks/dask_sums.py [--rounds 11] [--clock cpu]``

A float sum or product over several chunks is checked where dask.array's order of addition can
give another result than NumPy's, and computed a second time, in NumPy's order, where it can.
Each row is a capviz replay on Dask (threaded scheduler) against the bare ``dask.array``
expression of the same op on the same blocks (no check, no graph), both computed
in this run, interleaved, medians:

- ``np.mean(x)`` and ``np.var(x, axis=1)`` of a (2048, 2048) float32 array in (512, 512)
  blocks, and ``x @ y`` of two such arrays: ordinary values (uniform in [0, 1)), under the
  bound, one run;
- ``x.sum(axis=0)`` of the same values: NumPy adds a C-ordered column row after row, a running
  sum of 2,048 roundings whose bound passes float32's tolerance, so the replay computes it a
  second time in NumPy's order (the price of NumPy's result);
- the same column sum of values near ``finfo.max`` (their magnitudes add up past it): the
  bound is reached, and the replay computes the sum a second time in NumPy's order, the first
  run stopping at the failed check;
- ``np.var(x, axis=1)`` of values near 1e5 (a variance tiny against its values: the mean's
  rounding moves it beyond the tolerance): a second run in NumPy's order;
- a layer norm along axis 1, ``(x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1,
  keepdims=True) + 1e-5)``, of values near 1e3: the mean and the variance feed an add or
  subtract that can cancel, so both are built in NumPy's order from the start
  (``capviz/backends/dask/before_cancel.py``: each row's blocks regathered, one run), against
  dask.array's own expression, which is up to 60x beyond the tolerance there;
- ``x - x.mean()`` of values in [0, 1) and near 1e3, and ``x.sum() - x[:512].sum() * 4``: a
  sum over all the values that feeds a subtraction, built in NumPy's order from the start as
  NumPy's pairwise tree over the chunks (``capviz/backends/dask/pairwise.py``: one pass, a
  chunk at a time), one run.

A sum is checked per output (``capviz/backends/dask/cancellation.py``: its terms' magnitudes
summed with it, for cancellation and overflow), a variance by its terms' magnitudes too
(``capviz/backends/dask/variance.py``), the other reductions and the products by one max per
operand (``capviz/backends/dask/overflow.py``).
"""

from __future__ import annotations

import argparse
import time

import dask
import dask.array as da
import numpy as np
from _common import header, interleaved, row

import capviz as cv

SHAPE = (2048, 2048)
CHUNKS = (512, 512)


def _cases(rng: np.random.Generator) -> list[tuple]:
    x = rng.random(SHAPE, dtype=np.float32)
    y = rng.random(SHAPE, dtype=np.float32)
    huge = (x - np.float32(0.5)) * np.float32(2e36)
    near = x + np.float32(1e5)
    return [
        ("x.sum(axis=0)", lambda a: a.sum(axis=0), (x,), lambda a: a.sum(axis=0)),
        ("np.mean(x)", lambda a: np.mean(a), (x,), lambda a: a.mean()),
        ("np.var(x, axis=1)", lambda a: np.var(a, axis=1), (x,), lambda a: a.var(axis=1)),
        ("x @ y", lambda a, b: a @ b, (x, y), lambda a, b: a @ b),
        ("x.sum(axis=0), values near max", lambda a: a.sum(axis=0), (huge,),
         lambda a: a.sum(axis=0)),
        ("np.var(x, axis=1), values near 1e5", lambda a: np.var(a, axis=1), (near,),
         lambda a: a.var(axis=1)),
        ("layer norm along axis 1, values near 1e3", _layer_norm, (x + np.float32(1e3),),
         _layer_norm),
        ("x - x.mean()", lambda a: a - a.mean(), (x,), lambda a: a - a.mean()),
        ("x - x.mean(), values near 1e3", lambda a: a - a.mean(), (x + np.float32(1e3),),
         lambda a: a - a.mean()),
        ("x.sum() - x[:512].sum() * 4", lambda a: a.sum() - a[:512].sum() * 4, (x,),
         lambda a: a.sum() - a[:512].sum() * 4),
    ]


def _layer_norm(a):
    return (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: this process's CPU time (all its threads)")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    header(f"Dask sums over several chunks: {SHAPE} float32 in {CHUNKS} blocks, "
           f"{args.rounds} rounds, {args.clock} clock (capviz replay vs bare dask.array)")
    with dask.config.set(scheduler="threads"):
        for name, fn, arrays, bare in _cases(np.random.default_rng(0)):
            graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
            feed = dict(zip(graph.inputs, arrays))
            blocks = [da.from_array(a, chunks=CHUNKS) for a in arrays]

            def replay(graph=graph, feed=feed):
                return graph.replay(feed, backend="dask", chunks=CHUNKS)

            def plain(bare=bare, blocks=blocks):
                return bare(*blocks).compute()

            with np.errstate(all="ignore"):
                ours, base = interleaved([replay, plain], rounds=args.rounds, clock=clock)
            row(name, f"{ours * 1e3:.1f} ms", f"dask.array {base * 1e3:.1f} ms", ours / base)


if __name__ == "__main__":
    main()
