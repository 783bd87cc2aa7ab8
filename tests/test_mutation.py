"""Mutation and aliasing: NumPy's writes functionalized into the graph (trace/mutation.py).

Every test runs the same unchanged NumPy function eagerly on ndarrays and as a capture replayed
on NumPy, and compares bit for bit with equal dtypes, or checks that capture raises what NumPy
raises.
"""

import operator
import os
import re
import tempfile

import numpy as np
import pytest

import capviz as cv

# NumPy warns when a write drops an imaginary part, eagerly and at replay alike
pytestmark = pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")

F32 = np.arange(12, dtype=np.float32).reshape(3, 4)
I64 = np.arange(12, dtype=np.int64).reshape(3, 4)


def run_both(fn, *arrays):
    """(eager results, replayed results, graph) of ``fn`` on copies of ``arrays``."""
    graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    replayed = graph.replay(dict(zip(graph.inputs, [a.copy() for a in arrays])), backend="numpy")
    eager = fn(*[a.copy() for a in arrays])
    eager = eager if isinstance(eager, tuple) else (eager,)
    return [np.asarray(e) for e in eager], [replayed[name] for name in graph.outputs], graph


def assert_replays_eager(fn, *arrays):
    eager, replayed, graph = run_both(fn, *arrays)
    assert len(eager) == len(replayed)
    for e, r in zip(eager, replayed):
        assert e.dtype == r.dtype and e.shape == r.shape, (e.dtype, r.dtype, e.shape, r.shape)
        assert np.array_equal(e, r, equal_nan=e.dtype.kind in "fc"), (e, r)
    return graph


def numpy_error(fn, *arrays):
    with pytest.raises(Exception) as info:
        fn(*[a.copy() for a in arrays])
    return info.value


def assert_raises_like_numpy(fn, *arrays):
    """Capture raises NumPy's exception type with NumPy's message, noted with the user line."""
    expected = numpy_error(fn, *arrays)
    with pytest.raises(type(expected), match=re.escape(str(expected))) as info:
        cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    assert type(info.value) is type(expected)
    return info.value


# --- aliasing: the tensor object is mutated ----------------------------------------------------


def test_alias_regression_residual_sees_inplace_add():
    def block(x):
        residual = x
        x += 1
        return x + residual

    x = np.array([0, 1, 2], np.float32)
    graph = assert_replays_eager(block, x)
    assert graph.replay({"x": x}, backend="numpy")["out"].tolist() == [2.0, 4.0, 6.0]
    assert [n.op for n in graph.ops] == ["add", "add"]


INPLACE = [("+=", operator.iadd, 3), ("-=", operator.isub, 3), ("*=", operator.imul, 3),
           ("/=", operator.itruediv, 3), ("//=", operator.ifloordiv, 3),
           ("%=", operator.imod, 3), ("**=", operator.ipow, 2), ("&=", operator.iand, 6),
           ("|=", operator.ior, 6), ("^=", operator.ixor, 6), ("<<=", operator.ilshift, 2),
           (">>=", operator.irshift, 1)]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "float16", "float32", "float64",
                                   "complex64"])
@pytest.mark.parametrize(("symbol", "fn", "operand"), INPLACE)
def test_every_inplace_operator_replays_eager(symbol, fn, operand, dtype):
    x = (np.arange(1, 13).reshape(3, 4) % 7 + 1).astype(dtype)
    y = (np.arange(4) % 3 + 1).astype(dtype)

    def with_literal(x):
        alias = x
        x = fn(x, operand)
        return x, alias

    def with_tensor(x, y):
        alias = x
        x = fn(x, y)
        return x, alias

    for program, arrays in ((with_literal, (x,)), (with_tensor, (x, y))):
        try:
            program(*[a.copy() for a in arrays])
        except (TypeError, ValueError, OverflowError):
            assert_raises_like_numpy(program, *arrays)  # e.g. float <<= or complex //=
            continue
        assert_replays_eager(program, *arrays)


def test_inplace_matmul_keeps_shape_and_mutates():
    def f(x, w):
        alias = x
        x @= w
        return alias

    assert_replays_eager(f, F32, np.eye(4, dtype=np.float32) * 2)


def test_inplace_matmul_shape_error_is_numpys():
    def f(x, w):
        x @= w
        return x

    err = assert_raises_like_numpy(f, F32, np.ones((4, 5), np.float32))
    assert "captured at" in err.__notes__[-1] and "test_mutation.py" in err.__notes__[-1]


