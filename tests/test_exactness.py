"""Exactness is a property of a node, not of a dtype (capviz/replay/exactness.py): an integer or
boolean computed from floats an inexact backend rounds otherwise is not exact there, and
tolerance_for, compare and the replay's warning say so."""

import warnings

import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry
from capviz.replay.exactness import inexact_nodes

X = np.log(np.arange(1, 20001.0))  # exp(X) lands within an ulp of every integer 1..20000


def issue_case(x):
    """The issue's program: integers and booleans from floats, and one boolean from an input."""
    e = np.exp(x)
    return {"ints": e.astype(np.int64), "ge": e >= np.arange(1, 20001.0), "gt": x > 3.0}


def replay_warnings(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run()
    return result, [w for w in caught if issubclass(w.category, cv.InexactResultWarning)]


def test_jax_replay_of_integers_from_floats_warns_once_naming_them():
    pytest.importorskip("jax")
    graph = cv.capture(issue_case, cv.spec(X.shape, X.dtype))
    out, caught = replay_warnings(lambda: graph.replay({"x": X}, backend="jax", to_numpy=True))
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "'ints' (int64, from %1 (exp, recorded at " in message
    assert "test_exactness.py:19 in issue_case)" in message
    assert "'ge' (bool, from %1 (exp" in message
    assert "'gt'" not in message  # a comparison of an input: exact
    assert "Replay with backend='numpy'" in message
    assert caught[0].filename == __file__  # at the user's call
    want = issue_case(X)
    np.testing.assert_array_equal(out["gt"], want["gt"])
    # what the warning is about: where XLA's exp rounds across an integer, the results differ
    assert np.abs(out["ints"] - want["ints"]).max() <= 1
    assert (out["ints"] != want["ints"]).sum() == (out["ge"] != want["ge"]).sum()
    _, again = replay_warnings(lambda: graph.replay({"x": X}, backend="jax", to_numpy=True))
    assert again == []  # once per compiled program
    _, compiled = replay_warnings(lambda: graph.compile(backend="jax")(X))
    assert compiled == []


def test_numpy_replay_is_exact_and_does_not_warn():
    graph = cv.capture(issue_case, cv.spec(X.shape, X.dtype))
    out, caught = replay_warnings(lambda: graph.replay({"x": X}, backend="numpy"))
    assert caught == []
    for name, want in issue_case(X).items():
        np.testing.assert_array_equal(out[name], want)


def test_dask_warns_only_for_what_it_rounds_otherwise():
    pytest.importorskip("dask.array")
    graph = cv.capture(issue_case, cv.spec(X.shape, X.dtype))
    _, caught = replay_warnings(lambda: graph.replay({"x": X}, backend="dask"))
    assert caught == []  # dask runs NumPy's exp per block: exact
    summed = cv.capture(lambda x: (x.sum() > 1.0, x.max() > 1.0), cv.spec(X.shape, X.dtype))
    _, caught = replay_warnings(lambda: summed.replay({"x": X}, backend="dask"))
    assert len(caught) == 1
    assert "'out0' (bool, from %1 (sum" in str(caught[0].message)
    assert "'out1'" not in str(caught[0].message)  # a max picks an element: exact


@pytest.mark.parametrize("name", ["jax", "dask"])
def test_tolerance_for_says_integers_are_exact_and_floats_are_not(name):
    try:
        backend = registry.get(name)
    except cv.BackendUnavailableError as err:
        pytest.skip(str(err))
    for dtype in (np.int64, np.int8, np.uint32, np.bool_):
        assert backend.tolerance_for(dtype) == (0.0, 0.0)
    assert backend.tolerance_for(np.float32) == backend.tolerance != (0.0, 0.0)
    assert backend.tolerance_for(np.float16) == backend.float16_tolerance


def test_inexact_nodes_follow_values_not_dtypes():
    def fn(x, u):
        picked = np.argmax(x)  # an index of exact values
        moved = x.reshape(2, 2).T.astype(np.int32)  # moved and converted: exact
        scaled = (x * 3.0).astype(np.int32)  # from a product XLA may fuse: inexact
        flag = np.tanh(x).max() > 0.5  # a max of inexact floats: inexact
        return picked, moved, scaled, flag, u.sum()

    graph = cv.capture(fn, cv.spec(4), cv.spec(3, np.int64))
    inexact = inexact_nodes(graph)
    by_output = {out.name: out.args[0].index in inexact for out in graph.output_nodes}
    assert by_output == {"out0": False, "out1": False, "out2": True, "out3": True,
                         "out4": False}


def test_compare_against_jax_says_why_an_integer_differs():
    pytest.importorskip("jax")
    graph = cv.capture(lambda x: np.exp(x).astype(np.int64), cv.spec(X.shape, X.dtype))
    found = graph.compare(inputs={"x": X}, against="jax")
    assert found.node is not None and found.node.op == "astype"
    assert found.max_abs == 1.0
    assert "an integer or boolean computed from floats (from %1 (exp, recorded at" in \
        found.message
    assert "the jax backend rounds otherwise than NumPy" in found.message
    exact = cv.capture(lambda x: (x > 3.0, np.argsort(x)), cv.spec(X.shape, X.dtype))
    assert exact.compare(inputs={"x": X}, against="jax").node is None
