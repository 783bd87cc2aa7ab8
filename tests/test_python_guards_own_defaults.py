"""Two narrow guard holes (#20, stop 41, W=20k), each silent on dc00c85: a replay after the edit
computed with the captured value where the eager call reads the new one.

- A global read by a name built at run time (``globals().get(f"CFG{i}", 1.0)``, ``"CFG4" in
  globals()``) that is *added* after the capture: the values of the globals there were guarded,
  not which there are. Now the names the module binds to Python values are guarded (not those
  starting with ``_``, a notebook's history, nor functions, classes, arrays).
- ``fn``'s own default arguments (``def f(x, s=2.0)``; ``__kwdefaults__``; an item of a list
  default) and a helper's keyword-only defaults, edited after the capture (a helper's
  ``__defaults__`` was guarded already)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import GuardError

X = np.array([1.0, 2.0, 3.0])


def _exact_then_refused(fn, change, message):
    graph = cv.capture(fn, X)
    for k in range(2):
        x = X + k
        assert graph.replay({"x": x})["out"].tobytes() == fn(x).tobytes()
    change()
    with pytest.raises(GuardError) as info:
        graph.replay({"x": X})
    assert str(info.value) == message
    again = cv.capture(fn, X)  # (the fix, applied)
    for k in range(2):
        x = X + k
        assert again.replay({"x": x})["out"].tobytes() == fn(x).tobytes()


def _line(fn, offset):
    return f"{__file__}:{fn.__code__.co_firstlineno + offset} in {fn.__name__}"


def built_get(x, i=1):
    return x * globals().get(f"CFG{i}", 1.0)


def built_in(x):
    space = globals()
    return x * (space["CFG4"] if "CFG4" in space else 1.0)


@pytest.mark.parametrize("fn, name", [(built_get, "CFG1"), (built_in, "CFG4")])
def test_a_global_added_under_a_built_name_refuses_the_replay(fn, name):
    try:
        _exact_then_refused(fn, lambda: globals().__setitem__(name, 5.0), (
            f"global {name} added since {fn.__name__} was captured, whose code reads globals "
            f"by names it builds at run time (read at {_line(fn, 1)}), so the graph is the "
            "program for the globals there were then.\n"
            f"Fix: capture {fn.__name__} again after changing the globals (a graph per set of "
            "globals: keep one for each)"))
    finally:
        globals().pop(name, None)


def test_a_function_an_array_or_a_history_name_added_does_not_refuse():
    """What a notebook's next cell adds (a function, an array, ``_i3``) is not a setting the
    built name can read as a number: the replay goes on, exact."""
    graph = cv.capture(built_get, X)
    added = {"helper_added": lambda v: v, "array_added": np.ones(3), "_i41": "x = 1"}
    globals().update(added)
    try:
        for k in range(2):
            x = X + k
            assert graph.replay({"x": x})["out"].tobytes() == built_get(x).tobytes()
    finally:
        for name in added:
            globals().pop(name)


def own_default(x, s=2.0):
    return x * s


def own_keyword(x, *, s=2.0):
    return x * s


def own_flag(x, training=True):
    return x * 2.0 if training else x


def own_list(x, s=[2.0]):  # (a list default: the case itself)
    return x * s[0]


def keyword_helper(v, *, s=2.0):
    return v * s


def calls_keyword_helper(x):
    return keyword_helper(x)


class Model:
    def step(self, x, s=2.0):
        return x * s


def _was(label, fn, line_of, old, new):
    return (f"{label} was {old} when {fn.__name__} was captured (read at {line_of}) and is "
            f"{new} now, so the graph computes what the code did with the old value.\n"
            f"Fix: capture {fn.__name__} again after changing {label} (a graph per value: "
            "keep one for each), or pass it to the function as an argument (an input the "
            "graph reads)")


CASES = {
    "defaults": (own_default, lambda: setattr(own_default, "__defaults__", (5.0,)),
                 "own_default.__defaults__", 0, "(2.0,)", "(5.0,)"),
    "kwdefaults": (own_keyword, lambda: own_keyword.__kwdefaults__.__setitem__("s", 5.0),
                   "own_keyword.__kwdefaults__['s']", 1, "2.0", "5.0"),
    "flag": (own_flag, lambda: setattr(own_flag, "__defaults__", (False,)),
             "own_flag.__defaults__", 0, "(True,)", "(False,)"),
    "list_item": (own_list, lambda: own_list.__defaults__[0].__setitem__(0, 5.0),
                  "s[0]", 1, "2.0", "5.0"),
    "helper_kwdefaults": (calls_keyword_helper,
                          lambda: keyword_helper.__kwdefaults__.__setitem__("s", 5.0),
                          "keyword_helper.__kwdefaults__['s']", 1, "2.0", "5.0"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_default_argument_edited_after_the_capture_refuses_the_replay(case):
    fn, change, label, offset, old, new = CASES[case]
    helper = keyword_helper if case == "helper_kwdefaults" else fn
    line_of = _line(helper, offset)  # (the def line, or the line reading the keyword)
    saved = (fn.__defaults__, dict(fn.__kwdefaults__ or {}), keyword_helper.__kwdefaults__["s"])
    try:
        _exact_then_refused(fn, change, _was(label, fn, line_of, old, new))
    finally:
        fn.__defaults__ = saved[0] if case != "list_item" else ([2.0],)
        if saved[1]:
            fn.__kwdefaults__ = saved[1]
        keyword_helper.__kwdefaults__["s"] = saved[2]


def test_a_method_default_edited_on_its_class_refuses_the_replay():
    model = Model()
    try:
        _exact_then_refused(model.step, lambda: setattr(Model.step, "__defaults__", (5.0,)),
                            _was("Model.step.__defaults__", Model.step, _line(Model.step, 0),
                                 "(2.0,)", "(5.0,)"))
    finally:
        Model.step.__defaults__ = (2.0,)
