"""Issue 25 on JAX: a contraction whose partial sums may reach ``finfo.max`` fails at its node
(``capviz/backends/jax/checks.py``, *Contractions near overflow*). NumPy's BLAS and XLA add the
products in other orders, so which partial sum overflows differs: the thorough differential
profile (``python -m tests.differential --thorough --only np.matmul --backend jax``) had 5
silent cases (``nan`` against NumPy's ``-inf``, ``inf`` against ``1.3e308``), 0 after; einsum's
3 too. Below the limit (``K * max|A| * max|B| <= finfo.max / 4``) nothing overflows in any
order, and an infinity or NaN of an operand gives NumPy's value: those replay. The near-max
cases fail before the check (checked: silent ``inf``/``nan`` against NumPy's ``nan``/``inf``)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import capviz as cv

jax = pytest.importorskip("jax")

M64 = np.finfo(np.float64).max
M32 = np.finfo(np.float32).max


def _replay(fn, *arrays):
    graph = cv.capture(fn, *arrays)
    return graph.replay(dict(zip(graph.inputs, arrays)), backend="jax", to_numpy=True)["out"]


def _refused(fn, *arrays, op="matmul"):
    with pytest.raises(cv.ReplayError) as info:
        _replay(fn, *arrays)
    text = str(info.value)
    assert re.search(rf"node %\d+ \({re.escape(op)}\)", text), text
    assert "test_jax_contraction_overflow.py" in text  # the user's line
    assert f"a sum of products of {op} may reach finfo.max" in text
    assert "replay with backend='numpy'" in text
    return text


# the thorough profile's silent cases, cut down: NumPy nan, JAX inf; NumPy inf, JAX 5.04e306
NEAR_MAX = {
    "nan against inf": (np.array([[-0.681658222, M64, -1.0086177, -1.5]]),
                        np.array([[2.34583903], [1.00058704], [1.05992148], [M64]])),
    "inf against 5e306": (np.array([[-0.151599207, M64, -M64, 0.521539516]]),
                          np.array([[0.0], [-0.983944189], [-1.01196026], [0.465640127]])),
}


@pytest.mark.parametrize("columns", [1, 3])
@pytest.mark.parametrize("name", list(NEAR_MAX))
def test_a_matmul_near_float64_max_fails_at_its_node(name, columns):
    a, b = NEAR_MAX[name]
    text = _refused(lambda a, b: a @ b, a, np.hstack([b] * columns))
    assert "(4 terms" in text


SPELLINGS = {
    "matmul": lambda a, b: a @ b,
    "dot": lambda a, b: np.dot(a, b),
    "einsum": lambda a, b: np.einsum("ij,jk->ik", a, b),
    "tensordot": lambda a, b: np.tensordot(a, b, axes=1),
    "linalg.multi_dot": lambda a, b: np.linalg.multi_dot([a, b, np.eye(2, dtype=a.dtype)]),
    "vecdot": lambda a, b: np.vecdot(a, b.T),
    "inner": lambda a, b: np.inner(a, b.T),
}


@pytest.mark.parametrize("op", list(SPELLINGS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_every_contraction_near_max_fails(op, dtype):
    big = np.sqrt(np.finfo(dtype).max, dtype=np.float64) / 2  # K * big**2 = max / 2 > max / 4
    a = np.full((2, 2), big, dtype)
    b = np.full((2, 2), big, dtype)
    b[0, 0] = -big
    _refused(SPELLINGS[op], a, b, op=op)


@pytest.mark.parametrize("op", list(SPELLINGS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_below_the_limit_every_contraction_replays(op, dtype):
    big = np.sqrt(np.finfo(dtype).max, dtype=np.float64) / 4  # K * big**2 = max / 8
    a = np.full((2, 2), big, dtype)
    b = np.full((2, 2), big, dtype)  # no cancellation: exact in every order
    got = _replay(SPELLINGS[op], a, b)
    np.testing.assert_array_equal(got, SPELLINGS[op](a, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_infinities_and_nans_of_moderate_operands_replay_as_numpy(dtype):
    a = np.array([[1.0, np.inf, 2.0], [np.inf, -np.inf, 0.0], [np.nan, 1.0, 1.0],
                  [np.inf, 3.0, -1e30]], dtype)
    b = np.array([[1.0, 0.0], [2.0, 0.0], [-3.0, 1.0]], dtype)
    with np.errstate(all="ignore"):
        want = a @ b
    got = _replay(lambda a, b: a @ b, a, b)
    np.testing.assert_array_equal(got, want)  # inf, nan (inf - inf, inf * 0) alike


def test_a_constant_weight_near_max_is_measured_on_the_host():
    weight = np.full((4, 2), 1e300)

    def layer(x):
        return x @ weight

    x = np.full((3, 4), 1e8)
    _refused(layer, x)
    np.testing.assert_array_equal(_replay(layer, x / 1e8), (x / 1e8) @ weight)


def test_complex_parts_count_twice():
    # parts of 1e153 pass the complex check (below sqrt(finfo.max)); 2 * K * 1e306 decides
    z = np.full((1, 64), 1e153 + 1e153j)
    w = np.full((64, 1), 1e153 - 1e153j)
    text = _refused(lambda a, b: a @ b, z, w)
    assert "(128 terms" in text
    small = np.full((1, 8), 2.0 ** 70 * (1 + 1j))  # exact products and sums: 2**144
    other = np.full((8, 1), 2.0 ** 70 * (1 - 1j))
    np.testing.assert_array_equal(_replay(lambda a, b: a @ b, small, other), small @ other)


def test_float16_and_one_term_products_are_not_this_check():
    h = np.full((2, 8), 200.0, np.float16)
    got = _replay(lambda a, b: a @ b, h, h.T / 8)  # K * 200 * 25 = 40,000 > 65504 / 4
    np.testing.assert_array_equal(got, h @ (h.T / 8))
    a = np.full((3, 1), M64 / 2)  # one product a term: the same overflow in every order
    got = _replay(lambda a, b: a @ b, a, np.full((1, 2), 4.0))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, a @ np.full((1, 2), 4.0))


def test_a_huge_operand_times_a_tiny_one_replays_through_the_precise_program():
    # the fast program's elementwise test (each computed operand below sqrt(limit)) fails on
    # 1e200; the precise program's K * max|A| * max|B| = 4 passes: NumPy's values
    from capviz.backends.jax.backend import BACKEND

    a = np.full((2, 4), 1e200)
    b = np.full((4, 3), 1e-200)
    before = BACKEND.traces
    np.testing.assert_array_equal(_replay(lambda a, b: (a * 2) @ (b * 2), a, b),
                                  (a * 2) @ (b * 2))
    assert BACKEND.traces == before + 2  # the fast program, then the precise one


def test_a_float16_einsum_whose_partial_sums_overflow_fails():
    # NumPy rounds einsum's float16 partial sums as it adds: 40000 + 40000 is inf there, and
    # inf - 40000 stays inf; XLA adds in float32 and gave 4e4 (review 7, finding 15: silent)
    a = np.array([[40000, 40000, -40000, 1]], np.float16)
    b = np.ones((4, 2), np.float16)
    with pytest.raises(cv.ReplayError) as info:
        _replay(lambda a, b: np.einsum("ik,kj->ij", a, b), a, b)
    text = str(info.value)
    assert re.search(r"node %\d+ \(einsum\)", text), text
    assert "test_jax_contraction_overflow.py" in text
    assert "a float16 partial sum of einsum may pass 65504" in text
    assert "replay with backend='numpy'" in text


def test_a_float16_einsum_far_from_overflow_replays():
    a = np.full((3, 64), 16.0, np.float16)  # K * max * max = 16,384 but |A| @ |B| = 1,024
    b = np.full((64, 2), 1.0, np.float16)
    np.testing.assert_array_equal(_replay(lambda a, b: np.einsum("ik,kj->ij", a, b), a, b),
                                  np.einsum("ik,kj->ij", a, b))


def _fast_program_reductions(fn, *arrays):
    """The primitives of the fast program of ``fn`` on ``arrays`` (traced once, replayed)."""
    import jax

    from capviz.backends.jax.backend import _ZERO, BACKEND, x64
    from capviz.backends.jax.layouts import C

    graph = cv.capture(fn, *arrays)
    compiled = graph.compile(backend="jax")
    jax.block_until_ready(compiled(*arrays))
    program = BACKEND._compiled[graph.replay_cache["jax"][2]]
    with x64(), jax.default_matmul_precision("highest"):
        closed = jax.make_jaxpr(program._fn.__wrapped__, static_argnums=(4, 5, 6))(
            tuple(arrays), program.constants, None, _ZERO, False, (C,) * len(arrays), False)
    return [str(e.primitive) for e in closed.jaxpr.eqns]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_the_fast_program_poisons_a_real_operand_past_its_share(dtype, monkeypatch):
    # the fast test of each computed operand is a NaN where it fails (a select XLA fuses into
    # the operand), not a mask and-ed with the others of its shape and reduced at the end: two
    # reductions fewer (one per operand's shape) than with every share test merged, and one
    # NaN test where the product leaves the program
    from capviz.backends.jax import checks

    a = np.full((2, 4), 1.5, dtype)
    b = np.full((4, 3), 0.5, dtype)
    found = _fast_program_reductions(lambda a, b: (a * 2) @ (b * 2), a, b)
    monkeypatch.setattr(checks, "PROPAGATES", {})  # no op carries a NaN: the masks merged
    merged = _fast_program_reductions(lambda a, b: (a * 2) @ (b * 2), a, b)
    assert (found.count("reduce_and"), found.count("reduce_or")) == (
        merged.count("reduce_and") - 2, merged.count("reduce_or") + 1), (found, merged)


@pytest.mark.parametrize("read", ["compare", "argmax", "integer", "where"])
def test_a_product_near_max_read_by_an_op_that_drops_nan_still_fails(read):
    # the poisoned operand's NaN reaches the product's result; an op that does not carry a
    # NaN (a comparison, argmax, a cast to an integer, a choice) tests its operand first
    big = np.sqrt(M64) / 2  # K * big**2 = max / 2 > max / 4
    a = np.full((2, 2), big)
    b = np.full((2, 2), big)
    b[0, 0] = -big
    reads = {"compare": lambda a, b: (a @ b) > 0,
             "argmax": lambda a, b: np.argmax(a @ b, axis=1),
             "integer": lambda a, b: np.sign(a @ b).astype(np.int64),
             "where": lambda a, b: np.where(a[:, :1] > 0, a @ b, 0.0)}
    _refused(reads[read], a, b)
