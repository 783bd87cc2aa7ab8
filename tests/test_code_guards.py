"""Code changed in place after a capture, and the items of a dict or list bound as a default
argument (hostile review 13, findings 6 and 7: silent on dc00c85, the replay ran the old code or
the old value while the next eager call ran the new). A replay now refuses with the change named
and the fix; unchanged code keeps replaying (capviz/core/code_guards.py,
capviz/trace/guards_code.py, capviz/trace/guards_python.py)."""

from __future__ import annotations

import re
import types

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import GuardError

X = np.array([-1.0, -0.6])


class Layer:
    def act(self, x):
        return np.tanh(x)

    def __call__(self, x):
        return self.act(x) * 2


def helper(v):
    return np.tanh(v)


def model(x):
    return helper(x) * 2


def _sin(v):
    return np.sin(v)


def _replays_as_eager(graph, fn, calls=3):
    for _ in range(calls):
        assert np.array_equal(graph.replay({"x": X})["out"], fn(X))


def test_a_method_hidden_by_an_attribute_set_on_the_object_refuses():
    layer = Layer()
    graph = cv.capture(layer, X)
    _replays_as_eager(graph, layer)
    layer.act = np.sin  # eager: 2 * sin(x)
    with pytest.raises(GuardError) as err:
        graph.replay({"x": X})
    assert str(err.value) == (
        "self.act is now an attribute of the object (<ufunc sin>), which hides the method "
        f"Layer.act (def at test_code_guards.py:{Layer.act.__code__.co_firstlineno}) that "
        "__call__ called when captured, so the graph computes the old code.\n"
        "Fix: capture __call__ again after setting self.act")
    assert err.value.place == "self.act" and err.value.got is np.sin
    _replays_as_eager(cv.capture(layer, X), layer)  # the fix, applied


def test_a_method_replaced_on_the_class_refuses():
    class Local(Layer):
        pass

    layer = Local()
    graph = cv.capture(layer, X)
    _replays_as_eager(graph, layer)
    Local.act = lambda self, x: np.sin(x)
    with pytest.raises(GuardError, match=re.escape(
            "self.act is now <function test_a_method_replaced_on_the_class_refuses.<locals>."
            "<lambda>> on the class, not the method Layer.act (def at test_code_guards.py:")):
        graph.replay({"x": X})
    _replays_as_eager(cv.capture(layer, X), layer)


def test_a_helper_whose_code_is_replaced_refuses(monkeypatch):
    graph = cv.capture(model, X)
    _replays_as_eager(graph, model)
    line = helper.__code__.co_firstlineno
    # what IPython's %autoreload 2 does to the live function when its module is edited
    monkeypatch.setattr(helper, "__code__", _sin.__code__)
    assert np.array_equal(model(X), np.sin(X) * 2)  # eager runs the new code
    with pytest.raises(GuardError) as err:
        graph.replay({"x": X})
    assert str(err.value).startswith(
        f"the code of helper (def at test_code_guards.py:{line}) "
        "was replaced after model was captured (an edit reloaded in place, as IPython's "
        "%autoreload does, or helper.__code__ assigned), so the graph computes the old code.\n"
        "Fix: capture model again after editing helper")
    _replays_as_eager(cv.capture(model, X), model)


def test_the_same_code_reloaded_and_untouched_methods_keep_replaying():
    graph = cv.capture(model, X)
    same = types.CodeType.replace(helper.__code__)  # an equal code object, not the same one
    original = helper.__code__
    helper.__code__ = same
    try:
        _replays_as_eager(graph, model)
    finally:
        helper.__code__ = original
    layer = Layer()
    layer.other = 1  # an attribute that is not a method name
    _replays_as_eager(cv.capture(layer, X), layer)


def test_code_guards_are_not_listed_and_a_loaded_graph_replays(tmp_path):
    layer = Layer()
    graph = cv.capture(layer, X)
    assert graph.python_guards.codes
    assert not [line for line in str(graph).splitlines() if line.strip().startswith("guard ")]
    path = tmp_path / "g.json"
    graph.save(path)
    loaded = cv.load(path)  # (the program as data: no live code to compare, nothing to warn)
    assert not loaded.python_guards
    layer.act = np.sin
    assert np.array_equal(loaded.replay({"x": X})["out"], np.tanh(X) * 2)  # the saved program


CFG = {"scale": 2.0}
SCALES = [2.0]


def with_dict(x, cfg=CFG):
    return x * cfg["scale"]


def with_list(x, s=SCALES):
    return x * s[0]


def scaled(v, cfg=CFG):
    return v * cfg["scale"]


def calls_helper(x):
    return scaled(x) + 1.0


class Method:
    def __call__(self, x, cfg=CFG):
        return x * cfg["scale"]


@pytest.mark.parametrize("fn, label", [
    (with_dict, "cfg['scale']"), (with_list, "s[0]"),
    (calls_helper, "scaled.<cfg>['scale']"), (Method(), "cfg['scale']")],
    ids=["own_dict", "own_list", "helper_dict", "method_dict"])
def test_an_item_of_a_default_argument_changed_after_the_capture_refuses(fn, label):
    CFG["scale"], SCALES[0] = 2.0, 2.0
    graph = cv.capture(fn, X)
    _replays_as_eager(graph, fn)
    CFG["scale"], SCALES[0] = 5.0, 5.0
    try:
        with pytest.raises(GuardError, match=rf"^{re.escape(label)} was 2\.0 when .* "
                                             r"captured .* and is 5\.0 now"):
            graph.replay({"x": X})
        _replays_as_eager(cv.capture(fn, X), fn)
    finally:
        CFG["scale"], SCALES[0] = 2.0, 2.0


def _aliased(x):
    return HALIAS.layer(x) + 1.0  # noqa: F821 (bound by the test: import ... as HALIAS)


@pytest.mark.parametrize("bound", ["global", "closure"])
def test_a_helper_of_a_module_imported_under_another_name_is_guarded(bound, tmp_path,
                                                                      monkeypatch):
    # import helpers as H; H.layer(x): the functions of a user module reached through an alias
    # (the usual notebook import), as a global or a closure's, were not reached, so
    # %autoreload's edit of them was silent
    name = f"aliased_helpers_{bound}"
    (tmp_path / f"{name}.py").write_text(
        "import numpy as np\nSCALE = 2.0\n\n\ndef layer(x):\n    return np.tanh(x) * SCALE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(name)
    if bound == "global":
        monkeypatch.setitem(globals(), "HALIAS", module)
        fn, label = _aliased, "HALIAS"
    else:
        H = module

        def fn(x):
            return H.layer(x) + 1.0
        label = "H"
    graph = cv.capture(fn, X)
    _replays_as_eager(graph, fn)
    code = module.layer.__code__
    module.layer.__code__ = _sin.__code__
    try:
        with pytest.raises(GuardError, match=rf"^the code of layer \(def at {name}\.py:5\)"):
            graph.replay({"x": X})
    finally:
        module.layer.__code__ = code
    _replays_as_eager(graph, fn)
    module.SCALE = 3.0
    with pytest.raises(GuardError,
                       match=rf"^{label}\.SCALE was 2\.0 when {fn.__name__} was captured"):
        graph.replay({"x": X})
