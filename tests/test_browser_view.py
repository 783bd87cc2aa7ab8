"""The interactive view in a real headless Chromium: a 12-block GPT written in plain NumPy (no
name scopes; benchmarks/gpt_numpy.py) captured unchanged, then driven through the DOM:

- a standalone ``graph.to_html`` page opened from disk (fast; most assertions);
- JupyterLab running a notebook that displays the graph (the essentials);
- the nbconvert HTML export of that notebook opened from disk with no kernel.

Each asserts: the scope tree matches the call stack, opening a block shows its ops, searching for
a source line focuses its node, hovering shows the shape, a violation is red and listed, and after
a replay with a NaN injected the path from the input to the first NaN is highlighted. Skipped,
with the reason, when Chromium, Playwright or JupyterLab is missing."""

import importlib.util
import math
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
from browser_support import (
    ARTIFACTS,
    RED,
    ROOT,
    SAW_RECORDING,
    chromium_page,
    needs_chromium,
    open_notebook,
    run_all_cells,
    running_lab,
)

import capviz as cv

pytestmark = [needs_chromium]
GPT_FILE = os.path.join(ROOT, "benchmarks", "gpt_numpy.py")
BLOCK = "gpt/transformer_block[3]"


def gpt_module():
    spec = importlib.util.spec_from_file_location("gpt_numpy", GPT_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def violation_graph(g):
    params = g.init_params(12)
    cap = cv.CaptureDevice()
    with cap.capture_scope(on_violation="record") as scope:
        x = scope.input("x", (g.T, g.D), "float32")
        y = g.gpt(x, params)
        np.random.seed(0)
        scope.output(y, "logits")
    return scope.graph


def nan_graph(g):
    params = g.init_params(12)
    graph = cv.capture(lambda x: g.gpt(x, params), cv.spec((g.T, g.D), "float32"))
    x = np.ones((g.T, g.D), np.float32)
    x[0, 0] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(cv.NonFiniteError):
            graph.replay({"x": x}, check_finite=True)
    return graph


def line_of(text):
    with open(GPT_FILE) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def ancestors(graph, index):
    seen, stack = {index}, [index]
    while stack:
        for _, a in graph.nodes[stack.pop()].operands:
            if a.index not in seen:
                seen.add(a.index)
                stack.append(a.index)
    return seen


def click(locator):
    """Click an SVG element wherever the drawing has panned it (a DOM click, no viewport)."""
    locator.locator("rect").first.dispatch_event("click")


def ids(locator):
    return {int(e.get_attribute("data-i")) for e in locator.all()}


def check_scopes_and_blocks(page, view, graph):
    assert view.locator('g.cv-scope[data-path="gpt"]').count() == 1
    # the 12 identical blocks are one fold; the budget opens its first block, the other
    # eleven stay one box until clicked (the static SVG shows the same: tests/render)
    folds = view.locator("g.cv-scope.cv-fold")
    heads = [f.locator("text.cv-name").text_content() for f in folds.all()]
    assert heads == ["\u25be transformer_block \u00d7 12"]
    first = view.locator('g.cv-scope[data-path="gpt/transformer_block[0]"]')
    assert "cv-open" in first.get_attribute("class").split()
    # the eleven others are closed boxes beside the first, siblings in the fold
    for k in range(1, 12):
        other = view.locator(f'g.cv-scope[data-path="gpt/transformer_block[{k}]"]')
        assert "cv-open" not in other.get_attribute("class").split()
    paths = [e.get_attribute("data-path") for e in
             view.locator("g.cv-scope[data-path^='gpt/transformer_block[']").all()]
    blocks = [p for p in paths if re.fullmatch(r"gpt/transformer_block\[\d+\]", p)]
    assert blocks == [f"gpt/transformer_block[{k}]" for k in range(12)]
    click(view.locator(f'g.cv-scope[data-path="{BLOCK}"]'))
    children = {e.get_attribute("data-path") for e in
                view.locator(f"g.cv-scope[data-path^='{BLOCK}/']").all()}
    assert children == {f"{BLOCK}/{name}" for name in ("layer_norm[0]", "mha", "layer_norm[1]",
                                                        "mlp")}
    assert children == {"/".join(n.scope.split("/")[:3]) for n in graph.nodes
                        if n.scope.startswith(BLOCK + "/")}
    own = {n.index for n in graph.nodes if n.scope == BLOCK}
    assert own and own <= ids(view.locator("g.cv-node"))
    labels = {view.locator(f'g.cv-node[data-i="{i}"] text.cv-label').text_content() for i in own}
    assert labels == {"add"}


def check_search_and_hover(page, view, graph, query, line):
    view.locator(".cv-search").fill(query)
    view.locator(".cv-search").press("Enter")
    focused = view.locator("g.cv-node.cv-focus")
    focused.wait_for(timeout=10_000)
    index = int(focused.get_attribute("data-i"))
    node = graph.nodes[index]
    assert node.source[1] == line and node.op in ("max", "subtract", "exp")
    assert f"%{index}" in view.locator(".cv-panel").text_content()
    focused.hover()
    tip = view.locator(".cv-tip")
    tip.wait_for(state="visible", timeout=10_000)
    assert f"shape ({','.join(map(str, node.shape))})  dtype float32" in tip.text_content()


def check_violation(page, view, graph):
    (violation,) = graph.violations
    bad = view.locator("g.cv-node.cv-k4")
    assert ids(bad) == {violation.order}
    stroke = bad.locator("rect").evaluate("e => getComputedStyle(e).stroke")
    assert stroke == RED
    item = view.locator("li.cv-problem")
    assert item.count() == 1 and "error: seed (np.random.seed(0))" in item.text_content()
    item.click()
    assert ids(view.locator("g.cv-node.cv-focus")) == {violation.order}


def check_first_nan(page, view, graph):
    first = graph.marks["nonfinite"]
    # the first NaN is in the first block, open at first; closed, its scope is on the path
    gpt = view.locator('g.cv-scope[data-path="gpt"]')
    gpt.locator("rect.cv-head").dispatch_event("click")
    assert "cv-open" not in gpt.get_attribute("class").split()
    assert ids(view.locator("g.cv-node.cv-nanpath")) == {graph.node("x").index}
    assert "cv-nanpath" in gpt.get_attribute("class").split()  # a closed scope on the path
    view.locator("li.cv-first-nan").click()
    assert ids(view.locator("g.cv-node.cv-nonfinite")) == {first}
    marked = view.locator("g.cv-node.cv-nonfinite rect").evaluate(
        "e => getComputedStyle(e).stroke")
    assert marked == RED
    path = ids(view.locator("g.cv-node.cv-nanpath"))
    assert first in path and graph.node("x").index in path
    assert path <= ancestors(graph, first)
    assert view.locator("path.cv-edge.cv-nanpath").count() >= 1


def check_value_panel(page, view, graph, values):
    """After ``check_first_nan`` selected the first NaN: its inputs, outputs and value."""
    first = graph.marks["nonfinite"]
    panel = view.locator(".cv-panel")
    assert panel.get_attribute("data-i") == str(first)
    inputs = ids(panel.locator("li"))
    assert {a.index for _, a in graph.nodes[first].operands} <= inputs
    value = np.asarray(values[first])
    text = panel.locator(".cv-value").text_content()
    assert f"NaN {int(np.isnan(value).sum())}  Inf 0" in text
    assert f"shape float32[{','.join(map(str, value.shape))}]" in text
    assert panel.locator("svg.cv-hist rect").count() == 16


def check_all(page, views, graphs, query, line):
    check_scopes_and_blocks(page, views[0], graphs[0])
    check_search_and_hover(page, views[0], graphs[0], query, line)
    check_violation(page, views[0], graphs[0])
    check_first_nan(page, views[1], graphs[1])


def test_standalone_page_from_disk(tmp_path):
    g = gpt_module()
    graphs = [violation_graph(g), nan_graph(g)]
    graphs[0].to_html(str(tmp_path / "view0.html"))
    x = np.ones((g.T, g.D), np.float32)
    x[0, 0] = np.nan
    ex = graphs[1].executor({"x": x})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ex.run()
    graphs[1].to_html(str(tmp_path / "view1.html"), values=ex.values)
    line = line_of("np.exp(")
    with chromium_page("browser-view-page") as page:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((tmp_path / "view0.html").as_uri())
        page.wait_for_selector(".capviz-view[data-ready]", state="attached")
        view = page.locator(".capviz-view")
        check_scopes_and_blocks(page, view, graphs[0])
        check_search_and_hover(page, view, graphs[0], f"gpt_numpy.py:{line}", line)
        check_violation(page, view, graphs[0])
        page.goto((tmp_path / "view1.html").as_uri())
        page.wait_for_selector(".capviz-view[data-ready]", state="attached")
        check_first_nan(page, page.locator(".capviz-view"), graphs[1])
        check_value_panel(page, page.locator(".capviz-view"), graphs[1], ex.values)
        assert errors == []


NOTEBOOK_CELLS = [
    "{model}\n",
    "import capviz as cv\n"
    "params = init_params(12)\n"
    "cap = cv.CaptureDevice()\n"
    "with cap.capture_scope(on_violation='record') as scope:\n"
    "    x = scope.input('x', (T, D), 'float32')\n"
    "    y = gpt(x, params)\n"
    "    np.random.seed(0)\n"
    "    scope.output(y, 'logits')\n"
    "graph = scope.graph\n"
    "graph\n",
    "import warnings\n"
    "clean = cv.capture(lambda x: gpt(x, params), cv.spec((T, D), 'float32'))\n"
    "x = np.ones((T, D), np.float32)\n"
    "x[0, 0] = np.nan\n"
    "with warnings.catch_warnings():\n"
    "    warnings.simplefilter('ignore', RuntimeWarning)\n"
    "    try:\n"
    "        clean.replay({'x': x}, check_finite=True)\n"
    "    except cv.NonFiniteError as err:\n"
    "        print(type(err).__name__)\n"
    "clean.view()\n",
    "import time\n"
    "watched = cv.CaptureDevice()\n"
    "with watched.capture_scope(live=True, on_violation='record') as live_scope:\n"
    "    h = live_scope.input('x', (T, D), 'float32')\n"
    "    for p in params['blocks']:\n"
    "        h = transformer_block(h, p)\n"
    "        time.sleep(0.5)  # a slow model: the view streams while it records\n"
    "    np.random.seed(0)\n"
    "    live_scope.output(h, 'h')\n",
]


def check_live_final(page, cell):
    """The live cell leaves its final state once: one view, no widget, the violation red."""
    views = cell.locator(".capviz-view")
    assert views.count() == 1
    assert cell.locator(".jupyter-widgets, .widget-vbox").count() == 0
    status = views.locator(".cv-status").text_content()
    assert status.startswith("capviz done: ") and "1 violations" in status
    bad = views.locator("g.cv-node.cv-k4")
    assert bad.count() == 1
    assert bad.locator("rect").evaluate("e => getComputedStyle(e).stroke") == RED


def write_notebook(path):
    import nbformat

    with open(GPT_FILE) as f:
        model = f.read()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c.format(model=model) if "{model}" in c else c)
                for c in NOTEBOOK_CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, str(path))


