"""Advanced indexing with integer tensors inside a tuple index, and list indices holding tensors
(capviz/ops/advanced_index.py): reads and writes capture and replay bit for bit as eager
NumPy computes them, or raise NumPy's error at the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import IndexShapeError

HERE = "test_advanced_index.py"
RNG = np.random.default_rng(14)


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def replays_as_eager(fn, *arrays, backend="numpy"):
    """Capture ``fn`` on specs of ``arrays``, replay it, and check every output equals eager
    NumPy's bit for bit, with the same dtype and shape; returns the graph."""
    eager = _as_tuple(fn(*[a.copy() for a in arrays]))
    graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    got = graph.replay(dict(zip(graph.inputs, arrays)), backend=backend, to_numpy=True)
    assert len(graph.outputs) == len(eager)
    for name, want in zip(graph.outputs, eager):
        want = np.asarray(want)
        have = np.asarray(got[name])
        assert have.dtype == want.dtype, name
        assert have.shape == want.shape, name
        assert have.tobytes() == want.tobytes(), name
    return graph


def _values(shape, dtype):
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    return RNG.integers(-50, 50, shape).astype(dtype)


def _ops(graph):
    return [n.op for n in graph.ops]


DTYPES = ["float32", "float64", "int32", "int8"]


# --- reads --------------------------------------------------------------------------------------


def _cross_entropy_pick(logp, y):
    return logp[np.arange(len(y)), y]


def _two_tensors(x, y):
    return x[y, y[::-1]]


def _column_gather(x, y):
    return x[:, y]


def _row_gather_with_slice(x, y):
    return x[y, :], x[y, 1:3]


def _ellipsis_last(x, y):
    return x[..., y]


def _broadcast_index_arrays(x, y):
    return x[y[:, None], y]


def _pick_then_column(x, y):
    return x[np.arange(len(y)), y][:, None]


def _int_and_tensor(x, y):
    return x[0, y], x[-1, y[::-1]]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [_cross_entropy_pick, _two_tensors, _column_gather,
                                _row_gather_with_slice, _ellipsis_last, _broadcast_index_arrays,
                                _pick_then_column, _int_and_tensor])
def test_reads_replay_as_eager(fn, dtype):
    x = _values((4, 4), dtype)
    y = np.array([3, 0, 3, 1], np.int64)
    graph = replays_as_eager(fn, x, y)
    assert "advanced_index" in _ops(graph)


@pytest.mark.parametrize("idx_dtype", ["int64", "int32", "uint8", "int16"])
def test_any_integer_index_dtype_reads_as_eager(idx_dtype):
    x = _values((3, 5), "float64")
    y = np.array([4, 0, 2], idx_dtype)
    replays_as_eager(_cross_entropy_pick, x, y)
    replays_as_eager(_column_gather, x, y)


def _separated(x, i, j):
    return x[i, :, j]  # separated advanced indices: the broadcast axes go first


def _adjacent(x, i, j):
    return x[:, i, j]  # adjacent: the broadcast axes stay in place


def _newaxis_between(x, i, j):
    return x[i, None, j], x[None, i, 1:, j]


@pytest.mark.parametrize("fn", [_separated, _adjacent, _newaxis_between])
def test_separated_and_adjacent_advanced_indices_place_axes_as_numpy(fn):
    x = _values((3, 4, 5), "float32")
    i = np.array([[2], [0]], np.int64)
    j = np.array([1, 3, 2], np.int32)
    replays_as_eager(fn, x, i, j)


@pytest.mark.parametrize("shape, y", [
    ((0, 3), np.zeros(0, np.int64)),        # no rows, no labels
    ((3, 4), np.zeros(0, np.int64)),        # an empty index array
    ((3, 0), np.zeros(0, np.int64)),        # an empty axis, nothing selected from it
])
def test_empty_reads_replay_as_eager(shape, y):
    x = np.ones(shape, np.float64)
    replays_as_eager(_cross_entropy_pick, x, y)
    replays_as_eager(lambda x, y: x[y, :], x, y)


def test_zero_d_index_tensors_read_as_eager():
    def fn(x):
        p = np.argmax(x[:, 0])  # a NumPy scalar eagerly, a 0-d tensor in capture
        q = np.argmin(x[0])
        return x[p, q], x[p, 1:], x[1:, q], x[[p, 0]], x[[[p], [q]], [0, 1]]

    x = _values((4, 3), "float64")
    graph = replays_as_eager(fn, x)
    assert "advanced_index" in _ops(graph)


def test_a_read_is_a_copy_a_later_write_to_it_does_not_reach_the_source():
    def fn(x, y):
        r = x[:, y]
        r[0, 0] = 99.0
        s = x[y, 0:2]
        s += 1.0
        return x, r, s

    replays_as_eager(fn, _values((3, 4), "float64"), np.array([1, 1, 0], np.int64))


