"""NumPy scalars and the Python protocols of tensors, captured as NumPy computes them: aliases
NumPy returns (astype copy=False, conj of real), a NumPy scalar base's ``**`` and a complex
NumPy scalar's own math, out-of-range NumPy scalars written into integer tensors,
copy/deepcopy, ``t.shape =``, and ``format()`` / ``is_integer()`` of tensors."""

from __future__ import annotations

import copy
import operator
import re

import numpy as np
import pytest

import capviz as cv

NUMPY = cv.Device("numpy")


def assert_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "fc" and want.dtype.itemsize > 8:  # long double: padding bytes
        assert np.array_equal(got, want, equal_nan=True), (got, want)
    else:
        assert got.tobytes() == np.ascontiguousarray(want).tobytes(), (got, want)


def replay_matches_eager(fn, *arrays):
    """Capture ``fn``, replay it, and compare every output bit for bit with ``fn`` on
    ndarrays (copies, since ``fn`` may write into its arguments)."""
    graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    with np.errstate(all="ignore"):
        want = fn(*[a.copy() for a in arrays])
        got = graph.replay(dict(zip(graph.inputs, arrays)))
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for w, g in zip(want, got.values()):
        assert_bits(g, w)
    return graph


def eager_error(fn, *arrays):
    with pytest.raises(Exception) as info:
        fn(*[a.copy() for a in arrays])
    return info.value


def assert_capture_raises_as_numpy(fn, array):
    """Capture raises NumPy's error type and message, with the user's line as a note."""
    want = eager_error(fn, array)
    with pytest.raises(type(want), match=re.escape(str(want))) as info:
        cv.capture(fn, cv.spec(array.shape, array.dtype))
    assert any(__file__ in note for note in getattr(info.value, "__notes__", ()))


# --- A1: NumPy returns the array itself --------------------------------------------------------


def _writes_through_aliases(x):
    y = x.astype(np.float32, copy=False)
    y *= 2
    z = x.conj()
    z += 1
    w = x.conjugate()
    w -= 0.25
    v = np.astype(x, np.float32, copy=False)
    v /= 4
    return x


def test_astype_copy_false_and_real_conj_alias_the_tensor():
    x = np.arange(5, dtype=np.float32) * np.float32(1.5)
    replay_matches_eager(_writes_through_aliases, x)
    t = cv.tensor(x.copy(), device=NUMPY)
    assert t.astype(np.float32, copy=False) is t
    assert np.astype(t, np.float32, copy=False) is t
    assert t.conj() is t and t.conjugate() is t
    assert t.astype(np.float32) is not t and t.astype(np.float64, copy=False) is not t


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float64"])
def test_real_conj_aliases_and_copies_stay_copies(dtype):
    x = (np.arange(4) % 3).astype(dtype)

    def f(x):
        x.conj()[1] = 1
        y = x.astype(x.dtype)  # copy=True: a new array
        y[0] = 0
        x.astype(np.complex64, copy=False)[2] = 5  # another dtype: a new array
        return x, y

    replay_matches_eager(f, x)


def test_complex_conj_is_still_a_new_tensor():
    x = np.array([1 + 2j, 3 - 1j], np.complex64)

    def f(x):
        c = x.conj()
        c[0] = 0
        return x, c

    graph = replay_matches_eager(f, x)
    assert "conjugate" in [node.op for node in graph.ops]


def test_astype_copy_false_with_an_order_refuses_in_capture_and_follows_numpy_eagerly():
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"(?s)order='C', copy=False.*write order='K'"):
        cv.capture(lambda x: x.astype(np.float32, order="C", copy=False), cv.spec(3))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = cv.tensor(a, device=NUMPY)
    assert t.astype(np.float32, order="C", copy=False) is t
    assert (t.T.astype(np.float32, order="C", copy=False) is t.T) is False
    f_order = t.T
    assert f_order.astype(np.float32, order="F", copy=False) is f_order


# --- A2: a NumPy scalar base's ** is NumPy's scalar math ------------------------------------

BASES = [np.bool_(True), np.int8(3), np.uint8(3), np.int16(3), np.uint16(3), np.int32(3),
         np.uint32(3), np.int64(3), np.uint64(3), np.float16(1.1), np.float32(1.1),
         np.float64(1.1), np.longdouble(1.1), np.complex64(1.1 + 0.2j),
         np.complex128(1.1 + 0.2j), np.clongdouble(1.1 + 0.2j)]
OPERATOR_FORMS = {
    "b ** s": lambda b, s: b ** s,
    "pow(b, s)": lambda b, s: pow(b, s),
    "operator.pow(b, s)": lambda b, s: operator.pow(b, s),
}


