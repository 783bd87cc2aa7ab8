"""Replay's memory plan (issue 14): results written into dead buffers with ``out=`` replay bit
for bit what unplanned replay and eager NumPy compute; inputs, constants and outputs are never
written; the peak stays at a few live buffers and ``graph.memory_plan()`` predicts it."""

import tracemalloc

import numpy as np
import pytest
from helpers import fakecupy
from hypothesis import given
from hypothesis import strategies as st
from test_properties import make_inputs, program_function, programs, value_of

import capviz as cv
from capviz.backends import registry
from capviz.models import transformer_block, transformer_weights
from capviz.replay.program import PLANNED, Program
from capviz.replay.run import check_inputs, program

MB4 = 1024 * 1024 * 4


def run_program(graph, inputs, plan, backend="numpy"):
    """Replay ``graph`` with every result >= 1 byte planned (``plan``) or none planned."""
    backend = registry.get(backend)
    prog = Program(graph, backend, min_bytes=0, plan=plan)
    args = check_inputs(graph, dict(zip(graph.inputs, inputs)), backend)
    return prog(args, graph.rng_seed if graph.rng_seed is not None else 0), prog


def assert_same_bits(got, expected, what):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, what
    assert got.tobytes() == expected.tobytes(), what


def planned_matches(fn, *arrays, reuse=True):
    """Eager ``fn``, unplanned replay and planned replay agree bit for bit; nothing the caller
    owns (inputs, constants) is written. Returns the planned program."""
    graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    constants = {i: v.copy() for i, v in graph.constant_values.items()}
    kept = [a.copy() for a in arrays]
    eager = fn(*[a.copy() for a in arrays])
    eager = eager if isinstance(eager, tuple) else (eager,)
    plain, _ = run_program(graph, arrays, plan=False)
    planned, prog = run_program(graph, arrays, plan=True)
    for k, (e, p, q) in enumerate(zip(eager, plain, planned)):
        assert_same_bits(p, e, f"unplanned output {k}")
        assert_same_bits(q, e, f"planned output {k}")
    for a, b in zip(arrays, kept):
        assert a.tobytes() == b.tobytes(), "an input was written"
    for i, v in constants.items():
        assert graph.constant_values[i].tobytes() == v.tobytes(), f"constant %{i} was written"
    if reuse:
        assert any(step[0] == PLANNED for step in prog.table), "no result was planned"
    return prog


# --- the property-based programs of tests/test_properties.py, planned --------------------------


@given(programs(), st.integers(0, 2**32))
def test_planned_replay_equals_unplanned_and_eager_on_generated_programs(program, seed):
    specs, steps = program
    inputs = make_inputs(specs, seed)
    n_in = len(inputs)
    fn = program_function(steps, n_in)

    with np.errstate(all="ignore"):
        cv.seed(seed)
        try:
            eager = [value_of(v) for v in fn(*[a.copy() for a in inputs])]
        except (ValueError, TypeError, OverflowError, IndexError):
            return  # errors are tests/test_properties.py's business
        cv.seed(seed)
        graph = cv.capture(fn, *[cv.spec(s, d) for s, d in specs])
        kept = [a.copy() for a in inputs]
        plain, _ = run_program(graph, inputs, plan=False)
        planned, _ = run_program(graph, inputs, plan=True)
    for k, (e, p, q) in enumerate(zip(eager, plain, planned)):
        assert_same_bits(p, e, f"unplanned output {k}")
        assert_same_bits(q, e, f"planned output {k}")
    for a, b in zip(inputs, kept):
        assert a.tobytes() == b.tobytes(), "an input was written"


# --- aliasing, broadcasting, keepdims, integer and bool dtypes ----------------------------------


def _f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


ROW = np.linspace(-1, 1, 4).astype(np.float32)


