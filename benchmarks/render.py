"""Rendering cost (issue: rendering). Run: python benchmarks/render.py

- DOT build and SVG render for about 100, 1,000 and 5,000-op graphs (stacked transformer blocks
  from capviz.models, each in a name scope: branchy graphs, like real models),
  SVG through capviz's renderer choice with its default node budget (auto-collapse), and the raw
  graph through the system ``dot`` as the same-run baseline when it is installed (else through
  the bundled graphviz-pure, named as such);
- capture time with ``live=True`` vs without, in a real kernel (nbclient), for a 2,000-op chain.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

from _common import best, header, row

import capviz as cv
from capviz.models import transformer_block, transformer_weights
from capviz.render.svg import _pure_binary, render_dot

OPS_PER_BLOCK = 64  # transformer_block with d=8, heads=2


def model(n_ops):
    params = transformer_weights(d=8, heads=2)

    def f(x):
        for b in range(max(1, round(n_ops / OPS_PER_BLOCK))):
            with cv.name_scope(f"layer{b}"):
                x = transformer_block(x, params)
        return x

    return f


def once(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def render_rows() -> None:
    system_dot = shutil.which("dot")
    baseline_name = "system dot" if system_dot else "graphviz-pure"
    baseline_exe = system_dot or _pure_binary()
    header(f"DOT and SVG (baseline: raw graph through {baseline_name})")
    for n in (100, 1000, 5000):
        g = cv.capture(model(n), cv.spec((4, 8)))
        t_dot = best(lambda g=g: g.to_dot(), repeat=3)
        t_svg = once(lambda g=g: g.to_svg())
        raw = g.to_dot(collapse=None).source
        t_raw = once(lambda raw=raw: subprocess.run([baseline_exe, "-Tsvg"], input=raw.encode(),
                                                    capture_output=True, timeout=600))
        row(f"{len(g.ops)} ops: build DOT (s)", f"{t_dot:.3f}", "-", 0.0)
        goal = {1000: "goal <= 0.5 s", 5000: "goal <= 3 s"}.get(n, "")
        row(f"{len(g.ops)} ops: to_svg, default budget (s)", f"{t_svg:.2f}",
            f"raw {baseline_name} {t_raw:.2f}", t_svg / t_raw, goal)
    big = cv.capture(model(1000), cv.spec((4, 8)))
    t_full = once(lambda: render_dot(big.to_dot(collapse=None).source))
    row(f"{len(big.ops)} ops: to_svg, every node drawn (s)", f"{t_full:.2f}", "-", 0.0,
        "goal <= 0.5 s")


SETUP_CELL = """
import time, numpy as np, capviz as cv
def chain(x, n, work):
    for i in range(n // 2):
        with cv.name_scope(f"block{i // 50}"):
            x = np.tanh(x) * 1.5
        if work:
            time.sleep(work)  # the user's own Python work between ops
    return x
times = {True: [], False: []}
renders = []
"""

# One capture per cell, as a user runs it: the final picture is published when the cell ends.
TIMED_CELL = """
t = time.perf_counter()
with cv.CaptureDevice().capture_scope(live={live}) as s:
    s.output(chain(s.input("x", (4,)), {n}, {work}))
times[{live}].append(time.perf_counter() - t)
if s.view is not None:
    renders.append(s.view.renders)
"""


def live_row() -> None:
    try:
        import nbformat
        from nbclient import NotebookClient
    except ImportError:
        print("live view: skipped (nbclient is not installed: pip install 'capviz[test]')")
        return
    header("live view in a kernel (best of 3 captures, one per cell)")
    for n, work, label in ((2_000, 0, "2,000 ops"), (50_000, 0, "50,000 ops"),
                           (2_000, 0.002, "2,000 ops + 2 ms user work each")):
        nb = nbformat.v4.new_notebook()
        nb.cells.append(nbformat.v4.new_code_cell(SETUP_CELL))
        for _ in range(3):
            for live in (False, True):
                nb.cells.append(nbformat.v4.new_code_cell(
                    TIMED_CELL.format(live=live, n=n, work=work)))
        nb.cells.append(nbformat.v4.new_code_cell("print('RESULT', min(times[False]), "
                                                  "min(times[True]), max(renders))"))
        NotebookClient(nb, timeout=600, kernel_name="python3").execute()
        text = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
        plain, live, count = text.split("RESULT")[1].split()
        plain, live = float(plain), float(live)
        row(f"{label}, live=True (s; {count} renders during)", f"{live:.3f}",
            f"live=False {plain:.3f}", live / plain, "goal <= 1.25x")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    render_rows()
    live_row()
    sys.exit(0)
