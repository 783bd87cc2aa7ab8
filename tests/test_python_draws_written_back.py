"""A Python number drawn in the captured call (``random.random()``, ``random.gauss``,
``np.random.random()``, ``random.randint``) and Python arithmetic on it, stored on an object,
in a dict item or appended to a list, is written back by each replay as the Python type eager
code holds (review 10, finding 2, silent: it came back ``np.float64`` / ``np.int64``, which
NumPy 2 promotes strongly: ``x32 * self.r`` became float64 after a replay, float32 eagerly)."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

import capviz as cv

SPEC = cv.spec((3,), "float64")
X = np.array([1.0, -2.0, 0.5])


class Drawn:
    def __init__(self):
        self.r = 0.0
        self.k = 0
        self.log = []
        self.d = {"r": 0.0}

    def store(self, x):
        self.r = random.random()
        return x * 2.0

    def gauss(self, x):
        self.r = random.gauss(0.0, 1.0)
        return x * 2.0

    def numpy_global(self, x):
        self.r = np.random.random()
        return x * 2.0

    def derived(self, x):
        self.r = 1.0 + 0.5 * random.random()
        return x * 2.0

    def integer(self, x):
        self.k = random.randint(0, 9)
        return x * 2.0

    def logged(self, x):
        self.log.append(random.random())
        return x * 2.0

    def item(self, x):
        self.d["r"] = random.random()
        return x * 2.0


def _held(obj):
    return repr((obj.r, obj.k, obj.log, obj.d))


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("name", ["store", "gauss", "numpy_global", "derived", "integer",
                                  "logged", "item"])
def test_a_python_draw_is_written_back_as_a_python_number(name, warm, compiled):
    random.seed(0)
    np.random.seed(0)
    eager = Drawn()
    if warm:
        getattr(eager, name)(X)
    want = []
    for _ in range(3):
        out = getattr(eager, name)(X)
        want.append((out, _held(eager)))
    random.seed(0)
    np.random.seed(0)
    mine = Drawn()
    if warm:
        getattr(mine, name)(X)
    graph = cv.capture(getattr(mine, name), SPEC)
    run = graph.compile() if compiled else None
    for out, held in want:
        got = run(X)[0] if compiled else graph.replay({"x": X})["out"]
        assert np.array_equal(got, out)
        assert _held(mine) == held  # (repr: float is not np.float64, int not np.int64)
    assert type(mine.r) is type(eager.r) and type(mine.k) is type(eager.k)


def test_the_written_back_draw_keeps_numpy_s_weak_promotion():
    """The consequence of the type (NEP 50): a float32 array times the stored draw."""
    mine, eager = Drawn(), Drawn()
    graph = cv.capture(mine.store, SPEC)
    graph.replay({"x": X})
    eager.store(X)
    x32 = np.ones(2, np.float32)
    assert (x32 * mine.r).dtype == (x32 * eager.r).dtype == np.float32


# --- Python int arithmetic on draws beyond int64 (review 10, finding 9, silent) ---------------

class Wide:
    def __init__(self):
        self.k = 0
        self.r = 0.0

    def scaled(self, x):
        self.k = random.randint(1, 10) * 2 ** 62  # (eager: an exact Python int past int64)
        return x * 2.0

    def small(self, x):
        self.k = (random.randint(0, 10) * 3 + 1) // 2
        return x * 2.0

    def bits(self, x):
        self.k = random.getrandbits(64)
        return x * 2.0

    def divided(self, x):
        self.r = divmod(random.random(), 0.3)[1]
        return x * 2.0


def test_python_int_arithmetic_on_a_draw_past_int64_is_refused():
    """Before: replayed as int64 and wrapped (replay -4.6e18, eager 3.2e19), silently."""
    with pytest.raises(cv.CapvizError, match=r"Python int arithmetic on a draw at \S+"
                       r"test_python_draws_written_back\.py:\d+ in scaled"):
        cv.capture(Wide().scaled, SPEC)


def test_a_draw_that_may_return_an_int_past_int64_is_refused_at_capture():
    """Before: captured, and a replay that drew past int64 failed inside the replay."""
    with pytest.raises(cv.CapvizError, match=r"random\.getrandbits\(64\)"):
        cv.capture(Wide().bits, SPEC)


@pytest.mark.parametrize("name", ["small", "divided"])
def test_python_arithmetic_on_draws_within_int64_replays_as_eager(name):
    random.seed(1)
    eager = Wide()
    want = []
    for _ in range(3):
        getattr(eager, name)(X)
        want.append(repr((eager.k, eager.r)))
    random.seed(1)
    mine = Wide()
    graph = cv.capture(getattr(mine, name), SPEC)
    for held in want:
        graph.replay({"x": X})
        assert repr((mine.k, mine.r)) == held


class Lcg:
    """An LCG on Python ints (``(a * x + c) % 2**48``): the product leaves int64, which int64
    wraps modulo 2**64, and the remainder by 2**48 (a divisor of 2**64) undoes the wrap."""

    def __init__(self):
        self.k = 0

    def lcg(self, x):
        self.k = (random.randint(0, 2 ** 40) * 1103515245 + 12345) % 2 ** 48
        return x * 2.0

    def negated(self, x):
        self.k = (-random.randint(0, 2 ** 40) * 1103515245 - 12345) % 281474976710656
        return x * 2.0

    def bounded(self, x):  # (exact bounds of % and // by a known number: within int64)
        self.k = (random.randint(0, 2 ** 62) % 1000) * 2 ** 52 + \
            (random.randint(0, 2 ** 62) // 2 ** 40) * 2 ** 40
        return x * 2.0

    def unreduced(self, x):
        self.k = random.randint(0, 2 ** 40) * 1103515245 + 12345
        return x * 2.0

    def by_three(self, x):
        self.k = (random.randint(0, 2 ** 40) * 1103515245 + 12345) % 3
        return x * 2.0

    def halved(self, x):
        self.k = (random.randint(0, 2 ** 40) * 1103515245 + 0.5) % 2 ** 48
        return x * 2.0

    def scaled_after(self, x):
        self.k = (random.randint(0, 2 ** 40) * 1103515245 + 12345) % 2 ** 48 * 2 ** 20
        return x * 2.0


@pytest.mark.parametrize("example", [False, True])
@pytest.mark.parametrize("name", ["lcg", "negated", "bounded"])
def test_an_lcg_reduced_by_a_power_of_two_replays_as_eager(name, example):
    """Before: refused at the product ('Python int arithmetic on a draw ... would wrap past
    2**63 - 1'), though int64's wrap is undone by the remainder (review 10's r10_draws LCG
    row; ruling 39 14:10: exact bounds where they are known)."""
    random.seed(2)
    eager = Lcg()
    want = []
    for _ in range(3):
        getattr(eager, name)(X)
        want.append(eager.k)
    assert max(want) > 0
    random.seed(2)
    mine = Lcg()
    graph = cv.capture(getattr(mine, name), X if example else SPEC)
    for held in want:
        graph.replay({"x": X})
        assert type(mine.k) is int and mine.k == held


@pytest.mark.parametrize("name, code", [
    ("unreduced", "random.randint(0, 2 ** 40) * 1103515245"),
    ("by_three", "random.randint(0, 2 ** 40) * 1103515245"),
    ("halved", "random.randint(0, 2 ** 40) * 1103515245 + 0.5"),
    ("scaled_after", "(random.randint(0, 2 ** 40) * 1103515245 + 12345) % 2 ** 48 * 2 ** 20"),
])
def test_a_wrap_no_power_of_two_remainder_undoes_is_refused(name, code):
    """A result past int64 that is not taken by ``% 2**k`` alone (no remainder, another
    divisor, a float added on the way, the remainder scaled past int64 again): refused at its
    line, as before."""
    with pytest.raises(cv.CapvizError) as info:
        cv.capture(getattr(Lcg(), name), SPEC)
    first = str(info.value).splitlines()[0]
    assert first.startswith(f"`{code}` at "), first
    assert re.search(rf"test_python_draws_written_back\.py:\d+ in {name}: Python int "
                     r"arithmetic on a draw at ", first), first
    assert "would wrap past 2**63 - 1" in str(info.value)


M48 = 2 ** 48


class Bits:
    def __init__(self):
        self.k = 0

    def named(self, x):  # (the modulus a module constant: R11 #4)
        self.k = (random.randint(0, M48 - 1) * 25214903917 + 11) % M48
        return x * 2.0

    def masked(self, x):  # (& (2**k - 1), Java's LCG: R11 #4)
        self.k = (random.randint(0, M48 - 1) * 25214903917 + 11) & (2 ** 48 - 1)
        return x * 2.0

    def bools(self, x):  # (True + True is 2 to Python, True to NumPy)
        self.k = (random.random() < 0.5) + (random.random() < 0.7) - (random.random() < 0.2)
        return x * 2.0

    def bool_past(self, x):  # (a bool is an int to Python: checked like 1: R11 #5)
        self.k = random.randint(2 ** 63 - 3, 2 ** 63 - 1) + True
        return x * 2.0

    def powered(self, x):  # (a 0-d ** : scalar_power, checked like power)
        self.k = random.randint(2, 2 ** 20) ** 5
        return x * 2.0


@pytest.mark.parametrize("name", ["named", "masked", "bools"])
def test_named_moduli_masks_and_bools_replay_as_eager(name):
    """R11 #4: `% M48` (a module constant) and `& (2**48 - 1)` were refused with a fix that
    changed the stream; bool arithmetic on draws: NumPy's bool add (True + True is True) was
    written back where Python holds 2 (silent, pre-existing)."""
    random.seed(3)
    eager = Bits()
    want = []
    for _ in range(4):
        getattr(eager, name)(X)
        want.append(eager.k)
    random.seed(3)
    mine = Bits()
    graph = cv.capture(getattr(mine, name), SPEC)
    for held in want:
        graph.replay({"x": X})
        assert type(mine.k) is int and mine.k == held
    if name == "bools":
        assert {type(k) for k in want} == {int}


def test_a_0_d_power_of_a_draw_is_checked_against_int64():
    """``randint(2, 2**20) ** 5`` (NumPy's scalar ``**``, ``scalar_power``) was not checked at
    all: replayed -9115655216411947127 where eager holds 118877927863440053805222481801
    (silent, pre-existing); now refused at its line like ``power``."""
    with pytest.raises(cv.CapvizError) as info:
        cv.capture(Bits().powered, SPEC)
    first, _why, fix = str(info.value).splitlines()
    assert first.startswith("`random.randint(2, 2 ** 20) ** 5` at "), first
    assert "Python int arithmetic on a draw at " in first
    assert fix == ("Fix: keep it within int64, or reduce it in the same expression with % 2**k "
                   "or & (2**k - 1) (k <= 62), which int64 computes exactly.")


def test_a_bool_operand_past_int64_fails_at_its_node():
    """R11 #5 (silent): ``randint(2**63 - 3, 2**63 - 1) + True`` skipped the int64 check (a
    bool is no int to it) and wrapped to -2**63. Arithmetic with a bool is Python's operator
    now (``python_number``), whose result past int64 fails the replay at that node."""
    random.seed(0)
    mine = Bits()
    graph = cv.capture(mine.bool_past, SPEC)
    random.seed(4)  # (a draw of 2**63 - 1: eager holds 2**63)
    with pytest.raises(cv.ReplayError, match=r"node %\d+ \(python_number\) of int64\[\], "
                                             r"recorded at \S+:\d+ in bool_past: OverflowError: "
                                             r"Python int 9223372036854775808 past int64"):
        for _ in range(20):
            graph.replay({"x": X})
