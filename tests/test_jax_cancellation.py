"""Issue 25 on JAX, the hostile review's finding 9: sums that cancel (capviz/backends/jax/
cancellation.py). XLA adds a sum's terms in another order than NumPy; where the sum cancels,
the roundings of that order are all that is left (NumPy 192, XLA -128 for 4,000 float64
terms of 1e16). Such a sum is computed in NumPy's order (capviz/backends/jax/numpy_order.py),
or, where none is written (float16, nan forms, trace), fails at its node with the user's line;
a sum that does not cancel replays within the tolerance, as before."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytest.importorskip("jax")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

CANCELS = r"np\.{op}: an output of the sum cancels .* sum in float64 \(dtype=np\.float64\)"
ROWS = (r"np\.{op}: NumPy adds the terms of this sum one after another \({why}\), rounding each "
        r"of its {n} partial sums to {dtype}, and XLA in another order: {n} roundings .* "
        r"replay with backend='numpy'{fix}")
FIX64 = r", or sum in float64 \(dtype=np\.float64\)"
ROW_BY_ROW = "along an axis that is not the last one, one row after another"
PRODUCTS = r"a {what} whose sums of products overflow or cancel"


def _cancelling(n: int = 2000, dtype=np.float64) -> np.ndarray:
    """The review's values (j14.py): 2n terms of about 1e16 adding up to about 192."""
    big = np.random.default_rng(3).standard_normal(n) * 1e16
    big = np.concatenate([big, -big[::-1]])
    big[5] += 1.0
    return big.astype(dtype)


BIG = _cancelling()
BIG_COMPLEX = BIG + 1j * BIG[::-1]


def _replays(fn, arrays, **options):
    graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    inputs = dict(zip(graph.inputs, arrays))
    return graph, inputs, lambda: graph.replay(inputs, backend="jax", to_numpy=True, **options)


def fails_on_jax(fn, arrays, message, op, **options):
    """NumPy's replay computes; the JAX replay fails at ``fn``'s node (op ``op``), naming
    this file."""
    graph, inputs, on_jax = _replays(fn, arrays, **options)
    graph.replay(inputs)
    with pytest.raises(cv.ReplayError, match=message) as info:
        on_jax()
    assert "test_jax_cancellation.py" in str(info.value)
    assert f"({op})" in str(info.value)
    return info.value


def exact_on_jax(fn, arrays, **options):
    """Where the check would fail, the JAX replay computes the sum in NumPy's order
    (capviz/backends/jax/numpy_order.py): eager NumPy's bits."""
    _, _, on_jax = _replays(fn, arrays, **options)
    got = np.asarray(next(iter(on_jax().values())))
    with np.errstate(all="ignore"):
        want = np.asarray(fn(*[a.copy() for a in arrays]))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), (got, want)
    return got


def within_tolerance(fn, arrays, rtol=1e-4, atol=1e-4, **options):
    """The JAX replay gives eager NumPy's result within the backend's tolerance."""
    _, _, on_jax = _replays(fn, arrays, **options)
    got = np.asarray(next(iter(on_jax().values())))
    with np.errstate(all="ignore"):
        want = np.asarray(fn(*[a.copy() for a in arrays]))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return got, want


# --- silent before: the review's cases, in NumPy's order or failing at the node ----------------


@pytest.mark.parametrize("op", ["sum", "mean", "nansum", "nanmean"])
@pytest.mark.parametrize("values", [BIG, BIG_COMPLEX], ids=["float64", "complex128"])
def test_a_sum_that_cancels_is_numpys_or_fails_at_the_node(op, values):
    """sum and mean: computed in NumPy's order where the check fails (its bits); the nan
    forms, which numpy_order does not write, fail at the node."""
    with np.errstate(all="ignore"):
        want = getattr(np, op)(values)
    assert abs(want) < 1e3 < 1e16  # the terms are ~1e16: the sum cancels
    if op.startswith("nan"):
        fails_on_jax(lambda a: getattr(np, op)(a), [values], CANCELS.format(op=op), op)
    else:
        exact_on_jax(lambda a: getattr(np, op)(a), [values])