@pytest.mark.parametrize("fn", [
    # a view of a buffer keeps it alive: y's buffer is not reused while y.T is
    lambda x: (lambda y: (np.exp(y) + y.T) @ y + 1)(x * 2),
    lambda x: (lambda y: ((y[::-1] + 1) * y) @ y.T - 1)(x * 2),
    lambda x: (lambda y: np.tanh(y.reshape(-1)) * 3)(x - 1),
    # in place with broadcasting: the (4, 4) buffer is the output, the row is broadcast
    lambda x: ((x * 2) + ROW) * ROW - 1,
    lambda x: ROW - (x * 2) / (ROW + 3),
    lambda x: (lambda y: y + y)(x * 3),
    # reductions with keepdims feed broadcasting ops; a reduction into a dead buffer
    lambda x: (lambda y: y - y.max(axis=1, keepdims=True))(x * 2),
    lambda x: (lambda y: (y - y.sum(axis=0, keepdims=True)).sum(axis=1))(np.exp(x)),
    lambda x: (x * 2) @ (x + 1) @ (x - 1),
    # integer and bool dtypes
    lambda x: (lambda i: (i * 3 + 1) // 2 % 5 - i)((x * 10).astype(np.int32)),
    lambda x: (lambda i: (i << 2) ^ (i >> 1) | i)((x * 100).astype(np.int64)),
    lambda x: (lambda y: ((y > 0) & (y < 1)) | ~(y > 2))(x * 2),
    lambda x: np.logical_xor(x > 0, x * 2 < 1) == (x > -1),
    lambda x: (lambda y: np.where(y > 0, y, -y) * 2 + y)(x + 1),
    lambda x: np.concatenate(np.split(x * 2, 2) + [x + 1]) @ x * 2 + 1,
    lambda x: (np.sum(x * 2, axis=1) + np.prod(x + 1, axis=1)) * np.max(x - 1, axis=1),
])
def test_planned_replay_is_bit_identical_on_aliasing_sensitive_programs(fn):
    planned_matches(fn, _f32(4, 4))


def _writes_through_views(x):
    y = x * 2
    v = y[1:]
    v += 1  # a write through a view: recorded as an update of y's buffer
    z = y * 3
    y[0] = 5
    np.multiply(z, 2, out=z)
    return z + 1, y - 1


def _in_place_operators(x):
    y = x + 1
    y *= 2
    y **= 2
    t = y.T
    t -= 1  # y changes too
    return np.exp(y) * 0.5 + y


@pytest.mark.parametrize("fn", [_writes_through_views, _in_place_operators])
def test_planned_replay_is_bit_identical_with_writes_and_views(fn):
    planned_matches(fn, _f32(4, 4, seed=3))


def test_float16_mean_var_std_are_not_planned():
    # out= of float16 into float16 accumulates in float32 and rounds once more: never planned
    x = (_f32(8, 64) * 100).astype(np.float16)
    prog = planned_matches(lambda x: (np.mean(x * 3, axis=1), np.var(x + 1, axis=0),
                                      np.std(x - 1, axis=1) + np.mean(x * 5, axis=1)), x)
    planned_ops = {step[5].op for step in prog.table if step[0] == PLANNED}
    assert planned_ops and not planned_ops & {"mean", "var", "std"}


def test_outputs_are_never_written_after_they_are_made():
    def fn(x):
        a = x * 2  # an output...
        b = a + 1  # ...read once more: its buffer is never reused
        c = np.exp(b)
        return a, c * 3, np.tanh(c)

    prog = planned_matches(fn, _f32(64, 64))
    out_regs = [prog._outputs]
    assert len(set(out_regs[0])) == 3


def test_transformer_block_planned_replay_is_bit_identical():
    p = transformer_weights(d=32, heads=4)
    x = _f32(16, 32, seed=4)
    planned_matches(lambda x: transformer_block(x, p), x)


def test_cupy_replay_uses_the_same_plan(monkeypatch):
    cupy = fakecupy.install(monkeypatch)
    p = transformer_weights(d=64, heads=4)
    x = _f32(512, 64, seed=5)  # (512, 64) float32 = 128 KiB: planned by the default threshold
    graph = cv.capture(lambda x: transformer_block(x, p), cv.spec(x.shape))
    on_numpy = graph.replay({"x": x}, backend="numpy")["out"]
    on_cupy = graph.replay({"x": x}, backend="cupy")["out"]
    assert isinstance(on_cupy, cupy.ndarray)
    assert np.asarray(on_cupy).tobytes() == on_numpy.tobytes()
    prog = program(graph, "cupy")  # the program the replay above compiled
    assert any(step[0] == PLANNED for step in prog.table)
    assert graph.memory_plan().reuses  # the same plan the figures describe


# --- peak memory --------------------------------------------------------------------------------


def _chain(x, n=100):
    for _ in range(n // 2):
        x = x * 1.0001
        x = x + 0.5
    return x


def _traced_peak(fn):
    fn()  # compile and warm up outside the trace
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_100_op_chain_over_4_mib_runs_in_one_live_buffer():
    x = _f32(1024, 1024)
    graph = cv.capture(_chain, cv.spec(x.shape))
    peak = _traced_peak(lambda: graph.replay({"x": x}, backend="numpy"))
    assert peak < 1.2 * MB4, peak / MB4  # unplanned: an operand and a result, 2 buffers
    plan = graph.memory_plan({"x": x})
    assert plan.peak_bytes == MB4 and len(plan.reuses) == 99
    assert abs(peak - plan.peak_bytes) <= 0.1 * peak
    assert np.array_equal(graph.replay({"x": x}, backend="numpy")["out"], _chain(x))


@pytest.mark.parametrize("name", ["chain with views", "mlp"])
def test_memory_plan_peak_matches_tracemalloc_within_10_percent(name):
    w = _f32(512, 512, seed=1)
    if name == "mlp":
        def fn(x):
            h = np.maximum(x @ w, 0)
            h = np.tanh(h @ w) + h
            return (h * 0.5) @ w
    else:
        def fn(x):
            y = np.exp(x * 0.5)
            z = y.T + 1  # y stays alive through its view
            return (z * y).sum(axis=0, keepdims=True) - z
    x = _f32(512, 512, seed=2)
    graph = cv.capture(fn, cv.spec(x.shape))
    peak = _traced_peak(lambda: graph.replay({"x": x}, backend="numpy"))
    plan = graph.memory_plan({"x": cv.spec(x.shape)})
    assert abs(peak - plan.peak_bytes) <= 0.1 * peak, (peak, plan.peak_bytes)


def test_memory_plan_reports_sizes_reuse_and_checks_its_inputs():
    x = _f32(256, 256)
    graph = cv.capture(lambda x: np.tanh(x * 2) + x.sum(axis=0), cv.spec(x.shape))
    plan = graph.memory_plan()
    mul, tanh, total, add = (n.index for n in graph.ops)
    assert plan.sizes[mul] == x.nbytes and plan.sizes[total] == 256 * 4
    assert plan.reuses == {tanh: mul, add: tanh}  # tanh in place, then the add
    assert plan.allocated[tanh] == 0 and plan.allocated[mul] == x.nbytes
    assert plan.input_bytes == x.nbytes and "peak" in str(plan)
    with pytest.raises(cv.ReplayInputError, match=r"input 'x': expected float32\[256,256\], "
                                                  r"got float64\[256,256\]"):
        graph.memory_plan({"x": cv.spec((256, 256), "float64")})
    with pytest.raises(cv.ReplayInputError, match="missing input 'x'"):
        graph.memory_plan({})
    with pytest.raises(cv.ReplayInputError, match="unexpected input 'y'"):
        graph.memory_plan({"x": x, "y": x})


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("fn", [
    lambda x: (x * 2 + 1) * 3,
    lambda x: (lambda y: np.exp(y.T) * 2 + np.ones((4, 4), np.float32))(x - 1),
    lambda x: (lambda y: y.T + y)(x * 2) - 1,
    lambda x: np.tanh(x.T * 2) + (x * 3).sum(axis=0, keepdims=True),
])
def test_planned_results_keep_eager_layout(fn, order):
    x = np.asarray(_f32(4, 4, seed=7), order=order)
    graph = cv.capture(fn, cv.spec(x.shape))
    (planned,), _ = run_program(graph, [x], plan=True)
    eager = fn(x.copy(order="K"))
    assert planned.tobytes(order="A") == eager.tobytes(order="A")
    assert planned.strides == eager.strides and planned.dtype == eager.dtype


# --- know before you run: a replay that cannot fit is refused before it allocates ---------------


def test_a_numpy_replay_larger_than_memory_is_refused_before_allocating():
    from capviz.replay.plan import available_memory

    available = available_memory()
    assert available is not None and available > 0
    # one float32 result is > 64x the memory available: the replay measures the memory again,
    # and on a shared machine it may have grown several times over since this line
    side = int((64 * available) ** 0.5 // 4) + 1
    x = np.broadcast_to(np.float32(1.5), (side, side))  # 0-stride: a huge shape in 4 bytes
    graph = cv.capture(lambda x: np.tanh(x * 2.0) + 1.0, cv.spec(x.shape))
    tracemalloc.start()
    try:
        with pytest.raises(cv.ReplayMemoryError,
                           match=r"this replay needs .* of results at its peak "
                                 r"\(graph\.memory_plan\(\)\.peak_bytes = [\d,]+\), more than the "
                                 r".* of memory available .*nothing was allocated.*"
                                 r"backend='dask'.*pip install '\.\[dask\]'") as info:
            graph.replay({"x": x}, backend="numpy")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing big was allocated
    plan = graph.memory_plan({"x": x})
    assert info.value.peak_bytes == plan.peak_bytes == side * side * 4
    assert info.value.available_bytes > 0
    assert isinstance(info.value, cv.ReplayError) and isinstance(info.value, MemoryError)
    with pytest.raises(cv.ReplayMemoryError):  # the stepping executor checks too
        graph.executor({"x": x}, backend="numpy")
    with pytest.raises(cv.ReplayMemoryError):
        graph.compile(backend="numpy")


def test_the_check_uses_the_plans_peak_not_the_sum_of_results():
    from capviz.replay.plan import check_fits

    x = _f32(256, 256)
    graph = cv.capture(_chain, cv.spec(x.shape))  # 100 results of 256 KiB, one live at a time
    plan = graph.memory_plan()
    total = sum(plan.sizes.values())
    assert plan.peak_bytes == x.nbytes and total == 100 * x.nbytes
    check_fits(graph, available=2 * x.nbytes)  # fits: the sum would not
    with pytest.raises(cv.ReplayMemoryError, match=r"\(graph\.memory_plan\(\)\.peak_bytes = "
                                                   r"262,144\).*than the 128\.0 KiB"):
        check_fits(graph, available=x.nbytes // 2)


def test_memory_plan_takes_shape_and_dtype_pairs():
    graph = cv.capture(lambda x: x * 2, cv.spec((512, 128)))
    assert graph.memory_plan({"x": ((512, 128), "float32")}).peak_bytes == 512 * 128 * 4
    with pytest.raises(cv.ReplayInputError, match=r"input 'x': expected float32\[512,128\], "
                                                  r"got float64\[512,128\]"):
        graph.memory_plan({"x": ((512, 128), "float64")})
    with pytest.raises(cv.ReplayInputError, match=r"input 'x' must be an array, cv\.spec\(\.\.\.\)"
                                                  r" or a \(shape, dtype\) pair, got str"):
        graph.memory_plan({"x": "float32"})
