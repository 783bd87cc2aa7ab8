"""Random programs of writes and views: eager NumPy == capture replay, bit for bit.

A program is a list of steps over a pool of arrays (it starts with the inputs ``x`` and ``y``):
views of views (basic indexing, ``.T``, transpose, swapaxes, moveaxis, flip, expand_dims,
squeeze, reshape, split), in-place operators with literals, arrays and pool members,
``t[idx] = v`` with every index form, ufuncs with ``out=``, ``ufunc.at`` with repeated rows,
``np.copyto``, and ordinary ops. The same interpreter runs on ndarrays and, inside a capture, on
tensors; the outputs are every pool member at the end. Either both runs give equal results (same
dtype and bits), or both raise the same kind of error; a capture may also refuse by name
(``cv.UnsupportedOperationError``) where it cannot tell what NumPy does.
"""

import operator

import numpy as np
import pytest
from hypothesis import Phase, event, given, settings
from hypothesis import strategies as st

import capviz as cv

# NumPy warns when a write drops an imaginary part, eagerly and at replay alike
pytestmark = pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")

DTYPES = ["bool", "int8", "uint8", "int64", "float16", "float32", "float64", "complex64",
          "complex128"]
INPLACE = [operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
           operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
           operator.ilshift, operator.irshift]
UFUNCS = [np.add, np.multiply, np.subtract, np.maximum, np.negative, np.sqrt, np.abs]
ERRORS = (OverflowError, IndexError, TypeError, ValueError)

LITERALS = [0, 1, 2, 3, -1, -3, 5, 0.5, -1.5, 2.0, True, 1j, 300]
VIEWS = ["slice", "int", "T", "transpose", "swap", "expand", "squeeze", "flat", "reshape", "none",
         "split", "ellipsis", "moveaxis", "flip"]
INDEXES = ["int", "slice", "list", "mask", "ellipsis", "none"]
NEW = ["mul", "add", "copy"]

# A step is eight small integers, decoded by `run` (cheap to draw and to shrink): the kind, the
# pool member it acts on, then what it does (which view, operator, index form, operand...).
programs = st.lists(st.tuples(*[st.integers(0, 40)] * 8), min_size=1, max_size=7)


def _view(a, kind, p):
    nd = np.ndim(a)
    if kind == "slice" and nd:
        index = []
        for axis in range(min(nd, 2)):
            n = a.shape[axis]
            start, step = p[2 * axis] % (n + 1), p[2 * axis + 1] or 1
            index.append(slice(start, None, step))
        return a[tuple(index)]
    if kind == "int" and nd and a.shape[0]:
        return a[p[0] % a.shape[0]]
    if kind == "T":
        return a.T
    if kind == "transpose" and nd:
        return np.transpose(a, tuple(np.roll(np.arange(nd), p[0] % nd).tolist()))
    if kind == "swap" and nd >= 2:
        return np.swapaxes(a, 0, -1)
    if kind == "expand":
        return np.expand_dims(a, p[0] % (nd + 1))
    if kind == "squeeze":
        return np.squeeze(a)
    if kind == "flat":
        return a.reshape(-1)
    if kind == "reshape" and nd >= 2:
        return a.reshape(a.shape[0], -1)
    if kind == "none":
        return a[None, ...]
    if kind == "ellipsis" and nd:
        return a[..., p[1] % a.shape[-1]] if a.shape[-1] else a[...]
    if kind == "moveaxis" and nd:
        return np.moveaxis(a, 0, -1)
    if kind == "flip" and nd:
        return np.flip(a, p[0] % nd)
    if kind == "split" and nd and a.shape[0] and a.shape[0] % 2 == 0:
        return np.split(a, 2)[p[0] % 2]
    return a[...]


