"""Guards on Python values read by code with no module of its own (review 9, finding 24:
silent): classes made by ``exec(src, {})`` read ``__module__ == "builtins"`` and were taken for
the interpreter's, so ``model.eval()`` between replays replayed the training graph. Library
code is decided by where its file is, never by the absence of source text or of a module
(lead ruling 38, 10:50): such classes are the user's and their values are guarded, named at
the line that read them (from the bytecode where there is no source text)."""

from __future__ import annotations

import builtins
import os
import subprocess
import sys
import sysconfig
import types

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import GuardError
from capviz.core.source import interpreters_type, library_type
from capviz.trace import code_reach

X = np.arange(12.0).reshape(4, 3)
SPEC = cv.spec((4, 3), "float64")
FILE = "/nowhere/exec_model.py"  # (a file name with no file: no source text)
SRC = '''
import numpy as np
class Cfg:
    p = 0.5
class Slot:
    __slots__ = ("p",)
    def __init__(self): self.p = 0.5
class Model:
    scale = 2.0
    def __init__(self):
        self.training = True
        self.cfg = Cfg()
        self.slot = Slot()
    def forward(self, x):
        y = x * self.scale * (1.0 - self.cfg.p) * self.slot.p
        return y if self.training else y + 1.0
'''
CHANGES = {  # what the user changes between replays: (the change, the place, the line)
    "eval": (lambda m, ns: setattr(m, "training", False), "self.training", 16),
    "object's p": (lambda m, ns: setattr(m.cfg, "p", 0.1), "self.cfg.p", 15),
    "class's p": (lambda m, ns: setattr(ns["Cfg"], "p", 0.1), "self.cfg.p", 15),
    "slot": (lambda m, ns: setattr(m.slot, "p", 0.1), "self.slot.p", 15),
    "class attribute": (lambda m, ns: setattr(ns["Model"], "scale", 3.0), "self.scale", 15),
}


def _made(namespace: dict, file: str = FILE) -> dict:
    exec(compile(SRC, file, "exec"), namespace)
    return namespace


NAMESPACES = {  # (its namespace, the file name its code is compiled with)
    "no_name": ({}, FILE),
    "named": ({"__name__": "loaded"}, FILE),
    "a_library_s_name": ({"__name__": "json"}, FILE),  # (review 10, finding 6: silent)
    "a_library_s_name_no_file": ({"__name__": "numpy.linalg"}, "<string>"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
@pytest.mark.parametrize("how", sorted(NAMESPACES))
def test_a_value_of_an_exec_d_class_changed_between_replays_is_refused(how, change):
    namespace, file = NAMESPACES[how]
    ns = _made(dict(namespace), file)
    model = ns["Model"]()
    graph = cv.capture(model.forward, SPEC)
    assert np.array_equal(graph.replay({"x": X})["out"], model.forward(X))
    edit, place, line = CHANGES[change]
    edit(model, ns)
    with pytest.raises(GuardError) as e:
        graph.replay({"x": X})
    text = str(e.value)
    assert text.startswith(f"{place} was ")
    assert f"(read at {file}:{line} in forward)" in text
    assert "Fix: capture forward again" in text
    again = cv.capture(model.forward, SPEC)  # the fix
    for _ in range(2):
        assert np.array_equal(again.replay({"x": X})["out"], model.forward(X))


def test_exec_d_classes_are_the_users_and_the_interpreter_s_types_are_not():
    ns = _made({})
    assert ns["Model"].__module__ == "builtins"
    for kind in (ns["Model"], ns["Cfg"], ns["Slot"]):
        assert not interpreters_type(kind) and not library_type(kind)
        assert code_reach._users(kind)
    for kind in (int, list, dict, type(None), types.FunctionType, object,
                 vars(builtins).get("ExceptionGroup", object)):  # (a heap type of theirs)
        assert interpreters_type(kind) and library_type(kind)
    assert library_type(np.ndarray) and not interpreters_type(np.ndarray)


def test_exec_d_code_is_library_code_by_the_place_of_its_file():
    stdlib = os.path.join(sysconfig.get_paths()["stdlib"], "capviz_not_here.py")
    ns: dict = {}
    exec(compile(SRC, stdlib, "exec"), ns)
    assert not code_reach._users(ns["Model"])  # (a file in the standard library's folder)
    assert code_reach._users(_made({})["Model"])


def test_a_model_defined_by_python_c_is_guarded(tmp_path):
    code = f"""
import sys; sys.path.insert(0, {os.getcwd()!r})
import numpy as np, capviz as cv
exec({SRC!r})
m = Model(); g = cv.capture(m.forward, cv.spec((4, 3), "float64"))
m.training = False
try:
    g.replay({{"x": np.ones((4, 3))}})
except cv.GuardError as e:
    print(str(e).splitlines()[0])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout
    assert out.startswith("self.training was True when forward was captured (read at "
                          "<string>:16 in forward) and is False now"), out


def test_a_class_type_made_in_exec_d_code_with_no_module_is_guarded():
    """Review 10, finding 5 (raw error): ``type("Dyn", (), {...})`` run by ``exec(src, {})``
    makes a class with no ``__module__``: the capture raised AttributeError."""
    ns: dict = {}
    exec(compile("Dyn = type('Dyn', (), {'k': 2.0})\n"
                 "class Net:\n"
                 "    def __init__(self): self.dyn = Dyn()\n"
                 "    def forward(self, x): return x * self.dyn.k\n", FILE, "exec"), ns)
    assert "__module__" not in vars(ns["Dyn"])
    net = ns["Net"]()
    graph = cv.capture(net.forward, SPEC)
    net.dyn.k = 3.0
    with pytest.raises(GuardError, match=r"^self\.dyn\.k was 2\.0 when forward was captured"):
        graph.replay({"x": X})
    assert np.array_equal(cv.capture(net.forward, SPEC).replay({"x": X})["out"], X * 3.0)
