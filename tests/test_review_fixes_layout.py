"""Review fixes: ndarray subclasses, input memory layout, non-numeric dtypes.

* An ndarray subclass (``np.matrix``, a masked array...) computes otherwise than the plain
  ndarray a graph holds: refused at capture (at the user's line) and as a replay input.
* A reshape/ravel view-or-copy decision rests on the input's assumed C layout: a graph that
  writes through such a buffer refuses a non-C-contiguous input at replay, also after
  save/load; a graph without such a write takes any layout and equals eager bit for bit.
* A result, input or constant of a non-numeric dtype is refused at capture, so a saved graph
  always loads.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import capviz as cv

with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)  # np.matrix is discouraged
    M = np.matrix([[1.0, 2.0], [3.0, 4.0]])
MASKED = np.ma.masked_array([[1.0, 2.0], [3.0, 4.0]], mask=[[0, 1], [0, 0]])
THIS_FILE = "test_review_fixes_layout.py"


def _spec22() -> cv.Spec:
    return cv.spec((2, 2), "float64")


# --- ndarray subclasses -------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [lambda x: x * M, lambda x: M * x, lambda x: np.add(x, M),
                                lambda x: np.dot(M, x), lambda x: x @ M,
                                lambda x: np.concatenate([x, M])],
                         ids=["x*M", "M*x", "np.add", "np.dot", "x@M", "concatenate"])
def test_matrix_operand_is_refused_at_the_users_line(fn):
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"ndarray subclass \(numpy\.matrix\).*np\.asarray\(M\) and write @"
                       ) as info:
        cv.capture(fn, _spec22())
    assert THIS_FILE in str(info.value)
    assert info.value.graph.violations[-1].kind == "unsupported_op"


@pytest.mark.parametrize("fn", [lambda x: (x + MASKED).sum(), lambda x: np.add(MASKED, x),
                                lambda x: np.where(MASKED > 2, x, 0.0)],
                         ids=["x+MA", "np.add", "np.where"])
def test_masked_array_operand_is_refused(fn):
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"numpy\.ma\.MaskedArray.*m\.filled\(value\).*np\.where"):
        cv.capture(fn, _spec22())


def test_other_subclasses_are_refused_and_memmap_is_plain(tmp_path):
    class Tagged(np.ndarray):
        pass

    tagged = np.ones((2, 2)).view(Tagged)
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"ndarray subclass \(.*Tagged\).*np\.asarray\(value\)"):
        cv.capture(lambda x: x + tagged, _spec22())

    mm = np.memmap(tmp_path / "w.dat", dtype="float64", mode="w+", shape=(2, 2))
    mm[:] = [[1.5, -2.0], [3.25, 4.0]]
    g = cv.capture(lambda x: x * mm, _spec22())
    x = np.arange(4.0).reshape(2, 2)
    got = g.replay({"x": x})["out"]
    want = np.asarray(x * mm)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_subclass_constant_and_input_example_are_refused():
    cap = cv.CaptureDevice()
    with pytest.raises(cv.UnsupportedOperationError, match=r"numpy\.matrix.*np\.asarray\(M\)"):
        with cap.capture_scope() as scope:
            scope.constant(M, name="w")
    with pytest.raises(cv.UnsupportedOperationError, match=r"numpy\.matrix"):
        with cap.capture_scope() as scope:
            scope.input("x", M)


def test_subclass_record_mode_keeps_the_violation():
    cap = cv.CaptureDevice()
    with pytest.raises(cv.UnsupportedOperationError, match=r"numpy\.matrix"):
        with cap.capture_scope(on_violation="record") as scope:
            x = scope.input("x", (2, 2), "float64")
            scope.output(x * M, name="y")
    assert [v.kind for v in scope.graph.violations] == ["unsupported_op"]


@pytest.mark.parametrize("value, kind", [(M, "numpy.matrix"),
                                         (np.ma.masked_array(np.ones((2, 2))),
                                          "numpy.ma.MaskedArray")])
def test_replay_refuses_a_subclass_input(value, kind):
    g = cv.capture(lambda x: x * 2.0, _spec22())
    pattern = rf"input 'x': expected a numpy\.ndarray float64\[2,2\], got {kind}"
    with pytest.raises(cv.ReplayInputError, match=pattern):
        g.replay({"x": value})
    with pytest.raises(cv.ReplayInputError, match=pattern):
        g.compile()(value)
    with pytest.raises(cv.ReplayInputError, match=pattern):
        g.executor({"x": value})


# --- input memory layout ------------------------------------------------------------------------


def _write_through_reshape(x):
    y = x.reshape(-1)  # a view for a C-ordered x, a copy for an F-ordered one
    y[0] = 100.0
    return x


def _write_through_transposed_reshape(x):
    y = x.T.reshape(-1)  # a copy for a C-ordered x, a view for an F-ordered one
    y[0] = 100.0
    return x


def _write_base_after_reshape(x):
    y = x.reshape(-1)
    x[0, 0] = 7.0
    return y


def _write_through_result_reshape(x):
    e = x * 2  # laid out like x (NumPy's order "K")
    y = e.reshape(-1)
    y[0] = 1.0
    return e


def _write_through_ravel(x):
    y = x.T.ravel()
    y[0] = 5.0
    return x


LAYOUT_DEPENDENT = [_write_through_reshape, _write_through_transposed_reshape,
                    _write_base_after_reshape, _write_through_result_reshape,
                    _write_through_ravel]


def _example() -> np.ndarray:
    return np.arange(6, dtype=np.float32).reshape(2, 3)


@pytest.mark.parametrize("fn", LAYOUT_DEPENDENT, ids=lambda f: f.__name__)
def test_layout_dependent_write_refuses_non_c_inputs(fn):
    g = cv.capture(fn, cv.spec((2, 3), "float32"))
    assert g.input_nodes[0].params["layout"] == "C"
    a = _example()
    got = g.replay({"x": a.copy()})["out"]
    want = fn(a.copy())
    assert got.dtype == want.dtype and np.array_equal(got, want)
    fortran = np.asfortranarray(a)
    assert not np.array_equal(fn(fortran.copy(order="K")), want)  # eager decides otherwise
    pattern = r"input 'x': expected a C-contiguous array .*np\.ascontiguousarray\(x\)"
    with pytest.raises(cv.ReplayInputError, match=pattern):
        g.replay({"x": fortran})
    with pytest.raises(cv.ReplayInputError, match=pattern):
        g.compile()(fortran)
    with pytest.raises(cv.ReplayInputError, match=pattern):
        g.replay({"x": np.ascontiguousarray(a.T).T})  # transposed


def test_layout_mark_survives_save_and_load(tmp_path):
    g = cv.capture(_write_through_reshape, cv.spec((2, 3), "float32"))
    path = tmp_path / "g.json"
    g.save(path)
    loaded = cv.load(path)
    assert loaded.input_nodes[0].params == g.input_nodes[0].params == {"layout": "C", "written": 2}
    with pytest.raises(cv.ReplayInputError, match=r"np\.ascontiguousarray\(x\)"):
        loaded.replay({"x": np.asfortranarray(_example())})
    a = _example()
    assert np.array_equal(loaded.replay({"x": a.copy()})["out"], _write_through_reshape(a))


def _reshape_without_write(x):
    return x.reshape(-1) * 2


def _write_into_a_result(x):
    e = x * 2  # laid out like x: a write keeps that layout, as eager's in-place write does
    e[0] = 1.0
    return e.T, e.sum(axis=0), e.sum(axis=1), e.sum()


@pytest.mark.parametrize("fn", [_reshape_without_write, _write_into_a_result],
                         ids=lambda f: f.__name__)
def test_graphs_without_a_layout_decision_take_any_layout(fn):
    g = cv.capture(fn, cv.spec((2, 3), "float32"))
    assert "layout" not in g.input_nodes[0].params
    fortran = np.asfortranarray(_example())
    got = g.replay({"x": fortran.copy(order="K")})
    want = fn(fortran.copy(order="K"))
    for name, value in zip(g.outputs, want if isinstance(want, tuple) else (want,)):
        assert got[name].dtype == value.dtype and got[name].strides == value.strides
        assert np.array_equal(got[name], value)


def test_a_write_keeps_the_written_arrays_layout():
    """An update op copies in the written array's own axis order (NumPy's order "K"), so what
    follows runs the kernels eager ran: a reduction of an F-ordered buffer rounds otherwise."""

    def fn(x):
        e = x.T * 2  # F-ordered in eager
        e[0, 0] = 1.0
        v = x.T
        v[1, 1] = 3.0  # a write through a transposed view of the input
        return e.sum(axis=0), e.sum(axis=1), e.sum(), e, v.sum(axis=0), v

    g = cv.capture(fn, cv.spec((64, 3000), "float32"))
    a = np.random.default_rng(0).standard_normal((64, 3000)).astype(np.float32)
    got = g.replay({"x": a.copy()})
    for name, value in zip(g.outputs, fn(a.copy())):
        assert got[name].dtype == value.dtype and got[name].strides == value.strides
        assert np.array_equal(got[name], value)


def test_a_write_into_an_input_needs_it_c_contiguous():
    """Eager writes into the input in place, keeping reversed or gapped strides that replay's
    copy would not keep: such a graph refuses a non-C-contiguous input."""

    def fn(x):
        x[0, 0] = 1.0
        return x.sum(), x

    g = cv.capture(fn, cv.spec((64, 3000), "float32"))
    assert g.input_nodes[0].params["layout"] == "C"
    a = np.random.default_rng(0).standard_normal((64, 3000)).astype(np.float32)
    got = g.replay({"x": a.copy()})
    for name, value in zip(g.outputs, fn(a.copy())):
        assert np.array_equal(got[name], value) and got[name].strides == value.strides
    reversed_ = a.copy()[:, ::-1]
    with pytest.raises(cv.ReplayInputError, match=r"input 'x': expected a C-contiguous array"):
        g.replay({"x": reversed_})


def test_input_example_layout_is_not_recorded():
    """``scope.input("x", example)`` takes shape and dtype only: the graph assumes C order."""
    cap = cv.CaptureDevice()
    fortran = np.asfortranarray(_example())
    with cap.capture_scope() as scope:
        x = scope.input("x", fortran)
        scope.output(_write_through_reshape(x), name="y")
    g = scope.graph
    with pytest.raises(cv.ReplayInputError, match=r"C-contiguous"):
        g.replay({"x": fortran})
    a = _example()
    assert np.array_equal(g.replay({"x": a.copy()})["y"], _write_through_reshape(a.copy()))


# --- non-numeric dtypes -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [object, str, "datetime64[s]", "timedelta64[s]", "S4"])
def test_astype_to_a_non_numeric_dtype_is_refused(dtype, tmp_path):
    with pytest.raises(cv.UnsupportedOperationError,
                       match=re.escape(f"x.astype({np.dtype(dtype)}) of dtype "
                                       f"{np.dtype(dtype)} cannot be recorded")) as info:
        cv.capture(lambda x: x.astype(dtype), cv.spec(3))
    assert THIS_FILE in str(info.value)
    partial = info.value.graph
    partial.save(tmp_path / "partial.json")  # what was recorded still saves and loads
    assert [n.kind for n in cv.load(tmp_path / "partial.json").nodes] == ["input", "violation"]


def test_non_numeric_input_and_constant_are_refused():
    with pytest.raises(cv.UnsupportedOperationError, match=r"input 'x' of dtype datetime64\[s\]"):
        cv.capture(lambda x: x, cv.spec(3, "datetime64[s]"))
    cap = cv.CaptureDevice()
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"array constant of dtype <U1 cannot be recorded"):
        with cap.capture_scope() as scope:
            scope.constant(np.array(["a", "b"]))
