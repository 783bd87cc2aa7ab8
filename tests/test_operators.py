"""Operators behave as ndarray's: ``**`` fast paths, divmod, round, abs, ~, comparisons, 1-d
``@``, reflected operators with ndarrays and with Python and NumPy scalars of every dtype; dtype
rules and errors that never depend on what was captured before; NumPy scalars as typed literals.

Each case runs the same code eagerly on ndarrays, on eager capviz tensors, and captured then
replayed: results equal bit for bit with equal dtype, or all raise the same error type."""

import json
import operator
import os
import tempfile

import numpy as np
import pytest

import capviz as cv
from capviz.ops import elementwise, table

DTYPES = ["bool", "int8", "uint8", "int64", "float16", "float32", "float64", "complex64",
          "complex128"]
NUMPY = cv.Device("numpy")


def sample(dtype, n=7):
    """Values that exercise signs, zero and rounding for ``dtype``."""
    raw = np.array([-2.5, -1.0, 0.0, 0.5, 1.5, 3.0, 7.25][:n])
    if dtype == "bool":
        return raw > 0
    if dtype.startswith("complex"):
        return (raw + 1j * raw[::-1]).astype(dtype)
    return raw.astype(dtype)


def outcome(fn, *args):
    """``fn(*args)`` as ``("value", array)`` or ``("error", type)``."""
    try:
        with np.errstate(all="ignore"):
            out = fn(*args)
    except (ValueError, TypeError, OverflowError, ZeroDivisionError, cv.ReplayError) as err:
        return "error", err
    return "value", out


def check_same(fn, *arrays):
    """fn on ndarrays == fn on eager tensors == fn captured and replayed (or all raise alike)."""
    kind, eager = outcome(fn, *arrays)
    ekind, on_tensors = outcome(lambda *a: fn(*[cv.tensor(x, device=NUMPY) for x in a]),
                                *arrays)
    ckind, graph = outcome(cv.capture, fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    if kind == "error":
        assert ekind == "error" and isinstance(on_tensors, _public(type(eager))), \
            (eager, on_tensors)
        if ckind == "error":
            assert isinstance(graph, _public(type(eager))), (eager, graph)
            return
        rkind, replayed = outcome(graph.replay, dict(zip(graph.inputs, arrays)))
        assert rkind == "error" and isinstance(replayed.__cause__, _public(type(eager)))
        return
    assert ekind == "value", on_tensors
    assert ckind == "value", graph
    with np.errstate(all="ignore"):
        replayed = graph.replay(dict(zip(graph.inputs, arrays)))
    eager = eager if isinstance(eager, tuple) else (eager,)
    on_tensors = on_tensors if isinstance(on_tensors, tuple) else (on_tensors,)
    assert len(replayed) == len(eager)
    for want, got, t in zip(eager, replayed.values(), on_tensors):
        want = np.asarray(want)
        assert_bits(got, want)
        assert_bits(t.numpy(), want)
    return graph


def _public(kind):
    """The builtin error class a NumPy error type stands for (users catch that)."""
    for base in (OverflowError, TypeError, ValueError, ZeroDivisionError):
        if issubclass(kind, base):
            return base
    return kind


def assert_bits(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.tobytes() == np.ascontiguousarray(want).tobytes(), (got, want)


# --- ** ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("exponent", [2, 0.5, -1, 1, 0, 2.0, -1.0, 3, True, np.int64(2),
                                      np.float32(0.5)])
def test_pow_takes_ndarray_fast_paths(dtype, exponent):
    check_same(lambda x: x ** exponent, sample(dtype))


@pytest.mark.parametrize(("dtype", "exponent", "op", "result"), [
    ("bool", 2, "square", "int8"),          # np.power(bool, 2) would be int64
    ("float16", 0.5, "sqrt", "float16"),    # np.power rounds differently
    ("complex64", 2, "square", "complex64"),
    ("complex128", -1, "reciprocal", "complex128"),
    ("complex64", 0.5, "sqrt", "complex64"),
    ("float32", 2.0, "power", "float32"),   # only the Python int 2 takes the fast path
    ("int8", 0.5, "power", "float64"),
    ("bool", np.int64(2), "power", "int64"),
])
def test_pow_records_the_op_ndarray_runs(dtype, exponent, op, result):
    graph = check_same(lambda x: x ** exponent, sample(dtype))
    (node,) = graph.ops
    assert node.op == op and node.dtype == np.dtype(result)


