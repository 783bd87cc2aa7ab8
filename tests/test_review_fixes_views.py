"""Multi-result functions with literal operands, and meshgrid's views (hostile review A3, A8):
each literal operand is a result of its own, and a write into the base of copy=False meshgrid
views is refused by name, never replayed stale."""

import numpy as np
import pytest
from conftest import assert_bitwise

import capviz as cv

LITERALS = [0.0, 2, True, np.float32(1.5), 1j, np.int8(-3)]


@pytest.mark.parametrize("literal", LITERALS, ids=repr)
@pytest.mark.parametrize("name", ["broadcast_arrays", "meshgrid"])
def test_a_literal_operand_is_a_result_of_its_own(name, literal):
    fn = getattr(np, name)

    def program(x):
        return tuple(fn(x, literal))

    x = np.arange(3, dtype=np.float32)
    graph = cv.capture(program, cv.spec(x.shape, x.dtype))
    eager = program(x.copy())
    replayed = graph.replay({"x": x})
    assert len(graph.outputs) == len(eager) == 2
    for out, value in zip(graph.outputs, eager):
        assert_bitwise(replayed[out], value)


def test_stacked_broadcast_with_a_scalar_keeps_its_shape():
    def program(x):
        return np.stack(np.broadcast_arrays(x, 0.0))

    x = np.arange(3, dtype=np.float32)
    graph = cv.capture(program, cv.spec(x.shape, x.dtype))
    assert_bitwise(graph.replay({"x": x})["out"], program(x))


def test_a_write_into_the_base_of_meshgrid_views_is_refused_by_name():
    def program(x):
        xx, _ = np.meshgrid(x, x, copy=False)
        x[0] = 9  # eagerly, xx sees this write: its rows are views of x
        return xx

    with pytest.raises(cv.UnsupportedOperationError, match="meshgrid") as info:
        cv.capture(program, cv.spec(3, "float32"))
    assert "test_review_fixes_views.py" in str(info.value)


def test_meshgrid_copies_by_default_so_a_later_write_is_not_seen():
    def program(x):
        xx, yy = np.meshgrid(x, x)
        x[0] = 9
        return xx + yy

    x = np.arange(3, dtype=np.float32)
    graph = cv.capture(program, cv.spec(x.shape, x.dtype))
    assert_bitwise(graph.replay({"x": x})["out"], program(x.copy()))


@pytest.mark.parametrize("literal", LITERALS, ids=repr)
@pytest.mark.parametrize("name", ["hstack", "vstack", "column_stack"])
def test_a_literal_in_a_stacked_sequence_is_an_array_with_its_own_dtype(name, literal):
    """NumPy converts the literal to an array before concatenating, so 1.0 is float64 (not a
    weak scalar): float32 + 1.0 stacks to float64."""
    fn = getattr(np, name)

    def program(x):
        return fn([x, np.full(3, literal) if name != "hstack" else literal])

    x = np.arange(3, dtype=np.float32)
    try:
        eager = program(x)
    except ValueError as err:
        with pytest.raises(ValueError, match=str(err).split(",")[0]):
            cv.capture(program, cv.spec(x.shape, x.dtype))
        return
    graph = cv.capture(program, cv.spec(x.shape, x.dtype))
    assert_bitwise(graph.replay({"x": x})["out"], eager)


@pytest.mark.parametrize("literal", [2.0, [1, 2], np.float32(3)], ids=repr)
def test_atleast_1d_of_a_literal_beside_a_tensor_is_numpys_array(literal):
    def program(x):
        a, b = np.atleast_1d(x, literal)
        return a + b

    x = np.arange(2, dtype=np.float32)
    graph = cv.capture(program, cv.spec(x.shape, x.dtype))
    assert_bitwise(graph.replay({"x": x})["out"], program(x))
