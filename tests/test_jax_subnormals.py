"""Subnormal floats on the JAX backend (issues 22 and 25): the ops no run-time check covers are
refused by name unless the replay takes XLA's arithmetic (``arithmetic="xla"``), ``compare``
names them, the remainders and traces are checked at run time, and the fast program's cheap
tests rerun the precise program instead of failing where NumPy's result is 0 too."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry
from capviz.backends.jax import complex_products

pytest.importorskip("jax")

TINY32 = float(np.finfo(np.float32).tiny)


def _inverse_graph():
    # np.linalg.inv of diag(2e38, 1) is diag(5e-39, 1): a subnormal float32, which XLA flushes
    return cv.capture(lambda a: 1.0 / np.linalg.inv(a)[0, 0], cv.spec((2, 2), "float32"))


A = np.diag(np.array([2e38, 1.0], np.float32))


def test_a_node_no_check_covers_is_refused_by_name_with_the_opt_in():
    graph = _inverse_graph()
    line = _inverse_graph.__code__.co_firstlineno + 2
    expected = (
        "op 'linalg.inv' cannot run on the jax backend: XLA flushes subnormal floats (below "
        "np.finfo(dtype).tiny) to zero where NumPy keeps them, and no run-time check sees a "
        "subnormal value linalg.inv makes; replay with backend='numpy', or take XLA's "
        "arithmetic for such ops with backend='jax', arithmetic='xla' (a value below tiny is "
        "then 0, and what is computed from it may differ from NumPy's beyond the tolerance) "
        f"(node %1, recorded at {__file__}:{line} in <lambda>)")
    with pytest.raises(cv.UnsupportedOperationError) as replayed:
        graph.replay({"a": A}, backend="jax")
    assert str(replayed.value) == expected
    with pytest.raises(cv.UnsupportedOperationError) as compiled:  # when bound, before a call
        graph.compile(backend="jax")
    assert str(compiled.value) == expected


def test_the_opt_in_runs_xlas_arithmetic_and_numpy_keeps_the_subnormal():
    graph = _inverse_graph()
    numpy_out = graph.replay({"a": A}, backend="numpy")["out"]
    assert numpy_out == np.float32(1.0) / (np.float32(1.0) / np.float32(2e38))  # finite
    xla = graph.replay({"a": A}, backend="jax", arithmetic="xla", to_numpy=True)["out"]
    assert np.isinf(xla)  # the flushed 5e-39 is 0 under XLA: what the opt-in accepts
    fine = np.array([[2.0, 0.0], [0.0, 4.0]], np.float32)
    replay = graph.compile(backend="jax", arithmetic="xla")
    np.testing.assert_allclose(np.asarray(replay(fine)[0]), 2.0, rtol=1e-6)


def test_the_arithmetic_option_is_named_when_wrong():
    graph = cv.capture(lambda x: x * 2.0, cv.spec(3))
    with pytest.raises(ValueError, match=re.escape(
            "arithmetic='ieee': the jax backend takes 'numpy' or 'xla'")):
        graph.replay({"x": np.ones(3, np.float32)}, backend="jax", arithmetic="ieee")
    with pytest.raises(TypeError, match=re.escape(
            "the numpy backend takes no option 'arithmetic' (its options: none)")):
        graph.replay({"x": np.ones(3, np.float32)}, backend="numpy", arithmetic="xla")
    out = graph.replay({"x": np.ones(3, np.float32)}, backend="jax", arithmetic="numpy",
                       to_numpy=True)["out"]
    np.testing.assert_array_equal(out, np.full(3, 2.0, np.float32))


@pytest.mark.parametrize("fn,op,why", [
    (lambda x: np.nansum(x, initial=1e-35), "nansum", "does not cover initial=1e-35"),
    (lambda x: np.fft.fft(x), "fft.fft", "no run-time check sees"),
    (lambda x: np.cov(x, aweights=np.array([1.0, 2.0, 3.0])), "cov",
     "no run-time check sees"),
    (lambda x: np.polyval(x, x), "polyval", "no run-time check sees"),
    (lambda x: np.diff(x, prepend=x[:1]), "diff", "not the values it prepends or appends"),
])
def test_each_unchecked_class_is_refused_and_runs_with_the_opt_in(fn, op, why):
    x = np.array([0.5, -1.5, 2.0], np.float32)
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    with pytest.raises(cv.UnsupportedOperationError, match=rf"op '{re.escape(op)}' cannot "
                                                           rf"run on the jax backend: .*{why}"):
        graph.replay({"x": x}, backend="jax")
    got = graph.replay({"x": x}, backend="jax", arithmetic="xla", to_numpy=True)["out"]
    want = graph.replay({"x": x}, backend="numpy")["out"]
    rtol, atol = registry.get("jax").tolerance_for(want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def test_reductions_with_where_and_initial_are_checked_at_run_time():
    # a product whose where= keeps 1e-20 * 1e-20 (a subnormal partial product) fails at the
    # node; the same with a normal initial= replays; a sum's where= is within its mask's test
    x = np.array([[1e-20, 1e-20, 1e30], [0.5, 2.0, 4.0]], np.float32)
    keep = np.array([[True, True, True], [True, False, True]])
    graph = cv.capture(lambda a: np.nanprod(a, axis=1, where=keep, initial=1.0),
                       cv.spec(x.shape, x.dtype))
    assert graph.replay({"a": x}, backend="numpy")["out"][0] > 0
    with pytest.raises(cv.ReplayError, match="a partial product of nanprod fell below") as info:
        graph.replay({"a": x}, backend="jax")
    assert info.value.node.op == "nanprod"
    fine = np.array([[1e-2, 3.0, 2.0], [0.5, 0.0, 4.0]], np.float32)
    np.testing.assert_allclose(graph.replay({"a": fine}, backend="jax", to_numpy=True)["out"],
                               [6e-2, 2.0], rtol=1e-6)
    total = cv.capture(lambda a: np.nansum(a, where=keep, initial=0.5), cv.spec(x.shape, x.dtype))
    tiny = np.array([[TINY32 * 1.5, -TINY32, 0.0], [0.0, 0.0, 0.0]], np.float32)
    with pytest.raises(cv.ReplayError, match="an operand of nansum holds values of magnitude"):
        total.replay({"a": tiny}, backend="jax")


def test_float16_results_and_integer_results_are_not_refused():
    # XLA computes float16 in float32 and keeps its subnormals; an integer result has none
    x = np.array([0.5, 1.0, 3.0], np.float16)
    m = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
    graph = cv.capture(lambda a, b: (np.polyval(a, a), np.linalg.matrix_rank(b)),
                       cv.spec(x.shape, x.dtype), cv.spec(m.shape, m.dtype))
    got = graph.replay({"a": x, "b": m}, backend="jax", to_numpy=True)
    want = graph.replay({"a": x, "b": m}, backend="numpy")
    np.testing.assert_allclose(got["out0"], want["out0"], rtol=1e-2)
    np.testing.assert_array_equal(got["out1"], want["out1"])


def test_compare_against_jax_names_the_node_computed_with_xlas_arithmetic():
    graph = _inverse_graph()
    found = graph.compare(inputs={"a": A}, against="jax")
    assert found.node.op == "divide"
    assert ("the jax backend computes %1 (linalg.inv, recorded at " in found.message
            and "with its own arithmetic: XLA flushes subnormal floats" in found.message
            and "A jax replay refuses that node unless given arithmetic='xla', which accepts "
                "this difference; compare steps it as that option does" in found.message), \
        found.message


@pytest.mark.parametrize("fn,op", [
    (lambda a, b: 1.0 / np.fmod(a, b), "fmod"),
    (lambda a, b: 1.0 / np.remainder(a, b), "remainder"),
    (lambda a, b: np.floor_divide(-a, b * 1e30), "floor_divide"),
    (lambda a, b: 1.0 / np.divmod(a, b)[1], "divmod"),
    (lambda a, b: np.divmod(-a, b * 1e30)[0], "divmod"),
    (lambda a, b: 1.0 / np.trace(np.diag(a - b)), "subtract"),
])
def test_a_remainder_or_a_trace_into_the_subnormal_range_fails_at_the_node(fn, op):
    # fmod(2.5e-38, 2e-38) is 5e-39, a subnormal: NumPy's 1 / it is 2e38, XLA's inf;
    # floor_divide(-2.5e-38, 2e8) is -1 in NumPy, -0 where XLA flushes the quotient
    a = np.array([2.5 * TINY32 / 1.18, 1.0], np.float32)
    b = np.array([2.0 * TINY32 / 1.18, 3.0], np.float32)
    graph = cv.capture(fn, cv.spec(a.shape, a.dtype), cv.spec(b.shape, b.dtype))
    with np.errstate(all="ignore"):
        want = fn(a, b)
        got = graph.replay({"a": a, "b": b}, backend="numpy")["out"]
    np.testing.assert_array_equal(got, want)
    with pytest.raises(cv.ReplayError, match=r"(holds values of magnitude below|nonzero "
                                             r"subnormal float)") as info:
        graph.replay({"a": a, "b": b}, backend="jax")
    assert info.value.node.op == op
    assert "test_jax_subnormals.py" in str(info.value)


def test_a_trace_of_values_too_small_to_sum_exactly_fails_at_the_trace():
    m = np.diag(np.array([2.5 * TINY32 / 1.18, -2.0 * TINY32 / 1.18], np.float32))
    graph = cv.capture(lambda x: 1.0 / np.trace(x), cv.spec(m.shape, m.dtype))
    assert np.isfinite(graph.replay({"x": m}, backend="numpy")["out"])
    with pytest.raises(cv.ReplayError, match="an operand of trace holds values of magnitude"):
        graph.replay({"x": m}, backend="jax")
    fine = np.diag(np.array([0.5, 2.0], np.float32))
    np.testing.assert_allclose(graph.replay({"x": fine}, backend="jax", to_numpy=True)["out"],
                               0.4, rtol=1e-6)


def test_an_underflow_numpy_shares_reruns_the_precise_program_and_replays():
    # 1e-30 * 1e-30 is below half the smallest subnormal: 0 in NumPy too. The fast program's
    # test ("XLA's product is 0 where no factor is 0") fires; the precise program's exact
    # test passes, so the replay returns XLA's 0, which is NumPy's.
    x = np.array([1e-30, 2.0], np.float32)
    graph = cv.capture(lambda a, b: (a * b) * np.float32(1e30), cv.spec(2), cv.spec(2))
    backend = registry.get("jax")
    before = backend.traces
    out = graph.replay({"a": x, "b": x}, backend="jax", to_numpy=True)["out"]
    np.testing.assert_array_equal(out, graph.replay({"a": x, "b": x}, backend="numpy")["out"])
    assert backend.traces == before + 2  # the fast program, then the precise one
    graph.replay({"a": x, "b": x}, backend="jax")  # both compiled now: no new trace
    assert backend.traces == before + 2


def test_a_product_with_a_constant_weight_is_an_elementwise_test_not_a_flag():
    weight = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    graph = cv.capture(lambda a: np.tanh(a @ weight), cv.spec((8, 64), "float32"))
    x = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32)
    np.testing.assert_allclose(graph.replay({"a": x}, backend="jax", to_numpy=True)["out"],
                               np.tanh(x @ weight), rtol=1e-4, atol=1e-4)
    from capviz.backends.jax.backend import BACKEND

    compiled = BACKEND._compiled[graph.replay_cache["jax"][2]]
    # elementwise masks merged per shape, no flag naming a node: the subnormal test's and the
    # check of contractions near overflow's (capviz/backends/jax/checks.py)
    assert {node.op if node else None for node, _ in compiled.checks[False]} == {None}
    small = np.where(np.arange(8 * 64).reshape(8, 64) == 5, np.float32(1e-36), x)
    with pytest.raises(cv.ReplayError, match="an operand of matmul holds values so small") \
            as info:
        graph.replay({"a": small.astype(np.float32)}, backend="jax")
    assert info.value.node.op == "matmul"


def test_a_product_with_a_constant_holding_zeros_replays_without_a_precise_rerun():
    # the weight's zeros make products of 0 with nonzero operands: the fast test counts them
    weight = np.zeros((64, 64), np.float32)
    weight[::2] = 0.5
    graph = cv.capture(lambda a: a * weight, cv.spec((64, 64), "float32"))
    x = np.full((64, 64), 3.0, np.float32)
    backend = registry.get("jax")
    before = backend.traces
    np.testing.assert_array_equal(graph.replay({"a": x}, backend="jax", to_numpy=True)["out"],
                                  x * weight)
    assert backend.traces == before + 1  # the fast program only


EPS = np.array([1e-310, 1e-310])  # a small constant (baked into the program) of subnormals
BIG_EPS = np.full(300, 1e-310)  # a large one (an argument of the compiled program)
TINY_PART = np.array([1.0 + 1e-310j, 2.0])  # a complex constant with a subnormal part
LITERALS = [
    (lambda a: np.log(np.clip(a, 1e-310, None)), "clip", "the literal 1e-310 is subnormal in "
     "float64"),
    (lambda a: np.maximum(a, 1e-310) > 0, "maximum", "the literal 1e-310 is subnormal in "
     "float64"),
    (lambda a: (a + 1e-310) > 0, "add", "the literal 1e-310 is subnormal in float64"),
    (lambda a: np.log(a + EPS), "add", "the constant 'EPS' (node %1) holds 1e-310, subnormal "
     "in float64"),
    (lambda a: np.log(a[:1] + BIG_EPS), "add", "the constant 'BIG_EPS' (node %2) holds "
     "1e-310, subnormal in float64"),
    (lambda a: a * TINY_PART, "multiply", "the constant 'TINY_PART' (node %1) holds 1e-310, "
     "subnormal in complex128"),
    (lambda a: np.isclose(a, a + 1.0, atol=1e-310), "isclose", "the literal 1e-310 is "
     "subnormal in float64"),
    (lambda a: np.log(np.maximum(a.astype(np.float32), np.float32(1e-40))), "maximum",
     "the literal np.float32(1e-40) is subnormal in float32"),
    # normal in float64, where NumPy computes; refused: XLA may convert it on the device
    (lambda a: a + np.float32(1e-40), "add", "the literal np.float32(1e-40) is subnormal in "
     "float32"),
    (lambda a: np.full(2, 1e-310) + a, "create", "the literal 1e-310 is subnormal in float64"),
]


@pytest.mark.parametrize("fn,op,why", LITERALS)
def test_a_subnormal_literal_or_constant_is_refused_at_the_node_with_the_opt_in(fn, op, why):
    # XLA reads a subnormal literal or constant as 0 (log(1e-310) is -713.8 in NumPy, -inf in
    # XLA; 1e-310 > 0 is False): refused when the replay is bound, unless arithmetic="xla"
    a = np.array([0.0, 1.0])
    graph = cv.capture(fn, cv.spec(a.shape, a.dtype))
    with pytest.raises(cv.UnsupportedOperationError) as info:
        graph.replay({"a": a}, backend="jax")
    message = str(info.value)
    assert message.startswith(f"op {op!r} cannot run on the jax backend: XLA flushes subnormal "
                              "floats (below np.finfo(dtype).tiny) to zero where NumPy keeps "
                              f"them, and {why}: XLA reads it as 0; replay with "
                              "backend='numpy', or take XLA's arithmetic"), message
    assert f"recorded at {__file__}:" in message
    graph.replay({"a": a}, backend="jax", arithmetic="xla")  # XLA's arithmetic, accepted


def test_the_literal_refusal_names_the_users_line():
    graph = cv.capture(lambda a: a + 1e-310, cv.spec((2,), "float64"))
    line = test_the_literal_refusal_names_the_users_line.__code__.co_firstlineno + 1
    with pytest.raises(cv.UnsupportedOperationError) as info:
        graph.compile(backend="jax")
    assert str(info.value).endswith(f"(node %1, recorded at {__file__}:{line} in <lambda>)")


def test_literals_normal_in_the_type_the_op_computes_in_are_not_refused():
    # 1e-310 rounds to 0 in float32 (NumPy's value too); float16's 1e-6 is subnormal in
    # float16, which XLA computes in float32 and keeps, and normal in float32
    x32 = np.array([0.0, 1.0], np.float32)
    x16 = np.array([0.0, 1.0], np.float16)
    cases = [
        (lambda a: a + 1e-310, x32),
        (lambda a: np.maximum(a, np.float16(1e-6)), x16),
        (lambda a: np.maximum(a, np.float16(1e-6)), x32),
        (lambda a: a + np.array([1e-6, 1e-7], np.float16), x16),
        (lambda a: np.maximum(a, 1e-300), np.array([0.0, 1.0])),
    ]
    for fn, x in cases:
        graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
        got = graph.replay({"a": x}, backend="jax", to_numpy=True)["out"]
        np.testing.assert_array_equal(got, fn(x))


# --- complex values (review 2, finding 8): the parts of complex64/complex128 are flushed too ----

def _complex_product(a, b):
    return (a * b).real > 0


def test_a_complex_product_with_a_subnormal_part_fails_at_the_multiply():
    # (1e-160+0j) * (1e-160+0j): NumPy's real part is 1e-320, XLA's 0 (and 0 > 0 is False)
    a = np.array([1e-160 + 0j, 2.0 + 1j, -3.0 + 0j])
    b = np.array([1e-160 + 0j, 1.0 + 0j, 1.0 + 0j])
    graph = cv.capture(_complex_product, cv.spec(3, "complex128"), cv.spec(3, "complex128"))
    line = _complex_product.__code__.co_firstlineno + 1
    with pytest.raises(cv.ReplayError) as info:
        graph.replay({"a": a, "b": b}, backend="jax")
    # NumPy's fused form (where NumPy fuses) checks its own steps first (f64212c)
    assert str(info.value) == (
        f"replay failed at node %2 (multiply), recorded at {__file__}:{line} in "
        "_complex_product: complex multiply: a part of an operand is below 2e-292, or a "
        "product of two parts below 1.81e-276: NumPy's fused product then makes subnormal "
        "floats on the way, which it keeps and XLA flushes to zero; replay with "
        "backend='numpy', or scale the operands up" if complex_products.NUMPY_FUSES else
        f"replay failed at node %2 (multiply), recorded at {__file__}:{line} in "
        "_complex_product: a product of the real and imaginary parts of complex multiply's "
        "operands is below 2e-292: XLA flushes its subnormal part products to zero where "
        "NumPy keeps them, so a part of the result would differ from NumPy's; replay with "
        "backend='numpy', or scale the operands up")


def test_a_complex_square_and_a_real_times_complex_product_are_checked_too():
    a = np.array([1e-20 + 1e-20j, 1.0 + 0j], np.complex64)  # 1e-40: subnormal in float32
    graph = cv.capture(lambda z: np.square(z).imag > 0, cv.spec(2, "complex64"))
    fused = r"\(square\).*complex square: a part of NumPy's fused product \(or its rounded " \
        r"part product b\*d, b\*c\) is a nonzero value below 1\.18e-38"
    with pytest.raises(cv.ReplayError, match=fused if complex_products.NUMPY_FUSES else
                       r"\(square\).*complex square's operands is below 1\.97e-31"):
        graph.replay({"z": a}, backend="jax")
    r = np.array([1e-20, 1.0], np.float32)
    mixed = cv.capture(lambda x, z: (x * z).real > 0, cv.spec(2, "float32"),
                       cv.spec(2, "complex64"))
    with pytest.raises(cv.ReplayError, match=r"\(multiply\).*complex multiply(: a part of "
                       r"NumPy's fused product|'s operands)"):
        mixed.replay({"x": r, "z": a}, backend="jax")


def test_complex_products_of_normal_parts_replay_as_numpy():
    a = np.array([1 + 2j, -0.5 + 0j, 0j, 3e-3 - 1j], np.complex64)
    b = np.array([2 - 1j, 4 + 0j, 1 + 1j, 1e-3 + 0j], np.complex64)
    graph = cv.capture(lambda a, b: np.square(a * b) * a, cv.spec(4, "complex64"),
                       cv.spec(4, "complex64"))
    got = graph.replay({"a": a, "b": b}, backend="jax", to_numpy=True)["out"]
    np.testing.assert_allclose(got, np.square(a * b) * a, rtol=1e-6)


@pytest.mark.parametrize("fn,op", [
    (lambda a, b: a / b, "divide"),
    (lambda a, b: np.exp2(a), "exp2"),  # complex exp is checked (test_jax_subnormals_complex)
    (lambda a, b: a ** b, "power"),
    (lambda a, b: np.reciprocal(a), "reciprocal"),
])
def test_complex_quotients_exponentials_and_powers_are_refused_by_name(fn, op):
    a = np.array([1 + 2j, -0.5 + 0.25j])
    b = np.array([2 - 1j, 0.5 + 0j])
    graph = cv.capture(fn, cv.spec(2, "complex128"), cv.spec(2, "complex128"))
    with pytest.raises(cv.UnsupportedOperationError) as info:
        graph.replay({"a": a, "b": b}, backend="jax")
    assert str(info.value).startswith(
        f"op '{op}' cannot run on the jax backend: XLA flushes subnormal floats (below "
        "np.finfo(dtype).tiny) to zero where NumPy keeps them, and no run-time check sees a "
        f"subnormal part of the complex result of {op}; replay with backend='numpy', or take "
        "XLA's arithmetic for such ops with backend='jax', arithmetic='xla'")
    got = graph.replay({"a": a, "b": b}, backend="jax", arithmetic="xla", to_numpy=True)["out"]
    np.testing.assert_allclose(got, fn(a, b), rtol=1e-12)
    real = cv.capture(fn, cv.spec(2, "float64"), cv.spec(2, "float64"))  # real: checked
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(real.replay({"a": x, "b": x}, backend="jax",
                                           to_numpy=True)["out"], fn(x, x), rtol=1e-12)
