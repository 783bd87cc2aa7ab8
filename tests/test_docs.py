"""The docs cannot rot: every ```python block of README.md and docs/ runs (in order, per page,
found anew on every run, so a page or block added later is tested too), a block that shows an
error asserts that the error is raised, and api.md is current.

How a block runs: its source is registered in :mod:`linecache` under its page and block number,
as IPython does for a cell, so capviz quotes the block's own line in a message, as it would the
user's. Every ``try:`` with an ``except`` in a block and no ``else:`` gets one that fails the test:
an example that shows an error (``except cv.UnsupportedOperationError as err: assert ...``)
fails when nothing is raised, instead of passing without checking anything.
"""

import ast
import glob
import linecache
import os
import re
import runpy
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)) + [
    os.path.join(ROOT, "README.md")]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
FENCE = re.compile(r"^ *```", re.M)
TEXT = re.compile(r"^```text\n.*?^```", re.S | re.M)  # a diagram or output, not code


class ExpectRaise(ast.NodeTransformer):
    """Gives every ``try``/``except`` without ``else`` an ``else`` that raises
    ``AssertionError`` naming the exceptions the block shows."""

    def __init__(self, where: str) -> None:
        self.where = where

    def visit_Try(self, node: ast.Try) -> ast.Try:
        self.generic_visit(node)
        if node.handlers and not node.orelse:
            shown = ", ".join(ast.unparse(h.type) if h.type is not None else "an exception"
                              for h in node.handlers)
            message = f"{self.where} line {node.lineno}: the example shows {shown}, but " \
                      "nothing was raised"
            node.orelse = [ast.Raise(ast.Call(ast.Name("AssertionError", ast.Load()),
                                              [ast.Constant(message)], []), None)]
            ast.fix_missing_locations(node)
        return node


def compile_block(code: str, name: str):
    """``code`` compiled under ``name`` with the ``else`` of :class:`ExpectRaise`; its lines are
    registered in :mod:`linecache` so tracebacks and capviz's messages quote them."""
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    tree = ExpectRaise(name).visit(ast.parse(code, name))
    return compile(tree, name, "exec")


def run_block(code: str, name: str, namespace: dict) -> None:
    try:
        exec(compile_block(code, name), namespace)
    except Exception as err:
        raise AssertionError(f"{name} failed: {type(err).__name__}: {err}\n{code}") from err


@pytest.mark.filterwarnings("ignore:capviz live view disabled")
@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_code_blocks_run(page, tmp_path, monkeypatch):
    blocks = BLOCK.findall(open(page, encoding="utf-8").read())
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    for i, code in enumerate(blocks):
        run_block(code, f"{os.path.relpath(page, ROOT)}[block {i}]", namespace)


def test_every_fenced_block_is_python_and_runs():
    """A fence of another language would not run here: code is ```python (``text``: a diagram,
    not code); shell sessions are indented blocks (docs/guide/cli.md, checked by
    tests/test_cli.py) and install commands are checked by tests/test_install_docs.py."""
    for page in PAGES:
        text = TEXT.sub("", open(page, encoding="utf-8").read())
        fences = FENCE.findall(text)
        assert len(fences) == 2 * len(BLOCK.findall(text)), \
            f"{os.path.relpath(page, ROOT)} has a code fence that is not ```python ... ```"


def test_an_example_that_shows_an_error_fails_when_nothing_is_raised():
    """Today's capture.md showed `np.linalg.norm` raising, but it is captured: the block passed
    without asserting anything. The harness makes such a block fail."""
    shown = ('import numpy as np\nimport capviz as cv\n'
             'try:\n'
             '    cv.capture(lambda x: np.linalg.norm(x), cv.spec(3))\n'
             'except cv.UnsupportedOperationError as err:\n'
             '    assert "np.linalg.norm is not supported" in str(err)\n')
    with pytest.raises(AssertionError, match=r"the example shows cv.UnsupportedOperationError, "
                                             r"but nothing was raised"):
        run_block(shown, "capture.md[norm]", {})
    refused = shown.replace("np.linalg.norm(x)", "np.unique(x)").replace(
        "np.linalg.norm is not supported", "np.unique is not supported")
    run_block(refused, "capture.md[unique]", {})


def test_a_block_quotes_its_own_line_in_a_capture_message():
    code = ('import numpy as np\nimport capviz as cv\nT = np.eye(3)\n'
            'try:\n'
            '    cv.capture(lambda i: T[i], cv.spec(2, "int64"))\n'
            'except cv.DataReadError as err:\n'
            '    message = str(err)\n')
    namespace = {}
    run_block(code, "page.md[block 0]", namespace)
    assert namespace["message"].startswith("`T[i]` at page.md[block 0]:5 in <lambda>: ")


def test_the_guides_have_code():
    for name in ("capture", "randomness", "rendering", "replay", "pytest", "messages"):
        page = os.path.join(ROOT, "docs", "guide", f"{name}.md")
        assert BLOCK.findall(open(page, encoding="utf-8").read()), name


def test_api_page_is_current():
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    try:
        build = runpy.run_path(os.path.join(ROOT, "docs", "gen_api.py"))["build"]
    finally:
        sys.path.pop(0)
    current = open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8").read()
    assert current == build(), "docs/api.md is out of date: run python docs/gen_api.py"


def test_every_public_name_has_an_api_entry():
    import capviz as cv

    page = open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8").read()
    missing = [n for n in cv.__all__ if f"### `cv.{n}`" not in page]
    assert missing == []
