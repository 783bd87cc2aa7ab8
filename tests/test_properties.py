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
    gen = np.random.default_rng(seed)
    return [(gen.standard_normal(s) * 3).astype(d) for s, d in specs]


@given(programs(), st.integers(0, 2**32))
def test_capture_replay_equals_eager(program, seed):
    specs, steps = program
    inputs = make_inputs(specs, seed)
    n_in = len(inputs)

    def fn(*xs):
        pool = execute(steps, list(xs))
        return tuple(pool[n_in:]) or (pool[-1] * 1,)

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