def test_inplace_on_numpy_scalar_rebinds_like_numpy():
    def f(x):
        s = x.sum()
        t = s
        s += 1
        return s, t

    assert_replays_eager(f, F32)


def test_inplace_on_0d_input_mutates_the_array():
    def f(x):
        alias = x
        x += 1
        x *= 2
        return x, alias

    assert_replays_eager(f, np.array(3.0, np.float32))


# --- casting and shape errors: NumPy's, at capture ------------------------------------------


@pytest.mark.parametrize(("dtype", "fn"), [
    ("int64", lambda x: operator.iadd(x, 0.5)),
    ("uint8", lambda x: operator.iadd(x, -1)),
    ("int8", lambda x: operator.isub(x, 300)),
    ("bool", lambda x: operator.isub(x, True)),
    ("float32", lambda x: operator.ilshift(x, 1)),
    ("float32", lambda x: operator.iadd(x, np.zeros((2, 3, 4)))),
    ("float32", lambda x: operator.iadd(x, np.zeros(5))),
    ("int64", lambda x: operator.iadd(x, np.float32(1))),
    ("int32", lambda x: operator.ipow(x, -1)),
], ids=["int+=float", "uint8+=-1", "int8-=300", "bool-=", "float<<=", "out-shape",
        "no-broadcast", "int+=f32-scalar", "int**=-1"])
def test_inplace_errors_are_numpys(dtype, fn):
    x = np.ones((3, 4), dtype)
    err = assert_raises_like_numpy(fn, x)
    assert err.graph is not None  # the partial graph is kept


def test_inplace_int_plus_half_raises_ufunc_type_error():
    with pytest.raises(np._core._exceptions._UFuncOutputCastingError,
                       match=r"Cannot cast ufunc 'add' output from dtype\('float64'\) to "
                             r"dtype\('int64'\) with casting rule 'same_kind'"):
        cv.capture(lambda x: operator.iadd(x, 0.5), cv.spec(3, "int64"))


# --- t[idx] = v ---------------------------------------------------------------------------------


@pytest.mark.parametrize("write", [
    lambda x, i: x.__setitem__(0, 5),
    lambda x, i: x.__setitem__((1, 2), -1),
    lambda x, i: x.__setitem__(slice(1, None), 7.5),
    lambda x, i: x.__setitem__((slice(None), slice(None, None, -2)), np.float64(2.5)),
    lambda x, i: x.__setitem__((Ellipsis, 0), [1, 2, 3]),
    lambda x, i: x.__setitem__((None, 1), np.arange(4)),
    lambda x, i: x.__setitem__(([0, 2], 1), 8),
    lambda x, i: x.__setitem__([True, False, True], 3),
    lambda x, i: x.__setitem__(i[:, 0] % 3, 4),
    lambda x, i: x.__setitem__(i[0, :2], x[1] * 2),
    lambda x, i: x.__setitem__(x > 6, 0),
    lambda x, i: x.__setitem__(i[:, 0] > 3, np.arange(4)),
    lambda x, i: x.__setitem__(range(2), x[2]),
], ids=["int", "ints", "slice", "negstep", "ellipsis", "none", "list", "boolist", "inttensor",
        "inttensor-values", "booltensor", "booltensor-rows", "range"])
def test_setitem_index_forms_replay_eager(write):
    def f(x, i):
        alias = x
        write(x, i)
        return alias

    assert_replays_eager(f, F32, I64)


def test_setitem_is_recorded_as_an_update_op():
    def f(x, i):
        x[1:] = 0
        x[i[0, :2]] = 1
        return x

    graph = assert_replays_eager(f, F32, I64)
    assert [n.op for n in graph.ops if n.op in ("setitem", "index_put")] == ["setitem",
                                                                             "index_put"]


@pytest.mark.parametrize(("dtype", "key", "value"), [
    ("int8", 0, 300), ("uint8", 1, -1), ("float64", 0, 1j), ("int64", 0, float("nan")),
    ("float32", slice(0, 2), np.ones(3)), ("float32", 7, 1.0), ("float32", [0, 9], 1.0),
], ids=["int8-overflow", "uint8-negative", "complex-into-real", "nan-into-int", "broadcast",
        "out-of-bounds", "list-out-of-bounds"])
def test_setitem_errors_are_numpys(dtype, key, value):
    def f(x):
        x[key] = value
        return x

    assert_raises_like_numpy(f, np.zeros(4, dtype))


def test_setitem_boolean_mask_with_several_values_is_refused():
    def f(x):
        x[x > 1] = np.arange(3, dtype=np.float32)
        return x

    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"(?s)tensor\[mask\] = value of shape \(3,\).*as many values as True"):
        cv.capture(f, cv.spec(4, "float32"))


