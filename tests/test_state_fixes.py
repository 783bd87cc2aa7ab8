"""A refused stateful step is told the one fix that applies, in the user's own names, and the
fix applied as quoted captures and replays equal to eager (capviz/trace/state_fixes.py; review 3
findings 3, 5, 16, 27). Each program is written to a file, captured, refused; the quoted fix is
pasted into the file; the new program captures and replays as calls, outputs and states."""

from __future__ import annotations

import re
import runpy
import textwrap

import numpy as np
import pytest

import capviz as cv
from capviz.trace import state_fixes
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("two_passes")  # (the two passes' refusals: a first
#   capture that lifts its guess runs once, tests/test_first_capture_guessed.py)

XS = [np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.75]), np.array([-2.0, 1.0, 0.5])]

RNN_REBOUND = """
import numpy as np
R = np.random.default_rng(5)
Wx, Wh = R.standard_normal((3, 3)), R.standard_normal((3, 3))

class M:
    def __init__(self):
        self.h = np.zeros(3)

    def step(self, g):
        self.h = np.tanh(g @ Wx + self.h @ Wh)
        return self.h * 1.0
"""

RNN_IN_PLACE = RNN_REBOUND.replace("self.h = np.tanh(", "self.h[...] = np.tanh(")

RETURNED = """
import numpy as np

class M:
    def __init__(self):
        self.W = np.linspace(-1.0, 1.0, 3)

    def step(self, g):
        self.W += g
        return self.W * 2.0
"""

ADAGRAD = """
import numpy as np

class M:
    def __init__(self):
        self.W = np.linspace(-1.0, 1.0, 3)
        self.mem = np.zeros(3)

    def step(self, g):
        self.mem += g * g
        self.W -= 0.1 * g / np.sqrt(self.mem + 1e-8)  # AdaGrad
        return g * 1.0
"""

ADAM = """
import numpy as np

class M:
    def __init__(self):
        self.W = np.linspace(-1.0, 1.0, 3)
        self.m = np.zeros(3)
        self.v = np.zeros(3)

    def step(self, g):
        self.m += (1 - 0.9) * (g - self.m)
        self.v += (1 - 0.999) * (g * g - self.v)
        mh = self.m / (1 - 0.9 ** 2)
        vh = self.v / (1 - 0.999 ** 2)
        self.W -= 0.01 * mh / (np.sqrt(vh) + 1e-8)
        return g * 1.0
"""

SIMULATION = """
import numpy as np

class M:
    def __init__(self):
        self.p = np.zeros(3)
        self.v = np.ones(3)

    def step(self, g):
        self.v -= 0.5 * g
        self.p += self.v * 0.1
        return g * 1.0
"""

MOMENTUM = """
import numpy as np

class M:
    def __init__(self):
        self.W = np.ones(3)
        self.v = np.full(3, 0.5)

    def step(self, g):
        v = self.v
        v *= 0.9
        v += g
        self.W -= 0.1 * v
        return g * 1.0
"""

LAZY_MOMENTUM = MOMENTUM.replace("self.v = np.full(3, 0.5)", "self.v = None").replace(
    "        v = self.v\n",
    "        if self.v is None:\n            self.v = np.zeros_like(self.W)\n        v = self.v\n")

ZERO_THEN_ADD = """
import numpy as np
R = np.random.default_rng(5)
Wx, Wh = R.standard_normal((3, 3)), R.standard_normal((3, 3))

class M:
    def __init__(self):
        self.h = np.ones(3)

    def step(self, g):
        h = self.h
        h *= 0
        h += np.tanh(g @ Wx + self.h @ Wh)
        return h * 1.0
"""


ADAGRAD_LIST = """
import numpy as np

class M:
    def __init__(self, pairs=3):
        self.w = [np.linspace(-1, 1, 3) * (i + 1) for i in range(pairs)]
        self.m = [np.zeros(3) for _ in range(pairs)]

    def step(self, g):
        for i in range(len(self.w)):
            self.m[i] += g * g
            self.w[i] -= 0.01 * g / np.sqrt(self.m[i] + 1e-8)
        return g * 1.0
"""


