"""Shape and dtype rules match NumPy exactly, without touching data."""

import numpy as np
import pytest

import capviz as cv
from capviz import ops


class M:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)


@pytest.mark.parametrize("a,b", [
    ((np.float32, (3, 4)), 0.5),
    ((np.float32, (3, 4)), 2),
    ((np.int8, (2,)), 3),
    ((np.uint8, (2,)), True),
    ((np.float32, (3, 1)), (np.float64, (4,))),
    ((np.int32, (5,)), (np.int64, (5,))),
    ((np.float16, ()), (np.int32, (2, 2))),
    ((np.bool_, (3,)), (np.bool_, (3,))),
    ((np.complex64, (2,)), 1.5),
])
@pytest.mark.parametrize("name", ["add", "multiply", "divide", "floor_divide", "power", "less",
                                  "maximum", "arctan2", "logaddexp", "remainder"])
def test_binary_ufunc_rules_match_numpy(name, a, b):
    def arr(x):
        return np.ones(x[1], x[0]) if isinstance(x, tuple) else x

    def meta(x):
        return M(x[1], x[0]) if isinstance(x, tuple) else x

    ufunc = getattr(np, name)
    try:
        with np.errstate(all="ignore"):
            expected = np.asarray(ufunc(arr(a), arr(b)))
    except TypeError:
        with pytest.raises(cv.ShapeError):
            ops.OPS[name].meta([meta(a), meta(b)], {})
        return
    shape, dtype = ops.OPS[name].meta([meta(a), meta(b)], {})
    assert (shape, dtype) == (expected.shape, expected.dtype)


def test_every_unary_and_binary_ufunc_is_in_the_table():
    for name in dir(np):
        u = getattr(np, name)
        if isinstance(u, np.ufunc) and u.nout == 1 and u.nin in (1, 2) and u.signature is None:
            assert u.__name__ in ops.OPS, u.__name__


def test_numpy2_scalar_rules():
    f32 = M((4,), np.float32)
    assert ops.OPS["multiply"].meta([f32, 0.5], {})[1] == np.float32
    assert ops.OPS["add"].meta([f32, M((4,), np.float64)], {})[1] == np.float64
    assert ops.OPS["add"].meta([f32, M((), np.float64)], {})[1] == np.float64


def test_broadcast_error_is_a_shape_error_naming_the_op_and_shapes():
    with pytest.raises(cv.ShapeError, match=r"add\(\(3, 4\), \(5,\)\)"):
        ops.OPS["add"].meta([M((3, 4), "f4"), M((5,), "f4")], {})


@pytest.mark.parametrize("a,b", [((2, 3), (3, 4)), ((3,), (3,)), ((5, 2, 3), (3,)), ((3,), (3, 7)),
                                 ((2, 1, 3, 4), (5, 4, 6))])
def test_matmul_shape(a, b):
    expected = np.matmul(np.ones(a), np.ones(b)).shape
    assert ops.OPS["matmul"].meta([M(a, "f4"), M(b, "f4")], {})[0] == expected


def test_matmul_mismatch():
    with pytest.raises(cv.ShapeError, match="core dimension mismatch"):
        ops.OPS["matmul"].meta([M((2, 3), "f4"), M((4, 5), "f4")], {})


@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "max", "min", "prod", "any",
                                  "all"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "float16", "uint8"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, True), ((0, 2), False),
                                           (-1, False)])
def test_reductions(name, dtype, axis, keepdims):
    x = np.ones((2, 3, 4), dtype)
    expected = np.asarray(getattr(np, name)(x, axis=axis, keepdims=keepdims))
    shape, dt = ops.OPS[name].meta([M(x.shape, dtype)], {"axis": axis, "keepdims": keepdims})
    assert (shape, dt) == (expected.shape, expected.dtype)


def test_reduction_bad_axis():
    with pytest.raises(cv.ShapeError, match="axis 3 is out of bounds"):
        ops.OPS["sum"].meta([M((2, 3), "f4")], {"axis": 3, "keepdims": False})


def test_structural_ops_on_huge_shapes_allocate_nothing():
    big = M((10**6, 10**6), "float32")
    assert ops.OPS["reshape"].meta([big], {"shape": (10**12,)})[0] == (10**12,)
    assert ops.OPS["transpose"].meta([big], {"axes": None})[0] == (10**6, 10**6)
    parts = ops.OPS["split"].meta([big], {"indices_or_sections": 4, "axis": 0})
    assert [p[0] for p in parts] == [(250000, 10**6)] * 4
    assert ops.OPS["getitem"].meta([big], {"index": (slice(None, None, 2), None)})[0] == \
        (500000, 1, 10**6)


def test_getitem_with_lists_and_ranges():
    x = M((5, 6), "f4")
    assert ops.OPS["getitem"].meta([x], {"index": ([1, 3], slice(1, 4))})[0] == (2, 3)


def test_concatenate_promotes():
    shape, dt = ops.OPS["concatenate"].meta([M((2, 3), "f4"), M((1, 3), "i4")], {"axis": 0})
    assert (shape, dt) == ((3, 3), np.float64)


def test_op_runs_on_an_array_namespace():
    add = ops.OPS["add"].bind(np)
    assert add is np.add
    assert ops.OPS["sum"].bind(np)(np.ones((2, 2)), axis=0, keepdims=False).tolist() == [2, 2]