def _swap_through_a_view(a):
    p = np.argmax(a[:, 0])  # a NumPy scalar eagerly: a[p, :] is a view of a
    tmp = a[p, :]
    a[p, :] = a[0, :]
    a[0, :] = tmp  # eager: tmp already holds row 0 (the classic swap bug)
    return a, tmp


def _write_into_the_view(a):
    p = np.argmax(a[:, 0])
    row = a[p, 1:]
    row[0] = 100  # reaches a, as in eager
    row += 1
    return a, row


def _view_then_base_write(a):
    p = np.argmax(a[:, 0])
    q = np.argmin(a[0])
    col = a[..., q]
    r = a[p, None, :]
    a[p, q] = -5
    a *= 2
    return col, r


@pytest.mark.parametrize("fn", [_swap_through_a_view, _write_into_the_view,
                                _view_then_base_write])
def test_an_index_of_numpy_scalars_and_slices_is_a_view_as_in_eager(fn):
    for a in (_values((4, 3), "float64"), _values((3, 5), "int32")):
        a[2, 0] = a.max() + 1  # the pivot row p is 2, not 0
        replays_as_eager(fn, a)


def test_a_boolean_scalar_beside_numpy_scalar_indices_reads_a_copy_as_in_eager():
    def fn(a):
        p = np.argmax(a[:, 0])
        r = a[p, True, 1:]  # a boolean makes the index advanced: a copy
        a[p, 1] = 0
        return a, r

    a = _values((3, 3), "float64")
    a[1, 0] = a.max() + 1
    replays_as_eager(fn, a)


def test_a_zero_d_array_index_reads_a_copy_as_in_eager():
    def fn(a, p):
        r = a[p, :]  # p is a 0-d array eagerly: advanced indexing, a copy
        a[p, :] = 0
        return a, r

    replays_as_eager(fn, _values((3, 3), "float64"), np.array(1, np.int64))


# --- writes -------------------------------------------------------------------------------------


def _margins_zero(margins, y):
    margins[np.arange(len(y)), y] = 0
    return margins


def _dscores_minus_one(dscores, y):
    dscores[np.arange(len(y)), y] -= 1
    return dscores


def _columns_set(x, y, v):
    x[:, y] = v[:, :1]
    return x


def _add_at_positions(x, y, v):
    x[y, 2] += v[0, :len(y)]  # repeated rows: read, add, write back; the last write wins
    return x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [_margins_zero, _dscores_minus_one])
def test_writes_with_arange_and_labels_replay_as_eager(fn, dtype):
    replays_as_eager(fn, _values((5, 3), dtype), np.array([2, 0, 0, 1, 2], np.int64))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [_columns_set, _add_at_positions])
def test_writes_of_tensor_values_with_repeated_indices_replay_as_eager(fn, dtype):
    x = _values((4, 4), dtype)
    y = np.array([1, 3, 1], np.int64)
    # a float value set into an integer target casts unsafely; += keeps NumPy's same_kind rule
    v = _values((4, 4), "float64" if fn is _columns_set else dtype)
    graph = replays_as_eager(fn, x, y, v)
    assert "advanced_index_put" in _ops(graph)


def test_an_augmented_write_that_numpy_cannot_cast_raises_numpys_error():
    x, y, v = _values((4, 4), "int32"), np.array([1, 3, 1]), _values((4, 4), "float64")
    with pytest.raises(TypeError, match="same_kind"):
        _add_at_positions(x, y, v)
    with pytest.raises(TypeError, match=rf"(?s)same_kind.*{HERE}:\d+"):
        cv.capture(_add_at_positions, cv.spec(x.shape, x.dtype), cv.spec(y.shape, y.dtype),
                   cv.spec(v.shape, v.dtype))


def test_duplicate_positions_last_write_wins_and_augmented_writes_do_not_accumulate():
    def fn(x, i):
        x[i, i] = np.array([1.0, 2.0, 3.0])
        x[i, 0] += 10.0
        return x

    graph = replays_as_eager(fn, np.zeros((3, 3)), np.array([2, 2, 2], np.int64))
    got = graph.replay({"x": np.zeros((3, 3)), "i": np.array([2, 2, 2])}, to_numpy=True)
    assert got["out"][2, 2] == 3.0 and got["out"][2, 0] == 10.0


def test_ndarray_and_python_scalar_values_are_written_as_eager():
    def fn(x, y):
        x[y, 0] = np.array([7, 8, 9], np.int64)  # an ndarray value: a recorded constant
        x[y, 1] = 2.5
        x[y, 2] = np.int64(2**40 + 3)  # a NumPy scalar in a fancy write casts unsafely
        return x

    replays_as_eager(fn, _values((3, 3), "int32"), np.array([2, 0, 1], np.int64))
    replays_as_eager(fn, _values((3, 3), "float32"), np.array([2, 0, 1], np.int64))


