"""What the check of contractions near overflow costs the JAX replay (issue 25; the thorough
differential profile's np.matmul silent cases). Run:
python benchmarks/jax_contraction_overflow.py [--layers 12] [--tokens 64] [--rounds 11]
[--clock cpu]

``capviz.backends.jax.checks._overflow_free`` fails a float32/float64/complex contraction unless
``K * max|A| * max|B| <= finfo.max / 4``: in the fast program, an elementwise mask of each
computed operand against its share of that limit (a constant's largest magnitude is measured
once on the host), merged per shape; the reductions only in the precise program. Measured
here, in the same run and interleaved (medians of ``--rounds`` rounds, ten calls per round),
against a bare ``jax.jit`` of the same source on the same device input:

- the GPT-2 forward of ``benchmarks/peers_gpt.py`` (picoGPT's source, unchanged, captured): its
  weights are constants, so each ``x @ w`` tests the activations ``x`` alone; the attention's
  ``q @ k.T`` and ``softmax @ v`` test both;
- a chain of 8 products of computed (512, 512) float32 values (``y = (y @ x) * 0.01``), both
  operands of each tested.

Each is compiled twice from two captures: once with the check off while it is traced (the
program before the check), once with it on. Figures: each replay's time over ``jax.jit``'s,
and after over before.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import interleaved, ten_calls, traced_with
from gpt2_pico import gpt2_embedded, init_params, with_numpy

import capviz as cv
from capviz.backends.jax import checks


def _unchecked(*args, **kwargs) -> None:
    """The check switched off: the program before it."""


def _traced(graph, probe, checked: bool):
    """``graph`` traced with the check on, or off (the program before the check)."""
    return traced_with(graph, probe, checks, "_overflow_free",
                       checks._overflow_free if checked else _unchecked)


def _products(x):
    y = x
    for _ in range(8):
        y = (y @ x) * 0.01
    return y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

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
    before = _traced(cv.capture(forward, spec), device_ids, checked=False)
    after = _traced(cv.capture(forward, spec), device_ids, checked=True)
    jax.block_until_ready(jitted(device_ids, device_params))
    outs = [np.asarray(before(device_ids)[0]), np.asarray(after(device_ids)[0])]

    x = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)
    device_x = jax.device_put(x)
    products_spec = cv.spec(x.shape, x.dtype)
    products_before = _traced(cv.capture(_products, products_spec), device_x, checked=False)
    products_after = _traced(cv.capture(_products, products_spec), device_x, checked=True)
    products_jit = jax.jit(_products)
    jax.block_until_ready(products_jit(device_x))

    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; GPT-2 {args.layers} layers, "
          f"{args.tokens} tokens; medians of {args.rounds} interleaved rounds of ten calls, "
          f"{args.clock} clock")
    t_jit, t_before, t_after = interleaved(
        [ten_calls(jax, lambda v: jitted(v, device_params), device_ids),
         ten_calls(jax, before, device_ids), ten_calls(jax, after, device_ids)], rounds=args.rounds,
        clock=clock)
    c_jit, c_before, c_after = interleaved(
        [ten_calls(jax, products_jit, device_x), ten_calls(jax, products_before, device_x),
         ten_calls(jax, products_after, device_x)], rounds=args.rounds, clock=clock)
    print(f"{'':<30} {'jax.jit':>10} {'before':>16} {'after':>16} {'after/before':>13}")
    for name, jit, old, new in (("GPT-2 forward", t_jit, t_before, t_after),
                                ("8 products (512, 512) f32", c_jit, c_before, c_after)):
        print(f"{name:<30} {1e2 * jit:>7.2f} ms {1e2 * old:>7.2f} ms {old / jit:>5.2f}x "
              f"{1e2 * new:>7.2f} ms {new / jit:>5.2f}x {new / old:>12.3f}x")
    print(f"GPT-2 outputs before and after the check equal: {np.array_equal(*outs)}")


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.0f} s)")
