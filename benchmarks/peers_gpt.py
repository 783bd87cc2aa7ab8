"""capviz against jax on a real model: a GPT-2 forward (issue 22). Run:
python benchmarks/peers_gpt.py [--layers N] [--tokens T] [--rounds R] [--bias-scale S]
[--picogpt-scalars] [--clock cpu] [--parts]

The program is ``benchmarks/gpt2_pico.py``, picoGPT's ``gpt2.py`` in plain NumPy, GPT-2 small's
shape by default (12 layers, width 768, 64 tokens, random float32 weights, every bias
``0.02 * N(0, 1)``: nonzero, as a trained model's, so that the checks of a bias add that can
cancel its product are paid as a real model pays them; ``--bias-scale 0`` for zeros; the JAX
replay is also timed with biases ``0.3 * N(0, 1)``, ``--also-bias-scale``, nearer a trained
GPT-2's, whose bias adds that halve an output take the exact bound's slower path). capviz
captures it unchanged; the peer runs the same source with its ``np`` bound to ``jax.numpy``.
Every figure is the median of rounds interleaved in one run (the two sides in turn; wall time,
or with ``--clock cpu`` this process's CPU time, XLA's threads included), and each row compares
the same work:

- capture: ``cv.capture(...)`` and building ``graph.nx``, vs ``jax.make_jaxpr`` of the same
  forward (both trace the Python code once and build an IR; per op / per equation);
- memory a capture keeps beyond the weights: what ``tracemalloc`` sees the capture allocate and
  keep, against the bytes of the weights the program reads;
- JAX replay, two rows (the lead's ruling 37 07:30 (d)): the default replay (NumPy's
  arithmetic: a contraction's declared bound carried to every add that can cancel it), its
  figure where it replays, else where it fails and on how many of ``--feeds`` token draws; and
  ``arithmetic="xla"`` (XLA's order of summation for products, untested: like with like against
  ``jax.jit``, issue 22's figure). Each ``graph.compile(backend="jax", ...)`` called on a token
  array already on the device, steady state (after a first call), vs ``jax.jit`` of the same
  forward with its weights as arguments on the device; both wait for the result
  (``block_until_ready``). capviz's figure includes every check it makes: the values NumPy would
  refuse, in the XLA program, and the read of the weights kept by reference that refuses a
  replay after they were edited in place (on a thread of its own while XLA computes: with
  ``--clock cpu`` it is counted in full);
- the 100-op elementwise chain of ``benchmarks/capture_replay.py`` on (1024, 1024) float32, JAX
  replay vs ``jax.jit`` the same way (ten calls per round);
- NumPy replay: ``graph.compile(backend="numpy")`` vs the same forward run eagerly by NumPy
  (capviz's figure includes the same check of the weights, made while its program runs).
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

import gpt2_pico
import numpy as np
from _common import chain, interleaved
from gpt2_pico import gpt2_embedded, init_params, with_numpy

import capviz as cv


def weight_bytes(params) -> int:
    if isinstance(params, dict):
        return sum(weight_bytes(v) for v in params.values())
    if isinstance(params, list):
        return sum(weight_bytes(v) for v in params)
    return int(params.nbytes)


def report(rows) -> None:
    print(f"{'figure':<34} {'capviz':>22} {'peer':>34} {'ratio':>7}")
    for figure, ours, peer, ratio in rows:
        shown = f"{ratio:>6.2f}x" if ratio == ratio else "     -"  # NaN: no figure (fails)
        print(f"{figure:<34} {ours:>22} {peer:>34} {shown}")


def jax_parts(jax, graph, device_ids, peer, rounds, clock) -> list:
    """The ``arithmetic="xla"`` JAX replay's two parts, each against ``jax.jit`` in the same
    rounds: the compiled XLA program called alone (reached through capviz's internals: the
    backend's compiled object of the graph's program, its fast variant), and the check that the
    weights kept by reference are unchanged (``capviz.core.references.check_unchanged``), which
    a replay runs on a thread of its own while the program computes."""
    from capviz.backends.jax.backend import _ZERO, BACKEND, x64
    from capviz.core.references import check_unchanged

    compiled = BACKEND._compiled[graph.replay_cache["jax"][2]]

    def program():
        with x64(), jax.default_matmul_precision("highest"):
            jax.block_until_ready(compiled._fn((device_ids,), compiled.constants, None, _ZERO,
                                                  False, (), True))

    t_program, t_jit, t_check = interleaved(
        [program, lambda: jax.block_until_ready(peer()), lambda: check_unchanged(graph)],
        rounds=rounds, clock=clock)
    return [("  its XLA program alone", f"{1e3 * t_program:.1f} ms",
             f"jax.jit {1e3 * t_jit:.1f} ms", t_program / t_jit),
            ("  its check of the weights alone", f"{1e3 * t_check:.1f} ms",
             f"jax.jit {1e3 * t_jit:.1f} ms", t_check / t_jit)]


def rebiased(params, scale: float, rng):
    """``params`` with every bias (the dense layers' and the layer norms' ``b``) drawn again as
    ``scale * N(0, 1)``, the weights shared."""
    if isinstance(params, dict):
        return {k: (rng.standard_normal(v.shape, np.float32) * np.float32(scale))
                if k == "b" else rebiased(v, scale, rng) for k, v in params.items()}
    if isinstance(params, list):
        return [rebiased(v, scale, rng) for v in params]
    return params


def jax_rows(jax, forward, spec, feeds, peer_forward, device_params, rounds, clock,
             label="") -> list:
    """The two JAX replay rows of ``forward`` (the lead's ruling 37 07:30 (d)): the default
    replay against ``jax.jit`` where it replays on every one of ``feeds`` (device arrays), else
    the node it fails at and on how many feeds; ``arithmetic="xla"`` against ``jax.jit``."""
    graph = cv.capture(forward, spec)
    jitted = jax.jit(peer_forward)
    first = feeds[0]
    jax.block_until_ready(jitted(first, device_params))
    rows = []
    default = graph.compile(backend="jax")
    failed = []
    for ids in feeds:
        try:
            jax.block_until_ready(default(ids))
        except cv.ReplayError as err:
            failed.append(err)
    if failed:
        node = failed[0].node
        line = f"{node.source[0].rsplit('/', 1)[-1]}:{node.source[1]}" if node.source else "?"
        rows.append((f"replay, backend='jax'{label}", f"fails at %{node.index} ({node.op})",
                     f"{line}, {len(failed)} of {len(feeds)} feeds", float("nan")))
    else:
        t_jax, t_jit = interleaved([lambda: jax.block_until_ready(default(first)),
                                    lambda: jax.block_until_ready(jitted(first, device_params))],
                                   rounds=rounds, clock=clock)
        rows.append((f"replay, backend='jax'{label}", f"{1e3 * t_jax:.1f} ms",
                     f"jax.jit {1e3 * t_jit:.1f} ms", t_jax / t_jit))
    xla = graph.compile(backend="jax", arithmetic="xla")
    jax.block_until_ready(xla(first))
    t_xla, t_jit = interleaved([lambda: jax.block_until_ready(xla(first)),
                                lambda: jax.block_until_ready(jitted(first, device_params))],
                               rounds=rounds, clock=clock)
    rows.append((f"  arithmetic='xla'{label}", f"{1e3 * t_xla:.1f} ms",
                 f"jax.jit {1e3 * t_jit:.1f} ms", t_xla / t_jit))
    return rows, graph, xla


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time, or this process's CPU time (all threads: XLA's too), "
                             "which other processes on a busy machine disturb less")
    parser.add_argument("--bias-scale", type=float, default=0.02,
                        help="every bias (dense layers', layer norms') this times N(0, 1); 0: "
                             "zeros (the default before stop 36, R7 #34)")
    parser.add_argument("--also-bias-scale", type=float, default=0.3,
                        help="a second bias scale whose JAX replay is timed too, on the same "
                             "weights (trained GPT-2's biases run to units: a bias that halves "
                             "an output takes the exact bound's slower path); 0: none")
    parser.add_argument("--feeds", type=int, default=5,
                        help="token draws the default JAX replay is tried on (where it fails: "
                             "on how many)")
    parser.add_argument("--picogpt-scalars", action="store_true",
                        help="keep picoGPT's np.sqrt scalars (float64 under NumPy 2)")
    parser.add_argument("--parts", action="store_true",
                        help="also time the JAX replay's parts against jax.jit: its XLA program "
                             "alone (capviz internals) and the check of the weights alone")
    args = parser.parse_args()
    clock = time.perf_counter if args.clock == "wall" else time.process_time

    import jax
    import jax.numpy as jnp

    gpt2_pico.PICOGPT_SCALARS = args.picogpt_scalars
    peer = with_numpy(jnp, picogpt_scalars=args.picogpt_scalars)
    params = init_params(args.layers, bias_scale=args.bias_scale)
    tokens = np.random.default_rng(1).integers(0, 50257, args.tokens)
    ids = params["wte"][tokens] + params["wpe"][range(args.tokens)]  # picoGPT's first line
    n_head = 12
    weights = {k: v for k, v in params.items() if k != "wpe"}

    def forward(x):
        return gpt2_embedded(x, **weights, n_head=n_head)

    def peer_forward(x, weights):
        return peer.gpt2_embedded(x, **weights, n_head=n_head)

    blocks = weight_bytes(params["blocks"])
    print(f"GPT-2 forward: {args.layers} layers, width 768, {args.tokens} tokens, "
          f"{blocks / 2**20:.0f} MiB of block weights, {weight_bytes(params) / 2**20:.0f} MiB "
          f"in all, biases {args.bias_scale} * N(0, 1); medians of {args.rounds} interleaved "
          f"rounds, {args.clock} time; jax "
          f"{jax.__version__}, numpy {np.__version__}")

    spec = cv.spec(ids.shape, ids.dtype)
    graph = cv.capture(forward, spec)
    n_ops = len(graph.ops)
    n_eqns = len(jax.make_jaxpr(lambda t: peer_forward(t, weights))(ids).eqns)

    def capture():
        return cv.capture(forward, spec).nx

    def make_jaxpr():
        return jax.make_jaxpr(lambda t: peer_forward(t, weights))(ids)

    t_cap, t_jaxpr = interleaved([capture, make_jaxpr], rounds=args.rounds, clock=clock)
    rows = [("capture (+ graph.nx)",
             f"{t_cap:.3f} s, {1e6 * t_cap / n_ops:.0f} us/op ({n_ops})",
             f"make_jaxpr {t_jaxpr:.3f} s, {1e6 * t_jaxpr / n_eqns:.0f} us/eqn ({n_eqns})",
             t_cap / t_jaxpr)]

    del graph
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    kept = cv.capture(forward, spec)
    _ = kept.nx
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    kept_bytes = sum(s.size_diff for s in after.compare_to(before, "filename"))
    total = weight_bytes(weights)
    rows.append(("memory a capture keeps", f"{kept_bytes / 2**20:.1f} MiB",
                 f"weights {total / 2**20:.0f} MiB", kept_bytes / total))

    device_ids = jax.device_put(ids)
    device_params = jax.device_put(weights)
    feeds = [device_ids] + [jax.device_put(params["wte"][np.random.default_rng(k).integers(
        0, 50257, args.tokens)] + params["wpe"][range(args.tokens)]) for k in range(
        2, args.feeds + 1)]
    jitted = jax.jit(peer_forward)
    replays, xla_graph, fn = jax_rows(jax, forward, spec, feeds, peer_forward, device_params,
                                      args.rounds, clock)
    rows.extend(replays)
    if args.also_bias_scale:
        other = rebiased(weights, args.also_bias_scale, np.random.default_rng(2))
        rows.extend(jax_rows(jax, lambda x: gpt2_embedded(x, **other, n_head=n_head), spec,
                             feeds, peer_forward, jax.device_put(other), args.rounds, clock,
                             f", biases {args.also_bias_scale}")[0])
    if args.parts:
        rows.extend(jax_parts(jax, xla_graph, device_ids,
                              lambda: jitted(device_ids, device_params), args.rounds, clock))

    x = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    chain_graph = cv.capture(lambda v: chain(v, 100), cv.spec(x.shape, x.dtype))
    chain_fn = chain_graph.compile(backend="jax")
    chain_jit = jax.jit(lambda v: chain(v, 100))
    device_x = jax.device_put(x)
    jax.block_until_ready(chain_fn(device_x))
    jax.block_until_ready(chain_jit(device_x))

    def ten(call):
        def run():
            for _ in range(10):
                jax.block_until_ready(call(device_x))
        return run

    t_chain, t_chain_jit = interleaved([ten(chain_fn), ten(chain_jit)], rounds=args.rounds,
                                       clock=clock)
    rows.append(("100-op chain, backend='jax'", f"{1e2 * t_chain:.2f} ms",
                 f"jax.jit {1e2 * t_chain_jit:.2f} ms", t_chain / t_chain_jit))

    fn_np = kept.compile(backend="numpy")
    fn_np(ids)
    t_np, t_eager = interleaved([lambda: fn_np(ids), lambda: forward(ids)], rounds=args.rounds,
                                 clock=clock)
    rows.append(("replay, backend='numpy'", f"{1e3 * t_np:.1f} ms",
                 f"eager NumPy {1e3 * t_eager:.1f} ms", t_np / t_eager))
    report(rows)
    ours = np.asarray(fn(device_ids)[0])  # the arithmetic="xla" replay
    theirs = np.asarray(jitted(device_ids, device_params))
    print(f"max |capviz jax - jax.jit| = {np.max(np.abs(ours - theirs)):.3g} "
          f"(dtypes {ours.dtype}, {theirs.dtype})")


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.0f} s)")