def test_list_index_with_tensors_swaps_pivot_rows_as_eager():
    def pivot(a):
        a = a.copy()
        k = 0
        p = np.argmax(np.abs(a[k:, k])) + k
        a[[k, p]] = a[[p, k]]
        return a

    for a in (np.array([[1.0, 2.0], [5.0, 3.0]]), _values((4, 4), "float64")):
        graph = replays_as_eager(pivot, a)
        assert "index_put" in _ops(graph)


def test_a_list_index_with_tensors_inside_a_tuple_reads_and_writes_as_eager():
    def fn(x):
        i = np.argmax(x[:, 0])
        r = x[[i, 0], 1:]
        x[[i, 0], 0] = -1.0
        return x, r

    replays_as_eager(fn, _values((3, 3), "float64"))


def test_empty_write_replays_as_eager():
    replays_as_eager(_dscores_minus_one, np.ones((0, 3), np.float32), np.zeros(0, np.int64))


def test_a_write_through_a_view_reaches_the_base():
    def fn(x, i, j):
        v = x[1:]
        v[i, j] = 5.0
        w = x.T
        w[j, i] += 1.0
        return x, v

    replays_as_eager(fn, _values((4, 3), "float64"), np.array([0, 2], np.int64),
                     np.array([1, 1], np.int64))


def test_a_zero_d_element_write_with_a_numpy_scalar_checks_its_range_as_eager():
    def fn(x):
        p = np.argmax(x[:, 0])
        x[p, 0] = np.int64(300)  # eager: a basic element write, NumPy checks the range
        return x

    x = np.array([[1, 2], [3, 4]], np.int8)
    with pytest.raises(OverflowError):
        fn(x.copy())
    with pytest.raises(OverflowError, match=HERE):
        cv.capture(fn, cv.spec(x.shape, x.dtype))


# --- NumPy's errors at capture and at replay -------------------------------------------------


def test_a_float_tensor_index_is_numpys_index_error_at_capture():
    def fn(x, f):
        return x[0, f]

    with pytest.raises(IndexError, match="arrays used as indices must be of integer"):
        np.zeros((2, 3))[0, np.zeros(2)]
    with pytest.raises(IndexShapeError, match=rf"arrays used as indices must be of integer"
                                                 rf".*{HERE}:\d+"):
        cv.capture(fn, cv.spec((2, 3), "float64"), cv.spec((2,), "float64"))


def test_index_arrays_that_do_not_broadcast_are_numpys_index_error():
    def read(x, i, j):
        return x[i, j]

    def write(x, i, j):
        x[i, j] = 1.0
        return x

    for fn in (read, write):
        with pytest.raises(IndexError, match="shape mismatch"):
            fn(np.zeros((4, 4)), np.zeros(2, np.int64), np.zeros(3, np.int64))
        with pytest.raises(IndexShapeError, match=rf"(?s)shape mismatch.*{HERE}:\d+"):
            cv.capture(fn, cv.spec((4, 4), "float64"), cv.spec((2,), "int64"),
                       cv.spec((3,), "int64"))


def test_a_static_part_out_of_bounds_is_numpys_index_error_at_capture():
    with pytest.raises(IndexShapeError, match="index 5 is out of bounds"):
        cv.capture(lambda x, i: x[i, 5], cv.spec((3, 3), "float64"), cv.spec((2,), "int64"))
    with pytest.raises(IndexShapeError, match="too many indices"):
        cv.capture(lambda x, i: x[i, 0, 0], cv.spec((3, 3), "float64"), cv.spec((2,), "int64"))


def test_a_value_of_the_wrong_shape_is_numpys_value_error():
    def fn(x, i, v):
        x[i, 0] = v
        return x

    with pytest.raises(ValueError, match="shape mismatch|could not broadcast"):
        fn(np.zeros((3, 3)), np.zeros(2, np.int64), np.zeros(3))
    with pytest.raises(ValueError, match=rf"(?s)could not broadcast.*{HERE}:\d+"):
        cv.capture(fn, cv.spec((3, 3), "float64"), cv.spec((2,), "int64"), cv.spec((3,),
                                                                                  "float64"))


def test_a_python_integer_out_of_range_is_numpys_overflow_error():
    def fn(x, i):
        x[i, 0] = 300
        return x

    with pytest.raises(OverflowError):
        fn(np.zeros((3, 3), np.int8), np.zeros(2, np.int64))
    with pytest.raises(OverflowError, match=HERE):
        cv.capture(fn, cv.spec((3, 3), "int8"), cv.spec((2,), "int64"))


