"""The capviz pytest plugin (registered through the ``pytest11`` entry point).

Fixtures: ``capture_device`` (a fresh :class:`capviz.CaptureDevice`), ``capviz_graph`` (capture
a function in record mode and verify its graph), ``capviz_graphs`` (graphs captured so far in the
test), ``capviz_snapshot`` (``snapshot(graph, name)`` against baselines in
``__capviz_snapshots__`` beside the test file). Marker: ``@pytest.mark.capviz(no_violations=True)``
fails a test whose captures recorded a violation. Options: ``--capviz-artifacts DIR`` writes the
SVG and JSON of each graph of a failing test there, named by :func:`artifact_stem` (unique per
test id), and lists the paths in the report; ``--capviz-update-snapshots`` (re)writes snapshot
baselines. Disable with ``-p no:capviz``.

A failure's traceback shows the user's code, not capviz's: the fixtures and assertions set
``__tracebackhide__`` (as pytest's own helpers do), and for a capviz error raised inside capviz
(a ``ShapeError`` from deep in the recording trace) :func:`hide_capviz_frames` hides capviz's
frames, so the last frame shown is the user's line. ``--full-trace`` shows every frame.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import capviz
from capviz import testing
from capviz.capture import CaptureDevice, observe
from capviz.core.errors import CapvizError, RenderError
from capviz.graph import CapturedGraph

_GRAPHS = pytest.StashKey[list]()
PACKAGE_DIR = os.path.dirname(os.path.abspath(capviz.__file__)) + os.sep
USER_MODULES = frozenset({"capviz.models"})  # capviz's example models: the user's code


def _capviz_file(filename: str) -> bool:
    return os.path.abspath(filename).startswith(PACKAGE_DIR)


def capviz_error(excinfo: pytest.ExceptionInfo) -> bool:
    """Whether a failure is capviz telling the user something (so capviz's frames are noise):
    a :class:`CapvizError`, or an ``AssertionError`` raised in capviz (a graph assertion). Any
    other exception raised in capviz is a bug, and keeps its frames."""
    error = excinfo.value
    if isinstance(error, CapvizError):
        return True
    tb = excinfo.tb
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return isinstance(error, AssertionError) and tb is not None and \
        _capviz_file(tb.tb_frame.f_code.co_filename)


def hide_capviz_frames() -> None:
    """Give every loaded capviz module (its example models excepted) a ``__tracebackhide__``
    of :func:`capviz_error`, which pytest asks for each frame of a failure's traceback (in the
    frame's locals, then its globals): capviz's frames are left out of a capviz error's
    traceback, so it ends at the user's line. ``--full-trace`` shows them (pytest does not
    filter then)."""
    for name, module in list(sys.modules.items()):
        if (name == "capviz" or name.startswith("capviz.")) and name not in USER_MODULES and \
                isinstance(module, types.ModuleType):
            vars(module).setdefault("__tracebackhide__", capviz_error)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("capviz", "capviz graph debugging")
    group.addoption("--capviz-artifacts", metavar="DIR", default=None,
                    help="write the SVG and JSON of the graphs of failing tests to DIR")
    group.addoption("--capviz-update-snapshots", action="store_true", default=False,
                    help="(re)write capviz graph snapshot baselines")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "capviz(no_violations=False): capviz checks for the "
                                       "captures this test makes")
    testing.UPDATE_SNAPSHOTS = bool(config.getoption("--capviz-update-snapshots"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[Any]:
    graphs: list[CapturedGraph] = item.stash.setdefault(_GRAPHS, [])
    remove = observe(graphs.append)
    try:
        result = yield
    finally:
        remove()
    marker = item.get_closest_marker("capviz")
    if marker is not None and marker.kwargs.get("no_violations"):
        found = [(g, v) for g in graphs for v in g.violations]
        __tracebackhide__ = True
        if found:
            rows = "\n".join(f"  {v.level} {v.kind} at {v.location}: "
                             f"{v.message.splitlines()[0]}" for _, v in found)
            raise AssertionError(f"@pytest.mark.capviz(no_violations=True): the test's captures "
                                 f"recorded {len(found)} violation(s):\n{rows}")
    return result


class IncompleteGraphWarning(UserWarning):
    """A graph made by the ``capviz_graph`` fixture has error-level violations: it is not
    complete, and ``replay()`` refuses it unless ``allow_violations=True``."""


def artifact_stem(nodeid: str) -> str:
    """A file name stem for a test id, unique per id: the id made safe for file names and cut
    to 80 characters, then the first 10 hex digits of the id's SHA-256 (``a/b`` and ``a_b``, or
    two long ids that share a prefix, differ in the hash)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_.")[:80] or "test"
    return f"{safe}-{hashlib.sha256(nodeid.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