def test_setitem_on_numpy_scalar_raises_numpys_type_error():
    def f(x):
        s = x.sum()
        s[...] = 1
        return s

    assert_raises_like_numpy(f, F32)


# --- views ------------------------------------------------------------------------------------


def test_write_through_view_changes_base():
    def f(x):
        row = x[1]
        row += 100
        return x

    assert_replays_eager(f, F32)


def test_write_to_base_changes_view():
    def f(x):
        col = x[:, 2]
        t = x.T
        x *= 2
        x[0, 2] = -1
        return col, t, col + 1

    assert_replays_eager(f, F32)


def test_views_of_views_and_every_view_op():
    def program(x):
        a = x[1:]
        b = a[:, ::-2]
        c = b.T
        d = np.expand_dims(c, 0)
        e = np.squeeze(d, 0)
        e[0, 0] = 50
        s = np.swapaxes(x, 0, 1)
        s[3] = -3
        r = x.reshape(4, 3)
        r[0] += 1000
        return x, a, b, c, d, e, s, r

    assert_replays_eager(program, F32)


def test_reshape_copy_is_not_a_view():
    def f(x):
        flat = x.T.reshape(-1)  # NumPy copies: x.T is not contiguous
        flat[0] = 99
        inner = x[:, 1:3].reshape(-1)  # a copy too
        inner += 1
        same = x[1:].reshape(-1)  # a view: rows are contiguous
        same[0] = -7
        return x, flat, inner, same

    assert_replays_eager(f, F32)


def test_split_pieces_are_views():
    def f(x):
        a, b = np.split(x, 2, axis=1)
        a += 1
        x[2] = 0
        return x, a, b

    assert_replays_eager(f, F32)


def test_broadcast_to_is_read_only_like_numpy():
    def f(x):
        b = np.broadcast_to(x[0], (2, 4))
        b[0] = 1
        return b

    assert_raises_like_numpy(f, F32)


def test_read_only_view_follows_writes_to_its_base():
    def f(x):
        b = np.broadcast_to(x[0], (2, 4))
        x[0, 1] = 42
        return b

    assert_replays_eager(f, F32)


def test_writes_through_axis_permutations_and_flips_reach_the_base():
    def f(x):
        m = np.moveaxis(x, 0, -1)
        m[0] = -1
        fl = np.flip(x, 1)
        fl[:, 0] += 100
        r = np.rollaxis(x, 2)
        r[1, 0] = 7
        mt = np.matrix_transpose(x)
        mt[0, 1, 2] = 55
        fu = np.flipud(x[0])
        fu[0] = 3
        return x, m, fl, r, mt, fu

    assert_replays_eager(f, np.arange(24, dtype=np.float32).reshape(2, 3, 4))


def test_write_through_rot90_is_refused_by_name_but_rot90_follows_its_base():
    def follows(x):
        rot = np.rot90(x)
        x[0] = -5
        return rot

    assert_replays_eager(follows, F32)

    def writes(x):
        rot = np.rot90(x)
        rot[0] = 1
        return x

    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"writing through the result of np\.rot90 is not supported.*"
                             r"\.copy\(\)"):
        cv.capture(writes, cv.spec((3, 4), "float32"))


def test_uncertain_reshape_refuses_the_write_at_the_writing_line():
    def f(x):
        y = x.T * 2  # eager: laid out like x.T, so reshape copies; capture cannot know
        flat = y.reshape(-1)
        y += 1  # line of the error
        return flat

    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"may or may not share.*reshape.*\.copy\(\)") as info:
        cv.capture(f, cv.spec((3, 4), "float32"))
    assert info.value.graph is not None
    assert "test_mutation.py" in str(info.value)


# --- out= -----------------------------------------------------------------------------------


def test_ufunc_out_writes_into_the_tensor():
    def f(x):
        y = np.zeros_like(x)
        alias = y
        np.add(x, 1, out=y)
        np.multiply(y, y, out=y)
        np.exp(x[0], out=x[1])
        np.divide(x, 2.0, out=x, where=x > 3)
        np.matmul(x[:, :3], np.eye(3, dtype=x.dtype), out=x[:, 1:])
        return x, alias

    assert_replays_eager(f, F32)


def test_ufunc_out_returns_the_out_tensor():
    def f(x):
        y = np.zeros_like(x)
        z = np.sqrt(x, out=y)
        return z is y

    with cv.CaptureDevice().capture_scope() as scope:
        x = scope.input("x", (3,), "float32")
        assert f(x) is True
        scope.output(x)


