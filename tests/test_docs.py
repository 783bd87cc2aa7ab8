"""The docs cannot rot: every ```python block runs (in order, per page), and api.md is current."""

import glob
import os
import re
import runpy
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)) + [
    os.path.join(ROOT, "README.md")]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.filterwarnings("ignore:capviz live view disabled")
@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_code_blocks_run(page, tmp_path, monkeypatch):
    blocks = BLOCK.findall(open(page, encoding="utf-8").read())
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{os.path.relpath(page, ROOT)}[block {i}]", "exec"), namespace)
        except Exception as err:
            raise AssertionError(f"{page} block {i} failed: {type(err).__name__}: {err}\n{code}")


def test_the_guides_have_code():
    for name in ("capture", "randomness", "rendering", "replay", "pytest"):
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
