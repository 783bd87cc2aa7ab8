"""The user's line on every node, as the capture's hot path finds it: it keeps the file and
function of the last user code met, so these cases check that what it keeps never leaks into
a node recorded from other code."""

import numpy as np

import capviz as cv


def line_of(marker, text):
    """The 1-based line of this file holding ``marker``."""
    lines = text.splitlines()
    return next(i for i, line in enumerate(lines, 1) if marker in line)


def helper(x):
    return x * 2.0  # mark: helper


def other_helper(x):
    return np.tanh(x)  # mark: other


def test_each_node_has_its_own_file_line_and_function():
    def model(x):
        y = x + 1.0  # mark: model-a
        y = helper(y)
        y = y - 3.0  # mark: model-b
        y = other_helper(y)
        y = helper(y)
        a, b = np.split(y, 2)  # mark: model-split
        return a + b  # mark: model-c

    text = open(__file__).read()
    g = cv.capture(model, cv.spec(4))
    got = [(n.op, n.source[1], n.source[2]) for n in g.ops]
    at = {m: line_of(f"# mark: {m}", text) for m in
          ("model-a", "helper", "model-b", "other", "model-split", "model-c")}
    assert got == [("add", at["model-a"], "model"), ("multiply", at["helper"], "helper"),
                   ("subtract", at["model-b"], "model"), ("tanh", at["other"], "other_helper"),
                   ("multiply", at["helper"], "helper"), ("split", at["model-split"], "model"),
                   ("unpack", at["model-split"], "model"), ("unpack", at["model-split"], "model"),
                   ("add", at["model-c"], "model")]
    assert {n.source[0] for n in g.ops} == {__file__}
    assert [n.scope for n in g.ops] == ["", "helper[0]", "", "other_helper", "helper[1]", "",
                                        "", "", ""]


def test_same_function_name_in_another_file_is_that_files():
    """Two code objects with one name (``f``), one compiled under another file name: each
    node keeps the file and line of the code that made it."""
    namespace = {"np": np}
    exec(compile("def f(x):\n    return x * 3.0\n", "other_module.py", "exec"), namespace)
    other_f = namespace["f"]

    def f(x):
        return x - 1.0  # mark: local-f

    def model(x):
        return other_f(f(other_f(x)))

    g = cv.capture(model, cv.spec(2))
    local = line_of("# mark: local-f", open(__file__).read())
    assert [n.source for n in g.ops] == [("other_module.py", 2, "f"), (__file__, local, "f"),
                                         ("other_module.py", 2, "f")]


def test_a_second_capture_starts_afresh():
    """A capture's kept user code is its own: a new capture of other code is not given it."""
    g1 = cv.capture(helper, cv.spec(2))
    g2 = cv.capture(lambda x: x / 4.0, cv.spec(2))
    assert g1.ops[0].source[2] == "helper"
    assert g2.ops[0].source[2] == "<lambda>"
    assert g2.ops[0].source[1] == line_of("g2 = cv.capture(lambda x: x / 4.0",
                                          open(__file__).read())