def notebook_graphs():
    """The notebook's two graphs, captured here the same way (same program, same nodes)."""
    g = gpt_module()
    return [violation_graph(g), nan_graph(g)]


def test_notebook_in_jupyterlab(tmp_path):
    write_notebook(tmp_path / "view.ipynb")
    graphs = notebook_graphs()
    with running_lab(str(tmp_path)) as lab:
        lab.start_kernel("view.ipynb")
        with chromium_page("browser-view-lab") as page:
            open_notebook(page, lab, "view.ipynb")
            page.evaluate(SAW_RECORDING)
            run_all_cells(page, "view.ipynb")
            page.wait_for_function(
                "() => document.querySelectorAll('.capviz-view[data-ready]').length === 3",
                timeout=60_000)
            views = [page.locator(".capviz-view").nth(k) for k in range(2)]
            check_scopes_and_blocks(page, views[0], graphs[0])
            check_violation(page, views[0], graphs[0])
            check_first_nan(page, views[1], graphs[1])
            assert page.evaluate("() => window.__sawRecording"), "no live update was drawn"
            check_live_final(page, page.locator(".jp-CodeCell").nth(3))


def test_nbconvert_export_from_disk_with_no_kernel(tmp_path):
    pytest.importorskip("nbconvert", reason="nbconvert is not installed (comes with jupyterlab)")
    write_notebook(tmp_path / "view.ipynb")
    subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", "--execute",
                    str(tmp_path / "view.ipynb")], check=True, capture_output=True, timeout=600)
    graphs = notebook_graphs()
    with chromium_page("browser-view-export") as page:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((tmp_path / "view.html").as_uri())
        page.wait_for_function(
            "() => document.querySelectorAll('.capviz-view[data-ready]').length === 3")
        views = [page.locator(".capviz-view").nth(k) for k in range(2)]
        check_all(page, views, graphs, "np.exp(x - x.max", line_of("np.exp("))
        check_live_final(page, page.locator(".jp-Cell").nth(3))
        assert errors == []


def prefix(graph, count):
    """The graph as the live view saw it after ``count`` nodes."""
    from capviz.render.live import snapshot

    part = snapshot(graph)
    part.nodes = graph.nodes[:count]
    part.violation_records = [v for v in graph.violation_records if v.order < count]
    part.complete = False
    return part


INSERT = """(html) => {
  const old = document.querySelector('.capviz-view');
  const fresh = document.createRange().createContextualFragment(html);  // its script runs
  if (old) old.replaceWith(fresh); else document.body.appendChild(fresh);
}"""

POSITIONS = """() => Object.fromEntries([...document.querySelectorAll('g.cv-node')].map(g => {
  const r = g.querySelector('rect');
  return [g.getAttribute('data-i'), [+r.getAttribute('x'), +r.getAttribute('y')]];
}))"""

IN_SIGHT = """(i) => {
  const r = document.querySelector(`g.cv-node[data-i="${i}"] rect`).getBoundingClientRect();
  const c = document.querySelector('.cv-canvas').getBoundingClientRect();
  return r.top >= c.top && r.bottom <= c.bottom && r.left >= c.left && r.right <= c.right;
}"""


def test_live_updates_keep_drawn_nodes_in_place_and_follow_the_newest(tmp_path):
    from capviz.render.view import fragment

    g = gpt_module()
    graph = violation_graph(g)
    sizes = [120, 300, len(graph.nodes)]
    with chromium_page("browser-view-live") as page:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.set_content("<!DOCTYPE html><html><body></body></html>")
        before = None
        for count in sizes:
            snap = prefix(graph, count)
            page.evaluate(INSERT, fragment(snap, title="capviz recording", live=True,
                                           key="live-test"))
            page.wait_for_selector(".capviz-view[data-ready]", state="attached")
            now = page.evaluate(POSITIONS)
            if before is not None:
                kept = set(before) & set(now)
                assert len(kept) >= len(before) // 2
                assert {i: now[i] for i in kept} == {i: before[i] for i in kept}
            newest = max(int(i) for i in now)
            assert page.evaluate(IN_SIGHT, newest), f"node %{newest} is out of sight"
            before = now
        assert page.locator("g.cv-node.cv-k4").count() == 1  # the seed violation, at the end
        assert errors == []


