"""``**`` on the Python numbers an object keeps replays as Python's ``pow`` (ruling 40 17:35,
#20, W=20L; capviz/ops/python_numbers.py): Adam's bias correction ``1 - b1 ** self.t`` with a
Python step counter, ``3 ** self.t`` (an exact int past 2**53), ``self.t ** -1`` (a float),
``self.s ** 0.5``. Before: the lifted run met ``power``, which was not one of Python's
operators it replays, and the capture refused the counter ("self.t is a Python number that
changes from call to call"). Where eager Python's result is not what the graph can hold (an int
past int64, a complex, an int exponent gone negative) or Python raises (``0.0 ** -1``), the
replay fails at the node, naming it and the line; the object is left as it was."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import ReplayError

ROWS = np.random.default_rng(40).standard_normal((5, 4))


class Adam:
    """A Python step counter and Adam's bias corrections (the moments given: ``m``, ``v``)."""

    def __init__(self, b1=0.9, b2=0.999):
        self.t = 0
        self.b1 = b1
        self.b2 = b2

    def step(self, x):
        self.t += 1
        m_hat = x / (1 - self.b1 ** self.t)
        v_hat = x * x / (1 - 0.999 ** self.t)
        return m_hat / (np.sqrt(v_hat) + 1e-8)


class FullAdam:
    """Adam as written by hand: the moments and weights in arrays updated in place, the step
    counter a Python int, the bias corrections Python floats."""

    def __init__(self, dtype=np.float64, b1=0.9, b2=0.999, lr=1e-2):
        self.t = 0
        self.b1, self.b2, self.lr = b1, b2, lr
        self.m = np.zeros(4, dtype)
        self.v = np.zeros(4, dtype)
        self.w = np.ones(4, dtype)

    def step(self, g):
        self.t += 1
        self.m[...] = self.b1 * self.m + (1 - self.b1) * g
        self.v[...] = self.b2 * self.v + (1 - self.b2) * g * g
        m_hat = self.m / (1 - self.b1 ** self.t)
        v_hat = self.v / (1 - self.b2 ** self.t)
        self.w -= self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)
        return self.w.copy()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("warm", [False, True])
def test_adam_with_its_moments_in_arrays_replays_as_eager(warm, dtype):
    """The moments and weights beside the Python counter, on the first capture of the object:
    the arrays ``fn`` writes in place are lifted with the counter (a guess from its lines,
    which the lifted run checks). Five calls against eager: the weights, the moments, the
    counter's value and type. Before: refused at ``self.t += 1`` (the lifted run lifted the
    counter only and was thrown away at the first moment's write)."""
    rows = ROWS.astype(dtype)
    mine, eager = FullAdam(dtype), FullAdam(dtype)
    if warm:
        mine.step(rows[0])
        eager.step(rows[0])
    graph = cv.capture(mine.step, cv.spec((4,), np.dtype(dtype).name))
    for g in rows:
        got = graph.replay({"g": g})["out"]
        want = eager.step(g)
        assert got.tobytes() == want.tobytes() and got.dtype == want.dtype
        for name in "mvw":
            assert getattr(mine, name).tobytes() == getattr(eager, name).tobytes(), name
        assert type(mine.t) is int and mine.t == eager.t


class RebindAdam(FullAdam):
    """The same Adam with the moments and weights bound anew each call (``self.m = b1 * self.m
    + ...``: rebind states, trace/rebinding.py)."""

    def step(self, g):
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * g
        self.v = self.b2 * self.v + (1 - self.b2) * g * g
        m_hat = self.m / (1 - self.b1 ** self.t)
        v_hat = self.v / (1 - self.b2 ** self.t)
        self.w = self.w - self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)
        return self.w.copy()


