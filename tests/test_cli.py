"""The capviz command, run as real subprocesses."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
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


def boom(x):
    y = x * 2
    raise RuntimeError("boom")  # BOOM LINE


def embed(tokens):
    return W[tokens]  # EMBED LINE
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
    ("html", lambda text: text.startswith("<!DOCTYPE html>") and 'class="capviz-view' in text
     and "window.CapvizView" in text),
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
    assert f"error: seed at {project / 'model.py'}:{line} in seeds:\n  seeding is not " \
           "supported during graph capture" in out.stderr
    assert "\n  Fixes:\n    1. Seed the underlying device" in out.stderr  # the whole message
    assert "\n    3. Create random tensors before capture" in out.stderr
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


def test_render_says_a_graph_with_error_violations_is_not_complete(project):
    out = capviz("render", "model:seeds", "-i", "x=3:float32", "-o", "s.svg",
                 "--allow-violations", cwd=project)
    assert out.returncode == 0
    assert out.stdout.splitlines() == [
        "wrote s.svg (1 ops, 1 violations)",
        "not complete: 1 error-level violation(s), so a replay would not compute what the code "
        "did (replay refuses it unless allow_violations=True)"]
    capviz("render", "model:seeds", "-i", "x=3:float32", "--format", "json", "-o", "s.json",
           "--allow-violations", cwd=project)
    check = capviz("check", "s.json", cwd=project)
    assert check.returncode == 1
    assert check.stdout.strip() == ("s.json: graph not complete (1 error-level violations), "
                                    "1 inputs, 1 ops, 1 outputs, 1 violations")


def assert_one_line_usage_error(out, message):
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert message in out.stderr, out.stderr


@pytest.mark.parametrize("command", ["show", "check"])
def test_a_directory_as_graph_is_a_usage_error(project, command):
    (project / "graphs").mkdir()
    out = capviz(command, "graphs", cwd=project)
    assert_one_line_usage_error(out, "cannot read graph file graphs: Is a directory")


@pytest.mark.parametrize("fmt", ["svg", "dot", "json"])
def test_output_into_a_missing_folder_is_a_usage_error(project, fmt):
    out = capviz("render", "model:mlp", "-i", "x=2,4:float32", "--format", fmt,
                 "-o", f"nowhere/g.{fmt}", cwd=project)
    assert_one_line_usage_error(out, f"cannot write nowhere/g.{fmt}: the folder nowhere does "
                                     "not exist")
    assert not (project / "nowhere").exists()


def test_show_into_a_missing_folder_is_a_usage_error(project):
    capviz("render", "model:mlp", "-i", "x=2,4:float32", "--format", "json", "-o", "g.json",
           cwd=project)
    out = capviz("show", "g.json", "-o", "nowhere/g.svg", cwd=project)
    assert_one_line_usage_error(out, "cannot write nowhere/g.svg: the folder nowhere does not "
                                     "exist")


def test_output_that_is_a_directory_is_a_usage_error(project):
    (project / "out.svg").mkdir()
    out = capviz("render", "model:mlp", "-i", "x=2,4:float32", "-o", "out.svg", cwd=project)
    assert_one_line_usage_error(out, "cannot write out.svg: Is a directory")


def test_json_output_never_overwrites_an_unrelated_constants_file(project):
    (project / "run.json.npz").write_bytes(b"somebody else's data")
    out = capviz("render", "model:mlp", "-i", "x=2,4:float32", "--format", "json",
                 "-o", "run.json", cwd=project)
    assert_one_line_usage_error(out, "cannot write run.json: refusing to overwrite")
    assert (project / "run.json.npz").read_bytes() == b"somebody else's data"


def test_relative_module_target_is_a_usage_error(project):
    out = capviz("render", ".model:mlp", "-i", "x=2,4:float32", cwd=project)
    assert_one_line_usage_error(out, "bad target '.model:mlp': a relative module name has no "
                                     "package")


def test_module_that_raises_on_import_is_a_usage_error(project):
    (project / "broken.py").write_text("x = 1 / 0\n")
    out = capviz("render", "broken:f", "-i", "x=2:float32", cwd=project)
    assert_one_line_usage_error(out, "cannot import module 'broken': it raised "
                                     "ZeroDivisionError: division by zero")


def test_names_that_are_not_valid_utf8_are_printed_escaped(project):
    """An argument of undecodable bytes reaches Python as lone surrogates (surrogateescape);
    it is printed escaped even where stdout is strict UTF-8."""
    exe = shutil.which("capviz", path=os.path.dirname(sys.executable))
    cmd = [exe] if exe else [sys.executable, "-m", "capviz"]
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    out = subprocess.run(cmd + ["render", "model:mlp", "-i", "x=2,4:float32", "--format", "json",
                                "-o", b"g\xff.json"], capture_output=True, cwd=project,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode().strip() == "wrote g\\udcff.json (2 ops, 0 violations)"
    assert (project / os.fsdecode(b"g\xff.json")).exists()
    bad = subprocess.run(cmd + ["render", b"mod\xff:f", "-i", "x=2:float32"],
                         capture_output=True, cwd=project, timeout=120, env=env)
    assert bad.returncode == 2 and b"Traceback" not in bad.stderr
    assert bad.stderr.decode().strip() == ("capviz render: error: cannot import module "
                                           "'mod\\udcff': No module named 'mod\\udcff'")


HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J\x1b[31m\ud800\u202e\nline"


def test_text_from_graph_files_cannot_drive_the_terminal(project):
    capviz("render", "model:seeds", "-i", "x=3:float32", "--format", "json", "-o", "s.json",
           "--allow-violations", cwd=project)
    doc = json.loads((project / "s.json").read_text())
    for node in doc["nodes"]:
        if node["source"] is not None:
            node["source"]["file"] = HOSTILE + ".py"
        if node["kind"] == "violation":
            node["params"]["message"] = HOSTILE + " message"
    (project / "s.json").write_text(json.dumps(doc))
    out = subprocess.run([sys.executable, "-m", "capviz", "check", "s.json"],
                         capture_output=True, cwd=project, timeout=120)
    assert out.returncode == 1
    err = out.stderr.decode("utf-8")
    for bad in ("\x1b", "\x07", "\u202e", "\n" + "line"):
        assert bad not in err, err
    # a message prints whole, each of its lines indented: none can pass for a line of output
    assert err.strip().splitlines() == ["error: seed at evil\\ud800\\u202e\\nline.py:12 in seeds:",
                                        "  evil\\ud800\\u202e", "  line message"]


def test_a_graph_with_a_lone_surrogate_name_shows_and_checks(project):
    (project / "odd.py").write_text(
        "import numpy as np\nimport capviz as cv\n\n\ndef f(x):\n"
        "    with cv.name_scope('bad\\udcff\\x1b[31m'):\n        return np.tanh(x)\n")
    made = capviz("render", "odd:f", "-i", "x=2:float32", "--format", "json", "-o", "o.json",
                  cwd=project)
    assert made.returncode == 0, made.stderr
    shown = capviz("show", "o.json", cwd=project)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    ET.fromstring((project / "o.svg").read_text())
    checked = capviz("check", "o.json", cwd=project)
    assert checked.returncode == 0, checked.stderr


def test_inputs_that_do_not_fit_the_function_are_a_usage_error(project):
    missing = capviz("render", "model:mlp", cwd=project)
    assert missing.returncode == 2, missing.stderr
    assert "Traceback" not in missing.stderr
    assert "model:mlp(x) cannot take the inputs given with -i (none)" in missing.stderr
    extra = capviz("render", "model:mlp", "-i", "x=2,4:float32", "-i", "y=3:float32",
                   cwd=project)
    assert extra.returncode == 2 and "Traceback" not in extra.stderr
    assert "(x, y)" in extra.stderr and "unexpected keyword argument 'y'" in extra.stderr


def test_an_exception_in_the_users_function_names_its_line_and_keeps_the_graph(project):
    line = MODEL.splitlines().index('    raise RuntimeError("boom")  # BOOM LINE') + 1
    out = capviz("render", "model:boom", "-i", "x=3:float32", "-o", "partial.svg", cwd=project)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert f"capture failed: RuntimeError: boom (at {project / 'model.py'}:{line} in boom)" \
        in out.stderr
    assert "wrote partial graph to partial.svg" in out.stderr
    root = ET.fromstring((project / "partial.svg").read_text())
    assert "multiply" in ET.tostring(root, encoding="unicode")


@pytest.mark.parametrize("name,fmt", [("g.html", "html"), ("g.dot", "dot"), ("g.json", "json"),
                                      ("g.svg", "svg")])
def test_the_output_suffix_picks_the_format(project, name, fmt):
    out = capviz("render", "model:mlp", "-i", "x=2,4:float32", "-o", name, cwd=project)
    assert out.returncode == 0, out.stderr
    text = (project / name).read_text()
    first = {"html": "<!DOCTYPE html>", "dot": "digraph", "json": "{", "svg": "<?xml"}[fmt]
    assert text.lstrip().startswith(first), text[:80]


def test_an_unknown_output_suffix_is_a_usage_error(project):
    out = capviz("render", "model:mlp", "-i", "x=2,4:float32", "-o", "g.png", cwd=project)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "cannot tell the format of 'g.png'" in out.stderr


def test_demo_into_a_closed_pipe_ends_quietly(tmp_path):
    exe = shutil.which("capviz", path=os.path.dirname(sys.executable))
    cmd = [exe] if exe else [sys.executable, "-m", "capviz"]
    proc = subprocess.Popen(cmd + ["demo", "--out", "d.svg"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()  # the reader leaves, as `capviz demo | head -1` does
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


SCOPED = '''
import capviz as cv


def blocks(x):
    for i in range(2):
        with cv.name_scope(f"block{i}"):
            x = x * 2
    return x
'''


def test_collapse_names_scopes_the_graph_has(project):
    (project / "scoped.py").write_text(SCOPED)
    ok = capviz("render", "scoped:blocks", "-i", "x=3:float32", "--collapse", "block1",
                "-o", "g.svg", cwd=project)
    assert ok.returncode == 0, ok.stderr
    root = ET.fromstring((project / "g.svg").read_text())
    assert any("block1" in "".join(e.itertext()) for e in root.iter())
    typo = capviz("render", "scoped:blocks", "-i", "x=3:float32", "--collapse", "blok1",
                  cwd=project)
    assert_one_line_usage_error(typo, "--collapse names scope 'blok1', which the graph does not "
                                      "have; its top-level scopes: block0, block1")


@pytest.mark.parametrize("value, message", [
    ("0", "a node budget must be at least 1, got '0'"),
    ("-3", "a node budget must be at least 1, got '-3'"),
    (",,", "expected a node budget or scope paths, got ',,'"),
])
def test_collapse_refuses_nonsense(project, value, message):
    out = capviz("render", "model:mlp", "-i", "x=2,4:float32", f"--collapse={value}",
                 cwd=project)
    assert out.returncode == 2
    assert message in out.stderr


def test_render_captures_the_function_itself_with_its_names_and_lines(project):
    import capviz as cv

    out = capviz("render", "model:two", "--input", "y=3:int8", "--input", "x=3:float32",
                 "-o", "g.json", cwd=project)
    assert out.returncode == 0, out.stderr
    graph = cv.load(str(project / "g.json"))
    inputs = [n for n in graph.nodes if n.kind == "input"]
    assert [n.name for n in inputs] == ["x", "y"]  # the parameters, in their order
    line = MODEL.splitlines().index("def two(x, y):") + 1
    assert {n.location for n in inputs} == {f"{project / 'model.py'}:{line} in two"}
    assert "graph(x, y) -> (out)" in str(graph) and "capviz:" not in str(graph)


def test_render_prints_a_data_read_with_its_one_fix(project):
    out = capviz("render", "model:embed", "-i", "tokens=2:int64", "-o", "e.svg", cwd=project)
    line = MODEL.splitlines().index("    return W[tokens]  # EMBED LINE") + 1
    assert out.returncode == 1
    assert out.stderr.splitlines() == [
        f"error: data_read at {project / 'model.py'}:{line} in embed:",
        f"  `W[tokens]` at {project / 'model.py'}:{line} in embed: an ndarray indexed by the "
        "tensor `tokens` (np.asarray() of %0 (tokens, int64[2])).",
        "  capviz cannot record it: NumPy converts the index with np.asarray, which no hook "
        "reaches, and a captured tensor has no value until the graph is replayed.",
        "  Fix: record the array first: cv.constant(W)[tokens] (outside a capture cv.constant "
        "returns the array itself).",
    ]


@pytest.mark.parametrize("command", ["show", "render"])
@pytest.mark.parametrize("suffix,first", [(".html", "<!DOCTYPE html>"), (".svg", "<?xml"),
                                          (".json", "{")])
def test_show_and_render_write_the_format_of_the_suffix(project, command, suffix, first):
    capviz("render", "model:mlp", "-i", "x=2,4:float32", "-o", "saved.json", cwd=project)
    target = ["saved.json"] if command == "show" else ["model:mlp", "-i", "x=2,4:float32"]
    out = capviz(command, *target, "-o", f"out{suffix}", cwd=project)
    assert out.returncode == 0, out.stderr
    assert (project / f"out{suffix}").read_text().lstrip().startswith(first)
    named = capviz(command, *target, "--format", suffix[1:], "-o", f"named{suffix}",
                   cwd=project)
    assert named.returncode == 0, named.stderr
    assert (project / f"named{suffix}").read_text().lstrip().startswith(first)


def test_show_format_without_output_writes_beside_the_graph(project):
    capviz("render", "model:mlp", "-i", "x=2,4:float32", "-o", "saved.json", cwd=project)
    out = capviz("show", "saved.json", "--format", "html", cwd=project)
    assert out.returncode == 0 and out.stdout.strip() == "wrote saved.html"
    assert (project / "saved.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("command", ["show", "render"])
def test_a_suffix_that_does_not_match_the_format_is_a_usage_error(project, command):
    capviz("render", "model:mlp", "-i", "x=2,4:float32", "-o", "saved.json", cwd=project)
    target = ["saved.json"] if command == "show" else ["model:mlp", "-i", "x=2,4:float32"]
    out = capviz(command, *target, "-o", "g.html", "--format", "svg", cwd=project)
    assert_one_line_usage_error(out, f"capviz {command}: error: -o g.html names an HTML file "
                                     "but --format is svg; write -o g.svg, or drop --format")
    assert not (project / "g.html").exists()


def test_render_of_a_file_path_works(project):
    (project / "src").mkdir()
    (project / "src" / "net.py").write_text(MODEL)
    out = capviz("render", "model.py:mlp", "-i", "x=2,4:float32", "-o", "a.svg", cwd=project)
    assert out.returncode == 0, out.stderr
    nested = capviz("render", "src/net.py:two", "-i", "x=3", "-i", "y=3", "-o", "b.json",
                    cwd=project)
    assert nested.returncode == 0, nested.stderr
    assert json.loads((project / "b.json").read_text())["format"] == "capviz-graph"


def test_render_of_a_missing_file_says_how(project):
    out = capviz("render", "nomodel.py:mlp", "-i", "x=2,4:float32", cwd=project)
    assert_one_line_usage_error(out, "bad target 'nomodel.py:mlp': there is no file "
                                     "nomodel.py; give an existing FILE.py:FUNCTION, or the "
                                     "module's dotted name: nomodel:mlp")


def test_a_bad_flag_of_render_prints_renders_usage(project):
    out = capviz("render", "model:mlp", "-i", "x=2,4:float32", "--bogus", cwd=project)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("usage: capviz render ")
    assert "{demo,render,show,check}" not in out.stderr
    assert out.stderr.splitlines()[-1] == "capviz render: error: unrecognized arguments: --bogus"


@pytest.mark.parametrize("command,name,message", [
    ("show", "saved.json.npz", "saved.json.npz is the constants file (a zip archive) that "
                               "graph.save writes beside the graph; pass the graph file itself: "
                               "saved.json"),
    ("check", "other.json.npz", "other.json.npz is the constants file (a zip archive) that "
                                "graph.save writes beside the graph; pass the graph file itself: "
                                "other.json"),
    ("check", "g.svg", "g.svg is an SVG picture, not a saved graph; pass the .json file that "
                       "graph.save(path) or capviz render --format json wrote"),
    ("show", "g.html", "g.html is an HTML page (capviz's interactive view?), not a saved graph"),
    ("check", "g.dot", "g.dot is a DOT graph, not a saved graph"),
])
def test_a_file_of_another_kind_is_named(project, command, name, message):
    for out in ("saved.json", "other.json", "g.svg", "g.html", "g.dot"):
        capviz("render", "model:mlp", "-i", "x=2,4:float32", "-o", out, cwd=project)
    out = capviz(command, name, cwd=project)
    assert_one_line_usage_error(out, f"capviz {command}: error: {message}")


@pytest.mark.parametrize("spec", ["x=(2,4):float32", "x=[2,4]:float32", "x=2x4:float32",
                                  "x=2,4"])
def test_input_shapes_in_the_forms_people_write(project, spec):
    import capviz as cv

    out = capviz("render", "model:mlp", "-i", spec, "-o", "g.json", cwd=project)
    assert out.returncode == 0, out.stderr
    (x,) = [n for n in cv.load(str(project / "g.json")).nodes if n.kind == "input"]
    assert x.shape == (2, 4) and x.dtype == np.float32


@pytest.mark.parametrize("spec,message", [
    ("x=two:float32", "bad --input 'x=two:float32': the shape 'two' is not a list of integers; "
                      "write NAME=SHAPE:DTYPE, e.g. x=2,8:float32 or x=(2,8):float32"),
    ("x=(2,-1):float32", "the shape '(2,-1)' has a negative size; write NAME=SHAPE:DTYPE"),
    ("x=2,4:floaty", "bad --input 'x=2,4:floaty': 'floaty' is not a NumPy dtype (float32, "
                     "int64, bool...); write NAME=SHAPE:DTYPE"),
    ("2,4", "bad --input '2,4': expected NAME=SHAPE:DTYPE; write NAME=SHAPE:DTYPE"),
])
def test_a_malformed_input_says_the_syntax(project, spec, message):
    out = capviz("render", "model:mlp", "-i", spec, cwd=project)
    assert_one_line_usage_error(out, message)


def test_an_input_given_twice_is_a_usage_error(project):
    twice = capviz("render", "model:two", "-i", "x=3", "-i", "x=3", cwd=project)
    assert_one_line_usage_error(twice, "input 'x' is given twice with -i; give each parameter "
                                       "once")


GUIDE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                     "guide", "cli.md")


def guide_sessions(text):
    """``(argv, expected lines)`` of each ``$ capviz ...`` session shown (indented) in the
    guide, in order: a session's output is the indented lines after its command."""
    sessions = []
    current = None
    for line in text.splitlines():
        if line.startswith("    $ "):
            current = (shlex.split(line[6:])[1:], [])
            sessions.append(current)
        elif current is not None and line.startswith("    "):
            current[1].append(line[4:])
        elif line.strip():
            current = None  # prose: the session has ended
    return sessions


