"""One example program per op of the op table, for the backend contract
(tests/test_backend_contract.py).

The examples are the ones the rest of the suite already uses to check each NumPy function and
ndarray method against eager NumPy (``test_numpy_coverage.CASES`` and ``METHOD_CASES``), one per
ufunc of the table (inputs of a dtype the ufunc has a loop for), and written ones for what those
do not reach: the random ops, the update ops a write records, integer-tensor indexing, NumPy
scalar power and Python numbers an object keeps. :func:`uncovered` names any op of the table no
example reaches, so a new op without an example fails the contract's coverage test.
"""

from __future__ import annotations

import numpy as np
import test_lifted_python_numbers as lifted_cases
import test_numpy_coverage as coverage_cases

import capviz as cv
from capviz import ops

# ops no example can reach, with the reason
UNREACHABLE = {
    "isnat": "needs datetime64 or timedelta64 operands, which a graph never holds",
    "draw": "draws from a live random generator, a state of the graph: replayed on NumPy and "
            "CuPy only (tests/test_generators.py), refused by name elsewhere",
}

_RNG = np.random.default_rng(20261130)


def _ufunc_inputs(name: str) -> list[np.ndarray] | None:
    """Inputs for ufunc ``name``: of its first loop over float64, int64 and bool operands
    (float64 first); values inside the domains of the inverse functions and small enough for
    shifts."""
    ufunc = getattr(np, name)
    make = {"d": lambda: _RNG.uniform(-0.9, 0.9, (3, 4)),
            "l": lambda: _RNG.integers(1, 6, (3, 4)),
            "?": lambda: _RNG.integers(0, 2, (3, 4)).astype(bool)}
    loops = [t[:ufunc.nin] for t in ufunc.types if set(t[:ufunc.nin]) <= set(make)]
    if not loops:
        return None
    loop = min(loops, key=lambda codes: "d" not in codes)
    return [make[code]().astype(np.dtype(code)) for code in loop]


def _ufunc(name: str):
    ufunc = getattr(np, name)
    return lambda *xs: ufunc(*xs)


def _updates(x, i):
    y = x * 1.0
    y[0] = 2.0  # setitem
    y[i] = 3.0  # index_put
    np.put(y, [0, 5], [5.0, 6.0])
    np.put_along_axis(y, np.array([[0], [1], [0]]), 1.5, axis=1)
    np.add.at(y, [0, 1], 1.0)  # ufunc_at
    np.add.at(y, (i, [0, 3]), 0.5)  # advanced_ufunc_at
    np.multiply.at(y, (slice(None), 1), 2.0)
    np.fill_diagonal(y, [7.0, 8.0])
    np.putmask(y, y > 2.5, [0.5, 0.25])
    z = np.zeros_like(y)
    np.cumsum(y, axis=1, out=z)  # into
    return y, z


def _index(x, i):
    return x[i % 3]


def _advanced_index(x, i):
    y = x * 1.0
    y[np.arange(2), i] -= 1.0  # advanced_index, then advanced_index_put
    y[i * 0, i * 0] = np.array([5.0, 6.0])  # one position twice: the last write wins
    return y, x[:, i], x[i[:, None], i], x[i, None, 1:3]


def _ufunc_methods(x, i):
    """np.<ufunc>.reduce / accumulate / outer: associative ufuncs, a left fold (subtract), a
    mixed ndarray operand, and out= a tensor (recorded as ``into``)."""
    z = np.zeros_like(x)
    np.subtract.accumulate(x, axis=1, out=z)
    return (np.maximum.accumulate(x), np.add.reduce(i, axis=1), np.subtract.outer(x[0], i[:, 0]),
            np.logical_or.reduce(x > 0, axis=None), np.subtract.reduce(x, axis=0), z,
            np.multiply.outer(x[:, 0], np.array([1.5, -2.0])), np.add.reduce(x, initial=1.0))


def _scalar_power(x):
    return x.sum() ** 2.5


def _python_numbers():
    """A fresh meter per example (the graph's states are its numbers)."""
    meter = lifted_cases.Meter()  # (the outputs do not read the meter: replays in any order agree)
    meter.step(np.ones((3, 4)))  # warm: the numbers hold their Python types
    return meter.step  # (fn itself: a number kept on another object is still refused)


def _complex_scalar_math(z):
    """A complex NumPy scalar's own * and abs() (``scalar_multiply``, ``scalar_absolute``)."""
    return z[0] * np.conj(z[1]), abs(z.sum()), 2.5j * z[2]


def _float16_sums(x, m):
    """float16 reductions and products over hundreds of terms: where float16 partial sums added
    in another order than NumPy's differ most (a backend's ``tolerance_for(float16)``)."""
    return x.sum(), x.mean(), x.var(), m @ m.T, m.sum(axis=0), m.std(axis=1)