def test_ufunc_out_casting_error_is_numpys():
    def f(x):
        y = np.zeros(x.shape, np.int64) if isinstance(x, np.ndarray) else \
            np.zeros_like(x, dtype=np.int64)
        np.add(x, 0.5, out=y)
        return y

    assert_raises_like_numpy(f, F32)


# --- methods and functions that write ------------------------------------------------------


def test_mutating_methods_and_functions_replay_eager():
    def f(x, i):
        x.sort()
        col = x[:, 1]
        col.sort()
        i.fill(3)
        np.copyto(x[0], 9)
        np.copyto(x[1], x[2] * 2, where=x[2] > 8)
        np.put(x, [0, 5], [1, 2])
        np.put_along_axis(x, np.array([[0], [1], [2]]), 0.5, axis=1)
        np.place(i, i > 2, [1])
        return x, i

    assert_replays_eager(f, F32[::-1].copy(), I64)


def test_copyto_casting_error_is_numpys():
    def f(i):
        np.copyto(i, 1.5)
        return i

    assert_raises_like_numpy(f, I64)


def test_fill_overflow_is_numpys():
    def f(i):
        i.fill(300)
        return i

    assert_raises_like_numpy(f, I64.astype(np.int8))


def test_place_with_several_values_cycles_them_over_the_true_entries():
    def f(x, v):
        np.place(x, x > 0.5, [1, 2.5])
        y = x * 2 - 5
        np.place(y, y < 0, v[:3])
        return x, y

    assert_replays_eager(f, F32, F32[0])


def test_place_with_no_values_is_refused_by_name():
    with pytest.raises(cv.UnsupportedOperationError, match=r"np\.place with no values"):
        cv.capture(lambda x: np.place(x, x > 2, []), cv.spec(4, "float32"))


# --- whole programs ----------------------------------------------------------------------------


def _gpt_step(x, wqkv, wo, cache_k, cache_v, pos):
    """One decoding step of a one-head attention block with a KV cache, NumPy style."""
    q, k, v = np.split(x @ wqkv, 3, axis=-1)
    cache_k[:, pos] = k
    cache_v[:, pos] = v
    keys = cache_k[:, :pos + 1]
    vals = cache_v[:, :pos + 1]
    scores = (q[:, None, :] * keys).sum(-1) / np.sqrt(np.float32(q.shape[-1]))
    scores -= scores.max(-1, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(-1, keepdims=True)
    h = (w[..., None] * vals).sum(1)
    out = x.copy()
    out += h @ wo
    return out


def test_gpt_forward_with_kv_cache_and_adagrad_updates_replays_bit_for_bit():
    def program(x, wqkv, wo, cache_k, cache_v, g1, g2):
        for pos in range(3):
            x = _gpt_step(x, wqkv, wo, cache_k, cache_v, pos)
        params, grads = [wqkv, wo], [g1, g2]
        accum = [np.zeros_like(p) for p in params]
        lr = np.float32(0.1)
        for p, g, a in zip(params, grads, accum):
            a += g * g
            p -= lr * g / (np.sqrt(a) + np.float32(1e-8))
        return x, wqkv, wo, cache_k, cache_v

    rng = np.random.default_rng(0)
    b, d, t = 2, 8, 4
    arrays = [rng.standard_normal((b, d)).astype(np.float32),
              rng.standard_normal((d, 3 * d)).astype(np.float32) * 0.3,
              rng.standard_normal((d, d)).astype(np.float32) * 0.3,
              np.zeros((b, t, d), np.float32), np.zeros((b, t, d), np.float32),
              rng.standard_normal((d, 3 * d)).astype(np.float32),
              rng.standard_normal((d, d)).astype(np.float32)]
    graph = assert_replays_eager(program, *arrays)
    assert sum(n.op == "setitem" for n in graph.ops) == 6


def test_output_is_the_value_at_scope_exit():
    with cv.CaptureDevice().capture_scope() as scope:
        x = scope.input("x", (3,), "float32")
        y = x * 2
        scope.output(y, name="y")
        y += 1
    got = scope.graph.replay({"x": np.ones(3, np.float32)}, backend="numpy")["y"]
    assert got.tolist() == [3.0, 3.0, 3.0]


def test_graph_with_writes_saves_and_loads():
    def f(x, i):
        x[None, 1:, ..., ::2] = 3
        x[i[0, :2]] = -1
        v = x.T
        v[0] += 5
        return x

    graph = assert_replays_eager(f, F32, I64)
    path = os.path.join(tempfile.mkdtemp(), "g.json")
    graph.save(path)
    loaded = cv.load(path)
    expected = graph.replay({"x": F32, "i": I64}, backend="numpy")["out"]
    got = loaded.replay({"x": F32, "i": I64}, backend="numpy")["out"]
    assert np.array_equal(expected, got)


def test_eager_tensor_updated_with_a_capture_value_is_refused():
    eager = cv.tensor(np.zeros(3, np.float32), device=cv.Device("numpy"))
    with pytest.raises(cv.CapvizError, match="met a tensor"):
        with cv.CaptureDevice().capture_scope() as scope:
            x = scope.input("x", (3,), "float32")
            eager += x


def test_function_out_runs_numpys_call_with_out():
    def f(x):
        o = np.zeros_like(x[0])
        alias = o
        np.cumsum(x[0], out=o)
        np.cumprod(x[1] * 0.5, out=x[2])  # into a view of x
        return alias, x

    graph = assert_replays_eager(f, F32)
    assert [n.params["op"] for n in graph.ops if n.op == "into"] == ["cumsum", "cumprod"]
    assert_replays_eager(f, F32.astype(np.float16))


def test_function_out_of_another_dtype_is_refused_by_name():
    def f(x):
        o = np.zeros_like(x[0], dtype=np.float64)
        np.cumsum(x[0], out=o)
        return o

    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"(?s)np\.cumsum\(\.\.\., out=\.\.\.\).*out is float64\[4\] but the "
                             r"result is float32\[4\]"):
        cv.capture(f, cv.spec((3, 4), "float32"))