def test_only_a_cancelling_output_along_an_axis_takes_numpys_order():
    rows = np.stack([BIG, np.abs(BIG)])
    exact_on_jax(lambda a: np.sum(a, axis=1), [rows])
    within_tolerance(lambda a: np.sum(a, axis=1), [rows[1:]])
    columns = rows.T.copy()  # the same sums along the first axis (NumPy adds row by row)
    exact_on_jax(lambda a: np.mean(a, axis=0, keepdims=True), [columns])


def test_a_float32_sum_that_cancels_beyond_the_tolerance_is_numpys_and_float64_replays():
    """100,000 float32 values and their negations, reversed: NumPy's sum is -0.0039 and
    XLA's -0.0029 (9.7 times the tolerance); the replay gives NumPy's; summed in float64
    both give 0."""
    r = np.random.default_rng(0).random(100_000).astype(np.float32)
    values = np.concatenate([r, -r[::-1]])
    exact_on_jax(lambda a: np.sum(a), [values])
    _, want = within_tolerance(lambda a: np.sum(a, dtype=np.float64), [values])
    assert want.dtype == np.float64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_finite_terms_whose_magnitudes_overflow_give_numpys_infinity(dtype):
    """NumPy adds [max, max, -max] left to right: inf; another order gives max."""
    top = np.finfo(dtype).max
    values = np.array([top, top, -top], dtype)
    with np.errstate(over="ignore"):
        assert np.isinf(np.sum(values))
    assert np.isinf(exact_on_jax(lambda a: np.sum(a), [values]))


def test_correlate_and_complex_convolve_that_cancel_fail_at_the_node():
    """The review's j30.py: correlate float (-256 vs -128), complex convolve and correlate
    (-512+512j vs -126+130j) were silent."""
    ones = np.ones(BIG.shape[0])
    valid = {"mode": "valid"}
    fails_on_jax(lambda a, v: np.correlate(a, v, **valid), [BIG, ones],
                 PRODUCTS.format(what=r"correlation \(np\.correlate\)"), "correlate")
    fails_on_jax(lambda a, v: np.correlate(a, v, **valid), [BIG_COMPLEX, ones + 0j],
                 PRODUCTS.format(what=r"correlation \(np\.correlate\)"), "correlate")
    fails_on_jax(lambda a, v: np.convolve(a, v, **valid), [BIG_COMPLEX, ones + 0j],
                 PRODUCTS.format(what=r"convolution \(np\.convolve, np\.polymul\)"), "convolve")
    cancelling = np.array([1e16 + 1e16j, 3 + 3j - (1e16 + 1e16j)])  # 4+4j of 1e16s
    fails_on_jax(lambda a, v: np.polymul(a, v), [cancelling, np.ones(2, complex)],
                 PRODUCTS.format(what=r"convolution \(np\.convolve, np\.polymul\)"), "polymul",
                 arithmetic="xla")


# --- what does not cancel replays as before ----------------------------------------------------


@pytest.mark.parametrize("op", ["sum", "mean", "nansum", "nanmean"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.complex64])
def test_sums_that_do_not_cancel_replay_within_the_tolerance(op, dtype):
    rng = np.random.default_rng(1)
    values = rng.standard_normal((64, 1000))
    if np.dtype(dtype).kind == "c":
        values = values + 0j  # imaginary parts 0: each part is checked on its own
    values = values.astype(dtype)
    if np.dtype(dtype).kind == "f":  # (a complex NaN is refused by name: checks.py)
        values[3, 7] = np.nan
    within_tolerance(lambda a: getattr(np, op)(a, axis=1), [values])
    within_tolerance(lambda a: getattr(np, op)(np.abs(a) + 1), [values])


def test_float16_sums_check_float32s_rounding_as_both_add_float16_in_float32():
    values = np.random.default_rng(2).standard_normal(1000).astype(np.float16)
    within_tolerance(lambda a: np.sum(a), [values], rtol=1e-2, atol=1e-1)
    within_tolerance(lambda a: np.mean(a), [values], rtol=1e-2, atol=1e-1)