def _float16(shape: tuple) -> np.ndarray:
    """Unit-scale float16 values without subnormals (XLA flushes those: JAX refuses them)."""
    x = _RNG.standard_normal(shape).astype(np.float16)
    return np.where(np.abs(x) < np.finfo(np.float16).tiny, np.float16(0.5), x)


def _data_sizes(x):
    """The ops whose result length depends on the data (size symbols): captured with ``x`` as
    the example (see :func:`capture`)."""
    y = x * 1.0  # (x.copy(): the copy op's function does not pickle for a dask cluster)
    y[y > 0] = y[y > 0] ** 0.5  # mask_select, mask_put
    values, counts = np.unique(np.round(x), return_counts=True)
    return (y, np.nonzero(x > 0)[1], np.flatnonzero(x < 0), np.argwhere(x > 0.5), values,
            counts, np.compress(x[0] > 0, x, axis=1), np.extract(x > 0, x))


_data_sizes.needs_values = True


def _creation(x):
    """Buffers made inside the capture (``create``): filled, ranges, an identity."""
    out = np.zeros((3, 4), dtype=x.dtype)
    out[1] = x[0] * 2.0
    return out @ np.eye(4) + np.arange(4.0), np.full((2,), 3, np.int32), np.linspace(0, 1, 5)


def _from_examples(fn):
    """``fn``, captured with its arrays as examples (a length from the data, see
    :func:`capture`)."""
    def with_values(*xs):
        return fn(*xs)

    with_values.needs_values = True
    return with_values


def _random():
    return (cv.random.uniform((5, 7)), cv.random.normal((5, 7), dtype="float64"),
            cv.random.bernoulli((5, 7), p=0.3))


def _masked_reductions(x, mask):
    """The ``where=``/``initial=`` forms of the reductions (their own ops)."""
    return (np.sum(x, axis=0, where=mask), np.prod(x, axis=1, where=mask),
            np.mean(x, axis=0, where=mask), np.max(x, axis=1, where=mask, initial=-10.0),
            np.min(x, axis=0, where=mask, initial=10.0))


def examples() -> list[tuple[str, object, list]]:
    """``(id, fn, input arrays)`` for every example."""
    out = []
    for k, (name, fn, kinds, dtypes) in enumerate(coverage_cases.CASES):
        if name in coverage_cases.FROM_EXAMPLES:
            fn = _from_examples(fn)
        out.append((f"{name}-{k}", fn, [coverage_cases.make(kind, dtypes[0])
                                        for kind in kinds.split()]))
    for k, (name, fn) in enumerate(coverage_cases.METHOD_CASES):
        out.append((f"method.{name}-{k}", fn, [coverage_cases.make("m", "float64")]))
    for name in sorted(ops.UFUNCS):
        arrays = _ufunc_inputs(name)
        if arrays is not None:
            out.append((f"ufunc.{name}", _ufunc(name), arrays))
    x = _RNG.standard_normal((3, 4))
    out.append(("updates", _updates, [x, np.array([1, 2], np.int64)]))
    out.append(("index", _index, [x, np.array([0, 5, 1], np.int64)]))
    out.append(("advanced_index", _advanced_index, [x, np.array([1, 2], np.int64)]))
    out.append(("scalar_power", _scalar_power, [np.abs(x)]))
    out.append(("python_numbers", _python_numbers(), [x]))
    out.append(("complex_scalar_math", _complex_scalar_math,
                [_RNG.standard_normal(3) + 1j * _RNG.standard_normal(3)]))
    out.append(("ufunc_methods", _ufunc_methods, [x, np.array([[1, -2], [3, 4]], np.int32)]))
    out.append(("float16_sums", _float16_sums, [_float16((600,)), _float16((30, 400))]))
    mask = np.array([[True, False, True, True], [True, True, False, True],
                     [False, True, True, True]])
    out.append(("masked_reductions", _masked_reductions, [x, mask]))
    out.append(("creation", _creation, [x]))
    out.append(("random", _random, []))
    out.append(("data_sizes", _data_sizes, [x]))
    return out


def capture(fn, arrays) -> cv.CapturedGraph:
    """The graph of ``fn`` on inputs shaped like ``arrays`` (random ops seeded)."""
    device = cv.Device("numpy")
    device.seed(7)
    if getattr(fn, "needs_values", False):  # lengths from the data: the arrays are examples
        return cv.capture(fn, *arrays, rng=device)
    return cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays], rng=device)


def uncovered() -> list[str]:
    """Ops of the table that no example's graph holds (and are not :data:`UNREACHABLE`)."""
    seen = set()
    for _, fn, arrays in examples():
        with np.errstate(all="ignore"):
            seen |= {n.op for n in capture(fn, arrays).ops}
    return sorted(set(ops.OPS) - seen - set(UNREACHABLE))
