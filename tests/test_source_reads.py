"""What a capture pays to read the user's source (benchmarks/memo_cost.py, benchmarks/state.py):
every capture finds the lines that read a guarded value, write a place or log one, and took
each line's comment off by tokenizing it again, most of a small capture's time (a 40-op chain:
3.5 ms a capture, 2.1 ms with the lines kept). A line's code without its comment is kept for
the next capture (``recapture.line_code``); what a capture finds is the same."""

from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest

import capviz as cv
from capviz.trace import recapture


class Scaled:
    def __init__(self):
        self.p = 0.5  # a guarded value: its reading line is looked for

    def forward(self, x):
        y = x * (1.0 - self.p)  # the line that reads it
        return y + 1.0


def test_a_second_capture_tokenizes_no_line_again():
    model = Scaled()
    first = cv.capture(model.forward, cv.spec((3,), "float64"))
    misses = recapture.line_code.cache_info().misses
    second = cv.capture(model.forward, cv.spec((3,), "float64"))
    assert recapture.line_code.cache_info().misses == misses
    assert [n.op for n in first.nodes] == [n.op for n in second.nodes]
    assert [(g.label, g.source[1:]) for g in second.python_guards] == [
        ("self.p", (first.python_guards[0].source[1], "forward"))]
    x = np.arange(3.0)
    np.testing.assert_array_equal(second.replay({"x": x})["out"], model.forward(x))


def test_a_line_s_code_is_the_line_without_its_comment():
    assert recapture.line_code("  y = x * (1.0 - self.p)  # the line that reads it\n") == \
        "y = x * (1.0 - self.p)"
    assert recapture.line_code("s = '# not a comment'  # one") == "s = '# not a comment'"
    assert recapture.line_code("x = (1 +  # an open bracket") == "x = (1 +"
    assert recapture.line_code('x = """  # text') == 'x = """  # text'  # (as it is)


def _logged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)

    return wrapper


@_logged
def first_helper(x):
    return x * 2.0  # first


@_logged
def second_helper(x):
    return x * 3.0  # second


def test_a_second_capture_reads_no_function_s_source_again(monkeypatch):
    model = Scaled()
    cv.capture(model.forward, cv.spec((3,), "float64"))
    reads = []
    real = inspect.getsourcelines
    monkeypatch.setattr(inspect, "getsourcelines", lambda f: reads.append(f) or real(f))
    graph = cv.capture(model.forward, cv.spec((3,), "float64"))
    assert reads == []
    assert graph.python_guards[0].source[1] == _line(Scaled.forward, "the line that reads it")


def test_functions_a_decorator_wraps_keep_their_own_source_and_code_with_none_is_not_kept():
    first, start = recapture.source_lines(first_helper)
    assert first == recapture.source_lines(first_helper)[0] == inspect.getsourcelines(
        first_helper)[0]
    assert "# first" in "".join(first) and start == inspect.getsourcelines(first_helper)[1]
    assert "# second" in "".join(recapture.source_lines(second_helper)[0])
    first.append("changed by a caller")
    assert recapture.source_lines(first_helper)[0][-1] != "changed by a caller"
    space = {}
    exec(compile("def made(x):\n    return x\n", "<made>", "exec"), space)
    for _ in range(2):
        with pytest.raises(OSError):
            recapture.source_lines(space["made"])
    with pytest.raises(TypeError):
        recapture.source_lines(np.add)


def _line(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


class Trains:
    def __init__(self):
        self.training = False
        self.p = 0.5

    def step(self, x):
        self.training = True  # assigned before any read: set by each replay, no guard
        return x * self.p


def test_a_second_capture_lists_no_bytecode_again_and_finds_the_same_assignments(monkeypatch):
    """What ``fn`` assigns before it reads (trace/assigned.py) is read from its bytecode, which
    ``dis`` listed anew at every capture (0.1 ms of benchmarks/state.py's first capture); the
    listing is kept per code object, and the second capture finds what the first found."""
    import dis
    import sys

    from capviz.trace import assigned

    # assigned.py's own listings only: other readers keep theirs in caches that clear past
    # 1,024 code objects, and after the rest of the suite one cleared between the two captures
    # (CI on bd4f4c2: 7 listings, not 5); assigned.py's cache starts empty for the same reason.
    monkeypatch.setattr(assigned, "_LISTED", {})
    listed = []
    real = dis.get_instructions

    def listing(code, *a, **k):
        if sys._getframe(1).f_globals.get("__name__") == assigned.__name__:
            listed.append(code)
        return real(code, *a, **k)

    monkeypatch.setattr(dis, "get_instructions", listing)
    model = Trains()
    first = cv.capture(model.step, cv.spec((3,), "float64"))
    code = Trains.step.__code__
    once = listed.count(code)
    assert once == 1
    second = cv.capture(model.step, cv.spec((3,), "float64"))
    assert listed.count(code) == once
    assert [(g.label, g.sets) for g in first.python_guards] == \
        [(g.label, g.sets) for g in second.python_guards]
    assert ("self.training", True) in [(g.label, g.sets) for g in second.python_guards]
    assert type(assigned._instructions(code)) is tuple  # (shared: no caller can change it)
    model.training = False
    x = np.arange(3.0)
    np.testing.assert_array_equal(second.replay({"x": x})["out"], x * 0.5)
    assert model.training is True
