"""What the checks of GPT-2's fast JAX program (``arithmetic='xla'``) cost, with each of stop
40's and 41's changes (W=25p) undone while its program is traced, against jax.jit of the same
source. Run:
python benchmarks/jax_fast_checks.py [--layers N] [--rounds R] [--clock cpu] [--vocab V]

Programs (each from a capture of its own, traced once, then timed):

- ``after``: the tree as it is;
- ``merged shares``: the fast test of a contraction near overflow (each computed operand's values
  against its share of ``finfo.max / 4 / K``, ``capviz.backends.jax.checks._overflow_free``)
  and-ed into the masks merged per shape and reduced at the end of the program, as before stop
  40 (``checks.PROPAGATES`` empty while traced); after, a real operand is poisoned where it
  fails (NaN, a select XLA fuses into the operand), tested where the product's values leave
  the program;
- ``tested exp sums``: the subnormal test of each term of a sum of ``exp``, ``exp2`` or
  ``square`` results (softmax's ``np.sum(np.exp(...))``: 12 a layer), which XLA computes never
  subnormal and never negative, made as before stop 40 (``reductions.NONNEGATIVE_TERMS`` empty
  while traced); after, none (and the sum's and its carried bound's reductions read the same
  array: two reductions fewer a head);
- ``cond widening`` (stop 41): the widening of a head's bound carried through ``p @ v`` where
  an operand XLA holds 0 carries a bound (``carried_paths._more_terms``) under a ``lax.cond``
  per contraction, its flag a reduction (144 at 12 layers), as before stop 41
  (``trace.DEFERRED_WIDENING`` false while traced); after, the fast program tests for such a 0
  with the merged masks (fused, one reduction) and leaves the widening to the precise program;
- ``before``: every change above undone at once (where there are several).

Timed interleaved with ``jax.jit`` (medians of ``--rounds`` rounds, each starting one program
later than the one before, each ten full replays
``fn(x)`` on an array already on the device: the weights' fingerprint check and the flags'
transfer included); "same bits" compares each program's output with ``after``'s. ``--vocab``
below GPT-2's 50257 shrinks the final product with the token embeddings (the same in all), so
that the layers weigh more.
"""

from __future__ import annotations

import numpy as np
from _common import interleaved
from _gpt2_jax import arguments, gpt2, ten

import capviz as cv
from capviz.backends.jax import checks, trace
from capviz.backends.jax.subnormals import reductions

UNDONE = {
    "merged shares": [(checks, "PROPAGATES", {})],
    "tested exp sums": [(reductions, "NONNEGATIVE_TERMS", frozenset())],
    "cond widening": [(trace, "DEFERRED_WIDENING", False)],
}
"""Each of stop 40's and 41's changes, as the patches that undo it while a program is traced."""


def compiled(forward, spec, probe, patches):
    """``forward`` captured afresh, compiled for jax with ``arithmetic='xla'``, traced once on
    ``probe`` with ``patches`` (module, attribute, value) applied, then put back."""
    import jax

    fn = cv.capture(forward, spec).compile(backend="jax", arithmetic="xla")
    kept = [(module, name, getattr(module, name)) for module, name, _ in patches]
    for module, name, value in patches:
        setattr(module, name, value)
    try:
        jax.block_until_ready(fn(probe))
    finally:
        for module, name, value in kept:
            setattr(module, name, value)
    return fn


def main() -> None:
    args = arguments(__doc__.splitlines()[0])
    clock = args.timer
    model = gpt2(args)
    forward, spec, probe = model.forward, model.spec, model.probe
    jitted, device_weights = model.jitted, model.device_weights

    variants = {**({"before": [p for patches in UNDONE.values() for p in patches]}
                   if len(UNDONE) > 1 else {}), **UNDONE, "after": []}
    programs = {name: compiled(forward, spec, probe, patches)
                for name, patches in variants.items()}
    want = np.asarray(programs["after"](probe))
    same = {name: np.array_equal(np.asarray(fn(probe)), want) for name, fn in programs.items()}

    times = [t / 10 for t in interleaved(
        [ten(lambda: jitted(probe, device_weights))]
        + [ten(lambda fn=fn: fn(probe)) for fn in programs.values()],
        rounds=args.rounds, clock=clock, rotate=True)]
    t_jit = times[0]
    first = next(iter(programs))
    print(f"GPT-2, {args.layers} layers, vocab {args.vocab}, arithmetic='xla'; jax.jit "
          f"{1e3 * t_jit:.2f} ms")
    for (name, _), t in zip(programs.items(), times[1:]):
        print(f"  {name:<16} {1e3 * t:8.2f} ms {t / t_jit:6.3f}x jax.jit "
              f"{t / times[1]:6.3f}x {first}   {'same bits' if same[name] else 'DIFFERENT'}")
    print(f"load {open('/proc/loadavg').read()[:15]}")


if __name__ == "__main__":
    main()