def test_an_index_out_of_bounds_fails_the_numpy_replay_at_the_node():
    graph = cv.capture(_cross_entropy_pick, cv.spec((3, 2), "float64"), cv.spec((3,), "int64"))
    bad = {"logp": np.zeros((3, 2)), "y": np.array([0, 2, 1])}
    with pytest.raises(IndexError):
        _cross_entropy_pick(bad["logp"], bad["y"])
    with pytest.raises(cv.ReplayError, match=rf"advanced_index.*{HERE}:\d+"):
        graph.replay(bad, backend="numpy")


def test_a_list_of_a_tensor_and_a_boolean_is_an_integer_index_as_in_numpy():
    def fn(x):
        p = np.argmax(x)
        return x[[True, p]], x[[p, np.int8(0)]]  # np.array([True, p]) is [1, p]

    replays_as_eager(fn, np.array([3.0, 9.0, 1.0]))


def test_a_list_holding_a_tensor_and_a_float_is_numpys_index_error():
    def fn(x):
        p = np.argmax(x)
        return x[[p, 1.5]]

    with pytest.raises(IndexError, match="must be of integer"):
        cv.capture(fn, cv.spec((3,), "float64"))


def test_a_boolean_tensor_inside_a_tuple_index_stays_refused_with_mask_advice():
    with pytest.raises(cv.UnsupportedOperationError,
                       match=rf"(?s){HERE}:\d+.*boolean tensor inside a tuple index.*"
                             r"boolean mask alone"):
        cv.capture(lambda x: x[x[:, 0] > 0, 1], cv.spec((3, 3), "float64"))


# --- the graph file and the other backends ---------------------------------------------------


ROWS = np.arange(3)  # an ndarray in the index (inside a capture np.arange makes a tensor)


def test_the_graph_file_keeps_the_index_and_replays_the_same(tmp_path):
    def fn(x, y):
        x[ROWS, y] -= 1.0
        return x[..., y], x[y[:, None], 1:, None]

    x = _values((4, 4), "float64")
    y = np.array([3, 0, 1], np.int64)
    graph = replays_as_eager(fn, x, y)
    path = tmp_path / "g.json"
    graph.save(path)
    loaded = cv.load(path)
    node = next(n for n in loaded.ops if n.op == "advanced_index_put")
    assert node.params["tensors"] == (1,)
    assert isinstance(node.params["index"][0], list)
    want = graph.replay({"x": x, "y": y}, to_numpy=True)
    got = loaded.replay({"x": x, "y": y}, to_numpy=True)
    for name in graph.outputs:
        assert got[name].tobytes() == want[name].tobytes()


def _separated_read(x, y):
    return x[y, :, y]


def _mask_ellipsis_and_tensor(x, y):
    return x[..., np.array([True, False, True]), y[:2]]  # the tensor indexes the last axis


@pytest.mark.parametrize("fn, shape", [(_cross_entropy_pick, (3, 3)), (_separated_read, (3, 3, 3)),
                                       (_dscores_minus_one, (3, 3)),
                                       (_mask_ellipsis_and_tensor, (2, 3, 3))])
def test_jax_flags_an_index_out_of_bounds_where_it_would_clip(fn, shape):
    pytest.importorskip("jax")
    x = _values(shape, "float32")
    good = np.array([0, 2, 1], np.int64)
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype), cv.spec((3,), "int64"))
    names = graph.inputs
    want = graph.replay(dict(zip(names, (x, good))), to_numpy=True)
    got = graph.replay(dict(zip(names, (x, good))), backend="jax", to_numpy=True)
    for name in graph.outputs:
        assert got[name].tobytes() == want[name].tobytes()
    negative = np.array([-1, -3, 2], np.int64)  # wrapped as NumPy wraps them
    want = graph.replay(dict(zip(names, (x, negative))), to_numpy=True)
    got = graph.replay(dict(zip(names, (x, negative))), backend="jax", to_numpy=True)
    for name in graph.outputs:
        assert got[name].tobytes() == want[name].tobytes()
    with pytest.raises(cv.ReplayError, match=r"advanced_index.*out of bounds for an axis of "
                                             r"size 3"):
        graph.replay(dict(zip(names, (x, np.array([1, 3, 0])))), backend="jax")


def test_dask_replays_reads_and_writes_as_numpy():
    pytest.importorskip("dask")

    def fn(x, y):
        x[np.arange(len(y)), y] -= 1.0
        return x[:, y], x[y[:, None], y]

    x = _values((6, 6), "float64")
    y = np.array([5, 0, 0, 3, 2, 1], np.int64)
    graph = cv.capture(fn, cv.spec(x.shape, x.dtype), cv.spec(y.shape, y.dtype))
    want = graph.replay({"x": x, "y": y}, to_numpy=True)
    got = graph.replay({"x": x, "y": y}, backend="dask", chunks=2, to_numpy=True)
    for name in graph.outputs:
        assert got[name].tobytes() == want[name].tobytes()