def write_artifacts(graphs: list[CapturedGraph], directory: str, stem: str) -> list[str]:
    """Write ``STEM-K.svg`` and ``STEM-K.json`` (with its constants) for each graph, where
    ``STEM`` is :func:`artifact_stem` of ``stem``; return the paths (or why one is missing)."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for k, graph in enumerate(graphs):
        base = os.path.join(directory, f"{artifact_stem(stem)}-{k}")
        try:
            graph.save(base + ".json")
            paths.append(base + ".json")
        except OSError as err:
            paths.append(f"(no JSON: {err})")
        try:
            graph.to_svg(base + ".svg")
            paths.append(base + ".svg")
        except RenderError as err:
            paths.append(f"(no SVG: {err})")
    return paths


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    if call.excinfo is not None:
        hide_capviz_frames()  # the modules the failure went through are loaded by now
    report = yield
    directory = item.config.getoption("--capviz-artifacts")
    if directory and report.when == "call" and report.failed:
        graphs = list(item.stash.get(_GRAPHS, []))
        error = call.excinfo.value if call.excinfo is not None else None
        extra = getattr(error, "graph", None) if isinstance(error, CapvizError) else None
        if isinstance(extra, CapturedGraph) and all(extra is not g for g in graphs):
            graphs.append(extra)
        if graphs:
            paths = write_artifacts(graphs, directory, item.nodeid)
            report.sections.append(("capviz artifacts", "\n".join(paths)))
    if report.when == "teardown":
        item.stash.get(_GRAPHS, []).clear()  # items live all session; their graphs need not
    return report


@pytest.fixture
def capture_device() -> CaptureDevice:
    """A fresh capture device for the test."""
    return CaptureDevice(name="test")


@pytest.fixture
def capviz_graph() -> Callable[..., CapturedGraph]:
    """``capviz_graph(fn, *specs, **options)``: capture ``fn`` in record mode (violations are
    collected, not raised), check the graph's structure with ``graph.verify()``, return it.

    A graph with error-level violations is not complete; the fixture says so with an
    :class:`IncompleteGraphWarning` (shown in pytest's warnings summary) listing them."""
    from capviz.capture_fn import capture

    def make(fn: Callable, *specs: Any, **options: Any) -> CapturedGraph:
        __tracebackhide__ = True
        options.setdefault("on_violation", "record")
        graph = capture(fn, *specs, **options)
        graph.verify()
        errors = [v for v in graph.violations if v.level == "error"]
        if errors:
            listed = "; ".join(f"{v.kind} at {v.location}" for v in errors[:5])
            more = f"; and {len(errors) - 5} more" if len(errors) > 5 else ""
            name = getattr(fn, "__qualname__", repr(fn))
            warnings.warn(IncompleteGraphWarning(
                f"capviz_graph({name}): the graph is not complete: {len(errors)} error-level "
                f"violation(s) ({listed}{more}); replay() refuses it unless "
                "allow_violations=True"), stacklevel=2)
        return graph

    return make


@pytest.fixture
def capviz_graphs(request: pytest.FixtureRequest) -> list[CapturedGraph]:
    """The graphs captured so far during this test (in order)."""
    return request.node.stash.setdefault(_GRAPHS, [])


@pytest.fixture
def capviz_snapshot(request: pytest.FixtureRequest) -> Callable[[CapturedGraph, str], None]:
    """``snapshot(graph, name)``: compare with ``__capviz_snapshots__/name.json`` beside the
    test file (written with ``--capviz-update-snapshots``)."""
    directory = os.path.join(os.path.dirname(str(request.node.path)), "__capviz_snapshots__")

    def snapshot(graph: CapturedGraph, name: str) -> None:
        __tracebackhide__ = True
        testing.assert_graph_snapshot(graph, name, directory=directory)

    return snapshot
