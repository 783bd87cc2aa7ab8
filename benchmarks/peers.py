"""capviz against its peers, same run (issue: reliability). Run: python benchmarks/peers.py

Each peer is measured where it is installed and skipped with a note where it is not
(``pip install torch==2.13.0`` takes the CPU build on this machine; ``pip install jax jaxlib``).

- capture per op of a 1,000- and a 10,000-op elementwise chain: capviz ``cv.capture`` vs
  ``torch.fx.symbolic_trace`` vs ``jax.make_jaxpr``;
- replay per op on shape (4,): capviz's compiled replay vs NumPy eager, torch.fx GraphModule and
  ``torch.fx.Interpreter``;
- SVG of the raw 1,000-op graph: capviz ``to_svg`` (every node drawn) vs the system ``dot`` on
  the same DOT text (or graphviz-pure where no system dot is installed).
"""

from __future__ import annotations

import shutil
import subprocess
import time

import numpy as np
from _common import best, chain

import capviz as cv
from capviz.render.svg import _pure_binary


def table(rows):
    print(f"{'measure':<40} {'tool':<26} {'per op / time':>16} {'vs capviz':>10}")
    base = rows[0][2]
    for measure, tool, value, unit in rows:
        ratio = value / base if base else float("nan")
        text = f"{value * 1e6:.3f} us" if unit == "us" else f"{value:.3f} s"
        print(f"{measure:<40} {tool:<26} {text:>16} {ratio:>9.2f}x")
    print()


def torch_module(n):
    import torch

    class Chain(torch.nn.Module):
        def forward(self, x):
            return chain(x, n)

    return Chain()


def main() -> None:
    notes = []
    try:
        import torch
        import torch.fx
    except ImportError:
        torch = None
        notes.append("torch.fx skipped: torch is not installed (pip install torch==2.13.0)")
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = None
        notes.append("jax skipped: not installed (pip install jax jaxlib)")

    for n in (1_000, 10_000):
        rows = [("capture", "capviz cv.capture",
                 best(lambda n=n: cv.capture(lambda x: chain(x, n), cv.spec(4)), 3) / n, "us")]
        if torch is not None:
            module = torch_module(n)
            rows.append(("capture", "torch.fx.symbolic_trace",
                         best(lambda module=module: torch.fx.symbolic_trace(module), 3) / n,
                         "us"))
        if jax is not None:
            x = jnp.ones(4, jnp.float32)
            rows.append(("capture", "jax.make_jaxpr",
                         best(lambda n=n, x=x: jax.make_jaxpr(lambda v: chain(v, n))(x), 3) / n,
                         "us"))
        print(f"capture, {n}-op chain")
        table(rows)

    n = 10_000
    graph = cv.capture(lambda x: chain(x, n), cv.spec(4))
    x4 = np.ones(4, np.float32)
    graph.replay({"x": x4}, backend="numpy")
    rows = [("replay", "capviz compiled replay",
             best(lambda: graph.replay({"x": x4}, backend="numpy"), 7) / n, "us"),
            ("replay", "NumPy eager (same code)", best(lambda: chain(x4, n), 7) / n, "us")]
    if torch is not None:
        gm = torch.fx.symbolic_trace(torch_module(n))
        xt = torch.ones(4)
        with torch.no_grad():
            rows.append(("replay", "torch.fx GraphModule", best(lambda: gm(xt), 5) / n, "us"))
            interp = torch.fx.Interpreter(gm)
            rows.append(("replay", "torch.fx Interpreter", best(lambda: interp.run(xt), 3) / n,
                         "us"))
    print(f"replay per op, {n}-op chain on shape (4,)")
    table(rows)

    small = cv.capture(lambda x: chain(x, 1000), cv.spec(4))
    source = small.to_dot(collapse=None).source
    start = time.perf_counter()
    small.to_svg(collapse=None)
    t_capviz = time.perf_counter() - start
    exe = shutil.which("dot")
    label = "system dot" if exe else "graphviz-pure (no system dot)"
    exe = exe or _pure_binary()
    start = time.perf_counter()
    subprocess.run([exe, "-Tsvg"], input=source.encode(), capture_output=True, check=True)
    t_dot = time.perf_counter() - start
    print("SVG, raw 1,000-op graph (every node drawn)")
    table([("svg", "capviz to_svg", t_capviz, "s"), ("svg", label, t_dot, "s")])
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
