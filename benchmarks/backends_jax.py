"""The JAX backend vs the NumPy replay (issue: backends). Run: python benchmarks/backends_jax.py

Same graph, same inputs, both sides measured in this run: medians of interleaved rounds
(NumPy replay, JAX replay, NumPy replay, ...), each round ``CALLS`` replays per side, the cycle
collector off during each round (``_common.interleaved``); figures are per replay.

- the 100-op elementwise chain (``_common.chain``: multiply, add...) over (1024, 1024) float32
  (goal: JAX >= 5x faster);
- the transformer block of ``capviz.models`` (seq 256, width 128, 4 heads; goal: >= 1.5x);
- each on device: every value lives where the backend computes (the NumPy input and result in
  host memory; the JAX input already a jax array on jax's default device and the result left
  there, waited for with ``block_until_ready``), so neither side pays a transfer; and end to
  end: a NumPy input, the JAX result copied back to a NumPy array (``to_numpy=True``);
- the first JAX call (trace + XLA compile) apart, against one steady NumPy replay;
- for the chain, two references measured in the same rounds: eager NumPy running the same
  Python function (a fresh array per op, where the NumPy replay writes into dead buffers), and a
  bare ``jax.jit`` of that function on the same device input with none of capviz's checks (the
  ceiling XLA gives on this machine; the gap to it is what capviz's checks cost: the subnormal
  input check, the trace's flags).

Figures are ratios NumPy time / JAX time (above 1: JAX is faster). On a machine whose cores are
busy, OpenBLAS's threads spin against the load and the NumPy matmuls slow down many times over,
which flatters JAX: measure on an idle machine, or compare with a run under
``OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

import time

import numpy as np
from _common import chain, interleaved

import capviz as cv
from capviz import models

CALLS = 10  # replays per timed round, each side: one call after the collection that
#             interleaved() makes finds XLA's worker threads parked and pays their wake-up


def _chain100(x):
    return chain(x, 100)


def _cases() -> list[tuple[str, cv.CapturedGraph, np.ndarray, str, object]]:
    """(name, graph, input, goal, the captured function when jax.jit can trace it as it is)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, 1024)).astype(np.float32)
    chain_graph = cv.capture(_chain100, cv.spec(x.shape, x.dtype))
    params = models.transformer_weights(d=128, heads=4)
    h = rng.standard_normal((256, 128)).astype(np.float32)
    block = cv.capture(lambda x: models.transformer_block(x, params), cv.spec(h.shape, h.dtype))
    return [("100-op chain, (1024, 1024) float32", chain_graph, x, ">= 5x faster", _chain100),
            ("transformer block (256 x 128, 4 heads)", block, h, ">= 1.5x faster", None)]


def run(rounds: int = 5) -> list[tuple[str, str, str]]:
    """Rows ``(name, figure, goal)`` for ``benchmarks/backends.py``."""
    import jax

    from capviz.backends.jax.backend import BACKEND

    device = jax.devices()[0]
    rows = []
    for name, graph, x, goal, function in _cases():
        name_of_input = graph.inputs[0]
        feed = {name_of_input: x}
        graph.replay(feed, backend="numpy")  # the NumPy program built before timing
        start = time.perf_counter()
        graph.replay(feed, backend="jax")[graph.outputs[0]].block_until_ready()
        first = time.perf_counter() - start
        on_device = {name_of_input: BACKEND.from_host(x)}
        out = graph.outputs[0]

        def numpy_replay(feed=feed, graph=graph):
            for _ in range(CALLS):
                graph.replay(feed, backend="numpy")

        def jax_replay(on_device=on_device, graph=graph, out=out):
            for _ in range(CALLS):
                graph.replay(on_device, backend="jax")[out].block_until_ready()

        def jax_to_host(feed=feed, graph=graph):
            for _ in range(CALLS):
                graph.replay(feed, backend="jax", to_numpy=True)

        sides = [numpy_replay, jax_replay, jax_to_host]
        if function is not None:
            bare = jax.jit(function)
            bare(on_device[name_of_input]).block_until_ready()

            def eager(x=x, function=function):
                for _ in range(CALLS):
                    function(x)

            def bare_jit(x=on_device[name_of_input], bare=bare):
                for _ in range(CALLS):
                    bare(x).block_until_ready()

            sides += [eager, bare_jit]
        t_np, t_jax, t_host, *refs = (t / CALLS for t in interleaved(sides, rounds))
        expected = graph.replay(feed, backend="numpy")[out]
        got = graph.replay(feed, backend="jax", to_numpy=True)[out]
        rtol, atol = BACKEND.tolerance_for(expected.dtype)
        agree = "outputs agree" if np.allclose(got, expected, rtol=rtol, atol=atol) \
            else "OUTPUTS DIFFER"
        rows.append((f"jax vs numpy replay: {name} ({device.platform})",
                     f"{t_np / t_jax:.2f}x ({1e3 * t_jax:.2f} ms vs {1e3 * t_np:.2f} ms; "
                     f"{agree})", goal))
        rows.append(("  same, end to end (host input, to_numpy=True)",
                     f"{t_np / t_host:.2f}x ({1e3 * t_host:.2f} ms)", goal))
        if refs:
            t_eager, t_bare = refs
            rows.append(("  reference: bare jax.jit of the function vs numpy replay",
                         f"{t_np / t_bare:.2f}x ({1e3 * t_bare:.2f} ms; capviz's checks "
                         f"{t_jax / t_bare:.2f}x of it)", "the ceiling here"))
            rows.append(("  reference: capviz jax vs eager numpy of the function",
                         f"{t_eager / t_jax:.2f}x (eager {1e3 * t_eager:.2f} ms)", "-"))
        rows.append(("  first jax call (trace + compile) vs one numpy replay",
                     f"{first / t_np:.1f}x ({1e3 * first:.0f} ms)", "reported apart"))
    return rows


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds")
    args = parser.parse_args()
    rows = run(args.rounds)
    width = max(len(name) for name, _, _ in rows)
    for name, figure, goal in rows:
        print(f"{name:<{width}}  {figure:<48}  goal: {goal}")


if __name__ == "__main__":
    main()
