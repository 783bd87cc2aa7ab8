"""A module global named like an attribute the code reads (review 11, finding 2: refusal of
common code): ``x * self.scale`` with a global ``scale`` in the module (a notebook's ``lr = 0.1``
cell, then ``self.lr = lr``) guarded the global, so a new value of it (the next cell) refused
every replay, naming a value the code never reads. Only names the code loads as globals
(``LOAD_GLOBAL`` / ``LOAD_NAME``) are guarded as globals now; one it does read stays guarded."""

from __future__ import annotations

import types

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import GuardError

X = np.array([1.0, 2.0, 3.0])
scale = 2.0
lr = 0.1


class Model:
    def __init__(self):
        self.scale, self.lr = 3.0, 0.5

    def forward(self, x):
        return x * self.scale - self.lr * x

    def reads_the_global(self, x):
        return x * scale


def test_a_global_named_like_an_attribute_is_not_guarded():
    global scale, lr
    m = Model()
    graph = cv.capture(m.forward, X)
    assert [g.label for g in graph.python_guards if g.label in ("scale", "lr")] == []
    try:
        for step in range(3):
            scale, lr = 5.0 + step, 0.2 + step  # (the module's, not the model's)
            assert np.array_equal(graph.replay({"x": X})["out"], m.forward(X))
    finally:
        scale, lr = 2.0, 0.1


def test_a_global_the_code_reads_is_still_guarded():
    global scale
    m = Model()
    graph = cv.capture(m.reads_the_global, X)
    assert np.array_equal(graph.replay({"x": X})["out"], m.reads_the_global(X))
    try:
        scale = 5.0
        with pytest.raises(GuardError, match=r"^scale was 2\.0 when reads_the_global was "
                                             r"captured \(read at .*\) and is 5\.0 now"):
            graph.replay({"x": X})
    finally:
        scale = 2.0


# --- a global object's attribute read outside fn's own code (review 12, finding 8, silent) ----
#
# ``def temperature(): return CONFIG.temperature`` then ``x / temperature()``: the walk entered
# the globals fn's own code names (temperature, a function), not CONFIG, so no guard read
# CONFIG.temperature; also through an inline lambda, a nested def, a comprehension, a dict
# item, a plain object, and an array NumPy reads there (np.linalg.norm(W) in a helper).

class Holder:
    def __init__(self):
        self.scale = 2.0


CFG = types.SimpleNamespace(scale=2.0)
HCFG = Holder()
DCFG = {"scale": 2.0}
WEIGHT = np.arange(1.0, 4.0)


def _cfg_scale():
    return CFG.scale


def _holder_scale():
    return HCFG.scale


def _norm():
    return np.linalg.norm(WEIGHT)


def _nested(x):
    def inner():
        return CFG.scale
    return x * inner()


READS = {
    "helper": (lambda x: x * _cfg_scale(), "CFG.scale"),
    "inline_lambda": (lambda x: x * (lambda: CFG.scale)(), "CFG.scale"),
    "comprehension": (lambda x: x * [CFG.scale for _ in range(2)][1], "CFG.scale"),
    "generator": (lambda x: x * sum(CFG.scale for _ in range(1)), "CFG.scale"),
    "nested_def": (_nested, "CFG.scale"),
    "plain_object": (lambda x: x * _holder_scale(), "HCFG.scale"),
    "dict_item": (lambda x: x * (lambda: DCFG["scale"])(), r"DCFG\['scale'\]"),
    "globals_call": (lambda x: x * globals()["CFG"].scale, "CFG.scale"),
}


def _set(value):
    CFG.scale = HCFG.scale = value
    DCFG["scale"] = value


@pytest.mark.parametrize("name", list(READS))
def test_a_global_object_s_attribute_read_outside_fn_s_code_is_guarded(name):
    fn, label = READS[name]
    _set(2.0)
    try:
        graph = cv.capture(fn, X)
        assert np.array_equal(graph.replay({"x": X})["out"], X * 2.0)
        _set(3.0)
        with pytest.raises(GuardError, match=rf"^{label} was 2\.0 when .* and is 3\.0 now"):
            graph.replay({"x": X})
        graph = cv.capture(fn, X)  # the fix: capture again after changing it
        assert np.array_equal(graph.replay({"x": X})["out"], fn(X))
    finally:
        _set(2.0)


