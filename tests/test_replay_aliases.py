"""A replay whose inputs share memory with an input the graph writes into is refused by name
(eager NumPy would see the write through the alias, a functional replay does not); inputs
that share memory but are never written replay as eager does."""

import numpy as np
import pytest

import capviz as cv

W = np.arange(3.0)  # a module-level array: recorded as the graph's constant 'W'


def add_after_write(a, b):
    a += 1
    return a + b


def zero_tail(a, b):
    a[1:] = 0
    return b.sum()


def scale_then_add(x):
    x *= 2
    return x + W


def read_only(a, b):
    return a * b + a


@pytest.fixture
def add_graph():
    return cv.capture(add_after_write, cv.spec((3,), "float64"), cv.spec((3,), "float64"))


def test_the_same_array_as_two_inputs_of_a_graph_writing_one_is_refused(add_graph):
    x = np.arange(3.0)
    with pytest.raises(cv.ReplayInputError,
                       match=r"input 'a' shares memory with input 'b', and the graph writes "
                             r"into 'a' \(node %\d+ add, recorded at .*test_replay_aliases.py:14 "
                             r"in add_after_write\).*b\.copy\(\)"):
        add_graph.replay({"a": x, "b": x})
    with pytest.raises(cv.ReplayInputError, match="shares memory with input 'b'"):
        add_graph.compile()(x, x)  # the compiled call's fast path checks it too
    # copies: what eager computes on arrays that share nothing
    got = add_graph.replay({"a": x, "b": x.copy()})["out"]
    np.testing.assert_array_equal(got, add_after_write(x.copy(), x.copy()))


def test_an_overlapping_slice_is_refused_and_interleaved_disjoint_views_replay_as_eager():
    graph = cv.capture(zero_tail, cv.spec((4,), "float32"), cv.spec((2,), "float32"))
    x = np.arange(4.0, dtype=np.float32)
    with pytest.raises(cv.ReplayInputError, match=r"node %\d+ setitem, recorded at .*:19"):
        graph.replay({"a": x, "b": x[2:]})
    buffer = np.arange(6.0)
    even, odd = buffer[::2], buffer[1::2]  # one buffer, no element shared
    graph = cv.capture(add_after_write, cv.spec((3,), "float64"), cv.spec((3,), "float64"))
    with pytest.raises(cv.ReplayInputError, match="C-contiguous"):  # the layout rule first
        graph.replay({"a": even, "b": odd})
    got = graph.replay({"a": even.copy(), "b": odd})["out"]
    np.testing.assert_array_equal(got, add_after_write(even.copy(), odd))


def test_an_input_sharing_memory_with_the_array_a_constant_was_recorded_from_is_refused():
    graph = cv.capture(scale_then_add, cv.spec((3,), "float64"))
    with pytest.raises(cv.ReplayInputError,
                       match=r"input 'x' shares memory with the graph's constant 'W'"):
        graph.replay({"x": W})
    got = graph.replay({"x": W.copy()})["out"]
    np.testing.assert_array_equal(got, scale_then_add(W.copy()))


def test_inputs_sharing_memory_replay_as_eager_when_nothing_writes_them():
    graph = cv.capture(read_only, cv.spec((3,), "float64"), cv.spec((3,), "float64"))
    x = np.arange(3.0)
    got = graph.replay({"a": x, "b": x})["out"]
    np.testing.assert_array_equal(got, read_only(x, x))
    assert not any("written" in n.params for n in graph.input_nodes)


def test_a_loaded_graph_keeps_which_inputs_it_writes(add_graph, tmp_path):
    path = tmp_path / "g.json"
    add_graph.save(path)
    loaded = cv.load(path)
    x = np.arange(3.0)
    with pytest.raises(cv.ReplayInputError, match="shares memory with input 'b'"):
        loaded.replay({"a": x, "b": x})


BASE = np.arange(6.0)


def write_then_dot_with_a_view_of_base(a):
    a[0] = 50.0
    return np.dot(a, BASE[:3])


def test_an_input_sharing_the_base_of_a_constant_view_is_refused():
    """The constant was copied from the temporary view BASE[:3]: the base BASE is what the
    check compares with (cv.constant too)."""
    graph = cv.capture(write_then_dot_with_a_view_of_base, cv.spec((3,), "float64"))
    with pytest.raises(cv.ReplayInputError, match="shares memory with the graph's constant"):
        graph.replay({"a": BASE[:3]})
    graph = cv.capture(lambda a: add_after_write(a, cv.constant(BASE)), cv.spec((6,), "float64"))
    with pytest.raises(cv.ReplayInputError, match="shares memory with the graph's constant"):
        graph.replay({"a": BASE})


def test_a_read_only_input_the_graph_writes_is_refused_as_eager_numpy_raises():
    graph = cv.capture(lambda a: add_after_write(a, 0.0), cv.spec((3,), "float64"))
    x = np.arange(3.0)
    x.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        add_after_write(x, 0.0)
    for backend in ("numpy", "jax", "dask"):
        with pytest.raises(cv.ReplayInputError, match=r"input 'a' is read-only.*a\.copy\(\)"):
            graph.replay({"a": x}, backend=backend)
