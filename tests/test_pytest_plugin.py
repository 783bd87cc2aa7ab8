"""The pytest plugin, run for real with pytester in a temporary directory."""

import json
import xml.etree.ElementTree as ET

import pytest

from capviz.pytest_plugin import artifact_stem

pytest_plugins = ["pytester"]

GRAPH_TESTS = '''
import numpy as np
import pytest
import capviz as cv


def test_fixture(capture_device, capviz_graphs, capviz_graph):
    with capture_device.capture_scope() as scope:
        scope.output(scope.input("x", (2,)) * 2)
    assert capture_device.name == "test" and capviz_graphs == [scope.graph]
    def seeds(x):
        np.random.seed(0)
        return x + 1
    g = capviz_graph(seeds, cv.spec(2))
    assert [v.kind for v in g.violations] == ["seed"] and capviz_graphs[-1] is g


@pytest.mark.capviz(no_violations=True)
def test_marked_with_violation():
    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        x = scope.input("x", (2,))
        np.random.seed(0)
        scope.output(x + 1)


@pytest.mark.capviz(no_violations=True)
def test_marked_clean():
    cv.capture(lambda x: x + 1, cv.spec(2))


def test_failing_with_a_graph():
    g = cv.capture(lambda x: np.tanh(x), cv.spec(3))
    assert len(g.ops) == 99


def test_capture_error():
    cv.capture(lambda x: np.unique(x), cv.spec(3))  # a data-dependent shape: refused
'''


def test_fixtures_marker_and_artifacts(pytester):
    pytester.makepyfile(test_graphs=GRAPH_TESTS)
    artifacts = pytester.path / "artifacts"
    result = pytester.runpytest("--capviz-artifacts", str(artifacts), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines([
        "*test_marked_with_violation*",
        "*no_violations=True*recorded 1 violation(s)*",
        "*error seed at *test_graphs.py:*np.random.seed(0)*",
    ])
    failing = artifact_stem("test_graphs.py::test_failing_with_a_graph")
    result.stdout.fnmatch_lines(["*capviz artifacts*", f"*{artifacts}*{failing}-0.svg"])
    svgs = sorted(p.name for p in artifacts.glob("*.svg"))
    assert svgs == sorted(f"{artifact_stem('test_graphs.py::' + name)}-0.svg" for name in
                          ("test_capture_error", "test_failing_with_a_graph",
                           "test_marked_with_violation"))
    assert svgs[0].startswith("test_graphs.py_test_capture_error-")  # readable, then the hash
    for svg in artifacts.glob("*.svg"):
        ET.fromstring(svg.read_text())
    doc = json.loads((artifacts / f"{artifact_stem('test_graphs.py::test_capture_error')}-0.json")
                     .read_text())
    assert doc["format"] == "capviz-graph" and not doc["complete"]


def test_capviz_graph_says_when_its_graph_is_not_complete(pytester):
    pytester.makepyfile(test_graphs=GRAPH_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "test_fixture")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "*IncompleteGraphWarning: capviz_graph(test_fixture.<locals>.seeds): the graph is not "
        "complete: 1 error-level violation(s) (seed at *test_graphs.py:11 in seeds); replay() "
        "refuses it unless allow_violations=True"])
    clean = pytester.runpytest("-p", "no:cacheprovider", "-k", "test_marked_clean")
    clean.assert_outcomes(passed=1)
    assert "IncompleteGraphWarning" not in clean.stdout.str()


COLLIDING_IDS = '''
import numpy as np
import pytest
import capviz as cv

LONG = "x" * 150


@pytest.mark.parametrize("k", [1, 2, 3, 4], ids=["a/b", "a_b", LONG + "1", LONG + "2"])
def test_ids(k):
    g = cv.capture(lambda x: x * np.array([k, k], np.float32), cv.spec(2))
    assert k == 0
'''


def test_artifact_names_are_unique_per_test_id(pytester):
    import capviz as cv

    pytester.makepyfile(test_ids=COLLIDING_IDS)
    artifacts = pytester.path / "artifacts"
    result = pytester.runpytest("--capviz-artifacts", str(artifacts), "-p", "no:cacheprovider")
    result.assert_outcomes(failed=4)
    graphs = sorted(artifacts.glob("*.json"))
    assert len(graphs) == 4 and len(list(artifacts.glob("*.svg"))) == 4
    assert all(len(p.name) < 120 for p in graphs)
    factors = set()
    for path in graphs:
        loaded = cv.load(str(path))
        factors.add(float(loaded.constant_values[loaded.constants[0].index][0]))
    assert factors == {1.0, 2.0, 3.0, 4.0}  # each test's own graph, none overwritten


def test_no_artifacts_without_the_option(pytester):
    pytester.makepyfile(test_graphs=GRAPH_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=3)
    assert "capviz artifacts" not in result.stdout.str()


