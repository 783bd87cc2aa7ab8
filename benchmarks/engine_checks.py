"""What the JAX backend's value checks cost (issue 25). Run: python benchmarks/engine_checks.py

The checks that make the JAX replay fail at a node instead of returning a value NumPy would not
compute (``capviz/backends/jax/checks.py``: finite, moderate complex values; float16 overflow
of reductions; ``capviz/backends/jax/subnormals/``: zeros from flushed subnormals) are flags of
the compiled function. Measured here against a bare ``jax.jit`` of the same Python function on
the same device input (no capviz check at all, the ceiling XLA gives): medians of interleaved
rounds (``_common.interleaved``), CPU time of this process, per replay.

- a 100-op chain of ``*`` and ``+`` over (1024, 1024) float32 with literals (``x * 1.0001``,
  ``x + 0.5``: no subnormal can come out, no check);
- the same with a tensor operand (``x * y``, ``x + y``: every op's subnormal check, which
  the replay's fast program fuses into the chain as a select of NaN where it fails, and one
  test of the output for NaN: ``capviz/backends/jax/poison.py``);
- a 40-op chain of complex64 ``*`` and ``+`` over (512, 512) (the products' operands
  checked, as one mask fused into the chain; the sums with a literal far from ``tiny`` need
  no check);
- a 40-op chain of complex64 ``*`` and ``+`` of two tensors (``z * w``, ``z + w``: the
  sums' parts checked too, ``capviz/backends/jax/subnormals/complex_parts.py``);
- ``x.std(axis=0)`` of (4096, 256) float16 (the float16 overflow check);
- complex64 ``sin``, ``sqrt``, ``log``, ``sinh`` of (512, 512) values (the checks of
  ``capviz/backends/jax/subnormals/complex_functions.py``; ``sinh`` in NumPy's formula,
  ``capviz/backends/jax/functions/hyperbolic.py``), against ``jax.numpy``'s own;
- ``np.linalg.norm(x, axis=1)``, ``np.average(x, axis=0, weights=w)`` and
  ``np.trapezoid(x, axis=1)`` of (1024, 1024) float32 values in [0.5, 1.5) (the weighted
  average of values of both signs along 1,024 rows cancels: it fails at its node), written
  out in checked steps (``capviz/backends/jax/functions/``), against ``jax.numpy``'s
  ``linalg.norm``, ``average``, ``trapezoid``;
- ``x.sum(axis=0)`` and ``np.cumsum(x, axis=0)`` of (4096, 256) float16 values near 0.1, whose
  running sums NumPy rounds to float16 row after row (it drifts to 105.2 after 1,000 rows of
  0.1): the sums check fails and the replay computes NumPy's order, a ``lax.scan`` with a
  float16 carry (``capviz/backends/jax/numpy_order.py``; refused at the node before), against
  ``jax.numpy``'s own (XLA's order, float32 partial sums: not NumPy's values).

``--only TEXT`` runs the cases whose name contains it.

Figures: capviz's JAX replay time / bare ``jax.jit`` time (1.00: free). Compare with the same
script on a checkout before the checks (``git stash`` or an older commit) for what they add.
"""

from __future__ import annotations

import time

import numpy as np
from _common import chain, interleaved

import capviz as cv

CALLS = 10


def _complex_chain(z):
    for _ in range(20):
        z = z * (0.999 + 0.001j)
        z = z + (0.5 - 0.25j)
    return z


def _complex_pair_chain(zw):
    z, w = zw[0], zw[1]
    for _ in range(20):
        z = z * w
        z = z + w
    return z


def _pair_chain(xy):
    x, y = xy[0], xy[1]
    for _ in range(50):
        x = x * y
        x = x + y
    return x


def _std(x):
    return x.std(axis=0)


def _complex_functions(z):
    return np.sin(z) + np.sqrt(z) + np.log(z) + np.sinh(z)


