"""How a replay checks the guards on Python values (capviz/core/python_guards.py ``check``;
review 9, finding 25: 383-493 ns a guard in real models, each guard's path read from the start):
an object on the paths of many guards is read once per replay, the values are compared by
identity first and by value where the object is another, and whatever the user changes on the
way (a new object at a shared place, an item's order, a ``__dict__`` edit, an attribute that
shadows the class's) still refuses the replay, naming the place."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import GuardError
from capviz.core.python_guards import PythonGuard

X = np.arange(12.0).reshape(4, 3)
SPEC = cv.spec((4, 3), "float64")


class Layer:
    kind = "dense"  # a class attribute, read through the object

    def __init__(self, p=0.5, scale=2.0):
        self.p = p
        self.scale = scale
        self.training = True

    def forward(self, x):
        if self.training and self.kind == "dense":
            x = x * (1.0 - self.p)
        return x * self.scale


class Layers:
    """What holds the layers (a module list, a parameter store): an object, not a dict."""

    def __init__(self, n):
        self.by_name = {f"l{k}": Layer() for k in range(n)}


class Model:
    """A module tree as PyTorch holds one: the layers in a dict inside another object."""

    def __init__(self, n=3):
        self.layers = Layers(n)
        self.lr = 0.1

    def forward(self, x):
        for layer in self.layers.by_name.values():
            x = layer.forward(x)
        return x * self.lr


def _eager(model):
    return model.forward(X.copy())


def _refused(graph, label, was, now):
    with pytest.raises(GuardError) as info:
        graph.replay({"x": X})
    first, fix = str(info.value).splitlines()
    assert re.fullmatch(rf"{re.escape(label)} was {re.escape(was)} when forward was captured "
                        rf"\(read at \S*test_guard_check\.py:\d+ in forward\) and "
                        rf"{re.escape(now)} now, so the graph computes what the code did with "
                        r"the old value\.", first), first
    assert fix.startswith(f"Fix: capture forward again after changing {label}")
    assert info.value.place == label


def _labels(graph):
    return {guard.label for guard in graph.python_guards}


def test_an_object_on_many_guards_paths_is_read_once_per_replay(monkeypatch):
    """Before: each of the 13 guards below ``self.layers.by_name`` (3 layers x p, scale,
    training, the class's kind, and the dict's keys) read it again, 13 reads a replay."""
    model = Model()
    graph = cv.capture(model.forward, SPEC)
    assert {"self.layers.by_name['l0'].p", "self.layers.by_name['l2'].scale",
            "self.layers.by_name['l1'].kind", "self.layers.by_name.keys()"} <= _labels(graph)
    reads = []

    def counted(self, name):
        reads.append(name)
        return object.__getattribute__(self, name)

    monkeypatch.setattr(Layers, "__getattribute__", counted)  # (counted after the capture)
    for _ in range(3):
        np.testing.assert_array_equal(graph.replay({"x": X})["out"], _eager(model))
    assert reads == ["by_name", "by_name"] * 3  # (one a replay, one an eager call)


def test_a_new_object_at_a_place_many_guards_pass_through_is_read_anew():
    model = Model()
    graph = cv.capture(model.forward, SPEC)
    model.layers.by_name["l1"] = Layer(p=0.5)  # another object, the same values: replayed
    np.testing.assert_array_equal(graph.replay({"x": X})["out"], _eager(model))
    model.layers.by_name["l1"] = Layer(p=0.25)
    _refused(graph, "self.layers.by_name['l1'].p", "0.5", "is 0.25")
    model.layers.by_name["l1"] = Layer(p=0.5, scale=3.0)
    _refused(graph, "self.layers.by_name['l1'].scale", "2.0", "is 3.0")
    model.layers.by_name = {"l0": Layer(), "l1": Layer(), "l2": Layer()}  # all new, equal: replayed
    np.testing.assert_array_equal(graph.replay({"x": X})["out"], _eager(model))
    del model.layers.by_name["l2"].p
    _refused(graph, "self.layers.by_name['l2'].p", "0.5", "holds nothing")


def test_an_equal_value_in_another_object_replays_and_another_type_refuses():
    model = Model()
    graph = cv.capture(model.forward, SPEC)
    model.lr = float("0.1")  # (another float object, equal to the captured one)
    np.testing.assert_array_equal(graph.replay({"x": X})["out"], _eager(model))
    model.lr = np.float64(0.1)
    _refused(graph, "self.lr", "0.1", "is np.float64(0.1)")
    model.lr = 0.1
    model.layers.by_name["l0"].scale = 2
    _refused(graph, "self.layers.by_name['l0'].scale", "2.0", "is 2")
    model.layers.by_name["l0"].scale = float("2.0")
    np.testing.assert_array_equal(graph.replay({"x": X})["out"], _eager(model))


def test_keys_in_another_order_refuse_and_equal_keys_in_new_objects_replay():
    model = Model()
    graph = cv.capture(model.forward, SPEC)
    layers = model.layers.by_name
    model.layers.by_name = {"".join(["l", str(k)]): layers[f"l{k}"] for k in range(3)}
    np.testing.assert_array_equal(graph.replay({"x": X})["out"], _eager(model))
    model.layers.by_name = {k: layers[k] for k in ("l1", "l0", "l2")}
    with pytest.raises(GuardError) as info:  # (the keys named, stop 41)
        graph.replay({"x": X})
    first, fix = str(info.value).splitlines()
    assert re.fullmatch(r"self\.layers\.by_name's keys reordered since forward was captured, "
                        r"whose code reads self\.layers\.by_name \(read at "
                        r"\S*test_guard_check\.py:\d+ in forward\), so the graph is the program "
                        r"for the keys self\.layers\.by_name had then\.", first), first
    assert fix.startswith("Fix: capture forward again after changing the keys of "
                          "self.layers.by_name")
    assert info.value.place == "self.layers.by_name.keys()"


def test_a_dict_edit_and_an_attribute_shadowing_the_class_s_refuse():
    model = Model()
    graph = cv.capture(model.forward, SPEC)
    model.layers.by_name["l2"].__dict__["training"] = False
    _refused(graph, "self.layers.by_name['l2'].training", "True", "is False")
    model.layers.by_name["l2"].training = True
    model.layers.by_name["l0"].kind = "sparse"  # (shadows Layer.kind)
    _refused(graph, "self.layers.by_name['l0'].kind", "'dense'", "is 'sparse'")
    del model.layers.by_name["l0"].kind
    np.testing.assert_array_equal(graph.replay({"x": X})["out"], _eager(model))
    Layer.kind = "sparse"
    try:
        with pytest.raises(GuardError, match=r"kind was 'dense' when forward was captured"):
            graph.replay({"x": X})
    finally:
        Layer.kind = "dense"
    (out,) = graph.compile()(X)
    np.testing.assert_array_equal(out, _eager(model))


def test_a_read_that_raises_is_named_by_the_guard_that_reads_it():
    model = Model()
    graph = cv.capture(model.forward, SPEC)
    model.layers.by_name["l1"] = object()
    with pytest.raises(GuardError) as info:
        graph.replay({"x": X})
    assert info.value.place.startswith("self.layers.by_name['l1'].")
    assert "holds nothing now" in str(info.value)


def test_a_guard_added_to_the_list_or_changed_in_place_after_a_replay_is_checked():
    model = Model()
    graph = cv.capture(model.forward, SPEC)
    guards = graph.python_guards
    lr = next(g for g in guards if g.label == "self.lr")
    guards.remove(lr)
    graph.replay({"x": X})  # (the check's plan is built, with no guard on self.lr)
    guards.append(lr)
    model.lr = 0.5
    _refused(graph, "self.lr", "0.1", "is 0.5")
    model.lr = 0.1
    graph.replay({"x": X})
    lr.value = 0.5  # (a recorded value changed in place: replan)
    guards.replan()
    _refused(graph, "self.lr", "0.5", "is 0.1")


class Lazy:
    """Reads what it may lack: an attribute, a dict item (hasattr, getattr with a default)."""

    def __init__(self):
        self.opts = {"scale": 2.0}

    def forward(self, x):
        if hasattr(self, "cache"):
            x = x + 1.0
        return x * getattr(self, "p", 0.5) * self.opts.get("shift", 1.0)


def test_a_replay_reads_no_guard_one_by_one_where_nothing_changed(monkeypatch):
    """Before: a guard on an absent place (``hasattr(self, "cache")``) was read by itself at
    every replay, raising and catching an AttributeError (about a microsecond)."""
    lazy = Lazy()
    graph = cv.capture(lazy.forward, SPEC)
    assert {"self.cache", "self.p"} <= {g.label for g in graph.python_guards
                                        if repr(g.value) == "absent"}
    reads = []
    real = PythonGuard.read
    monkeypatch.setattr(PythonGuard, "read", lambda guard: reads.append(guard) or real(guard))
    np.testing.assert_array_equal(graph.replay({"x": X})["out"], lazy.forward(X))
    assert reads == []


def test_a_place_that_was_absent_and_holds_a_value_now_refuses():
    lazy = Lazy()
    graph = cv.capture(lazy.forward, SPEC)
    lazy.cache = None
    with pytest.raises(GuardError, match=r"^self\.cache was absent when forward was captured"):
        graph.replay({"x": X})
    del lazy.cache
    Lazy.p = 0.25  # (read through the object: a class attribute)
    try:
        with pytest.raises(GuardError, match=r"^self\.p was absent when forward was captured"):
            graph.replay({"x": X})
    finally:
        del Lazy.p
    np.testing.assert_array_equal(graph.replay({"x": X})["out"], lazy.forward(X))
