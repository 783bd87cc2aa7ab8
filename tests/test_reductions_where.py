"""``where=`` and ``initial=`` on np.sum, np.prod, np.mean, np.max and np.min (the hostile review
3, finding 14): captured as ops of their own (``sum_where``...), NumPy's own call on the NumPy
replay (bit for bit), checked as the plain reduction on JAX, NumPy's call on one block on Dask
and on the host for CuPy; ``np.dot(out=)``; and the ``Fix:`` line of every refusal of an
argument."""

import os
import warnings

import numpy as np
import pytest
from helpers import fakecupy

import capviz as cv

# --- NumPy's order of a masked sum, bit for bit -------------------------------------------------


def _pairwise(a):
    """NumPy's pairwise_sum (loops_utils.h.src), in the array's own type."""
    t = a.dtype.type
    n = len(a)
    if n < 8:
        res = t(-0.0)
        for v in a:
            res = t(res + v)
        return res
    if n <= 128:
        r = [t(v) for v in a[:8]]
        i = 8
        while i < n - (n % 8):
            for j in range(8):
                r[j] = t(r[j] + a[i + j])
            i += 8
        res = t(t(t(r[0] + r[1]) + t(r[2] + r[3])) + t(t(r[4] + r[5]) + t(r[6] + r[7])))
        for v in a[i:]:
            res = t(res + v)
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return t(_pairwise(a[:n2]) + _pairwise(a[n2:]))


def _masked_row(x, m):
    """A masked sum as NumPy's masked loop adds it: from the identity, each run of unmasked
    terms summed pairwise and added to the running total."""
    t = x.dtype.type
    total, i, n = t(0.0), 0, len(x)
    while i < n:
        if not m[i]:
            i += 1
            continue
        j = i
        while j < n and m[j]:
            j += 1
        total = t(total + _pairwise(x[i:j]))
        i = j
    return total


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_adds_a_masked_sum_run_by_run_not_as_the_filled_array(dtype):
    rng = np.random.default_rng(0)
    differs = 0
    for n in (7, 100, 1000, 20000):
        for p in (0.1, 0.5, 0.95):
            x = (rng.standard_normal((3, n)) * 1000 + 1e4).astype(dtype)
            m = rng.random(x.shape) < p
            got = np.sum(x, axis=-1, where=m)
            model = np.array([_masked_row(x[k], m[k]) for k in range(3)], dtype)
            assert got.tobytes() == model.tobytes(), (n, p)
            differs += np.sum(np.where(m, x, 0), axis=-1).tobytes() != got.tobytes()
    # so np.sum(np.where(m, x, 0)) is not NumPy's order: a masked sum is an op of its own
    assert differs >= 6


# --- capture and the NumPy replay ----------------------------------------------------------------

_MASK = np.arange(12).reshape(3, 4) % 3 != 0


def _cases():
    out = []
    for name in ("sum", "prod", "mean", "max", "min"):
        f = getattr(np, name)
        ini = {} if name == "mean" else {"initial": 2}
        out += [
            (f"{name} tensor mask axis 1", lambda x, f=f, ini=ini: f(
                x, axis=1, where=x > 0.5, **ini)),
            (f"{name} tensor mask all axes", lambda x, f=f, ini=ini: f(x, where=x > 0.5, **ini)),
            (f"{name} ndarray mask keepdims", lambda x, f=f, ini=ini: f(
                x, axis=0, keepdims=True, where=_MASK, **ini)),
            (f"{name} list mask broadcast", lambda x, f=f, ini=ini: f(
                x, axis=(0, 1), where=[True, False, True, True], **ini)),
            (f"{name} where=False", lambda x, f=f, ini=ini: f(x, axis=0, where=False, **ini)),
            (f"{name} method", lambda x, name=name, ini=ini: getattr(x, name)(
                axis=1, where=x > 0.5, **ini)),
            (f"{name} empty axis", lambda x, f=f, ini=ini: f(
                x[:0], axis=0, where=x[:0] > 0, **ini)),
        ]
        if name != "mean":
            out += [(f"{name} initial only", lambda x, f=f: f(x, axis=1, initial=-1)),
                    (f"{name} 0-d", lambda x, f=f: f(x[0, 0], where=x[0, 0] > 0.5, initial=1))]
    return out