def test_scalar_math_and_power_loops_differ():  # the premise: recording power is wrong
    sums = [(np.random.default_rng(k).random((5, 4)) * 0.3).astype(np.float32).sum()
            for k in range(20)]
    assert any((np.float32(1.1) ** s) != np.power(np.float32(1.1), s) for s in sums)


@pytest.mark.parametrize("form", sorted(OPERATOR_FORMS))
def test_numpy_scalar_base_pow_records_scalar_power(form):
    def f(x, pw=OPERATOR_FORMS[form]):
        return pw(np.float32(1.1), x.sum())

    for k in range(40):
        x = (np.random.default_rng(k).random((5, 4)) * 0.3).astype(np.float32)
        graph = replay_matches_eager(f, x)
    assert graph.ops[-1].op == "scalar_power"


def test_np_power_with_a_numpy_scalar_base_records_the_ufunc():
    def f(x):
        return np.power(np.float32(1.1), x.sum())

    for k in range(40):
        x = (np.random.default_rng(k).random((5, 4)) * 0.3).astype(np.float32)
        graph = replay_matches_eager(f, x)
    assert graph.ops[-1].op == "power"


@pytest.mark.parametrize("base", BASES, ids=lambda b: type(b).__name__)
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int64", "float16", "float32",
                                   "float64", "complex64"])
def test_every_numpy_scalar_base_matches_eager(base, dtype):
    x = np.array([1, 0, 2]).astype(dtype)
    if dtype.startswith(("float", "complex")):
        x = (np.array([0.31, 0.17, 0.05]) * (1 + 0.5j if dtype.startswith("c") else 1)
             ).astype(dtype)
    forms = {**OPERATOR_FORMS, "np.power(b, s)": lambda b, s: np.power(b, s)}
    for pw in forms.values():
        def f(x, pw=pw):
            return pw(base, x.sum())

        try:
            with np.errstate(all="ignore"):
                f(x)
        except (ValueError, TypeError, OverflowError) as err:
            with pytest.raises(type(err)):
                graph = cv.capture(f, cv.spec(x.shape, x.dtype))
                graph.replay({"x": x})
            continue
        replay_matches_eager(f, x)


def test_numpy_scalar_base_through_an_unknown_name_is_refused():
    def f(x):
        p = np.power  # is this the operator or np.power? capture cannot tell
        return p(np.float32(1.1), x.sum())

    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"(?s)numpy.float32 \*\* tensor.*write b \*\* t .* or np.power"):
        cv.capture(f, cv.spec(3, "float32"))


def test_numpy_scalar_base_with_an_nd_tensor_is_still_np_power():
    x = np.linspace(0.1, 3, 12, dtype=np.float32)
    graph = replay_matches_eager(lambda x: np.float32(1.1) ** x, x)
    assert graph.ops[-1].op == "power"


# --- review 16: a complex NumPy scalar's * and abs() are its scalar math ----------------------

COMPLEX_C = np.complex128(0.3 + 0.7j)
COMPLEX_SCALAR_FORMS = {
    "s * conj(s)": (lambda a: a[0] * np.conj(a[0]), "scalar_multiply"),
    "s * t": (lambda a: a[0] * a[1], "scalar_multiply"),
    "abs(s)": (lambda a: abs(a[0]), "scalar_absolute"),
    "abs(a.sum())": (lambda a: abs(a.sum()), "scalar_absolute"),
    "s * 2.5j": (lambda a: a[1] * 2.5j, "scalar_multiply"),
    "2.5j * s": (lambda a: 2.5j * a[1], "scalar_multiply"),
    "numpy scalar * s": (lambda a: COMPLEX_C * a[1], "scalar_multiply"),
    "operator.mul(numpy scalar, s)": (lambda a: operator.mul(COMPLEX_C, a[1]),
                                      "scalar_multiply"),
    "s *= t": (lambda a: _imul(a[0], a[1]), "scalar_multiply"),
    "np.multiply(numpy scalar, s)": (lambda a: np.multiply(COMPLEX_C, a[1]), "multiply"),
    "np.abs(s)": (lambda a: np.abs(a[0]), "absolute"),
    "s * array": (lambda a: a[0] * a, "multiply"),
}


def _imul(s, t):
    s *= t
    return s


def test_complex_scalar_math_and_the_loops_differ():  # the premise (on a CPU with FMA)
    rng = np.random.default_rng(0)
    z = (rng.standard_normal(200) + 1j * rng.standard_normal(200))
    scalar = [z[k] * np.conj(z[k]) for k in range(200)]
    loops = np.multiply(z, np.conj(z))
    if all(s == v for s, v in zip(scalar, loops)):
        pytest.skip("this CPU's loops round complex * as the scalar math does (no FMA)")
    assert any(s != v for s, v in zip(scalar, loops))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("form", sorted(COMPLEX_SCALAR_FORMS))
