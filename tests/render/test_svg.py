"""The renderer: fallback order, timeouts, errors."""

import os
import stat
import sys
import xml.etree.ElementTree as ET

import pytest

import capviz as cv
from capviz.render import svg as svgmod


def script(path, body):
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture
def graph():
    return cv.capture(lambda x: x * 2, cv.spec(2))


def test_no_system_dot_falls_back_to_the_pip_renderer(graph, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # hides any system dot
    exe = svgmod.find_renderer()
    assert os.path.basename(exe).startswith("graphviz-pure")
    svg = graph.to_svg(str(tmp_path / "g.svg"))
    ET.fromstring(svg)
    assert (tmp_path / "g.svg").read_text() == svg


def test_system_dot_on_path_is_preferred(graph, tmp_path, monkeypatch):
    pure = svgmod._pure_binary()
    log = tmp_path / "used"
    script(tmp_path / "dot", f"import subprocess, sys\nopen({str(log)!r}, 'w').write('x')\n"
                             f"sys.exit(subprocess.call([{pure!r}] + sys.argv[1:]))\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    ET.fromstring(graph.to_svg())
    assert log.exists()


def test_broken_renderer_raises_render_error_with_stderr(graph, tmp_path):
    bad = script(tmp_path / "bad", "import sys\nsys.stderr.write('syntax error in line 1')\n"
                                   "sys.exit(3)\n")
    with pytest.raises(cv.RenderError, match=r"failed \(exit 3\): syntax error in line 1; hint"):
        graph.to_svg(renderer=bad)


def test_configured_renderer(graph, tmp_path):
    bad = script(tmp_path / "bad", "import sys\nsys.exit(1)\n")
    svgmod.configure(bad)
    try:
        with pytest.raises(cv.RenderError, match="exit 1"):
            graph.to_svg()
    finally:
        svgmod.configure(None)
    ET.fromstring(graph.to_svg())


def test_missing_renderer(graph):
    with pytest.raises(cv.RenderError, match="does not exist"):
        graph.to_svg(renderer="/no/such/dot")


def test_slow_layout_is_retried_with_nslimit_then_fails(graph, tmp_path):
    log = tmp_path / "calls"
    slow = script(tmp_path / "slow", f"import sys, time\nopen({str(log)!r}, 'a').write("
                                     "' '.join(sys.argv[1:]) + '\\n')\ntime.sleep(30)\n")
    with pytest.raises(cv.RenderError, match="did not finish in 1 s, even with -Gnslimit=2"):
        graph.to_svg(renderer=slow, timeout=1)
    calls = log.read_text().splitlines()
    assert calls == ["-Tsvg", "-Tsvg -Gnslimit=2 -Gnslimit1=2"]
