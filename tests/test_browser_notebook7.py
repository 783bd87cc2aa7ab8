"""The interactive view and the live view in Notebook 7, driven by a real headless Chromium.

Notebook 7 runs a notebook that captures a small graph of identical blocks written in plain
NumPy, shows ``graph.view()``, and captures again with ``live=True``; the test then drives the
views through the DOM: they render, opening a folded run of blocks and a block shows their ops,
search opens the scopes around a match and focuses it, and the live cell streams and leaves its
final state once. Deterministic as the JupyterLab tests are (tests/browser_support.py): the
kernel session exists and is idle before the page runs anything, cells run through the
application's command, and any dialog fails the test with its title. Skipped, with the reason,
when Chromium, Notebook 7 or Playwright is missing.
"""

import nbformat
import pytest
from browser_support import (
    RED,
    SAW_RECORDING,
    chromium_page,
    needs_chromium,
    open_notebook,
    run_all_cells,
    running_lab,
)

pytestmark = [needs_chromium]

CELLS = [
    "import time\n"
    "import numpy as np\n"
    "import capviz as cv\n"
    "\n"
    "def block(x):\n"
    "    return np.tanh(x * 2.0) + x\n"
    "\n"
    "def model(x):\n"
    "    for _ in range(4):\n"
    "        x = block(x)\n"
    "    return x\n",
    "graph = cv.capture(model, cv.spec((3,), 'float32'))\n"
    "graph.view(budget=8)\n",
    "cap = cv.CaptureDevice()\n"
    "with cap.capture_scope(live=True, on_violation='record') as scope:\n"
    "    h = scope.input('x', (3,), 'float32')\n"
    "    for _ in range(6):\n"
    "        h = block(h)\n"
    "        time.sleep(0.5)  # a slow model: the view streams while it records\n"
    "    np.random.seed(0)\n"
    "    scope.output(h, 'h')\n",
]


@pytest.fixture
def notebook7(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, str(tmp_path / "view.ipynb"))
    with running_lab(str(tmp_path), app="notebook") as server:
        yield server


def click(locator):
    """Click an SVG element wherever the drawing has panned it (a DOM click, no viewport)."""
    locator.locator("rect").first.dispatch_event("click")


def shown(view):
    return {int(e.get_attribute("data-i")) for e in view.locator("g.cv-node").all()}


def not_notebooks_own(stack):
    """Notebook 7.6 itself raises "Cannot read properties of undefined (reading 'schema')" while
    loading its settings, on a notebook holding only ``1+1`` with no capviz involved; an
    error whose top frame is in Notebook's own bundle is not the view's."""
    frames = [line for line in stack.splitlines() if line.strip().startswith("at ")]
    return not frames or "/static/notebook/" not in frames[0]


def test_view_and_live_view_in_notebook7(notebook7):
    notebook7.start_kernel("view.ipynb")
    with chromium_page("browser-notebook7") as page:
        errors = []
        page.on("pageerror", lambda e: errors.append(e.stack or str(e)))
        open_notebook(page, notebook7, "view.ipynb")
        assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
        page.evaluate(SAW_RECORDING)
        run_all_cells(page, "view.ipynb")
        page.wait_for_function(
            "() => document.querySelectorAll('.capviz-view[data-ready]').length === 2",
            timeout=60_000)
        view = page.locator(".jp-CodeCell").nth(1).locator(".capviz-view")
        assert view.count() == 1
        status = view.locator(".cv-status").text_content()
        assert status == "12 ops, 0 violations", status
        # x, block x 4 open (block[0] open, blocks 1-3 closed beside it: the budget of 8 does
        # not fit all four), the output (model is the entry)
        folds = view.locator("g.cv-scope.cv-fold")
        heads = [f.locator("text.cv-name").text_content() for f in folds.all()]
        assert heads == ["\u25be block \u00d7 4"]
        assert shown(view) == {0, 1, 2, 3, 13}
        blocks = [e.get_attribute("data-path") for e in
                  view.locator("g.cv-scope[data-path^='block[']").all()]
        assert blocks == [f"block[{k}]" for k in range(4)]
        click(view.locator('g.cv-scope[data-path="block[2]"]'))
        assert shown(view) == {0, 1, 2, 3, 7, 8, 9, 13}
        labels = [view.locator(f'g.cv-node[data-i="{i}"] text.cv-label').text_content()
                  for i in (7, 8, 9)]
        assert labels == ["multiply 2.0", "tanh", "add"]
        # search: %11 is in block[3], still closed; Enter opens it and focuses the node
        view.locator(".cv-search").fill("%11")
        view.locator(".cv-search").press("Enter")
        focused = view.locator("g.cv-node.cv-focus")
        focused.wait_for(timeout=10_000)
        assert focused.get_attribute("data-i") == "11"
        assert "tanh  (%11, op)" in view.locator(".cv-panel").text_content()
        assert "cv-open" in view.locator(
            'g.cv-scope[data-path="block[3]"]').get_attribute("class").split()
        # the live cell: it streamed, then left its final state once, the violation red
        assert page.evaluate("() => window.__sawRecording"), "no live update was drawn"
        live = page.locator(".jp-CodeCell").nth(2)
        views = live.locator(".capviz-view")
        assert views.count() == 1
        assert live.locator(".jupyter-widgets, .widget-vbox").count() == 0
        final = views.locator(".cv-status").text_content()
        assert final.startswith("capviz done: ") and "1 violations" in final
        bad = views.locator("g.cv-node.cv-k4")
        assert bad.count() == 1
        assert bad.locator("rect").evaluate("e => getComputedStyle(e).stroke") == RED
        assert [e for e in errors if not_notebooks_own(e)] == []
