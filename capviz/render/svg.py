"""Run a Graphviz renderer to turn DOT into SVG: the only module here that starts a process.

Renderer order: the one configured (:func:`configure` or ``renderer=``), else the system ``dot``
on ``PATH``, else the ``graphviz-pure`` binary that ``pip install capviz`` brings (a Rust port of
Graphviz 16.1 shipped as one static executable per platform wheel). Every run has a timeout; a
layout that times out is retried once with ``-Gnslimit=2 -Gnslimit1=2``; failures raise
:class:`capviz.RenderError` with the renderer's stderr and a hint.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from typing import Any

from capviz.core.errors import RenderError
from capviz.core.ir import Graph
from capviz.render.rules import RULES

DEFAULT_TIMEOUT = 60.0
DEFAULT_BUDGET = RULES.budget  # boxes drawn at first, as in the view (override: collapse=)
_configured: str | None = None


def configure(renderer: str | None = None) -> None:
    """Use ``renderer`` (a path to a ``dot``-compatible executable) for every render;
    ``None`` restores the automatic choice."""
    global _configured
    _configured = renderer


def _pure_binary() -> str | None:
    found = shutil.which("graphviz-pure")
    if found:
        return found
    for scheme in (None, "posix_user", "nt_user"):
        try:
            scripts = sysconfig.get_path("scripts", scheme) if scheme else \
                sysconfig.get_path("scripts")
        except KeyError:
            continue
        for name in ("graphviz-pure", "graphviz-pure.exe"):
            path = os.path.join(scripts, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


def find_renderer(renderer: str | None = None) -> str:
    """The renderer executable to use (see the module docstring for the order)."""
    chosen = renderer or _configured
    if chosen:
        path = shutil.which(chosen) or (chosen if os.path.isfile(chosen) else None)
        if path is None:
            raise RenderError(f"the configured renderer {chosen!r} does not exist")
        return path
    found = shutil.which("dot") or _pure_binary()
    if found is None:
        raise RenderError("no Graphviz renderer found: neither 'dot' on PATH nor the "
                          "graphviz-pure package; reinstall capviz (pip install capviz) or "
                          "install Graphviz")
    return found


def render_dot(source: str, renderer: str | None = None, timeout: float = DEFAULT_TIMEOUT,
               fmt: str = "svg") -> str:
    """Render DOT ``source`` and return the output text."""
    exe = find_renderer(renderer)
    attempts = [[exe, f"-T{fmt}"], [exe, f"-T{fmt}", "-Gnslimit=2", "-Gnslimit1=2"]]
    for i, cmd in enumerate(attempts):
        try:
            done = subprocess.run(cmd, input=source.encode("utf-8"), capture_output=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            if i + 1 < len(attempts):
                continue
            raise RenderError(f"{os.path.basename(exe)} did not finish in {timeout:.0f} s, even "
                              "with -Gnslimit=2; hint: collapse scopes (collapse=N) or render "
                              "a smaller part of the graph") from None
        except OSError as err:
            raise RenderError(f"could not run the renderer {exe}: {err}") from None
        if done.returncode != 0:
            stderr = done.stderr.decode("utf-8", "replace").strip()
            raise RenderError(f"{os.path.basename(exe)} failed (exit {done.returncode}): "
                              f"{stderr or 'no message'}; hint: check the renderer with "
                              f"'{exe} -V', or choose another with capviz.render.svg.configure")
        return done.stdout.decode("utf-8")
    raise AssertionError("unreachable")


def to_svg(graph: Graph, path: str | None = None, renderer: str | None = None,
           timeout: float = DEFAULT_TIMEOUT, collapse: Any = DEFAULT_BUDGET,
           budget: int | None = None, **options: Any) -> str:
    """Render ``graph`` to SVG text; also write it to ``path`` when given.

    ``collapse`` defaults to a node budget, so large graphs come back readable in seconds;
    pass ``collapse=None`` to draw every node, or a list of scope paths to draw those closed
    (a path the graph does not have is a ``ValueError`` naming its top-level scopes).
    ``budget=N`` is ``collapse=N``, the word ``graph.view(budget=N)`` uses: the same boxes
    open in both. Other options go to :func:`capviz.render.dot.to_dot`.
    """
    if budget is not None:
        collapse = budget
    from capviz.render.dot import to_dot

    svg = render_dot(to_dot(graph, collapse=collapse, **options).source, renderer, timeout)
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(svg)
    return svg