def test_a_float16_sum_along_the_first_axis_is_numpys_float16_running_sum():
    """NumPy adds float16 rows one after another, rounding each partial sum to float16:
    1000 + 0.3 - 1000 + 0.3 is 0.8 there, 0.6 in float32 (jax.numpy's, silent before; then
    failing at the node). Where the check fails the replay runs NumPy's order, a lax.scan with
    a float16 carry (W=25c): NumPy's bits."""
    values = np.array([[1000.0, 1], [0.3, 1], [-1000.0, 1], [0.3, 1]], np.float16)
    assert np.sum(values, axis=0)[0] == np.float16(0.7998)
    exact_on_jax(lambda a: np.sum(a, axis=0), [values])


@pytest.mark.parametrize("fill, numpys", [(1.0, 2048.0), (0.1, 256.0)])
def test_a_float16_running_sum_that_stalls_is_numpys(fill, numpys):
    """Review 2, finding 22 (/tmp/review2/j16.py): NumPy's float16 running sum stalls where
    the terms fall below half its spacing (5,000 ones: 2048), jax.numpy adds in float32 (5000);
    silent before, then failing at the node. The check fails, and the replay computes NumPy's
    order: its bits (W=25c, the float16 running sums of numpy_order.py)."""
    columns = np.full((5000, 2), fill, np.float16)
    assert np.sum(columns, axis=0)[0] == numpys
    exact_on_jax(lambda a: np.sum(a, axis=0), [columns])
    exact_on_jax(lambda a: np.cumsum(a)[-1], [columns[:, 0].copy()])
    exact_on_jax(lambda a: np.add.accumulate(a, axis=0), [columns])
    exact_on_jax(lambda a: np.add.reduce(a, axis=0), [columns])


def test_a_short_float16_column_sum_is_held_to_its_partial_sums_not_n_roundings():
    """A float16 sum along a non-last axis short enough that n * u < 1/2 is held to NumPy's
    first-order bound, u * sum_k |p_k| of its partial sums: 30 unit normal rows (the contract
    example, refused by n roundings of the terms' magnitudes) replay within float16's tolerance;
    1,000 rows of 0.1, where NumPy's rounded running sum drifts to 105.2, still fail."""
    rows = np.random.default_rng(0).standard_normal((30, 4)).astype(np.float16)
    within_tolerance(lambda a: np.sum(a, axis=0), [rows], rtol=1e-2, atol=1e-1)
    within_tolerance(lambda a: np.cumsum(a, axis=0), [rows], rtol=1e-2, atol=1e-1)
    drifting = np.full((1000, 2), 0.1, np.float16)
    assert np.sum(drifting, axis=0)[0] == np.float16(105.2)
    exact_on_jax(lambda a: np.sum(a, axis=0), [drifting])  # the check fails: NumPy's order


def _stalling(n: int = 10_000) -> np.ndarray:
    """The review's j9.py/j14.py columns: 512, then n - 1 terms of 0.75 of its float32 ulp.
    NumPy's running sum rounds each add up (512.6103), XLA's tree is exact (512.4578):
    0.153 apart, 3 times the tolerance, where one rounding of the total is 6e-5."""
    column = np.full(n, 0.75 * float(np.spacing(np.float32(512))), np.float32)
    column[0] = 512.0
    return column


@pytest.mark.parametrize("form", ["sum axis 0", "x.sum(0)", "mean axis 0", "cumsum axis 0",
                                  "cumsum 1-d"])
def test_a_float32_sum_numpy_adds_row_by_row_is_held_to_n_roundings(form):
    """Review 2, finding 10: NumPy adds along an axis that is not the last, and every
    cumulative sum, one term after another; n roundings, not one, bound its difference from
    XLA's order. Silent before (j9.py, j14.py); float64 is the fix the message names."""
    columns = np.tile(_stalling()[:, None], 2)
    forms = {"sum axis 0": (lambda a: np.sum(a, axis=0), "sum", ROW_BY_ROW, columns),
             "x.sum(0)": (lambda a: a.sum(0), "sum", ROW_BY_ROW, columns),
             "mean axis 0": (lambda a: np.mean(a, axis=0), "mean", ROW_BY_ROW,
                             columns * np.float32(2**20)),  # 16 apart, beyond rtol
             "cumsum axis 0": (lambda a: np.cumsum(a, axis=0)[-1], "cumsum",
                               "a cumulative sum", columns),
             "cumsum 1-d": (lambda a: np.cumsum(a)[-1], "cumsum", "a cumulative sum",
                            _stalling())}
    fn, _, _, values = forms[form]
    assert np.cumsum(_stalling())[-1] == np.float32(512.6103)
    exact_on_jax(fn, [values])  # beyond n roundings: NumPy's order (was: fails at the node)
    got, _ = within_tolerance(fn, [values.astype(np.float64)])
    assert got.dtype == np.float64


