"""Every install command in README.md and docs/ works as written on a fresh machine.

capviz is not on PyPI: it is installed from a checkout (``pip install .`` in its root, with
extras that pyproject.toml defines). The static test reads every ``pip install`` the docs show
and checks its targets; the slow one runs the README's set-up line in a fresh venv (it needs the
package index, as CI has).
"""

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = [os.path.join(ROOT, "README.md")] + sorted(
    glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
OPTIONS = {"-q", "--quiet", "-U", "--upgrade", "-e", "--editable"}


def pyproject_extras():
    """The extras pyproject.toml defines (read by hand: tomllib is Python 3.11+)."""
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([A-Za-z0-9_-]+)\s*=", section, re.M))


EXTRAS = pyproject_extras()


def install_commands():
    """``(page, raw argument text)`` for each ``pip install`` in the pages; an inline code span
    broken over two lines counts as one line."""
    found = []
    for page in PAGES:
        text = open(page, encoding="utf-8").read()
        text = re.sub(r"`[^`]*`", lambda m: m.group().replace("\n", " "), text)
        for match in re.finditer(r"\bpip3? install\b([^\n`]*)", text):
            args = re.split(r"&&|;|\||#", match.group(1))[0]
            found.append((os.path.relpath(page, ROOT), args.strip()))
    return found


def problems(args):
    """What is wrong with the arguments of one ``pip install`` (an empty list: nothing)."""
    wrong = []
    if re.search(r"(?<!['\"])\.\[", args):
        wrong.append(f"unquoted extras in {args!r}: zsh reads [...] as a glob; write '.[x]'")
    targets = [t for t in shlex.split(args) if t not in OPTIONS]
    if not targets:
        wrong.append("nothing to install")
    for target in targets:
        if target.startswith("-"):
            wrong.append(f"option {target} is not one the docs are checked for")
            continue
        found = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", target)
        if found is None:
            wrong.append(f"{target!r} is not the checkout ('.' or '.[extra]'): capviz is not "
                         "on PyPI")
            continue
        missing = set((found.group(1) or "").split(",")) - {""} - EXTRAS
        if missing:
            wrong.append(f"extra(s) {sorted(missing)} are not in pyproject.toml "
                         f"(it has {sorted(EXTRAS)})")
    return wrong


def test_every_install_command_names_the_checkout_and_real_extras():
    commands = install_commands()
    assert len(commands) >= 4, commands  # the README's set-up lines are among them
    assert ("README.md", "'.[test]'") in commands
    bad = {f"{page}: pip install {args}": problems(args) for page, args in commands
           if problems(args)}
    assert bad == {}


@pytest.mark.parametrize("args,message", [
    ("capviz", "'capviz' is not the checkout"),
    (".[test]", "unquoted extras"),
    ("'.[tests]'", "extra(s) ['tests'] are not in pyproject.toml"),
    ("'.[cuda,gpu]'", "extra(s) ['gpu'] are not in pyproject.toml"),
    ("--pre .", "option --pre is not one the docs are checked for"),
])
def test_the_check_catches_commands_that_fail(args, message):
    assert any(message in p for p in problems(args)), problems(args)


def test_extras_are_read_from_pyproject():
    assert {"test", "cuda"} <= EXTRAS


@pytest.mark.slow
def test_the_readme_set_up_line_works_in_a_fresh_venv(tmp_path):
    """``python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/capviz demo``, run in
    the root of a copy of the checkout (pip builds in the tree it is given; the checkout stays
    as it is)."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT, checkout, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis",
        ".ruff_cache", ".pytest_cache", "test-artifacts", "notebooks"))
    venv = checkout / ".venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    install = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "."], cwd=checkout,
                             capture_output=True, text=True, timeout=1800)
    assert install.returncode == 0, install.stderr[-3000:]
    demo = subprocess.run([str(venv / "bin" / "capviz"), "demo", "--out", "demo.svg"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "identical to eager NumPy" in demo.stdout
    assert (tmp_path / "demo.svg").read_text().lstrip().startswith(("<?xml", "<svg"))
