"""Issue 25 on JAX, the hostile review 3's finding 8: a sum within its own tolerance whose value
reaches an add or subtract that cancels (capviz/backends/cancelling.py finds them on the graph,
capviz/backends/jax/carried.py holds them). Every spelling of review 3's j3.py and j15.py, and
layer norm, standardising and batch norm written three ways: NumPy's bits, within the
tolerance, or a failure at the add or subtract with the user's line; never silent. A sum that
reaches no add or subtract keeps XLA's reduction."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.backends.jax.backend import x64

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

RTOL = ATOL = 1e-4  # the JAX backend's tolerance


def _near(offset, shape=(16, 768), dtype=np.float32, seed=0):
    return (offset + np.random.default_rng(seed).random(shape)).astype(dtype)


def _replay(fn, *arrays):
    graph = cv.capture(fn, *(cv.spec(a.shape, a.dtype) for a in arrays))
    feeds = dict(zip(graph.inputs, arrays))
    return np.asarray(graph.replay(feeds, backend="jax")[graph.outputs[0]]), fn(*arrays)


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), np.max(np.abs(got.astype(np.float64) - want))


def _ratio(got, want):
    """The largest difference over the tolerance."""
    wide = np.asarray(want).astype(np.float64)
    return float(np.max(np.abs(np.asarray(got).astype(np.float64) - wide)
                        / (ATOL + RTOL * np.abs(wide))))


SPELLINGS = {  # j15.py and j3.py: a sum, then a subtraction that cancels
    "x - x.mean(-1, keepdims=True)": lambda x: x - x.mean(-1, keepdims=True),
    "x - x.sum(-1, keepdims=True) / 768": lambda x: x - x.sum(-1, keepdims=True) / 768,
    "x - np.mean(x, axis=-1)[:, None]": lambda x: x - np.mean(x, axis=-1)[:, None],
    "x.mean(-1) - x[:, 0]": lambda x: x.mean(-1) - x[:, 0],
    "x - x.mean()": lambda x: x - x.mean(),
    "x - x.mean(-1).reshape(16, 1)": lambda x: x - x.mean(-1).reshape(16, 1),
    "-x.mean(-1, keepdims=True) + x": lambda x: -x.mean(-1, keepdims=True) + x,
    "x - np.sum(x, -1, keepdims=True) * (1 / 768)":
        lambda x: x - np.sum(x, -1, keepdims=True) * (1 / 768),
    "x.sum(-1) - 768 * 1000.5": lambda x: x.sum(-1) - np.float32(768 * 1000.5),
}


@pytest.mark.parametrize("offset", [1e3, 1e4])
@pytest.mark.parametrize("label", list(SPELLINGS))
def test_every_spelling_of_a_sum_then_a_cancelling_subtraction_is_numpys_bits(label, offset):
    """Silent before (j15: 1.22x the tolerance for the mean by hand and the indexed mean):
    the sum is computed in NumPy's order where it reaches the subtraction (always, or where a
    centring would leave the tolerance), its scalings rounded as NumPy's: the bits."""
    _same_bits(*_replay(SPELLINGS[label], _near(offset)))


def test_a_difference_of_two_sums_is_numpys_bits_or_fails_at_the_subtraction():
    """j15's ``x.sum(-1) - x[:, :384].sum(-1) * 2`` (123x the tolerance, silent before): the
    slice's sum has no program in NumPy's order (NumPy's layout of a slice is not followed),
    so its bound is carried to the subtraction, which fails there, naming the user's line;
    the same with the slice copied first is NumPy's bits."""
    x = _near(1e3)
    fn = lambda a: a.sum(-1) - a[:, :384].sum(-1) * 2  # noqa: E731
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    with pytest.raises(cv.ReplayError) as caught:
        graph.replay({graph.inputs[0]: x}, backend="jax")
    text = str(caught.value)
    assert "(subtract)" in text and "test_jax_cancel_reach.py" in text
    assert "np.subtract: its operand was added in XLA's order (np.sum" in text
    assert "replay with backend='numpy', or sum in float64 (dtype=np.float64)" in text
    half = x[:, :384].copy()
    _same_bits(*_replay(lambda a, b: a.sum(-1) - b.sum(-1) * 2, x, half))


def test_a_one_operand_einsums_sum_is_held_by_its_bound_at_the_subtraction():
    """``np.einsum('ij->i', x)`` is a sum (checked, no program in NumPy's order): its bound is
    carried to the centring, which fails there near 1e3 (1.83x the tolerance, silent before);
    in float64 it replays within the tolerance."""
    fn = lambda a: a - np.einsum("ij->i", a)[:, None] / a.shape[-1]  # noqa: E731
    x = _near(1e3, (40, 10))
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    with pytest.raises(cv.ReplayError, match=r"\(subtract\).*its operand was added in XLA's "
                       r"order \(np\.einsum"):
        graph.replay({graph.inputs[0]: x}, backend="jax")
    got, want = _replay(fn, x.astype(np.float64))
    assert _ratio(got, want) <= 1


