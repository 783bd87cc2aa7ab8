"""Issue 25: every failure a capviz error, and what NumPy computes computed on every engine.

Each raw error the differential harness found (tests/differential) has a test here of what it
does now: computed as eager NumPy computes it on NumPy, JAX and Dask, or refused by name with
the user's line. The silent classes of the engines have their regression tests in
tests/test_engine_silent.py.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry

ENGINES = [name for name, module in (("numpy", "numpy"), ("jax", "jax"), ("dask", "dask"))
           if importlib.util.find_spec(module) is not None]
RNG = np.random.default_rng(25)
M = RNG.standard_normal((3, 4))


def replays_as_eager(fn, *arrays, backends=ENGINES):
    """Capture ``fn`` on ``arrays``' specs and check each backend's replay against eager NumPy:
    bit for bit, or within the backend's declared tolerance for float results."""
    expected = fn(*[a.copy() for a in arrays])
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    for name in backends:
        got = graph.replay(dict(zip(graph.inputs, arrays)), backend=name, to_numpy=True)
        backend = registry.get(name)
        for want, key in zip(expected, graph.outputs):
            want = np.asarray(want)
            have = np.asarray(got[key])
            assert (have.dtype, have.shape) == (want.dtype, want.shape), (name, key)
            if backend.exact or want.dtype.kind not in "fc":
                assert have.tobytes() == np.ascontiguousarray(want).tobytes(), (name, key)
            else:
                rtol, atol = backend.tolerance_for(want.dtype)
                np.testing.assert_allclose(have, want, rtol=rtol, atol=atol, err_msg=name)
    return graph


# --- ufunc.at with any index -------------------------------------------------------------------


@pytest.mark.parametrize("index", [slice(1, 3), None, Ellipsis, 2, (0, 1), (slice(None), 2),
                                   (np.array([0, 2, 0]), np.array([1, 1, 1])),
                                   ([0, 0], slice(1, None)), (Ellipsis, [3, 3, 0])],
                         ids=repr)
def test_ufunc_at_takes_every_index_numpy_takes(index):
    def fn(x):
        y = x * 1.0
        np.add.at(y, index, 1.5)
        np.multiply.at(y, index, -2.0)
        return y

    graph = replays_as_eager(fn, M)
    assert [n.op for n in graph.ops].count("advanced_ufunc_at") == 2


def test_ufunc_at_with_tensors_in_a_tuple_index_accumulates_repeats():
    def fn(x, i):
        y = np.zeros_like(x)
        np.add.at(y, (i, i + 1), x[0, :3])
        np.subtract.at(y, (slice(None), i), 1.0)
        return y

    replays_as_eager(fn, M, np.array([0, 2, 0]))


def test_ufunc_at_with_a_tensor_index_out_of_bounds_fails_at_the_node():
    def fn(x, i):
        y = x * 1.0
        np.add.at(y, (i, 0), 1.0)
        return y

    graph = cv.capture(fn, cv.spec((3, 4), "float64"), cv.spec((2,), "int64"))
    for name in ENGINES:
        with pytest.raises(cv.ReplayError, match=r"advanced_ufunc_at.*test_engine_fidelity\.py"):
            graph.replay({"x": M, "i": np.array([0, 5])}, backend=name)


def test_ufunc_at_with_a_boolean_tensor_index_is_refused_by_name():
    def fn(x):
        y = x * 1.0
        np.add.at(y, (x > 0, 0), 1.0)
        return y

    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"(?s)test_engine_fidelity\.py:\d+ in fn: np\.add\.at with a "
                             r"boolean tensor in the index.*mask selects depend on its values"):
        cv.capture(fn, cv.spec((3, 4), "float64"))


def test_integer_ufunc_at_of_float_values_is_numpys_or_refused_on_jax():
    def fn(x):
        y = x * 1
        np.add.at(y, [0, 1, 1], 0.5)  # NumPy: each update in float64, truncated back
        return y

    x = np.array([1, -1, 5])
    replays_as_eager(fn, x, backends=[b for b in ENGINES if b != "jax"])
    if "jax" in ENGINES:
        graph = cv.capture(fn, cv.spec((3,), "int64"))
        with pytest.raises(cv.UnsupportedOperationError,
                           match=r"np\.add\.at of float64 values into a int64 array: NumPy "
                                 r"computes each update in float64"):
            graph.replay({"x": x}, backend="jax")


# --- reductions and products -------------------------------------------------------------------


MASK = np.array([True, False, True, True])


