"""Control characters, lone surrogates and line separators in names are shown as escapes and
never make a graph unrenderable (DOT, SVG, the live view)."""

import xml.etree.ElementTree as ET

import numpy as np

import capviz as cv
from capviz.render.escape import printable

HOSTILE = "a\x1b[2Jb\x07c\x00d\udce9e\u2028f\x85g"
SHOWN = "a\\x1b[2Jb\\x07c\\x00d\\udce9e\\u2028f\\x85g"


def test_printable_writes_each_unprintable_character_as_its_escape():
    assert printable(HOSTILE) == SHOWN
    assert printable("tab\there\nnext line, é, 🙂") == "tab\\there\nnext line, é, 🙂"
    assert printable(SHOWN) == SHOWN  # already printable text is unchanged


def hostile_graph():
    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        x = scope.input(HOSTILE, (2,))
        w = scope.constant(np.ones(2, np.float32), name=HOSTILE + "w")
        with cv.name_scope(HOSTILE + "s"):
            y = np.tanh(x) * w
        float(y.sum())  # a data_read violation: its message quotes the source line
        scope.output(y, HOSTILE + "o")
    return scope.graph


def test_hostile_names_are_escaped_in_dot_and_svg():
    graph = hostile_graph()
    dot = graph.to_dot().source
    assert SHOWN in dot
    assert not any(c in dot for c in "\x1b\x07\x00\udce9\u2028\x85")
    dot.encode("utf-8")  # no lone surrogate left
    svg = graph.to_svg()
    root = ET.fromstring(svg)
    text = "".join(root.itertext())
    assert SHOWN in text and "\x1b" not in svg


def test_hostile_names_do_not_stop_the_live_view():
    from capviz.render import live

    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        view = live.attach(scope, force=True, background=True, interval=0.0)
        x = scope.input(HOSTILE, (2,))
        with cv.name_scope(HOSTILE):
            scope.output(x * 2.0, HOSTILE)
    view.wait()
    assert view.failure is None and view.svg is not None
    ET.fromstring(view.svg)


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_hostile_names_do_not_stop_the_html_view(tmp_path):
    graph = hostile_graph()
    path = tmp_path / "view.html"
    graph.to_html(str(path))
    page = path.read_text(encoding="utf-8")
    assert "\x1b" not in page and "\udce9" not in page
    from capviz.render.view import read_data

    names = set(strings(read_data(page)))
    assert HOSTILE in names  # the view's data reads back with the name unchanged
