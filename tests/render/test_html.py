"""The interactive view's HTML, parsed: self-contained, escaped, and carrying the graph's data."""

import json
import re
import warnings
from html.parser import HTMLParser

import numpy as np
import pytest

import capviz as cv
from capviz.render.view import fragment, to_html
from capviz.render.view_data import script_json, view_data

HOSTILE = '</script><script>alert(1)</script><!-- \u2028 & "x"'


class Page(HTMLParser):
    """Collects elements, attributes and the raw text of each script."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []
        self.scripts = []
        self._in_script = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = [dict(attrs), ""]

    def handle_endtag(self, tag):
        if tag == "script" and self._in_script is not None:
            self.scripts.append(tuple(self._in_script))
            self._in_script = None

    def handle_data(self, data):
        if self._in_script is not None:
            self._in_script[1] += data


def parse(text):
    page = Page()
    page.feed(text)
    page.close()
    return page


def data_of(page):
    """The view's data: packed once in the fragment (gzip, base64)."""
    from capviz.render.view import read_data

    (blob,) = [body for attrs, body in page.scripts if "cv-blob" in attrs.get("class", "")]
    return read_data(f'<script class="cv-data cv-blob">{blob}</script>')


def model(x):
    def block(h):
        return np.tanh(h @ np.eye(4, dtype=np.float32)) + h

    for _ in range(3):
        x = block(x)
    return x.sum()


def test_page_is_self_contained_with_no_external_urls(tmp_path):
    graph = cv.capture(model, cv.spec((2, 4), "float32"))
    path = tmp_path / "g.html"
    text = graph.to_html(str(path))
    assert path.read_text(encoding="utf-8") == text
    page = parse(text)
    for tag, attrs in page.tags:
        for name in ("src", "href", "data", "action"):
            assert name not in attrs, f"<{tag} {name}=...> would fetch something"
        assert tag not in ("link", "iframe", "img", "object", "embed")
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text.replace(
        "http://www.w3.org/2000/svg", "")), "an external URL in the page"
    assert "@import" not in text and "url(http" not in text
    code = [body for attrs, body in page.scripts if "type" not in attrs]
    assert len(code) == 1 and "window.CapvizView" in code[0]
    assert "fetch(" not in code[0] and "XMLHttpRequest" not in code[0]


def test_hostile_names_cannot_close_the_script_or_inject_markup():
    cap = cv.CaptureDevice()
    with cap.capture_scope() as scope:
        x = scope.input(HOSTILE, (2,), "float32")
        with cv.name_scope(HOSTILE):
            y = x * scope.constant(np.ones(2, np.float32), name=HOSTILE)
        scope.output(y, HOSTILE)
    text = to_html(scope.graph)
    page = parse(text)
    data = data_of(page)
    assert text.count("</script>") == 3  # the packed code's, the packed data's, the loader's
    assert "<script>alert" not in text and "\u2028" not in text and "<!-- " not in text
    assert HOSTILE in data["strings"]
    names = [data["strings"][i] for i in data["scopes"]["name"]]
    assert "/".join(names[1:]) == HOSTILE  # its "/" nests scopes, as in the graph
    assert len([t for t, _ in page.tags if t == "script"]) == 3


def test_script_json_escapes_everything_that_ends_or_comments_a_script():
    text = script_json({"a": "</script><!--\u2028\u2029&>"})
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == {"a": "</script><!--\u2028\u2029&>"}


def test_data_holds_scopes_nodes_and_operands():
    graph = cv.capture(model, cv.spec((2, 4), "float32"))
    data = data_of(parse(graph.to_html()))
    strings = data["strings"]
    n = len(graph.nodes)
    assert len(data["kind"]) == len(data["label"]) == len(data["scope"]) == n
    parents, kinds = data["scopes"]["parent"], data["scopes"]["kind"]

    def path_of(box):  # the scope path: the names of the scope boxes (kind 1) above it
        parts = []
        while box > 0:
            if kinds[box] == 1:
                parts.append(strings[data["scopes"]["name"][box]])
            box = parents[box]
        return "/".join(reversed(parts))

    for node, box in zip(graph.nodes, data["scope"]):
        assert path_of(box) == node.scope or node.kind == "constant"
    # the three identical blocks: one fold (kind 2) holding them side by side, as siblings
    titles = [strings[k] for k in data["scopes"]["name"]]
    fold = titles.index("block \u00d7 3")
    assert kinds[fold] == 2
    assert [titles[b] for b, p in enumerate(parents) if p == fold] == [
        "block[0]", "block[1]", "block[2]"]
    back = iter(data["argd"])
    for node, count in zip(graph.nodes, data["argc"], strict=True):
        assert [node.index - next(back) for _ in range(count)] == [
            a.index for _, a in node.operands]
    tanh = next(n for n in graph.nodes if n.op == "tanh")
    assert strings[data["label"][tanh.index]] == "tanh"
    assert strings[data["type"][tanh.index]] == "float32[2,4]"
    assert strings[data["source"][tanh.index]].startswith("test_html.py:")
    assert "np.tanh(h @ np.eye" in strings[data["code"][tanh.index]]


