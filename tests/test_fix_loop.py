"""The quoted fix of a NumPy write into a state makes progress (hostile review 5, finding 15;
R6 #7: /work/notes/review6/clip2.py V1, M1, C3): with two or more NumPy writes after the
capture's (``np.clip(..., out=self.W)`` twice, a clip then ``np.maximum(..., out=self.W)``,
``self.W *= 0.5``, ``self.W[0] = 1.0``), once a line is fixed as quoted the next refusal names
the next line (it named and quoted the fixed line again: capviz/trace/state_fixes.plain_write
skipped nothing the capture recorded). Each quoted fix is applied in turn, as a user would,
until the program captures; it then replays as calls do over three calls, outputs, the state
and dtypes bit for bit."""

from __future__ import annotations

import re
import runpy

import numpy as np
import pytest

import capviz as cv
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("two_passes")  # (the two passes' refusals, fix by fix:
#   a first capture that lifts the arrays its statements write replays these programs
#   whole, tests/test_first_capture_guessed.py)

HEAD = """import numpy as np
import capviz as cv


class M:
    def __init__(self):
        self.W = {init}

    def step(self, g):
        self.W -= 0.1 * g
"""
FIRST = 11  # the line after the capture's write (line 10)
INITS = {"owner": "np.array([1.0, 2.0, 3.0, -0.5])", "view": "np.linspace(-1.0, 2.5, 4)"}
XS = [np.full(4, -3.0), np.array([2.0, -1.0, 0.5, 4.0]), np.full(4, 0.25)]

TWO_CLIPS = ["np.clip(self.W, -1.0, 2.5, out=self.W)",
             "np.clip(self.W, -0.5, 2.0, out=self.W)"]
FOUR_WRITES = ["np.clip(self.W, -1.0, 2.5, out=self.W)",
               "np.maximum(self.W, -0.25, out=self.W)",
               "self.W *= 0.5",
               "self.W[0] = 1.0"]
FIXED = {
    "np.clip(self.W, -1.0, 2.5, out=self.W)":
        "np.clip(cv.constant(self.W), -1.0, 2.5, out=self.W)",
    "np.clip(self.W, -0.5, 2.0, out=self.W)":
        "np.clip(cv.constant(self.W), -0.5, 2.0, out=self.W)",
    "np.maximum(self.W, -0.25, out=self.W)":
        "np.maximum(cv.constant(self.W), -0.25, out=self.W)",
    "self.W *= 0.5": "self.W *= cv.constant(np.float64(0.5))",
    "self.W[0] = 1.0": "self.W[0] = cv.constant(np.float64(1.0))",
    "self.W /= np.linalg.norm(self.W)": "self.W /= np.linalg.norm(cv.constant(self.W))",
    "np.maximum(self.W, 0.0, out=self.W)": "np.maximum(cv.constant(self.W), 0.0, out=self.W)",
    "self.W /= self.W.sum()": "self.W /= cv.constant(self.W).sum()",
    "np.copyto(self.W, np.clip(self.W, -1.0, 2.5))":
        "np.copyto(self.W, np.clip(cv.constant(self.W), -1.0, 2.5))",
}
TENSOR = "cv.constant(self.W) is that value as a tensor, and self.W itself outside a capture."
NUMBER = ("cv.constant(np.float64({n})) is that number as a tensor of self.W's dtype, so the "
          "capture records the write, and the number itself outside a capture.")


class Program:
    def __init__(self, tmp_path, init, lines):
        self.dir, self.init, self.lines, self.version = tmp_path, init, list(lines), 0

    def load(self):
        self.version += 1
        self.path = self.dir / f"program_{self.version}.py"
        body = "".join(f"        {line}\n" for line in self.lines)
        self.path.write_text(HEAD.format(init=self.init) + body + "        return g * 1.0\n")
        return runpy.run_path(str(self.path))["M"]

    def refusal(self):
        M = self.load()
        m = M()
        before = m.W.copy()
        try:
            cv.capture(m.step, cv.spec((4,), "float64"))
        except cv.UnsupportedOperationError as err:
            assert m.W.tobytes() == before.tobytes()  # put back
            return str(err)
        return None