def test_complex_numpy_scalar_math_replays_bit_equal(form, dtype):
    fn, op = COMPLEX_SCALAR_FORMS[form]
    rng = np.random.default_rng(7)
    for _ in range(60):
        a = (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(dtype)
        graph = replay_matches_eager(fn, a)
    assert graph.ops[-1].op == op


def test_real_scalar_multiply_is_still_multiply():  # real * is exactly rounded either way
    graph = replay_matches_eager(lambda a: a[0] * a[1], np.array([0.1, 0.3]))
    assert graph.ops[-1].op == "multiply"


def test_numpy_complex_scalar_times_tensor_through_an_unknown_name_is_refused():
    def f(a):
        m = np.multiply  # the operator or np.multiply? capture cannot tell
        return m(COMPLEX_C, a[1])

    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"(?s)numpy.complex128 \* tensor.*write b \* t .* or "
                             r"np.multiply\(b, t\)"):
        cv.capture(f, cv.spec(3, "complex128"))


# --- A7/B6: NumPy scalars and 0-d arrays written into integer tensors ------------------------

OUT_OF_RANGE = {
    "t[0] = np.int64(300)": lambda t: t.__setitem__(0, np.int64(300)),
    "t[:, 1] = np.int64(300)": lambda t: t.reshape(2, 3).__setitem__((slice(None), 1),
                                                                     np.int64(300)),
    "t[1:] = np.int16(-300)": lambda t: t.__setitem__(slice(1, None), np.int16(-300)),
    "t.fill(np.int64(300))": lambda t: t.fill(np.int64(300)),
    "t[...] = np.float64(1e9)": lambda t: t.__setitem__(Ellipsis, np.float64(1e9)),
    "t[0] = np.float64(nan)": lambda t: t.__setitem__(0, np.float64("nan")),
    "t[0] = np.uint64(2**63)": lambda t: t.__setitem__(0, np.uint64(2**63)),
    "np.place(t, t > 0, 300)": lambda t: np.place(t, t > 0, 300),
    "np.place(t, t > 0, [300])": lambda t: np.place(t, t > 0, [300]),
    "np.place(t, t > 0, np.array(3))": lambda t: np.place(t, t > 0, np.array(3)),
    "np.place(t, t > 0, np.array([3]))": lambda t: np.place(t, t > 0, np.array([3])),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_RANGE))
def test_out_of_range_writes_raise_numpys_error_at_capture(case):
    assert_capture_raises_as_numpy(OUT_OF_RANGE[case], np.array([1, 2, 3, 4, 5, 6], np.int8))


def test_place_refuses_a_tensor_value_numpy_cannot_cast_safely():
    with pytest.raises(TypeError, match=re.escape("Cannot cast array data from "
                                                  "dtype('int64') to dtype('int8') according "
                                                  "to the rule 'safe'")):
        cv.capture(lambda t, v: np.place(t, t > 0, v), cv.spec(3, "int8"), cv.spec(1, "int64"))
    with pytest.raises(TypeError, match="according to the rule 'safe'"):
        np.place(np.ones(3, np.int8), np.ones(3, bool), np.ones(1, np.int64))  # the premise


IN_RANGE_OR_UNSAFE = {
    "t[0] = np.int64(100)": lambda t: (t.__setitem__(0, np.int64(100)), t)[1],
    "t[1:] = np.uint8(7)": lambda t: (t.__setitem__(slice(1, None), np.uint8(7)), t)[1],
    "t.fill(np.int16(-5))": lambda t: (t.fill(np.int16(-5)), t)[1],
    "t[0] = np.array(300)": lambda t: (t.__setitem__(0, np.array(300)), t)[1],
    "t[1:] = np.array(300)": lambda t: (t.__setitem__(slice(1, None), np.array(300)), t)[1],
    "t.fill(np.array(-300))": lambda t: (t.fill(np.array(-300)), t)[1],
    "t[idx] = np.array(300)": lambda t: (t.__setitem__(np.array([0, 2]), np.array(300)), t)[1],
    "t[idx] = np.int64(300)": lambda t: (t.__setitem__(np.array([0, 2]), np.int64(300)), t)[1],
    "t[t > 2] = np.int64(300)": lambda t: (t.__setitem__(t > 2, np.int64(300)), t)[1],
    "np.place(t, t > 2, np.int64(300))": lambda t: (np.place(t, t > 2, np.int64(300)), t)[1],
    "np.place(t, t > 2, 2.5)": lambda t: (np.place(t, t > 2, 2.5), t)[1],
}


@pytest.mark.parametrize("case", sorted(IN_RANGE_OR_UNSAFE))
def test_writes_numpy_accepts_replay_as_eager(case):
    # a 0-d array (and a fancy-index write) is cast unsafely: 300 wraps to 44 in int8
    replay_matches_eager(IN_RANGE_OR_UNSAFE[case], np.array([1, 2, 3, 4, 5, 6], np.int8))


