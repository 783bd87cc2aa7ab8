"""What a sum in NumPy's order costs on the JAX backend (issue 25, capviz/backends/jax/
numpy_order.py). Run: python benchmarks/jax_numpy_order.py [--rounds R] [--clock cpu]

A (1024, 768) float32 column sum ``x.sum(0)`` (NumPy: a running sum, row after row), medians of
rounds interleaved in one run, each compiled function called on an array already on the device
and waited for:

- NumPy's order alone: ``jax.jit`` of ``numpy_order.reduce_sum`` (a ``lax.scan`` of 1023 adds of
  768 lanes) against ``jax.jit(lambda x: x.sum(0))``, XLA's reduction;
- the replay where the check fails (values in [1, 2): 1024 roundings of their total pass the
  tolerance), which computes NumPy's order, and where it passes (values of both signs near
  1e-3: the sum is XLA's), each against ``jax.jit`` of the same sum: what the check and the
  ``lax.cond`` cost in the common case, and the exact path in the rare one;
- a (64, 768) last-axis sum in NumPy's pairwise order against XLA's, for the pairwise program.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from _common import interleaved

import capviz as cv
from capviz.backends.jax import numpy_order


def _ready(fn, x):
    return lambda: jax.block_until_ready(fn(x))


def _replay(fn, x):
    compiled = cv.capture(fn, cv.spec(x.shape, x.dtype)).compile(backend="jax")
    on_device = jax.device_put(x)
    compiled(on_device)  # compile, and the first call's checks
    return lambda: compiled(on_device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    rng = np.random.default_rng(0)
    failing = (1 + rng.random((1024, 768))).astype(np.float32)
    passing = (rng.standard_normal((1024, 768)) * 1e-3).astype(np.float32)
    rows = (1 + rng.random((64, 768))).astype(np.float32)
    xla_columns = jax.jit(lambda x: x.sum(0))
    ours_columns = jax.jit(lambda x: numpy_order.reduce_sum(jnp, x, 0))
    xla_rows = jax.jit(lambda x: x.sum(-1))
    ours_rows = jax.jit(lambda x: numpy_order.reduce_sum(jnp, x, -1))
    on = {k: jax.device_put(v) for k, v in (("f", failing), ("p", passing), ("r", rows))}
    assert np.array_equal(np.asarray(ours_columns(on["f"])), failing.sum(0))
    assert np.array_equal(np.asarray(ours_rows(on["r"])), rows.sum(-1))
    fns = [_ready(ours_columns, on["f"]), _ready(xla_columns, on["f"]),
           _replay(lambda x: x.sum(0), failing), _ready(xla_columns, on["f"]),
           _replay(lambda x: x.sum(0), passing), _ready(xla_columns, on["p"]),
           _ready(ours_rows, on["r"]), _ready(xla_rows, on["r"])]
    times = interleaved(fns, rounds=args.rounds, clock=clock)
    print(f"medians of {args.rounds} interleaved rounds, {args.clock} clock; jax {jax.__version__}")
    labels = ["(1024, 768) float32 x.sum(0), NumPy's order alone (scan)",
              "replay x.sum(0) where the check fails (NumPy's order)",
              "replay x.sum(0) where the check passes (XLA's sum)",
              "(64, 768) float32 x.sum(-1), NumPy's pairwise order alone"]
    for k, label in enumerate(labels):
        ours, base = times[2 * k], times[2 * k + 1]
        print(f"{label:<60} {ours * 1e6:9.1f} us  jax.jit {base * 1e6:9.1f} us  "
              f"{ours / base:6.2f}x")


if __name__ == "__main__":
    main()
