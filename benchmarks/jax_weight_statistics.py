"""What a JAX replay pays to read a model's weights for its bounds, before and after stop 38's
change (the lead's ruling 38 10:50: a weight's column statistics measured once per fingerprint,
not at every replay), against jax.jit. Run:
python benchmarks/jax_weight_statistics.py [--layers N] [--rounds R] [--clock cpu]
[--only gpt|dense]

A bound carried through a product with a weight (GPT-2's softmax bound through each layer's
heads' projection, ``arithmetic='xla'``; a layer's declared bound at its bias add, the default
replay) takes the weight's column sums, maxima or norms. Before, the replay's XLA program
computed them from the weight at every call (a pass over it in float64); now they are measured
on the host when the program is traced (``capviz.backends.jax.trace.host_measured``), and a
replay after the weights changed is refused until ``graph.changed()``, which traces again.
Both programs are traced in this run (the baseline with ``trace.HOST_MEASURED = False``, on a
capture of its own), and timed interleaved with ``jax.jit`` of the same source, medians of
``--rounds`` rounds, each the replay called on an array already on the device and waited for;
"same bits" compares the two programs' outputs.

Rows: GPT-2 (``benchmarks/gpt2_pico.py``, 64 tokens, biases 0.02 N(0, 1)) with
``arithmetic='xla'``; a dense layer ``x @ W + b`` (64 x 768 by 768 x 3072, weights 0.02 N(0, 1),
``b`` = 20 keeps every output far enough from 0 for the default replay's check at the add to
pass) with the default arithmetic. ``--only gpt`` or ``--only dense`` runs one row.
"""

from __future__ import annotations

import argparse
import time

import gpt2_pico
import numpy as np
from _common import interleaved
from gpt2_pico import gpt2_embedded, init_params, with_numpy

import capviz as cv
from capviz.backends.jax import trace


def compiled(forward, spec, probe, host_measured: bool, **options):
    """``forward`` captured afresh and compiled for jax with ``options``, traced once on
    ``probe`` with ``trace.HOST_MEASURED`` set to ``host_measured`` (then put back)."""
    import jax

    fn = cv.capture(forward, spec).compile(backend="jax", **options)
    kept = trace.HOST_MEASURED
    trace.HOST_MEASURED = host_measured
    try:
        jax.block_until_ready(fn(probe))
    finally:
        trace.HOST_MEASURED = kept
    return fn


def rows_of(name, forward, peer, spec, probe, rounds, clock, **options):
    import jax

    before = compiled(forward, spec, probe, False, **options)
    after = compiled(forward, spec, probe, True, **options)
    jitted = jax.jit(peer)
    jax.block_until_ready(jitted(probe))
    same = np.array_equal(np.asarray(before(probe)[0]), np.asarray(after(probe)[0]))
    t_before, t_after, t_jit = interleaved(
        [lambda: jax.block_until_ready(before(probe)),
         lambda: jax.block_until_ready(after(probe)),
         lambda: jax.block_until_ready(jitted(probe))], rounds=rounds, clock=clock)
    print(f"{name:<44} {1e3 * t_before:9.2f} ms {t_before / t_jit:6.2f}x "
          f"{1e3 * t_after:9.2f} ms {t_after / t_jit:6.2f}x {1e3 * t_jit:9.2f} ms "
          f"{t_after / t_before:7.2f}x   {'same bits' if same else 'DIFFERENT'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--only", choices=("gpt", "dense"), default=None)
    args = parser.parse_args()
    clock = time.perf_counter if args.clock == "wall" else time.process_time

    import jax

    print(f"medians of {args.rounds} interleaved rounds, {args.clock} time; jax "
          f"{jax.__version__}, numpy {np.__version__}; load {open('/proc/loadavg').read()[:15]}")
    print(f"{'replay':<44} {'before (in the program)':>24} {'after (host, once)':>24} "
          f"{'jax.jit':>12} {'after/before':>12}")
    if args.only != "dense":
        gpt(args, clock)
    if args.only != "gpt":
        dense(args, clock)
    print(f"load {open('/proc/loadavg').read()[:15]}")


def gpt(args, clock) -> None:
    import jax
    import jax.numpy as jnp

    gpt2_pico.PICOGPT_SCALARS = False
    params = init_params(args.layers, bias_scale=0.02)
    tokens = np.random.default_rng(1).integers(0, 50257, 64)
    ids = params["wte"][tokens] + params["wpe"][range(64)]
    weights = {k: v for k, v in params.items() if k != "wpe"}
    peer = with_numpy(jnp)
    device_weights = jax.device_put(weights)
    rows_of(f"GPT-2, {args.layers} layers, arithmetic='xla'",
            lambda x: gpt2_embedded(x, **weights, n_head=12),
            lambda x: peer.gpt2_embedded(x, **device_weights, n_head=12),
            cv.spec(ids.shape, ids.dtype), jax.device_put(ids), args.rounds, clock,
            arithmetic="xla")


def dense(args, clock) -> None:
    import jax

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 768)).astype(np.float32)
    w = (rng.standard_normal((768, 3072)) * 0.02).astype(np.float32)
    b = np.full(3072, 20.0, np.float32)
    dw, db = jax.device_put(w), jax.device_put(b)
    rows_of("dense x @ W + b (64x768x3072), default", lambda v: v @ w + b,
            lambda v: v @ dw + db, cv.spec(x.shape, x.dtype), jax.device_put(x), args.rounds,
            clock)


if __name__ == "__main__":
    main()
