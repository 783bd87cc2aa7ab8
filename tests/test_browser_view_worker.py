"""The view's layout Web Worker where a page may not start one (issue 23): under a
Content-Security-Policy that forbids workers, the same layouts run on the main thread and the
drawing is the same as with the worker."""

import importlib.util
import os

from browser_support import ROOT, chromium_page, needs_chromium

import capviz as cv
from capviz.render.view import fragment

pytestmark = [needs_chromium]


def four_blocks():
    spec = importlib.util.spec_from_file_location(
        "gpt_numpy", os.path.join(ROOT, "benchmarks", "gpt_numpy.py"))
    g = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(g)
    params = g.init_params(4)
    return cv.capture(lambda x: g.gpt(x, params), cv.spec((g.T, g.D), "float32"))


EXPANDED = """async () => {
  const view = document.querySelector('.capviz-view').capvizView;
  document.querySelector('.cv-expand-all').click();
  await view.idle();
  const d = view.drawing();
  return {nodes: d.nodes, edges: d.edges.map(e => [e.edge, e.points]), layouts: d.layouts};
}"""


def page_text(graph, policy):
    meta = f'<meta http-equiv="Content-Security-Policy" content="{policy}">' if policy else ""
    body = fragment(graph, page=True, canvas_at=0, worker_at=0)
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8">{meta}</head>'
            f"<body>{body}</body></html>")


def test_without_a_worker_the_layout_runs_here_and_draws_the_same(tmp_path):
    graph = four_blocks()
    drawn = {}
    with chromium_page("browser-view-worker") as page:
        for name, policy in (("worker", None), ("no-worker", "worker-src 'none'")):
            path = tmp_path / f"{name}.html"
            path.write_text(page_text(graph, policy), encoding="utf-8")
            errors = []
            page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            page.goto(path.as_uri())
            page.wait_for_selector(".capviz-view[data-ready]", state="attached")
            drawn[name] = page.evaluate(EXPANDED)
            assert errors == []
    assert drawn["worker"]["layouts"]["worker"] > 0
    assert drawn["no-worker"]["layouts"]["worker"] == 0  # refused: laid out on this thread
    assert drawn["no-worker"]["layouts"]["main"] > drawn["worker"]["layouts"]["main"]
    assert drawn["no-worker"]["nodes"] == drawn["worker"]["nodes"]
    assert drawn["no-worker"]["edges"] == drawn["worker"]["edges"]