def test_a_flat_graph_opens_in_program_order_groups(tmp_path):
    eps = np.full(4, 1e-3, np.float32)

    def chain(x):
        for _ in range(100):
            x = np.tanh(x) + eps
        return x

    graph = cv.capture(chain, cv.spec(4, "float32"))
    graph.to_html(str(tmp_path / "flat.html"))
    with chromium_page("browser-view-flat") as page:
        page.goto((tmp_path / "flat.html").as_uri())
        page.wait_for_selector(".capviz-view[data-ready]", state="attached")
        view = page.locator(".capviz-view")
        groups = view.locator("g.cv-scope.cv-group")
        names = [g.locator("text.cv-name").text_content() for g in groups.all()]
        # 48 drawn items each: %1, the constant eps, is an annotation on its readers
        assert len(names) == 5 and names[:2] == ["\u25b8 %0\u2026%48", "\u25b8 %49\u2026%96"]
        assert view.locator("g.cv-node").count() == 0
        click(groups.nth(1))
        shown = ids(view.locator("g.cv-node"))
        assert len(shown) == 48 and min(shown) == 49 and max(shown) == 96
        stubs = view.locator("g.cv-node text.cv-stub")
        assert stubs.count() == 24 and stubs.first.text_content() == "\u2190 eps float32[4]"


def test_hostile_names_are_shown_as_text_and_never_run(tmp_path):
    hostile = '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'
    cap = cv.CaptureDevice()
    with cap.capture_scope() as scope:
        x = scope.input(hostile, (2,), "float32")
        with cv.name_scope("<b onmouseover=window.__pwned=3>"):
            y = np.tanh(x)
        scope.output(y, hostile)
    scope.graph.to_html(str(tmp_path / "hostile.html"))
    with chromium_page("browser-view-hostile") as page:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((tmp_path / "hostile.html").as_uri())
        page.wait_for_selector(".capviz-view[data-ready]", state="attached")
        view = page.locator(".capviz-view")
        label = view.locator('g.cv-node[data-i="0"] text.cv-label').text_content()
        assert label == hostile[:29] + "\u2026"  # clipped, as text
        view.locator('g.cv-node[data-i="0"]').hover()
        assert hostile in view.locator(".cv-tip").text_content()
        view.locator(".cv-search").fill("window.__pwned")
        assert view.locator(".cv-results .cv-match").count() >= 2
        assert view.locator("img, b, script:not(.cv-data)").count() == 1  # only our own script
        assert page.evaluate("() => window.__pwned") is None
        assert errors == []


TRANSFORM = """() => document.querySelector('g.cv-viewport').getAttribute('transform')"""


def parse_transform(text):
    numbers = [float(v) for v in text.replace("translate(", "").replace(") scale(", ",")
               .rstrip(")").split(",")]
    return numbers  # tx, ty, k


def test_drag_pans_and_the_wheel_zooms_around_the_pointer(tmp_path):
    graph = cv.capture(lambda x: np.tanh(x) * 2.0, cv.spec(4, "float32"))
    graph.to_html(str(tmp_path / "small.html"))
    with chromium_page("browser-view-panzoom") as page:
        page.goto((tmp_path / "small.html").as_uri())
        page.wait_for_selector(".capviz-view[data-ready]", state="attached")
        box = page.locator(".cv-canvas").bounding_box()
        x0, y0 = box["x"] + 15, box["y"] + box["height"] - 15  # an empty corner
        tx, ty, k = parse_transform(page.evaluate(TRANSFORM))
        page.mouse.move(x0, y0)
        page.mouse.down()
        page.mouse.move(x0 + 40, y0 - 30, steps=4)
        page.mouse.up()
        assert parse_transform(page.evaluate(TRANSFORM)) == [tx + 40, ty - 30, k]
        page.mouse.move(x0, y0)
        page.mouse.wheel(0, -200)  # zoom in, the point under the pointer stays put
        page.wait_for_function(f"() => !{TRANSFORM[6:]}.endsWith('scale({k})')")
        tx2, ty2, k2 = parse_transform(page.evaluate(TRANSFORM))
        assert k2 > k
        px, py = x0 - box["x"], y0 - box["y"]
        assert abs((px - tx2) / k2 - (px - (tx + 40)) / k) < 1e-6
        assert abs((py - ty2) / k2 - (py - (ty - 30)) / k) < 1e-6


@pytest.mark.parametrize("budget", [3, 5, 160])
def test_the_view_draws_what_the_static_svg_draws(tmp_path, budget):
    """One set of folding rules (capviz/render/rules.py): the page's DOM shows the same open
    scopes, closed boxes and nodes as the static SVG parsed as XML."""
    from render.test_same_rules import svg_picture, twelve_blocks

    from capviz.render.view import to_html

    graph = twelve_blocks()
    clusters, boxes, nodes, notes = svg_picture(graph, budget)
    to_html(graph, str(tmp_path / "blocks.html"), budget=budget)
    with chromium_page("browser-view-same-rules") as page:
        page.goto((tmp_path / "blocks.html").as_uri())
        page.wait_for_selector(".capviz-view[data-ready]", state="attached")
        view = page.locator(".capviz-view")
        scopes = [(g.get_attribute("class").split(), g.locator("text.cv-name").text_content())
                  for g in view.locator("g.cv-scope").all()]
        assert sorted(name[2:] for cls, name in scopes if "cv-open" in cls) == clusters
        assert sorted(name[2:] for cls, name in scopes if "cv-open" not in cls) == boxes
        assert ids(view.locator("g.cv-node")) == nodes
        for i in nodes:  # the np.eye constants: annotations on their readers in both
            stub = view.locator(f'g.cv-node[data-i="{i}"] text.cv-stub')
            texts = [stub.text_content()] if stub.count() else []
            assert [t.replace("\u2190 ", "") for t in texts] == notes[i]



def split_blocks(blocks):
    """Blocks that unpack ``np.split``: its results are unpack nodes, drawn as the split."""
    def block(x):
        a, b, c = np.split(x, 3, axis=-1)
        return np.tanh(a * b + c).repeat(3, axis=-1)

    def model(x):
        for _ in range(blocks):
            x = block(x)
        return x

    return cv.capture(model, cv.spec((2, 6)))


def svg_box_counts(graph, budget):
    """{closed box title: its "N ops" line} of the static SVG, parsed as XML."""
    import xml.etree.ElementTree as ET

    from render.test_same_rules import BOX_CLASSES, SVG, classes

    root = ET.fromstring(graph.to_svg(collapse=budget))
    out = {}
    for g in root.iter(f"{SVG}g"):
        if "node" in classes(g) and classes(g) & BOX_CLASSES:
            lines = [t.text for t in g.iter(f"{SVG}text")]
            out[lines[0]] = next(line for line in lines if line.endswith(" ops"))
    return out