CASES = _cases()
DTYPES = [np.float32, np.float64, np.float16, np.int8, np.int64, np.complex64, np.bool_]


def _values(dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, 4)) * 3
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((3, 4))
    return x.astype(dtype)


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("label,fn", CASES, ids=[c[0] for c in CASES])
def test_captured_and_replayed_bit_for_bit_on_numpy(label, fn, dtype):
    x, x2 = _values(dtype, 1), _values(dtype, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the mean of an empty slice
        g = cv.capture(fn, x)
        for v in (x, x2):
            assert _same(g.replay({g.inputs[0]: v})["out"], fn(v)), label


def test_the_graph_names_the_masked_op_and_its_mask_and_survives_a_file(tmp_path):
    def f(x):
        return np.mean(x, axis=1, where=x > 1) + np.max(x, initial=-np.inf)

    x = np.arange(6.0).reshape(2, 3)
    g = cv.capture(f, x)
    listing = str(g)
    assert "mean_where %0 %1 axis=1" in listing and "max_where %0" in listing
    assert "initial=-inf" in listing
    path = os.path.join(tmp_path, "g.capviz")
    g.save(path)
    x2 = x[::-1].copy() - 1.5
    assert _same(cv.load(path).replay({"x": x2})["out"], f(x2))


def test_nothing_changes_for_a_plain_reduction_or_where_true():
    g = cv.capture(lambda x: np.sum(x, axis=0, where=True) + x.max(0), np.ones((2, 3)))
    assert [n.op for n in g.nodes if n.kind == "op"] == ["sum", "max", "add"]


@pytest.mark.parametrize("fn,error,text", [
    (lambda x: np.sum(x, where=np.array([1, 0, 1])), TypeError,
     "Cannot cast array data from dtype('int64') to dtype('bool') according to the rule 'safe'"),
    (lambda x: np.max(x, axis=0, where=x > 2), ValueError,
     "reduction operation 'maximum' does not have an identity, so to use a where mask one has "
     "to specify 'initial'"),
    (lambda x: np.min(x[:, :0], axis=1), ValueError,
     "zero-size array to reduction operation minimum which has no identity"),
    (lambda x: np.sum(x, where=np.ones((3, 2, 3), bool)), ValueError,
     "input operand has more dimensions than allowed by the axis remapping"),
    (lambda x: np.sum(x, where=np.ones(4, bool)), ValueError,
     "operands could not be broadcast together"),
    (lambda x: np.sum(x, initial=1j), TypeError, "float() argument must be"),
], ids=["int mask", "max without initial", "empty min", "mask of more axes", "mask of 4",
        "complex initial"])
def test_numpy_errors_are_numpys(fn, error, text):
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(error) as eager:
        fn(x)
    with pytest.raises(error) as captured:
        cv.capture(fn, x)
    assert text in str(eager.value) and text in str(captured.value)


def test_a_tensor_initial_is_refused_with_the_rewrite_that_captures():
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(cv.UnsupportedOperationError) as err:
        cv.capture(lambda x: np.max(x, axis=0, initial=x[0, 0]), x)
    lines = str(err.value).splitlines()
    assert lines[0].startswith("`np.max(x, axis=0, initial=x[0, 0])` at ")
    assert lines[-1] == "Fix: compute the reduction without it and combine the tensor after: " \
                        "np.maximum(np.max(x, axis), v)."

    def fixed(x):
        return np.maximum(np.max(x, axis=0), x[0, 0])

    g = cv.capture(fixed, x)
    assert _same(g.replay({"x": x * -1})["out"], np.max(-x, axis=0, initial=-x[0, 0]))


def test_out_with_where_is_numpys_call_into_the_buffer():
    def f(x):
        buf = np.zeros(3)
        np.sum(x, axis=0, where=x > 1, out=buf)
        return buf

    x = np.arange(6.0).reshape(2, 3)
    g = cv.capture(f, x)
    assert _same(g.replay({"x": x - 2})["out"], f(x - 2))


# --- the engines ---------------------------------------------------------------------------------

ENGINE_CASES = [
    ("sum", lambda x: np.sum(x, axis=1, where=x > 0)),
    ("sum initial", lambda x: np.sum(x, axis=0, initial=1.0)),
    ("mean", lambda x: np.mean(x, axis=0, where=x > 0)),
    ("prod", lambda x: np.prod(x, axis=1, where=np.abs(x) > 0.5)),
    ("max", lambda x: np.max(x, axis=1, where=x > 0, initial=-np.inf)),
    ("min", lambda x: np.min(x, initial=0.0)),
]


def _x32():
    return np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)


