"""Rendering cost (issues 12 and 14). Run: python benchmarks/render.py

Every figure is a ratio against a baseline measured in the same run, both sides drawing the same
number of things, runs interleaved, medians of several rounds:

- "every node": ``to_svg(collapse=None)`` (each op drawn; capviz folds constants into
  annotations and sets high-degree nodes aside with stubs) vs the same graph as plain DOT (one
  node per graph node, constants included, one edge per operand, no clusters) through the same
  renderer. Cases: a 1,000-op chain reading one shared ndarray, an unrolled RNN reading W, U and
  b at every step, and stacked transformer blocks (100, 1,000, 5,000 ops).
- "overview": ``to_svg()`` with its default budget (``capviz.render.rules.RULES.budget``, the
  view's too: whole levels of scopes opened top-down, identical blocks folded, flat code
  grouped) vs plain DOT of the graph's first that-many nodes: the same number of boxes, so the
  ratio is what deciding the overview of the whole graph costs on top.
- DOT building for 2,000 and 4,000 single-op name scopes (linear: the ratio should be ~2).
- capture time with ``live=True`` vs without, in a real kernel (nbclient), for a 2,000-op chain.

A baseline that does not finish within BASELINE_TIMEOUT seconds is reported as that bound, so
the ratio shown is an upper bound of the true one (never flattering).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
from _common import header, row

import capviz as cv
from capviz.core.ir import Node
from capviz.models import transformer_block, transformer_weights
from capviz.render.svg import DEFAULT_BUDGET, _pure_binary

OPS_PER_BLOCK = 64  # transformer_block with d=8, heads=2
ROUNDS = 3
BASELINE_TIMEOUT = 30.0
RENDERER = shutil.which("dot") or _pure_binary()
RENDERER_NAME = "system dot" if shutil.which("dot") else "graphviz-pure"


def transformer(n_ops):
    params = transformer_weights(d=8, heads=2)

    def f(x):
        for b in range(max(1, round(n_ops / OPS_PER_BLOCK))):
            with cv.name_scope(f"layer{b}"):
                x = transformer_block(x, params)
        return x

    return cv.capture(f, cv.spec((4, 8)))


def shared_chain(n=1000):
    mask = np.full((4,), 0.5, np.float32)

    def f(x):
        for _ in range(n):
            x = x * mask
        return x

    return cv.capture(f, cv.spec((4,)))


def rnn(steps=120):
    with cv.CaptureDevice().capture_scope() as scope:
        xs = scope.input("xs", (steps, 1, 8))
        w, u, b = scope.input("W", (8, 8)), scope.input("U", (8, 8)), scope.input("b", (1, 8))
        h = np.zeros((1, 8), np.float32)
        for t in range(steps):
            h = np.tanh(xs[t] @ w + h @ u + b)
        scope.output(h, "h")
    return scope.graph


def flat(n_ops):
    def f(x):
        for _ in range(n_ops // 2):
            x = x * 1.0001
            x = x + 0.5
        return x

    return cv.capture(f, cv.spec((4,)))


def plain_dot(graph, limit=None):
    """The baseline's DOT: every node (constants too) and one edge per operand, no clusters."""
    nodes = graph.nodes if limit is None else graph.nodes[:limit]
    lines = ["digraph g {", "node [shape=box fontname=Helvetica fontsize=12]"]
    for n in nodes:
        lines.append(f'n{n.index} [label="{n.op or n.kind}"]')
        for a in n.args:
            if isinstance(a, Node) and (limit is None or a.index < limit):
                lines.append(f"n{a.index} -> n{n.index}")
    lines.append("}")
    return "\n".join(lines)


def run_renderer(source):
    """Seconds to render ``source`` with the baseline's renderer; None when it timed out."""
    start = time.perf_counter()
    try:
        subprocess.run([RENDERER, "-Tsvg"], input=source.encode(), capture_output=True,
                       timeout=BASELINE_TIMEOUT, check=True)
    except subprocess.TimeoutExpired:
        return None
    return time.perf_counter() - start


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def compare(capviz_fn, baseline_source):
    """Median seconds of capviz and of the baseline, rounds interleaved; a baseline that timed
    out once is not repeated (reported as the bound, flagged)."""
    ours, theirs, bounded = [], [], False
    for _ in range(ROUNDS):
        ours.append(timed(capviz_fn))
        if not bounded:
            t = run_renderer(baseline_source)
            if t is None:
                bounded = True
                theirs = [BASELINE_TIMEOUT]
            else:
                theirs.append(t)
    return statistics.median(ours), statistics.median(theirs), bounded


def show(label, ours, theirs, bounded, baseline, goal=""):
    base = f"{'>' if bounded else ''}{theirs:.2f} {baseline}"
    row(label, f"{ours:.3f}", base, ours / theirs, goal)


def render_rows() -> None:
    every = f"plain DOT, {RENDERER_NAME}"
    header(f"every node drawn: to_svg(collapse=None) (s) vs the graph as {every} (s)")
    cases = [("1,000-op chain, one shared ndarray", shared_chain(), ""),
             ("unrolled RNN reading W, U, b", rnn(), "goal < 1 s")]
    cases += [(f"transformer blocks, {n} ops", transformer(n), "") for n in (100, 1000, 5000)]
    for label, g, goal in cases:
        ours, theirs, bounded = compare(lambda g=g: g.to_svg(collapse=None), plain_dot(g))
        show(f"{label} ({len(g.ops)} ops)", ours, theirs, bounded, "plain", goal)
    budget = DEFAULT_BUDGET
    header(f"overview: to_svg() with the default budget (s) vs the first {budget} nodes as "
           f"{every}")
    cases = [("1,000-op chain, one shared ndarray", shared_chain(), "goal <= 0.5 s"),
             ("unrolled RNN reading W, U, b", rnn(), "goal < 1 s"),
             ("transformer blocks, 5,000 ops", transformer(5000), ""),
             ("flat code, 100,000 ops", flat(100_000), "goal <= 3 s")]
    for label, g, goal in cases:
        ours, theirs, bounded = compare(lambda g=g: g.to_svg(), plain_dot(g, budget))
        show(f"{label} ({len(g.ops)} ops)", ours, theirs, bounded, f"{budget} plain", goal)
    header("DOT building, one name scope per layer (s): 4,000 layers vs 2,000 layers")
    graphs = {n: _layers(n) for n in (2000, 4000)}
    for collapse in (None, budget):
        small, large = [], []
        for _ in range(ROUNDS):
            small.append(timed(lambda c=collapse: graphs[2000].to_dot(collapse=c)))
            large.append(timed(lambda c=collapse: graphs[4000].to_dot(collapse=c)))
        row(f"4,000 layers, collapse={collapse}", f"{statistics.median(large):.3f}",
            f"2,000 layers {statistics.median(small):.3f}",
            statistics.median(large) / statistics.median(small), "linear: ~2x")


def _layers(n):
    def f(x):
        for b in range(n):
            with cv.name_scope(f"layer{b}"):
                x = np.tanh(x) * 1.5
        return x

    return cv.capture(f, cv.spec((4,)))


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
