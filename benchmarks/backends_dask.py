"""The Dask backend vs the NumPy replay (issue: backends). Run: python benchmarks/backends_dask.py

One graph, an elementwise + reduction pipeline (``pipeline`` below: five elementwise ops, a row
sum, a column max and a mean), over 2 GiB of float32 input, replayed three ways in this run:

- NumPy replay (the baseline): ``graph.replay({"x": x}, backend="numpy")``;
- Dask on the threaded scheduler: the same NumPy array ``x`` as the input, chunked by the replay
  (views of ``x``, no copy), computed with both cores;
- Dask on a ``LocalCluster`` of 2 worker processes (1 thread each, loopback): the same values
  as a dask array in the same chunks, persisted on the workers before timing (a cluster's input
  lives there).

Each chunking (``--chunks``; default both ``auto``, Dask's 128 MiB blocks, and ``32MiB``) is a
comparison of its own, with its own NumPy rounds. Both sides run the same ops on the same values;
NumPy's replay writes results into dead buffers (its memory plan), Dask allocates each block's
results, which 32 MiB blocks keep small enough for the allocator to reuse.

The input is made before timing on every side (excluded from all figures): NumPy's ``x`` once,
and for the cluster the same ``x`` scattered in blocks to the workers. Rounds are interleaved
(NumPy, threaded, cluster, NumPy, ...) with the cycle collector off during each call
(``_common.interleaved``); figures are medians, as Dask time / NumPy time (below 1: Dask is
faster). The outputs are checked against the NumPy replay within the backend's tolerance.
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import interleaved

import capviz as cv

GIB = 2**30


def pipeline(x):
    """The benchmark's graph: elementwise ops, then reductions along both axes and overall."""
    y = np.tanh(x * 0.5 + 0.1) * 2.0 - x
    return y.sum(axis=1), y.max(axis=0), (y * y).mean()


def _input(gib: float) -> np.ndarray:
    cols = 32_768
    rows = int(gib * GIB) // (4 * cols)
    return np.random.default_rng(0).random((rows, cols), dtype=np.float32)


def _check(got: dict, expected: dict) -> None:
    from capviz.backends import registry

    backend = registry.get("dask")
    for name, value in expected.items():
        rtol, atol = backend.tolerance_for(value.dtype)
        np.testing.assert_allclose(got[name], value, rtol=rtol, atol=atol)


CHUNKINGS = ("auto", "32MiB")
"""Dask's default blocks (128 MiB) and smaller ones; each measured against its own NumPy rounds."""


def run(rounds: int = 5, gib: float = 2.0, chunkings: tuple = CHUNKINGS
        ) -> list[tuple[str, str, str]]:
    """Rows ``(name, figure, goal)`` for ``benchmarks/backends.py``: for each chunking, Dask
    threaded and on a 2-worker LocalCluster vs the NumPy replay."""
    from distributed import Client, LocalCluster

    x = _input(gib)
    graph = cv.capture(pipeline, cv.spec(x.shape, x.dtype))
    expected = graph.replay({"x": x}, backend="numpy")
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           memory_limit=f"{max(2.0, 1.5 * gib):.1f}GiB",
                           dashboard_address=None)
    client = Client(cluster)  # the default scheduler until closed; 'threads' is asked by name
    rows = []
    try:
        client.wait_for_workers(2)
        for chunks in chunkings:
            rows += _compare(graph, x, expected, client, chunks, rounds)
    finally:
        client.close()
        cluster.close()
    return rows


def _compare(graph: cv.CapturedGraph, x: np.ndarray, expected: dict, client: object,
             chunks: str, rounds: int) -> list[tuple[str, str, str]]:
    import dask
    import dask.array as da
    from distributed import wait

    blocks = da.core.normalize_chunks(chunks, x.shape, dtype=x.dtype)
    on_workers = client.persist(da.from_array(x, chunks=blocks))
    wait(on_workers)
    feed = {"x": x}

    def numpy_replay():
        return graph.replay(feed, backend="numpy")

    def threaded():
        with dask.config.set(scheduler="threads"):
            return graph.replay(feed, backend="dask", chunks=chunks)

    def on_cluster():
        return graph.replay({"x": on_workers}, backend="dask")

    _check(threaded(), expected)  # warm up, and the same results
    _check(on_cluster(), expected)
    t_numpy, t_threads, t_cluster = interleaved([numpy_replay, threaded, on_cluster],
                                                rounds=rounds)
    size = f"{x.nbytes / GIB:.1f} GiB float32 {list(x.shape)}, chunks {chunks}"
    base = f"NumPy replay {t_numpy:.2f} s"
    return [
        (f"Dask threaded vs NumPy replay, pipeline over {size}",
         f"{t_threads / t_numpy:.2f}x NumPy's time ({t_threads:.2f} s; {base})",
         "<= 1.0x"),
        (f"Dask LocalCluster (2 workers) vs NumPy replay, pipeline over {size}",
         f"{t_cluster / t_numpy:.2f}x NumPy's time ({t_cluster:.2f} s; {base})",
         "<= 1.5x"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--gib", type=float, default=2.0, help="input size in GiB")
    parser.add_argument("--chunks", nargs="+", default=CHUNKINGS,
                        help="Dask's chunks of the input, one comparison each")
    args = parser.parse_args()
    for name, figure, goal in run(args.rounds, args.gib, tuple(args.chunks)):
        print(f"{name:<78}  {figure:<48}  goal: {goal}")


if __name__ == "__main__":
    main()
