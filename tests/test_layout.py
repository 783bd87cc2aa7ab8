"""The floor plan (docs/architecture.md): no import circle, and the layer contracts that CI runs
(import-linter, configured in pyproject.toml) name an import that points up."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = Path(cv.__file__).resolve().parent
LINT_IMPORTS = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) \
    or shutil.which("lint-imports")


def import_circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in graph.find_modules_directly_imported_by(module):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return circles


def test_no_module_of_capviz_is_in_an_import_circle():
    graph = grimp.build_graph("capviz")  # function-level imports included
    assert len(graph.modules) > 90
    assert import_circles(graph) == []


def test_the_circle_finder_finds_a_circle():
    graph = grimp.ImportGraph()
    for name in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(name)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.y", imported="a.z")
    assert import_circles(graph) == [["a.x", "a.y"]]


def _lint(tree: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([LINT_IMPORTS, str(tree / "pyproject.toml"), "--no-cache"],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(LINT_IMPORTS is None, reason="import-linter is not installed")
def test_the_layer_contract_names_an_import_that_points_up(tmp_path):
    shutil.copytree(PACKAGE, tmp_path / "capviz",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    kept = _lint(tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "Contracts: 2 kept, 0 broken." in kept.stdout

    # the data model reaching up to the graph's methods, inside a function
    ir = tmp_path / "capviz" / "core" / "ir.py"
    upward = "    from capviz.graph import CapturedGraph"
    lines = [*ir.read_text().splitlines(), "", "", "def _upward():", upward, "",
             "    return CapturedGraph"]
    ir.write_text("\n".join(lines) + "\n")
    line = lines.index(upward) + 1
    broken = _lint(tmp_path)
    assert broken.returncode == 1
    assert "capviz layers: imports point only down BROKEN" in broken.stdout
    assert "capviz.core is not allowed to import capviz.graph" in broken.stdout
    assert f"capviz.core.ir -> capviz.graph (l.{line})" in broken.stdout


# --- what users could reach before the move still works as it did ---------------------------


def test_an_object_answering_every_attribute_is_no_tensor_to_the_replay():
    """The replay asks an input for its eager array through a special method looked up on the
    type (``__capviz_value__``), so a proxy answering any attribute stays a wrong input."""

    class Anything:
        def __getattr__(self, name):
            return lambda *args: None

    graph = cv.capture(lambda x: x + 1.0, cv.spec(3))
    with pytest.raises(cv.ReplayInputError,
                       match=r"input 'x' must be an array float32\[3\], got Anything"):
        graph.replay({"x": Anything()})
    eager = cv.tensor(np.ones(3, np.float32), cv.Device("numpy"))
    assert graph.replay({"x": eager})["out"].tolist() == [2.0, 2.0, 2.0]
    with cv.CaptureDevice().capture_scope() as scope:
        t = scope.input("t", (3,))
        with pytest.raises(cv.ReplayInputError, match="input 'x' is a capture tensor"):
            graph.replay({"x": t})
        scope.output(t, "t")


def test_a_device_keeps_its_engine_and_a_tensor_its_backend_keyword():
    device = cv.Device("numpy")
    assert device.backend.engine is registry.get("numpy") is device.backend.backend
    t = cv.Tensor(np.ones(2), backend=device.backend)
    assert (t + 1).numpy().tolist() == [2.0, 2.0]


def test_the_registry_lists_the_built_in_engines_first_whatever_loads_first():
    pytest.importorskip("dask")
    code = ("from capviz.backends import registry\nregistry.get('dask')\n"
            "print([b.name for b in registry.loaded()])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.split("\n")[0] == "['numpy', 'cupy', 'dask']"