def test_bool_squared_is_int8_and_float16_sqrt_is_exact():
    b = np.array([True, False])
    assert (b ** 2).dtype == np.int8 and np.power(b, 2).dtype == np.int64  # the premise
    h = np.array([4.0, -np.inf], np.float16)
    c = (np.arange(1, 9) * 0.37 + 0.11j * np.arange(1, 9)).astype(np.complex64)
    with np.errstate(invalid="ignore"):  # the premise: the fast paths give other bits
        assert (h ** 0.5).tobytes() != np.power(h, 0.5).tobytes()
    assert (c ** 2).tobytes() != np.power(c, 2).tobytes()
    assert (c ** -1).tobytes() != np.power(c, -1).tobytes()
    check_same(lambda x: x ** 2, b)
    check_same(lambda x: x ** 0.5, h)
    check_same(lambda x: x ** 2, c)
    check_same(lambda x: x ** -1, c)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float16", "float32", "float64",
                                   "complex64", "complex128"])
@pytest.mark.parametrize("exponent", [1.5, 3, 0.5, 2, -1, 0.3, np.float32(1.5), 2.0])
def test_pow_of_a_reduction_is_numpy_scalar_math(dtype, exponent):
    # x.sum() is a NumPy scalar eagerly: its ** is scalar math, not np.power's loops
    x = sample(dtype) * (1 if dtype == "bool" else 0.37)
    x = x.astype(dtype)
    graph = check_same(lambda t: t.sum() ** exponent, x)
    if graph is not None:
        assert graph.ops[-1].op == "scalar_power"
    check_same(lambda t: exponent ** t.max(), x)
    check_same(lambda t: t.sum() ** t.max(), x)


def test_scalar_pow_premise_and_zero_d_arrays():
    values = np.linspace(0.1, 9.7, 40, dtype=np.float32)
    scalar_math = [v ** 1.5 for v in values]  # np.float32 scalars
    loops = [np.power(np.array(v), 1.5) for v in values]
    assert any(a.tobytes() != np.asarray(b).tobytes() for a, b in zip(scalar_math, loops))
    for v in values[:8]:
        check_same(lambda t: t.sum() ** 1.5, np.array([v]))
    # a 0-d input stands for a 0-d array: ndarray's ** (fast path sqrt: (-inf) ** 0.5 is nan)
    z = np.array(-np.inf, np.float32)
    graph = cv.capture(lambda t: t ** 0.5, cv.spec((), "float32"))
    with np.errstate(invalid="ignore"):
        assert_bits(graph.replay({"t": z})["out"], z ** 0.5)
    assert graph.ops[0].op == "sqrt"
    with np.errstate(invalid="ignore"):
        assert np.isnan(z ** 0.5) and np.float32(-np.inf) ** 0.5 > 0  # the premise
    with pytest.raises(TypeError, match="numpy.ndarray doesn't define __round__"):
        cv.capture(lambda t: round(t, 1), cv.spec((), "float32"))


def test_three_argument_pow_is_refused_as_for_ndarray():
    t = cv.tensor(np.ones(3), device=NUMPY)
    with pytest.raises(TypeError, match="unsupported operand"):
        pow(t, 2, 5)


# --- divmod, round, abs, ~ -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "float16", "float32", "float64"])
def test_divmod_gives_both_results(dtype):
    other = np.array([3, -2, 5, 4, 3, 2, 7], dtype if dtype != "uint8" else "int8")
    graph = check_same(lambda x: divmod(x, 3), sample(dtype))
    assert "divmod" in str(graph) and len(graph.outputs) == 2
    check_same(lambda x: divmod(7, x), sample(dtype))
    check_same(lambda x, y: divmod(y, x), sample(dtype), other)
    check_same(lambda x: divmod(np.arange(7, dtype=dtype), x), sample(dtype))
    check_same(lambda x: np.divmod(x, 2), sample(dtype))


def test_modf_and_frexp_are_multi_output_too():
    check_same(np.modf, sample("float32"))
    check_same(np.frexp, sample("float64"))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("ndigits", [0, 1, 2, -1])