def test_a_fold_counts_and_draws_the_same_ops_in_the_svg_and_the_view(tmp_path):
    """Issue 24: the SVG and the view counted a fold's ops differently (318 vs 336 on a GPT):
    the view counted the unpack nodes of multi-output ops (``np.split``) and drew them as boxes
    of their own; the SVG draws an unpack as its op. Both now count and draw the same."""
    from render.test_same_rules import svg_picture

    from capviz.render.view import to_html

    graph = split_blocks(12)
    assert sum(n.op == "unpack" for n in graph.nodes) == 36
    counts = svg_box_counts(graph, 3)
    assert counts == {"block \u00d7 12": "60 ops"}  # 5 ops a block: split, *, +, tanh, repeat
    to_html(graph, str(tmp_path / "folded.html"), budget=3)
    small = split_blocks(2)
    to_html(small, str(tmp_path / "open.html"), budget=10_000)
    with chromium_page("browser-view-fold-counts") as page:
        view = open_page(page, tmp_path / "folded.html")
        shown = {}
        for g in view.locator("g.cv-scope:not(.cv-open)").all():
            texts = [t.text_content() for t in g.locator("text").all()]
            shown[texts[0].lstrip("\u25b8 ")] = next(t for t in texts if t.endswith(" ops"))
        assert shown == counts
        view = open_page(page, tmp_path / "open.html")
        assert ids(view.locator("g.cv-node")) == svg_picture(small, 10_000)[2]
        edges = {p.get_attribute("data-edge") for p in view.locator("path.cv-edge").all()}
        split = next(n.index for n in small.nodes if n.op == "split")
        multiply = next(n.index for n in small.nodes if n.op == "multiply")
        assert f"{split} {multiply}" in edges  # the split's outputs leave the split itself

# --- the drawing tells the truth: edges never hide (issue 23) ---------------------------------

DRAWING = """(view) => {
  const rect = e => [+e.getAttribute('x'), +e.getAttribute('y'), +e.getAttribute('width'),
                     +e.getAttribute('height')];
  const boxes = {};
  for (const g of view.querySelectorAll('g.cv-node')) {
    boxes[g.dataset.node] = rect(g.querySelector('rect'));
  }
  for (const g of view.querySelectorAll('g.cv-scope:not(.cv-open)')) {
    boxes['s' + g.dataset.s] = rect(g.querySelector('rect'));
  }
  const titles = [...view.querySelectorAll('g.cv-scope.cv-open > text.cv-name')].map(t => {
    const b = t.getBBox();
    return [b.x, b.y, b.width, b.height, 'title ' + t.parentNode.dataset.path];
  });
  const edges = [...view.querySelectorAll('path.cv-edge')].map(p => {
    const len = p.getTotalLength(), points = [];
    for (let d = 0; d <= len; d += 2) { const q = p.getPointAtLength(d); points.push([q.x, q.y]); }
    const end = p.getPointAtLength(len);
    return {ends: p.dataset.edge.split(' '), points, end: [end.x, end.y]};
  });
  return {boxes, titles, edges};
}"""


def crossings(drawing):
    """(edge, what it crosses, point) for every sampled point of an edge strictly inside a node
    or closed box other than its two endpoints, or inside an open scope's title."""
    out = []
    for edge in drawing["edges"]:
        ends = set(edge["ends"])
        for x, y in edge["points"]:
            for name, (bx, by, bw, bh) in drawing["boxes"].items():
                inside = bx + 0.5 < x < bx + bw - 0.5 and by + 0.5 < y < by + bh - 0.5
                if name not in ends and inside:
                    out.append((edge["ends"], name, (x, y)))
            for bx, by, bw, bh, name in drawing["titles"]:
                if bx < x < bx + bw and by < y < by + bh:
                    out.append((edge["ends"], name, (x, y)))
    return out


def eight_blocks():
    g = gpt_module()
    params = g.init_params(8)
    return cv.capture(lambda x: g.gpt(x, params), cv.spec((g.T, g.D), "float32"))


def open_page(page, path):
    page.goto(path.as_uri())
    page.wait_for_selector(".capviz-view[data-ready]", state="attached")
    return page.locator(".capviz-view")


def test_no_edge_passes_through_a_box_that_is_not_its_endpoint(tmp_path):
    graph = eight_blocks()  # the GPT captured unchanged: no name scopes, 8 blocks
    graph.to_html(str(tmp_path / "gpt.html"))
    with chromium_page("browser-view-edges") as page:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        view = open_page(page, tmp_path / "gpt.html")
        first = view.evaluate(DRAWING)
        assert len(first["edges"]) > 50
        assert crossings(first) == []
        view.locator(".cv-expand-all").click()
        everything = view.evaluate(DRAWING)
        drawn = {int(k) for k in everything["boxes"] if not k.startswith("s")}
        assert len(drawn) == len(ids(view.locator("g.cv-node"))) > 600
        assert crossings(everything) == []
        # every operand edge is drawn, fan-in included: softmax's subtract reads the scores
        # and their max, its divide reads exp and the sum; each arrives at its own point
        ends = {}
        for edge in everything["edges"]:
            ends.setdefault(edge["ends"][1], []).append((edge["ends"][0], edge["end"]))
        aside = {n.index for n in graph.nodes if n.kind == "constant"}
        for n in graph.nodes:
            operands = {(a.args[0] if a.op == "unpack" else a).index  # drawn as its op
                        for _, a in n.operands if a.index not in aside}
            if n.index not in drawn or not operands:
                continue
            got = ends.get(str(n.index), [])
            assert {int(src) for src, _ in got} == operands, f"%{n.index} {n.op}"
            assert len({round(x) for _, (x, _) in got}) == len(got), f"%{n.index} arrivals overlap"
        fan_in = [n for n in graph.nodes if n.op in ("subtract", "divide") and
                  len({a.index for _, a in n.operands} - aside) == 2]
        assert len(fan_in) >= 8 * 4 * 2
        assert errors == []


SMALLEST_TEXT = """(view) => {  // the smallest text in sight, in CSS pixels on the screen
  const canvas = view.querySelector('.cv-canvas').getBoundingClientRect();
  const k = view.capvizView.k;
  let smallest = Infinity, seen = 0;
  for (const t of view.querySelectorAll('text')) {
    const r = t.getBoundingClientRect();
    if (!t.textContent || r.bottom < canvas.top || r.top > canvas.bottom || r.right < canvas.left
        || r.left > canvas.right) continue;
    seen++;
    smallest = Math.min(smallest, parseFloat(getComputedStyle(t).fontSize) * k);
  }
  for (const e of view.querySelectorAll('.cv-bar *, .cv-side *')) {
    const own = [...e.childNodes].some(c => c.nodeType === 3 && c.data.trim());
    if (!own) continue;
    if (!e.getClientRects().length) continue;
    seen++;
    smallest = Math.min(smallest, parseFloat(getComputedStyle(e).fontSize));
  }
  return [smallest, seen];
}"""