def test_zero_d_array_written_into_int8_wraps_as_eager():
    t = np.zeros(3, np.int8)
    t[0] = np.array(300)
    assert t[0] == 44  # the premise
    graph = replay_matches_eager(IN_RANGE_OR_UNSAFE["t[0] = np.array(300)"],
                                 np.zeros(3, np.int8))
    assert graph.replay({"t": np.zeros(3, np.int8)})["out"][0] == 44


# --- B2: copy.copy / copy.deepcopy ----------------------------------------------------------


def test_deepcopy_of_a_params_dict_records_copies():
    def f(w, b):
        params = {"w": w, "b": b, "again": w}
        saved = copy.deepcopy(params)
        assert saved["w"] is saved["again"]  # deepcopy's memo, as for ndarrays
        params["w"] += 1  # the copies keep the old values
        shallow = copy.copy(b)
        b *= 3
        return saved["w"], saved["b"], params["w"], shallow, b

    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([0.5, -1.5, 2.0], np.float32)
    graph = replay_matches_eager(f, w, b)
    assert [node.op for node in graph.ops].count("copy") == 3


def test_copy_of_an_eager_tensor_is_a_real_copy():
    t = cv.tensor(np.arange(3.0), device=NUMPY)
    for c in (copy.copy(t), copy.deepcopy(t)):
        assert c is not t and type(c) is cv.Tensor
        c[0] = 10
        assert t.numpy()[0] == 0 and c.numpy()[0] == 10


# --- B3: t.shape = ... ------------------------------------------------------------------------


def test_shape_assignment_is_refused_in_capture_with_the_rewrite():
    def f(x):
        x.shape = (3, 2)
        return x

    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"(?s)t\.shape = \.\.\. is not supported.*t = t\.reshape\(\.\.\.\)"):
        cv.capture(f, cv.spec((2, 3)))


def test_shape_assignment_on_eager_tensors_is_numpys():
    t = cv.tensor(np.arange(6.0).reshape(2, 3), device=NUMPY)
    t.shape = (3, 2)
    assert t.shape == (3, 2)
    assert_bits(t.numpy(), np.arange(6.0).reshape(3, 2))
    with pytest.raises(AttributeError, match="Incompatible shape for in-place modification"):
        t.T.shape = (6,)


# --- B4: format() and is_integer() --------------------------------------------------------


def test_format_with_a_spec_is_a_data_read_in_capture():
    def f(x):
        print(f"loss {x.sum():.3f}")
        return x

    with pytest.raises(cv.DataReadError, match=r"(?s)`f\"loss \{x.sum\(\):.3f\}\"` at .*" +
                       re.escape("test_numpy_scalars_and_protocols.py") + r".*formats the value"):
        cv.capture(f, cv.spec(3))


class _Seen(list):
    """What the captured function saw: a list subclass capviz does not walk (text made from a
    tensor logged into a plain list is refused: a replay would log the capture's text)."""


def test_format_without_a_spec_is_str():
    seen = _Seen()

    def f(x):
        s = x.sum()
        seen.append((f"{s}", repr(s)))
        return s

    cv.capture(f, cv.spec(3))
    assert seen[0][0] == seen[0][1]


def test_format_of_eager_tensors_is_numpys():
    values = np.array([1.23456, 2.5], np.float32)
    t = cv.tensor(values, device=NUMPY)
    assert f"{t.sum():.3f}" == f"{values.sum():.3f}"
    assert f"{t[0]:>10.2e}" == f"{values[0]:>10.2e}"
    with pytest.raises(TypeError, match="unsupported format string passed to numpy.ndarray"):
        f"{t:.3f}"


def test_is_integer_reads_the_scalar():
    with pytest.raises(cv.DataReadError, match=r"\.is_integer\(\)"):
        cv.capture(lambda x: x.sum().is_integer(), cv.spec(3))
    t = cv.tensor(np.array([1.5, 2.5], np.float32), device=NUMPY)
    assert t.sum().is_integer() is True and t[0].is_integer() is False
    assert cv.tensor(np.array([3], np.int8), device=NUMPY)[0].is_integer() is True
    with pytest.raises(AttributeError, match="'Tensor' object has no attribute 'is_integer'"):
        t.is_integer()


@pytest.mark.parametrize(("line", "kind"), [
    ("    y = np.power(np.float32(2), s) + 1\n", "ufunc"),
    ("y = pow(np.float32(2), s)", "operator"),
    ("y = operator.pow(b, s) * np.exp(s)", "operator"),
    ("y = pow(b, s) + np.power(b, s)", None),  # both on one line: cannot tell
    ("y = p(b, s)", None),
    ("y = f(", None),
])
def test_line_call_kind_is_the_fallback_without_column_positions(line, kind):
    from capviz.trace.call_site import line_call_kind

    assert line_call_kind(line) == kind
