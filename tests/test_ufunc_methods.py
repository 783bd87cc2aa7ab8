"""``np.<ufunc>.reduce``, ``.accumulate`` and ``.outer`` on capture tensors: each capture
replays bit for bit as eager NumPy computes (same dtype and shape, over several dtypes and
shapes, empty and 0-d included), NumPy's errors are raised at capture as NumPy's types, and
what capture cannot honour (``reduceat``, ``where=``, ``out=`` an ndarray) is refused at the
user's line with the rewrite. The other backends run the ops through the contract suite's
examples (tests/helpers/op_examples.py); a few checks here name them directly."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import capviz as cv

RNG = np.random.default_rng(2026_12_01)
HERE = "test_ufunc_methods.py"

DTYPES = ["float64", "float32", "float16", "int8", "int32", "uint8", "int64", "bool",
          "complex64"]
SHAPES = [(5,), (3, 4), (2, 3, 4), (0,), (0, 3), (3, 0), ()]


def _values(shape: tuple, dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return RNG.integers(0 if dt.kind == "u" else -4, 5, shape).astype(dt)
    a = RNG.standard_normal(shape) * 3
    if dt.kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    return np.asarray(a).astype(dt)


def _eager(fn, arrays):
    with np.errstate(all="ignore"):
        try:
            return fn(*[a.copy() for a in arrays]), None
        except Exception as err:  # compared with the capture's error below
            return None, err


def replay_equals_eager(fn, *arrays, backend: str = "numpy"):
    """Capture ``fn``, replay on ``backend``; bit-identical to eager NumPy (or, when eager
    NumPy raises, the capture raises the same type and message)."""
    eager, error = _eager(fn, arrays)
    if error is not None:
        # NumPy words a missing loop two ways, depending on its dispatch cache (what ran
        # before in the process): "No loop matching the specified signature..." or "ufunc
        # 'equal' did not contain a loop with signature matching types..."
        # (a private TypeError subclass, _UFuncNoLoopError, in the second form: the capture's
        # error is catchable as the public type, TypeError)
        message = r"(?i)loop" if "loop" in str(error) else re.escape(str(error))
        public = TypeError if isinstance(error, TypeError) else type(error)
        with pytest.raises(public, match=message):
            cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
        return None
    graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    with np.errstate(all="ignore"):
        got = graph.replay(dict(zip(graph.inputs, [a.copy() for a in arrays])), backend=backend,
                           to_numpy=True)
    out = np.asarray(got["out"])
    eager = np.asarray(eager)
    assert (out.dtype, out.shape) == (eager.dtype, eager.shape)
    if backend == "numpy" or eager.dtype.kind not in "fc":
        assert np.ascontiguousarray(out).tobytes() == np.ascontiguousarray(eager).tobytes()
    else:
        np.testing.assert_allclose(out, eager, rtol=1e-5, atol=1e-6, equal_nan=True)
    return graph


# --- the reproducer of the hostile review -------------------------------------------------------


def test_drawdown_and_the_reviewed_calls_replay_as_eager():
    def drawdown(p):
        peak = np.maximum.accumulate(p)
        return (p - peak) / peak

    graph = replay_equals_eager(drawdown, np.array([1.0, 3.0, 2.0, 4.0, 1.0]))
    assert graph.ops[0].op == "ufunc_accumulate"
    assert graph.ops[0].params["ufunc"] == "maximum"
    replay_equals_eager(lambda x: np.add.accumulate(x), np.arange(4.0))
    replay_equals_eager(lambda x: np.multiply.outer(x, x), np.arange(3.0))
    replay_equals_eager(lambda a, b: np.subtract.outer(a, b), np.arange(3.0), np.arange(4.0))
    replay_equals_eager(lambda x: np.logical_or.reduce(x, axis=1), _values((3, 4), "bool"))
    replay_equals_eager(lambda x: np.add.reduce(x), _values((3, 4), "int32"))


# --- every method over dtypes and shapes --------------------------------------------------------

REDUCE_UFUNCS = ["add", "multiply", "maximum", "minimum", "subtract", "logical_or",
                 "logical_and", "bitwise_xor", "fmax", "true_divide", "equal"]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ufunc", REDUCE_UFUNCS)
def test_reduce_replays_as_eager(ufunc, dtype, shape):
    u = getattr(np, ufunc)
    x = _values(shape, dtype)
    replay_equals_eager(lambda a: u.reduce(a), x)
    replay_equals_eager(lambda a: u.reduce(a, axis=-1, keepdims=True), x)
    replay_equals_eager(lambda a: u.reduce(a, axis=None), x)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ufunc", REDUCE_UFUNCS)
def test_accumulate_replays_as_eager(ufunc, dtype, shape):
    u = getattr(np, ufunc)
    x = _values(shape, dtype)
    replay_equals_eager(lambda a: u.accumulate(a), x)
    replay_equals_eager(lambda a: u.accumulate(a, axis=-1), x)


@pytest.mark.parametrize("shapes", [((3,), (4,)), ((2, 3), (4,)), ((0,), (3,)), ((), (3,)),
                                    ((), ()), ((2,), (0, 2))], ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "uint8", "bool"])
@pytest.mark.parametrize("ufunc", ["subtract", "multiply", "add", "greater", "power",
                                   "arctan2", "floor_divide", "logical_xor"])
def test_outer_replays_as_eager(ufunc, dtype, shapes):
    u = getattr(np, ufunc)
    a, b = _values(shapes[0], dtype), _values(shapes[1], dtype)
    if ufunc == "power" and b.dtype.kind == "i":
        b = np.asarray(np.abs(b))  # NumPy raises on a negative integer power when it meets
        # the value; np.abs of a 0-d array is a NumPy scalar, which a 0-d input refuses
    replay_equals_eager(lambda x, y: u.outer(x, y), a, b)


def test_keywords_dtype_initial_axis_tuple_keepdims():
    x = _values((3, 4, 2), "int8")
    replay_equals_eager(lambda a: np.add.reduce(a, axis=(0, 2), dtype=np.int16), x)
    replay_equals_eager(lambda a: np.add.reduce(a, 1, np.float32, None, True, 5), x)
    replay_equals_eager(lambda a: np.maximum.reduce(a, axis=1, initial=np.int8(3)), x)
    replay_equals_eager(lambda a: np.maximum.reduce(a, axis=(), keepdims=True), x)
    replay_equals_eager(lambda a: np.add.accumulate(a, 2, "float16"), x)
    f = _values((0, 3), "float32")
    replay_equals_eager(lambda a: np.maximum.reduce(a, initial=-np.inf), f)


def test_a_mixed_operand_is_converted_as_numpy_converts_it():
    x = _values((3,), "float32")
    other = _values((4,), "float64")
    replay_equals_eager(lambda a: np.subtract.outer(a, other), x)
    replay_equals_eager(lambda a: np.subtract.outer(2.0, a), x)  # 2.0 a float64 array
    replay_equals_eager(lambda a: np.add.outer(a, [1, 2]), _values((2,), "uint8"))
    graph = replay_equals_eager(lambda a: np.subtract.outer(a, -1), _values((2,), "uint8"))
    assert graph.ops[-1].dtype == np.int64


# --- NumPy's errors at capture ------------------------------------------------------------------


@pytest.mark.parametrize("fn, kind, message", [
    (lambda a: np.maximum.reduce(a), ValueError, "zero-size array to reduction operation "
                                                 "maximum which has no identity"),
    (lambda a: np.add.reduce(a, axis=2), np.exceptions.AxisError, "axis 2 is out of bounds"),
    (lambda a: np.subtract.reduce(a, axis=(0, 1)), ValueError, "not reorderable"),
    (lambda a: np.less.reduce(a, axis=1), TypeError, "loop"),  # NumPy words it two ways
    (lambda a: np.add.accumulate(a, axis=None), ValueError, "does not allow multiple axes"),
])
def test_numpy_errors_are_raised_at_capture_as_numpy_types(fn, kind, message):
    x = np.zeros((0, 3))
    with pytest.raises(kind, match=re.escape(message)):
        fn(x)
    with pytest.raises(kind, match=re.escape(message)) as captured:
        cv.capture(fn, cv.spec(x.shape, x.dtype))
    assert isinstance(captured.value, cv.CapvizError)


@pytest.mark.parametrize("fn, kind, message", [
    (lambda a: np.sin.reduce(a), ValueError, "reduce only supported for binary functions"),
    (lambda a: np.divmod.reduce(a), ValueError, "functions returning a single value"),
    (lambda a: np.sin.outer(a, a), ValueError, "only supported for binary functions"),
    (lambda a: np.matmul.reduce(a), RuntimeError, "Reduction not defined"),
])
def test_numpy_checks_made_before_dispatch_raise_as_in_eager(fn, kind, message):
    x = np.zeros((3, 3))
    with pytest.raises(kind, match=message):
        fn(x)
    with pytest.raises(kind, match=message):
        cv.capture(fn, cv.spec(x.shape, x.dtype))


def test_accumulate_of_a_0d_tensor_raises_numpys_type_error():
    with pytest.raises(TypeError, match="cannot accumulate on a scalar"):
        cv.capture(lambda a: np.add.accumulate(a), cv.spec((), "float64"))


def test_initial_that_does_not_fit_raises_as_numpy():
    fn = lambda a: np.add.reduce(a, initial=-1)  # noqa: E731
    with pytest.raises(OverflowError):
        fn(np.zeros(3, np.uint8))
    with pytest.raises(OverflowError):
        cv.capture(fn, cv.spec((3,), "uint8"))


# --- refusals at the user's line ----------------------------------------------------------------


def _line_of(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def test_reduceat_is_refused_with_the_slices_rewrite():
    def fn(a):
        return np.add.reduceat(a, [0, 2])  # reduceat-line

    with pytest.raises(cv.UnsupportedOperationError, match=r"np\.add\.reduceat") as err:
        cv.capture(fn, cv.spec((5,), "float64"))
    assert f"{HERE}:{_line_of('# reduceat-line')}" in str(err.value)
    assert "np.add.reduce(a[i:j])" in str(err.value)


def test_where_is_refused_with_the_mask_rewrite():
    mask = np.array([True, False, True])
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"np\.logaddexp\.reduce\(\.\.\., where=\.\.\.\)") as err:
        cv.capture(lambda a: np.logaddexp.reduce(a, where=mask), cv.spec((3,), "float64"))
    assert HERE in str(err.value)
    assert "Fix: write np.logaddexp.reduce(np.where(mask, a, fill), ...) with fill the " \
           "ufunc's identity, -inf." in str(err.value)


def test_where_of_a_reduce_is_refused_with_the_reduction_that_records_it():
    mask = np.array([[True, False, True], [False, True, True]])
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"np\.add\.reduce\(\.\.\., where=\.\.\.\)") as err:
        cv.capture(lambda a: np.add.reduce(a, where=mask), cv.spec((2, 3), "float64"))
    assert str(err.value).splitlines()[-1] == (
        "Fix: write np.sum(a, axis=0, where=mask), the same reduction, recorded with its mask.")
    x = np.random.default_rng(0).standard_normal((2, 3))
    graph = cv.capture(lambda a: np.sum(a, axis=0, where=mask), x)
    assert graph.replay({"a": x})["out"].tobytes() == np.add.reduce(x, where=mask).tobytes()


def test_an_unknown_keyword_of_outer_is_refused_by_name():
    with pytest.raises(cv.UnsupportedOperationError, match=r"np\.add\.outer\(\.\.\., dtype="):
        cv.capture(lambda a: np.add.outer(a, a, dtype=np.float32), cv.spec((3,), "float64"))


def test_out_an_ndarray_is_refused_in_a_capture():
    buf = np.zeros(4)
    with pytest.raises(cv.UnsupportedOperationError,
                       match=rf"(?s){HERE}.*np\.add\.accumulate\(\.\.\., out=ndarray\)"):
        cv.capture(lambda a: np.add.accumulate(a, out=buf), cv.spec((4,), "float64"))


# --- out= a tensor ------------------------------------------------------------------------------


def test_out_a_tensor_of_the_results_type_is_recorded():
    def fn(a):
        z = np.zeros_like(a)
        y = np.add.accumulate(a, out=z)
        r = np.zeros_like(a[:1])
        np.maximum.reduce(a, keepdims=True, out=r)
        w = np.zeros_like(np.multiply.outer(a, a))
        np.subtract.outer(a, a, out=w)
        return y + r + w.sum(axis=0) + z

    graph = replay_equals_eager(fn, _values((4,), "float64"))
    assert "into" in [n.op for n in graph.ops]


def test_out_of_another_dtype_is_refused_with_the_assignment_rewrite():
    def fn(a):
        z = np.zeros_like(a, dtype=np.float32)
        return np.add.accumulate(a, out=z)

    with pytest.raises(cv.UnsupportedOperationError, match=r"out is float32\[4\] but the "
                                                           r"result is float64\[4\]"):
        cv.capture(fn, cv.spec((4,), "float64"))


# --- eager tensors, files, backends -------------------------------------------------------------


def test_eager_tensors_run_the_methods():
    p = np.array([1.0, 3.0, 2.0, 4.0])
    t = cv.tensor(p, device=cv.Device("numpy"))
    assert np.array_equal(np.maximum.accumulate(t).numpy(), np.maximum.accumulate(p))
    assert np.array_equal(np.subtract.outer(t, p).numpy(), np.subtract.outer(p, p))
    buf = np.zeros(4)
    np.add.accumulate(t, out=buf)  # an eager tensor's value written into the ndarray
    assert np.array_equal(buf, np.add.accumulate(p))


def test_the_params_survive_a_save_and_load(tmp_path):
    def fn(a):
        return (np.add.reduce(a, axis=(0, 1), dtype=np.float32, keepdims=True, initial=0.5)
                + np.maximum.accumulate(a, axis=1).sum() + np.subtract.outer(a, 2.0).sum())

    x = _values((3, 4), "float64")
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    graph.save(tmp_path / "g.json")
    loaded = cv.load(tmp_path / "g.json")
    got = loaded.replay({"a": x})["out"]
    eager = fn(x)
    assert got.dtype == eager.dtype and got.tobytes() == eager.tobytes()


@pytest.mark.parametrize("backend", ["dask", "jax"])
def test_the_optional_backends_replay_the_methods(backend):
    pytest.importorskip({"dask": "dask.array", "jax": "jax"}[backend])
    x = _values((5, 4), "float64")
    i = _values((5, 4), "int32")
    b = _values((5, 4), "bool")
    replay_equals_eager(lambda a: np.maximum.accumulate(a), x, backend=backend)
    replay_equals_eager(lambda a: np.add.accumulate(a, axis=1), x, backend=backend)
    replay_equals_eager(lambda a: np.add.reduce(a, axis=None), i, backend=backend)
    replay_equals_eager(lambda a: np.multiply.reduce(a, axis=1, keepdims=True), i,
                        backend=backend)
    replay_equals_eager(lambda a: np.subtract.reduce(a, axis=1), x, backend=backend)
    replay_equals_eager(lambda a: np.subtract.accumulate(a), i, backend=backend)
    replay_equals_eager(lambda a: np.logical_or.reduce(a, axis=0), b, backend=backend)
    replay_equals_eager(lambda a: np.logical_xor.accumulate(a, axis=1), b, backend=backend)
    replay_equals_eager(lambda a: np.subtract.outer(a[0], a[:, 0]), x, backend=backend)
    replay_equals_eager(lambda a: np.floor_divide.outer(a[0], a[:, 1]), i, backend=backend)
    replay_equals_eager(lambda a: np.subtract.outer(2.0, a[0]), x, backend=backend)
    replay_equals_eager(lambda a: np.hypot.reduce(a, axis=1), x, backend=backend)  # identity 0
    replay_equals_eager(lambda a: np.add.reduce(a, initial=2), i, backend=backend)
    replay_equals_eager(lambda a: np.maximum.reduce(a[:0], axis=0, initial=1.5), x,
                        backend=backend)


def test_cupy_runs_its_own_methods_and_numpys_on_the_host_for_the_rest(monkeypatch):
    from helpers import fakecupy  # CuPy's reduce/accumulate: add and multiply, no initial=

    fakecupy.install(monkeypatch)
    x = _values((4, 5), "float64")

    def fn(a):
        z = np.zeros_like(a)
        np.maximum.accumulate(a, axis=1, out=z)  # into, through the host form
        return (np.maximum.accumulate(a) + np.add.reduce(a, axis=1, keepdims=True)
                + np.add.reduce(a, initial=2.0) + z + np.multiply.accumulate(a)
                + np.subtract.outer(a[0], a[:, 0]).T[:, :1] + np.logical_or.reduce(a > 0))

    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    got = graph.replay({"a": x}, backend="cupy", to_numpy=True)["out"]
    eager = fn(x)
    assert got.dtype == eager.dtype and got.shape == eager.shape
    np.testing.assert_allclose(got, eager, rtol=1e-12)


@pytest.mark.parametrize("fn, call", [(lambda a: np.power.reduce(a), "np.power.reduce"),
                                      (lambda a: np.arctan2.reduce(a), "np.arctan2.reduce")])
def test_jax_names_the_reductions_numpy_does_not_fold_left(fn, call):
    pytest.importorskip("jax")
    x = np.array([1.5, 0.7, 2.0])
    assert fn(x) != fn(np.array([fn(x[:2]), x[2]]))  # NumPy's loop: not op(op(a, b), c)
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype))
    with pytest.raises(cv.UnsupportedOperationError,
                       match=re.escape(call) + r" on the jax backend: .*not a left fold"):
        graph.replay({"a": x}, backend="jax")


# --- review 15: initial=None, axis=(k,), keepdims=np.True_, lists of tensors, non-fold loops ----


@pytest.mark.parametrize("backend", ["numpy", "jax", "dask"])
@pytest.mark.parametrize("dtype", ["float64", "int64", "float32", "uint8"])
def test_initial_none_means_no_initial_value_on_every_backend(backend, dtype):
    pytest.importorskip({"numpy": "numpy", "dask": "dask.array", "jax": "jax"}[backend])
    x = _values((4, 3), dtype)
    replay_equals_eager(lambda a: np.add.reduce(a, initial=None), x, backend=backend)
    replay_equals_eager(lambda a: np.maximum.reduce(a, axis=1, initial=None), x, backend=backend)
    replay_equals_eager(lambda a: np.subtract.reduce(a, axis=1, initial=None), x,
                        backend=backend)
    replay_equals_eager(lambda a: np.add.reduce(a[:, :1], axis=1, initial=None), x,
                        backend=backend)


def test_initial_none_keeps_a_negative_zero_and_refuses_an_empty_axis():
    x = np.array([-0.0, -0.0])
    graph = replay_equals_eager(lambda a: np.add.reduce(a, initial=None), x)
    assert np.signbit(graph.replay({"a": x})["out"])  # no identity added: -0.0 as NumPy
    with pytest.raises(ValueError, match=f"zero-size array.*{HERE}"):
        cv.capture(lambda a: np.add.reduce(a[:0], initial=None), cv.spec((2,), "float64"))


@pytest.mark.parametrize("backend", ["numpy", "jax", "dask"])
def test_accumulate_takes_a_one_axis_tuple_as_numpy_does(backend):
    pytest.importorskip({"numpy": "numpy", "dask": "dask.array", "jax": "jax"}[backend])
    x = _values((3, 4), "float64")
    graph = replay_equals_eager(lambda a: np.add.accumulate(a, axis=(0,)), x, backend=backend)
    assert graph.ops[-1].params["axis"] == 0  # recorded as the axis NumPy uses
    replay_equals_eager(lambda a: np.subtract.accumulate(a, axis=(-1,)), x, backend=backend)
    replay_equals_eager(lambda a: np.maximum.accumulate(a, axis=(1,)), _values((3, 4), "int8"),
                        backend=backend)


def test_accumulate_refuses_several_axes_as_numpy_does():
    with pytest.raises(ValueError, match=f"accumulate does not allow multiple axes.*{HERE}"):
        cv.capture(lambda a: np.add.accumulate(a, axis=(0, 1)), cv.spec((3, 4), "float64"))


@pytest.mark.parametrize("keepdims", [np.True_, np.False_, 1.0])
def test_keepdims_numpy_refuses_raises_numpys_type_error_at_capture(keepdims):
    x = np.arange(3.0)
    with pytest.raises(TypeError, match="integer") as eager:
        np.add.reduce(x, keepdims=keepdims)
    with pytest.raises(TypeError, match=re.escape(str(eager.value)) + f".*{HERE}"):
        cv.capture(lambda a: np.add.reduce(a, keepdims=keepdims), cv.spec(x.shape, x.dtype))


@pytest.mark.parametrize("keepdims", [True, 1, 0, np.int64(1), False])
def test_keepdims_integers_numpy_accepts_replay_as_eager(keepdims):
    replay_equals_eager(lambda a: np.add.reduce(a, axis=1, keepdims=keepdims),
                        _values((3, 4), "float32"))


@pytest.mark.parametrize("fn, rewrite", [
    (lambda a, b: np.maximum.reduce([a, b, a * 0.5]),
     "Fix: np.maximum.reduce(np.stack([a, b, a * 0.5]))"),
    (lambda a, b: np.logical_or.reduce([a > 0, b > 0]),
     "Fix: np.logical_or.reduce(np.stack([a > 0, b > 0]))"),
    (lambda a, b: np.add.reduce((a, b)), "Fix: np.add.reduce(np.stack((a, b)))"),
    (lambda a, b: np.add.accumulate([a, b]), "Fix: np.add.accumulate(np.stack([a, b]))"),
])
def test_a_ufunc_method_of_a_list_of_tensors_is_refused_with_the_stack_rewrite(fn, rewrite):
    spec = cv.spec((3,), "float64")
    with pytest.raises(cv.DataReadError, match=f"(?s){HERE}.*" + re.escape(rewrite)) as info:
        cv.capture(fn, spec, spec)
    assert "np.stack" in str(info.value)


@pytest.mark.parametrize("dtypes", [("float64", "float64"), ("float32", "int8"),
                                    ("float16", "uint8"), ("bool", "int32"),
                                    ("complex64", "float64")])
@pytest.mark.parametrize("shape", [(4,), (2, 3), (0,), ()], ids=str)
def test_the_stack_rewrite_replays_the_list_form_bit_for_bit(dtypes, shape):
    a, b = (_values(shape, dt) for dt in dtypes)
    with np.errstate(all="ignore"):
        eager = (np.add.reduce([a, b, a]), np.maximum.accumulate([b, a]),
                 np.multiply.reduce((a, b), axis=None))

    def rewritten(x, y):
        return (np.add.reduce(np.stack([x, y, x])), np.maximum.accumulate(np.stack([y, x])),
                np.multiply.reduce(np.stack((x, y)), axis=None))

    graph = cv.capture(rewritten, cv.spec(a.shape, a.dtype), cv.spec(b.shape, b.dtype))
    with np.errstate(all="ignore"):
        got = graph.replay({"x": a, "y": b})
    for name, want in zip(graph.outputs, eager):
        value = np.asarray(got[name])
        want = np.asarray(want)
        assert (value.dtype, value.shape) == (want.dtype, want.shape)
        assert value.tobytes() == want.tobytes()


def test_the_stack_rewrite_matches_a_list_with_python_scalars():
    a = np.array(3, np.int8)
    eager = np.add.reduce([a, 300, a])  # NumPy converts the list as np.stack does: int64
    graph = cv.capture(lambda x: np.add.reduce(np.stack([x, 300, x])), cv.spec((), "int8"))
    got = graph.replay({"x": a})["out"]
    assert got.dtype == eager.dtype and got.tobytes() == np.asarray(eager).tobytes()


def _layouts(x: np.ndarray) -> list:
    """``x``'s values in several memory layouts (C, Fortran, strided) and as column blocks."""
    return [x, np.asfortranarray(x), np.repeat(x, 2, axis=1)[:, ::2],
            np.ascontiguousarray(x.T).T]