class Program:
    """A program in a file of its own (``tmp_path``), edited one fix at a time."""

    def __init__(self, tmp_path, source: str) -> None:
        self.dir = tmp_path
        self.lines = ["import capviz as cv"] + textwrap.dedent(source).strip("\n").splitlines()
        self.version = 0

    def load(self):
        self.version += 1  # a new file each time: linecache never shows an old version
        path = self.dir / f"program_{self.version}.py"
        path.write_text("\n".join(self.lines) + "\n")
        return runpy.run_path(str(path))["M"], str(path)

    def refusal(self) -> str | None:
        make, _ = self.load()
        try:
            cv.capture(make().step, cv.spec((3,), "float64"))
        except cv.CaptureViolation as err:
            return str(err)
        return None

    def replace(self, number: int, text: str) -> None:
        old = self.lines[number - 1]
        indent = old[:len(old) - len(old.lstrip())]
        self.lines[number - 1] = indent + text

    def apply(self, message: str) -> None:
        """Paste the fix ``message`` quotes into the program, as a user would."""
        what, _why, fix = message.splitlines()
        line = int(re.search(r" at \S+?:(\d+) in ", what)[1])
        assert fix.startswith("Fix: ")
        edits = re.findall(r"line (\d+)(?: as| \(`[^`]*`\) with a tensor.*?:) `([^`]+)`", fix)
        quoted = re.match(r"Fix: write `([^`]+)`", fix)
        if quoted:
            self.replace(line, quoted[1])
        for number, text in edits:
            self.replace(int(number), text)
        if quoted or edits:
            return
        in_place = re.match(r"Fix: write the new value into the array in place: (.+?)"
                            r"((?: and line \d+ as .+?)*), which ", fix)
        if in_place:
            self.replace(line, in_place[1])
            for number, text in re.findall(r" and line (\d+) as (.+?)(?= and line |$)",
                                           in_place[2]):
                self.replace(int(number), text)
            return
        raise AssertionError(f"no fix to apply in {fix!r}")

    def replays_as_eager(self) -> None:
        make, _ = self.load()
        captured, twin = make(), make()
        graph = cv.capture(captured.step, cv.spec((3,), "float64"))
        for x in XS:
            out = graph.replay({"g": x})["out"]
            want = twin.step(x)
            assert out.dtype == want.dtype and np.array_equal(out, want)
            for name, value in vars(twin).items():
                assert np.array_equal(getattr(captured, name), value), name


def no_fill_shown(message: str) -> None:
    """capviz's post-write fills (1e6 and its multiples) and the planted values are no
    user's values: never shown as "it is ... here"."""
    assert "here and" not in message and "NumPy made it" not in message
    assert not re.search(r"\d{6,}\.", message), message
    assert "W_t" not in message and "x[:0]" not in message


@pytest.mark.parametrize("source, step", [
    (RNN_IN_PLACE, "self.h[...] = np.tanh(g @ Wx + cv.constant(self.h) @ Wh)"),
    (RETURNED, "return cv.constant(self.W) * 2.0"),
    (ADAGRAD, "self.W -= 0.1 * g / np.sqrt(cv.constant(self.mem) + 1e-8)"),
    (ADAM, "mh = cv.constant(self.m) / (1 - 0.9 ** 2)"),
    (SIMULATION, "self.p += cv.constant(self.v) * 0.1"),
    (MOMENTUM, "v *= cv.constant(np.float64(0.9))"),
    (ADAGRAD_LIST, "self.w[i] -= 0.01 * g / np.sqrt(cv.constant(self.m[i]) + 1e-8)"),
], ids=["rnn-in-place", "returned", "adagrad", "adam", "simulation",
        "momentum", "adagrad-list"])
def test_the_quoted_fix_applied_captures_and_replays_as_calls(tmp_path, source, step):
    program = Program(tmp_path, source)
    message = program.refusal()
    assert message is not None and len(message.splitlines()) == 3
    assert step in message.splitlines()[2]
    no_fill_shown(message)
    program.apply(message)
    assert program.refusal() is None
    program.replays_as_eager()


def test_an_rnn_state_rebound_each_call_captures_unchanged_and_replays_as_calls(tmp_path):
    """``self.h = np.tanh(g @ Wx + self.h @ Wh)`` binds a new array each call: a rebind state
    (capviz/trace/rebinding.py), which each replay binds again; refused before, with the
    in-place write as the fix."""
    program = Program(tmp_path, RNN_REBOUND)
    assert program.refusal() is None
    program.replays_as_eager()


def test_the_returned_value_names_the_users_array_not_a_template(tmp_path):
    message = Program(tmp_path, RETURNED).refusal()
    what, why, fix = message.splitlines()
    assert what.endswith("the returned value was computed by NumPy's own operators from "
                         "self.W, an array the capture writes.")
    assert "(it depends on what self.W holds)" in why
    assert fix == ("Fix: write `return cv.constant(self.W) * 2.0`: cv.constant(self.W) is the "
                   "value the capture records for it, before and after its write, and self.W "
                   "itself outside a capture.")


