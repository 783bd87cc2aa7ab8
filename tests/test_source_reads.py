"""What a capture pays to read the user's source (benchmarks/memo_cost.py, benchmarks/state.py):
every capture finds the lines that read a guarded value, write a place or log one, and took
each line's comment off by tokenizing it again, most of a small capture's time (a 40-op chain:
3.5 ms a capture, 2.1 ms with the lines kept). A line's code without its comment is kept for
the next capture (``recapture.line_code``); what a capture finds is the same."""

from __future__ import annotations

import numpy as np

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