def test_write_through_a_stale_view_uses_the_current_buffer():
    def f(x):
        v = x[1:]
        x[2] = 100  # v is stale now
        v.sort()
        v[0] += 1
        return x, v

    assert_replays_eager(f, np.array([5, 3, 4, 1, 0], np.float32))


def test_eager_writes_match_numpy():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = cv.tensor(x, device=cv.Device("numpy"))
    alias = t
    row = t[1]
    row += 10
    t[0, ::2] = -1
    np.multiply(t, 2, out=t)
    t.sort()
    expected = x.copy()
    expected[1] += 10
    expected[0, ::2] = -1
    expected *= 2
    expected.sort()
    assert alias is t and np.array_equal(t.numpy(), expected)


def test_clip_out_writes_like_a_ufunc():
    def f(x, g):
        for grad in (x, g):
            np.clip(grad, -2, 5, out=grad)
        return x, g

    assert_replays_eager(f, F32 - 4, I64 - 3)


@pytest.mark.parametrize("write", [
    lambda x: np.put(x, [0, 1], 300),
    lambda x: np.put(x, np.array([0.0, 1.0]), 5),
    lambda x: np.put_along_axis(x, np.zeros((2, 2), np.int64), 1, axis=1),
    lambda x: np.copyto(x, np.ones(5, np.int8)),
], ids=["put-overflow", "put-float-indices", "put_along_axis-ndim", "copyto-shape"])
def test_writing_functions_raise_numpys_errors_at_the_users_line(write):
    def f(x):
        write(x)
        return x

    err = assert_raises_like_numpy(f, np.zeros((3, 4), np.int8))
    assert any("test_mutation.py" in note for note in getattr(err, "__notes__", [])) or \
        "test_mutation.py" in str(err)


def test_reduction_out_runs_numpys_call_with_out():
    def f(x):
        s = np.zeros_like(x[0])
        np.sum(x, axis=0, out=s)
        np.mean(x, axis=1, out=x[:, 0])
        np.max(x, axis=0, keepdims=True, out=x[:1])
        return s, x

    assert_replays_eager(f, F32)
    assert_replays_eager(f, (F32 * 1.37).astype(np.float16))


def test_partition_and_put_methods_write_in_place():
    def f(x):
        x.partition(2, axis=1)
        row = x[0]
        row.put([0, 3], [-1, -2])
        return x

    assert_replays_eager(f, F32[:, ::-1].copy())


def test_ufunc_at_accumulates_repeated_indices_like_numpy():
    def f(w, i):
        grad = np.zeros_like(w)
        np.add.at(grad, i[0, :3] % 3, w[:3] * 2)  # an embedding gradient: repeated rows add
        np.maximum.at(w, [0, 0, 2], -w[1])
        return grad, w

    assert_replays_eager(f, F32, I64 // 5)


def test_ufunc_at_errors_are_numpys():
    def f(w):
        np.add.at(w, [0, 1], np.ones(3, np.float32))
        return w

    assert_raises_like_numpy(f, F32)