def test_a_masked_means_centring_is_held_by_its_bound_at_the_subtraction():
    """``np.mean(x, -1, where=m, keepdims=True)`` (recorded as ``mean_where``, checked as a
    mean with ``where=``, no program in NumPy's order): its bound is carried to the centring."""
    fn = lambda a: a - np.mean(a, -1, where=a > 0, keepdims=True)  # noqa: E731
    x = _near(1e3, (40, 10))
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    with pytest.raises(cv.ReplayError, match=r"\(subtract\).*its operand was added in XLA's "
                       r"order \(np\.mean, within"):
        graph.replay({graph.inputs[0]: x}, backend="jax")
    got, want = _replay(fn, _near(0.0, (40, 10)))
    assert _ratio(got, want) <= 1


def test_the_quoted_fix_of_the_two_sums_replays_within_the_tolerance():
    x = _near(1e3)
    got, want = _replay(lambda a: a.sum(-1, dtype=np.float64)
                        - a[:, :384].sum(-1, dtype=np.float64) * 2, x)
    assert _ratio(got, want) <= 1


def test_a_variance_by_hand_is_within_the_tolerance():
    got, want = _replay(lambda x: ((x - x.mean(-1, keepdims=True)) ** 2).mean(-1), _near(1e3))
    assert _ratio(got, want) <= 1


def _layer_norm_keepdims(x):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + np.float32(1e-5))


def _layer_norm_by_hand(x):
    n = x.shape[-1]
    centred = x - x.sum(-1, keepdims=True) / n
    return centred / np.sqrt((centred * centred).sum(-1, keepdims=True) / n + np.float32(1e-5))


def _layer_norm_indexed(x):
    centred = x - np.mean(x, axis=-1)[:, None]
    return centred / np.std(x, axis=-1)[:, None]


def _standardise_keepdims(x):
    return (x - x.mean(0, keepdims=True)) / x.std(0, keepdims=True)


def _standardise_broadcast(x):
    return (x - x.mean(0)) / x.std(0)


def _standardise_by_hand(x):
    return (x - x.sum(0) / x.shape[0]) / np.sqrt(((x - x.mean(0)) ** 2).mean(0))


def _batch_norm_keepdims(x):
    axes = (0, 2, 3)
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True)
                                                       + np.float32(1e-5))


def _batch_norm_indexed(x):
    mean = x.mean((0, 2, 3))[None, :, None, None]
    return (x - mean) / np.sqrt(x.var((0, 2, 3))[None, :, None, None] + np.float32(1e-5))


def _batch_norm_reshaped(x):
    mean = x.sum((0, 2, 3)).reshape(1, -1, 1, 1) / (x.shape[0] * x.shape[2] * x.shape[3])
    return (x - mean) * (1 / np.sqrt(x.var((0, 2, 3), keepdims=True) + np.float32(1e-5)))


NORMS = {  # label: (program, shape, where it fails: None, or the node's op)
    "layer norm, keepdims": (_layer_norm_keepdims, (16, 768), None),
    "layer norm, by hand": (_layer_norm_by_hand, (16, 768), None),
    "layer norm, indexed": (_layer_norm_indexed, (16, 768), None),
    "standardise, keepdims": (_standardise_keepdims, (256, 8), "std"),
    "standardise, broadcast": (_standardise_broadcast, (256, 8), "std"),
    "standardise, by hand": (_standardise_by_hand, (256, 8), None),
    "batch norm, keepdims": (_batch_norm_keepdims, (8, 4, 6, 6), "var"),
    "batch norm, indexed": (_batch_norm_indexed, (8, 4, 6, 6), "var"),
    "batch norm, reshaped": (_batch_norm_reshaped, (8, 4, 6, 6), "var"),
}


@pytest.mark.parametrize("offset", [1e3, 1e4])
@pytest.mark.parametrize("label", list(NORMS))
def test_normalisations_spelled_three_ways_replay_within_the_tolerance_or_fail_at_a_node(
        label, offset):
    """Each centring is NumPy's bits (its mean in NumPy's order where it would leave the
    tolerance), so the normalised values are within it. A variance along a running axis (a
    column's, a batch norm's channel) is refused at its own node by the variances check (its
    mean's rounding moves it beyond the tolerance): a refusal at the node, never silent."""
    fn, shape, fails = NORMS[label]
    x = _near(offset, shape, seed=3)
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    if fails:
        with pytest.raises(cv.ReplayError, match=rf"failed at node %\d+ \({fails}\), recorded "
                           rf"at .*test_jax_cancel_reach\.py:\d+ in _\w+: np\.{fails}: "):
            graph.replay({graph.inputs[0]: x}, backend="jax")
        return
    got = np.asarray(graph.replay({graph.inputs[0]: x}, backend="jax")[graph.outputs[0]])
    assert _ratio(got, fn(x)) <= 1


@pytest.mark.parametrize("centring", [
    lambda a: a - a.mean(0, keepdims=True),
    lambda a: a - a.mean(0),
    lambda a: a - a.sum(0) / a.shape[0],
])
def test_a_columns_centring_is_numpys_bits(centring):
    """A standardisation's centring: the column mean NumPy adds row after row, in its order."""
    _same_bits(*_replay(centring, _near(1e4, (256, 8), seed=3)))