@pytest.mark.parametrize("label,fn", ENGINE_CASES, ids=[c[0] for c in ENGINE_CASES])
def test_dask_runs_numpys_call_bit_for_bit(label, fn):
    pytest.importorskip("dask")
    x = _x32()
    g = cv.capture(fn, x)
    for chunks in ((4, 8), (3, 5)):
        got = g.replay({"x": x}, backend="dask", chunks=chunks)["out"]
        assert _same(got, fn(x)), (label, chunks)


@pytest.mark.parametrize("label,fn", ENGINE_CASES, ids=[c[0] for c in ENGINE_CASES])
def test_cupy_runs_numpys_call_on_the_host(label, fn, monkeypatch):
    fakecupy.install(monkeypatch)
    x = _x32()
    g = cv.capture(fn, x)
    assert _same(np.asarray(g.replay({"x": x}, backend="cupy")["out"]), fn(x))


@pytest.mark.parametrize("label,fn", ENGINE_CASES, ids=[c[0] for c in ENGINE_CASES])
def test_jax_replays_within_its_tolerance_and_selections_exactly(label, fn):
    pytest.importorskip("jax")
    x = _x32()
    g = cv.capture(fn, x)
    got = np.asarray(g.replay({"x": x}, backend="jax")["out"])
    want = fn(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    if label in ("max", "min"):
        assert _same(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _stalling():
    """Terms of 0.75 of float32's spacing at 512 after a 512, every other one masked: NumPy's
    masked loop adds them one run (one term) at a time into the running total, which rounds
    each up (512.6103), where the exact sum and XLA's are 512.4578: 3e-4 apart, 3x the
    tolerance, while one rounding of the terms' magnitude (the bound of a pairwise sum) is
    6e-5 of it."""
    x = np.full((2, 20000), np.float32(0.75) * np.spacing(np.float32(512)), np.float32)
    x[:, 0] = 512
    m = np.zeros(x.shape, bool)
    m[:, ::2] = True
    return x, m


@pytest.mark.parametrize("name", ["sum", "mean", "nansum"])
def test_jax_holds_a_masked_sum_to_the_running_sums_bound_and_fails_at_the_node(name):
    pytest.importorskip("jax")
    x, m = _stalling()
    fn = getattr(np, name)

    def f(x):
        return fn(x, axis=-1, where=m)

    g = cv.capture(f, x)
    with pytest.raises(cv.ReplayError) as err:  # (nansum(where=) was silent: 3x the tolerance)
        g.replay({"x": x}, backend="jax")
    text = str(err.value)
    op = {"sum": "sum_where", "mean": "mean_where", "nansum": "nansum"}[name]
    assert f"({op}), recorded at " in text and "test_reductions_where.py" in text
    assert "(with where=, each run of unmasked terms into a running total)" in text
    assert "dtype=np.float64" in text
    # the fix the message names replays within the tolerance
    g64 = cv.capture(lambda x: fn(x, axis=-1, where=m, dtype=np.float64), x)
    got = g64.replay({"x": x}, backend="jax")["out"]
    np.testing.assert_allclose(got, fn(x, axis=-1, where=m, dtype=np.float64), rtol=1e-4)


# --- np.dot(out=) --------------------------------------------------------------------------------


def test_dot_with_out_is_captured_as_matmul_and_einsum_are():
    def f(x):
        d = np.empty((3, 3))
        np.dot(x, x, out=d)
        return d

    x = np.arange(9.0).reshape(3, 3)
    g = cv.capture(f, x)
    assert "into" in [n.op for n in g.nodes]
    for v in (x, x[::-1] * 2 - 3):
        assert _same(g.replay({"x": v})["out"], f(v))


def test_dot_into_an_ndarray_is_refused_with_the_fix():
    buf = np.zeros((3, 3))
    with pytest.raises(cv.UnsupportedOperationError) as err:
        cv.capture(lambda x: np.dot(x, x, out=buf), np.ones((3, 3)))
    assert str(err.value).splitlines()[-1] == (
        "Fix: write y = np.dot(...) and use y, or record the buffer first, buf = "
        "cv.constant(arr), and pass out=buf.")


# --- the Fix line of every refusal of an argument ------------------------------------------------

X = np.arange(6.0).reshape(2, 3)
REFUSED_ARGUMENTS = [
    ("np.any where", lambda x: np.any(x > 1, axis=0, where=x > 0),
     "np.any(x & mask, axis)"),
    ("np.all where", lambda x: np.all(x > 1, axis=0, where=x > 0), "np.all(x | ~mask, axis)"),
    ("np.var where", lambda x: np.var(x, axis=0, where=x > 0), "n = np.sum(mask, axis"),
    ("np.std where", lambda x: np.std(x, axis=0, where=x > 0), "np.sqrt(np.sum((x - mu)"),
    ("np.var mean", lambda x: np.var(x, axis=0, mean=x.mean(0, keepdims=True)),
     "np.var(x, axis) without mean="),
    ("np.std out", lambda x: np.std(x, axis=0, out=np.zeros(3)), "y = np.std(...)"),
    ("np.argmax out", lambda x: np.argmax(x, axis=0, out=np.zeros(3, np.intp)),
     "y = np.argmax(...)"),
    ("np.take out", lambda x: np.take(x, [0, 1], out=np.zeros(2)), "y = np.take(...)"),
    ("np.concatenate dtype", lambda x: np.concatenate([x, x], dtype=np.float32),
     "np.concatenate([a.astype(t) for a in arrays])"),
    ("np.stack out", lambda x: np.stack([x, x], out=np.zeros((2, 2, 3))), "y = np.stack(...)"),
    ("np.vstack dtype", lambda x: np.vstack([x, x], dtype=np.float32), "a.astype(t)"),
    ("ufunc dtype", lambda x: np.add(x, 1.0, dtype=np.float32), "np.add(a.astype(t)"),
    ("ufunc where", lambda x: np.add(x, 1.0, where=x > 1), "np.where(mask, np.add(a, b)"),
    ("np.matmul axes", lambda x: np.matmul(x, x.T, axes=[(-2, -1), (-2, -1), (-2, -1)]),
     "without axes= (what capviz records of NumPy's API is listed in docs/guide/numpy.md)"),
    ("t.flat", lambda x: x.flat[1] * 2, "write t.ravel()[i]"),
]


@pytest.mark.parametrize("label,fn,fix", REFUSED_ARGUMENTS, ids=[r[0] for r in REFUSED_ARGUMENTS])
def test_every_refused_argument_gives_a_fix_line(label, fn, fix):
    with pytest.raises(cv.UnsupportedOperationError) as err:
        cv.capture(fn, X)
    lines = str(err.value).splitlines()
    assert len(lines) == 3 and "test_reductions_where.py" in lines[0], lines
    assert lines[2].startswith("Fix: ") and fix in lines[2], lines[2]


@pytest.mark.parametrize("name", ["var", "std"])
def test_the_masked_variance_fix_applied_captures_numpys_bits(name):
    def fixed(x):
        mask = x > 0
        n = np.sum(mask, 0, keepdims=True)
        mu = np.sum(x, 0, keepdims=True, where=mask) / n
        v = np.sum((x - mu) ** 2, 0, where=mask) / np.sum(mask, 0)
        return np.sqrt(v) if name == "std" else v

    x = np.random.default_rng(3).standard_normal((50, 4))
    g = cv.capture(fixed, x)
    for v in (x, x * 3 - 1):
        assert _same(g.replay({"x": v})["out"], getattr(np, name)(v, axis=0, where=v > 0))


NAN_MASKS = [
    ("nansum", lambda x: np.nansum(x, axis=1, where=x > 1),
     lambda x: np.sum(np.where(np.isnan(x), 0, x), axis=1, where=x > 1),
     "np.sum(np.where(np.isnan(x), 0, x), axis, where=mask)"),
    ("nanprod", lambda x: np.nanprod(x, axis=1, where=x > 1),
     lambda x: np.prod(np.where(np.isnan(x), 1, x), axis=1, where=x > 1),
     "np.prod(np.where(np.isnan(x), 1, x), axis, where=mask)"),
    ("nanmax", lambda x: np.nanmax(x, axis=1, where=x > 1, initial=0),
     lambda x: np.max(x, axis=1, where=(x > 1) & ~np.isnan(x), initial=0),
     "np.max(x, axis, where=mask & ~np.isnan(x), initial=v)"),
]


@pytest.mark.parametrize("label,fn,fixed,fix", NAN_MASKS, ids=[n[0] for n in NAN_MASKS])
def test_a_tensor_mask_of_a_nan_reduction_is_refused_with_a_fix_that_gives_its_bits(
        label, fn, fixed, fix):
    x = np.array([[1.0, np.nan, 3.0, 2.5], [4.0, 5.0, -6.0, np.nan]])
    with pytest.raises(cv.UnsupportedOperationError) as err:
        cv.capture(fn, x)
    lines = str(err.value).splitlines()
    assert lines[1] == (f"capviz cannot record it: np.{label} records a where= mask known "
                        "before the capture (an ndarray), not a tensor.")
    assert lines[2].startswith("Fix: ") and fix in lines[2]
    g = cv.capture(fixed, x)
    for v in (x, x[::-1] * 2 - 1):
        assert _same(g.replay({"x": v})["out"], fn(v))


def test_jax_takes_complex_masked_sums_checked_and_extremes_exactly():
    pytest.importorskip("jax")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((6, 8)) + 1j * rng.standard_normal((6, 8))).astype(np.complex64)
    for fn, exact in ((lambda x: np.sum(x, axis=1, where=np.abs(x) > 0.5), False),
                      (lambda x: np.mean(x, axis=0, where=np.abs(x) > 0.5), False),
                      (lambda x: np.max(x, axis=1, where=np.abs(x) > 0.5, initial=0j), True),
                      (lambda x: np.min(x, axis=0, initial=1 + 1j), True)):
        got = np.asarray(cv.capture(fn, x).replay({"x": x}, backend="jax")["out"])
        if exact:
            assert _same(got, fn(x))
        else:
            np.testing.assert_allclose(got, fn(x), rtol=1e-4, atol=1e-4)


def test_jax_refuses_a_small_initial_term_by_name_as_for_the_nan_sums():
    pytest.importorskip("jax")
    x = np.array([[1.0, 2.0, 3.0]])
    g = cv.capture(lambda x: np.sum(x, axis=1, initial=1e-300), x)
    with pytest.raises(cv.UnsupportedOperationError) as err:
        g.replay({"x": x}, backend="jax")
    assert "the check of sum_where's sums does not cover initial=1e-300" in str(err.value)
    assert "arithmetic='xla'" in str(err.value)
