"""One message per situation (capviz.core.violations.SITUATIONS): every row's example meets
that row, and its message is at most three lines that quote the user's code at their line, say
why, and give that row's one fix; the docs page is written from the table."""

import os
import re
import runpy

import numpy as np
import pytest

import capviz as cv
from capviz.core.violations import ERROR_TYPES, SITUATIONS, Situation

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def template_pattern(template: str) -> re.Pattern:
    """A regex matching what ``template`` writes for any values of its ``{fields}``."""
    pieces = re.split(r"\{[a-z_]+\}", template)
    return re.compile(".+?".join(re.escape(p) for p in pieces), re.S)


def meet(row: Situation, tmp_path, monkeypatch) -> Exception:
    """Run ``row.example`` from a real file (so the message can quote it), in ``tmp_path`` (an
    example may write a file); its error."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / f"example_{row.name}.py"
    path.write_text("import numpy as np\nimport capviz as cv\n\n" + row.example + "\n")
    with pytest.raises(ERROR_TYPES[row.kind]) as info:
        runpy.run_path(str(path))
    return info.value


@pytest.mark.parametrize("row", SITUATIONS, ids=lambda r: r.name)
def test_each_situation_says_what_why_and_the_one_fix_in_three_lines(row, tmp_path, monkeypatch):
    err = meet(row, tmp_path, monkeypatch)
    lines = str(err).splitlines()
    assert 2 <= len(lines) <= 3, lines
    code = lines[0].split("` at ")[0].lstrip("`")
    assert code and code in row.example  # the user's own code, quoted
    assert f"example_{row.name}.py:" in lines[0] and " in f: " in lines[0]  # at their line
    assert template_pattern(row.what).search(lines[0]), (row.what, lines[0])
    assert template_pattern(row.why).fullmatch(lines[1]), (row.why, lines[1])
    if len(lines) == 3:
        assert lines[2].startswith("Fix: ")
        if row.fix != "{reason_fix}":
            assert template_pattern(row.fix).fullmatch(lines[2][5:]), (row.fix, lines[2])
    assert err.graph is not None  # the partial graph is kept


def test_each_situation_has_its_own_why_line():
    whys = [row.why for row in SITUATIONS]
    assert len(set(whys)) == len(whys)
    assert len({row.name for row in SITUATIONS}) == len(SITUATIONS)


def test_the_last_row_of_each_kind_applies_to_every_failure_of_it():
    for kind in {row.kind for row in SITUATIONS}:
        last = [row for row in SITUATIONS if row.kind == kind][-1]
        assert last.applies.__code__.co_code == (lambda f: True).__code__.co_code, kind


GPT_PARAMS = {"wte": np.ones((50, 8), np.float32), "wpe": np.ones((16, 8), np.float32)}


def gpt_embed(tokens):
    return GPT_PARAMS["wte"][tokens] + GPT_PARAMS["wpe"][:4]


def test_the_first_line_of_a_gpt_forward_gets_the_one_fix_that_applies():
    with pytest.raises(cv.DataReadError) as info:
        cv.capture(gpt_embed, cv.spec((4,), "int64"))
    line = gpt_embed.__code__.co_firstlineno + 1
    assert str(info.value).splitlines() == [
        f'`GPT_PARAMS["wte"][tokens]` at {__file__}:{line} in gpt_embed: an ndarray indexed by '
        "the tensor `tokens` (np.asarray() of %0 (tokens, int64[4])).",
        "capviz cannot record it: NumPy converts the index with np.asarray, which no hook "
        "reaches, and a captured tensor has no value until the graph is replayed.",
        'Fix: record the array first: cv.constant(GPT_PARAMS["wte"])[tokens] (outside a '
        "capture cv.constant returns the array itself).",
    ]
    assert "np.stack" not in str(info.value) and "a.dot" not in str(info.value)


def test_the_fix_works_where_the_message_says():
    def fixed(tokens):
        return cv.constant(GPT_PARAMS["wte"])[tokens] + GPT_PARAMS["wpe"][:4]

    graph = cv.capture(fixed, cv.spec((4,), "int64"))
    tokens = np.array([3, 1, 4, 1])
    np.testing.assert_array_equal(graph.replay({"tokens": tokens})["out"], fixed(tokens))


def test_a_recorded_violation_keeps_the_same_message():
    graph = cv.capture(gpt_embed, cv.spec((4,), "int64"), on_violation="record")
    (violation,) = graph.violations
    assert violation.kind == "data_read"
    assert violation.message.splitlines()[0].startswith('`GPT_PARAMS["wte"][tokens]` at ')


def test_seed_violations_keep_their_three_fixes():
    with pytest.raises(cv.SeedViolationError) as info:
        with cv.CaptureDevice().capture_scope():
            np.random.seed(0)
    message = str(info.value)
    assert "Fixes:" in message and "  1. " in message and "  2. " in message and "  3. " in message


def test_the_messages_page_is_current():
    build = runpy.run_path(os.path.join(ROOT, "docs", "gen_messages.py"))["build"]
    page = os.path.join(ROOT, "docs", "guide", "messages.md")
    current = open(page, encoding="utf-8").read()
    assert current == build(current), "docs/guide/messages.md is out of date: run " \
                                      "python docs/gen_messages.py"
    for row in SITUATIONS:
        assert f"### `{row.name}` ({row.kind})" in current
