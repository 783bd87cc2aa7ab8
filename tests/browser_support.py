"""JupyterLab and Notebook 7 driven by a real headless Chromium, deterministically.

The flaky part of driving JupyterLab was its start-up race: when a notebook opens before the
kernel specs have loaded, JupyterLab cannot resolve the notebook's kernel and shows the modal
"Select Kernel" dialog, which covers the page (4 runs in 5 on a busy machine). Nothing here waits
on that race:

* the kernel session for the notebook is created through Jupyter's REST API before the page
  opens; the notebook then attaches to that existing session (JupyterLab looks sessions up by
  path) and never asks for a kernel; the test waits until that kernel reports ``idle``;
* the page is driven through JupyterLab's own application object (``window.jupyterapp``, exposed
  with ``--LabApp.expose_app_in_browser``): the test waits on the notebook's ``sessionContext``
  being ready and runs cells with the ``notebook:run-all-cells`` command, not by clicking menus;
* should any dialog still appear, the failure says which (its title), with a screenshot.

Notebook 7 is built from JupyterLab's components (the same document manager, session context,
commands and dialogs) and exposes the same application object
(``--JupyterNotebookApp.expose_app_in_browser``), so the same steps drive it; only the server
module and the notebook's URL (``/notebooks/<path>``) differ.

Everything is skipped, with the reason, when Chromium, JupyterLab/Notebook or Playwright is
missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ARTIFACTS = os.path.join(ROOT, "test-artifacts")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on this machine (Debian package 'chromium'; "
                             ".ci/run installs it)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab or Notebook 7 server (``app``: ``lab`` or ``notebook``): its URL,
    token and REST helpers."""

    def __init__(self, url: str, token: str, root: str, app: str = "lab") -> None:
        self.url = url
        self.token = token
        self.root = root
        self.app = app

    def api(self, path: str, body: dict | None = None, method: str = "GET") -> dict | list:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method,
            headers={"Authorization": f"token {self.token}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read() or b"null")

    def start_kernel(self, notebook: str) -> str:
        """Create the notebook's kernel session before any page opens; the kernel's id.

        The server reports the kernel ``starting`` until a client connects, so readiness is
        waited on in the page (:func:`open_notebook`), which connects to this session."""
        session = self.api("/api/sessions", {
            "path": notebook, "name": notebook, "type": "notebook",
            "kernel": {"name": "python3"}}, method="POST")
        kernel_id = session["kernel"]["id"]
        listed = [s["kernel"]["id"] for s in self.api("/api/sessions")]
        assert kernel_id in listed, f"session for {notebook} not listed: {listed}"
        return kernel_id

    def notebook_url(self, notebook: str) -> str:
        if self.app == "notebook":  # Notebook 7: one page per notebook
            return f"{self.url}/notebooks/{notebook}?token={self.token}"
        return f"{self.url}/lab/tree/{notebook}?token={self.token}&reset"


# Both front ends expose their JupyterLab application object as window.jupyterapp.
APPS = {
    "lab": ("jupyterlab", "JupyterLab", ["--LabApp.expose_app_in_browser=True",
                                          "--LabApp.news_url=",
                                          "--LabServerApp.announcements=False"]),
    "notebook": ("notebook", "Notebook 7", ["--JupyterNotebookApp.expose_app_in_browser=True"]),
}


@contextlib.contextmanager
def running_lab(root: str, app: str = "lab") -> Iterator[Lab]:
    """Start JupyterLab (``app="lab"``) or Notebook 7 (``app="notebook"``) serving ``root`` on a
    free loopback port; stop it afterwards."""
    module, name, flags = APPS[app]
    pytest.importorskip(module, reason=f"{name} is not installed (the test extra)")
    if app == "notebook":
        import notebook

        if int(notebook.__version__.split(".")[0]) < 7:
            pytest.skip(f"notebook {notebook.__version__} is not Notebook 7")
    port, token = free_port(), "capviz-test"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=os.path.join(root, ".config"),
               JUPYTER_RUNTIME_DIR=os.path.join(root, ".runtime"))
    log_path = os.path.join(root, f"{app}.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, "--no-browser", f"--port={port}",
             "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False",
             *flags, "--allow-root"],
            stdout=subprocess.DEVNULL, stderr=log, env=env)
    lab = Lab(f"http://127.0.0.1:{port}", token, root, app)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                lab.api("/api/status")
                break
            except OSError:
                if proc.poll() is not None:
                    with open(log_path) as f:
                        pytest.fail(f"{name} exited: {f.read()[-2000:]}")
                if time.monotonic() > deadline:
                    pytest.fail(f"{name} did not answer in 120 s")
                time.sleep(0.25)
        yield lab
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def chromium_page(name: str, width: int = 1400, height: int = 1000) -> Iterator[object]:
    """A Playwright page in headless Chromium; on failure a screenshot ``<name>-failure.png``."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright is not installed (the test extra)")
    os.makedirs(ARTIFACTS, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": width, "height": height})
        try:
            yield page
        except BaseException:
            with contextlib.suppress(Exception):
                page.screenshot(path=os.path.join(ARTIFACTS, f"{name}-failure.png"))
            raise
        finally:
            browser.close()


_ATTACHED = """async (path) => {
  const app = window.jupyterapp;
  if (!app) return "no app";
  const panel = app.shell.widgets("main").find(w => w.context && w.context.path === path);
  if (!panel) return "no panel";
  await panel.context.ready;
  await panel.sessionContext.ready;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  if (!kernel) return "no kernel";
  return kernel.status;
}"""

_DIALOG = """() => {
  const d = document.querySelector('.jp-Dialog');
  return d ? (d.querySelector('.jp-Dialog-header') || d).textContent.trim() : null;
}"""


def open_notebook(page: object, lab: Lab, notebook: str, timeout: float = 120.0) -> None:
    """Open ``notebook`` (its kernel already started) and wait until it is attached and idle."""
    page.goto(lab.notebook_url(notebook))
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started !== undefined",
                           timeout=timeout * 1000)
    page.evaluate("() => window.jupyterapp.started")
    page.wait_for_selector(".jp-Notebook", timeout=timeout * 1000)
    deadline = time.monotonic() + timeout
    status = None
    while time.monotonic() < deadline:
        dialog = page.evaluate(_DIALOG)
        if dialog is not None:
            raise AssertionError(f"{lab.app} showed a dialog over the notebook: {dialog!r}")
        status = page.evaluate(_ATTACHED, notebook)
        if status == "idle":
            return
        time.sleep(0.25)
    raise AssertionError(f"{notebook} did not attach to an idle kernel in {timeout:.0f} s "
                         f"(last status {status!r})")


_RUN_ALL = """async (path) => {
  const app = window.jupyterapp;
  const panel = app.shell.widgets("main").find(w => w.context && w.context.path === path);
  app.shell.activateById(panel.id);
  await app.commands.execute("notebook:run-all-cells");
  return panel.content.widgets.filter(c => c.model.type === "code").length;
}"""

_DONE = """(path) => {
  const app = window.jupyterapp;
  const panel = app.shell.widgets("main").find(w => w.context && w.context.path === path);
  const cells = panel.content.widgets.filter(c => c.model.type === "code");
  const ran = cells.every(c => c.model.executionCount !== null && !c.hasClass("jp-mod-running")
                             && c.promptNode.textContent.indexOf("*") < 0);
  return ran && panel.sessionContext.session.kernel.status === "idle";
}"""


def run_all_cells(page: object, notebook: str, timeout: float = 180.0) -> None:
    """Run every cell of the open notebook through JupyterLab's command; wait for all to end."""
    page.evaluate(_RUN_ALL, notebook)
    page.wait_for_function(_DONE, arg=notebook, timeout=timeout * 1000, polling=250)


RED = "rgb(220, 38, 38)"  # the view's colour for a violation or a non-finite mark
SAW_RECORDING = """() => {  // sets window.__sawRecording once a live view says it is recording
  window.__sawRecording = false;
  new MutationObserver(() => {
    if ([...document.querySelectorAll('.capviz-view .cv-status')]
        .some(e => e.textContent.startsWith('capviz recording'))) window.__sawRecording = true;
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""