@pytest.mark.parametrize("blocks", [1, 8])
def test_the_first_picture_is_readable_with_a_minimap_and_a_hideable_panel(tmp_path, blocks):
    g = gpt_module()
    params = g.init_params(blocks)
    graph = cv.capture(lambda x: g.gpt(x, params), cv.spec((g.T, g.D), "float32"))
    graph.to_html(str(tmp_path / "gpt.html"))
    with chromium_page("browser-view-readable") as page:
        view = open_page(page, tmp_path / "gpt.html")
        smallest, seen = view.evaluate(SMALLEST_TEXT)
        assert seen > 10 and smallest >= 11
        # the input, where the graph starts, is in sight on the first picture
        x = view.locator(f'g.cv-node[data-node="{graph.node("x").index}"] rect').bounding_box()
        canvas = view.locator(".cv-canvas").bounding_box()
        assert canvas["x"] <= x["x"] and x["x"] + x["width"] <= canvas["x"] + canvas["width"]
        assert canvas["y"] <= x["y"] and x["y"] + x["height"] <= canvas["y"] + canvas["height"]
        # fit keeps text readable too
        view.locator(".cv-zoom-out").click()
        view.locator(".cv-fit").click()
        assert view.evaluate(SMALLEST_TEXT)[0] >= 11
        # the minimap shows the overview: a click on its bottom centre pans the view there
        mini = view.locator("canvas.cv-minimap")
        assert mini.is_visible()
        before = view.evaluate("v => v.capvizView.ty")
        box = mini.bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] - 3)
        after = view.evaluate("v => v.capvizView.ty")
        if blocks == 8:
            assert after < before - 100  # moved down the drawing
        # the side panel hides and the drawing takes its room
        width = canvas["width"]
        view.locator(".cv-side-toggle").click()
        assert not view.locator(".cv-side").is_visible()
        assert view.locator(".cv-canvas").bounding_box()["width"] > width + 200
        view.locator(".cv-side-toggle").click()
        assert view.locator(".cv-side").is_visible()


SCOPES = """(view) => [...view.querySelectorAll('g.cv-scope')].map(g => {
  const r = g.querySelector('rect');
  return [g.dataset.path, g.classList.contains('cv-open'),
          [+r.getAttribute('x'), +r.getAttribute('y'), +r.getAttribute('width'),
           +r.getAttribute('height')]];
})"""


def inside(a, b):
    """Whether rectangle ``a`` lies inside rectangle ``b`` (x, y, width, height)."""
    return (b[0] <= a[0] and b[1] <= a[1] and a[0] + a[2] <= b[0] + b[2]
            and a[1] + a[3] <= b[1] + b[3])


def test_expand_all_opens_every_scope_with_fold_members_flat_then_collapse_and_depth(tmp_path):
    graph = eight_blocks()
    graph.to_html(str(tmp_path / "gpt.html"))
    blocks = [f"gpt/transformer_block[{k}]" for k in range(8)]
    with chromium_page("browser-view-expand") as page:
        view = open_page(page, tmp_path / "gpt.html")
        view.locator(".cv-expand-all").click()
        scopes = view.evaluate(SCOPES)
        assert all(is_open for _, is_open, _ in scopes)
        assert {p for p, _, _ in scopes} >= {"/".join(n.scope.split("/")[:k])
                                             for n in graph.nodes if n.scope
                                             for k in range(1, n.scope.count("/") + 2)}
        rects = {p: r for p, _, r in scopes}
        # the eight blocks side by side in the one fold: none inside another
        assert all(not inside(rects[a], rects[b]) for a in blocks for b in blocks if a != b)
        ops = {n.index for n in graph.nodes if n.kind == "op" and n.op != "unpack"}
        assert ops <= ids(view.locator("g.cv-node"))
        view.locator(".cv-collapse-all").click()
        scopes = view.evaluate(SCOPES)
        assert [(p, is_open) for p, is_open, _ in scopes] == [("gpt", False)]
        view.locator(".cv-depth").select_option("2")  # gpt and the fold open: 8 closed blocks
        scopes = view.evaluate(SCOPES)
        assert sorted(p for p, is_open, _ in scopes if not is_open) == blocks
        assert view.locator(".cv-expand-all").is_visible()


def test_view_and_to_svg_honour_the_budget_alike(tmp_path):
    import xml.etree.ElementTree as ET

    graph = eight_blocks()
    ops = {n.index for n in graph.nodes if n.kind == "op" and n.op != "unpack"}
    with chromium_page("browser-view-budget") as page:
        drawn = {}
        for budget in (160, 100_000):
            (tmp_path / f"b{budget}.html").write_text(
                graph.view(budget=budget).html(), encoding="utf-8")
            view = open_page(page, tmp_path / f"b{budget}.html")
            drawn[budget] = ids(view.locator("g.cv-node"))
            root = ET.fromstring(graph.to_svg(budget=budget))
            in_svg = {int(g.get("id")[1:]) for g in root.iter("{http://www.w3.org/2000/svg}g")
                      if re.fullmatch(r"n\d+", g.get("id", ""))}
            unpacks = {n.index for n in graph.nodes if n.op == "unpack"}  # a split's ports in SVG
            assert in_svg == drawn[budget] - unpacks
        assert len(drawn[160]) < 200 and ops <= drawn[100_000]


# --- styled by kind from rules.py, light and dark (issue 23) ----------------------------------

CONTRAST = """(view) => {  // WCAG contrast of every text in sight against what is behind it
  const rgb = c => {
    const m = c.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const v = m[1].split(',').map(Number);
    return v.length > 3 && v[3] === 0 ? null : v.slice(0, 3);
  };
  const lum = c => {
    const [r, g, b] = c.map(x => {
      x /= 255;
      return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const behindHtml = e => {
    for (let p = e; p; p = p.parentElement) {
      const c = rgb(getComputedStyle(p).backgroundColor);
      if (c) return c;
    }
    return [255, 255, 255];
  };
  const canvas = rgb(getComputedStyle(view.querySelector('.cv-canvas')).backgroundColor);
  const out = [];
  for (const t of view.querySelectorAll('g.cv-node text, g.cv-scope text')) {
    const g = t.parentNode;
    let fill = null;
    const under = g.classList.contains('cv-node') ? '.cv-shape'
      : g.classList.contains('cv-open') ? 'rect.cv-head' : 'rect';
    fill = rgb(getComputedStyle(g.querySelector(under)).fill);
    out.push([t.textContent, ratio(rgb(getComputedStyle(t).fill), fill || canvas)]);
  }
  const html = '.cv-bar button, .cv-bar select, .cv-status, .cv-side h4, .cv-side li, '
    + '.cv-side pre, .cv-panel';
  for (const e of view.querySelectorAll(html)) {
    if (!e.getClientRects().length) continue;
    out.push([e.textContent.slice(0, 30), ratio(rgb(getComputedStyle(e).color), behindHtml(e))]);
  }
  return out;
}"""


def styled_graph():
    """A graph with every kind rules.py styles, the new ones (state, guard) set on nodes as
    issues 20 and 21 make them, a violation and a selected node."""
    g = gpt_module()
    graph = violation_graph(g)
    x = graph.node("x").index
    ops = [n for n in graph.nodes if n.kind == "op"]
    ops[1].kind = "state"
    ops[2].kind = "guard"
    return graph, x, ops[1].index, ops[2].index


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_kinds_are_styled_from_rules_and_text_is_readable_in_both_themes(tmp_path, theme):
    from capviz.render.rules import KIND_STYLES

    graph, x, state, guard = styled_graph()
    graph.to_html(str(tmp_path / "kinds.html"))
    with chromium_page(f"browser-view-{theme}") as page:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((tmp_path / "kinds.html").as_uri())
        if theme == "dark":  # what JupyterLab Dark sets on the page
            page.evaluate("() => document.body.setAttribute('data-jp-theme-light', 'false')")
        page.wait_for_selector(".capviz-view[data-ready]", state="attached")
        view = page.locator(".capviz-view")
        view.locator(f'g.cv-node[data-node="{x}"]').dispatch_event("click")  # a selected node
        for index, kind in ((state, "state"), (guard, "guard"), (x, "input")):
            node = view.locator(f'g.cv-node[data-node="{index}"]')
            assert f"cv-kind-{kind}" in node.get_attribute("class").split()
            style = KIND_STYLES[kind]
            fill = style.dark_fill if theme == "dark" else style.fill
            got = node.locator(".cv-shape").evaluate("e => getComputedStyle(e).fill")
            assert got == "rgb({}, {}, {})".format(*(int(fill[k:k + 2], 16) for k in (1, 3, 5)))
        shapes = {kind: view.locator(f'g.cv-node[data-node="{i}"] .cv-shape').evaluate(
            "e => e.tagName") for i, kind in ((state, "state"), (guard, "guard"), (x, "input"))}
        assert shapes == {"state": "path", "guard": "polygon", "input": "rect"}
        pairs = view.evaluate(CONTRAST)
        assert len(pairs) > 30
        low = [(text, round(r, 2)) for text, r in pairs if r < 4.5]
        assert low == []
        page.screenshot(path=os.path.join(ARTIFACTS, f"view-{theme}.png"))
        assert errors == []


