"""The GPT-2 set-up the JAX check benchmarks share (jax_batched_checks.py, jax_fast_checks.py):
their command line, the captured forward pass and the same code under ``jax.jit``, the baseline."""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace

import gpt2_pico
import numpy as np
from gpt2_pico import gpt2_embedded, init_params, with_numpy

import capviz as cv


def arguments(description: str) -> SimpleNamespace:
    """``--layers --rounds --vocab --clock`` parsed, with ``clock`` the timer they name."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    timer = time.perf_counter if args.clock == "wall" else time.process_time
    return SimpleNamespace(**vars(args), timer=timer)


def gpt2(args: SimpleNamespace) -> SimpleNamespace:
    """The model of ``args.layers`` layers: ``forward`` (plain NumPy, to capture), its ``spec``,
    ``probe`` (64 embedded tokens on the device), and ``jitted`` / ``device_weights``, the same
    code under ``jax.jit`` (compiled and run once); prints the header line."""
    import jax
    import jax.numpy as jnp

    print(f"medians of {args.rounds} interleaved rounds of 10 calls, {args.clock} time; jax "
          f"{jax.__version__}, numpy {np.__version__}; load {open('/proc/loadavg').read()[:15]}")
    gpt2_pico.PICOGPT_SCALARS = False
    params = init_params(args.layers, n_vocab=args.vocab, bias_scale=0.02)
    tokens = np.random.default_rng(1).integers(0, args.vocab, 64)
    ids = params["wte"][tokens] + params["wpe"][range(64)]
    weights = {k: v for k, v in params.items() if k != "wpe"}
    peer = with_numpy(jnp)

    def forward(x):
        return gpt2_embedded(x, **weights, n_head=12)

    model = SimpleNamespace(forward=forward, spec=cv.spec(ids.shape, ids.dtype),
                            probe=jax.device_put(ids), device_weights=jax.device_put(weights),
                            jitted=jax.jit(lambda x, w: peer.gpt2_embedded(x, **w, n_head=12)))
    jax.block_until_ready(model.jitted(model.probe, model.device_weights))
    return model


def ten(call):
    """``call`` ten times, each result waited for: one timed sample."""
    import jax

    return lambda: [jax.block_until_ready(call()) for _ in range(10)]