def _fix_until_it_captures(program):
    """Each refusal's quoted fix applied in turn; the refusals, in order."""
    refusals = []
    while (message := program.refusal()) is not None:
        assert len(refusals) < len(program.lines), refusals  # each fix makes progress
        what, why, fix = message.splitlines()
        line = int(re.search(rf" at {re.escape(str(program.path))}:(\d+) in step: ", what)[1])
        written = program.lines[line - FIRST]
        assert what.startswith(f"`{written}` at ")
        quoted = re.match(r"Fix: write `([^`]+)`: ", fix)[1]
        assert quoted == FIXED[written]
        program.lines[line - FIRST] = quoted
        refusals.append((line, what, why, fix))
    return refusals


def _replays_as_calls(program):
    M = program.load()
    m, twin = M(), M()
    graph = cv.capture(m.step, cv.spec((4,), "float64"))
    for x in XS:
        out, want = graph.replay({"g": x})["out"], twin.step(x)
        assert out.dtype == want.dtype and out.tobytes() == want.tobytes()
        assert m.W.dtype == twin.W.dtype and m.W.tobytes() == twin.W.tobytes()


@pytest.mark.parametrize("init", INITS, ids=list(INITS))
def test_two_clips_in_a_row_the_second_refusal_names_the_second_line(tmp_path, init):
    program = Program(tmp_path, INITS[init], TWO_CLIPS)
    refusals = _fix_until_it_captures(program)
    assert [r[0] for r in refusals] == [11, 12]
    _, what, why, fix = refusals[1]
    assert what == (f"`np.clip(self.W, -0.5, 2.0, out=self.W)` at {program.dir}/program_2.py:12 "
                    "in step: NumPy's own operators wrote m.W after the capture's write into it.")
    assert why == ("capviz cannot record it: the line gives NumPy the ndarray itself, not the "
                   "tensor the capture records for it, so NumPy wrote its memory unseen and no "
                   "replay would make that write (the capture's write into it is at line 10, "
                   "and the capture put back the value it records).")
    assert fix == f"Fix: write `np.clip(cv.constant(self.W), -0.5, 2.0, out=self.W)`: {TENSOR}"
    _replays_as_calls(program)


@pytest.mark.parametrize("init", INITS, ids=list(INITS))
def test_four_numpy_writes_are_fixed_one_line_after_the_other(tmp_path, init):
    program = Program(tmp_path, INITS[init], FOUR_WRITES)
    refusals = _fix_until_it_captures(program)
    assert [r[0] for r in refusals] == [11, 12, 13, 14]
    assert refusals[1][3].endswith(f"out=self.W)`: {TENSOR}")
    assert refusals[2][3] == (f"Fix: write `self.W *= cv.constant(np.float64(0.5))`: "
                              f"{NUMBER.format(n=0.5)}")
    assert refusals[3][3] == (f"Fix: write `self.W[0] = cv.constant(np.float64(1.0))`: "
                              f"{NUMBER.format(n=1.0)}")
    _replays_as_calls(program)


@pytest.mark.parametrize("lines", [
    ["self.W /= np.linalg.norm(self.W)"],
    ["np.maximum(self.W, 0.0, out=self.W)", "self.W /= self.W.sum()"],
    ["np.copyto(self.W, np.clip(self.W, -1.0, 2.5))"],
], ids=["normalize", "relu-normalize", "copyto"])
@pytest.mark.parametrize("init", INITS, ids=list(INITS))
def test_a_write_whose_operand_reads_the_state_and_np_copyto_are_fixed_at_their_line(
        tmp_path, init, lines):
    """R6 #11: ``self.W /= np.linalg.norm(self.W)`` was told ``self.W /= cv.constant(
    np.linalg.norm(self.W))``, which NumPy still computes from the array (refused again, with
    no fix to apply); the read is what goes through cv.constant. R6 #12: ``np.copyto(self.W,
    np.clip(self.W, lo, hi))`` was refused at the cv.capture line with three fixes to choose
    from; it is refused at its line, its source read through cv.constant."""
    program = Program(tmp_path, INITS[init], lines)
    refusals = _fix_until_it_captures(program)
    assert [r[0] for r in refusals] == list(range(11, 11 + len(lines)))
    assert refusals[-1][3] == f"Fix: write `{FIXED[lines[-1]]}`: {TENSOR}"
    _replays_as_calls(program)
