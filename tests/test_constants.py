"""ndarrays the capture meets: recorded as their value at each use, with their memory layout,
through save and load; and the ndarray operations NumPy gives no hook for, refused by name."""

import json
import os
import tempfile

import numpy as np
import pytest
from conftest import assert_bitwise

import capviz as cv
from capviz.core.layout import compact_strides, layout_copy, same_bits


def save_load(graph):
    path = os.path.join(tempfile.mkdtemp(), "g.json")
    graph.save(path)
    return cv.load(path), path


def replay_matches_eager(fn, *arrays):
    graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    want = fn(*arrays)
    want = want if isinstance(want, tuple) else (want,)
    feed = dict(zip(graph.inputs, arrays))
    for g in (graph, save_load(graph)[0]):
        got = list(g.replay(feed).values())
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert_bitwise(a, np.asarray(b))
    return graph


# --- a buffer mutated between uses -------------------------------------------------------------


def test_buffer_filled_in_a_loop_is_recorded_at_each_use():
    def fn(x):
        buf = np.array([0.0, 0.0, 0.0], np.float32)  # an ndarray, changed by plain NumPy
        outs = []
        for i in range(3):
            buf[i] = i + 1  # the same ndarray object, changed before each use
            outs.append(x * buf)
        return tuple(outs)

    x = np.array([1.0, 2.0, 3.0], np.float32)
    graph = replay_matches_eager(fn, x)
    assert len(graph.constants) == 3


def test_an_unchanged_array_is_one_constant():
    w = np.arange(16, dtype=np.float32).reshape(4, 4) / 16

    def fn(x):
        for _ in range(5):
            x = np.tanh(x @ w)
        return x

    graph = replay_matches_eager(fn, np.ones((2, 4), np.float32))
    assert len(graph.constants) == 1


def test_a_change_of_sign_bit_alone_is_seen():
    buf = np.zeros(2)
    negative = np.full(2, -0.0)  # equal to 0.0, other bits (an unseen write of buf[:] = -0.0
    #                              inside fn is refused: tests/test_outside_writes.py)

    def fn(x):
        a = x / buf  # 1/0 = inf
        return a, x / negative  # -inf

    x = np.ones(2)
    with np.errstate(divide="ignore"):
        graph = cv.capture(fn, cv.spec(2, np.float64))
        got = graph.replay({"x": x})
    assert len(graph.constants) == 2
    assert list(got["out0"]) == [np.inf, np.inf] and list(got["out1"]) == [-np.inf, -np.inf]


# --- layout -------------------------------------------------------------------------------------


def _layouts():
    rng = np.random.default_rng(3)
    base = rng.standard_normal((5, 15)).astype(np.float32)
    return {
        "reversed": base[:, :5][::-1],
        "reversed-columns": base[:, :5][:, ::-1],
        "fortran": np.asfortranarray(base[:, :5]),
        "gapped": base[:, ::3],
        "gapped-reversed": base[::-1, 1::3],
        "transposed": base[:5, :5].T,
    }


@pytest.mark.parametrize("name", sorted(_layouts()))
def test_constant_keeps_its_layout_so_matvec_rounds_as_eager(name):
    c = _layouts()[name]
    v = np.random.default_rng(4).standard_normal(5).astype(np.float32)
    graph = replay_matches_eager(lambda x: c @ x, v)
    kept = graph.constant_values[graph.constants[0].index]
    assert kept.strides == compact_strides(c.shape, c.strides, c.itemsize) or \
        (kept.flags.f_contiguous and c.flags.f_contiguous)
    loaded, _ = save_load(graph)
    assert loaded.constant_values[graph.constants[0].index].strides == kept.strides


def _laid_out_apart(layout):
    """A constant ``c = layout(base)`` and a vector ``v`` whose product rounds otherwise than
    the same values laid out in C order (the premise of the layout tests): which sizes show it
    is the BLAS kernel's, so a few are tried; none on this machine's BLAS skips."""
    for n in (5, 4, 8, 16, 33, 64):
        for seed in range(8):
            rng = np.random.default_rng(seed)
            c = layout(rng.standard_normal((n, n)).astype(np.float32))
            v = rng.standard_normal(n).astype(np.float32)
            if (c @ v).tobytes() != (np.ascontiguousarray(c) @ v).tobytes():
                return c, v
    pytest.skip("this machine's BLAS rounds these layouts alike: no premise to test")


def test_negative_stride_constant_matmul_is_bit_identical():
    # the premise: the same values laid out in C order round differently
    c, v = _laid_out_apart(lambda base: base[::-1])
    graph = replay_matches_eager(lambda x: c @ x, v)
    assert graph.constant_values[graph.constants[0].index].strides == c.strides


def test_fortran_constant_is_bit_identical():
    c, v = _laid_out_apart(np.asfortranarray)  # the premise
    graph = replay_matches_eager(lambda x: c @ x, v)
    assert graph.constant_values[graph.constants[0].index].flags.f_contiguous