@pytest.mark.parametrize("fn", [
    lambda a: np.nansum(a, axis=1, where=MASK),
    lambda a: np.nanmean(a, axis=1, where=MASK),
    lambda a: np.nanstd(a, axis=1, where=MASK),
    lambda a: np.nanvar(a, where=MASK, ddof=1),
    lambda a: np.nanprod(a, axis=0, initial=2.0),
    lambda a: np.nansum(a, initial=1.5),
    lambda a: np.nanmax(a, axis=1, initial=-1.0),
    lambda a: np.nanmin(a, axis=0, initial=10.0, where=MASK),
    lambda a: np.nanmin(a[:0], axis=0, initial=10.0),
], ids=["nansum-where", "nanmean-where", "nanstd-where", "nanvar-where", "nanprod-initial",
        "nansum-initial", "nanmax-initial", "nanmin-initial-where", "nanmin-empty-initial"])
def test_nan_reductions_take_where_and_initial_on_every_engine(fn):
    a = M.copy()
    a[1, 2] = np.nan
    replays_as_eager(fn, a)


THREE = np.ones(3, bool)  # (an array made inside a capture would be a tensor)


def test_a_where_mask_that_does_not_broadcast_is_numpys_value_error():
    with pytest.raises(ValueError, match=r"nansum\(.*broadcast.*test_engine_fidelity"):
        cv.capture(lambda a: np.nansum(a, where=THREE), cv.spec((3, 4), "float64"))


def test_nanmin_of_an_empty_axis_without_initial_is_still_numpys_error():
    with pytest.raises(ValueError, match=r"zero-size array to reduction operation nanmin"):
        cv.capture(lambda a: np.nanmin(a, axis=0), cv.spec((0, 4), "float64"))


def test_einsum_with_a_size_one_contracted_axis_broadcasts_as_numpy():
    replays_as_eager(lambda a, b: np.einsum("cij,cjk->cik", a, b),
                     RNG.standard_normal((2, 3, 1)), RNG.standard_normal((2, 2, 4)))


def test_tensordot_with_list_of_lists_axes_runs_on_every_engine():
    replays_as_eager(lambda a, b: np.tensordot(a, b, axes=[[1, 0], [1, 0]]), M, M * 2)


@pytest.mark.parametrize("first", [True, False])
def test_dot_with_a_zero_d_operand_runs_on_every_engine(first):
    def fn(a, b):
        s = b.sum()
        return np.dot(s, a) if first else np.dot(a, s)

    replays_as_eager(fn, M, M)


# --- conversions NumPy accepts -----------------------------------------------------------------


def test_astype_none_is_float64_as_numpy_reads_it():
    graph = replays_as_eager(lambda a: a.astype(None), M.astype(np.float32))
    assert graph.nodes[-1].dtype == np.float64


@pytest.mark.parametrize("mode", [None, 0, 1, 2, "clip", "wrap"])
def test_put_takes_numpys_spellings_of_mode(mode):
    def fn(a):
        y = a * 1.0
        np.put(y, [1, 13], [5.0, 6.0], mode=mode)
        return y

    if mode in (None, 2):  # 'raise': index 13 of 12 elements fails as in NumPy
        with pytest.raises(IndexError):
            fn(M.copy())
        graph = cv.capture(fn, cv.spec((3, 4), "float64"))
        for name in ENGINES:
            with pytest.raises(cv.ReplayError, match=r"\(put\).*test_engine_fidelity\.py"):
                graph.replay({"a": M}, backend=name)
    else:
        replays_as_eager(fn, M)


def test_put_with_a_mode_numpy_refuses_is_numpys_value_error():
    def fn(a):
        y = a * 1.0
        np.put(y, [1], [5.0], mode="nope")
        return y

    with pytest.raises(ValueError, match="one of 'clip', 'raise', or 'wrap'"):
        fn(M.copy())
    with pytest.raises(ValueError, match="one of 'clip', 'raise', or 'wrap'"):
        cv.capture(fn, cv.spec((3, 4), "float64"))


def test_expand_dims_and_sum_take_a_zero_d_array_axis():
    replays_as_eager(lambda a: (np.expand_dims(a, np.array(0)), np.sum(a, axis=np.array(1))), M)


def test_two_numpy_scalar_examples_that_are_one_object_are_two_inputs():
    graph = cv.capture(lambda a, b: a ^ b, np.bool_(False), np.bool_(False))
    assert graph.inputs == ["a", "b"]
    got = graph.replay({"a": np.bool_(True), "b": np.bool_(False)})["out"]
    assert got == np.True_ ^ np.False_


# --- a 0-d operand: NumPy's ufunc reductions take axis 0 or -1; np.put into a NumPy scalar ------


@pytest.mark.parametrize("call", [
    lambda t: t.prod(axis=0, keepdims=True), lambda t: t.prod(0), lambda t: np.sum(t, -1),
    lambda t: t.max(0), lambda t: np.min(t, axis=-1, keepdims=True), lambda t: t.any(0),
    lambda t: np.all(t, 0), lambda t: t.argmax(0), lambda t: np.argmin(t, -1)])