def test_the_cli_guide_sessions_run_as_shown(tmp_path):
    text = open(GUIDE, encoding="utf-8").read()
    (model,) = [b for b in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
                if b.startswith("# model.py\n")]
    (tmp_path / "model.py").write_text(model)
    sessions = guide_sessions(text)
    assert len(sessions) >= 6
    for argv, expected in sessions:
        out = capviz(*argv, cwd=tmp_path)
        shown = (out.stdout + out.stderr).replace(f"{tmp_path}{os.sep}", "")
        assert shown.splitlines() == expected, (argv, shown)


@pytest.mark.parametrize("entry", ["capviz", "python -m capviz"])
def test_render_names_module_globals_as_the_library_does(project, entry):
    import capviz as cv

    cmd = [sys.executable, "-m", "capviz"] if entry != "capviz" else None
    args = ["render", "model:mlp", "-i", "x=2,4:float32", "-o", "g.json"]
    out = capviz(*args, cwd=project) if cmd is None else subprocess.run(
        cmd + args, capture_output=True, text=True, cwd=project, timeout=120)
    assert out.returncode == 0, out.stderr
    graph = cv.load(str(project / "g.json"))
    assert [n.name for n in graph.constants] == ["model.W"]
    assert "= constant model.W : float32[4,3]" in str(graph)
