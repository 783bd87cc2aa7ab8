"""Generated tensor programs: eager NumPy == capture + replay, bit for bit; the graph verifies and
survives a save/load round trip. Profiles: ``ci`` (default, 1,000 examples) and ``thorough``
(``pytest --hypothesis-profile=thorough``)."""

import os
import tempfile

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import capviz as cv
from capviz.testing import assert_graph_equal

UNARY = ["negative", "absolute", "tanh", "sin", "exp", "sqrt", "square", "floor", "sign",
         "log1p", "reciprocal", "logical_not"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "arctan2",
          "less", "equal", "floor_divide", "remainder", "hypot", "logaddexp"]
REDUCE = ["sum", "mean", "max", "min", "var", "std", "argmax", "argmin", "prod"]
DTYPES = ["float32", "float64", "int32"]
SHAPES = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)
WORK = tempfile.mkdtemp(prefix="capviz-props-")


def sample(shape, dtype):
    return np.zeros(shape, dtype)


@st.composite
def programs(draw):
    inputs = draw(st.lists(st.tuples(SHAPES, st.sampled_from(DTYPES)), min_size=1, max_size=3))
    pool = [sample(s, d) for s, d in inputs]
    steps = []
    for _ in range(draw(st.integers(1, 10))):
        i = draw(st.integers(0, len(pool) - 1))
        x = pool[i]
        kind = draw(st.sampled_from(["unary", "binary", "binary", "scalar", "const", "reduce",
                                     "reshape", "transpose", "matmul", "getitem", "index",
                                     "split", "concat", "astype", "uniform", "where"]))
        step = None
        if kind == "unary":
            step = ("unary", draw(st.sampled_from(UNARY)), i)
        elif kind == "binary":
            j = draw(st.integers(0, len(pool) - 1))
            try:
                np.broadcast_shapes(x.shape, pool[j].shape)
                step = ("binary", draw(st.sampled_from(BINARY)), i, j)
            except ValueError:
                pass
        elif kind == "scalar":
            value = draw(st.one_of(st.integers(-3, 3), st.floats(-4, 4, width=32),
                                   st.booleans()))
            step = ("scalar", draw(st.sampled_from(BINARY)), i, value, draw(st.booleans()))
        elif kind == "const":
            shape = x.shape[draw(st.integers(0, x.ndim)):]
            const = np.arange(np.prod(shape, dtype=int), dtype=draw(st.sampled_from(DTYPES)))
            step = ("const", draw(st.sampled_from(BINARY)), i, (const.reshape(shape) - 1) / 2)
        elif kind == "reduce" and x.ndim:
            name = draw(st.sampled_from(REDUCE))
            axis = draw(st.integers(-x.ndim, x.ndim - 1))
            step = ("reduce", name, i, axis, draw(st.booleans()))
        elif kind == "reshape":
            step = ("reshape", i, (-1,) if x.ndim != 1 else (1, x.size))
        elif kind == "transpose":
            step = ("transpose", i, tuple(draw(st.permutations(range(x.ndim)))))
        elif kind == "matmul" and x.ndim:
            k = draw(st.integers(1, 3))
            w = (np.arange(x.shape[-1] * k, dtype=np.float32).reshape(x.shape[-1], k) - 2) / 4
            step = ("matmul", i, w)
        elif kind == "getitem" and x.ndim:
            step = ("getitem", i, draw(st.sampled_from([(0,), (slice(None, None, -1),),
                                                        (Ellipsis, None), ([0, 0],),
                                                        (slice(1, None),)])))
        elif kind == "index" and x.ndim:
            j = draw(st.integers(0, len(pool) - 1))
            step = ("index", i, j)
        elif kind == "split" and x.ndim:
            axis = draw(st.integers(0, x.ndim - 1))
            parts = draw(st.sampled_from([d for d in (1, 2, 4) if x.shape[axis] % d == 0]))
            step = ("split", i, parts, axis)
        elif kind == "concat" and x.ndim:
            j = draw(st.integers(0, len(pool) - 1))
            if pool[j].shape[1:] == x.shape[1:] and pool[j].ndim == x.ndim:
                step = ("concat", i, j)
        elif kind == "astype":
            step = ("astype", i, draw(st.sampled_from(DTYPES)))
        elif kind == "uniform":
            step = ("uniform", draw(SHAPES))
        elif kind == "where":
            j = draw(st.integers(0, len(pool) - 1))
            try:
                np.broadcast_shapes(x.shape, pool[j].shape)
                step = ("where", i, j)
            except ValueError:
                pass
        if step is None:
            continue
        try:
            with np.errstate(all="ignore"):
                produced = execute([step], pool, sample_mode=True)
        except (ValueError, TypeError, IndexError, OverflowError):
            continue
        steps.append(step)
        pool.extend(produced)
    return inputs, steps


def value_of(v):
    return v.numpy() if isinstance(v, cv.Tensor) else np.asarray(v)


