"""What GPT-2's JAX replay with ``arithmetic='xla'`` pays for the subnormal test of each head's
products, made at each product (before) or once for all of them after the program (after:
``capviz.backends.jax.trace.Trace.require_batched``, the lead's ruling 39 14:10), against
jax.jit of the same source. Run:
python benchmarks/jax_batched_checks.py [--layers N] [--rounds R] [--clock cpu] [--vocab V]

The test of a product of two computed matrices (``q @ k.T``, ``p @ v``: 24 a layer) takes the
smallest magnitude of each column of the left operand and of each row of the right one: two
reductions a product, each a kernel of its own in XLA's program (576 at 12 layers). After,
the operands of every such product of one shape are stacked and reduced once: two reductions
for the whole program; each product keeps its flag, its node and its message. Both programs are
traced in this run (the baseline with ``trace.BATCHED_ELEMENTS = 0``, every test at its
product, on a capture of its own) and timed interleaved with ``jax.jit``, medians of
``--rounds`` rounds, each round ten full replays (``fn(x)``: the weights' check and the flags'
transfer included) on an array already on the device; "same bits" compares the two
programs' outputs. ``--vocab`` below GPT-2's 50257 shrinks the final product with the token
embeddings (the same cost in the three), so that the layers weigh more.
"""

from __future__ import annotations

import numpy as np
from _common import interleaved
from _gpt2_jax import arguments, gpt2, ten

import capviz as cv
from capviz.backends.jax import trace


def compiled(forward, spec, probe, batched: bool, **options):
    """``forward`` captured afresh and compiled for jax with ``options``, traced once on
    ``probe`` with the batched tests (``batched``) or every test at its node."""
    import jax

    fn = cv.capture(forward, spec).compile(backend="jax", **options)
    kept = trace.BATCHED_ELEMENTS
    trace.BATCHED_ELEMENTS = kept if batched else 0
    try:
        jax.block_until_ready(fn(probe))
    finally:
        trace.BATCHED_ELEMENTS = kept
    return fn


def main() -> None:
    args = arguments(__doc__.splitlines()[0])
    clock = args.timer
    model = gpt2(args)
    forward, spec, probe = model.forward, model.spec, model.probe
    jitted, device_weights = model.jitted, model.device_weights

    before = compiled(forward, spec, probe, False, arithmetic="xla")
    after = compiled(forward, spec, probe, True, arithmetic="xla")
    same = np.array_equal(np.asarray(before(probe)), np.asarray(after(probe)))

    t_before, t_after, t_jit = (t / 10 for t in interleaved(
        [ten(lambda: before(probe)), ten(lambda: after(probe)),
         ten(lambda: jitted(probe, device_weights))], rounds=args.rounds, clock=clock))
    print(f"{'replay':<42} {'before (each)':>20} {'after (batched)':>20} {'jax.jit':>10} "
          f"{'after/before':>12}")
    name = f"GPT-2, {args.layers} layers, vocab {args.vocab}, 'xla'"
    print(f"{name:<42} {1e3 * t_before:8.2f} ms {t_before / t_jit:6.2f}x "
          f"{1e3 * t_after:10.2f} ms {t_after / t_jit:6.2f}x {1e3 * t_jit:7.2f} ms "
          f"{t_after / t_before:10.2f}x   {'same bits' if same else 'DIFFERENT'}")
    print(f"load {open('/proc/loadavg').read()[:15]}")


if __name__ == "__main__":
    main()
