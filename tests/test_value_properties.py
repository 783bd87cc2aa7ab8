"""Generated programs that read their own values (the generator of tests/test_properties.py,
then branches on np.any, int() sizes, float() scalars, a while loop, boolean-mask reads and
writes, np.flatnonzero gathers and np.unique), captured with example arrays: the replay equals
eager NumPy bit for bit on the example, and on a second random input it either equals eager
bit for bit or raises GuardError; never a silent difference. ``ci`` profile: 1,000 examples."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_properties import execute, make_inputs, programs, value_of

import capviz as cv

VALUE_STEPS = ["branch", "int_size", "float_scale", "loop", "mask_read", "mask_mean",
               "mask_write", "flatnonzero", "unique"]


@st.composite
def value_programs(draw):
    specs, steps = draw(programs())
    n_base = len(specs) + sum(1 for _ in steps)  # at least one value per step
    reads = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(VALUE_STEPS))
        reads.append((kind, draw(st.integers(0, max(len(specs) - 1, 0))),
                      draw(st.floats(-1, 1, width=32))))
    return specs, steps, reads, n_base


def read_values(pool, reads):
    """The value-reading steps, on the inputs (``pool[i]``): what eager and capture both run."""
    out = []
    for kind, i, c in reads:
        x = pool[i]
        if kind == "branch":
            out.append(x * 2 if np.any(x > c) else x - 1)
        elif kind == "int_size":
            n = int((x > c).sum())
            out.append(np.arange(n, dtype=np.float64) * 0.5)
        elif kind == "float_scale":
            out.append(x * float(x.sum() > c))
        elif kind == "loop":
            y, k = x, 0
            while np.abs(y).max() > 1 and k < 6:
                y = y / 2
                k += 1
            out.append(y)
        elif kind == "mask_read":
            out.append(x[x > c] * 3)
        elif kind == "mask_mean":
            out.append(x[x > c].sum())
        elif kind == "mask_write":
            y = x.astype(np.float64)
            y[y > c] = y[y > c] ** 2 - 1
            out.append(y)
        elif kind == "flatnonzero" and np.ndim(x):
            idx = np.flatnonzero(x > c)
            out.append(np.ravel(x)[idx] + 1)
        elif kind == "unique":
            values, counts = np.unique(x, return_counts=True)
            out.append(values)
            out.append(counts)
    return out


def program_function(steps, reads, n_in):
    def fn(*xs):
        pool = execute(steps, list(xs))
        return tuple(pool[n_in:]) + tuple(read_values(list(xs), reads))

    return fn


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    return got.dtype == want.dtype and got.shape == want.shape \
        and got.tobytes() == want.tobytes()


@given(value_programs(), st.integers(0, 2**32))
def test_value_reads_replay_equal_eager_or_raise_guard_error(program, seed):
    specs, steps, reads, _ = program
    example = make_inputs(specs, seed)
    other = make_inputs(specs, seed + 1)
    fn = program_function(steps, reads, len(specs))
    with np.errstate(all="ignore"):
        cv.seed(seed)
        try:
            eager = [value_of(v) for v in fn(*[a.copy() for a in example])]
        except (ValueError, TypeError, OverflowError, IndexError, ZeroDivisionError):
            return  # NumPy refuses the program on its own example: nothing to capture
        cv.seed(seed)
        graph = cv.capture(fn, *[a.copy() for a in example])
        graph.verify()
        got = graph.replay(dict(zip(graph.inputs, example)), backend="numpy")
        assert len(got) == len(eager)
        for name, want in zip(graph.outputs, eager):
            assert _same(got[name], want), name

        cv.seed(seed)
        try:
            again = [value_of(v) for v in fn(*[a.copy() for a in other])]
        except (ValueError, TypeError, OverflowError, IndexError, ZeroDivisionError):
            again = None
        try:
            replayed = graph.replay(dict(zip(graph.inputs, other)), backend="numpy")
        except cv.GuardError:
            return  # another branch: refused, loudly
        except cv.ReplayError:
            assert again is None, "the replay failed where eager NumPy did not"
            return
        assert again is not None, "eager NumPy failed where the replay returned"
        for name, want in zip(graph.outputs, again):
            assert _same(replayed[name], want), name


def test_the_generator_makes_guards_and_symbols():
    """The value steps do what they are for: guards and size symbols appear."""
    x = np.array([0.5, -2.0, 3.0])
    reads = [(kind, 0, 0.0) for kind in VALUE_STEPS]
    fn = program_function([], reads, 1)
    graph = cv.capture(fn, x)
    assert {g.op for g in graph.guards} >= {"bool()", "int()", "float()"}
    assert len(graph.symbols) >= 4
    with pytest.raises(cv.GuardError):
        graph.replay({graph.inputs[0]: -x})
