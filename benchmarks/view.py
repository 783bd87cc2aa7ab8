"""The interactive view in headless Chromium (issue 12). Run: python benchmarks/view.py

For GPT-style graphs of about 1k, 10k and 50k ops (benchmarks/gpt_numpy.py, plain NumPy captured
unchanged, scopes from the call stack), measured in Debian's Chromium through Playwright:

- HTML size of ``graph.to_html()``;
- first paint: the page's first contentful paint, and the moment the view has drawn the graph
  (its ``capviz-drawn`` mark, after the frame that shows it), both from navigation start;
- expand: one click opening a closed scope (the folded rest of the run of blocks, then one
  block), from the click to the next frame;
- the longest main-thread task (PerformanceObserver ``longtask``) over load and expansions.

Baseline, same graph, same browser, runs interleaved: the static SVG page (``graph.to_svg()``
with its default node budget, inside a minimal HTML page), which is what the notebook showed
before; the table gives view/baseline ratios. Medians of 5 rounds. Screenshots of the 12-block
graph as first shown (view-gpt-collapsed.png: its first block open, the other eleven folded),
expanded, and searched are written to test-artifacts/.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gpt_numpy  # noqa: E402

import capviz as cv  # noqa: E402

ROOT = os.path.dirname(HERE)
ARTIFACTS = os.path.join(ROOT, "test-artifacts")
SIZES = {"1k": 13, "10k": 128, "50k": 640}  # blocks: about 78 ops each
ROUNDS = 5
LONGTASKS = """
window.__longest = 0;
new PerformanceObserver(list => {
  for (const e of list.getEntries()) window.__longest = Math.max(window.__longest, e.duration);
}).observe({type: "longtask", buffered: true});
"""
FCP = """() => new Promise(resolve => {  // the entry is posted after the paint: wait for it
  const now = performance.getEntriesByName("first-contentful-paint")[0];
  if (now) return resolve(now.startTime);
  new PerformanceObserver(list => {
    const e = list.getEntriesByName("first-contentful-paint")[0];
    if (e) resolve(e.startTime);
  }).observe({type: "paint", buffered: true});
  setTimeout(() => resolve(null), 5000);
})"""
EXPAND = """async (selector) => {
  const target = document.querySelector(selector);
  if (!target) return null;
  const t0 = performance.now();
  target.querySelector("rect").dispatchEvent(new MouseEvent("click", {bubbles: true}));
  await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  return performance.now() - t0;
}"""


def capture(n_layer):
    params = gpt_numpy.init_params(n_layer)
    return cv.capture(lambda x: gpt_numpy.gpt(x, params),
                      cv.spec((gpt_numpy.T, gpt_numpy.D), "float32"))


def svg_page(graph):
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
            + graph.to_svg().split("?>", 1)[-1] + "</body></html>")


def measure_view(browser, path):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.add_init_script(LONGTASKS)
    page.goto(f"file://{path}")
    page.wait_for_selector(".capviz-view[data-ready]", state="attached", timeout=60_000)
    drawn = page.evaluate("() => performance.getEntriesByName('capviz-drawn')[0].startTime")
    fcp = page.evaluate(FCP)
    fold = page.evaluate(EXPAND, "g.cv-scope.cv-fold:not(.cv-open)")  # the folded rest
    page.evaluate(EXPAND, "g.cv-scope.cv-group:not(.cv-open)")  # 128+ blocks come in groups
    block = page.evaluate(EXPAND, "g.cv-scope:not(.cv-open):not(.cv-fold):not(.cv-group)")
    page.wait_for_timeout(100)
    longest = page.evaluate("() => window.__longest")
    page.close()
    return {"drawn": drawn, "fcp": fcp, "fold": fold, "block": block, "longest": longest}


def measure_svg(browser, path):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.add_init_script(LONGTASKS)
    page.goto(f"file://{path}")
    page.wait_for_load_state("load")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))")
    fcp = page.evaluate(FCP)
    longest = page.evaluate("() => window.__longest")
    page.close()
    return {"fcp": fcp, "longest": longest}


def median(rows, key):
    values = [r[key] for r in rows if r[key] is not None]
    return statistics.median(values) if values else float("nan")


def screenshots(browser, path):
    os.makedirs(ARTIFACTS, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"file://{path}")
    page.wait_for_selector(".capviz-view[data-ready]", state="attached")
    collapsed = os.path.join(ARTIFACTS, "view-gpt-collapsed.png")
    page.screenshot(path=collapsed)
    page.evaluate(EXPAND, "g.cv-scope.cv-fold:not(.cv-open)")
    page.evaluate(EXPAND, 'g.cv-scope[data-path$="transformer_block[3]"]')
    page.evaluate(EXPAND, 'g.cv-scope[data-path$="transformer_block[3]/mha"]')
    page.locator(".cv-fit").click()
    expanded = os.path.join(ARTIFACTS, "view-gpt-expanded.png")
    page.screenshot(path=expanded)
    page.locator(".cv-search").fill("exp")
    page.locator(".cv-search").press("Enter")
    page.locator("g.cv-node.cv-focus").hover()  # its tooltip: shape, dtype, source line
    searched = os.path.join(ARTIFACTS, "view-gpt-search.png")
    page.screenshot(path=searched)
    page.close()
    return collapsed, expanded, searched


def main():
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("benchmarks/view.py needs Chromium (Debian package 'chromium')")
    tmp = tempfile.mkdtemp(prefix="capviz-view-bench-")
    print("view: capviz's interactive HTML view vs the static SVG page, headless Chromium, "
          f"median of {ROUNDS} rounds (interleaved)")
    print(f"{'graph':<7}{'ops':>7}{'view HTML':>11}{'SVG page':>10}{'first paint':>13}"
          f"{'drawn':>8}{'SVG FCP':>9}{'ratio':>7}{'expand fold':>13}{'expand block':>14}"
          f"{'longest task':>14}{'SVG longest':>13}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium,
                                    args=["--no-sandbox", "--disable-gpu"])
        for name, n_layer in SIZES.items():
            graph = capture(n_layer)
            view_path = os.path.join(tmp, f"view-{name}.html")
            svg_path = os.path.join(tmp, f"svg-{name}.html")
            started = time.perf_counter()
            graph.to_html(view_path)
            html_s = time.perf_counter() - started
            with open(svg_path, "w", encoding="utf-8") as f:
                f.write(svg_page(graph))
            views, svgs = [], []
            for _ in range(ROUNDS):
                views.append(measure_view(browser, view_path))
                svgs.append(measure_svg(browser, svg_path))
            size = os.path.getsize(view_path)
            svg_size = os.path.getsize(svg_path)
            fcp, drawn, svg_fcp = median(views, "fcp"), median(views, "drawn"), median(svgs, "fcp")
            print(f"{name:<7}{len(graph.ops):>7}{size / 1e6:>9.2f}MB{svg_size / 1e6:>8.2f}MB"
                  f"{fcp:>11.0f}ms{drawn:>6.0f}ms{svg_fcp:>7.0f}ms{drawn / svg_fcp:>6.2f}x"
                  f"{median(views, 'fold'):>11.0f}ms{median(views, 'block'):>12.0f}ms"
                  f"{median(views, 'longest'):>12.0f}ms{median(svgs, 'longest'):>11.0f}ms"
                  f"   (to_html {html_s:.2f} s)")
        print("goals at 50k ops: <= 3 MB HTML, first paint <= 1000 ms, expand <= 200 ms, "
              "no main-thread task over 100 ms")
        print("ratio: the view drawn vs the static SVG page's first contentful paint")
        small = os.path.join(tmp, "view-1k.html")
        for shot in screenshots(browser, small):
            print("screenshot:", shot)
        browser.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
