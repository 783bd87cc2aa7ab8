"""What the JAX default replay of GPT-2 pico pays for the tighter bound of a declared product
(stop 40, R11 #14: each side's distance from the exact value apart, XLA's measured against a
float64 product: ``capviz.backends.jax.carried_contractions.declared_bound``), against the
stop-39 bound ``2 gamma_k |A| @ |B|`` (its rank-1 form first) in the same run, and jax.jit.
Run:
python benchmarks/jax_attention_bounds.py [--rounds R] [--clock cpu] [--scale K] [--tokens T]
    [--xla]

GPT-2 pico (benchmarks/gpt2_pico.py): 2 layers, width 64, 4 heads, ``--tokens`` tokens, biases
0.02, float32, c_attn's weights times ``--scale`` (1: init; 6 or 10: logits as large as a
trained model's, which the stop-39 bound refused at softmax's exp). "before" is the same
capture compiled with the stop-39 formulas put back while it traces (the cheap bound ``2
gamma_k ||a_i|| ||b_j||``, the exact one ``2 gamma_k |A| @ |B|``); "after" this tree's. Each
is timed over ``--rounds`` interleaved rounds of ten replays (medians), with the first call
(trace and compile) of each; a refusal is printed as such.
"""

from __future__ import annotations

import argparse
import time

import gpt2_pico
import numpy as np
from _common import interleaved
from gpt2_pico import gpt2_embedded, init_params, with_numpy

import capviz as cv
from capviz.backends import contraction_bound
from capviz.backends.jax import carried_contractions as cc
from capviz.backends.jax import carried_paths
from capviz.backends.jax.trace import dtype_of
from capviz.core.ir import Node


def _before_declared(jnp, node, args, result, _now=cc.declared_bound):
    """The stop-39 exact bound: ``2 gamma |A| @ |B|`` (fewer terms where products are 0)."""
    kind = dtype_of(result)
    operands = [a for a, n in zip(args, node.args) if isinstance(n, Node)]
    if kind.kind != "f" or len(operands) != 2 or node.op == contraction_bound.NORM:
        return _now(jnp, node, args, result)
    real = np.dtype(kind)
    count, _, g, floor = cc._gamma(node, [jnp.asarray(a) for a in operands], kind)
    kept = {k: v for k, v in node.params.items() if k not in ("dtype", "casting", "out")}
    fn = cc.ops.OPS[node.op].bind(jnp)
    size = fn(*[jnp.abs(jnp.asarray(a)).astype(np.float64) if isinstance(n, Node) else a
                for a, n in zip(args, node.args)], **kept) \
        / (1 - contraction_bound.gamma(count + 2, np.float64))
    terms = fn(*[(jnp.asarray(a) != 0).astype(np.float64) if isinstance(n, Node) else a
                 for a, n in zip(args, node.args)], **kept)
    fewer = jnp.minimum(terms, count)
    u = float(np.finfo(real).eps) / 2
    each = jnp.where(fewer * u < 1, fewer * u / jnp.where(fewer * u < 1, 1 - fewer * u, 1),
                     np.inf)
    bound = jnp.where(terms <= 1, floor, 2 * jnp.minimum(g, each) * size + floor)
    finite = jnp.isfinite(jnp.abs(result)) & jnp.isfinite(bound)
    return jnp.where(finite, bound, 0)


def _before_nominal(jnp, node, args, result, _now=cc.nominal):
    """The stop-39 cheap bound: ``2 gamma ||a_i|| ||b_j||``."""
    if not cc._norms_form(node, args) or dtype_of(result).kind != "f":
        return _now(jnp, node, args, result)
    a, b = (jnp.asarray(x) for x in args)
    count, _, g, floor = cc._gamma(node, [a, b], dtype_of(result))
    rows = jnp.sqrt(jnp.sum(jnp.abs(a).astype(np.float64) ** 2, axis=-1))
    axis = -2 if b.ndim >= 2 else -1
    cols = jnp.sqrt(jnp.sum(jnp.abs(b).astype(np.float64) ** 2, axis=axis))
    if a.ndim >= 2 and b.ndim >= 2:
        size = rows[..., :, None] * cols[..., None, :]
    else:
        size = rows[..., None] * cols if b.ndim >= 2 else rows * cols
    size = size / (1 - contraction_bound.gamma(count + 10, np.float64))
    bound = jnp.broadcast_to(2 * g * size + floor, jnp.shape(result))
    return jnp.where(jnp.isfinite(jnp.abs(result)), bound, 0)