def _jnp_complex_functions(z):
    import jax.numpy as jnp

    return jnp.sin(z) + jnp.sqrt(z) + jnp.log(z) + jnp.sinh(z)


_WEIGHTS = np.linspace(0.5, 1.5, 1024).astype(np.float32)


def _declared(x):
    return (np.linalg.norm(x, axis=1) + np.average(x, axis=0, weights=_WEIGHTS)
            + np.trapezoid(x, axis=1))


def _jnp_declared(x):
    import jax.numpy as jnp

    return (jnp.linalg.norm(x, axis=1) + jnp.average(x, axis=0, weights=_WEIGHTS)
            + jnp.trapezoid(x, axis=1))


def _column_sum(x):
    return x.sum(axis=0)


def _running_sum(x):
    return np.cumsum(x, axis=0)


def _cases() -> list:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, 1024)).astype(np.float32)
    z = (rng.standard_normal((512, 512)) + 1j * rng.standard_normal((512, 512))).astype(
        np.complex64)
    h = rng.standard_normal((4096, 256)).astype(np.float16)
    h = np.where(np.abs(h) < np.finfo(h.dtype).tiny, np.float16(0.5), h)  # no subnormals
    drifting = (0.1 + 0.01 * rng.random((4096, 256))).astype(np.float16)
    return [("100-op chain, (1024, 1024) float32", lambda v: chain(v, 100), x),
            ("100-op chain of x * y, x + y, (1024, 1024)", _pair_chain,
             (0.5 + rng.random((2, 1024, 1024))).astype(np.float32)),
            ("40-op complex64 chain, (512, 512)", _complex_chain, z),
            ("40-op complex64 z * w, z + w, (512, 512)", _complex_pair_chain,
             np.exp(2j * np.pi * rng.random((2, 512, 512))).astype(np.complex64)),
            ("std(axis=0), (4096, 256) float16", _std, h),
            ("complex64 sin + sqrt + log + sinh, (512, 512)", _complex_functions, z,
             _jnp_complex_functions),
            ("norm + average + trapezoid, (1024, 1024)", _declared,
             (0.5 + rng.random((1024, 1024))).astype(np.float32), _jnp_declared),
            ("float16 sum(axis=0), (4096, 256)", _column_sum, drifting),
            ("float16 cumsum(axis=0), (4096, 256)", _running_sum, drifting)]


def main(argv: list[str] | None = None) -> None:
    import argparse

    import jax

    from capviz.backends.jax.backend import x64

    parser = argparse.ArgumentParser(prog="python benchmarks/engine_checks.py")
    parser.add_argument("--only", default="", help="only the cases whose name contains this")
    only = parser.parse_args(argv).only
    print(f"{'case':<40} {'capviz jax':>12} {'bare jit':>12} {'ratio':>7}")
    for name, fn, value, *jnp_form in _cases():
        if only not in name:
            continue
        graph = cv.capture(fn, cv.spec(value.shape, value.dtype))
        replay = graph.compile(backend="jax")
        with x64():
            device = jax.device_put(value)
            bare = jax.jit(jnp_form[0] if jnp_form else fn)
            bare(device).block_until_ready()
        try:
            replay(device)[0].block_until_ready()
        except cv.CapvizError as err:  # a case a check refuses now: say so, time the others
            print(f"{name:<40} fails at its node: {str(err).split(': ', 2)[-1][:60]}...")
            continue

        def ours():
            for _ in range(CALLS):
                replay(device)[0].block_until_ready()

        def theirs():
            with x64():
                for _ in range(CALLS):
                    bare(device).block_until_ready()

        mine, ref = interleaved([ours, theirs], rounds=7, clock=time.process_time)
        print(f"{name:<40} {mine / CALLS * 1e3:>10.2f}ms {ref / CALLS * 1e3:>10.2f}ms "
              f"{mine / ref:>6.2f}x")


if __name__ == "__main__":
    main()
