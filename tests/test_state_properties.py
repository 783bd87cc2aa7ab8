"""Generated programs with state (1,000 examples with the ``ci`` profile): outside arrays written
in place (``a op= t``, ``np.<ufunc>(a, t, out=a)``, ``a[r] = t``, a write through a slice view),
views of them read before or after a write (``a[i:j]``, ``a.T``),
buffers made inside (``np.zeros``), reads of the written arrays and draws from NumPy's global
generator and from Python's ``random`` (Python numbers in float32 arithmetic too). Capture
once, then two replays equal two eager calls bit for bit: every output and every state array
after each call, dtypes included (capviz/trace/state.py)."""

import random

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import capviz as cv

STATE_DTYPES = ["float32", "float64"]
INPUT_DTYPES = ["float32", "float64"]
SHAPES = st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple)
UFUNCS = ["add", "subtract", "multiply", "maximum"]
OPERATORS = ["+=", "-=", "*="]
READS = ["add", "multiply", "subtract"]


def _fits(value_shape, target_shape):
    try:
        return np.broadcast_shapes(value_shape, target_shape) == tuple(target_shape)
    except ValueError:
        return False


@st.composite
def programs(draw):
    states = draw(st.lists(st.tuples(SHAPES, st.sampled_from(STATE_DTYPES)), min_size=1,
                           max_size=3))
    inputs = [(s, draw(st.sampled_from(INPUT_DTYPES))) for s, _ in states]
    shapes = [s for s, _ in inputs]  # the shapes of the values made so far
    steps = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["iop", "ufunc_out", "setrow", "slice", "read", "view",
                                     "reduce", "buffer", "draw", "pydraw"]))
        k = draw(st.integers(0, len(states) - 1))
        target = states[k][0]
        i = draw(st.integers(0, len(shapes) - 1))
        if kind == "iop" and _fits(shapes[i], target):
            steps.append(("iop", k, i, draw(st.sampled_from(OPERATORS))))
        elif kind == "ufunc_out" and _fits(shapes[i], target):
            steps.append(("ufunc_out", k, i, draw(st.sampled_from(UFUNCS))))
        elif kind == "setrow" and _fits(shapes[i], target[1:]):
            steps.append(("setrow", k, draw(st.integers(0, target[0] - 1)), i))
        elif kind == "slice":
            a = draw(st.integers(0, target[0] - 1))
            b = draw(st.integers(a + 1, target[0]))
            if _fits(shapes[i], (b - a,) + target[1:]):
                steps.append(("slice", k, a, b, i))
        elif kind == "read":
            try:
                shape = np.broadcast_shapes(shapes[i], target)
            except ValueError:
                continue
            steps.append(("read", k, i, draw(st.sampled_from(READS))))
            shapes.append(shape)
        elif kind == "view":  # a view of the array (rows, or its transpose), maybe before a write
            a = draw(st.integers(0, target[0] - 1))
            b = draw(st.integers(a + 1, target[0]))
            transpose = len(target) == 2 and draw(st.booleans())
            view = target[::-1] if transpose else (b - a,) + target[1:]
            try:
                shape = np.broadcast_shapes(shapes[i], view)
            except ValueError:
                continue
            steps.append(("view", k, i, a, b, transpose))
            shapes.append(shape)
        elif kind == "reduce":
            steps.append(("reduce", i))
            shapes.append(())
        elif kind == "buffer":
            shape = draw(SHAPES)
            if _fits(shapes[i], shape):
                steps.append(("buffer", shape, draw(st.sampled_from(STATE_DTYPES)), i))
                shapes.append(shape)
        elif kind == "draw":
            shape = draw(SHAPES)
            steps.append(("draw", shape))
            shapes.append(shape)
        elif kind == "pydraw":  # Python's random: Python numbers, promoted weakly
            steps.append(("pydraw", i))
            shapes.append(shapes[i])
    return states, inputs, steps


def run(steps, states, xs):
    """The generated program: NumPy code that captures or computes."""
    pool = list(xs)
    start = len(pool)
    for step in steps:
        kind = step[0]
        if kind == "iop":
            _, k, i, symbol = step
            a = states[k]
            if symbol == "+=":
                a += pool[i]
            elif symbol == "-=":
                a -= pool[i]
            else:
                a *= pool[i]
        elif kind == "ufunc_out":
            _, k, i, name = step
            getattr(np, name)(states[k], pool[i], out=states[k])
        elif kind == "setrow":
            _, k, r, i = step
            states[k][r] = pool[i]
        elif kind == "slice":
            _, k, a, b, i = step
            view = states[k][a:b]
            view += pool[i]
        elif kind == "read":
            _, k, i, name = step
            pool.append(getattr(np, name)(pool[i], states[k]))
        elif kind == "view":
            _, k, i, a, b, transpose = step
            pool.append(np.multiply(pool[i], states[k].T if transpose else states[k][a:b]))
        elif kind == "reduce":
            pool.append(pool[step[1]].sum())
        elif kind == "buffer":
            _, shape, dtype, i = step
            buf = np.zeros(shape, dtype)
            buf[...] = pool[i]
            pool.append(buf * 2)
        elif kind == "draw":
            pool.append(np.random.random(step[1]))
        elif kind == "pydraw":
            scale = 1.0 + 0.5 * random.gauss(0.0, 1.0)
            pool.append(pool[step[1]] * scale + random.randint(0, 3))
    return tuple(pool[start:]) or (pool[0] * 1,)


def _same(got, want, what):
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype)
    assert np.array_equal(got, want, equal_nan=True), what


def replays_equal_calls(graph, steps, captured, eager, xs, seed):
    """Two replays of ``graph`` (writing the ``captured`` states) equal two eager calls of
    ``steps`` (writing ``eager``), outputs and states bit for bit, NumPy's and Python's
    generators seeded alike for both."""
    feed = dict(zip(graph.inputs, xs))
    np.random.seed(seed)
    random.seed(seed)
    replays = []
    for _ in range(2):
        out = graph.replay(feed, backend="numpy")
        replays.append(([out[name] for name in graph.outputs], [a.copy() for a in captured]))
    np.random.seed(seed)
    random.seed(seed)
    for call in range(2):
        outs = run(steps, eager, xs)
        got_outs, got_states = replays[call]
        for k, (got, want) in enumerate(zip(got_outs, outs)):
            _same(got, want, f"call {call} output {k}")
        for k, (got, want) in enumerate(zip(got_states, eager)):
            _same(got, want, f"call {call} state {k}")


@given(programs(), st.integers(0, 2**32 - 1))
def test_programs_with_state_replay_as_eager_over_two_calls(program, seed):
    specs, inputs, steps = program
    gen = np.random.default_rng(seed)
    initial = [(gen.standard_normal(s) * 2).astype(d) for s, d in specs]
    xs = [(gen.standard_normal(s) * 2).astype(d) for s, d in inputs]
    captured = [a.copy() for a in initial]
    eager = [a.copy() for a in initial]
    with np.errstate(all="ignore"):
        graph = cv.capture(lambda *xs: run(steps, captured, xs), *xs)
        graph.verify()
        for a, b in zip(captured, initial):  # the capture changed nothing outside
            _same(a, b, "state after capture")
        replays_equal_calls(graph, steps, captured, eager, xs, seed)