@pytest.mark.parametrize("warm", [False, True])
def test_adam_with_its_moments_bound_anew_replays_as_eager(warm):
    """R12 #10 (refusal of common code against fa05be0): the moments rebound, not written in
    place, beside the Python counter: lifted as rebind states with it on the first capture.
    Before: refused at ``self.t += 1`` ('changes from call to call')."""
    mine, eager = RebindAdam(), RebindAdam()
    if warm:
        mine.step(ROWS[0])
        eager.step(ROWS[0])
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    for g in ROWS:
        got = graph.replay({"g": g})["out"]
        want = eager.step(g)
        assert got.tobytes() == want.tobytes()
        for name in "mvw":
            assert getattr(mine, name).tobytes() == getattr(eager, name).tobytes(), name
        assert type(mine.t) is int and mine.t == eager.t


class Powers:
    def __init__(self):
        self.t = 30
        self.s = 1.0
        self.big = 0
        self.inv = 0.0
        self.root = 0.0
        self.both = 0.0
        self.sq = 0

    def step(self, x):
        self.t += 1
        self.s += (x * x).sum().item()
        self.big = 3 ** self.t  # (an exact int past 2**53: float64 would round it)
        self.inv = self.t ** -1  # (int ** negative int: a float)
        self.root = self.s ** 0.5
        self.both = self.s ** self.s ** -0.5
        self.sq = pow(self.t, 2)
        return x * 2.0


def _same(a, b):
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (a != a and b != b)
    if type(a) is np.ndarray:
        return a.tobytes() == b.tobytes() and a.dtype == b.dtype
    return a == b


def _replays_as_eager(kind, warm, example, rows=ROWS):
    mine, eager = kind(), kind()
    if warm:
        mine.step(rows[0])
        eager.step(rows[0])
    graph = cv.capture(mine.step, rows[0] if example else cv.spec((4,), str(rows.dtype)))
    assert any(n.params.get("op") == "power" for n in graph.nodes if n.op == "python_number")
    for x in rows[1:]:
        got = graph.replay({"x": x})["out"]
        want = eager.step(x)
        assert got.tobytes() == want.tobytes() and got.dtype == want.dtype
        for name, value in vars(eager).items():
            assert _same(getattr(mine, name), value), (name, getattr(mine, name), value)
    return mine


@pytest.mark.parametrize("example", [False, True])
@pytest.mark.parametrize("warm", [False, True])
def test_adam_s_bias_correction_replays_as_eager(warm, example):
    """``1 - self.b1 ** self.t`` and ``1 - 0.999 ** self.t``: Python's float pow of the step
    counter, four calls against eager, cold and warm. Before: refused at ``self.t += 1``."""
    mine = _replays_as_eager(Adam, warm, example)
    assert type(mine.t) is int and type(mine.b1) is float


def test_a_float32_step_divides_by_python_s_float_as_numpy_does():
    """The correction is a Python float, which NumPy converts to float32 for a float32 moment
    (weak promotion): the update stays float32, bit for bit."""
    _replays_as_eager(Adam, False, False, rows=ROWS.astype(np.float32))


@pytest.mark.parametrize("warm", [False, True])
def test_python_s_pow_keeps_each_type(warm):
    """``3 ** self.t`` an exact int (3**34 > 2**53), ``self.t ** -1`` a float, float ** float,
    ``pow(self.t, 2)``: values and types as eager Python's."""
    mine = _replays_as_eager(Powers, warm, False)
    assert type(mine.big) is int and mine.big == 3 ** mine.t != int(float(3 ** mine.t))
    assert type(mine.inv) is float and type(mine.sq) is int and type(mine.root) is float


class Zero:
    def __init__(self):
        self.base = 0.0
        self.inv = 1.0

    def step(self, x):
        self.base = self.base * 0.5
        self.inv = self.base ** -1
        return x * 2.0


class Huge:
    def __init__(self):
        self.t = 38
        self.p = 0

    def step(self, x):
        self.t += 1
        self.p = 3 ** self.t
        return x * 2.0


class Signed:
    def __init__(self):
        self.e = 2
        self.p = 0
        self.r = 0.0

    def step(self, x):
        self.e -= 1
        self.p = 2 ** self.e
        self.r = self.r - 0.5
        self.r = self.r ** 0.5
        return x * 2.0


