"""capviz against its peers, same run (issue: reliability). Run: python benchmarks/peers.py

Each peer is measured where it is installed and skipped with a note where it is not
(``pip install torch==2.13.0`` takes the CPU build on this machine; ``pip install jax jaxlib``).
Every figure is the median of interleaved rounds (the tools run in turn), and each row compares
the same work:

- capture per op of a 1,000- and a 10,000-op elementwise chain, capture alone: capviz
  ``cv.capture`` vs ``jax.make_jaxpr`` (both build an IR and stop there);
- capture + compile per op: capviz ``cv.capture`` + ``graph.compile()`` vs
  ``torch.fx.symbolic_trace``, which traces and also generates and compiles the module's code;
- replay per op on shape (4,): capviz's compiled replay (``graph.compile()`` and
  ``graph.replay()``) vs NumPy eager, torch.fx GraphModule and ``torch.fx.Interpreter``;
- SVG of the raw 1,000-op graph: capviz ``to_svg`` (every node drawn) vs the system ``dot`` on
  the same DOT text (or graphviz-pure where no system dot is installed).
"""

from __future__ import annotations

import shutil
import subprocess
import time

import numpy as np
from _common import chain, interleaved

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
        rounds = 5 if n <= 1_000 else 3
        tools = [("capviz cv.capture", lambda n=n: cv.capture(lambda x: chain(x, n),
                                                               cv.spec(4)))]
        if jax is not None:
            x = jnp.ones(4, jnp.float32)
            tools.append(("jax.make_jaxpr",
                          lambda n=n, x=x: jax.make_jaxpr(lambda v: chain(v, n))(x)))
        times = interleaved([fn for _, fn in tools], rounds=rounds)
        print(f"capture alone, {n}-op chain (medians of {rounds} interleaved rounds)")
        table([("capture", name, t / n, "us") for (name, _), t in zip(tools, times)])

        tools = [("capviz capture + compile",
                  lambda n=n: cv.capture(lambda x: chain(x, n), cv.spec(4)).compile(
                      backend="numpy"))]
        if torch is not None:
            module = torch_module(n)
            tools.append(("torch.fx.symbolic_trace",
                          lambda module=module: torch.fx.symbolic_trace(module)))
        times = interleaved([fn for _, fn in tools], rounds=rounds)
        print(f"capture + compile, {n}-op chain (medians of {rounds} interleaved rounds)")
        table([("capture + compile", name, t / n, "us") for (name, _), t in zip(tools, times)])

    n = 10_000
    graph = cv.capture(lambda x: chain(x, n), cv.spec(4))
    x4 = np.ones(4, np.float32)
    fn = graph.compile(backend="numpy")
    fn(x4)
    tools = [("capviz graph.compile() call", lambda: fn(x4)),
             ("capviz graph.replay()", lambda: graph.replay({"x": x4}, backend="numpy")),
             ("NumPy eager (same code)", lambda: chain(x4, n))]
    if torch is not None:
        gm = torch.fx.symbolic_trace(torch_module(n))
        xt = torch.ones(4)
        interp = torch.fx.Interpreter(gm)

        def no_grad(call):
            def run():
                with torch.no_grad():
                    call()
            return run

        tools.append(("torch.fx GraphModule", no_grad(lambda: gm(xt))))
        tools.append(("torch.fx Interpreter", no_grad(lambda: interp.run(xt))))
    times = interleaved([fn for _, fn in tools], rounds=7)
    print(f"replay per op, {n}-op chain on shape (4,) (medians of 7 interleaved rounds)")
    table([("replay", name, t / n, "us") for (name, _), t in zip(tools, times)])

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