def execute(steps, pool, sample_mode=False):
    """Run steps over the value pool with NumPy code; the same code captures or computes."""
    pool = list(pool)
    start = len(pool)
    for step in steps:
        kind = step[0]
        if kind == "unary":
            out = [getattr(np, step[1])(pool[step[2]])]
        elif kind == "binary":
            out = [getattr(np, step[1])(pool[step[2]], pool[step[3]])]
        elif kind == "scalar":
            _, name, i, value, left = step
            fn = getattr(np, name)
            out = [fn(value, pool[i]) if left else fn(pool[i], value)]
        elif kind == "const":
            out = [getattr(np, step[1])(pool[step[2]], step[3])]
        elif kind == "reduce":
            _, name, i, axis, keep = step
            out = [getattr(np, name)(pool[i], axis=axis, keepdims=keep)]
        elif kind == "reshape":
            out = [np.reshape(pool[step[1]], step[2])]
        elif kind == "transpose":
            out = [np.transpose(pool[step[1]], step[2])]
        elif kind == "matmul":
            out = [pool[step[1]] @ step[2]]
        elif kind == "getitem":
            out = [pool[step[1]][step[2]]]
        elif kind == "index":
            x, y = pool[step[1]], pool[step[2]]
            idx = np.remainder(np.abs(y).astype("int32"), x.shape[0])
            out = [x[idx]]
        elif kind == "split":
            out = list(np.split(pool[step[1]], step[2], axis=step[3]))
        elif kind == "concat":
            out = [np.concatenate([pool[step[1]], pool[step[2]]], axis=0)]
        elif kind == "astype":
            out = [pool[step[1]].astype(step[2])]
        elif kind == "uniform":
            out = [np.zeros(step[1], np.float32) if sample_mode
                   else cv.random.uniform(step[1])]
        elif kind == "where":
            out = [np.where(pool[step[1]] > 0, pool[step[1]], pool[step[2]])]
        else:  # pragma: no cover
            raise AssertionError(kind)
        if sample_mode:
            out = [np.asarray(value_of(o)) for o in out]
        pool.extend(out)
    return pool[start:] if sample_mode else pool


def make_inputs(specs, seed):
    """Arrays of the specs (a 0-d spec is a 0-d array, not the NumPy scalar ``* 3`` makes of
    one: a replay refuses a scalar for a 0-d array input)."""
    gen = np.random.default_rng(seed)
    return [np.asarray((gen.standard_normal(s) * 3).astype(d)) for s, d in specs]


def program_function(steps, n_in):
    """The generated program as a function of its inputs, returning every value it made."""

    def fn(*xs):
        pool = execute(steps, list(xs))
        return tuple(pool[n_in:]) or (pool[-1] * 1,)

    return fn


@given(programs(), st.integers(0, 2**32))
def test_capture_replay_equals_eager(program, seed):
    specs, steps = program
    inputs = make_inputs(specs, seed)
    n_in = len(inputs)
    fn = program_function(steps, n_in)

    with np.errstate(all="ignore"):
        cv.seed(seed)
        try:
            eager = [value_of(v) for v in fn(*[a.copy() for a in inputs])]
        except (ValueError, TypeError, OverflowError, IndexError) as err:
            eager_error = err
        else:
            eager_error = None
        cv.seed(seed)
        graph = cv.capture(fn, *[cv.spec(s, d) for s, d in specs])
        graph.verify()
        feed = dict(zip(graph.inputs, inputs))
        if eager_error is not None:
            try:
                graph.replay(feed, backend="numpy")
            except cv.ReplayError as err:
                assert type(err.__cause__) is type(eager_error)
                return
            raise AssertionError(f"eager raised {eager_error!r}, replay did not")
        replayed = graph.replay(feed, backend="numpy")
        for name, expected in zip(graph.outputs, eager):
            got = replayed[name]
            assert got.dtype == expected.dtype and got.shape == expected.shape, name
            assert np.array_equal(got, expected, equal_nan=expected.dtype.kind == "f"), name
        path = os.path.join(WORK, "g.json")
        graph.save(path)
        loaded = cv.load(path)
        assert_graph_equal(loaded, graph)
        again = loaded.replay(feed, backend="numpy")
        for name in graph.outputs:
            assert np.array_equal(again[name], replayed[name],
                                  equal_nan=replayed[name].dtype.kind == "f")


# --- operators, literals and ndarray layouts (issue 10) ------------------------------------------
# One random expression per example over the nine dtypes: a Python operator with the tensor on
# either side of a Python scalar, a NumPy scalar, a 0-d array or an ndarray whose layout is C,
# Fortran, strided or reversed; ** with the fast-path exponents, and ** of a reduction (a NumPy
# scalar, whose ** is scalar math); divmod, round, abs, ~, -.
# Eager NumPy and capture + replay (and save + load + replay) agree bit for bit with equal dtype,
# or both raise the same error type.

import operator  # noqa: E402

OP_DTYPES = ["bool", "int8", "uint8", "int64", "float16", "float32", "float64", "complex64",
             "complex128"]
OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
             operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
             operator.lshift, operator.rshift, operator.lt, operator.le, operator.eq,
             operator.ne, operator.matmul, divmod]