def test_a_float32_sum_numpy_adds_pairwise_keeps_one_rounding():
    """The last axis (and all axes) of a C-ordered operand, NumPy's pairwise order: one
    rounding of the total still bounds it, so these replay (a layer norm's mean is one)."""
    rows = np.tile(_stalling()[None, :], (2, 1))
    within_tolerance(lambda a: np.sum(a, axis=1), [rows])
    within_tolerance(lambda a: np.mean(a, axis=-1), [rows])
    within_tolerance(lambda a: np.sum(a), [rows])


def test_float16_sums_numpy_adds_once_in_float32_and_the_named_fix_replay():
    """The last axis (NumPy: pairwise in float32, rounded once), a float16 mean (summed in
    float32) and the fix the refusal names, ``dtype=np.float64``, give NumPy's result."""
    ones = np.ones((5000, 2), np.float16)
    within_tolerance(lambda a: np.sum(a, axis=1), [ones.T.copy()], rtol=1e-2, atol=1e-1)
    within_tolerance(lambda a: np.mean(a, axis=0), [ones], rtol=1e-2, atol=1e-1)
    got, _ = within_tolerance(lambda a: np.sum(a, axis=0, dtype=np.float64), [ones])
    assert list(got) == [5000.0, 5000.0]


def test_a_layer_norm_of_float32_replays():
    x = np.random.default_rng(4).standard_normal((16, 768)).astype(np.float32) * 10 + 3

    def layer_norm(a):
        mu = np.mean(a, axis=-1, keepdims=True)
        var = np.mean((a - mu) ** 2, axis=-1, keepdims=True)
        return (a - mu) / np.sqrt(var + np.float32(1e-5))

    within_tolerance(layer_norm, [x])


def test_infinite_and_nan_terms_give_numpys_result_in_every_order():
    inf, nan = np.inf, np.nan
    for values in ([inf, 1.0, 2.0], [inf, -inf, 1.0], [1.0, nan, -1.0], [-inf, 1e300, -1e300]):
        a = np.array(values)
        _, _, on_jax = _replays(lambda t: np.sum(t), [a])
        got = np.asarray(next(iter(on_jax().values())))
        np.testing.assert_array_equal(got, np.sum(a))
    a = np.array([nan, 1e16, -1e16, 1.0])  # nansum leaves the NaN out: the rest cancels
    fails_on_jax(lambda t: np.nansum(t), [a], CANCELS.format(op="nansum"), "nansum")
    within_tolerance(lambda t: np.nanmean(t), [np.array([nan, 2.0, 3.0])])
    within_tolerance(lambda t: np.nanmean(t, axis=1), [np.array([[nan, nan], [2.0, 3.0]])])
    within_tolerance(lambda t: np.mean(t), [np.array([2**62, 2**62 - 1, 5], np.int64)])


def test_an_infinite_term_with_finite_terms_that_overflow_gives_numpys_result():
    """[inf, -max, -max]: NaN in NumPy's order (-max + -max overflows first, pairwise from
    the left: inf + -inf), something else in another order."""
    top = np.finfo(np.float64).max
    exact_on_jax(lambda a: np.sum(a), [np.array([np.inf, -top, -top])])


@pytest.mark.parametrize("form", ["cumsum", "nancumsum", "add.reduce", "add.accumulate",
                                  "trace"])
