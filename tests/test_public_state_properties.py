"""Generated programs with state, the census's idioms added (1,000 examples with the ``ci``
profile): ``cv.constant`` of a written array held in a name across its writes (the fix capviz
quotes for NumPy's reads of a state, applied once into a name), views of it and ``cv.constant``
of a view, tensor writes into the arrays (``a op= t``, ``a[r] = t``), and rows written as a list
of tensors into a buffer made inside (``buf[i] = [h.sum(), t]``). Each program runs eagerly over
three calls, then is captured once and replayed over the same three, compared bit for bit after
each call: outputs, every state array, NumPy's and Python's generators, dtypes
(tests/helpers/public_census.py). tests/test_state_properties.py generates the plain writes,
views and draws; this file the idioms census round 2 found silent or refused (stop 36). On
c822682 (before 224fdd8 and 227cabc), 300 examples: 236 exact, 60 refused (the list rows), 4
silent (a held constant read after a write); 1,000 exact since."""

import atexit
import importlib.util
import itertools
import os
import shutil
import tempfile

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import capviz as cv
from tests.helpers.public_census import Program, run

OPERATORS = ["+=", "-=", "*="]


@st.composite
def programs(draw):
    n = draw(st.integers(2, 3))
    states = draw(st.lists(st.tuples(st.sampled_from([(n,), (2, n)]),
                                     st.sampled_from(["float32", "float64"])),
                           min_size=1, max_size=2))
    steps = []
    held = 0
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["hold", "hold_view", "hold_of_view", "iop", "row",
                                     "read", "list_row"]))
        k = draw(st.integers(0, len(states) - 1))
        coef = draw(st.sampled_from([0.5, -1.25, 2.0]))
        if kind in ("hold", "hold_view", "hold_of_view"):
            steps.append((kind, k))
            held += 1
        elif kind == "iop":
            steps.append(("iop", k, draw(st.sampled_from(OPERATORS)), coef))
        elif kind == "row":
            steps.append(("row", k, draw(st.integers(0, states[k][0][0] - 1)), coef))
        elif held:
            steps.append((kind, draw(st.integers(0, held - 1)), coef))
    return n, states, steps


_DIR = tempfile.mkdtemp(prefix="capviz_generated_")  # a file per program: its lines are read
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)  # (messages, statements), as a user's
_MADE = itertools.count()


def _source(program):
    """The program as a module a user would write: states as globals, each held constant in a
    name of its own (a list holding them is followed another way)."""
    _, specs, steps = program
    names = [f"a{k}" for k in range(len(specs))]
    lines = ["import numpy as np", "import capviz as cv", "", " = ".join([*names, "None"]), "",
             "", "def fn(x):", f"    global {', '.join(names)}",
             f"    buf = np.zeros(({len(steps)}, 2))"]
    held = outs = 0
    for i, step in enumerate(steps):
        kind = step[0]
        if kind == "hold":
            lines.append(f"    h{held} = cv.constant(a{step[1]})")
        elif kind == "hold_view":
            lines.append(f"    h{held} = cv.constant(a{step[1]})[1:]")
        elif kind == "hold_of_view":
            lines.append(f"    h{held} = cv.constant(a{step[1]}[1:])")
        elif kind == "iop":
            lines.append(f"    a{step[1]} {step[2]} x * {step[3]}")
        elif kind == "row":
            two_d = len(specs[step[1]][0]) == 2
            value = f"x * {step[3]}" if two_d else f"x[{step[2]}] * {step[3]}"
            lines.append(f"    a{step[1]}[{step[2]}] = {value}")
        elif kind == "read":
            lines.append(f"    out{outs} = h{step[1]}.sum() * {step[2]}")
            outs += 1
        else:  # a row of a buffer made inside, written as a list of tensors
            lines.append(f"    buf[{i}] = [h{step[1]}.sum(), x.sum() * {step[2]}]")
        held += kind.startswith("hold")
    lines.append("    return " + ", ".join(["buf", *(f"out{m}" for m in range(outs))]))
    return "\n".join(lines) + "\n"


def _module(program):
    name = f"capviz_generated_{next(_MADE)}"
    path = os.path.join(_DIR, name + ".py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(_source(program))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@given(programs())
def test_generated_programs_with_held_constants_replay_as_eager_over_three_calls(program):
    module = _module(program)
    n, specs, _ = program

    def setup():
        for k, (shape, dtype) in enumerate(specs):
            setattr(module, f"a{k}", np.arange(np.prod(shape), dtype=dtype).reshape(shape)
                    * 0.25 + 1.0)
        calls = [[np.linspace(-1.0, 1.0, n) * (k + 1)] for k in range(3)]
        return Program(module.fn, calls,
                       lambda: {f"a{k}": getattr(module, f"a{k}") for k in range(len(specs))})

    verdict = run(setup)
    assert verdict.kind in ("exact", "refused"), (verdict.kind, verdict.detail, program)
    if verdict.kind == "refused":  # only where NumPy's own view of a held view meets a write
        assert isinstance(verdict.error, cv.CapvizError)
        assert "viewed again before this write" in str(verdict.error), (
            str(verdict.error), program)