def compiled(forward, probe, before: bool, **options):
    """``forward`` captured afresh, compiled for jax with ``options`` and called once on
    ``probe`` (traced with the stop-39 formulas where ``before``: no ``carried_paths._grown``
    either): (the function or the refusal, seconds)."""
    import jax

    graph = cv.capture(forward, np.asarray(probe))
    kept = cc.declared_bound, cc.nominal, carried_paths._grown
    if before:
        cc.declared_bound, cc.nominal = _before_declared, _before_nominal
        carried_paths._grown = lambda jnp, node, args, bound, real: bound
    start = time.perf_counter()
    try:
        fn = graph.compile(backend="jax", **options)
        jax.block_until_ready(fn(probe))
        return fn, time.perf_counter() - start
    except cv.CapvizError as error:
        return str(error).split(" recorded")[0], time.perf_counter() - start
    finally:
        cc.declared_bound, cc.nominal, carried_paths._grown = kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="cpu")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--xla", action="store_true", help="arithmetic='xla' (no contraction "
                        "followed: only a sum's bound through one, carried_paths._grown)")
    args = parser.parse_args()
    options = {"arithmetic": "xla"} if args.xla else {}
    clock = time.perf_counter if args.clock == "wall" else time.process_time

    import jax
    import jax.numpy as jnp

    print(f"medians of {args.rounds} interleaved rounds of 10 calls, {args.clock} time; jax "
          f"{jax.__version__}; load {open('/proc/loadavg').read()[:15]}")
    gpt2_pico.PICOGPT_SCALARS = False
    params = init_params(n_layer=2, n_embd=64, n_vocab=100, n_ctx=args.tokens,
                         bias_scale=0.02)
    for block in params["blocks"]:
        block["attn"]["c_attn"]["w"] *= np.float32(args.scale)
    ids = params["wte"][np.arange(args.tokens) % 100] + params["wpe"][range(args.tokens)]
    weights = {k: v for k, v in params.items() if k != "wpe"}
    probe = jax.device_put(ids)

    def forward(v):
        return gpt2_embedded(v, **weights, n_head=4)

    before, t_before = compiled(forward, probe, True, **options)
    after, t_after = compiled(forward, probe, False, **options)
    peer = with_numpy(jnp)
    device_weights = jax.device_put(weights)
    jitted = jax.jit(lambda v, w: peer.gpt2_embedded(v, **w, n_head=4))
    jax.block_until_ready(jitted(probe, device_weights))
    calls = {"jax.jit": lambda: jitted(probe, device_weights)}
    for name, fn in (("before", before), ("after", after)):
        if callable(fn):
            calls[name] = (lambda f: lambda: f(probe))(fn)
    times = dict(zip(calls, interleaved(
        [(lambda c: lambda: [jax.block_until_ready(c()) for _ in range(10)])(c)
         for c in calls.values()], rounds=args.rounds, clock=clock)))
    jit = times["jax.jit"] / 10
    mode = "arithmetic='xla'" if args.xla else "default"
    label = f"GPT-2 pico float32 {mode}, c_attn x{args.scale:g}, {args.tokens} tokens"
    for name, fn, first in (("before", before, t_before), ("after", after, t_after)):
        if callable(fn):
            each = times[name] / 10
            print(f"{label} {name:<7} {1e3 * each:7.2f} ms {each / jit:5.2f}x jax.jit "
                  f"({1e3 * jit:.2f} ms); first call {first:5.1f} s")
        else:
            print(f"{label} {name:<7} refused: {fn}; first call {first:5.1f} s")
    if callable(before) and callable(after):
        print(f"after / before {times['after'] / times['before']:.2f}x; "
              f"same bits {np.array_equal(np.asarray(before(probe)), np.asarray(after(probe)))}")
    print(f"load {open('/proc/loadavg').read()[:15]}")


if __name__ == "__main__":
    main()
