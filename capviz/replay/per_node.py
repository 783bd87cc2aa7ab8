"""Numbers per node from replays, to colour the view by (``graph.metric``): each op's time in
a profiled replay, and each op's error against another backend.

Both step through the graph with the stepping executor (:mod:`capviz.replay.stepper`), one op
at a time, so a number belongs to exactly one node (the compiled replay fuses nothing, but it
runs ops through a step table where one op's time cannot be told from the loop's).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from capviz.backends.registry import host_array
from capviz.core.ir import Graph, Node
from capviz.replay.inputs import resolve_seed
from capviz.replay.stepper import Executor


class _Timed(Executor):
    """The stepping executor, timing each op until its result is ready."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seconds: dict[int, float] = {}

    def run_op(self, node: Node) -> Any:
        started = time.perf_counter()
        value = super().run_op(node)
        _wait(self.backend.name, self.xp, value)
        self.seconds[node.index] = time.perf_counter() - started
        return value


def _wait(backend: str, xp: Any, value: Any) -> None:
    """Block until an asynchronous engine has computed ``value`` (JAX dispatches, CuPy
    launches kernels on a stream); NumPy is done when the call returns."""
    if hasattr(value, "block_until_ready"):
        value.block_until_ready()
    elif backend == "cupy":
        xp.cuda.get_current_stream().synchronize()


def node_times(graph: Graph, inputs: Mapping[str, Any] | None = None, backend: str = "numpy",
               rounds: int = 3, seed: int | None = None,
               allow_violations: bool = False) -> dict[int, float]:
    """Seconds each op takes, by node index: the median over ``rounds`` stepping replays,
    each op timed until its result is ready.

    Raises:
        ValueError: ``rounds`` is not positive, or the backend is lazy (Dask builds a task
            graph per op and computes it at the end: an op has no time of its own).
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if backend == "dask":
        raise ValueError("per-node times need an engine that runs each op when called; dask "
                         "builds a task graph and computes it at the end (use 'numpy', "
                         "'cupy' or 'jax')")
    seed = resolve_seed(graph, seed)
    runs: dict[int, list[float]] = {}
    for _ in range(rounds):
        ex = _Timed(graph, inputs, backend=backend, keep=False, seed=seed,
                    allow_violations=allow_violations)
        ex.run()
        for index, seconds in ex.seconds.items():
            runs.setdefault(index, []).append(seconds)
    return {index: statistics.median(times) for index, times in runs.items()}


def node_errors(graph: Graph, inputs: Mapping[str, Any] | None = None,
                backend: str = "numpy", against: str = "jax", seed: int | None = None,
                allow_violations: bool = False) -> dict[int, float]:
    """The largest absolute difference between each op's value on ``backend`` and on
    ``against``, by node index (both replays use the same inputs and seed). A value NaN on one
    side only, or infinite on one side only, differs by ``inf``; where both agree on NaN or on
    an infinity it is 0. Ops with non-numeric values are left out."""
    seed = resolve_seed(graph, seed)
    ours, theirs = (Executor(graph, inputs, backend=name, keep=True, seed=seed,
                             allow_violations=allow_violations) for name in (backend, against))
    ours.run()
    theirs.run()
    out: dict[int, float] = {}
    for n in graph.nodes:
        if n.kind != "op" or n.index not in ours.values or n.index not in theirs.values:
            continue
        error = _max_difference(host_array(ours.values[n.index]),
                                host_array(theirs.values[n.index]))
        if error is not None:
            out[n.index] = error
    return out


def _max_difference(a: np.ndarray, b: np.ndarray) -> float | None:
    if a.shape != b.shape or a.dtype.kind not in "biufc" or b.dtype.kind not in "biufc":
        return None
    if a.size == 0:
        return 0.0
    wide = np.complex128 if "c" in a.dtype.kind + b.dtype.kind else np.float64
    a, b = a.astype(wide), b.astype(wide)
    same = (a == b) | (np.isnan(a) & np.isnan(b))  # equal infinities, or NaN on both sides
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(same, 0.0, np.abs(a - b))
    diff = np.where(np.isnan(diff), np.inf, diff)  # NaN on one side only
    return float(diff.max())