def test_not_a_fold_lists_exactly_the_reductions_that_follow_the_layout():
    from capviz import ops
    from capviz.ops.ufunc_methods import NOT_A_FOLD

    found = set()
    for name, ufunc in ops.UFUNCS.items():
        if not (isinstance(ufunc, np.ufunc) and ufunc.nin == 2 and ufunc.nout == 1):
            continue
        for dtype in ["int8", "int32", "uint8", "float16", "float32", "float64", "complex128"]:
            x = _values((37, 5), dtype)
            for kwargs in ({}, {"dtype": np.float64}):
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # a complex operand cast to float64
                    try:
                        results = [ufunc.reduce(v, **kwargs) for v in _layouts(x)]
                        blocks = ufunc.reduce(x[:, :2], **kwargs)
                    except (TypeError, ValueError):
                        continue
                    results.append(np.concatenate([blocks, results[0][2:]]))
                rtol = 1e-2 if results[0].dtype == np.float16 else 1e-5
                first = results[0].astype(np.complex128)  # every result dtype, compared alike
                for r in results[1:]:
                    r = r.astype(np.complex128)
                    with np.errstate(all="ignore"):
                        same = (np.isclose(r, first, rtol=rtol, atol=0, equal_nan=True)
                                | (np.abs(r - first) <= rtol * (np.abs(first) + 1)))
                    if not np.all(same):
                        found.add(name)
    assert found == set(NOT_A_FOLD)


