"""The capviz command, run as real subprocesses."""

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

MODEL = '''
import numpy as np

W = np.ones((4, 3), np.float32)


def mlp(x):
    return np.tanh(x @ W)


def seeds(x):
    np.random.seed(0)  # SEED LINE
    return x * 2


def two(x, y):
    return x + y
'''


def capviz(*args, cwd=None):
    exe = shutil.which("capviz", path=os.path.dirname(sys.executable))
    cmd = [exe] if exe else [sys.executable, "-m", "capviz"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, cwd=cwd,
                          timeout=120)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path


def test_demo(tmp_path):
    out = capviz("demo", "--out", "demo.svg", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "identical to eager NumPy" in out.stdout
    assert "wrote      demo.svg" in out.stdout
    root = ET.fromstring((tmp_path / "demo.svg").read_text())
    assert root.tag.endswith("svg")


def test_python_dash_m(tmp_path):
    out = subprocess.run([sys.executable, "-m", "capviz", "demo", "--out", "d.svg"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0 and (tmp_path / "d.svg").exists()


@pytest.mark.parametrize("fmt,check", [
    ("svg", lambda text: ET.fromstring(text)),
    ("dot", lambda text: text.startswith("digraph capviz {")),
    ("json", lambda text: json.loads(text)["format"] == "capviz-graph"),
])
def test_render_formats(project, fmt, check):
    out = capviz("render", "model:mlp", "--input", "x=2,4:float32", "--format", fmt,
                 "-o", f"g.{fmt}", cwd=project)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"wrote g.{fmt} (2 ops, 0 violations)"
    assert check((project / f"g.{fmt}").read_text())


def test_render_violation_exits_1_with_the_line(project):
    out = capviz("render", "model:seeds", "-i", "x=3:float32", "-o", "s.svg", cwd=project)
    line = MODEL.splitlines().index("    np.random.seed(0)  # SEED LINE") + 1
    assert out.returncode == 1
    assert f"error: seed at {project / 'model.py'}:{line} in seeds: seeding is not supported " \
           "during graph capture" in out.stderr
    allowed = capviz("render", "model:seeds", "-i", "x=3:float32", "--allow-violations",
                     cwd=project)
    assert allowed.returncode == 0


@pytest.mark.parametrize("args,message", [
    (["render", "nosuchmodule:f", "-i", "x=2:float32"], "cannot import module 'nosuchmodule'"),
    (["render", "model:nope", "-i", "x=2:float32"], "module 'model' has no attribute 'nope'"),
    (["render", "model", "-i", "x=2:float32"], "expected MODULE:FUNCTION"),
    (["render", "model:mlp", "-i", "x=two:float32"], "bad --input 'x=two:float32'"),
    (["render", "model:mlp", "-i", "x=2,4:floaty"], "bad --input 'x=2,4:floaty'"),
    (["render", "model:mlp", "-i", "2,4"], "expected NAME=SHAPE:DTYPE"),
    (["show", "missing.json"], "no graph file at missing.json"),
])
def test_user_mistakes_are_one_line_exit_2(project, args, message):
    out = capviz(*args, cwd=project)
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_usage_error_from_argparse(project):
    out = capviz("render", cwd=project)
    assert out.returncode == 2 and "usage: capviz render" in out.stderr


def test_capture_failure_exits_1(project):
    out = capviz("render", "model:two", "-i", "x=2:float32", "-i", "y=3:float32", cwd=project)
    assert out.returncode == 1
    assert "capture failed: ShapeError: add((2,), (3,))" in out.stderr


def test_show_and_check(project):
    capviz("render", "model:mlp", "-i", "x=2,4:float32", "--format", "json", "-o", "g.json",
           cwd=project)
    shown = capviz("show", "g.json", cwd=project)
    assert shown.returncode == 0 and shown.stdout.strip() == "wrote g.svg"
    ET.fromstring((project / "g.svg").read_text())
    ok = capviz("check", "g.json", cwd=project)
    assert ok.returncode == 0
    assert ok.stdout.strip() == "g.json: complete graph, 1 inputs, 2 ops, 1 outputs, 0 violations"
    capviz("render", "model:seeds", "-i", "x=3:float32", "--format", "json", "-o", "s.json",
           "--allow-violations", cwd=project)
    bad = capviz("check", "s.json", cwd=project)
    assert bad.returncode == 1 and "error: seed at" in bad.stderr
    (project / "broken.json").write_text("{")
    broken = capviz("check", "broken.json", cwd=project)
    assert broken.returncode == 2 and "is not valid JSON" in broken.stderr
