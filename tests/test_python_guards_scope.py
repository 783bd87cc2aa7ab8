"""Guards of the scope form (lead ruling 38, 10:50): ``with cap.capture_scope()`` reads Python
values as a captured function does (``m.training``, a dropout's ``p``, a module flag a helper
reads), and its graph recorded none: changed between replays, the old program replayed,
silently. Now the block's code (its statements, read from its source; the frame's code where
there is none) gives the guards, and a change refuses the replay naming the place, both values,
the line that read it, and the fix (capture the block again), which replays as eager does."""

from __future__ import annotations

import textwrap
import types

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import GuardError

X = np.arange(12.0).reshape(4, 3)
SPEC = cv.spec((4, 3), "float64")
HERE = "test_python_guards_scope.py"
FLAG = True


class Drop:
    def __init__(self):
        self.p = 0.5

    def forward(self, x):
        return x * (1.0 - self.p)  # the line that reads p


class Model:
    def __init__(self):
        self.training = True
        self.drop = Drop()

    def forward(self, x):
        y = self.drop.forward(x)
        return y if self.training else y + 1.0  # the line that reads training


def helper(y):
    return y * 2.0 if FLAG else y  # the line that reads FLAG


def _line(function, text):
    import inspect
    lines, start = inspect.getsourcelines(function)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _capture(m):
    with cv.CaptureDevice().capture_scope() as scope:  # the block
        x = scope.input("x", SPEC)
        scope.output(helper(m.forward(x)), name="y")
    return scope.graph


WITH = _line(_capture, "# the block")
CHANGES = {
    "eval": (lambda m: setattr(m, "training", False), "m.training", "True", "False",
             (Model.forward, "reads training")),
    "p": (lambda m: setattr(m.drop, "p", 0.1), "m.drop.p", "0.5", "0.1",
          (Drop.forward, "reads p")),
    "flag": (lambda m: globals().__setitem__("FLAG", False), "FLAG", "True", "False",
             (helper, "reads FLAG")),
}


@pytest.fixture(autouse=True)
def _flag():
    global FLAG
    FLAG = True
    yield
    FLAG = True


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_value_the_block_read_changed_between_replays_is_refused(change):
    m = Model()
    graph = _capture(m)
    assert np.array_equal(graph.replay({"x": X})["y"], helper(m.forward(X)))
    edit, place, was, now, (function, marker) = CHANGES[change]
    edit(m)
    with pytest.raises(GuardError) as e:
        graph.replay({"x": X})
    line = _line(function, marker)
    assert str(e.value) == (
        f"{place} was {was} when the with block at {HERE}:{WITH} was captured (read at "
        f"{function.__code__.co_filename}:{line} in {function.__name__}) and is {now} now, so "
        "the graph computes what the code did with the old value.\n"
        f"Fix: capture the with block at {HERE}:{WITH} again after changing {place} (a graph "
        "per value: keep one for each)")
    again = _capture(m)  # the fix
    for _ in range(2):
        assert np.array_equal(again.replay({"x": X})["y"], helper(m.forward(X)))


def test_str_lists_the_block_s_guards():
    text = str(_capture(Model()))
    assert "guard m.training == True  # read at" in text
    assert "guard m.drop.p == 0.5  # read at" in text
    assert "guard FLAG == True  # read at" in text


def test_names_the_block_binds_before_reading_them_are_not_guarded():
    m = Model()
    graphs = []
    for _ in range(3):  # (scope and x hold the last capture's objects when the next opens)
        with cv.CaptureDevice().capture_scope() as scope:
            x = scope.input("x", SPEC)
            n = 2.0
            scope.output(m.forward(x) * n, name="y")
        graphs.append(scope.graph)
    assert not [g for g in graphs[0].python_guards if g.label.split(".")[0] in
                ("scope", "x", "n")]
    for graph in graphs:
        assert np.array_equal(graph.replay({"x": X})["y"], m.forward(X) * 2.0)


NOTEBOOK = """
import numpy as np, capviz as cv
from {module} import Model, X, SPEC
DEBUG = False
m = Model()
for i in range(2):
    with cv.CaptureDevice().capture_scope() as scope:
        y = m.forward(scope.input("x", SPEC))
        scope.output(y * 3.0 if DEBUG else y, name="y")
        if i == 1:
            break
graph = scope.graph
"""


@pytest.mark.parametrize("source", [True, False], ids=["cell", "no_source_text"])
def test_a_scope_at_a_module_s_top_level_is_guarded(tmp_path, source):
    text = textwrap.dedent(NOTEBOOK.format(module=__name__))
    if source:
        path = tmp_path / "cell.py"
        path.write_text(text)
        space: dict = {"__name__": "cell"}
        exec(compile(text, str(path), "exec"), space)  # (a cell's code, its lines in a file)
        where = "the with block at cell.py:7"
    else:  # (exec of a string: the frame's whole code stands for the block)
        space: dict = {"__name__": "cell"}
        exec(compile(text, "<cell>", "exec"), space)
        where = "the with block at <cell>:7"
    graph, m = space["graph"], space["m"]
    assert np.array_equal(graph.replay({"x": X})["y"], m.forward(X))
    space["DEBUG"] = True
    with pytest.raises(GuardError, match=rf"^DEBUG was False when {where} was captured "):
        graph.replay({"x": X})
    space["DEBUG"] = False
    m.training = False
    with pytest.raises(GuardError, match=rf"^m.training was True when {where} was captured "):
        graph.replay({"x": X})


class Sub:
    def __init__(self, k):
        self.k = k


def test_a_local_rebound_a_closure_s_list_and_an_attribute_rebound_are_refused():
    """Review 10, r10_scope.py: in a function, ``lr = 0.2`` between replays (the frame's
    locals read live), a list a closure reads changed, ``m.sub = Sub(2.5)`` (the path read
    from the frame's name): each replayed the old value, silently."""
    lr, cell, m = 0.1, [4.0], types.SimpleNamespace(sub=Sub(1.5))

    def clo(x):
        return x * cell[0]

    with cv.CaptureDevice().capture_scope() as scope:
        x = scope.input("x", SPEC)
        scope.output(clo(x) * lr * m.sub.k, name="y")
    graph = scope.graph
    assert np.array_equal(graph.replay({"x": X})["y"], clo(X) * lr * m.sub.k)
    lr = 0.2
    with pytest.raises(GuardError, match=r"^lr was 0\.1 when the with block at "):
        graph.replay({"x": X})
    lr = 0.1
    cell[0] = 9.0
    with pytest.raises(GuardError, match=r"^cell\[0\] was 4\.0 when the with block at "):
        graph.replay({"x": X})
    cell[0] = 4.0
    m.sub = Sub(2.5)
    with pytest.raises(GuardError, match=r"^m\.sub\.k was 1\.5 when the with block at "):
        graph.replay({"x": X})
    m.sub = Sub(1.5)
    assert np.array_equal(graph.replay({"x": X})["y"], clo(X) * lr * m.sub.k)