def test_cumulative_sums_add_reduce_and_trace_that_cancel_fail_at_the_node(form):
    forms = {"cumsum": (lambda a: np.cumsum(a), "cumsum"),
             "nancumsum": (lambda a: np.nancumsum(a), "nancumsum"),
             "add.reduce": (lambda a: np.add.reduce(a), "ufunc_reduce"),
             "add.accumulate": (lambda a: np.add.accumulate(a), "ufunc_accumulate"),
             "trace": (lambda a: np.trace(a.reshape(40, 100)[:, :40]), "trace")}
    fn, op = forms[form]
    values = BIG
    if form == "trace":  # 40 values of 1e16 that cancel, on the diagonal of a (40, 40) block
        values = np.zeros((40, 100))
        values[np.arange(40), np.arange(40)] = np.concatenate([BIG[:20], -BIG[:20][::-1]])
        values[0, 0] += 3.0
        values = values.ravel()
    label = {"add.reduce": r"add\.reduce", "add.accumulate": r"add\.accumulate"}.get(form, form)
    message = CANCELS.format(op=label)
    if form not in ("add.reduce", "trace"):  # a running sum: n roundings
        message = ROWS.format(op=label, why="a cumulative sum", n=4000, dtype="float64", fix="")
    if form in ("nancumsum", "trace"):  # no program in NumPy's order for these
        fails_on_jax(fn, [values], message, op)
    else:
        exact_on_jax(fn, [values])
    within_tolerance(fn, [np.abs(values)])


def test_a_product_of_add_reduce_is_not_a_sum():
    within_tolerance(lambda a: np.multiply.reduce(a), [np.array([1e16, -1e-16, 3.0])])


def test_a_sum_of_values_never_negative_is_not_checked_where_numpy_adds_pairwise():
    """np.sum(np.exp(x)) (softmax), np.sum(x ** 2): the terms cannot cancel, and their sum
    overflows to inf in every order (the check would refuse [1.35e308, 1.35e308] as overflowing).
    A column sum of them (row by row in NumPy) is checked and computed in NumPy's order
    (the hostile review 3, finding 13)."""
    huge = np.array([709.5, 709.5, 1.0])
    got, want = within_tolerance(lambda a: np.sum(np.exp(a)), [huge])
    assert np.isinf(want) and np.isinf(got)
    within_tolerance(lambda a: np.mean(a ** 2, axis=0), [np.array([[1e154, 1.0], [1e154, 2.0]])])
    exact_on_jax(lambda a: np.sum(a * 1.0), [np.array([1e308, 1e308, -1e308])])
    exact_on_jax(lambda a: np.mean(np.abs(a), axis=0), [_stalling()[:, None] * [1, 2]])


_CHECKED = "tolerance, sums checked (else fails at the node)"
_DECLARED = "tolerance, the contraction's declared bound (not checked)"
_COMPLEX_REFUSED = "; complex: refused (arithmetic='xla': tolerance)"


@pytest.mark.parametrize("name, says", [
    ("np.sum", _CHECKED + "; complex: checked"),
    ("np.cumsum", _CHECKED + "; complex: checked"),
    ("np.mean", _CHECKED + "; complex: checked"),
    ("np.correlate", _CHECKED + "; complex: checked"),
    ("np.std", _CHECKED + _COMPLEX_REFUSED),
    ("np.var", _CHECKED + _COMPLEX_REFUSED),
    ("np.nanvar", _CHECKED + _COMPLEX_REFUSED),
    ("np.linalg.trace", "tolerance, sums not checked (may differ beyond it); complex: checked"),
    ("np.einsum", _DECLARED + "; complex: checked"),
    ("np.matmul", _DECLARED + "; complex: checked"),
    ("np.linalg.multi_dot", _DECLARED + "; complex: checked"),
    ("np.vecdot", _DECLARED + "; complex: checked"),
    ("np.exp", "tolerance; complex: checked")])
def test_the_coverage_table_says_what_is_checked_of_a_sum_on_jax(name, says):
    """Review 2, finding 26: the JAX column said "tolerance" for sums that differed beyond it
    (np.std 40% off, einsum "i->" -128 for NumPy's 192): it says what is checked."""
    from pathlib import Path

    from capviz.numpy_api.coverage import engines

    assert engines(name)[0] == says
    page = Path(__file__).resolve().parents[1] / "docs" / "numpy-coverage.md"
    assert f"| `{name}` | captured | {says} |" in page.read_text(encoding="utf-8")
