"""Complex values on the JAX backend (issue 25, review 2 finding 8): XLA flushes the float32 and
float64 parts of complex64 and complex128 values as it flushes real ones. Every complex op of
the op table is exact on any values, checked at run time (a part NumPy keeps subnormal fails the
replay at the node), or refused by name unless the replay takes ``arithmetic="xla"``; each
function below is given values whose NumPy result has a nonzero subnormal part that XLA makes 0
(the reproducer), and narrowing casts (``astype``) are checked too."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry
from capviz.backends.jax import complex_products
from capviz.backends.jax.subnormals import COMPLEX_CHECKED, COMPLEX_EXACT
from capviz.backends.jax.subnormals.complex_formulas import COMPLEX_FORMULAS, exp_limits
from capviz.backends.jax.subnormals.complex_functions import COMPLEX_FUNCTIONS
from capviz.ops import table

pytest.importorskip("jax")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

TINY64 = float(np.finfo(np.float64).tiny)
HALF_PI = 1.5707963267948966


def _graph(fn, z):
    return cv.capture(fn, cv.spec(z.shape, z.dtype))


def _feed(graph, z):
    return {graph.inputs[0]: z}


def _subnormal_parts(value):
    """The parts of ``value`` that are nonzero subnormal float64s."""
    v = np.asarray(value).astype(np.complex128).ravel()
    parts = np.concatenate([v.real, v.imag])
    return parts[(parts != 0) & (np.abs(parts) < TINY64)]


# op, function, values whose NumPy result has a subnormal part (or, for std, a normal value
# made of subnormal squares) from normal parts (sin, cos, sinh, cosh, sqrt, log: checked at run
# time, tests/test_jax_subnormals_complex_functions.py; log1p, expm1, tan, tanh: NumPy's or
# glibc's formulas, checked at run time, tests/test_jax_complex_exponentials.py and
# tests/test_jax_complex_tangents.py)
REFUSED = [
    ("log2", np.log2, [1e10 + 1e-300j]),
    ("log10", np.log10, [1e10 + 1e-300j]),
    ("arcsin", np.arcsin, [1e-300 + 1e10j]),
    ("arccos", np.arccos, [1e10 + 1e-300j]),
    ("arctan", np.arctan, [1e10 + 1e-300j]),
    ("arcsinh", np.arcsinh, [1e10 + 1e-300j]),
    ("arccosh", np.arccosh, [1e10 + 1e-300j]),
    ("arctanh", np.arctanh, [1e-300 + 1e10j]),
    ("sign", np.sign, [1e10 + 1e-300j]),           # z / |z|
    ("prod", np.prod, [1e-160 + 0j, 1e-160 + 0j]),
    ("cumprod", np.cumprod, [1e-160 + 0j, 1e-160 + 0j]),
    ("var", np.var, [1e-160 + 1e-160j, 0j]),
    ("std", np.std, [1e-160 + 1e-160j, 0j]),       # 7.1e-161 in NumPy, 0 in XLA
]


@pytest.mark.parametrize("op,fn,values", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_complex_function_that_can_make_a_subnormal_part_is_refused_by_name(op, fn, values):
    z = np.array(values, np.complex128)
    graph = _graph(fn, z)
    want = np.asarray(fn(z))
    np.testing.assert_array_equal(graph.replay(_feed(graph, z))["out"], want)
    with pytest.raises(cv.UnsupportedOperationError) as info:
        graph.replay(_feed(graph, z), backend="jax")
    what = (f"a subnormal part of the complex result of {op}" if want.dtype.kind == "c"
            else f"a subnormal value {op} makes from complex operands")
    assert str(info.value).startswith(
        f"op '{op}' cannot run on the jax backend: XLA flushes subnormal floats (below "
        f"np.finfo(dtype).tiny) to zero where NumPy keeps them, and no run-time check sees "
        f"{what}; replay with backend='numpy', or take XLA's arithmetic for such ops with "
        "backend='jax', arithmetic='xla'")
    assert f"{__file__}:" in str(info.value)
    # the reproducer: with XLA's arithmetic, a part NumPy keeps is flushed (std: a square)
    xla = graph.replay(_feed(graph, z), backend="jax", arithmetic="xla", to_numpy=True)["out"]
    if op == "std":
        assert want[()] > 0 and xla[()] == 0
    else:
        assert _subnormal_parts(want).size and not _subnormal_parts(xla).size


ORDINARY = np.array([0.5 + 0.25j, -1.5 + 2.0j, 0.75 - 0.5j])


@pytest.mark.parametrize("op,fn", [(r[0], r[1]) for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_the_opt_in_replays_ordinary_complex_values_within_the_tolerance(op, fn):
    graph = _graph(fn, ORDINARY)
    got = graph.replay(_feed(graph, ORDINARY), backend="jax", arithmetic="xla",
                       to_numpy=True)["out"]
    want = fn(ORDINARY)
    rtol, atol = registry.get("jax").tolerance_for(np.asarray(want).dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _complex_ufuncs():
    """The ufuncs of the op table NumPy computes on complex128 operands to a complex128 or
    float64 result, with their operand count."""
    found = []
    for name in sorted(table.OPS):
        ufunc = getattr(np, name, None)
        if not isinstance(ufunc, np.ufunc) or ufunc.nout != 1 or ufunc.signature:
            continue  # gufuncs (matmul, vecdot...): the contractions, checked below
        complex_in = "D" * ufunc.nin
        if any(t in (f"{complex_in}->D", f"{complex_in}->d") for t in ufunc.types):
            found.append((name, ufunc.nin))
    return found


COMPLEX_UFUNCS = _complex_ufuncs()


def test_the_complex_ufuncs_of_the_table_include_the_issues_functions():
    names = {name for name, _ in COMPLEX_UFUNCS}
    assert {"sin", "cos", "sinh", "cosh", "tan", "tanh", "sqrt", "log", "log1p", "expm1",
            "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "exp", "divide",
            "power", "reciprocal", "add", "multiply", "absolute"} <= names


@pytest.mark.parametrize("name,nin", COMPLEX_UFUNCS, ids=[n for n, _ in COMPLEX_UFUNCS])
def test_every_complex_ufunc_is_exact_checked_or_refused_by_name(name, nin):
    ufunc = getattr(np, name)
    operands = [ORDINARY, ORDINARY[::-1].copy()][:nin]
    graph = cv.capture(ufunc, *[cv.spec(3, "complex128") for _ in range(nin)])
    feed = dict(zip(graph.inputs, operands))
    want = ufunc(*operands)
    # exp is checked; divide only by a real divisor: of two complex operands it stays refused
    if name in COMPLEX_EXACT or name in COMPLEX_CHECKED or name in COMPLEX_FUNCTIONS or (
            name in COMPLEX_FORMULAS and nin == 1):
        got = graph.replay(feed, backend="jax", to_numpy=True)["out"]
        rtol, atol = registry.get("jax").tolerance_for(want.dtype)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
        return
    with pytest.raises(cv.UnsupportedOperationError, match=re.escape(
            f"op '{name}' cannot run on the jax backend: XLA flushes subnormal floats")):
        graph.replay(feed, backend="jax")


def test_the_allow_lists_name_ops_of_the_table():
    assert set(COMPLEX_EXACT) <= set(table.OPS)
    assert set(COMPLEX_CHECKED) <= set(table.OPS)
    assert set(COMPLEX_FORMULAS) <= set(table.OPS)
    assert set(COMPLEX_FUNCTIONS) <= set(table.OPS)


# --- checked at run time: the replay fails at the node, or computes NumPy's values ----------

_PART = ("a part of complex {op}'s result is 0 where NumPy's is a nonzero subnormal float: XLA "
         "flushes subnormal results to zero, and a later division, log or large factor would "
         "give another number than NumPy's; replay with backend='numpy', or scale the values "
         "away from the float's smallest normal (2.23e-308)")
_TERMS = ("a real or imaginary part of an operand of complex {op} has a magnitude below "
          "{bound}, whose sums may be subnormal, which XLA flushes to zero where NumPy keeps "
          "them; replay with backend='numpy', or scale the operand up")
_PRODUCT = ("an operand of {op} holds values so small that their products may be subnormal "
            "(below 2.23e-308), which XLA flushes to zero where NumPy keeps them; replay with "
            "backend='numpy', or scale the operands up")
_FUSED_OUTER = ("complex outer: a part of an operand is below 2e-292, or a product of two "
                "parts below 1.81e-276: NumPy's fused product then makes subnormal floats on the "
                "way, which it keeps and XLA flushes to zero; replay with backend='numpy', or "
                "scale the operands up")
"""np.outer of complex values in NumPy's fused form checks its own steps first
(:func:`capviz.backends.jax.complex_products.multiply`)."""
_ANGLE = ("angle gave 0 where NumPy's result is a nonzero subnormal float (an imaginary part "
          "far below the real part): XLA flushes subnormal results to zero, and a later "
          "division, log or large factor would give another number than NumPy's; replay with "
          "backend='numpy', or scale the values away from the float's smallest normal "
          "(2.23e-308)")

CHECKED = [  # op, function, values making a subnormal part, its message
    ("add", lambda z: z + z[::-1], [3e-308 + 0j, -2.9e-308 + 1j], _PART.format(op="add")),
    ("subtract", lambda z: z - z[::-1], [3e-308 + 1j, 2.9e-308 + 0j],
     _PART.format(op="subtract")),
    ("sum", np.sum, [3e-308 + 0j, -2.9e-308 + 1j], _TERMS.format(op="sum", bound="2e-292")),
    ("mean", np.mean, [3e-308 + 1j, -2.9e-308 + 1j], _TERMS.format(op="mean", bound="4.01e-292")),
    ("cumsum", np.cumsum, [3e-308 + 0j, -2.9e-308 + 1j],
     _TERMS.format(op="cumsum", bound="2e-292")),
    ("diff", np.diff, [3e-308 + 0j, 2.9e-308 + 1j], _TERMS.format(op="diff", bound="2e-292")),
    ("matmul", lambda z: z @ z, [1e-160 + 0j, 0j], _PRODUCT.format(op="matmul")),
    ("dot", lambda z: np.dot(z, z), [1e-160j, 0j], _PRODUCT.format(op="dot")),
    ("vdot", lambda z: np.vdot(z, z), [1e-160 + 0j, 0j], _PRODUCT.format(op="vdot")),
    ("einsum", lambda z: np.einsum("i,i->", z, z), [1e-160 + 0j, 0j],
     _PRODUCT.format(op="einsum")),
    ("outer", lambda z: np.outer(z, z), [1e-160 + 0j, 1j],
     _FUSED_OUTER if complex_products.NUMPY_FUSES else _PRODUCT.format(op="outer")),
    ("ufunc_outer", lambda z: np.multiply.outer(z, z), [1e-160 + 0j, 1j],
     _FUSED_OUTER.replace("complex outer", "complex multiply.outer")
     if complex_products.NUMPY_FUSES else None),
    ("ufunc_outer", lambda z: np.add.outer(z, z[::-1]), [3e-308 + 0j, -2.9e-308 + 1j],
     _PART.format(op="add.outer")),
    ("ufunc_outer", lambda z: np.subtract.outer(z, z[::-1]), [3e-308 + 1j, 2.9e-308 + 0j],
     _PART.format(op="subtract.outer")),
    ("angle", np.angle, [1e10 + 1e-300j, 1j], _ANGLE),
    ("angle", lambda z: np.angle(z, deg=True), [1e10 + 2e-300j, 1j], _ANGLE),
]


@pytest.mark.parametrize("op,fn,values,message", CHECKED,
                         ids=[f"{c[0]}{k}" for k, c in enumerate(CHECKED)])
def test_a_checked_complex_op_making_a_subnormal_part_fails_at_its_node(op, fn, values, message):
    z = np.array(values, np.complex128)
    graph = _graph(fn, z)
    want = np.asarray(fn(z))
    assert _subnormal_parts(want).size  # the reproducer
    with pytest.raises(cv.ReplayError) as info:
        graph.replay(_feed(graph, z), backend="jax")
    text = str(info.value)
    assert re.match(rf"replay failed at node %\d+ \({op}\), recorded at "
                    rf"{re.escape(__file__)}:\d+ in ", text), text
    if message is not None:  # None: XLA's form of complex products, its gate's message
        assert text.endswith(message), text


@pytest.mark.parametrize("op,fn", [(c[0], c[1]) for c in CHECKED],
                         ids=[f"{c[0]}{k}" for k, c in enumerate(CHECKED)])
def test_a_checked_complex_op_of_ordinary_values_replays_as_numpy(op, fn):
    z = np.array([0.5 + 0.25j, -1.5 + 2.0j], np.complex128)
    graph = _graph(fn, z)
    got = graph.replay(_feed(graph, z), backend="jax", to_numpy=True)["out"]
    want = np.asarray(fn(z))
    rtol, atol = registry.get("jax").tolerance_for(want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _fast_checks(graph, z):
    graph.replay(_feed(graph, z), backend="jax")
    from capviz.backends.jax.backend import BACKEND

    return BACKEND._compiled[graph.replay_cache["jax"][2]].checks[False]


def test_a_complex_sum_with_a_literal_far_from_tiny_needs_no_check():
    z = np.array([1 + 1j, 2 + 0j])
    assert _fast_checks(_graph(lambda z: z + (0.5 - 0.25j), z), z) == []
    assert _fast_checks(_graph(lambda z: z - 2j, z), z) == []
    assert _fast_checks(_graph(lambda z: z + 1e-300j, z), z) == [(None, "")]  # a merged mask
    assert _fast_checks(_graph(lambda z: z + z[::-1], z), z) == [(None, "")]


def test_a_complex_sum_whose_initial_has_a_part_near_tiny_is_refused_by_name():
    # the modulus of 1 + 1e-300j is 1, but its imaginary part is summed apart
    z = np.array([1 + 1j, 2 + 0j])
    graph = _graph(lambda z: np.nansum(z, initial=1 + 1e-300j), z)
    with pytest.raises(cv.UnsupportedOperationError, match=re.escape(
            "the check of nansum's sums does not cover initial=(1+1e-300j)")):
        graph.replay(_feed(graph, z), backend="jax")
    fine = _graph(lambda z: np.nansum(z, initial=1 + 0.5j), z)
    got = fine.replay(_feed(fine, z), backend="jax", to_numpy=True)["out"]
    np.testing.assert_allclose(got, np.nansum(z, initial=1 + 0.5j), rtol=1e-12)


def test_the_exact_ops_keep_tiny_parts_as_numpy_does():
    # parts near the smallest normal, moved, negated, compared and measured: NumPy's values
    z = np.array([3e-308 + 1e-300j, -1e-300 + 2.5e-308j, 1 + 0j])

    def moves(z):
        w = np.conjugate(-z)[::-1]
        return np.concatenate([w, z]), np.abs(z), np.maximum(z, w), z.real, np.imag(w)

    graph = _graph(moves, z)
    got = graph.replay(_feed(graph, z), backend="jax", to_numpy=True)
    for value, want in zip(got.values(), moves(z)):
        np.testing.assert_array_equal(value, want)


# --- z / real and exp(z): checked where NumPy's parts may be subnormal (review 3, finding 30) ---

TINY32 = float(np.finfo(np.float32).tiny)
_QUOTIENT = ("a part of complex divide's result is 0 where NumPy's is a nonzero subnormal float, "
             "or the real divisor is above 1 / tiny (NumPy's reciprocal of it is subnormal): "
             "XLA flushes subnormal values to zero, and a later division, log or large factor "
             "would give another number than NumPy's; replay with backend='numpy', or scale "
             "the values away from the float's smallest normal ({tiny})")
_EXP = ("a part of complex exp's result, e^a cos b or e^a sin b, is below the float's smallest "
        "normal ({tiny}) and nonzero in NumPy, or e^a overflows (a real part above {high}): "
        "XLA flushes subnormal values to zero (and its scaling of a large e^a is not verified), "
        "so a part of the result would differ from NumPy's; replay with backend='numpy', or "
        "keep exp's result parts away from the smallest normal and its operand's real parts "
        "below {high}")
_SPECIAL = "a complex operand or result is not finite, or its real or imaginary part reaches"
LOG_TINY64 = exp_limits(np.complex128)[0]
LOG_TINY32 = exp_limits(np.complex64)[0]
SEVEN = np.float64(7.0)
HUGE = np.float64(4.6e307)  # 1 / HUGE is below tiny: NumPy's Smith quotient multiplies by it

FORMULAS_ORDINARY = [  # label, function: replays within the tolerance on ordinary values
    ("z / 2", lambda z: z / 2),
    ("z / 3.0", lambda z: z / 3.0),
    ("z / constant", lambda z: z / SEVEN),
    ("z / real node", lambda z: z / np.abs(z)),
    ("z / int node", lambda z: z / np.arange(1, z.size + 1)),
    ("exp(z)", np.exp),
    ("exp(1j * theta)", lambda z: np.exp(1j * (z.real * np.pi))),
]


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("label,fn", FORMULAS_ORDINARY, ids=[f[0] for f in FORMULAS_ORDINARY])
def test_a_complex_divided_by_a_real_and_exp_replay_ordinary_values(label, fn, dtype):
    rng = np.random.default_rng(7)
    z = (rng.standard_normal(64) * 3 + 1j * rng.standard_normal(64) * 3).astype(dtype)
    graph = _graph(fn, z)
    got = graph.replay(_feed(graph, z), backend="jax", to_numpy=True)["out"]
    want = np.asarray(fn(z))
    assert got.dtype == want.dtype
    rtol, atol = registry.get("jax").tolerance_for(want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    if label in ("z / 2", "exp(1j * theta)"):  # exact halving; cos and sin of a real: measured
        np.testing.assert_array_equal(got, want)


FORMULAS_FAILING = [  # label, function, values, dtype, message: NumPy keeps a subnormal part
    ("real part / 2", lambda z: z / 2, [1.5 * TINY64 + 1j], np.complex128,
     _QUOTIENT.format(tiny="2.23e-308")),
    ("imaginary part / 2", lambda z: z / 2, [1 + 1.5 * TINY64 * 1j, 1 + 1j], np.complex128,
     _QUOTIENT.format(tiny="2.23e-308")),
    ("z / |z|", lambda z: z / np.abs(z), [1e10 + 1e-300j], np.complex128,
     _QUOTIENT.format(tiny="2.23e-308")),
    ("z / huge", lambda z: z / HUGE, [1e10 + 1j], np.complex128,
     _QUOTIENT.format(tiny="2.23e-308")),
    ("complex64 / 2", lambda z: z / 2, [1.5 * TINY32 + 1j], np.complex64,
     _QUOTIENT.format(tiny="1.18e-38")),
    ("exp small imaginary", np.exp, [-20 + 1e-300j], np.complex128,
     _EXP.format(tiny="2.23e-308", high="709.783")),
    ("exp below tiny", np.exp, [LOG_TINY64 - 1e-9 + 0j, 1j], np.complex128,
     _EXP.format(tiny="2.23e-308", high="709.783")),
    ("exp subnormal e^a", np.exp, [-745 + 1j], np.complex128,
     _EXP.format(tiny="2.23e-308", high="709.783")),
    ("exp near pi", np.exp, [-690 + np.pi * 1j], np.complex128,
     _EXP.format(tiny="2.23e-308", high="709.783")),
    ("complex64 exp", np.exp, [-20 + 1e-30j], np.complex64,
     _EXP.format(tiny="1.18e-38", high="88.7228")),
    ("complex64 exp below tiny", np.exp, [LOG_TINY32 - 1e-5 + 0j], np.complex64,
     _EXP.format(tiny="1.18e-38", high="88.7228")),
]


@pytest.mark.parametrize("label,fn,values,dtype,message", FORMULAS_FAILING,
                         ids=[f[0] for f in FORMULAS_FAILING])
def test_a_complex_divided_by_a_real_or_exp_making_a_subnormal_part_fails_at_its_node(
        label, fn, values, dtype, message):
    z = np.array(values, dtype)
    graph = _graph(fn, z)
    want = np.asarray(fn(z))
    parts = np.concatenate([want.real, want.imag])
    tiny = float(np.finfo(parts.dtype).tiny)
    assert np.any((parts != 0) & (np.abs(parts) < tiny))  # the reproducer
    op = "exp" if "exp" in label else "divide"
    with pytest.raises(cv.ReplayError) as info:
        graph.replay(_feed(graph, z), backend="jax")
    text = str(info.value)
    assert re.match(rf"replay failed at node %\d+ \({op}\), recorded at "
                    rf"{re.escape(__file__)}:\d+ in ", text), text
    assert text.endswith(message)


FORMULAS_EDGES = [  # label, function, values, dtype: at the edges, NumPy's values bit for bit
    ("part / 2 == tiny", lambda z: z / 2, [2 * TINY64 + 1j, 1 + 2 * TINY64 * 1j], np.complex128),
    ("part / 2 above tiny", lambda z: z / 2, [2.5 * TINY64 + 1j], np.complex128),
    ("z / 0.5 of parts at tiny", lambda z: z / 0.5, [TINY64 + TINY64 * 1j], np.complex128),
    ("complex64 part / 2 == tiny", lambda z: z / 2, [2 * TINY32 + 1j], np.complex64),
    ("exp just above tiny", np.exp, [LOG_TINY64 + 1e-11 + 0j], np.complex128),
    ("exp rounds to 0", np.exp, [-746 + 1j, -800 - 2j], np.complex128),
    ("exp of an imaginary 2 tiny", np.exp, [2 * TINY64 * 1j], np.complex128),
    ("exp of 0 imaginary", np.exp, [-700 + 0j, 3 + 0j], np.complex128),
    ("complex64 exp just above tiny", np.exp, [LOG_TINY32 + 1e-5 + 0j], np.complex64),
]


@pytest.mark.parametrize("label,fn,values,dtype", FORMULAS_EDGES,
                         ids=[f[0] for f in FORMULAS_EDGES])
def test_a_complex_divided_by_a_real_or_exp_at_the_edges_replays_numpys_values(
        label, fn, values, dtype):
    z = np.array(values, dtype)
    graph = _graph(fn, z)
    got = graph.replay(_feed(graph, z), backend="jax", to_numpy=True)["out"]
    np.testing.assert_array_equal(got, np.asarray(fn(z)))


def test_exp_within_the_margin_of_tiny_or_overflowing_fails_at_its_node():
    # exp(tiny * 1j) is 1 + tiny j in NumPy (normal), but within the test's margin of tiny
    z = np.array([TINY64 * 1j])
    graph = _graph(np.exp, z)
    with pytest.raises(cv.ReplayError, match=re.escape(_EXP.format(tiny="2.23e-308",
                                                                   high="709.783"))):
        graph.replay(_feed(graph, z), backend="jax")
    # e^a overflows where NumPy scales: its result is finite, and refused at the node
    big = np.array([709.9 + 1j])
    assert np.all(np.isfinite(np.exp(big)))
    graph = _graph(np.exp, big)
    with pytest.raises(cv.ReplayError, match=re.escape(_SPECIAL)) as info:
        graph.replay(_feed(graph, big), backend="jax")
    assert re.match(r"replay failed at node %\d+ \(exp\)", str(info.value))


@pytest.mark.parametrize("label,fn", [
    ("z / complex", lambda z: z / z[::-1]),
    ("real / complex", lambda z: 2 / z),
])
def test_other_complex_divisions_stay_refused_by_name(label, fn):
    z = np.array([1 + 2j, 3 - 1j])
    graph = _graph(fn, z)
    with pytest.raises(cv.UnsupportedOperationError, match=re.escape(
            "op 'divide' cannot run on the jax backend: XLA flushes subnormal floats")):
        graph.replay(_feed(graph, z), backend="jax")


# --- narrowing casts --------------------------------------------------------------------------

_CAST = ("a cast to {dtype} gave 0 where NumPy's cast is a nonzero subnormal float32: XLA "
         "flushes subnormal results to zero, and a later division, log or large factor would "
         "give another number than NumPy's; replay with backend='numpy', or scale the values "
         "away from float32's smallest normal (1.18e-38) before the cast")


def _to_float32(x):
    return x.astype(np.float32) > 0  # NumPy: 1e-40 > 0; XLA's flushed 0 is not


def _to_complex64(z):
    return z.astype(np.complex64)


@pytest.mark.parametrize("fn,values,dtype", [
    (_to_float32, [1e-40, 2.0], "float32"),
    (_to_complex64, [2.0 + 1e-40j, 1j], "complex64"),
    (lambda z: z.astype(np.float32), [1e-40 + 1j, 1 + 0j], "float32"),
])
def test_a_cast_to_a_narrower_type_that_numpy_rounds_to_a_subnormal_fails_at_the_cast(
        fn, values, dtype):
    x = np.array(values)
    graph = _graph(fn, x)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(graph.replay(_feed(graph, x))["out"], fn(x))
    with pytest.raises(cv.ReplayError) as info:
        graph.replay(_feed(graph, x), backend="jax")
    text = str(info.value)
    assert re.match(rf"replay failed at node %\d+ \(astype\), recorded at "
                    rf"{re.escape(__file__)}:\d+ in ", text), text
    assert text.endswith(_CAST.format(dtype=dtype))


def test_casts_numpy_rounds_to_0_or_to_normals_or_to_float16_replay_as_numpy():
    x = np.array([1e-46, 2.0, 0.0, -3e-38, np.nan])  # 1e-46: below half float32's least
    graph = _graph(lambda x: x.astype(np.float32), x)
    got = graph.replay(_feed(graph, x), backend="jax", to_numpy=True)["out"]
    np.testing.assert_array_equal(got, x.astype(np.float32))
    half = np.array([1e-7, 1.0], np.float32)  # a float16 subnormal: XLA keeps it
    graph = _graph(lambda x: x.astype(np.float16), half)
    got = graph.replay(_feed(graph, half), backend="jax", to_numpy=True)["out"]
    np.testing.assert_array_equal(got, half.astype(np.float16))