def test_adams_fix_rewrites_both_reads_of_the_written_moments(tmp_path):
    message = Program(tmp_path, ADAM).refusal()
    assert "line 13 as `mh = cv.constant(self.m) / (1 - 0.9 ** 2)`, and line 14 as `vh = "\
        "cv.constant(self.v) / (1 - 0.999 ** 2)`: " in message.splitlines()[2]
    assert "when the call started;" in message  # the start value only, not NumPy's result


def test_a_numpy_write_before_the_tensor_write_quotes_the_users_operator(tmp_path):
    message = Program(tmp_path, MOMENTUM).refusal()
    assert message.splitlines()[2] == (
        "Fix: write line 11 (`v *= 0.9`) with a tensor, which the capture records as a state: "
        "`v *= cv.constant(np.float64(0.9))` (outside a capture cv.constant returns the value "
        "itself).")


def test_lazy_creation_is_told_to_create_before_the_capture_and_then_captures(tmp_path):
    program = Program(tmp_path, LAZY_MOMENTUM)
    message = program.refusal()
    assert message.splitlines()[2] == (
        "Fix: create self.v before the capture (in __init__, or by one eager call), so that "
        "the call writes it in place, which the capture records as a state.")
    program.lines = [line.replace("self.v = None", "self.v = np.zeros(3)")
                     for line in program.lines]
    program.apply(program.refusal())  # now the momentum's v *= 0.9: its own fix
    assert program.refusal() is None
    program.replays_as_eager()


def test_zeroing_then_adding_in_place_captures_after_the_fixes_it_is_given(tmp_path):
    """``h *= 0; h += f(self.h)`` (finding 5's in-place idiom): NumPy's ``h *= 0`` is one fix,
    its later read of ``self.h`` the other; each quoted, each applied, it then captures."""
    program = Program(tmp_path, ZERO_THEN_ADD)
    first = program.refusal()
    assert "`h *= cv.constant(np.float64(0))`" in first
    program.apply(first)
    second = program.refusal()
    assert "`h += np.tanh(g @ Wx + cv.constant(self.h) @ Wh)`" in second
    program.apply(second)
    assert program.refusal() is None
    program.replays_as_eager()


def test_states_in_a_list_are_read_through_their_item_and_the_reason_names_three(tmp_path):
    """/tmp/review4/fix_list.py (review 4, finding 13): the fix wraps ``self.m[i]``, the
    array, not ``self.m``, the list (``cv.constant(self.m)[i]`` is refused again); the reason
    names three states and counts the rest (it listed 100 names, 1,500 characters)."""
    program = Program(tmp_path, ADAGRAD_LIST.replace("pairs=3", "pairs=50"))
    make, _ = program.load()
    opt = make()
    with pytest.raises(cv.CaptureViolation) as named:
        cv.capture(opt.step, cv.spec((3,), "float64"))
    assert str(named.value).splitlines()[1].endswith(
        "(it depends on what opt.m[0], opt.w[0], opt.m[1] and 97 more hold).")
    message = program.refusal()  # (an object with no name: the states by the user's code)
    _what, why, fix = message.splitlines()
    assert why.endswith("(it depends on what self.m[i] and self.w[i] hold).")
    assert fix == ("Fix: write `self.w[i] -= 0.01 * g / np.sqrt(cv.constant(self.m[i]) + "
                   "1e-8)`: cv.constant(self.m[i]) is the value the capture records for it, "
                   "before and after its write, and self.m[i] itself outside a capture.")
    program.apply(message)
    assert program.refusal() is None
    program.replays_as_eager()


@pytest.mark.parametrize("text, name, expected", [
    ("self.m[i] += g * g", "o.m[0]", "self.m[i]"),
    ("self.m[i][0, :] += g", "o.m[0]", "self.m[i]"),
    ("p['mW'][...] = g", 'params["blocks"][3]["mW"]', "p['mW']"),
    ("W[i, :] += g", "self.ws[0]", "W"),
    ("self.h[...] = g", "self.h", "self.h"),
    ("np.add(self.m[k], g, out=self.m[k])", "o.m[1]", "self.m[k]"),
])
def test_the_state_expression_keeps_the_container_item_the_state_is(text, name, expected):
    assert state_fixes.state_expression(text, name) == expected