# --- everywhere a notebook goes: untrusted, live (issue 23) --------------------------------

PICTURE = """() => [...document.querySelectorAll('.jp-OutputArea-output img.cv-picture')].map(
  i => [i.complete && i.naturalWidth > 0, i.getBoundingClientRect().height])"""


def test_an_untrusted_copy_of_a_saved_notebook_shows_a_picture_and_the_hint(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import numpy as np\nimport capviz as cv\n"
        "def block(x):\n    return np.tanh(x * 2.0) + x\n"
        "def model(x):\n    for _ in range(4):\n        x = block(x)\n    return x\n"
        "cv.capture(model, cv.spec((3,), 'float32'))\n")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    nbformat.write(nb, str(tmp_path / "colleague.ipynb"))  # from git: not signed, untrusted
    with running_lab(str(tmp_path)) as lab:
        lab.start_kernel("colleague.ipynb")
        with chromium_page("browser-view-untrusted") as page:
            open_notebook(page, lab, "colleague.ipynb")
            page.wait_for_selector(".jp-OutputArea-output img.cv-picture", timeout=60_000)
            page.wait_for_function(f"() => ({PICTURE})().every(p => p[0])", timeout=30_000)
            pictures = page.evaluate(PICTURE)
            assert len(pictures) == 1 and pictures[0][1] > 50
            hint = page.locator(".jp-OutputArea-output .cv-hint")
            assert hint.is_visible()
            assert hint.text_content().startswith("Trust this notebook to open the interactive")
            assert page.locator(".capviz-view[data-ready]").count() == 0  # no script ran
            # no wall of text: the output shows the picture and the hint, little else
            text = page.locator(".jp-OutputArea-output").first.inner_text()
            assert len(text) < 300, text
            page.screenshot(path=os.path.join(ARTIFACTS, "view-untrusted.png"))


# --- debugging that names the cause (issue 23) -------------------------------------------------


