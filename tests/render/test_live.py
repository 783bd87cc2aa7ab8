"""The live view, driven in-process (a real kernel runs it in tests/test_notebooks.py)."""

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
    root = ET.fromstring(view.image.value)
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
        assert view.renders == 1 and "error: seed" in view.image.value
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


def test_background_rendering_never_blocks_and_finishes_the_final_graph():
    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        view = live.attach(scope, force=True, background=True, interval=0.0)
        program(scope)
    view.wait()
    assert view.ops == 10 and view.violations == 1 and view.renders >= 1
    assert "capviz done" in view.status.value
    ET.fromstring(view.image.value)
    assert (view._worker is not None and not view._worker.is_alive()) or view._closed


def test_hostile_names_are_escaped_in_the_widget():
    name = "<script>alert(1)</script>"
    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        view = cv.live(scope, force=True, interval=0.0)
        x = scope.input(name, (2,))
        with cv.name_scope(name):
            y = x * 2
        scope.output(y, name)
    assert "<script" not in view.image.value and "<script" not in view.status.value
    ET.fromstring(view.image.value)


def test_refresh_shows_statistics_in_the_widget():
    with cv.CaptureDevice().capture_scope() as scope:
        view = cv.live(scope, force=True)
        scope.output(np.tanh(scope.input("x", (3,))), "y")
    scope.graph.compute_stats({"x": np.ones(3, np.float32)})
    view.refresh()
    assert "max 0.7616" in view.image.value