def _fails_at_power(graph, what):
    with pytest.raises(ReplayError) as info:
        graph.replay({"x": ROWS[0]})
    message = str(info.value)
    assert re.search(r"replay failed at node %\d+ \(python_number\) of \w+\[\], recorded at "
                     r"\S+test_kept_number_powers\.py:\d+ in step: " + what, message), message


def test_zero_to_a_negative_power_raises_as_python_does():
    """``0.0 ** -1`` raises ZeroDivisionError in eager Python: the replay fails at the node."""
    mine = Zero()
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    with pytest.raises(ZeroDivisionError):
        Zero().step(ROWS[0])
    _fails_at_power(graph, r"ZeroDivisionError")
    assert (mine.base, mine.inv) == (0.0, 1.0)  # (left as it was)


def test_an_int_power_past_int64_fails_before_it_is_computed():
    """``3 ** 40`` is past int64 (eager Python holds it exactly): the node fails, naming the
    line; ``3 ** 10**9`` is refused without computing it."""
    mine = Huge()
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    graph.replay({"x": ROWS[0]})  # (3 ** 39: within int64)
    assert mine.p == 3 ** 39 and type(mine.p) is int
    mine.t = 10 ** 9 - 1
    _fails_at_power(graph, r"OverflowError: Python int 3 \*\* 1000000000 past int64")
    assert mine.t == 10 ** 9 - 1


def test_a_type_python_gives_otherwise_fails_at_the_node():
    """An int exponent gone negative (``2 ** -1`` is the float 0.5 in Python, the graph holds
    the int the capture met) and a negative float to a fractional power (a complex in Python)
    fail at their node; before they do, the first replay is eager's."""
    mine, eager = Signed(), Signed()
    eager.r = mine.r = 1.5
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    graph.replay({"x": ROWS[0]})
    eager.step(ROWS[0])
    assert (mine.e, mine.p, mine.r) == (eager.e, eager.p, eager.r) and type(mine.p) is int
    mine.e = eager.e = 0
    _fails_at_power(graph, r"TypeError: 2 \*\* -1 is the Python float 0\.5, and the graph "
                           r"holds the int")
    assert (mine.e, mine.r) == (0, 1.0)  # (left as it was)
    mine.e, mine.r = 3, 0.25
    _fails_at_power(graph, r"ValueError: -0\.25 \*\* 0\.5 is the complex")


class CS231nAdam:
    """CS231n's optim.adam: the moments and the step counter in a config dict."""

    def __init__(self):
        self.w = np.ones(4)
        self.config = {"learning_rate": 1e-2, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8,
                       "m": np.zeros(4), "v": np.zeros(4), "t": 0}

    def step(self, dw):
        config = self.config
        config["t"] += 1
        config["m"] = config["beta1"] * config["m"] + (1 - config["beta1"]) * dw
        mt = config["m"] / (1 - config["beta1"] ** config["t"])
        config["v"] = config["beta2"] * config["v"] + (1 - config["beta2"]) * (dw ** 2)
        vt = config["v"] / (1 - config["beta2"] ** config["t"])
        self.w = self.w - config["learning_rate"] * mt / (np.sqrt(vt) + config["epsilon"])
        return self.w.copy()


@pytest.mark.parametrize("warm", [False, True])
def test_cs231n_adam_with_its_config_dict_replays_as_eager(warm):
    """R12 #10's last row: the counter a dict's item (``config["t"] += 1``), the moments bound
    anew in the dict: kept numbers named by a dict's item, lifted with the arrays. Before:
    refused at ``config["t"] += 1`` ('changes from call to call')."""
    mine, eager = CS231nAdam(), CS231nAdam()
    if warm:
        mine.step(ROWS[0])
        eager.step(ROWS[0])
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    for g in ROWS:
        got = graph.replay({"dw": g})["out"]
        want = eager.step(g)
        assert got.tobytes() == want.tobytes() and mine.w.tobytes() == eager.w.tobytes()
        for name in "mv":
            assert mine.config[name].tobytes() == eager.config[name].tobytes(), name
        assert type(mine.config["t"]) is int and mine.config["t"] == eager.config["t"]