UNARY_OPERATORS = [abs, operator.neg, operator.invert, operator.pos]
POW_EXPONENTS = [2, 0.5, -1, 1, 0, 2.0, -1.0, 3, 0.5 + 0j, np.float32(2), np.int8(2)]


def _values(shape, dtype, seed):
    raw = np.random.default_rng(seed).standard_normal(shape) * 3
    if dtype == "bool":
        return raw > 0
    if dtype.startswith("complex"):
        return (raw + 1j * raw[..., ::-1]).astype(dtype)
    return raw.astype(dtype)


def _laid_out(values, layout):
    """``values`` with the same elements in another memory layout."""
    if layout == "fortran":
        return np.asfortranarray(values)
    if layout == "reversed":
        spread = np.empty(values.shape, values.dtype)[::-1]
        spread[...] = values
        return spread
    if layout == "strided":
        wide = np.zeros(values.shape[:-1] + (values.shape[-1] * 2,), values.dtype)
        wide[..., ::2] = values
        return wide[..., ::2]
    return values


@st.composite
def operator_cases(draw):
    dtype = draw(st.sampled_from(OP_DTYPES))
    shape = draw(st.sampled_from([(3,), (2, 3), (3, 3), (1, 3)]))
    kind = draw(st.sampled_from(["operand", "operand", "pow", "unary", "round", "scalar_pow"]))
    if kind == "pow":
        return dtype, shape, ("pow", draw(st.sampled_from(POW_EXPONENTS)))
    if kind == "scalar_pow":  # x.sum() is a NumPy scalar: its ** is scalar math
        exponent = draw(st.sampled_from(POW_EXPONENTS + [1.5, 0.3, np.float64(2.5)]))
        return dtype, shape, ("scalar_pow", exponent, draw(st.booleans()))
    if kind == "unary":
        return dtype, shape, ("unary", draw(st.sampled_from(UNARY_OPERATORS)))
    if kind == "round":
        return dtype, shape, ("round", draw(st.integers(-1, 3)))
    other_kind = draw(st.sampled_from(["python", "numpy", "zerod", "array"]))
    other_dtype = draw(st.sampled_from(OP_DTYPES))
    if other_kind == "python":
        other = draw(st.sampled_from([0, 1, 2, -1, 3, 200, -129, 0.5, -2.5, True, 1 - 2j]))
    elif other_kind in ("numpy", "zerod"):
        value = draw(st.sampled_from([0, 1, 2, 3, 5]))
        other = np.dtype(other_dtype).type(value)
        other = np.array(other) if other_kind == "zerod" else other
    else:
        layout = draw(st.sampled_from(["c", "fortran", "reversed", "strided"]))
        other_shape = draw(st.sampled_from([shape, shape[-1:], (shape[-1], 3)]))
        other = _laid_out(_values(other_shape, other_dtype, draw(st.integers(0, 9))), layout)
    fn = draw(st.sampled_from(OPERATORS))
    return dtype, shape, ("binary", fn, other, draw(st.booleans()))


def _apply(case, x):
    what = case[0]
    if what == "pow":
        return x ** case[1]
    if what == "unary":
        return case[1](x)
    if what == "round":
        return round(x.sum(), case[1])
    if what == "scalar_pow":
        return case[1] ** x.max() if case[2] else x.sum() ** case[1]
    _, fn, other, tensor_left = case
    return fn(x, other) if tensor_left else fn(other, x)


def _run(fn, *args):
    try:
        with np.errstate(all="ignore"):
            return fn(*args), None
    except (ValueError, TypeError, OverflowError, ZeroDivisionError, cv.ReplayError) as err:
        return None, err


def _catchable(err):
    for base in (OverflowError, TypeError, ValueError, ZeroDivisionError):
        if isinstance(err, base):
            return base
    raise AssertionError(f"unexpected {err!r}")


@given(operator_cases(), st.integers(0, 2**16))
def test_operators_replay_equals_eager(case, seed):
    dtype, shape, op = case
    x = _values(shape, dtype, seed)
    eager, eager_err = _run(_apply, op, x)
    graph, capture_err = _run(cv.capture, lambda t: _apply(op, t), cv.spec(shape, dtype))
    if capture_err is not None:
        assert eager_err is not None, f"capture raised {capture_err!r}, eager gave a value"
        assert isinstance(capture_err, _catchable(eager_err)), (eager_err, capture_err)
        return
    replayed, replay_err = _run(graph.replay, {"t": x})
    if eager_err is not None:
        assert replay_err is not None, f"eager raised {eager_err!r}, replay did not"
        assert isinstance(replay_err.__cause__, _catchable(eager_err))
        return
    assert replay_err is None, replay_err
    want = eager if isinstance(eager, tuple) else (eager,)
    path = os.path.join(WORK, "ops.json")
    graph.save(path)
    again, _ = _run(cv.load(path).replay, {"t": x})
    for got_all in (replayed, again):
        got = list(got_all.values())
        assert len(got) == len(want)
        for g, w in zip(got, want):
            w = np.asarray(w)
            assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype)
            assert g.tobytes() == np.ascontiguousarray(w).tobytes(), (g, w)