@pytest.mark.parametrize("backend", ["dask", "jax"])
@pytest.mark.parametrize("ufunc, dtype", [("arctan2", "float64"), ("power", "float32"),
                                          ("ldexp", "int32"), ("arctan2", "int8")])
def test_backends_refuse_the_reductions_numpy_does_not_fold_by_name(backend, ufunc, dtype):
    pytest.importorskip({"dask": "dask.array", "jax": "jax"}[backend])
    x = np.abs(_values((6, 5), dtype)) + 1
    fn = getattr(np, ufunc).reduce
    graph = cv.capture(lambda a: fn(a.T, axis=0), cv.spec(x.shape, x.dtype))
    np.testing.assert_array_equal(graph.replay({"a": x})["out"], fn(x.T, axis=0))
    # JAX refuses it while tracing (an UnsupportedOperationError naming the node); Dask when
    # its task runs (a ReplayError at the node)
    kind = cv.UnsupportedOperationError if backend == "jax" else cv.ReplayError
    with pytest.raises(kind, match=f"np.{ufunc}.reduce on the {backend} backend: "
                                   ".*not a left fold.*backend='numpy'"):
        graph.replay({"a": x}, backend=backend, **({"chunks": 2} if backend == "dask" else {}))


@pytest.mark.parametrize("chunks", [1, 2])
def test_dask_runs_the_folding_ufunc_methods_on_transposed_and_strided_operands(chunks):
    pytest.importorskip("dask.array")
    x = _values((6, 5), "float64")
    i = _values((6, 5), "int8")
    for fn, operand in [(lambda a: np.subtract.reduce(a.T * 1, axis=0), x),
                        (lambda a: np.hypot.reduce(a[:, ::2], axis=1), x),
                        (lambda a: np.subtract.accumulate(a.T[::2], axis=1), i),
                        (lambda a: np.floor_divide.reduce(a.T, axis=0, dtype=np.float64), i)]:
        graph = cv.capture(fn, cv.spec(operand.shape, operand.dtype))
        with np.errstate(all="ignore"):
            eager = fn(operand)
            got = graph.replay({"a": operand}, backend="dask", chunks=chunks, to_numpy=True)
        np.testing.assert_allclose(got["out"], eager, rtol=1e-12, equal_nan=True)
        assert got["out"].dtype == eager.dtype
