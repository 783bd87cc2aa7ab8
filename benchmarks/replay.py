"""Replay overhead (issue: executor). Run: python benchmarks/replay.py

Same-run baselines: the same NumPy code run eagerly; torch.fx's GraphModule and Interpreter on
the same chain when torch is installed (skipped with a note otherwise). Large tensors: compiled
replay, and the stepping executor with and without keeping every value.
"""

from __future__ import annotations

import numpy as np
from _common import best, chain, header, row

import capviz as cv


def torch_rows(n: int, t_eager: float) -> None:
    try:
        import torch
        import torch.fx
    except ImportError:
        print("torch.fx: skipped (torch is not installed; pip install torch==2.13.0 for the CPU "
              "build on this machine)")
        return

    class Chain(torch.nn.Module):
        def forward(self, x):
            for _ in range(n // 2):
                x = x * 1.0001
                x = x + 0.5
            return x

    gm = torch.fx.symbolic_trace(Chain())
    xt = torch.ones(4)
    with torch.no_grad():
        t_gm = best(lambda: gm(xt), repeat=5)
        interp = torch.fx.Interpreter(gm)
        t_int = best(lambda: interp.run(xt), repeat=3)
    row("torch.fx GraphModule per op (us)", f"{1e6 * t_gm / n:.3f}",
        f"eager numpy {1e6 * t_eager / n:.3f}", t_gm / t_eager, "(peer)")
    row("torch.fx Interpreter per op (us)", f"{1e6 * t_int / n:.3f}",
        f"eager numpy {1e6 * t_eager / n:.3f}", t_int / t_eager, "(peer)")


def main() -> None:
    n = 10_000
    graph = cv.capture(lambda x: chain(x, n), cv.spec((4,)))
    x4 = np.ones(4, np.float32)
    graph.replay({"x": x4}, backend="numpy")
    t_replay = best(lambda: graph.replay({"x": x4}, backend="numpy"), repeat=7)
    t_eager = best(lambda: chain(x4, n), repeat=7)
    t_step = best(lambda: graph.executor({"x": x4}, backend="numpy", keep=False).run(),
                  repeat=3)
    header("tiny tensors: 10,000 ops on shape (4,)")
    row("compiled replay per op (us)", f"{1e6 * t_replay / n:.3f}",
        f"eager numpy {1e6 * t_eager / n:.3f}", t_replay / t_eager, "goal <= 1.3x")
    row("stepping executor per op (us)", f"{1e6 * t_step / n:.3f}",
        f"eager numpy {1e6 * t_eager / n:.3f}", t_step / t_eager, "(debugger)")
    torch_rows(n, t_eager)

    big = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    g100 = cv.capture(lambda x: chain(x, 100), cv.spec(big.shape))
    g100.replay({"x": big}, backend="numpy")
    t_eager_big = best(lambda: chain(big, 100), repeat=5)
    header("large tensors: 100 ops on (1024, 1024) float32")
    for name, fn in [
        ("compiled replay (ms)", lambda: g100.replay({"x": big}, backend="numpy")),
        ("executor, keep=False (ms)",
         lambda: g100.executor({"x": big}, backend="numpy", keep=False).run()),
        ("executor, keep=True (ms)",
         lambda: g100.executor({"x": big}, backend="numpy", keep=True).run()),
    ]:
        t = best(fn, repeat=5)
        row(name, f"{1e3 * t:.1f}", f"eager numpy {1e3 * t_eager_big:.1f}", t / t_eager_big,
            "goal <= 1.03x" if "compiled" in name else "(debugger)")


if __name__ == "__main__":
    main()
