"""JupyterLab in a real headless Chromium: the quickstart's live widget draws the graph and the
violation node in the page. Skipped (with the reason) when Chromium, JupyterLab or Playwright is
missing; .ci/run installs them. The screenshot is left in test-artifacts/ for a person to see."""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (Debian package "
                                                "'chromium'; .ci/run installs it)"),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (the test extra)")
    shutil.copy(os.path.join(ROOT, "notebooks", "quickstart.ipynb"), tmp_path)
    port, token = free_port(), "capviz-test"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={tmp_path}", "--ServerApp.open_browser=False",
         "--LabApp.news_url=", "--LabServerApp.announcements=False", "--allow-root"],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "lab.log", "w"), env=env)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=1)
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited: {(tmp_path / 'lab.log').read_text()[-2000:]}")
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("JupyterLab did not start in 60 s")
    yield url, token
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_live_widget_draws_the_graph_and_the_violation_in_the_browser(lab):
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright is not installed (the test extra)")
    url, token = lab
    artifacts = os.path.join(ROOT, "test-artifacts")
    os.makedirs(artifacts, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            drive(page, url, token, artifacts)
        except Exception:
            page.screenshot(path=os.path.join(artifacts, "browser-failure.png"))
            raise
        finally:
            browser.close()


def drive(page, url, token, artifacts):
    sync_api = pytest.importorskip("playwright.sync_api")
    page.goto(f"{url}/lab/tree/quickstart.ipynb?token={token}")
    page.wait_for_selector(".jp-Notebook", timeout=60_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                           timeout=60_000)
    for _ in range(3):  # a Run All sent while the kernel is still connecting can be dropped
        page.click(".lm-MenuBar-itemLabel:text-is('Run')")
        page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
        try:
            page.wait_for_function(
                "() => [...document.querySelectorAll('.jp-InputPrompt')]"
                ".some(e => /\\[\\d+\\]/.test(e.textContent))", timeout=20_000)
            break
        except sync_api.TimeoutError:
            continue
    widget_svg = ".widget-html-content svg"
    page.wait_for_selector(f"{widget_svg} g.node", timeout=90_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.widget-html-content')]"
        ".some(e => e.textContent.includes('capviz done'))", timeout=90_000)
    nodes = page.locator(f"{widget_svg} g.node")
    violation = page.locator(f"{widget_svg} g.capviz-violation")
    assert nodes.count() >= 8
    assert violation.count() == 1
    stroke = violation.locator("polygon").first.get_attribute("stroke")
    assert stroke == "#dc2626"
    assert "1 violations" in page.locator(".widget-html-content").first.text_content()
    violation.scroll_into_view_if_needed()
    page.screenshot(path=os.path.join(artifacts, "browser-quickstart.png"), full_page=False)