def test_a_reduction_of_a_zero_d_operand_along_axis_0_is_numpys_on_every_engine(call):
    # it was the capture's AxisShapeError: "axis 0 is out of bounds for array of dimension 0"
    graph = replays_as_eager(call, np.array(3, np.int32))
    assert graph.nodes[-1].shape == ()


@pytest.mark.parametrize("call", [lambda t: t.prod(axis=1), lambda t: t.sum(axis=(0,)),
                                  lambda t: t.mean(0), lambda t: np.std(t, axis=-1)])
def test_a_reduction_of_a_zero_d_operand_along_another_axis_is_numpys_axis_error(call):
    with pytest.raises(np.exceptions.AxisError) as eager:
        call(np.array(3.0))
    with pytest.raises(np.exceptions.AxisError) as captured:
        cv.capture(call, cv.spec((), "float64"))
    assert str(eager.value) in str(captured.value)
    assert "test_engine_fidelity.py" in str(captured.value)


def _put_into_product(mode, index):
    def fn(x):
        y = x * 1  # a NumPy scalar in eager NumPy: np.put writes into a copy it drops
        np.put(y, index, [5, 6], mode=mode)
        return y

    return fn


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_put_into_a_numpy_scalar_leaves_it_unchanged_as_numpy_does(mode):
    # it was a bare TypeError: "cannot write into a NumPy scalar"
    x = np.array(7, np.uint32)
    assert _put_into_product(mode, [1, 3])(x) == 7
    graph = replays_as_eager(_put_into_product(mode, [1, 3]), x)
    assert [n.op for n in graph.nodes if n.kind == "op"] == ["multiply"]


def test_put_into_a_numpy_scalar_out_of_bounds_is_numpys_index_error():
    x = np.array(7, np.uint32)
    with pytest.raises(IndexError, match="index 1 is out of bounds for axis 0 with size 1"):
        _put_into_product("raise", [1, 3])(x)
    with pytest.raises(IndexError, match=r"index 1 is out of bounds for axis 0 with size 1"
                                         r"(.|\n)*test_engine_fidelity\.py"):
        cv.capture(_put_into_product("raise", [1, 3]), cv.spec((), "uint32"))
    replays_as_eager(_put_into_product("raise", [0]), x)


def test_put_into_a_numpy_scalar_with_a_tensor_index_and_mode_raise_is_refused_by_name():
    def fn(x, i):
        y = x * 1
        np.put(y, i, [5])
        return y

    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"np.put\(s, ind, v\) into a NumPy scalar s with a tensor index"
                             r"(.|\n)*mode='clip'"):
        cv.capture(fn, cv.spec((), "float64"), cv.spec((1,), "int64"))


# --- np.linalg.tensorsolve: NumPy's shape rule --------------------------------------------------


@pytest.mark.parametrize(("a_shape", "b_shape"), [((2, 0), (2, 0)), ((1, 1), (1, 1)),
                                                  ((2, 3, 6), (3, 2)), ((6, 2, 3), (6,))])
def test_tensorsolve_takes_every_shape_numpy_takes(a_shape, b_shape):
    # NumPy's rule: x has a.shape[-(a.ndim - b.ndim):], a's whole shape when b has as many axes,
    # and b only needs as many elements (the thorough profile's tensorsolve-161 of (2, 0)
    # operands was the capture's LinAlgShapeError); JAX's tensorsolve differs (issue 25, JAX)
    size = int(np.prod(a_shape[-(len(a_shape) - len(b_shape)):]))
    a = (RNG.standard_normal((size, size)) + 4 * np.eye(size)).reshape(a_shape)
    replays_as_eager(np.linalg.tensorsolve, a, RNG.standard_normal(b_shape),
                     backends=[b for b in ENGINES if b != "jax"])


@pytest.mark.parametrize(("a_shape", "b_shape", "error", "message"), [
    ((2, 0), (2,), ValueError, "solve1: Input operand 1 has a mismatch in its core dimension 0"),
    ((4, 6), (2, 2), np.linalg.LinAlgError, "Input arrays must satisfy the requirement"),
    ((3,), (3,), np.linalg.LinAlgError, "Input arrays must satisfy the requirement")])
def test_tensorsolve_refuses_what_numpy_refuses_with_numpys_error(a_shape, b_shape, error,
                                                                  message):
    with pytest.raises(error, match=message):
        np.linalg.tensorsolve(np.ones(a_shape), np.ones(b_shape))
    with pytest.raises(error, match=message):
        cv.capture(np.linalg.tensorsolve, cv.spec(a_shape, "float64"), cv.spec(b_shape, "float64"))
