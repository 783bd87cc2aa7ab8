"""``graph.changed()`` and the values the graph holds from the user's live arrays.

Hostile review 10, finding 10: ``graph.changed()`` after the user edited a constant's array in
place *in the graph* (the documented use) copied the user's array over the edit where the
constant is the capture's copy of a live array (a bias under 1 MiB): the edit was lost with no
word. Now it is refused, naming the constant, with the fix that keeps the edit (assign the
array: the graph then holds it as its own, no longer read from the user's array)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

X = np.array([1.0, 2.0, 3.0])


def test_changed_refuses_an_in_place_edit_of_a_copied_constant_and_its_fix_keeps_it():
    bias = np.ones(3)
    graph = cv.capture(lambda x: x * 2.0 + bias, cv.spec((3,), "float64"))
    (const,) = graph.constants
    assert const.index in graph.constant_sources  # (a copy of a live array)
    graph.constant_values[const.index][...] = 5.0  # the user's edit, in the graph
    with pytest.raises(cv.ReplayError) as info:
        graph.changed()
    line = test_changed_refuses_an_in_place_edit_of_a_copied_constant_and_its_fix_keeps_it
    assert str(info.value).splitlines() == [
        f"graph.changed() found constant %{const.index} 'bias' (float64[3], recorded at "
        f"{__file__}:{line.__code__.co_firstlineno + 2} in <lambda>) edited in place in the "
        "graph: it is a copy of the user's array, whose values graph.changed() takes again, "
        "which would undo the edit.",
        "Fix: keep the edit as the graph's own value, no longer read from the user's array: "
        f"graph.constant_values[{const.index}] = graph.constant_values[{const.index}]"]
    assert info.value.node is graph.nodes[const.index]
    graph.constant_values[const.index] = graph.constant_values[const.index]  # the fix
    graph.changed()
    fn = graph.compile(backend="numpy")
    for _ in range(3):
        assert np.array_equal(graph.replay({"x": X})["out"], X * 2.0 + 5.0)
        assert np.array_equal(fn(X)[0], X * 2.0 + 5.0)


def test_changed_still_copies_in_a_live_array_edited_by_the_user():
    bias = np.ones(3)
    graph = cv.capture(lambda x: x * 2.0 + bias, cv.spec((3,), "float64"))
    for step in range(3):
        bias += 1.0  # the user's array, not the graph's copy
        with pytest.raises(cv.ReplayError, match="is a copy of the user's array, which was "
                                                 "changed in place"):
            graph.replay({"x": X})
        graph.changed()
        assert np.array_equal(graph.replay({"x": X})["out"], X * 2.0 + bias), step


# --- a weight fn also reads through NumPy's own code (ruling 39 14:10, #20, W=20g) ----------
#
# ``x @ self.W / np.linalg.norm(self.W)``: the graph holds W (a constant read from the user's
# array) and the norm NumPy computed outside the graph. After the user changed W,
# ``graph.changed()`` took W's new values and replayed the capture's norm (silent). Now a
# changed weight makes ``graph.changed()`` capture fn again from the live objects (no test
# can tell which arrays NumPy read outside the graph); the scope form, which holds no function,
# refuses with the fix (capture the block again), and its small copies are checked as
# cv.capture's are (silent before: a bias edited in place replayed the capture's copy).


class Normed:
    def __init__(self, rows):
        self.W = np.arange(1.0, 1.0 + rows * 3).reshape(rows, 3) / rows

    def forward(self, x):
        return x @ self.W / np.linalg.norm(self.W)

    def aliased(self, x):
        w = self.W
        return (x @ w) * w.mean()

    def branch(self, x):
        return x @ self.W if self.W.sum() > 0 else -(x @ self.W)


@pytest.mark.parametrize("how", ["in_place", "rebound"])
@pytest.mark.parametrize("method", ["forward", "aliased", "branch"])
@pytest.mark.parametrize("rows", [4, 50_000], ids=["copied", "by_reference"])
def test_changed_after_a_weight_numpy_also_read_replays_as_eager(method, how, rows):
    m = Normed(rows)
    x = np.linspace(-1.0, 1.0, 2 * rows).reshape(2, rows)
    fn = getattr(m, method)
    graph = cv.capture(fn, x)
    compiled = graph.compile(backend="numpy")
    for step in range(3):
        if how == "in_place":
            m.W -= 0.25 + step  # (the sign flips at the second step: branch's other side)
        else:
            m.W = m.W - (0.25 + step)
        with pytest.raises(cv.ReplayError, match=r"^constant %1 'm\.W' "):
            graph.replay({"x": x})
        graph.changed()
        want = fn(x)
        assert np.array_equal(graph.replay({"x": x})["out"], want), step
        assert np.array_equal(compiled(x)[0], want), step


W = np.arange(1.0, 13.0).reshape(4, 3)
BIAS = np.ones(3)


def test_the_scope_form_refuses_changed_after_a_weight_changed():
    x = np.ones((2, 4))
    with cv.CaptureDevice().capture_scope() as scope:
        xi = scope.input("x", x)
        scope.output(xi @ W / np.linalg.norm(W) + BIAS, name="y")
    graph = scope.graph
    line = test_the_scope_form_refuses_changed_after_a_weight_changed.__code__.co_firstlineno
    block = f"the with block at test_changed_edits.py:{line + 2}"
    where = f"recorded at {__file__}:{line + 4} in " \
            "test_the_scope_form_refuses_changed_after_a_weight_changed"
    try:
        BIAS[0] = 2.0  # (a copy in the graph: checked, as cv.capture's are)
        with pytest.raises(cv.ReplayError) as info:
            graph.replay({"x": x})
        assert str(info.value) == (
            f"constant %4 'BIAS' (float64[3], {where}) is a copy of the user's array, which "
            "was changed in place since the capture read it (later in the captured code, or "
            "after the capture); a replay never computes with values the program did not "
            f"use. Capture {block} again after changing the array, or pass it as an input")
        BIAS[0] = 1.0
        assert np.array_equal(graph.replay({"x": x})["y"], x @ W / np.linalg.norm(W) + BIAS)
        W[0, 0] = 5.0
        with pytest.raises(cv.ReplayError) as info:
            graph.changed()
        assert str(info.value).splitlines() == [
            f"graph.changed() cannot take the new values of constant %1 'W' (float64[4, 3], "
            f"{where}): {block} may also have read its array through NumPy outside the graph "
            "(np.linalg.norm, .mean(), a branch on it), which the graph holds as computed when "
            "it was captured, and it holds no function to capture again.",
            f"Fix: capture {block} again after changing the array (cv.capture(fn)'s "
            "graph.changed() captures fn again)"]
        with cv.CaptureDevice().capture_scope() as scope:  # the fix, applied
            xi = scope.input("x", x)
            scope.output(xi @ W / np.linalg.norm(W) + BIAS, name="y")
        for _ in range(3):
            assert np.array_equal(scope.graph.replay({"x": x})["y"],
                                  x @ W / np.linalg.norm(W) + BIAS)
    finally:
        W[0, 0], BIAS[0] = 1.0, 1.0


def test_changed_refuses_to_drop_a_node_edit_when_it_must_capture_again():
    """A new capture drops the user's edits of the graph's nodes: where graph.changed() must
    capture again (a weight changed), an edit made in place is refused, not dropped."""
    w = np.ones((3, 3))
    graph = cv.capture(lambda x: x @ w * 2.0, cv.spec((3,), "float64"))
    graph.replay({"x": X})
    graph.compile(backend="numpy")(X)
    multiply = graph.ops[-1]
    multiply.args = (multiply.args[0], 10.0)  # the user's edit
    graph.changed()  # (nothing else changed: the edit is taken)
    assert np.array_equal(graph.replay({"x": X})["out"], X @ w * 10.0)
    w += 1.0
    with pytest.raises(cv.ReplayError) as info:
        graph.changed()
    assert str(info.value).splitlines()[1] == (
        "Fix: capture the function again after the change, and edit the new graph")
    assert str(info.value).splitlines()[0].endswith(
        "changed, and the function may also have read its array through NumPy outside the "
        f"graph), which would drop your edit of node %{multiply.index} (multiply) in the graph.")
    assert info.value.node is multiply
    again = cv.capture(lambda x: x @ w * 2.0, cv.spec((3,), "float64"))  # the fix, applied
    multiply = again.ops[-1]
    multiply.args = (multiply.args[0], 10.0)
    again.changed()
    for _ in range(3):
        assert np.array_equal(again.replay({"x": X})["out"], X @ w * 10.0)


def test_the_capture_again_keeps_no_copy_of_an_example_it_never_read():
    """d3e4d28 kept a copy of the examples of every graph holding a weight (for changed()'s
    capture again): an 8 MB batch held 8 MB more. Only an example the capture read a value of
    is kept now; changed() still captures again exactly."""
    import tracemalloc

    w = np.ones((1000, 3))
    x = np.ones((1000, 1000))  # 8 MB
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        graph = cv.capture(lambda x: x @ w / np.linalg.norm(w), x)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < x.nbytes / 4, held
    w += 1.0
    graph.changed()
    for _ in range(3):
        assert np.array_equal(graph.replay({"x": x})["out"], x @ w / np.linalg.norm(w))


def test_changed_refuses_to_drop_a_params_list_edited_in_place():
    """Review 11, finding 13 (silent): a list a node's params hold, edited in place (the same
    object), was not seen as an edit: a capture again dropped it."""
    w = np.arange(12.0).reshape(3, 4) / 10
    graph = cv.capture(lambda x: np.pad(x @ w, [(0, 0), (1, 2)]) / np.linalg.norm(w),
                       cv.spec((1, 3), "float64"))
    (pad,) = [node for node in graph.ops if node.op == "pad"]
    pad.params["pad_width"].reverse()  # the user's edit, in place
    graph.changed()  # (nothing else changed: the edit is taken)
    x = np.array([[1.0, 2.0, 3.0]])
    assert graph.replay({"x": x})["out"].shape == (4, 4)
    w *= 2.0
    with pytest.raises(cv.ReplayError, match=rf"which would drop your edit of node %{pad.index} "
                                             r"\(pad\) in the graph\.\nFix: capture the "
                                             r"function again after the change"):
        graph.changed()
