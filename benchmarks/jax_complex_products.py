"""What NumPy's fused complex products cost the JAX replay (issue 25; the hostile review 6,
finding 24). Run:
python benchmarks/jax_complex_products.py [--rounds 11] [--clock cpu]

``capviz.backends.jax.complex_products.multiply`` computes a complex ``multiply`` and ``square``
as NumPy's SIMD loop does (``fma(a, c, -(b d)) + j fma(a, d, b c)``) from error-free steps:
complex64 parts in float64, complex128 parts by Dekker's product and a sum rounded to odd.
Measured here, in the same run and interleaved (medians of ``--rounds`` rounds, ten calls per
round), against a bare ``jax.jit`` of the same source: a chain of 8 complex products and 8 adds
(``z = z * w + w``) of (512, 512) complex64 and complex128 values. Each is compiled twice from
two captures: once with XLA's own complex multiply while it is traced (the program before the
change), once with NumPy's form; and NumPy's form without the check of its subnormal steps
(``complex_products._flushed32``/``_flushed64``), the cost of that check. Figures: each
replay's time over ``jax.jit``'s, after over before, and checked over unchecked.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import interleaved, ten_calls, traced_with

import capviz as cv
from capviz.backends.jax import complex_products


def _traced(graph, probe, numpy_form: bool):
    """``graph`` traced with NumPy's form of complex products or XLA's own."""
    return traced_with(graph, probe, complex_products, "NUMPY_FUSES", numpy_form)


def _no_check(jnp, a, *rest):
    return jnp.ones(a.shape, bool)  # a constant mask: XLA folds it away


def _unchecked(graph, probe):
    """``graph`` traced with NumPy's form (where this machine's NumPy fuses) without the check
    of its subnormal steps (``complex_products._flushed32``/``_flushed64``): the form as it
    was before that check."""
    kept = complex_products._flushed64
    complex_products._flushed64 = _no_check
    try:
        return traced_with(graph, probe, complex_products, "_flushed32", _no_check)
    finally:
        complex_products._flushed64 = kept


def _chain(z):
    w = z * 0.5
    for _ in range(8):
        z = z * w + w
    return z


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    import jax

    jax.config.update("jax_enable_x64", True)  # complex128 on the device, for jax.jit too
    rng = np.random.default_rng(0)
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; medians of {args.rounds} "
          f"interleaved rounds of ten calls, {args.clock} clock")
    print(f"{'':<34} {'jax.jit':>10} {'before':>16} {'after':>16} {'after/before':>13}")
    for dtype in (np.complex64, np.complex128):
        z = ((rng.random((512, 512)) - 0.5) + 1j * (rng.random((512, 512)) - 0.5)).astype(dtype)
        device_z = jax.device_put(z)
        spec = cv.spec(z.shape, z.dtype)
        before = _traced(cv.capture(_chain, spec), device_z, numpy_form=False)
        after = _traced(cv.capture(_chain, spec), device_z, numpy_form=True)
        unchecked = _unchecked(cv.capture(_chain, spec), device_z)
        jitted = jax.jit(_chain)
        jax.block_until_ready(jitted(device_z))
        t_jit, t_before, t_unchecked, t_after = interleaved(
            [ten_calls(jax, jitted, device_z), ten_calls(jax, before, device_z),
             ten_calls(jax, unchecked, device_z), ten_calls(jax, after, device_z)],
            rounds=args.rounds, clock=clock)
        name = f"8 z * w + w (512, 512) {np.dtype(dtype).name}"
        print(f"{name:<34} {1e2 * t_jit:>7.2f} ms {1e2 * t_before:>7.2f} ms "
              f"{t_before / t_jit:>5.2f}x {1e2 * t_after:>7.2f} ms {t_after / t_jit:>5.2f}x "
              f"{t_after / t_before:>12.3f}x")
        print(f"{'  of which the flush check':<34} {'':>10} {'unchecked':>7} "
              f"{1e2 * t_unchecked:>7.2f} ms {t_unchecked / t_jit:>5.2f}x  checked/unchecked "
              f"{t_after / t_unchecked:.3f}x")


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.0f} s)")
