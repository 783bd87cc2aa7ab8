"""An unset ``__slots__`` attribute the code tests with ``hasattr`` or reads with ``getattr``'s
default (review 10, finding 13, silent): the user set the slot between replays, eager took the
other branch (``hasattr(self, "sl")``) or the slot's value (``getattr(self, "sl", 0.5)``), the
replay kept the capture's. A slot is no ``__dict__`` entry, and its class holds its descriptor,
so the absence guards of attributes missed it. Now it is guarded as absent: set, the replay is
refused naming it; one the call itself sets is refused with the fix (call it once first)."""

from __future__ import annotations

import contextlib
import operator

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import GuardError

X = np.array([1.0, 2.0, 3.0])


class Base:
    __slots__ = ("__dict__", "sl")


class WithDict(Base):
    def forward(self, x):
        return x * (3.0 if hasattr(self, "sl") else 1.0)


class Slotted:
    __slots__ = ("sl", "w")

    def __init__(self):
        self.w = 2.0

    def forward(self, x):
        return x * self.w * getattr(self, "sl", 0.5)


class Holder:
    def __init__(self):
        self.inner = Slotted()

    def forward(self, x):
        return x * (3.0 if hasattr(self.inner, "sl") else 1.0)


class Lazy:
    __slots__ = ("n",)

    def forward(self, x):
        if not hasattr(self, "n"):
            self.n = 2.0
        return x * self.n


def _replays_as_eager(graph, fn, calls=3):
    for _ in range(calls):
        assert np.array_equal(graph.replay({"x": X})["out"], fn(X))


@pytest.mark.parametrize(("make", "label", "value"), [
    (WithDict, "self.sl", "1.5"), (Slotted, "self.sl", "1.5"), (Holder, "self.inner.sl", "1.5")],
    ids=["slot_and_dict", "slots_only", "inner_object"])
def test_an_unset_slot_set_between_replays_is_refused(make, label, value):
    m = make()
    graph = cv.capture(m.forward, X)
    _replays_as_eager(graph, m.forward)  # (nothing changed: exact, not refused)
    setattr(m.inner if make is Holder else m, "sl", 1.5)
    with pytest.raises(GuardError) as info:
        graph.replay({"x": X})
    lines = str(info.value).splitlines()
    assert lines[0].startswith(f"{label} was absent when forward was captured (read at ")
    assert lines[0].endswith(f"in forward) and holds {value} now, so the graph computes what "
                             "the code did with the old value.")
    assert lines[1].startswith(f"Fix: capture forward again after changing {label}")
    again = cv.capture(m.forward, X)  # the fix, applied
    _replays_as_eager(again, m.forward)
    assert np.array_equal(again.compile(backend="numpy")(X)[0], m.forward(X))


def test_a_slot_the_call_sets_when_unset_is_refused_with_the_fix_then_replays():
    m = Lazy()
    graph = cv.capture(m.forward, X)
    with pytest.raises(GuardError) as info:
        graph.replay({"x": X})
    assert str(info.value).splitlines() == [
        f"self.n was absent when forward was captured (read at {__file__}:"
        f"{Lazy.forward.__code__.co_firstlineno + 3} in forward), and forward set it to 2.0, "
        "which a replay does not do (it runs no Python), so the graph is the program for self.n "
        "absent.",
        "Fix: call forward once before capturing it, so that the capture starts from the value "
        "it leaves"]
    m = Lazy()
    m.forward(X)  # the fix, applied
    graph = cv.capture(m.forward, X)
    _replays_as_eager(graph, m.forward)
    m.n = 5.0
    with pytest.raises(GuardError, match=r"^self\.n was 2\.0 when forward was captured"):
        graph.replay({"x": X})


# --- review 11, finding 6 (silent): the absence read where an AttributeError is caught --------

NAMES = ("sl",)


class Plain:
    def __init__(self):
        self.names = ["sl"]

    def tried(self, x):
        try:
            v = self.sl
        except AttributeError:
            v = 0.5
        return x * v

    def tried_in_helper(self, x):
        try:
            v = self.scale()
        except Exception:
            v = 0.5
        return x * v

    def scale(self):
        return self.sl * 2.0

    def names_of_a_global(self, x):
        v = 0.5
        for name in NAMES:
            if hasattr(self, name):
                v = getattr(self, name)
        return x * v

    def names_held(self, x):
        v = 0.5
        for name in self.names:
            v = getattr(self, name, v)
        return x * v


class SlottedPlain(Plain):
    __slots__ = ("sl",)


@pytest.mark.parametrize("method", ["tried", "tried_in_helper", "names_of_a_global",
                                    "names_held"])
@pytest.mark.parametrize("make", [Plain, SlottedPlain], ids=["dict", "slot"])
def test_an_attribute_absent_where_its_error_is_caught_is_guarded(make, method):
    m = make()
    fn = getattr(m, method)
    graph = cv.capture(fn, X)
    _replays_as_eager(graph, fn)
    m.sl = 1.5
    with pytest.raises(GuardError) as info:
        graph.replay({"x": X})
    lines = str(info.value).splitlines()
    assert lines[0].startswith(f"self.sl was absent when {method} was captured (read at ")
    assert lines[0].endswith("and holds 1.5 now, so the graph computes what the code did with "
                             "the old value.")
    again = cv.capture(fn, X)  # the fix, applied
    _replays_as_eager(again, fn)


def tried_global(x):
    try:
        v = SCALE  # (the user defines it later)
    except NameError:
        v = 0.5
    return x * v


class Others:
    def attrgetter(self, x):
        try:
            v = operator.attrgetter("sl")(self)
        except AttributeError:
            v = 0.5
        return x * v

    def suppressed(self, x):
        v = 0.5
        with contextlib.suppress(AttributeError):
            v = self.sl
        return x * v

    def listed(self, x):
        return x * (3.0 if "sl" in dir(self) else 1.0)


def test_a_global_absent_where_its_name_error_is_caught_is_guarded():
    """Review 11, finding 6's remnant (silent): ``try: v = SCALE`` / ``except NameError``."""
    graph = cv.capture(tried_global, X)
    _replays_as_eager(graph, tried_global)
    globals()["SCALE"] = 1.5
    try:
        with pytest.raises(GuardError, match=r"^SCALE was absent when tried_global was "
                                             r"captured \(read at .*\) and holds 1\.5 now"):
            graph.replay({"x": X})
        again = cv.capture(tried_global, X)  # the fix, applied
        _replays_as_eager(again, tried_global)
    finally:
        del globals()["SCALE"]


@pytest.mark.parametrize("method", ["attrgetter", "suppressed", "listed"])
def test_an_attribute_absent_read_by_other_spellings_is_guarded(method):
    """Review 11, finding 6's remnant (silent): ``operator.attrgetter("sl")`` in a try,
    ``contextlib.suppress(AttributeError)``, ``"sl" in dir(self)``."""
    m = Others()
    fn = getattr(m, method)
    graph = cv.capture(fn, X)
    _replays_as_eager(graph, fn)
    m.sl = 1.5
    with pytest.raises(GuardError, match=rf"^self\.sl was absent when {method} was captured"):
        graph.replay({"x": X})
