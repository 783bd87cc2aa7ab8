"""The live view, driven in-process (a real kernel runs it in tests/test_notebooks.py)."""

import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import capviz as cv
from capviz.render import live
from capviz.testing import assert_graph_equal


def program(scope):
    x = scope.input("x", (3,))
    for _ in range(5):
        x = np.tanh(x) * 2.0
    np.random.seed(0)
    scope.output(x, "y")


def test_live_view_state_after_a_capture_with_a_violation():
    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        view = live.attach(scope, force=True, interval=0.0)
        program(scope)
    assert view.ops == 10 and view.violations == 1
    assert view.renders >= 2  # while recording, and the final graph
    assert "capviz done: 10 ops, 1 violations" in view.status.value
    assert "#dc2626" in view.status.value
    root = ET.fromstring(view.svg)
    violation = scope.graph.violations[0].order
    elem = next(g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id") ==
                f"n{violation}")
    assert any(e.get("stroke") == "#dc2626" for e in elem.iter())
    assert view.widget.children == (view.status, view.image)


def test_violation_renders_at_once_even_when_throttled():
    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        view = live.attach(scope, force=True, interval=3600)
        x = scope.input("x", (3,))
        x = x + 1
        assert view.renders == 0  # throttled: no render for ops yet
        np.random.seed(1)
        assert view.renders == 1 and "error: seed" in view.svg
        scope.output(x)


def test_live_view_does_not_change_the_graph():
    with cv.CaptureDevice().capture_scope(on_violation="record") as plain:
        program(plain)
    with cv.CaptureDevice().capture_scope(on_violation="record") as watched:
        live.attach(watched, force=True, interval=0.0)
        program(watched)
    assert_graph_equal(watched.graph, plain.graph)


def test_failed_capture_shows_failed_state():
    with pytest.raises(cv.SeedViolationError):
        with cv.CaptureDevice().capture_scope() as scope:
            view = live.attach(scope, force=True, interval=0.0)
            scope.input("x", (1,))
            np.random.seed(2)
    assert "failed: SeedViolationError" in view.status.value


def test_outside_a_notebook_live_is_a_no_op_that_warns_once(monkeypatch):
    monkeypatch.setattr(live, "_warned", False)
    with pytest.warns(RuntimeWarning, match="live view disabled: not running in a Jupyter"):
        with cv.CaptureDevice().capture_scope(live=True) as scope:
            scope.output(scope.input("x", (1,)) + 1)
    assert scope.view is None and scope.recorder.listener is None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with cv.CaptureDevice().capture_scope(live=True) as again:
            again.output(again.input("x", (1,)) + 1)


@pytest.mark.parametrize("form", ["scope", "function"])
def test_the_live_warning_points_at_the_users_line(monkeypatch, form):
    monkeypatch.setattr(live, "_warned", False)
    with pytest.warns(RuntimeWarning, match="live view disabled") as record:
        if form == "scope":
            line = sys._getframe().f_lineno + 1
            with cv.CaptureDevice().capture_scope(live=True) as scope:
                scope.output(scope.input("x", (1,)) + 1)
        else:
            line = sys._getframe().f_lineno + 1
            cv.capture(lambda x: x + 1, cv.spec((1,), "float32"), live=True)
    assert (record[0].filename, record[0].lineno) == (__file__, line)


def test_background_rendering_never_blocks_and_finishes_the_final_graph():
    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        view = live.attach(scope, force=True, background=True, interval=0.0)
        program(scope)
    view.wait()
    assert view.ops == 10 and view.violations == 1 and view.renders >= 1
    assert "capviz done" in view.status.value
    ET.fromstring(view.svg)
    assert (view._worker is not None and not view._worker.is_alive()) or view._closed


def test_hostile_names_are_escaped_in_the_widget():
    name = "<script>alert(1)</script>"
    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        view = cv.live(scope, force=True, interval=0.0)
        x = scope.input(name, (2,))
        with cv.name_scope(name):
            y = x * 2
        scope.output(y, name)
    assert "<script" not in view.svg and "<script" not in view.status.value
    ET.fromstring(view.svg)


def test_refresh_shows_statistics_in_the_widget():
    with cv.CaptureDevice().capture_scope() as scope:
        view = cv.live(scope, force=True)
        scope.output(np.tanh(scope.input("x", (3,))), "y")
    scope.graph.compute_stats({"x": np.ones(3, np.float32)})
    view.refresh()
    assert "max 0.7616" in view.svg