def _index(a, kind, p):
    nd = np.ndim(a)
    if kind == "int" and nd and a.shape[0]:
        return p[0] % a.shape[0]
    if kind == "slice" and nd:
        return slice(p[0] % (a.shape[0] + 1), None, p[1] or 1)
    if kind == "list" and nd and a.shape[0]:
        return [p[0] % a.shape[0], p[1] % a.shape[0]]
    if kind == "mask":
        return a > (a.dtype.type(p[2]) if a.dtype.kind != "c" else 0)
    if kind == "none":
        return (None, Ellipsis)
    return Ellipsis


def _operand(code, pool):
    """A literal, or (odd codes) a pool member."""
    if code % 2:
        return pool[code // 2 % len(pool)]
    return LITERALS[code // 2 % len(LITERALS)]


def run(program, x, y):
    pool = [x, y]
    for kind, target, a, b, *p in program:
        i = target % len(pool)
        t = pool[i]
        p = [v - 4 if v < 9 else v % 9 - 4 for v in p] + [a % 9 - 4]
        kind %= 6
        if kind == 0:
            pool.append(_view(t, VIEWS[a % len(VIEWS)], p + p))
        elif kind == 1:
            pool[i] = INPLACE[a % len(INPLACE)](t, _operand(b, pool))
        elif kind == 2:
            form = INDEXES[a % len(INDEXES)]
            value = _operand(b, pool)
            if form == "mask" and b % 2:
                value = value[(0,) * np.ndim(value)]  # one value: as many as True is data
            t[_index(t, form, p)] = value
        elif kind == 3:
            ufunc = UFUNCS[a % len(UFUNCS)]
            other = pool[b % len(pool)]
            ufunc(*((other,) if ufunc.nin == 1 else (other, t)), out=t)
        elif kind == 4 and np.ndim(t) and t.shape[0]:
            rows = [p[0] % t.shape[0], p[1] % t.shape[0], p[0] % t.shape[0]]
            at = [np.add, np.maximum, np.multiply][a % 3]
            at.at(t, rows, _operand(b, pool) if b % 2 == 0 else 2)
        elif kind == 4:
            np.copyto(t, _operand(b, pool))
        elif NEW[a % len(NEW)] == "mul":
            pool.append(t * 2)
        elif NEW[a % len(NEW)] == "add":
            pool.append(t + pool[0])
        else:
            pool.append(t.copy())
    return tuple(pool)


def _kind(err):
    return next((k for k in ERRORS if isinstance(err, k)), type(err))


def _check(program, x, y):
    try:
        with np.errstate(all="ignore"):
            eager = [np.asarray(v) for v in run(program, x.copy(), y.copy())]
    except ERRORS as err:
        eager = err
    try:
        graph = cv.capture(lambda x, y: run(program, x, y), cv.spec(x.shape, x.dtype),
                           cv.spec(y.shape, y.dtype))
    except cv.UnsupportedOperationError:
        event("capture refused by name")
        return
    except ERRORS as err:
        assert isinstance(eager, BaseException), f"capture raised {err!r}, eager ran"
        assert _kind(err) is _kind(eager), (err, eager)
        event("both raised")
        return
    assert not isinstance(eager, BaseException), f"eager raised {eager!r}, capture ran"
    with np.errstate(all="ignore"):
        replayed = graph.replay({"x": x, "y": y}, backend="numpy")
    for e, name in zip(eager, graph.outputs):
        r = replayed[name]
        assert e.dtype == r.dtype and e.shape == r.shape, (name, e.dtype, r.dtype)
        assert np.array_equal(e, r, equal_nan=e.dtype.kind in "fc"), (name, e, r)
    event("equal")


def _array(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(-3, 6, size=shape)
    if np.dtype(dtype).kind == "c":
        return (values + 1j * rng.integers(-2, 3, size=shape)).astype(dtype)
    return values.astype(dtype)


shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@settings(phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink])
@given(programs, st.sampled_from(DTYPES), st.sampled_from(DTYPES), shapes, st.booleans(),
       st.integers(0, 99))
def test_writes_and_views_replay_eager(program, dx, dy, shape, same_shape, seed):
    y_shape = shape if same_shape else shape[-1:]
    _check(program, _array(dx, shape, seed), _array(dy, y_shape, seed + 1))
