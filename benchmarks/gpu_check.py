"""GPU check (issue: executor): one script, under 5 minutes on the GPU machine.

Run: python benchmarks/gpu_check.py [--layers 12 --width 768 --seq 1024]

1. the CuPy tests (pytest -m gpu), when CuPy and a GPU are present;
2. the core's plain-NumPy transformer, scaled up, replayed on NumPy and on CuPy: outputs within
   tolerance, and the speed ratio;
3. the same transformer replayed on JAX (``backend="jax"``, on jax's default device: a GPU
   when the installed jax has one), within the backend's tolerance, its first call (trace and
   XLA compile) apart from the steady replay; skipped when jax is not installed;
4. random-op replay on NumPy vs CuPy: uniform and bernoulli bits identical, normal within a few
   ulp;
and prints a table. Without a GPU it runs the CPU-only parts (capture, NumPy replay, the generic
Philox path against NumPy's) at a smaller size and says what it skipped.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

import capviz as cv
from capviz.backends.cupy import cupy_available
from capviz.models import transformer_block, transformer_weights


class _Other:
    __name__ = "generic"

    def __getattr__(self, name):
        return getattr(np, name)


def model(layers, params):
    def run(x):
        for i, p in enumerate(params):
            with cv.name_scope(f"layer{i}"):
                x = transformer_block(x, p)
        return x

    return run


def timed(fn, repeat=3):
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    gpu = cupy_available()
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=12 if gpu else 2)
    parser.add_argument("--width", type=int, default=768 if gpu else 128)
    parser.add_argument("--seq", type=int, default=1024 if gpu else 128)
    args = parser.parse_args()
    rows = []
    status = 0

    if gpu:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu",
                               os.path.join(here, "tests", "test_cupy_backend.py")],
                              capture_output=True, text=True, cwd=here)
        last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
        rows.append(("CuPy tests (pytest -m gpu)", last, "ok" if done.returncode == 0 else "FAIL"))
        status |= done.returncode != 0
    else:
        rows.append(("CuPy tests (pytest -m gpu)", "skipped: no CuPy/GPU", "-"))

    heads = max(1, args.width // 64)
    params = [transformer_weights(d=args.width, heads=heads, seed=i) for i in range(args.layers)]
    x = np.random.default_rng(0).standard_normal((args.seq, args.width)).astype(np.float32)
    start = time.perf_counter()
    graph = cv.capture(model(args.layers, params), cv.spec(x.shape))
    t_capture = time.perf_counter() - start
    rows.append((f"capture {args.layers}x{args.width}x{args.seq} transformer",
                 f"{len(graph.ops)} ops in {t_capture:.2f} s", "ok"))
    t_np = timed(lambda: graph.replay({"x": x}, backend="numpy"), repeat=1)
    out_np = graph.replay({"x": x}, backend="numpy")["out"]
    rows.append(("replay on NumPy", f"{t_np:.2f} s", "ok"))
    if gpu:
        import cupy

        def on_gpu():
            out = graph.replay({"x": x}, backend="cupy")["out"]
            cupy.cuda.Device().synchronize()
            return out

        t_cp = timed(on_gpu)
        out_cp = cupy.asnumpy(on_gpu())
        err = float(np.max(np.abs(out_cp - out_np)) / (np.max(np.abs(out_np)) + 1e-30))
        ok = err < 1e-3
        rows.append(("replay on CuPy", f"{t_cp * 1e3:.1f} ms, {t_np / t_cp:.1f}x faster",
                     "ok"))
        rows.append(("CuPy vs NumPy output (max rel err)", f"{err:.2e}", "ok" if ok else "FAIL"))
        status |= not ok
    else:
        rows.append(("replay on CuPy", "skipped: no CuPy/GPU", "-"))
    status |= _jax_rows(graph, x, out_np, t_np, rows)

    dev = cv.Device("numpy")
    dev.seed(2026)
    rgraph = cv.capture(lambda: (cv.random.uniform((1 << 20,)),
                                 cv.random.bernoulli((1 << 20,), p=0.3),
                                 cv.random.normal((1 << 20,), dtype="float64")), rng=dev)
    ref = rgraph.replay({}, backend="numpy")
    from capviz.ops import random as rng

    generic = rng.uniform(_Other(), 2026, draw=0, shape=(1 << 20,), dtype="float32", low=0.0,
                          high=1.0)
    same = bool(np.array_equal(generic, ref["out0"]))
    rows.append(("generic Philox path == NumPy Philox (uniform)", str(same),
                 "ok" if same else "FAIL"))
    status |= not same
    if gpu:
        import cupy

        out = rgraph.replay({}, backend="cupy", to_numpy=True)
        for name, label in (("out0", "uniform"), ("out1", "bernoulli")):
            same = bool(np.array_equal(out[name], ref[name]))
            rows.append((f"random {label}: CuPy bits == NumPy bits", str(same),
                         "ok" if same else "FAIL"))
            status |= not same
        ulps = int(np.max(np.abs(out["out2"].view(np.int64) - ref["out2"].view(np.int64))))
        rows.append(("random normal: max ulp CuPy vs NumPy", str(ulps),
                     "ok" if ulps <= 8 else "FAIL"))
        status |= ulps > 8
    else:
        rows.append(("random ops on CuPy", "skipped: no CuPy/GPU", "-"))

    width = max(len(r[0]) for r in rows)
    print(f"{'check':<{width}}  {'result':<48} status")
    for name, result, state in rows:
        print(f"{name:<{width}}  {result:<48} {state}")
    return int(status)


def _jax_rows(graph, x, out_np, t_np, rows) -> int:
    """The JAX replay of ``graph`` against the NumPy replay's ``out_np``; 1 on a mismatch."""
    try:
        import jax

        from capviz.backends.jax.backend import BACKEND
    except ImportError:
        rows.append(("replay on JAX", "skipped: jax not installed (capviz[jax])", "-"))
        return 0
    platform = jax.devices()[0].platform
    start = time.perf_counter()
    out = graph.replay({"x": x}, backend="jax", to_numpy=True)["out"]
    first = time.perf_counter() - start
    t_jax = timed(lambda: graph.replay({"x": x}, backend="jax")["out"].block_until_ready())
    rtol, atol = BACKEND.tolerance_for(out_np.dtype)
    ok = bool(np.allclose(out, out_np, rtol=rtol, atol=atol))
    err = float(np.max(np.abs(out - out_np)) / (np.max(np.abs(out_np)) + 1e-30))
    rows.append((f"replay on JAX ({platform})",
                 f"{t_jax * 1e3:.1f} ms, {t_np / t_jax:.1f}x faster; first call {first:.1f} s",
                 "ok"))
    rows.append(("JAX vs NumPy output (max rel err)", f"{err:.2e} (rtol {rtol:g}, atol {atol:g})",
                 "ok" if ok else "FAIL"))
    return int(not ok)


if __name__ == "__main__":
    sys.exit(main())