@pytest.mark.parametrize("centring", [
    lambda a: a - a.mean((0, 2, 3), keepdims=True),
    lambda a: a - a.mean((0, 2, 3))[None, :, None, None],
    lambda a: a - a.sum((0, 2, 3)).reshape(1, -1, 1, 1) / 288,
])
def test_a_batch_norms_centring_is_numpys_bits(centring):
    _same_bits(*_replay(centring, _near(1e4, (8, 4, 6, 6), seed=3)))


def test_the_layer_norms_centring_is_numpys_bits_in_each_spelling():
    x = _near(1e4, seed=4)
    for centring in (lambda a: a - a.mean(-1, keepdims=True),
                     lambda a: a - a.sum(-1, keepdims=True) / a.shape[-1],
                     lambda a: a - np.mean(a, axis=-1)[:, None]):
        _same_bits(*_replay(centring, x))


def test_a_sum_reaching_no_add_or_subtract_keeps_xlas_reduction():
    """The cheap path: a row sum that is only scaled (and softmax's, a divisor) is XLA's
    reduction, not NumPy's order (the bits differ here); the same sum subtracted is NumPy's."""
    x = (1 + np.random.default_rng(7).random((64, 4096))).astype(np.float32)
    with x64():
        xla = np.asarray(jax.jit(lambda a: jnp.sum(a, -1) * 2.0)(x)).astype(np.float32)
    want = x.sum(-1) * np.float32(2.0)
    assert not np.array_equal(xla, want)  # the two orders round otherwise on these values
    got, _ = _replay(lambda a: a.sum(-1) * np.float32(2.0), x)
    _same_bits(got, xla)
    y = np.ones(64, np.float32)
    _same_bits(*_replay(lambda a, b: a.sum(-1) * np.float32(2.0) - b, x, y))


def test_a_centring_within_the_tolerance_keeps_xlas_mean():
    """The branch of a centring: values near 100 keep XLA's mean (within the tolerance of
    every centred value), values near 1e4 take NumPy's."""
    fn = lambda a: a - a.mean(-1, keepdims=True)  # noqa: E731
    got, want = _replay(fn, _near(100))
    assert 0 < _ratio(got, want) <= 1
    _same_bits(*_replay(fn, _near(1e4)))


def test_a_product_by_a_tensor_on_the_path_is_numpys_bits():
    x = _near(1e3)
    w = np.random.default_rng(2).random((16, 1)).astype(np.float32) + 0.5
    _same_bits(*_replay(lambda a, b: a - a.mean(-1, keepdims=True) * b, x, w))
    _same_bits(*_replay(lambda a, b: a - a.sum(-1, keepdims=True) / b, x, w * 768))


def test_a_float64_and_a_complex_centring_are_within_the_tolerance_or_numpys_bits():
    """float64 near 1e8: XLA's sum, within the tolerance of each centred value (the branch
    keeps it); near 1e12 it would not be: NumPy's bits. A complex mean: NumPy's order."""
    fn = lambda a: a - a.sum(-1, keepdims=True) / 768  # noqa: E731
    got, want = _replay(fn, _near(1e8, dtype=np.float64))
    assert _ratio(got, want) <= 1
    _same_bits(*_replay(fn, _near(1e12, dtype=np.float64)))
    z = (_near(1e3) + 1j * _near(1e3, seed=1)).astype(np.complex64)
    _same_bits(*_replay(lambda a: a - a.mean(-1, keepdims=True), z))


def test_a_nan_mean_centring_is_held_by_its_bound_at_the_subtraction():
    """No program in NumPy's order for a nan form: its bound goes to the subtraction, which
    fails there near 1e3 (the centred values are 1e-4 of the mean) and replays within the
    tolerance near 1."""
    fn = lambda a: a - np.nanmean(a, -1, keepdims=True)  # noqa: E731
    x = _near(1e3)
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    with pytest.raises(cv.ReplayError, match=r"\(subtract\).*np\.subtract: its operand was "
                       r"added in XLA's order \(np\.nanmean"):
        graph.replay({graph.inputs[0]: x}, backend="jax")
    got, want = _replay(fn, _near(0.0))
    assert _ratio(got, want) <= 1


def test_a_float16_centring_is_held_by_its_bound_within_its_tolerance():
    """A float16 mean (no program in NumPy's order): added in float32, its bound, carried to
    the subtraction, is far inside float16's tolerance there (atol 0.1), and so is the result."""
    fn = lambda a: a - a.mean(-1, keepdims=True)  # noqa: E731
    for offset in (0.0, 1e3, 3e4):
        x = _near(offset, (8, 64), np.float16)
        graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
        got = np.asarray(graph.replay({graph.inputs[0]: x}, backend="jax")[graph.outputs[0]])
        wide = fn(x).astype(np.float64)
        assert np.all(np.abs(got.astype(np.float64) - wide) <= 1e-1 + 1e-2 * np.abs(wide))