def poisoned_graph():
    """The GPT with one NaN put into one weight (block 2's MLP), replayed with check_finite."""
    g = gpt_module()
    params = g.init_params(4)
    params["blocks"][2]["mlp"]["c_fc"][3, 5] = np.nan
    graph = cv.capture(lambda x: g.gpt(x, params), cv.spec((g.T, g.D), "float32"))
    x = np.ones((g.T, g.D), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(cv.NonFiniteError) as info:
            graph.replay({"x": x}, check_finite=True)
    (weight,) = [n for n in graph.constants
                 if np.isnan(graph.constant_values[n.index]).any()]
    return graph, info.value, weight, x


def descendants(graph, index):
    users = {}
    for n in graph.nodes:
        for _, a in n.operands:
            users.setdefault(a.index, []).append(n.index)
    seen, stack = {index}, [index]
    while stack:
        for u in users.get(stack.pop(), []):
            if u not in seen:
                seen.add(u)
                stack.append(u)
    return seen


def test_the_first_nan_story_marks_the_source_names_the_operand_and_only_its_path(tmp_path):
    graph, err, weight, _ = poisoned_graph()
    first = err.node.index
    assert "transformer_block[2]" in err.scope and "mlp" in err.scope
    graph.to_html(str(tmp_path / "nan.html"))
    with chromium_page("browser-view-nan") as page:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        view = open_page(page, tmp_path / "nan.html")
        view.locator("li.cv-first-nan").click()  # opens the scopes down to it, selects it
        operand = view.locator(".cv-panel .cv-operand").text_content()
        k = [a.index for _, a in err.node.operands].index(weight.index)
        assert operand.startswith(f"operand {k} (%{weight.index} ") and "holds NaN/Inf" in operand
        assert f"operand {k} (%{weight.index}" in view.locator("li.cv-first-nan").text_content()
        source = view.locator("li.cv-nan-source")
        assert source.count() == 1 and f"%{weight.index} " in source.text_content()
        # the weight is an annotation on its reader: marked there, and it opens its panel
        mark = view.locator(f'tspan.cv-const.cv-source[data-const="{weight.index}"]')
        assert mark.count() == 1
        path = ids(view.locator("g.cv-node.cv-nanpath"))
        assert first in path and path <= ancestors(graph, first) & descendants(graph, weight.index)
        assert graph.node("x").index not in path and len(path) <= 3
        mark.dispatch_event("click")
        panel = view.locator(".cv-panel")
        assert panel.get_attribute("data-i") == str(weight.index)
        text = panel.text_content()
        value = graph.constant_values[weight.index]
        assert f"shape ({','.join(map(str, value.shape))})  dtype float32" in text
        assert "NaN 1  Inf 0" in text
        shown = ", ".join("nan" if np.isnan(v) else f"{v:.4g}"[:6]
                          for v in value.reshape(-1)[:2])
        assert panel.locator(".cv-first").text_content().startswith("first values: ")
        assert shown.split(", ")[0][:5] in panel.locator(".cv-first").text_content()
        page.screenshot(path=os.path.join(ARTIFACTS, "view-nan.png"))
        assert errors == []


def test_kept_values_show_their_first_values(tmp_path):
    g = gpt_module()
    params = g.init_params(1)
    graph = cv.capture(lambda x: g.gpt(x, params), cv.spec((g.T, g.D), "float32"))
    x = np.arange(g.T * g.D, dtype=np.float32).reshape(g.T, g.D) / 100
    ex = graph.executor({"x": x}, keep=True)
    ex.run()
    graph.to_html(str(tmp_path / "kept.html"), values=ex.values)
    tanh_free = next(n for n in graph.nodes if n.op == "mean")
    with chromium_page("browser-view-kept") as page:
        view = open_page(page, tmp_path / "kept.html")
        view.locator(f'g.cv-node[data-node="{tanh_free.index}"]').dispatch_event("click")
        first = view.locator(".cv-panel .cv-first").text_content()
        value = np.asarray(ex.values[tanh_free]).reshape(-1)
        assert first == "first values: " + ", ".join(
            str(round(float(v) * 1e4) / 1e4).removesuffix(".0") for v in value[:8])


def test_colour_by_a_metric_with_a_legend(tmp_path):
    graph = eight_blocks()
    (tmp_path / "bytes.html").write_text(graph.view(metric="bytes").html(), encoding="utf-8")
    times = {n: 10.5 + n.index for n in graph.nodes if n.kind == "op"}  # within 100x: linear
    (tmp_path / "time.html").write_text(graph.view(metric=("time (us)", times)).html(),
                                        encoding="utf-8")
    with chromium_page("browser-view-metric") as page:
        view = open_page(page, tmp_path / "bytes.html")
        legend = view.locator(".cv-legend")
        assert legend.locator(".cv-legend-name").text_content() == "output bytes (log scale)"
        sizes = {n.index: int(np.prod(n.shape)) * 4 for n in graph.nodes
                 if n.kind == "op" and n.shape is not None}
        assert legend.locator(".cv-legend-lo").text_content() == str(min(sizes.values()))
        assert legend.locator(".cv-legend-hi").text_content() == str(max(sizes.values()))
        drawn = ids(view.locator("g.cv-node.cv-metric"))
        assert drawn and drawn <= set(sizes)
        fills = {i: view.locator(f'g.cv-node[data-node="{i}"] .cv-shape').evaluate(
            "e => getComputedStyle(e).fill") for i in drawn}
        small, big = min(drawn, key=sizes.get), max(drawn, key=sizes.get)
        if sizes[small] < sizes[big]:
            assert fills[small] != fills[big]
        assert fills[big] == "rgb(249, 115, 22)" or sizes[big] < max(sizes.values())
        view = open_page(page, tmp_path / "time.html")
        assert view.locator(".cv-legend-name").text_content() == "time (us)"
        assert view.locator(".cv-legend-lo").text_content() == str(min(times.values()))
        page.screenshot(path=os.path.join(ARTIFACTS, "view-metric.png"))


# --- search and keys (issue 23) ----------------------------------------------------------------


def test_search_finds_scopes_and_shapes_in_any_spelling_and_closes_on_choose(tmp_path):
    graph = eight_blocks()
    graph.to_html(str(tmp_path / "gpt.html"))
    block = "gpt/transformer_block[3]"
    with chromium_page("browser-view-search") as page:
        view = open_page(page, tmp_path / "gpt.html")
        search, results = view.locator(".cv-search"), view.locator(".cv-results")
        search.fill("transformer_block[3]")
        first = results.locator(".cv-match").first
        assert first.locator(".cv-what").text_content() == f"scope {block}"
        assert first.locator(".cv-where").text_content() == "  in gpt"
        first.click()
        assert not results.is_visible()  # closes when one is chosen
        scope = view.locator(f'g.cv-scope[data-path="{block}"]')
        assert "cv-focus" in scope.get_attribute("class").split()
        shaped = {n.index for n in graph.nodes if n.shape == (8, 32)}
        for spelling in ("(8, 32)", "8x32", "[8,32]", "8 x 32"):
            search.fill(spelling)
            rows = results.locator(".cv-match")
            found = {int(r.get_attribute("data-item")) for r in rows.all()}
            assert found and found <= shaped, spelling
            where = rows.first.locator(".cv-where").text_content()
            first_found = int(rows.first.get_attribute("data-item"))
            assert where == "  in " + (graph.nodes[first_found].scope or "(top level)")
        search.press("Enter")  # Enter chooses the first match: focused, the results closed
        assert not results.is_visible()
        focused = int(view.locator("g.cv-node.cv-focus").get_attribute("data-node"))
        assert focused in shaped
        # a source line finds its node, with the scope path it is in
        search.fill(f"gpt_numpy.py:{line_of('np.exp(')}")
        row = results.locator(".cv-match").first
        assert row.locator(".cv-where").text_content().startswith("  in gpt/transformer_block[")


def test_keys_slash_arrows_enter_and_escape(tmp_path):
    graph = eight_blocks()
    graph.to_html(str(tmp_path / "gpt.html"))
    x = graph.node("x").index
    with chromium_page("browser-view-keys") as page:
        view = open_page(page, tmp_path / "gpt.html")
        node = view.locator(f'g.cv-node[data-node="{x}"]')
        node.focus()  # nodes are focusable
        node.dispatch_event("click")
        page.keyboard.press("/")
        assert view.evaluate("v => document.activeElement === v.querySelector('.cv-search')")
        page.keyboard.type("mean")
        assert view.locator(".cv-results").is_visible()
        page.keyboard.press("Escape")  # clears the search
        assert view.locator(".cv-search").input_value() == ""
        assert not view.locator(".cv-results").is_visible()
        node = view.locator(f'g.cv-node[data-node="{x}"]')
        node.focus()
        node.dispatch_event("click")
        focused = lambda: int(view.locator("g.cv-node.cv-focus").get_attribute("data-node"))  # noqa: E731
        page.keyboard.press("ArrowDown")  # along an edge to a reader of x
        down = focused()
        assert x in {a.index for _, a in graph.nodes[down].operands}
        page.keyboard.press("ArrowRight")  # another reader of x
        right = focused()
        assert right != down and x in {a.index for _, a in graph.nodes[right].operands}
        page.keyboard.press("ArrowUp")  # back up the edge
        assert focused() == x
        page.keyboard.press("ArrowDown")
        inside = graph.nodes[focused()].scope
        scope = view.locator(f'g.cv-scope[data-path="{inside}"]')
        assert "cv-open" in scope.get_attribute("class").split()
        page.keyboard.press("Enter")  # closes the scope the node is in
        assert "cv-open" not in scope.get_attribute("class").split()
        assert view.evaluate("v => document.activeElement.classList.contains('cv-scope')")
        page.keyboard.press("Enter")  # and opens it again
        assert "cv-open" in view.locator(f'g.cv-scope[data-path="{inside}"]').get_attribute(
            "class").split()
        page.keyboard.press("Escape")
        assert view.locator(".cv-focus").count() == 0


# --- large graphs: a canvas drawing, laid out in a Web Worker (issue 23) -----------------------

IDLE = "() => !document.querySelector('.capviz-view').hasAttribute('data-busy')"
DRAWN_SINCE = """(before) => {  // drawn again since, and no layout in flight
  const root = document.querySelector('.capviz-view');
  return root.capvizView.draws > before && !root.hasAttribute('data-busy');
}"""


def redrawn(page, action):
    """Do ``action`` (a click, a key) and wait until the view has drawn its result: the
    layout of a large graph runs in a Web Worker, so the drawing follows asynchronously."""
    before = page.evaluate("() => document.querySelector('.capviz-view').capvizView.draws")
    action()
    page.wait_for_function(DRAWN_SINCE, arg=before)


def sampled(drawing):
    """``view.capvizView.drawing()`` (the canvas drawing's equivalent of ``data-node`` and
    ``data-edge``) in the form crossings() reads: boxes by id, open scopes' titles, and each
    edge's path sampled every 2 px."""
    boxes = dict(drawing["nodes"])
    boxes.update({f"s{s['s']}": s["box"] for s in drawing["scopes"] if not s["open"]})
    titles = [(*s["title"], "title " + s["path"]) for s in drawing["scopes"] if s["open"]]
    edges = []
    for edge in drawing["edges"]:
        points = []
        for (x0, y0), (x1, y1) in zip(edge["points"], edge["points"][1:]):
            steps = max(1, int(math.hypot(x1 - x0, y1 - y0) / 2))
            points += [(x0 + (x1 - x0) * t / steps, y0 + (y1 - y0) * t / steps)
                       for t in range(steps)]
        points.append(tuple(edge["points"][-1]))
        edges.append({"ends": edge["edge"].split(" "), "points": points,
                      "end": edge["points"][-1]})
    return {"boxes": boxes, "titles": titles, "edges": edges}


PIXEL = """([x, y]) => {  // the canvas pixel under a point of the page, as [r, g, b]
  const c = document.querySelector('canvas.cv-draw'), r = c.getBoundingClientRect();
  const f = c.width / r.width;
  return [...c.getContext('2d').getImageData((x - r.left) * f, (y - r.top) * f, 1, 1).data]
    .slice(0, 3);
}"""


def centre(box):
    return box[0] + box[2] / 2, box[1] + box[3] / 2


def in_sight(box, canvas):
    """Whether a box of the drawing is in sight (inside the drawing's area, clear of the
    minimap in its bottom right corner)."""
    x, y, w, h = box
    right, bottom = canvas["x"] + canvas["width"], canvas["y"] + canvas["height"]
    return (canvas["x"] <= x and x + w <= right - 200 and canvas["y"] + 30 <= y
            and y + h <= bottom)


def test_a_canvas_drawing_keeps_the_routes_the_clicks_search_and_keys(tmp_path):
    from capviz.render.rules import KIND_STYLES
    from capviz.render.view import to_html

    graph = eight_blocks()
    to_html(graph, str(tmp_path / "gpt.html"), canvas_at=0, worker_at=0)  # canvas, worker
    x = graph.node("x").index
    with chromium_page("browser-view-canvas") as page:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        view = open_page(page, tmp_path / "gpt.html")
        assert view.get_attribute("data-drawing") == "canvas"
        assert view.locator("g.cv-node").count() == 0 and view.locator("path.cv-edge").count() == 0
        first = view.evaluate("v => v.capvizView.drawing()")
        assert first["mode"] == "canvas" and len(first["edges"]) > 50
        assert crossings(sampled(first)) == []
        # painted: inside the input's box, left of its text, the input kind's fill
        bx, by, _, bh = first["nodes"][str(x)]
        fill = KIND_STYLES["input"].fill.lstrip("#")
        assert page.evaluate(PIXEL, [bx + 3.5, by + bh / 2]) == [
            int(fill[k:k + 2], 16) for k in (0, 2, 4)]
        # a click on a node opens its panel; hovering shows its shape
        area = view.locator(".cv-canvas").bounding_box()
        op = next(int(i) for i, box in first["nodes"].items()
                  if graph.nodes[int(i)].kind == "op" and in_sight(box, area))
        page.mouse.click(*centre(first["nodes"][str(op)]))
        assert view.locator(".cv-panel").get_attribute("data-i") == str(op)
        page.mouse.move(*centre(first["nodes"][str(x)]))
        assert view.locator(".cv-tip").is_visible()
        assert "shape (8,32)" in view.locator(".cv-tip").text_content()
        # a click on a closed box opens it (laid out in the worker)
        closed = next(s for s in first["scopes"] if not s["open"])
        redrawn(page, lambda: view.evaluate("(v, s) => v.capvizView.focusScope(s)",
                                            closed["s"]))  # in sight
        box = next(s["box"] for s in view.evaluate("v => v.capvizView.drawing().scopes")
                   if s["s"] == closed["s"])
        assert in_sight(box, area)
        redrawn(page, lambda: page.mouse.click(*centre(box)))
        after = view.evaluate("v => v.capvizView.drawing()")
        assert next(s for s in after["scopes"] if s["s"] == closed["s"])["open"]
        assert len(after["nodes"]) > len(first["nodes"])
        # expand all: every op drawn, no edge through a box, repeated blocks laid out once
        redrawn(page, lambda: view.locator(".cv-expand-all").click())
        everything = view.evaluate("v => v.capvizView.drawing()")
        ops = {n.index for n in graph.nodes if n.kind == "op" and n.op != "unpack"}  # its op
        assert ops <= {int(i) for i in everything["nodes"]}
        assert crossings(sampled(everything)) == []
        layouts = everything["layouts"]
        open_scopes = sum(s["open"] for s in everything["scopes"])
        assert layouts["worker"] > 0  # off the main thread
        assert layouts["worker"] + layouts["main"] < open_scopes / 3
        # search for a scope: the results close, the scope is focused
        view.locator(".cv-search").fill(BLOCK.split("/")[-1])
        redrawn(page, lambda: view.locator(".cv-search").press("Enter"))
        assert not view.locator(".cv-results").is_visible()
        focused = view.evaluate("v => v.capvizView.m.path[v.capvizView.focusedScope]")
        assert focused == BLOCK
        # keys: a click focuses a node, ArrowDown moves to a reader, Enter closes its scope
        page.keyboard.press("Escape")
        view.evaluate("(v, x) => v.capvizView.focus(x)", x)  # x in sight (no redraw needed)
        page.wait_for_function(IDLE)
        box = view.evaluate("v => v.capvizView.drawing().nodes")[str(x)]
        assert in_sight(box, area)
        page.mouse.click(*centre(box))
        assert view.evaluate("v => v.capvizView.focused") == x
        page.keyboard.press("ArrowDown")
        down = view.evaluate("v => v.capvizView.focused")
        assert x in {a.index for _, a in graph.nodes[down].operands}
        inside = graph.nodes[down].scope
        redrawn(page, lambda: page.keyboard.press("Enter"))
        scopes = view.evaluate("v => v.capvizView.drawing().scopes")
        assert not next(s for s in scopes if s["path"] == inside)["open"]
        assert page.evaluate("([x, y]) => document.querySelector('.capviz-view')"
                             ".capvizView.nodeAt(x, y)", list(centre(box))) in (x, -1)
        assert errors == []


def test_past_canvas_at_nodes_the_view_draws_on_a_canvas_and_back(tmp_path):
    from capviz.render.rules import RULES

    g = gpt_module()
    params = g.init_params(30)
    graph = cv.capture(lambda x: g.gpt(x, params), cv.spec((g.T, g.D), "float32"))
    assert len(graph.nodes) > RULES.canvas_at
    graph.to_html(str(tmp_path / "big.html"))
    with chromium_page("browser-view-canvas-at") as page:
        view = open_page(page, tmp_path / "big.html")
        assert view.get_attribute("data-drawing") == "svg"  # the first picture: a few boxes
        redrawn(page, lambda: view.locator(".cv-expand-all").click())
        assert view.get_attribute("data-drawing") == "canvas"
        drawn = view.evaluate("v => Object.keys(v.capvizView.drawing().nodes).length")
        assert drawn > RULES.canvas_at and view.locator("g.cv-node").count() == 0
        redrawn(page, lambda: view.locator(".cv-collapse-all").click())
        assert view.get_attribute("data-drawing") == "svg"
        assert view.locator("g.cv-scope").count() == 1  # gpt, closed: its input and output
        assert 0 < view.locator("g.cv-node").count() < 5


def test_a_frozen_draw_is_drawn_linked_to_its_readers(tmp_path):
    from render.test_links import frozen_draws

    graph = frozen_draws()
    draws = [n.index for n in graph.nodes if n.kind == "violation"]
    graph.to_html(str(tmp_path / "frozen.html"))
    with chromium_page("browser-view-frozen") as page:
        view = open_page(page, tmp_path / "frozen.html")
        links = {tuple(int(i) for i in e.get_attribute("data-edge").split())
                 for e in view.locator("path.cv-edge.cv-link").all()}
        readers = {(d, n.index) for d in draws for n in graph.nodes
                   if any(a.kind == "constant" and a.index > d for _, a in n.operands)}
        assert links == {(d, r) for d, r in readers
                         if d == max(v for v in draws if v < r)}  # each reader: its own draw
        edges = [e.get_attribute("data-edge").split() for e in view.locator("path.cv-edge").all()]
        assert not any(int(v) in draws for _, v in edges)  # nothing drawn into a violation