def test_layout_copy_keeps_exact_strides_without_gaps():
    base = np.arange(60.0).reshape(5, 12)
    for arr in (base[::-1], base[:, ::-1], base.T, base.T[::-1],
                np.broadcast_to(base[0], (3, 12)),
                np.lib.stride_tricks.sliding_window_view(base[0], 4)):
        copy = layout_copy(arr)
        assert copy.strides == arr.strides and np.array_equal(copy, arr)
        assert not np.shares_memory(copy, base)
    gapped = layout_copy(base[:, ::4])  # gaps of 3 elements keep one, in rows and columns
    assert gapped.strides == (48, 16) and np.array_equal(gapped, base[:, ::4])


def test_strides_in_a_file_are_checked():
    c = np.arange(20.0).reshape(4, 5)[::-1]
    graph = cv.capture(lambda x: x * c, cv.spec((4, 5)))
    _, path = save_load(graph)
    doc = json.load(open(path))
    (node,) = [n for n in doc["nodes"] if n["kind"] == "constant"]
    assert node["strides"] == [-40, 8]
    for bad in ([-40 * 10**9, 8], [8], "x"):
        node["strides"] = bad
        with open(path, "w") as f:
            json.dump(doc, f)
        with pytest.raises(cv.GraphFormatError, match=r"constant %1: strides"):
            cv.load(path)


# --- no hook: refused at the line, with the rewrite --------------------------------------------


ACC = np.zeros(3)
CACHE = np.zeros((2, 3))


def test_ndarray_inplace_update_by_a_tensor_is_a_state_written_back():
    def fn(x):
        acc = ACC
        acc += x
        return acc

    graph = cv.capture(fn, cv.spec(3, "float64"))
    assert [n.name for n in graph.state_nodes] == ["ACC"] and not ACC.any()
    for _ in range(2):
        graph.replay({"x": np.ones(3)})
    assert ACC.tolist() == [2.0, 2.0, 2.0]


def test_writing_a_tensor_into_an_ndarray_is_a_state_written_back():
    def fn(x):
        CACHE[0] = x
        return x

    graph = cv.capture(fn, cv.spec(3, "float64"))
    assert "%1 = state CACHE : float64[2,3]" in str(graph) and not CACHE.any()
    graph.replay({"x": np.arange(3.0)})
    assert CACHE.tolist() == [[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]]


def test_ndarray_dot_of_a_tensor_is_refused_with_the_rewrite():
    w = np.ones((3, 3))
    with pytest.raises(cv.DataReadError,
                       match=r"(?s)`w\.dot\(x\)`.*Fix: np\.dot\(w, x\), or w @ x"):
        cv.capture(lambda x: w.dot(x), cv.spec(3))


def test_ndarray_inplace_update_by_an_eager_tensor_writes_the_ndarray():
    a = np.ones(3, np.float32)
    alias = a
    t = cv.tensor(np.arange(3, dtype=np.float32), device=cv.Device("numpy"))
    a += t
    a *= t
    want = (np.ones(3, np.float32) + np.arange(3, dtype=np.float32)) * np.arange(3)
    assert alias is a and type(a) is np.ndarray
    assert_bitwise(a, want.astype(np.float32))
    b = np.ones(3, np.int8)
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output"):
        b += cv.tensor(np.ones(3), device=cv.Device("numpy"))  # NumPy's same_kind rule


def test_same_bits_sees_every_bit_in_every_layout():
    base = np.linspace(-3, 3, 48).reshape(6, 8)
    for dtype in ("float64", "float32", "float16", "complex64", "int8", "bool"):
        arr = base.astype(dtype)
        for view in (arr, arr[::-1], arr[:, ::3], arr.T, arr[:1, :3]):
            other = layout_copy(view)
            assert same_bits(view, other)
            flat = other.reshape(-1) if other.flags.c_contiguous else None
            if flat is not None and flat.size:
                changed = other.copy()
                changed.reshape(-1).view(np.uint8)[-1] ^= 1  # the last bit of the last element
                assert not same_bits(view, changed), (dtype, view.strides)
    zeros = np.zeros(3)
    assert not same_bits(zeros, -zeros) and same_bits(np.full(3, np.nan), np.full(3, np.nan))


@pytest.mark.parametrize("size", [8191, 8192, 8193])  # float64: 64 KiB, where same_bits changes
def test_same_bits_on_either_side_of_its_small_array_path(size):  # from bytes to words
    arr = np.linspace(-1.0, 1.0, size)
    other = arr.copy()
    assert same_bits(arr, other)
    for k in (0, size // 2, size - 1):
        changed = other.copy()
        changed.view(np.uint8)[8 * k] ^= 1  # the lowest bit of element k
        assert not same_bits(arr, changed)
    zeros = np.zeros(size)
    assert not same_bits(zeros, -zeros)
    assert same_bits(np.full(size, np.nan), np.full(size, np.nan))
    assert not same_bits(arr, arr.astype(np.float32)) and not same_bits(arr, arr[:-1])
    assert same_bits(arr[::-1], arr[::-1].copy()) and not same_bits(arr[::-1], arr)
