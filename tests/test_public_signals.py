"""Census round 2 of public-code-style NumPy programs (issue #20, stop 36), part 4: signal and
control code (an FIR filter whose delay line is rolled and rebound, a PID controller, an echo
state network, histogram equalisation by a lookup table, Adam over dicts of parameters with the
decay first, Welford's statistics in 0-d arrays). Written as public NumPy code is, not for
capviz; run and pinned as in tests/test_public_learning.py."""

import numpy as np
import pytest

import capviz as cv
from tests.helpers.public_census import Program, line_of, refusal, run


def _x(*shape):
    """Three calls' arrays, the same for a shape whichever tests ran before."""
    rng = np.random.default_rng(36000)
    return [rng.standard_normal(shape) for _ in range(3)]


# --- 1. An FIR filter: the delay line rolled (a new array, rebound) and its head written ------

class FIR:
    def __init__(self, taps=(0.5, 0.3, 0.2)):
        self.taps = np.array(taps)
        self.buf = np.zeros(len(taps))

    def process(self, samples):
        out = np.zeros_like(samples)
        for n, s in enumerate(samples):
            self.buf = np.roll(self.buf, 1)
            self.buf[0] = s
            out[n] = self.taps @ self.buf
        return out


def fir_setup():
    f = FIR()
    return Program(f.process, [[x] for x in _x(5)], lambda: {"buf": f.buf})


# --- 2. A PID controller: the integral and the previous error kept as attributes -------------

class PID:
    def __init__(self, kp=1.0, ki=0.1, kd=0.05, dt=0.1):
        self.kp, self.ki, self.kd, self.dt = kp, ki, kd, dt
        self.integral = np.zeros(2)
        self.prev_error = np.zeros(2)

    def update(self, setpoint, measured):
        error = setpoint - measured
        self.integral += error * self.dt
        derivative = (error - self.prev_error) / self.dt
        self.prev_error = error
        return self.kp * error + self.ki * self.integral + self.kd * derivative


def pid_setup():
    c = PID()
    return Program(c.update, [[a, b] for a, b in zip(_x(2), _x(2))],
                   lambda: {"integral": c.integral, "prev_error": c.prev_error})


# --- 3. An echo state network: the reservoir state rebound from a tensor expression ------------

class EchoState:
    def __init__(self, n_in=2, n_res=5, leak=0.3):
        rng = np.random.default_rng(31)
        self.W_in = rng.uniform(-0.5, 0.5, (n_res, n_in))
        W = rng.uniform(-0.5, 0.5, (n_res, n_res))
        self.W = W * (0.9 / np.max(np.abs(np.linalg.eigvals(W))))
        self.state = np.zeros(n_res)
        self.leak = leak

    def run(self, inputs):
        states = []
        for u in inputs:
            pre = self.W_in @ u + self.W @ self.state
            self.state = (1 - self.leak) * self.state + self.leak * np.tanh(pre)
            states.append(self.state)
        return np.array(states)


def echo_setup():
    m = EchoState()
    return Program(m.run, [[x] for x in _x(4, 2)], lambda: {"state": m.state})


# --- 4. Histogram equalisation through a lookup table ----------------------------------------

def equalize(img, levels=8):
    hist = np.bincount(img.ravel(), minlength=levels)
    cdf = np.cumsum(hist)
    lut = np.round((cdf - cdf[0]) / max(cdf[-1] - cdf[0], 1) * (levels - 1)).astype(np.int64)
    return lut[img]


def equalize_setup():
    rng = np.random.default_rng(32)
    return Program(equalize, [[rng.integers(0, 8, size=(3, 3))] for _ in range(3)])


# --- 5. Adam over dicts of parameters, the moments rebound with the decay first ---------------

class DictAdam:
    def __init__(self, lr=0.01, b1=0.9, b2=0.999):
        self.params = {"w": np.ones(3), "b": np.zeros(1)}
        self.m = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.v = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.lr, self.b1, self.b2 = lr, b1, b2

    def step(self, X, y):
        err = X @ self.params["w"] + self.params["b"] - y
        grads = {"w": X.T @ err / len(y), "b": np.array([err.mean()])}
        for k in self.params:
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * grads[k]
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * grads[k] ** 2
            self.params[k] -= self.lr * self.m[k] / (np.sqrt(self.v[k]) + 1e-8)
        return 0.5 * np.mean(err ** 2)


def dict_adam_setup():
    m = DictAdam()
    return Program(m.step, [[X, X @ np.array([2.0, -1.0, 0.5])] for X in _x(4, 3)],
                   lambda: {**{f"params[{k}]": v for k, v in m.params.items()},
                            **{f"m[{k}]": v for k, v in m.m.items()},
                            **{f"v[{k}]": v for k, v in m.v.items()}})


# --- 6. Welford's running mean and variance in 0-d arrays -----------------------------------

