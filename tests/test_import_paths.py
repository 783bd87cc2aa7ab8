"""capviz imported through a path that is not normal (``sys.path.insert(0, "..")``, as notebooks
beside a checkout do): its own code is still told apart from the user's."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAM = textwrap.dedent("""
    import sys
    sys.path.insert(0, {path!r})
    import numpy as np
    import capviz as cv
    assert ".." in cv.__file__, cv.__file__

    def layer_norm(x):
        mu = x.mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)

    graph = cv.capture(layer_norm, cv.spec((4, 8), "float32"))
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    assert graph.replay({{"x": x}})["out"].tobytes() == layer_norm(x).tobytes()
    print("exact")
""")


def test_a_capture_with_capviz_imported_through_dot_dot_replays_exactly():
    # before: capviz's own np.ones (a dtype proxy) was taken for the user's line, hooked, and
    # the capture ended in a RecursionError (benchmarks/view.py's capture of GPT-2)
    path = os.path.join(ROOT, "tests", "..")
    done = subprocess.run([sys.executable, "-c", PROGRAM.format(path=path)], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "exact"
