"""JupyterLab in a real headless Chromium: the quickstart's live widget draws the graph and the
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
        widget_svg = ".widget-html-content svg"
        page.wait_for_selector(f"{widget_svg} g.node", timeout=60_000)
        page.wait_for_function(
            "() => [...document.querySelectorAll('.widget-html-content')]"
            ".some(e => e.textContent.includes('capviz done'))", timeout=60_000)
        nodes = page.locator(f"{widget_svg} g.node")
        violation = page.locator(f"{widget_svg} g.capviz-violation")
        assert nodes.count() >= 8
        assert violation.count() == 1
        stroke = violation.locator("polygon").first.get_attribute("stroke")
        assert stroke == "#dc2626"
        assert "1 violations" in page.locator(".widget-html-content").first.text_content()
        violation.scroll_into_view_if_needed()
        page.screenshot(path=os.path.join(ARTIFACTS, "browser-quickstart.png"), full_page=False)