def test_a_global_array_numpy_reads_in_a_helper_is_guarded():
    fn = lambda x: x / _norm()  # noqa: E731
    graph = cv.capture(fn, X)
    before = WEIGHT.copy()
    try:
        WEIGHT[0] = 5.0
        with pytest.raises(GuardError, match=r"^array WEIGHT holds other values than when "):
            graph.replay({"x": X})
        graph.changed()  # the fix the message gives
        assert np.array_equal(graph.replay({"x": X})["out"], fn(X))
    finally:
        WEIGHT[...] = before


# --- a user's class used as a namespace of settings (silent, pre-existing) -----------------------

class Config:
    scale = 2.0
    opts = {"lr": 2.0}
    ns = types.SimpleNamespace(lr=2.0)

    class Sub:
        lr = 2.0


class Derived(Config):
    pass


def _config_scale():
    return Config.scale


CLASS_READS = {
    "direct": (lambda x: x * Config.scale, "Config.scale", ("scale",)),
    "helper": (lambda x: x * _config_scale(), "Config.scale", ("scale",)),
    "inline_lambda": (lambda x: x * (lambda: Config.scale)(), "Config.scale", ("scale",)),
    "a_base_s": (lambda x: x * Derived.scale, "Derived.scale", ("scale",)),
    "dict_inside": (lambda x: x * Config.opts["lr"], r"Config\.opts\['lr'\]", ("opts", "lr")),
    "namespace_inside": (lambda x: x * Config.ns.lr, r"Config\.ns\.lr", ("ns", "lr")),
    "nested_class": (lambda x: x * Config.Sub.lr, r"Config\.Sub\.lr", ("Sub", "lr")),
}


def _set_class(path, value):
    holder = Config
    for step in path[:-1]:
        holder = getattr(holder, step)
    if isinstance(holder, dict):
        holder[path[-1]] = value
    else:
        setattr(holder, path[-1], value)


@pytest.mark.parametrize("how", list(CLASS_READS))
def test_a_value_a_global_class_holds_is_guarded(how):
    fn, label, path = CLASS_READS[how]
    graph = cv.capture(fn, X)
    try:
        _set_class(path, 3.0)
        with pytest.raises(GuardError, match=rf"^{label} was 2\.0 when .* and is 3\.0 now"):
            graph.replay({"x": X})
        graph = cv.capture(fn, X)  # the fix: capture again after changing it
        assert np.array_equal(graph.replay({"x": X})["out"], fn(X))
    finally:
        _set_class(path, 2.0)


# --- a notebook cell's globals: capviz's own objects are not walked (the lead, stop 40) ------
CELL = '''
import numpy as np
import capviz as cv
w1 = np.full((3, 4), 0.5)
cap = cv.CaptureDevice()
with cap.capture_scope() as scope:
    x = scope.input("x", (2, 3))
    h = np.tanh(x @ w1)
    scope.output(h * CFG.scale, "y")
'''


def test_a_cells_device_and_tensors_are_not_walked_but_its_config_is_guarded():
    """A notebook cell runs in ``__main__``'s globals, where ``cap`` (the ``CaptureDevice``)
    and ``h`` (a capture's ``Tensor``) are globals the block loads. 216a677 walked them as
    a user's global objects: places over the live capture's own state (its lock, the
    Tensor's node), and JupyterLab's live view of the quickstart failed 3 runs in 4
    (tests/test_browser.py). Only the user's objects are walked: ``CFG.scale`` is still
    guarded, ``w1`` by its digest."""
    namespace = {"__name__": "__main__", "CFG": types.SimpleNamespace(scale=2.0)}
    exec(compile(CELL, "<cell>", "exec"), namespace)
    labels = [g.label for g in namespace["scope"].graph.python_guards]
    assert [lab for lab in labels if lab.split(".")[0] in ("cap", "h", "scope")] == []
    assert "CFG.scale" in labels
    x = np.ones((2, 3), np.float32)
    graph = namespace["scope"].graph
    assert np.array_equal(graph.replay({"x": x})["y"], np.tanh(x @ namespace["w1"]) * 2.0)
    namespace["CFG"].scale = 3.0
    with pytest.raises(GuardError, match=r"^CFG\.scale was 2\.0 when .* and is 3\.0 now"):
        graph.replay({"x": x})