def test_violations_are_in_the_data():
    cap = cv.CaptureDevice()
    with cap.capture_scope(on_violation="record") as scope:
        x = scope.input("x", (3,), "float32")
        np.random.seed(0)
        scope.output(x * 2.0, "z")
    (v,) = view_data(scope.graph)["violations"]
    data = view_data(scope.graph)
    assert v["kind"] == "seed" and v["level"] == "error" and data["kind"][v["node"]] == 4
    assert "seeding is not supported during graph capture" in v["message"]


def test_first_nan_mark_and_kept_values_are_in_the_data():
    graph = cv.capture(lambda x: np.log(x) * 2.0, cv.spec(3, "float32"))
    inputs = {"x": np.array([1.0, -1.0, 2.0], np.float32)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log(-1); its line is another test's
        with pytest.raises(cv.NonFiniteError):
            graph.replay(inputs, check_finite=True)
        ex = graph.executor(inputs)
        ex.run()
    data = view_data(graph, values=ex.values)
    log = next(n for n in graph.nodes if n.op == "log")
    assert data["marks"]["nonfinite"] == log.index
    summary = data["values"][str(log.index)]
    assert summary[4] == 1 and summary[5] == 0  # one NaN, no Inf
    assert summary[0] == 0.0 and summary[1] == pytest.approx(np.log(2.0))
    assert sum(summary[6]) == 2  # the histogram counts the finite values
    graph.compute_stats(inputs)
    from_stats = view_data(graph)["values"][str(log.index)]
    assert from_stats[:6] == summary[:6] and from_stats[6] == []


def test_a_constant_read_in_several_scopes_is_set_aside():
    mask = np.ones(4, np.float32)

    def f(x):
        for i in range(3):
            with cv.name_scope(f"layer{i}"):
                x = x * mask
        return x

    graph = cv.capture(f, cv.spec(4, "float32"))
    data = view_data(graph)
    (const,) = graph.constants
    assert data["aside"] == [const.index]


def fallback_svg(text):
    """The static picture inside a view fragment: an <img> whose data URI is the SVG."""
    import base64

    src = re.search(r'<img class="cv-picture" alt="[^"]*" src="data:image/svg\+xml;base64,'
                    r'([^"]+)"', text).group(1)
    return base64.b64decode(src).decode("utf-8")


def test_notebook_display_stores_the_graph_once_with_a_picture_and_a_hint():
    import xml.etree.ElementTree as ET

    graph = cv.capture(model, cv.spec((2, 4), "float32"))
    bundle = graph._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    page = parse(bundle["text/html"])
    assert [a for t, a in page.tags if a.get("class") == "cv-fallback"]
    svg = ET.fromstring(fallback_svg(bundle["text/html"]))
    assert svg.tag.endswith("svg")
    assert "Trust this notebook to open the interactive view" in bundle["text/html"]
    assert data_of(page)["kind"] == [data for data in view_data(graph)["kind"]]
    # nothing but the packed code, the packed data and the loader is a script
    code = [body for attrs, body in page.scripts if "type" not in attrs]
    assert len(code) == 1 and len(page.scripts) == 3


def test_one_display_of_a_459_op_gpt_stores_under_120_kb():
    import importlib.util
    import os

    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    spec = importlib.util.spec_from_file_location(
        "gpt_numpy", os.path.join(here, "benchmarks", "gpt_numpy.py"))
    g = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(g)
    params = g.init_params(6)
    graph = cv.capture(lambda x: g.gpt(x, params), cv.spec((g.T, g.D), "float32"))
    assert 459 <= len(graph.ops) <= 480
    bundle = graph._repr_mimebundle_()
    size = sum(len(v.encode("utf-8")) for v in bundle.values())
    assert size <= 120_000, size
    assert data_of(parse(bundle["text/html"]))["kind"] == view_data(graph)["kind"]


def test_view_object_displays_the_view_with_its_options():
    graph = cv.capture(model, cv.spec((2, 4), "float32"))
    view = graph.view(title="three blocks", budget=7)
    bundle = view._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    data = data_of(parse(bundle["text/html"]))
    assert data["title"] == "three blocks"
    assert data == view_data(graph, title="three blocks", budget=7)


def test_fragment_starts_its_view_from_its_own_element():
    graph = cv.capture(model, cv.spec((2, 4), "float32"))
    text = fragment(graph)
    assert text.startswith('<div class="capviz-view"')
    assert "(document.currentScript && document.currentScript.parentElement)" in text


def test_live_view_streams_the_interactive_view_with_its_key():
    from capviz.render import live

    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        view = live.attach(scope, force=True, interval=0.0)
        x = scope.input("x", (3,), "float32")
        y = np.tanh(x)
        np.random.seed(0)
        first = view.html
        scope.output(y * 2.0, "y")
    (shown,) = view.image.outputs  # a snapshot in the widget (not saved as the cell's output)
    assert set(shown["data"]) == {"text/html", "image/svg+xml", "text/plain"}
    assert shown["data"]["text/html"] == view.html
    while_recording = data_of(parse(first))
    final = data_of(parse(view.html))
    assert while_recording["live"] and final["live"]
    assert while_recording["title"] == "capviz recording" and final["title"] == "capviz done"
    assert len(while_recording["kind"]) < len(final["kind"])
    assert while_recording["violations"][0]["kind"] == "seed"
    keys = {re.search(r'data-key="([^"]+)"', text).group(1) for text in (first, view.html)}
    assert keys == {view.key}
