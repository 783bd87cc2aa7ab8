"""Issue 25 on JAX: variances are checked at run time (capviz/backends/jax/variances.py).
NumPy's var subtracts a mean it added in its own order; XLA's mean is another number, and a
variance of values far larger than their spread is that difference squared (float32
``1e5 + rng.random(1000)``: NumPy 0.081924, XLA 0.082085, beyond (1e-4, 1e-4)). Such an
output fails at its node with the user's line; a variance of values of about their spread (a
layer norm's) replays within the tolerance."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

VAR = (r"replay failed at node %1 \({op}\), recorded at .*test_jax_variances.py.*np\.{op}: the "
       r"mean NumPy subtracts \(its sum {why}\) is off the exact one by up to .* of the values' "
       r"mean magnitude, and a variance of values far larger than their spread is that error "
       r"squared \(or a sum overflows its type\): NumPy's order of summation and XLA's give "
       r"other values there beyond the tolerance; replay with backend='numpy'{fix}")
FIX64 = r", or compute in float64 \(dtype=np\.float64\)"


def _graph(fn, x):
    graph = cv.capture(fn, x)
    return graph, {graph.inputs[0]: x}


def _on_jax(fn, x, **options):
    graph, inputs = _graph(fn, x)
    return graph.replay(inputs, backend="jax", to_numpy=True, **options)["out"]


def _xla(fn, x):
    """What jax.numpy gives for ``fn`` (the unchecked value), as NumPy arrays."""
    import jax.numpy as jnp

    from capviz.backends.jax.backend import x64

    with x64():
        return np.asarray(jax.jit(lambda a: fn(a, jnp))(x))


def _large(shape, offset, dtype=np.float32, seed=0):
    return (offset + np.random.default_rng(seed).random(shape)).astype(dtype)


@pytest.mark.parametrize("op", ["var", "std"])
def test_a_tiny_variance_of_large_values_fails_at_the_node(op):
    """float32, 4 rows of 1000 values of 1e5 + [0, 1) along the last axis: XLA's value is
    beyond the tolerance of NumPy's (checked here with jax.numpy itself), so the replay fails
    at the node naming the fix; with dtype=np.float64 (the fix) it replays NumPy's value."""
    x = _large((4, 1000), 1e5)
    want = getattr(np, op)(x, axis=-1)
    xla = _xla(lambda a, xp: getattr(xp, op)(a, axis=-1), x)
    assert not np.allclose(xla, want, rtol=1e-4, atol=1e-4)  # silent before this check
    with pytest.raises(cv.ReplayError, match=VAR.format(op=op, why="added pairwise",
                                                        fix=FIX64)):
        _on_jax(lambda a: getattr(np, op)(a, axis=-1), x)
    fixed = _on_jax(lambda a: getattr(np, op)(a, axis=-1, dtype=np.float64), x)
    assert np.allclose(fixed, getattr(np, op)(x, axis=-1, dtype=np.float64),
                       rtol=1e-12, atol=1e-12)


def test_the_leads_example_fails_at_the_node():
    """np.var(1e8 + rng.random(1000)) in float32 (dtype=np.float32 of float64 values: NumPy
    56.6, XLA 64.0; and of float32 values, whose exact variance is 0: both 64.0)."""
    x64 = 1e8 + np.random.default_rng(0).random(1000)
    with pytest.raises(cv.ReplayError, match=VAR.format(op="var", why="added pairwise",
                                                        fix=FIX64)):
        _on_jax(lambda a: np.var(a, dtype=np.float32), x64)
    with pytest.raises(cv.ReplayError, match=VAR.format(op="var", why="added pairwise",
                                                        fix=FIX64)):
        _on_jax(lambda a: np.var(a), x64.astype(np.float32))


def test_a_variance_numpy_adds_row_by_row_is_held_to_n_roundings():
    """Along axis 0 of a C-ordered (700, 50) float32 array NumPy adds one row after another:
    the mean's error is up to 700 roundings, and 1e3 + [0, 1) fails; along the last axis the
    same values replay."""
    x = _large((700, 50), 1e3)
    with pytest.raises(cv.ReplayError, match=VAR.format(
            op="var", why="of 700 terms added one row after another", fix=FIX64)):
        _on_jax(lambda a: np.var(a, axis=0), x)
    got = _on_jax(lambda a: np.var(a, axis=-1), x)
    assert np.allclose(got, np.var(x, axis=-1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["var", "std", "nanvar", "nanstd"])
def test_a_layer_norms_variance_replays(op):
    """GPT-2's layer norm: np.var(x, axis=-1, keepdims=True) of (64, 768) float32 values of
    about their spread (and a NaN for the nan forms, left out), ddof 0 and 1."""
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((64, 768)) * 3 + 0.5).astype(np.float32)
    if op.startswith("nan"):
        x[3, 5] = np.nan
    for ddof in (0, 1):
        def fn(a, ddof=ddof):
            return getattr(np, op)(a, axis=-1, keepdims=True, ddof=ddof)

        got = _on_jax(fn, x)
        assert np.allclose(got, fn(x), rtol=1e-4, atol=1e-4)


def test_nan_forms_complex_and_float16_variances():
    """A nanvar leaves its NaNs out of the count and the magnitudes (1e5 + [0, 1) with NaNs
    fails, as var does); a complex variance (refused by name unless arithmetic='xla', for the
    subnormals it may make) takes each part's mean error (its imaginary part 1e5 + [0, 1)
    fails; moderate values replay); a float16 variance whose sum overflows
    float16 in NumPy (inf there, a number in XLA) fails."""
    x = _large((4, 1000), 1e5)
    x[:, ::7] = np.nan
    with pytest.raises(cv.ReplayError, match=VAR.format(op="nanvar", why="added pairwise",
                                                        fix=FIX64)):
        _on_jax(lambda a: np.nanvar(a, axis=-1), x)
    rng = np.random.default_rng(4)
    z = (rng.random((4, 1000)) + 1j * (1e5 + rng.random((4, 1000)))).astype(np.complex64)
    with pytest.raises(cv.ReplayError, match=VAR.format(
            op="var", why="added pairwise", fix=FIX64)):
        _on_jax(lambda a: np.var(a, axis=-1), z, arithmetic="xla")
    w = (rng.standard_normal((4, 1000)) + 1j * rng.standard_normal((4, 1000))).astype(
        np.complex64)
    assert np.allclose(_on_jax(lambda a: np.std(a, axis=-1), w, arithmetic="xla"),
                       np.std(w, axis=-1),
                       rtol=1e-4, atol=1e-4)
    h = _large((50, 700), 1e3, np.float16)
    assert np.isinf(np.var(h, axis=-1)).all()
    with pytest.raises(cv.ReplayError, match=VAR.format(
            op="var", why="added pairwise", fix=r", or compute in float64 \(dtype=np\.float64\)")):
        _on_jax(lambda a: np.var(a, axis=-1), h)
    small = _large((50, 700), 1.0, np.float16)
    assert np.allclose(_on_jax(lambda a: np.var(a, axis=-1), small), np.var(small, axis=-1),
                       rtol=1e-2, atol=1e-1)