def test_a_render_failure_on_the_worker_reaches_the_user_at_once():
    with pytest.raises(cv.RenderError, match="the live view stopped: rendering the graph failed "
                                             "with TypeError") as info:
        with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
            # an option the renderer does not take: the worker's render raises TypeError
            view = live.attach(scope, force=True, background=True, interval=0.0, colour=1)
            x = scope.input("x", (3,))
            x = x + 1  # hands a snapshot to the worker, whose render fails
            view.wait()  # returns with the failure, instead of waiting 60 s for a dead worker
    assert isinstance(info.value.__cause__, TypeError)
    assert info.value.graph is scope.graph and not scope.graph.complete
    assert view.failure is info.value.__cause__
    assert not view._worker.is_alive() or view._closed


def test_a_render_failure_raises_at_the_next_recorded_op():
    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        view = live.attach(scope, force=True, interval=0.0, colour=1)  # renders in-thread
        with pytest.raises(cv.RenderError, match="failed with TypeError") as info:
            scope.input("x", (3,))  # recorded, then its render fails
        y = scope.input("z", (3,)) * 3.0  # reported once: the stopped view takes no part
        scope.output(y, "y")
    assert isinstance(info.value.__cause__, TypeError)
    assert scope.graph.complete and view.renders == 0
    assert [n.name for n in scope.graph.nodes if n.kind == "input"] == ["x", "z"]


def test_a_render_failure_of_the_final_graph_raises_at_scope_exit():
    with pytest.raises(cv.RenderError, match="failed with TypeError"):
        with cv.CaptureDevice().capture_scope() as scope:
            live.attach(scope, force=True, interval=3600, colour=1)  # no render before exit
            scope.output(scope.input("x", (3,)) + 1, "y")
    assert scope.graph.complete  # the capture itself succeeded
    assert not cv.is_capturing()


def test_a_source_file_whose_name_is_not_utf8_renders(tmp_path):
    import importlib.util
    import os
    import xml.etree.ElementTree as ET

    path = os.path.join(os.fsencode(tmp_path), b"caf\xe9\x1b[31m.py")
    with open(path, "w") as f:
        f.write("import numpy as np\n\ndef model(x):\n    return np.tanh(x) * 2.0\n")
    name = os.fsdecode(path)  # holds the lone surrogate '\udce9'
    spec = importlib.util.spec_from_file_location("not_utf8_model", name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with cv.CaptureDevice().capture_scope() as scope:
        view = live.attach(scope, force=True, background=True, interval=0.0)
        scope.output(module.model(scope.input("x", (3,))), "y")
    view.wait()
    assert view.failure is None
    assert scope.graph.ops[0].source[0] == name
    svg = view.svg
    ET.fromstring(svg)
    assert "caf\\udce9\\x1b[31m.py" in svg and "\x1b" not in svg


def test_the_status_line_counts_what_the_drawn_snapshot_holds_and_the_final_state_folds():
    import re

    from capviz.render.view import read_data
    from capviz.render.view_data import view_data

    def block(h):
        return np.tanh(h * 2.0) + h

    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        view = live.attach(scope, force=True, interval=0.0)
        h = scope.input("x", (3,), "float32")
        for _ in range(6):
            h = block(h)
        scope.output(h, "y")
    # a snapshot drawn while the capture went on: the widget's counter says what the view
    # shows (the capture had recorded more by the time the render finished)
    part = live.snapshot(scope.graph)
    part.nodes = scope.graph.nodes[:7]
    part.complete = False
    view._render(part, "recording")
    ops = int(re.search(r"(\d+) ops", view.status.value).group(1))
    drawn = sum(k == 2 for k in read_data(view.html)["kind"])
    assert ops == drawn == 6 < view.ops
    final = view._final_bundle(scope.graph, "done")
    assert set(final) == {"text/html", "text/plain"}
    data = read_data(final["text/html"])
    static = view_data(scope.graph, title="capviz done")
    assert not data["live"] and data["scopes"] == static["scopes"]
    titles = [data["strings"][k] for k in data["scopes"]["name"]]
    assert "block \u00d7 6" in titles  # folded as a display of the graph is, not left open