class Welford:
    def __init__(self):
        self.n = np.zeros(())
        self.mean = np.zeros(())
        self.m2 = np.zeros(())

    def update(self, xs):
        for x in xs:
            self.n += 1
            delta = x - self.mean
            self.mean += delta / self.n
            self.m2 += delta * (x - self.mean)
        return self.m2 / max(self.n - 1, 1)


def welford_setup():
    w = Welford()
    return Program(w.update, [[x] for x in _x(4)],
                   lambda: {"n": w.n, "mean": w.mean, "m2": w.m2})


SIGNALS = {
    "fir_rolled_delay_line": (fir_setup, "self.buf = np.roll(self.buf, 1); self.buf[0] = s"),
    "pid_controller": (pid_setup, "self.integral += error * dt; self.prev_error = error"),
    "echo_state_network": (echo_setup, "self.state = (1 - leak) * self.state + leak * "
                                       "np.tanh(...)"),
    "histogram_equalization": (equalize_setup, "np.bincount(minlength); np.cumsum; "
                                               "lut[img]"),
    "adam_dict_decay_first": (dict_adam_setup, "self.m[k] = b1 * self.m[k] + (1 - b1) * g; "
                                               "params[k] -= ..."),
    "welford_zero_d": (welford_setup, "self.n += 1 (0-d); self.mean += delta / self.n"),
}


# --- what the census finds -------------------------------------------------------------------

EXACT = ["fir_rolled_delay_line", "pid_controller", "echo_state_network",
         "adam_dict_decay_first"]


@pytest.mark.parametrize("name", EXACT)
def test_the_program_replays_as_three_eager_calls_bit_for_bit(name):
    verdict = run(SIGNALS[name][0])
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)


def test_np_bincount_is_refused_with_a_fix_line():
    """The refusal had no Fix line (its alternative did not start as a fix), and it now says
    where the alternative is NumPy's counts: every value below n."""
    kind, lines = refusal(SIGNALS["histogram_equalization"][0])
    line = line_of(__file__, "hist = np.bincount(img.ravel(), minlength=levels)")
    assert kind is cv.UnsupportedOperationError
    assert lines == [
        f"`np.bincount(img.ravel(), minlength=levels)` at {__file__}:{line} in equalize: "
        "np.bincount is not supported by capviz.",
        "capviz cannot record it: its length is the largest value + 1, which a capture does "
        "not have.",
        "Fix: write np.sum(x[..., None] == np.arange(n), axis=-2), the counts of n bins where "
        "every value is below n (np.bincount(x, minlength=n))."]


def test_welford_in_0d_arrays_is_refused_at_its_counter_with_the_fix():
    kind, lines = refusal(SIGNALS["welford_zero_d"][0])
    assert kind is cv.UnsupportedOperationError
    assert lines[0] == (f"`self.n += 1` at {__file__}:{line_of(__file__, 'self.n += 1')} in "
                        "update: NumPy's own operators wrote the outside ndarray self.n, a write "
                        "no state of the graph records.")
    assert lines[-1] == ("Fix: write it with a tensor, which the capture records as a state: "
                         "self.n += cv.constant(np.float64(1)), or pass it as an input and "
                         "return its new value.")


# --- the quoted fixes applied ----------------------------------------------------------------

def fixed_equalize(img, levels=8):
    """The bincount fix, then np.maximum for Python's max of a tensor (a branch on the data)."""
    hist = np.sum(img.ravel()[..., None] == np.arange(levels), axis=-2)
    cdf = np.cumsum(hist)
    scale = np.maximum(cdf[-1] - cdf[0], 1)
    lut = np.round((cdf - cdf[0]) / scale * (levels - 1)).astype(np.int64)
    return lut[img]


class FixedWelford(Welford):
    """The counter written with a tensor, then each read of the states as cv.constant (0-d
    arrays: cv.constant of one was refused before, "a view capviz cannot map back"), and
    np.maximum for Python's max."""

    def update(self, xs):
        for x in xs:
            self.n += cv.constant(np.float64(1))
            delta = x - cv.constant(self.mean)
            self.mean += delta / cv.constant(self.n)
            self.m2 += delta * (x - cv.constant(self.mean))
        return cv.constant(self.m2) / np.maximum(cv.constant(self.n) - 1, 1)


def test_the_fixed_histogram_equalisation_replays_as_eager():
    rng = np.random.default_rng(32)
    calls = [[rng.integers(0, 8, size=(3, 3))] for _ in range(3)]
    verdict = run(lambda: Program(fixed_equalize, calls))
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)


def test_the_fixed_welford_in_0d_arrays_replays_as_eager():
    def setup():
        w = FixedWelford()
        return Program(w.update, [[x] for x in _x(4)],
                       lambda: {"n": w.n, "mean": w.mean, "m2": w.m2})

    verdict = run(setup)
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)
