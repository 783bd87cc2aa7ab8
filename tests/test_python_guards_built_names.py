"""Attributes read by names the code builds at run time (``getattr(self, f"l{i}", None)``,
``vars(self)``): the guards hold each walked object's attribute names (ruling 40 17:35, #20,
W=20g; silent before: an attribute the user added later was never read by a replay)."""

import importlib
import inspect
import sys
import types

import numpy as np
import pytest

import capviz as cv


class Layers:
    def __init__(self):
        self.l0 = np.eye(3) * 2.0
        self.l1 = np.eye(3) * 3.0

    def walrus(self, x):
        i = 0
        while (layer := getattr(self, f"l{i}", None)) is not None:
            x = x @ layer
            i += 1
        return x

    def has(self, x):
        i = 0
        while hasattr(self, f"l{i}"):
            x = x @ getattr(self, f"l{i}")
            i += 1
        return x

    def concatenated(self, x):
        for i in range(3):
            layer = getattr(self, "l" + str(i), None)
            if layer is not None:
                x = x @ layer
        return x

    def dict_get(self, x):
        for i in range(3):
            layer = self.__dict__.get(f"l{i}")
            if layer is not None:
                x = x @ layer
        return x

    def in_vars(self, x):
        for i in range(3):
            if f"l{i}" in vars(self):
                x = x @ vars(self)[f"l{i}"]
        return x

    def caught(self, x):
        for i in range(3):
            try:
                x = x @ getattr(self, f"l{i}")
            except AttributeError:
                pass
        return x

    def by_getattribute(self, x):
        for i in range(3):
            try:
                x = x @ object.__getattribute__(self, f"l{i}")
            except AttributeError:
                pass
        return x

    def listed(self, x):
        for name, value in inspect.getmembers(self):
            if name.startswith("l") and isinstance(value, np.ndarray):
                x = x @ value
        return x

    def named(self, x):
        return x @ self.l0 * getattr(self, "scale", 0.5)


X = np.ones((2, 3))
BUILT = ["walrus", "has", "concatenated", "dict_get", "in_vars", "caught", "by_getattribute",
         "listed"]


@pytest.mark.parametrize("method", BUILT)
def test_an_attribute_added_under_a_built_name_refuses_the_replay(method):
    m = Layers()
    graph = cv.capture(getattr(m, method), X)
    assert np.array_equal(graph.replay({"x": X})["out"], X * 6.0)
    m.l2 = np.eye(3) * 5.0
    with pytest.raises(cv.GuardError, match=(
            rf"^self\.l2 added since {method} was captured, whose code reads attributes by "
            r"names it builds at run time .*\nFix: capture " + method + r" again after "
            r"changing the attributes of self")):
        graph.replay({"x": X})
    graph = cv.capture(getattr(m, method), X)  # the fix
    assert np.array_equal(graph.replay({"x": X})["out"], getattr(m, method)(X))
    assert np.array_equal(graph.replay({"x": X})["out"], X * 30.0)


@pytest.mark.parametrize("method", ["walrus", "in_vars"])
def test_an_attribute_deleted_refuses_the_replay(method):
    m = Layers()
    graph = cv.capture(getattr(m, method), X)
    del m.l1
    with pytest.raises(cv.GuardError, match=r"^self\.l1 deleted since "):
        graph.replay({"x": X})


def test_getattr_of_a_constant_name_guards_that_name_only():
    m = Layers()
    graph = cv.capture(m.named, X)
    m.other = 1.0  # (a name the code never reads: no refusal)
    assert np.array_equal(graph.replay({"x": X})["out"], m.named(X))
    m.scale = 2.0
    with pytest.raises(cv.GuardError, match=r"^self\.scale was absent when named was captured"):
        graph.replay({"x": X})


class Spaced:
    def __init__(self):
        self.ns = types.SimpleNamespace(l0=np.eye(3) * 2.0, l1=np.eye(3) * 3.0)

    def forward(self, x):
        i = 0
        while (layer := getattr(self.ns, f"l{i}", None)) is not None:
            x = x @ layer
            i += 1
        return x


def test_a_namespace_s_attribute_added_under_a_built_name_refuses_the_replay():
    """Review 12, finding 7 (silent): a types.SimpleNamespace of layers was no user object,
    so its attribute names were not guarded."""
    m = Spaced()
    graph = cv.capture(m.forward, X)
    m.ns.l2 = np.eye(3) * 5.0
    with pytest.raises(cv.GuardError, match=r"^self\.ns\.l2 added since forward was captured"):
        graph.replay({"x": X})
    graph = cv.capture(m.forward, X)
    assert np.array_equal(graph.replay({"x": X})["out"], X * 30.0)


def _l2_only(self, name):
    if name == "l2":
        return np.eye(3) * 5.0
    raise AttributeError(name)


@pytest.mark.parametrize("added", ["class_attribute", "getattr_on_the_class"])
def test_a_name_added_to_the_class_under_a_built_name_refuses_the_replay(added):
    """Review 12, finding 7 (silent): getattr(self, f"l{i}", None) falls through to the class
    (a class attribute, a __getattr__ set on it after the capture)."""
    class Local(Layers):
        pass

    m = Local()
    graph = cv.capture(m.walrus, X)
    if added == "class_attribute":
        Local.l2 = np.eye(3) * 5.0
    else:
        Local.__getattr__ = _l2_only
    with pytest.raises(cv.GuardError, match=(
            r"^type\(self\)\.(l2|__getattr__) added since walrus was captured.*\nFix: capture "
            r"walrus again after changing the attributes of type\(self\)")):
        graph.replay({"x": X})
    graph = cv.capture(m.walrus, X)
    assert np.array_equal(graph.replay({"x": X})["out"], m.walrus(X))


SETTINGS = "lr_0 = 2.0\nlr_1 = 3.0\n"
STEP = '''import capviz_built_settings


def f(x):
    i = 0
    while (v := getattr(capviz_built_settings, f"lr_{i}", None)) is not None:
        x = x * v
        i += 1
    return x
'''


def test_a_name_added_to_another_user_module_under_a_built_name_refuses_the_replay(
        tmp_path, monkeypatch):
    """getattr(settings_module, f"lr_{i}", None) of an imported user module: the module's
    names are guarded (silent before: lr_2 added later was read by no replay)."""
    (tmp_path / "capviz_built_settings.py").write_text(SETTINGS)
    (tmp_path / "capviz_built_step.py").write_text(STEP)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("capviz_built_settings", "capviz_built_step"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    step = importlib.import_module("capviz_built_step")
    settings = importlib.import_module("capviz_built_settings")
    try:
        graph = cv.capture(step.f, X)
        settings.lr_2 = 5.0
        with pytest.raises(cv.GuardError, match=(
                r"^capviz_built_settings\.lr_2 added since f was captured, whose code reads "
                r"attributes by names it builds at run time")):
            graph.replay({"x": X})
        graph = cv.capture(step.f, X)  # the fix
        assert np.array_equal(graph.replay({"x": X})["out"], X * 30.0)
    finally:
        for name in ("capviz_built_settings", "capviz_built_step"):
            sys.modules.pop(name, None)
