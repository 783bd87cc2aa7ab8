"""What the literal guard costs the JAX replay (issue 25; the hostile review 5, finding 2). Run:
python benchmarks/jax_literals.py [--layers 12] [--tokens 64] [--rounds 11]

``capviz.backends.jax.unfused.opaque_operands`` makes each number an add, a subtract or a
multiply reads (and each array made of numbers alone) a value XLA cannot know, so that its
algebraic simplifier does not rewrite ``(x + C) - C`` or ``x + 0.0``. Measured here, in the same
run and interleaved (medians of ``--rounds`` rounds, ten calls per round), against a bare
``jax.jit`` of the same source on the same device input:

- the GPT-2 forward of ``benchmarks/peers_gpt.py`` (picoGPT's source, unchanged, captured;
  ``gelu``'s ``0.5 * x * (1 + tanh(c * (x + 0.044715 * x**3)))``, the attention's ``-1e10``
  mask and scale, the layer norm's ``+ eps``);
- the 100-op chain of ``benchmarks/_common.py`` (``x * 1.0001 + 0.5``, 50 times), on (1024,
  1024) float32: a literal in every op.

Each is compiled twice from two captures: once with the guard off while it is traced (the
program main had before it), once with it on. Figures: each replay's time over ``jax.jit``'s,
and after over before.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import chain, interleaved, ten_calls, traced_with
from gpt2_pico import gpt2_embedded, init_params, with_numpy

import capviz as cv
from capviz.backends.jax import unfused


def _traced(graph, probe, guarded: bool):
    """``graph`` traced with the literal guard on, or off (the program main had before it)."""
    return traced_with(graph, probe, unfused, "LITERAL_GUARDED",
                       unfused.LITERAL_GUARDED if guarded else frozenset())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp

    peer = with_numpy(jnp)
    params = init_params(args.layers)
    tokens = np.random.default_rng(1).integers(0, 50257, args.tokens)
    ids = params["wte"][tokens] + params["wpe"][range(args.tokens)]
    weights = {k: v for k, v in params.items() if k != "wpe"}

    def forward(x):
        return gpt2_embedded(x, **weights, n_head=12)

    device_ids = jax.device_put(ids)
    device_params = jax.device_put(weights)
    jitted = jax.jit(lambda x, w: peer.gpt2_embedded(x, **w, n_head=12))
    spec = cv.spec(ids.shape, ids.dtype)
    before = _traced(cv.capture(forward, spec), device_ids, guarded=False)
    after = _traced(cv.capture(forward, spec), device_ids, guarded=True)
    jax.block_until_ready(jitted(device_ids, device_params))
    outs = [np.asarray(before(device_ids)[0]), np.asarray(after(device_ids)[0])]

    x = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    device_x = jax.device_put(x)
    chain_spec = cv.spec(x.shape, x.dtype)
    chain_before = _traced(cv.capture(lambda v: chain(v, 100), chain_spec), device_x, guarded=False)
    chain_after = _traced(cv.capture(lambda v: chain(v, 100), chain_spec), device_x, guarded=True)
    chain_jit = jax.jit(lambda v: chain(v, 100))
    jax.block_until_ready(chain_jit(device_x))

    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; GPT-2 {args.layers} layers, "
          f"{args.tokens} tokens; medians of {args.rounds} interleaved rounds of ten calls")
    t_jit, t_before, t_after = interleaved(
        [ten_calls(jax, lambda v: jitted(v, device_params), device_ids),
         ten_calls(jax, before, device_ids), ten_calls(jax, after, device_ids)], rounds=args.rounds)
    c_jit, c_before, c_after = interleaved(
        [ten_calls(jax, chain_jit, device_x), ten_calls(jax, chain_before, device_x),
         ten_calls(jax, chain_after, device_x)], rounds=args.rounds)
    print(f"{'':<30} {'jax.jit':>10} {'before':>16} {'after':>16} {'after/before':>13}")
    for name, jit, old, new in (("GPT-2 forward", t_jit, t_before, t_after),
                                ("100-op chain (1024, 1024) f32", c_jit, c_before, c_after)):
        print(f"{name:<30} {1e2 * jit:>7.2f} ms {1e2 * old:>7.2f} ms {old / jit:>5.2f}x "
              f"{1e2 * new:>7.2f} ms {new / jit:>5.2f}x {new / old:>12.3f}x")
    print(f"GPT-2 outputs before and after the guard equal: {np.array_equal(*outs)}")


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.0f} s)")
