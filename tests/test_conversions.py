"""``np.asarray`` / ``np.array`` of capture tensors are recorded as NumPy's own result
(capviz/trace/conversions.py, hooked by capviz/randomness/creation.py): review 3 finding 11."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

RNG = np.random.default_rng(11)


def same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a, b, equal_nan=True)


def replays_as_eager(fn, example, *others):
    """Capture ``fn`` from ``example`` and from its spec; each replay equals the eager call."""
    for given in (example, cv.spec(example.shape, example.dtype)):
        graph = cv.capture(fn, given)
        for x in (example, *others):
            same(graph.replay({"x": x})["out"], fn(x))
    return graph


def library_style(x, w):
    """The defensive first line of library-style NumPy functions."""
    x = np.asarray(x)
    w = np.asarray(w, dtype=x.dtype)
    return np.tanh(x @ w)


def test_asarray_of_a_tensor_is_the_tensor_itself():
    w = RNG.standard_normal((3, 2))
    x = RNG.standard_normal((4, 3))
    graph = replays_as_eager(lambda x: library_style(x, w), x, RNG.standard_normal((4, 3)))
    assert "matmul" in [node.op for node in graph.ops]

    def itself(x):
        assert np.asarray(x) is x and np.asanyarray(x) is x  # as NumPy for an ndarray
        assert np.asarray(x, dtype=x.dtype) is x
        return x * 2.0

    replays_as_eager(itself, x)


@pytest.mark.parametrize("convert", [
    lambda x: np.asarray(x, dtype=np.float32),
    lambda x: np.asarray(x, np.float32, order="C"),
    lambda x: np.asanyarray(x),
    lambda x: np.array(x, dtype=np.float32),
    lambda x: np.array(x, copy=None),
])
def test_a_conversion_with_a_dtype_is_the_cast(convert):
    x = RNG.standard_normal(5)
    replays_as_eager(lambda x: convert(x) + 1, x, RNG.standard_normal(5) * 1e5)


def test_array_of_a_tensor_is_a_copy_the_tensor_does_not_see_written():
    def f(x):
        y = np.array(x)
        y[0] = 7.0
        return x + y

    replays_as_eager(f, RNG.standard_normal(3), RNG.standard_normal(3))


@pytest.mark.parametrize("build", [
    lambda x: np.array([r @ r for r in x]),                   # per-row results: a stack
    lambda x: np.array([a @ b for a, b in zip(x, x[::-1])]),
    lambda x: np.array(list(x)),
    lambda x: np.array([x[0, 0], 1.5, x[1].sum()]),            # numbers among the tensors
    lambda x: np.array([[x[0, 0], 2], [3, x[1, 1]]]),         # nested
    lambda x: np.asarray((x[0], x[1]), dtype=np.float32),
    lambda x: np.array([x[0].astype(np.int64), x[1]]),       # NumPy's dtype: float64
    lambda x: np.array([x[0, 1].astype(np.float32), 0.1]),
    lambda x: np.array([x.astype(np.float32)[0, 2], np.float64(0.1)]),
    lambda x: np.array([x[0] > 0, x[1] > 0]),
])
def test_array_of_a_list_holding_tensors_is_numpys_array(build):
    x = RNG.standard_normal((2, 3))
    replays_as_eager(build, x, RNG.standard_normal((2, 3)) * 1e3)


def _eager_error(fn, x):
    with pytest.raises(ValueError) as eager:
        fn(x)
    return str(eager.value)


@pytest.mark.parametrize("ragged", [
    lambda x: np.array([[x[0]], x[1]]),     # /tmp/review4/c11.py
    lambda x: np.array([x, x[:1]]),
    lambda x: np.asarray([x[0], [x[1], x[2]]]),
])
def test_a_ragged_list_raises_numpys_own_error_at_the_line(ragged):
    """Review 4, finding 5: NumPy raises ValueError (no array is made); the capture used to
    refuse it with a fix (np.stack of the list) that made no array either."""
    x = np.ones(3)
    with pytest.raises(ValueError) as captured:
        cv.capture(ragged, cv.spec(3))
    assert type(captured.value) is ValueError
    assert str(captured.value) == _eager_error(ragged, x)
    assert captured.value.__traceback__ is not None


@pytest.mark.parametrize("numpy1, fixed", [
    (lambda x: np.array([x, x * 2.0], copy=False), lambda x: np.asarray([x, x * 2.0])),
    (lambda x: np.asarray([x[0], x[1]], copy=False), lambda x: np.asarray([x[0], x[1]])),
    (lambda x: np.array(x, dtype=np.float32, copy=False),
     lambda x: np.asarray(x, dtype=np.float32)),
    (lambda x: np.asarray(x, np.int64, copy=False), lambda x: np.asarray(x, np.int64)),
], ids=["array-list", "asarray-list", "array-cast", "asarray-cast"])
def test_copy_false_that_needs_a_copy_raises_numpys_error_and_its_fix_captures(numpy1, fixed):
    """Review 4, finding 5: NumPy 2 raises for ``copy=False`` where a copy is needed (a list
    always, a cast); the capture did not. NumPy's own message names the fix, np.asarray,
    which applied captures and replays as eager."""
    x = RNG.standard_normal(3)
    with pytest.raises(ValueError) as captured:
        cv.capture(numpy1, cv.spec(3, "float64"))
    message = _eager_error(numpy1, x)
    assert str(captured.value) == message
    assert message.startswith("Unable to avoid copy while creating an array as requested.")
    assert "replace it with `np.asarray(obj)`" in message
    replays_as_eager(fixed, x, RNG.standard_normal(3) * 1e3)


def test_copy_false_of_a_tensor_with_no_cast_is_the_tensor_itself():
    def f(x):
        assert np.array(x, copy=False) is x and np.asarray(x, copy=False) is x
        assert np.array(x, dtype=x.dtype, copy=False) is x
        return x * 2.0

    replays_as_eager(f, RNG.standard_normal(3))


def test_an_f_order_stays_refused_with_its_fix():
    with pytest.raises(cv.DataReadError) as err:
        cv.capture(lambda x: np.asarray(x, order="F") * 2, cv.spec(3))
    what, _, fix = str(err.value).splitlines()
    assert "converts the tensor `x` to an ndarray" in what
    assert fix == ("Fix: keep the tensor: np.asarray(t) is t itself, np.asarray(t, dtype) is "
                   "t.astype(dtype, copy=False).")
    replays_as_eager(lambda x: x * 2, np.ones(3))  # the fix applied: x itself


def test_an_ndarray_given_to_asarray_stays_the_same_object():
    W = np.ones(3)

    def f(x):
        v = np.asarray(W)
        assert v is W
        return x * v

    replays_as_eager(f, RNG.standard_normal(3))


def test_a_format_of_a_value_with_examples_says_return_it_and_the_fix_works():
    def f(x):
        print(f"mean {x.mean():.3f}")
        return x * 2.0

    with pytest.raises(cv.DataReadError) as err:
        cv.capture(f, np.ones(3))
    what, why, fix = str(err.value).splitlines()
    assert what.startswith('`print(f"mean {x.mean():.3f}")`') or "formats the value" in what
    assert "formatting needs the number" in why
    assert fix == ("Fix: return the tensor from the captured function and format the replay's "
                   "output: graph.replay(inputs)[\"out\"].")

    def fixed(x):
        return x * 2.0, x.mean()

    graph = cv.capture(fixed, np.ones(3))
    x = RNG.standard_normal(3)
    out = graph.replay({"x": x})
    values = list(out.values())
    same(values[0], x * 2.0)
    assert f"mean {values[1]:.3f}" == f"mean {x.mean():.3f}"


def test_asarray_of_a_numpy_scalar_is_a_new_0d_array_written_in_place():
    # review 7, finding 23: np.asarray(x.sum()) was the scalar itself (immutable: += rebound)
    def f(x):
        s = x.sum()
        a = np.asarray(s)
        kept = a
        a += 1.0  # a 0-d ndarray: written in place, seen through kept; s, NumPy's scalar, not
        b = np.array(x[0], dtype=np.float32)
        return kept, s, b

    graph = cv.capture(f, cv.spec((3,), "float64"))
    x = RNG.standard_normal(3)
    got, want = graph.replay({"x": x}), f(x)
    for value, eager in zip(got.values(), want):  # (s is not a + 1's old value: a copy)
        same(np.asarray(value), np.asarray(eager))


def test_copy_false_of_a_numpy_scalar_raises_numpys_error():
    def f(x):
        return np.asarray(x.sum(), copy=False)

    with pytest.raises(ValueError, match="Unable to avoid copy"):
        f(np.ones(3))
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        cv.capture(f, cv.spec((3,), "float64"))


@pytest.mark.parametrize("read", [
    lambda x: x.item(3), lambda x: x.item(-1), lambda x: x.item(np.int64(2)),
    lambda x: x.reshape(2, 3).item(1, 2), lambda x: x.reshape(2, 3).item((0, 1))],
    ids=["flat", "negative", "numpy_int", "two_indices", "tuple"])
def test_item_of_an_index_is_the_element_read_as_item_reads_it(read):
    """``t.item(i)`` (R13 #12: a bare TypeError on dc00c85, 'takes 1 positional argument') is
    ``ndarray.item(i)``: the element, read into Python as ``t[i].item()`` is (a guard)."""
    x, v = np.arange(6.0), np.ones(2)

    def fn(x, v):
        return v * read(x)

    graph = cv.capture(fn, x, v)
    same(graph.replay({"x": x, "v": v})["out"], fn(x, v))
    with pytest.raises(cv.GuardError, match="these inputs take another branch than the "
                                            r"capture's examples: guard %\d+ \(\.item\(\) of"):
        graph.replay({"x": x + 1, "v": v})


@pytest.mark.parametrize("index, numpys", [((10,), IndexError), ((1, 2), ValueError)])
def test_item_of_a_bad_index_raises_numpys_error_type(index, numpys):
    x = np.arange(6.0)
    with pytest.raises(numpys):
        x.item(*index)
    with pytest.raises(numpys):
        cv.capture(lambda x: x * x.item(*index), x)
