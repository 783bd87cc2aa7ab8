"""Arrays a capture's NumPy read outside the graph (review 9, finding 19's derived rows; review
10, finding 4: silent): ``x / np.linalg.norm(self.W)``, ``x * self.W.mean()``, ``float(...)``,
``np.linalg.inv(self.A) @ x``, ``x[: int(self.n)]`` computed by NumPy from an outliving array
the graph holds no value of, baked as a constant. The user changed the array in place or bound
another one between replays: the old constant replayed, with or without ``graph.changed()``.
Now such an array is guarded by its fingerprint (lead ruling 38 10:51): a replay after a change
is refused naming it until ``graph.changed()``, which captures the function again from the live
objects (the scope form, which holds no function: ``changed()`` says to capture again); the
other fix (pass it as an argument) replays as eager computes."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import GuardError, ReplayError
from capviz.core.python_guards import Digest

X = np.array([1.0, 2.0, 3.0])


class Model:
    def __init__(self, rows=4):
        self.W = np.arange(1.0, 1.0 + 3 * rows).reshape(rows, 3)
        self.A = np.eye(3) * 2.0 + 0.25
        self.n = np.array(2)

    def norm(self, x):
        return x / np.linalg.norm(self.W)

    def mean(self, x):
        return x * self.W.mean()

    def float_sum(self, x):
        return x * float(self.W.sum())

    def inv(self, x):
        return np.linalg.inv(self.A) @ x

    def slice_n(self, x):
        return x[: int(self.n)] * 2.0


DERIVED = {"norm": "W", "mean": "W", "float_sum": "W", "inv": "A", "slice_n": "n"}


def _edit(m, name, how):
    if how == "in_place":
        getattr(m, name)[...] += 1
    else:
        setattr(m, name, np.array(getattr(m, name) + 1))


@pytest.mark.parametrize("how", ["in_place", "rebound"])
@pytest.mark.parametrize("method", sorted(DERIVED))
@pytest.mark.parametrize("rows", [4, 50_000], ids=["small", "big"])
def test_an_array_numpy_read_outside_the_graph_changed_is_refused(method, how, rows):
    m = Model(rows)
    graph = cv.capture(getattr(m, method), X)
    assert np.array_equal(graph.replay({"x": X})["out"], getattr(m, method)(X))
    name = DERIVED[method]
    _edit(m, name, how)
    with pytest.raises(GuardError) as e:
        graph.replay({"x": X})
    text = str(e.value)
    assert text.startswith(f"array self.{name} holds other values than when {method} was "
                           "captured, and the graph holds values NumPy computed from it "
                           "outside the graph (read at ")
    assert text.endswith(f"Fix: call graph.changed() to capture {method} again from the live "
                         f"objects, or pass self.{name} to the function as an argument (an "
                         "input the graph reads)")
    graph.changed()  # the fix (lead ruling 38 10:51: it captures the function again)
    for _ in range(2):
        assert np.array_equal(graph.replay({"x": X})["out"], getattr(m, method)(X))
    _edit(m, name, how)
    with pytest.raises(GuardError, match=rf"^array self\.{name} holds other values"):
        graph.replay({"x": X})


def test_the_fix_of_passing_the_array_as_an_argument_replays_each_value():
    m = Model()

    def norm(x, w):
        return x / np.linalg.norm(w)

    graph = cv.capture(norm, X, m.W)
    for _ in range(3):
        m.W += 1.0
        assert np.array_equal(graph.replay({"x": X, "w": m.W})["out"], norm(X, m.W))


def test_an_array_rebound_to_a_number_is_refused():
    m = Model()
    graph = cv.capture(m.slice_n, X)
    m.n = 1
    with pytest.raises(GuardError, match=r"^self\.n holds no array now, and held one when "
                                         r"slice_n was captured"):
        graph.replay({"x": X})


class Layer:
    def __init__(self):
        self.W = np.ones((3, 3)) * 0.5
        self.big = np.ones((3, 90_000)) * 0.5  # (kept by reference: 2 MiB)
        self.rm = np.zeros(3)

    def forward(self, x):
        self.rm[...] = 0.9 * cv.constant(self.rm) + 0.1 * x  # a state
        return (x @ self.W) @ self.big


def test_arrays_the_graph_reads_or_writes_itself_are_not_array_guards():
    layer = Layer()
    graph = cv.capture(layer.forward, X)
    assert not [g for g in graph.python_guards if isinstance(g.value, Digest)]
    layer.W[0, 0] = 2.0  # (a constant: the documented graph.changed() takes it)
    with pytest.raises(ReplayError, match="changed in place since the capture read it"):
        graph.replay({"x": X})
    graph.changed()
    want = (X @ layer.W) @ layer.big
    assert np.array_equal(graph.replay({"x": X})["out"], want)


W = np.ones((4, 3))


def test_the_scope_form_guards_an_array_it_read_outside_the_graph():
    with cv.CaptureDevice().capture_scope() as scope:
        x = scope.input("x", X)
        scope.output(x / np.linalg.norm(W), name="y")
    graph = scope.graph
    assert "guard W == <its values when captured>" in str(graph)
    W[0, 0] = 2.0
    try:
        with pytest.raises(GuardError, match=r"^array W holds other values than when the "
                                             r"with block at test_python_guards_arrays\.py"):
            graph.replay({"x": X})
        with pytest.raises(GuardError, match=r"^graph\.changed\(\) cannot take the new values "
                                             r"of array W: .*\nFix: capture the with block at "
                                             r"test_python_guards_arrays\.py:\d+ again after "
                                             r"changing W$"):
            graph.changed()
    finally:
        W[0, 0] = 1.0


class Shaped:
    def __init__(self):
        self.data = np.zeros((4, 3))  # read for its shape only

    def forward(self, x):
        return x * float(self.data.shape[0]) + len(self.data)


def test_an_array_read_only_for_its_shape_is_guarded_by_its_shape_not_its_values():
    """Review 10 (lead 11:53 (a)): an array read only for .shape / len() had its values
    digested at each replay (100 MB: 12.9 ms a replay); its shape and dtype are what the graph
    depends on."""
    m = Shaped()
    graph = cv.capture(m.forward, X)
    assert [g.value for g in graph.python_guards if g.label == "self.data"] == \
        [((4, 3), "<f8")]
    m.data[...] = 5.0  # (its values: not read)
    assert np.array_equal(graph.replay({"x": X})["out"], m.forward(X))
    m.data = np.zeros((5, 3))
    with pytest.raises(GuardError, match=r"^self\.data was \(\(4, 3\), '<f8'\) when forward"):
        graph.replay({"x": X})


def test_changed_of_a_loaded_graph_with_an_array_guard_is_refused(tmp_path):
    """Ruling 38 10:51: a loaded graph cannot read the array nor capture again."""
    m = Model()
    path = tmp_path / "norm.cvz"
    cv.capture(m.norm, X).save(path)
    with pytest.warns(cv.UncheckedGuardWarning):
        loaded = cv.load(path)
    with pytest.raises(GuardError, match=r"^graph\.changed\(\) cannot take the new values of "
                                         r"array self\.W: .*\nFix: capture norm again"):
        loaded.changed()
