"""Eager tensors and the operator/method/NumPy surface, each checked eager == replay bit for bit."""

import numpy as np
import pytest
from conftest import assert_bitwise, eager_vs_replay

import capviz as cv

CASES = {
    "operators": lambda x, y: (x + y, x - y, x * y, x / y, x // y, x % y, abs(x) ** 2, -x, x @ y.T,
                               x < y, x <= y, x > y, x >= y, x == y, x != y),
    "reflected": lambda x, y: (1 - x, 2.0 / (abs(y) + 1), 3 * x, 2 ** x, 7 // (abs(y) + 1)),
    "methods": lambda x, y: (x.reshape(4, 3), x.reshape((2, 6)), x.transpose(), x.T,
                             x.sum(), x.mean(axis=0), x.max(axis=1, keepdims=True), x.min(),
                             x.var(axis=-1), x.std(), x.argmax(axis=1), x.argmin(),
                             x.astype("float64"), x.swapaxes(0, 1), x.clip(-0.5, 0.5)),
    "indexing": lambda x, y: (x[0], x[1:, ::2], x[..., None], x[:, [0, 2]], x[range(2)],
                              x[-1, -1], x[np.array([1, 0])], x[[True, False, True]]),
    "numpy functions": lambda x, y: (
        np.tanh(x), np.exp(x - np.max(x, axis=-1, keepdims=True)), np.sqrt(np.abs(y)),
        np.concatenate([x, y], axis=0), np.stack([x, y]), np.hstack([x, y]), np.vstack([x, y]),
        np.where(x > 0, x, y), np.where(x > 0, x, 0.0), np.sum(x, axis=1), np.mean(y),
        np.var(x, axis=0), np.std(x), np.max(x), np.min(y, axis=0), np.argmax(x, axis=1),
        np.clip(x, -1, 1), np.reshape(x, (-1,)), np.transpose(x), np.swapaxes(x, 0, 1),
        np.expand_dims(x, 0), np.squeeze(x[None]), np.broadcast_to(x[0], (5, 4)),
        np.matmul(x, y.T), np.dot(x, y.T), np.tril(x), np.triu(x, 1), np.zeros_like(x),
        np.ones_like(y, dtype=np.int32), np.full_like(x, 7.5), np.maximum(x, y),
        np.take(x, np.array([2, 0]), axis=1)),
    "split": lambda x, y: tuple(np.split(x, 2, axis=1)) + tuple(np.array_split(y, 3, axis=0)),
    "scalars and ndarrays": lambda x, y: (x * 0.5, x + np.float64(1.5), x + np.ones(4),
                                          x * np.float32(2), (x > 0) & (y > 0), ~(x > 0)),
    "integer tensor indexing": lambda x, y: (x[np.argmax(y, axis=0) % 3],
                                             np.take(x, np.argmax(x, axis=1) % 3, axis=0)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_capture_replays_bit_identical_to_eager(name, f32):
    fn = CASES[name]
    eager, replayed, graph = eager_vs_replay(fn, f32(3, 4), f32(3, 4))
    graph.verify()
    assert len(replayed) == len(eager)
    for i, value in enumerate(eager):
        assert_bitwise(replayed[f"out{i}"], value)


def test_capture_records_dtypes_exactly_like_numpy(f32):
    x = f32(3, 4)
    for name, fn in CASES.items():
        graph = cv.capture(fn, cv.spec((3, 4)), cv.spec((3, 4)))
        eager = fn(x, x)
        for out, value in zip(graph.output_nodes, eager):
            assert (out.shape, out.dtype) == (np.shape(value), np.asarray(value).dtype), name


def test_eager_tensor_basics():
    dev = cv.Device("numpy")
    t = cv.tensor([[1.0, 2.0], [3.0, 4.0]], device=dev)
    assert t.shape == (2, 2) and t.dtype == np.float64 and t.ndim == 2 and len(t) == 2
    assert (t + 1).numpy().tolist() == [[2, 3], [4, 5]]
    assert float(t.sum()) == 10.0 and t.sum().item() == 10.0
    assert isinstance(np.tanh(t), cv.Tensor)
    assert [r.numpy().tolist() for r in t] == [[1, 2], [3, 4]]
    assert "tensor(" in repr(t)


def test_eager_tensor_copies_its_data():
    a = np.zeros(3)
    t = cv.tensor(a, device=cv.Device("numpy"))
    a[0] = 5
    assert t.numpy()[0] == 0


def test_eager_tensors_mutate_like_ndarrays():
    t = cv.tensor(np.zeros(3), device=cv.Device("numpy"))
    alias = t
    t[0] = 1
    t += 2
    assert alias is t and t.numpy().tolist() == [3.0, 2.0, 2.0]


def test_unknown_device_kind():
    with pytest.raises(ValueError, match="unknown device kind 'tpu'"):
        cv.Device("tpu")


def test_unsupported_numpy_function_is_named():
    t = cv.tensor(np.ones(3), device=cv.Device("numpy"))
    with pytest.raises(cv.UnsupportedOperationError, match=r"(?s)np\.intersect1d .*np\.where"):
        np.intersect1d(t, t)  # (np.unique runs eagerly: a capture gives it a size symbol)
    with pytest.raises(cv.UnsupportedOperationError, match=r"np\.add\.reduceat"):
        np.add.reduceat(t, [0, 2])


def test_unsupported_numpy_function_in_capture_names_it_and_the_line():
    def fn(x):
        return np.unique(x)

    with pytest.raises(cv.UnsupportedOperationError, match=r"np\.unique is not supported") \
            as info:
        cv.capture(fn, cv.spec((3,)))
    assert "test_tensor.py" in str(info.value)
    assert info.value.graph.violations[0].kind == "unsupported_op"


def test_supported_functions_lists_numpy_names():
    names = cv.supported_functions()
    assert "np.split" in names and "np.concatenate" in names


def test_shape_error_in_capture_names_the_users_line():
    def fn(x):
        return x @ np.ones((5, 2), np.float32)

    with pytest.raises(cv.ShapeError, match=r"matmul.*core dimension mismatch.*test_tensor\.py"):
        cv.capture(fn, cv.spec((3, 4)))