def test_round_of_a_0d_tensor_is_numpy_scalar_round(dtype, ndigits):
    x = (sample("float64") * 13.37).astype(dtype)
    want = round(x.sum(), ndigits)  # a NumPy scalar's __round__
    graph = cv.capture(lambda t: round(t.sum(), ndigits), cv.spec(x.shape, dtype))
    assert_bits(graph.replay({"t": x})["out"], np.asarray(want))
    assert_bits(round(cv.tensor(x, device=NUMPY).sum(), ndigits).numpy(), np.asarray(want))


def test_round_refuses_as_ndarray_does():
    x = np.ones(3)
    with pytest.raises(TypeError, match="numpy.ndarray doesn't define __round__"):
        round(x)
    with pytest.raises(TypeError, match=r"numpy\.ndarray doesn't define __round__.*np\.round"):
        cv.capture(lambda t: round(t, 1), cv.spec(3))
    with pytest.raises(TypeError, match="numpy.bool doesn't define __round__"):
        round(cv.tensor(np.array(True), device=NUMPY), 1)
    assert round(cv.tensor(np.array(2.5), device=NUMPY)) == round(np.float64(2.5)) == 2
    with pytest.raises(cv.DataReadError, match=r"round\(\)"):
        cv.capture(lambda t: round(t.sum()), cv.spec(3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_abs_neg_invert(dtype):
    x = sample(dtype)
    if dtype == "int8":
        x[0] = -128  # abs(-128) wraps in int8, as in NumPy
    check_same(abs, x)
    check_same(operator.invert, x)
    check_same(operator.neg, x)
    check_same(operator.pos, x)


def test_invert_of_float_is_numpy_type_error_at_capture():
    with pytest.raises(TypeError) as eager:
        ~np.ones(3)
    with pytest.raises(cv.DTypeError, match="ufunc 'invert' not supported") as info:
        cv.capture(lambda x: ~x, cv.spec(3))
    assert isinstance(info.value, TypeError) and str(eager.value) in str(info.value)
    assert info.value.graph is not None


# --- comparisons, @, reflected operators ------------------------------------------------------

BINARY = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
    "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}
SCALARS = [3, -1, 200, 0.5, True, 2 + 1j, np.bool_(True), np.int8(-3), np.uint8(200),
           np.int64(3), np.float16(0.5), np.float32(0.5), np.float64(-1.5), np.complex64(1j),
           np.complex128(2 - 1j)]


@pytest.mark.parametrize("symbol", sorted(BINARY))
@pytest.mark.parametrize("dtype", DTYPES)
def test_operators_with_scalars_both_sides(symbol, dtype):
    fn = BINARY[symbol]
    x = sample(dtype)
    for s in SCALARS:
        check_same(lambda t, s=s: fn(t, s), x)
        check_same(lambda t, s=s: fn(s, t), x)


@pytest.mark.parametrize("symbol", sorted(BINARY))
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float16", "complex64"])
def test_ndarray_on_the_left_reaches_the_tensor(symbol, dtype):
    fn = BINARY[symbol]
    x = sample(dtype)
    for other in (np.arange(7, dtype="int8") - 3, np.linspace(-2, 2, 7).astype("float32"),
                  sample("bool")):
        graph = check_same(lambda t, o=other: fn(o, t), x)
        if graph is not None:
            assert len(graph.constants) == 1


def test_matmul_with_1d_operands():
    rng = np.random.default_rng(1)
    m = rng.standard_normal((3, 4)).astype(np.float32)
    v = rng.standard_normal(4).astype(np.float32)
    w = rng.standard_normal(3).astype(np.float32)
    check_same(lambda a, b: a @ b, m, v)
    check_same(lambda a, b: a @ b, w, m)
    check_same(lambda a, b: a @ b, v, v)
    check_same(lambda b: m @ b, v)          # ndarray @ tensor
    check_same(lambda a: a @ v, m)          # tensor @ ndarray
    with pytest.raises(cv.ShapeError, match="matmul"):
        cv.capture(lambda a: a @ np.ones(3, np.float32), cv.spec((3, 4)))


# --- dtype rules without history ----------------------------------------------------------------


def _fresh_caches():
    elementwise._UFUNC_CACHE.clear()
    table._DTYPE_CACHE.clear()


def test_uint8_minus_one_raises_whatever_was_captured_before():
    with pytest.raises(OverflowError) as eager:
        np.ones(3, np.uint8) + (-1)
    for warm_first in (False, True):
        _fresh_caches()
        if warm_first:  # the same op with an in-range int fills the cache first
            cv.capture(lambda x: x + 1, cv.spec(3, "uint8"))
            cv.capture(lambda x: x + 100, cv.spec(3, "uint8"))
        with pytest.raises(cv.ScalarOverflowError) as info:
            cv.capture(lambda x: x + (-1), cv.spec(3, "uint8"))
        assert isinstance(info.value, OverflowError)
        assert str(eager.value) in str(info.value)  # NumPy's own message
        assert "test_operators.py" in str(info.value)


@pytest.mark.parametrize("value", [-1, -128, 127, 128, 255, 256, 2**31, 2**63, 2**64])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int64", "uint64", "float16"])
def test_int_literal_dtype_and_error_do_not_depend_on_history(value, dtype):
    x = np.ones(3, dtype)
    kind, want = outcome(lambda: x + value)
    for warm in (None, 1, 5, -1, 300):
        _fresh_caches()
        if warm is not None:
            outcome(cv.capture, lambda t, w=warm: t + w, cv.spec(3, dtype))
        ckind, graph = outcome(cv.capture, lambda t: t + value, cv.spec(3, dtype))
        if kind == "error":
            assert ckind == "error" and isinstance(graph, _public(type(want))), (warm, graph)
        else:
            assert ckind == "value", (warm, graph)
            assert graph.ops[0].dtype == want.dtype


# --- NumPy scalars and 0-d arrays are typed literals ------------------------------------------


def test_numpy_scalar_is_a_typed_literal_not_a_constant():
    h = np.array([1.0, 2.0, 3.0], np.float16)
    graph = check_same(lambda x: x * np.float32(0.5), h)
    assert graph.constants == [] and graph.ops[0].dtype == np.float32  # strong, unlike 0.5
    assert type(graph.ops[0].args[1]) is np.float32
    weak = check_same(lambda x: x * 0.5, h)
    assert weak.ops[0].dtype == np.float16
    assert "np.float32(0.5)" in str(graph)


def test_zero_d_array_keeps_its_dtype():
    """A read-only 0-d array is a typed literal; a writeable one a 0-d constant (the call
    may write it later: tests/test_state_zero_d.py); both promote as NumPy's 0-d array."""
    x = sample("int8")
    two = np.array(2, np.int16)
    graph = check_same(lambda t: t + two, x)
    assert graph.ops[0].dtype == np.int16
    assert graph.constants[0].shape == () and graph.constants[0].dtype == np.int16
    two.flags.writeable = False
    graph = check_same(lambda t: t + two, x)
    assert graph.constants == [] and graph.ops[0].dtype == np.int16
    assert type(graph.ops[0].args[1]) is np.int16


def test_scalar_literals_survive_save_and_load():
    x = sample("float16")
    graph = cv.capture(lambda t: (t * np.float32(0.1) + np.int8(-3)) ** np.float64(2.0)
                       - np.complex64(1j) + np.uint64(2**64 - 1), cv.spec(x.shape, x.dtype))
    path = os.path.join(tempfile.mkdtemp(), "g.json")
    graph.save(path)
    loaded = cv.load(path)
    types = [[type(a) for a in n.args[1:]] for n in graph.ops]
    assert [[type(a) for a in n.args[1:]] for n in loaded.ops] == types
    assert np.float32 in types[0]
    assert_bits(loaded.replay({"t": x})["out"], graph.replay({"t": x})["out"])


def test_scalar_literal_files_are_checked():
    graph = cv.capture(lambda t: t * np.float32(0.5), cv.spec(3))
    path = os.path.join(tempfile.mkdtemp(), "g.json")
    graph.save(path)
    doc = json.load(open(path))
    (literal,) = [a["lit"] for n in doc["nodes"] for a in n["args"] if "lit" in a]
    assert literal == {"$scalar": ["float32", 0.5]}
    literal["$scalar"][1] = 0.1
    with open(path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(cv.GraphFormatError, match="0.1 is not exactly a float32"):
        cv.load(path)
