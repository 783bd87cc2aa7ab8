"""JupyterLab in a real headless Chromium: the quickstart's live view draws the graph and the
violation node in the page. Skipped (with the reason) when Chromium, JupyterLab or Playwright is
missing; .ci/run installs them. The screenshot is left in test-artifacts/ for a person to see.

Deterministic by construction (see tests/browser_support.py): the kernel is started and idle
before the page opens, and cells run through JupyterLab's command, never through menus that a
"Select Kernel" dialog could cover."""

import os
import shutil

import pytest
from browser_support import (
    ARTIFACTS,
    ROOT,
    chromium_page,
    needs_chromium,
    open_notebook,
    run_all_cells,
    running_lab,
)

pytestmark = [needs_chromium]


@pytest.fixture
def lab(tmp_path):
    shutil.copy(os.path.join(ROOT, "notebooks", "quickstart.ipynb"), tmp_path)
    with running_lab(str(tmp_path)) as lab:
        yield lab


def test_live_widget_draws_the_graph_and_the_violation_in_the_browser(lab):
    lab.start_kernel("quickstart.ipynb")
    with chromium_page("browser") as page:
        open_notebook(page, lab, "quickstart.ipynb")
        run_all_cells(page, "quickstart.ipynb")
        # the live cell leaves one interactive view behind (the first view is the graph's own
        # display, the last the live cell's final state), drawn by the page's script
        page.wait_for_function(
            "() => document.querySelectorAll('.capviz-view[data-ready]').length >= 2",
            timeout=60_000)
        view = page.locator(".capviz-view").last
        page.wait_for_function(
            "() => { const v = [...document.querySelectorAll('.capviz-view')].pop();"
            " const s = v && v.querySelector('.cv-status');"
            " return s && s.textContent.startsWith('capviz done: '); }", timeout=60_000)
        status = view.locator(".cv-status").text_content()
        assert "1 violations" in status, status
        # x, matmul, tanh, the violation, matmul, y; w1 and w2 are annotations on the matmuls
        assert view.locator("g.cv-node").count() == 6
        drawn_text = view.locator("svg").first.text_content()
        assert "w1" in drawn_text and "w2" in drawn_text, drawn_text
        violation = view.locator("g.cv-node.cv-k4")
        assert violation.count() == 1
        stroke = violation.first.evaluate(
            "e => getComputedStyle(e.querySelector('rect, polygon, path, ellipse')).stroke")
        assert stroke == "rgb(220, 38, 38)"
        assert page.locator(".widget-html-content svg").count() == 0  # no stale widget left
        violation.first.scroll_into_view_if_needed()
        page.screenshot(path=os.path.join(ARTIFACTS, "browser-quickstart.png"), full_page=False)