SNAPSHOT_TEST = '''
import numpy as np
import capviz as cv


def test_snap(capviz_snapshot):
    capviz_snapshot(cv.capture(lambda x: np.exp(x) {op} 1.0, cv.spec(3)), "model")
'''


def test_snapshots_create_compare_update(pytester):
    pytester.makepyfile(test_snap=SNAPSHOT_TEST.format(op="+"))
    missing = pytester.runpytest("-p", "no:cacheprovider")
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*no snapshot baseline*--capviz-update-snapshots*"])
    pytester.runpytest("--capviz-update-snapshots", "-p", "no:cacheprovider").assert_outcomes(
        passed=1)
    baseline = pytester.path / "__capviz_snapshots__" / "model.json"
    assert "add" in baseline.read_text()
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    pytester.makepyfile(test_snap=SNAPSHOT_TEST.format(op="*"))
    changed = pytester.runpytest("-p", "no:cacheprovider")
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(["*graph differs from snapshot*", "*-%2 op add*",
                                  "*+%2 op multiply*"])
    pytester.runpytest("--capviz-update-snapshots", "-p", "no:cacheprovider").assert_outcomes(
        passed=1)
    assert "multiply" in baseline.read_text()


def test_plugin_can_be_disabled(pytester):
    pytester.makepyfile(test_x='''
def test_uses_fixture(capture_device):
    pass
''')
    result = pytester.runpytest("-p", "no:capviz", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'capture_device' not found*"])
    bad = pytester.runpytest("-p", "no:capviz", "--capviz-artifacts", "x")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR


def test_assertions():
    import numpy as np

    import capviz as cv
    from capviz import testing

    g = cv.capture(lambda x: np.tanh(x) * 2, cv.spec(3))
    testing.assert_no_violations(g)
    testing.assert_replay_matches(g, lambda x: np.tanh(x) * 2, {"x": np.ones(3, np.float32)})
    with pytest.raises(AssertionError, match="output 'out': replay differs from eager fn"):
        testing.assert_replay_matches(g, lambda x: np.tanh(x) * 3,
                                      {"x": np.ones(3, np.float32)})
    other = cv.capture(lambda x: np.tanh(x) + 2, cv.spec(3))
    with pytest.raises(AssertionError, match=r"(?s)graphs differ.*-%2 op multiply.*\+%2 op add"):
        testing.assert_graph_equal(other, g)
    testing.assert_graph_equal(g, cv.capture(lambda x: np.tanh(x) * 2, cv.spec(3)))
    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        x = scope.input("x", ())
        float(x)
        scope.output(x)
    with pytest.raises(AssertionError, match=r"1 violation\(s\):\n  error data_read at "):
        testing.assert_no_violations(scope.graph)


HIDDEN_FRAMES_TEST = '''
import numpy as np
import capviz as cv

W = np.ones((3, 2), np.float32)


def model(x):
    return x @ W  # MODEL LINE


def test_shape_error(capviz_graph):
    capviz_graph(model, cv.spec((2, 4)))


def test_snapshot_differs(capviz_snapshot):
    graph = cv.capture(lambda x: x * 2, cv.spec(3))
    capviz_snapshot(graph, "missing_baseline")  # SNAPSHOT LINE


def test_internal_bug_keeps_its_frames():
    from capviz import testing
    testing.structure(None)  # an AttributeError inside capviz: a bug shows where it is
'''


def test_failure_tracebacks_show_the_users_line_not_capvizs_frames(pytester):
    pytester.makepyfile(test_hidden=HIDDEN_FRAMES_TEST)
    artifacts = pytester.path / "artifacts"
    result = pytester.runpytest("--capviz-artifacts", str(artifacts), "-p", "no:cacheprovider",
                                "-k", "shape_error or snapshot_differs")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "return x @ W  # MODEL LINE" in out and 'capviz_snapshot(graph, "missing_baseline")' \
        in out  # the user's lines
    for hidden in ("pytest_plugin.py", "testing.py:", "recorder.py", "trace/tensor.py",
                   "ops/table.py"):
        assert hidden not in out, (hidden, out)
    assert "ShapeError" in out and "no snapshot baseline" in out
    assert "capviz artifacts" in out and str(artifacts) in out  # the graphs' paths
    assert list(artifacts.glob("*shape_error*.json")) and list(artifacts.glob("*shape_error*.svg"))


def test_full_trace_and_capviz_bugs_keep_capvizs_frames(pytester):
    pytester.makepyfile(test_hidden=HIDDEN_FRAMES_TEST)
    bug = pytester.runpytest("-p", "no:cacheprovider", "-k", "internal_bug")
    bug.assert_outcomes(failed=1)
    assert "AttributeError" in bug.stdout.str() and "capviz/testing.py:" in bug.stdout.str()
    full = pytester.runpytest("-p", "no:cacheprovider", "-k", "shape_error", "--full-trace")
    full.assert_outcomes(failed=1)
    assert "recorder.py" in full.stdout.str()
