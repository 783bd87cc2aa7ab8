"""Constants kept by reference (capviz/core/references.py): a capture keeps a large ndarray
operand itself, not a copy, and never replays a value the program did not use. The documented
rule, the same on every backend: a change of the array in place between two uses or before the
capture ends is refused at capture; a change after the capture is refused by every replay,
executor and save until ``graph.changed()`` accepts it, after which every backend replays
with the new values; a loaded graph owns its arrays."""

import os
import tempfile

import numpy as np
import pytest
from helpers.engines import engine

import capviz as cv
from capviz.core import references
from capviz.core.references import REFERENCE_BYTES, changed_constants, fingerprint

BACKENDS = ["numpy", "fakecupy", "dask", "jax"]


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    return engine(request.param, monkeypatch)


def weight(rows=1024, cols=512, seed=0):
    """A float32 array of 2 MiB: kept by reference."""
    w = np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32)
    assert w.nbytes >= REFERENCE_BYTES
    return w


def x_of(rows=1024):
    return np.random.default_rng(1).standard_normal((3, rows)).astype(np.float32)


def replayed(graph, x, backend):
    return np.asarray(graph.replay({"x": x}, backend=backend, to_numpy=True)["out"])


def assert_close(got, want, backend):
    if backend in ("numpy", "cupy", "dask"):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def save_load(graph):
    path = os.path.join(tempfile.mkdtemp(), "g.json")
    graph.save(path)
    return cv.load(path)


# --- kept, not copied -------------------------------------------------------------------------


def test_a_large_operand_is_kept_by_reference_and_a_small_one_copied():
    w, b = weight(), np.ones(512, np.float32)
    graph = cv.capture(lambda x: x @ w + b, cv.spec((3, 1024), "float32"))
    by_name = {graph.nodes[i].name: v for i, v in graph.constant_values.items()}
    assert by_name["w"] is w
    assert by_name["b"] is not b and np.shares_memory(by_name["b"], b) is False
    assert list(graph.constant_sources) == [n.index for n in graph.constants
                                            if n.name == "b"]  # (checked against b: review 9,
    assert sorted(graph.constant_fingerprints) == sorted(  # finding 3)
        n.index for n in graph.constants)


def test_fingerprint_sees_every_edit_a_user_makes_in_place():
    w = np.random.default_rng(0).standard_normal((512, 1021)).astype(np.float64)
    kept = fingerprint(w)
    edits = [
        lambda a: a.__setitem__((0, 0), np.nextafter(a[0, 0], 1)),  # one ulp
        lambda a: a.__setitem__(slice(0, 2), -a[0:2]),  # signs of whole rows
        lambda a: a.__setitem__((slice(None), 0), -a[:, 0]),  # signs of a column (1021 apart)
        lambda a: a.__setitem__((0, slice(0, 2)), -a[0, 0:2]),  # two signs in one row
        lambda a: a.__setitem__((slice(0, 2), 0), -a[0:2, 0]),  # two signs 1021 words apart
        lambda a: a.__setitem__(slice(None), a[::-1]),  # reversed rows
        lambda a: a.reshape(-1).sort(),  # sorted in place
        lambda a: a.__setitem__(([0, 1],), a[[1, 0]]),  # two rows swapped (1021 words apart)
    ]
    for k, edit in enumerate(edits):
        copy = w.copy()
        edit(copy)
        assert not np.array_equal(copy.view(np.uint64), w.view(np.uint64)), k
        assert fingerprint(copy) != kept, k
    assert fingerprint(w.copy()) == kept
    assert fingerprint(w.T) != kept  # the layout is part of it
    reshaped = w.copy()
    reshaped.shape = (1021, 512)  # the same bytes, another shape set in place
    assert fingerprint(reshaped) != kept
    square = np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float32)
    transposed = square.copy()
    transposed[...] = square.T
    assert fingerprint(transposed) != fingerprint(square)


# --- during the capture -----------------------------------------------------------------------


def test_an_array_edited_in_place_between_uses_is_refused_at_the_second_use():
    w = weight()

    def fn(x):
        y = x @ w
        w[0, 0] += 1.0  # plain NumPy on the user's array, between two uses
        return y + x @ w

    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(fn, cv.spec((3, 1024), "float32"))
    message = str(info.value)
    assert "array %1 'w' (float32[1024, 512], recorded at" in message
    assert "changed in place between two uses in this capture" in message
    assert "x @ w.copy()" in message
    assert f"test_constant_references.py:{fn.__code__.co_firstlineno + 3} in fn" in message
    assert info.value.graph.nodes  # the partial graph is kept


def test_an_array_edited_after_its_use_before_the_capture_ends_is_refused_at_the_edit():
    """NumPy's own write to the weight after the capture read it (no tensor meets it) is refused
    at its line when the capture ends (the outside arrays too large to copy are watched by
    their fingerprint, trace/outside_writes.py): a replay would read the edited weight, eager
    read the old one."""
    w = weight()

    def fn(x):
        y = x @ w
        w[5, 5] = 0.0  # the replay would read this, eager read the old value
        return y

    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(fn, cv.spec((3, 1024), "float32"))
    message = str(info.value)
    line = fn.__code__.co_firstlineno + 2
    assert message.startswith(f"`w[5, 5] = 0.0` at {__file__}:{line} in fn: NumPy's own "
                              "operators wrote the outside ndarray w, a write no state of the "
                              "graph records.")
    assert "it is too large (2.0 MiB) for the capture to keep a copy of" in message
    assert info.value.graph.nodes  # the partial graph is kept


def test_a_small_buffer_refilled_between_uses_is_still_recorded_at_each_use():
    def fn(x):
        buf = np.zeros(3, np.float32)
        outs = []
        for i in range(3):
            buf[i] = i + 1
            outs.append(x * buf)
        return tuple(outs)

    x = np.arange(3, dtype=np.float32)
    graph = cv.capture(fn, cv.spec((3,), "float32"))
    assert not graph.constant_fingerprints
    got = graph.replay({"x": x})
    for k, want in enumerate(fn(x)):
        np.testing.assert_array_equal(got[f"out{k}"], want)


# --- between the capture and a replay, on every backend ---------------------------------------


def test_an_edit_after_capture_is_refused_until_graph_changed_then_replayed(backend):
    w, x = weight(), x_of()
    graph = cv.capture(lambda x: np.tanh(x @ w), cv.spec(x.shape, "float32"))
    assert_close(replayed(graph, x, backend), np.tanh(x @ w), backend)
    fn = graph.compile(backend=backend)
    w[7] *= 2.0  # the user edits the weight in place
    for run in (lambda: replayed(graph, x, backend), lambda: fn(x),
                lambda: graph.executor({"x": x}, backend=backend).run(),
                lambda: graph.save(os.path.join(tempfile.mkdtemp(), "g.json"))):
        with pytest.raises(cv.ReplayError) as info:
            run()
        assert "constant %1 'w' (float32[1024, 512], recorded at" in str(info.value)
        assert "changed in place since the capture" in str(info.value)
        assert "Call graph.changed()" in str(info.value)
    graph.changed()  # accepted: every backend replays with the new values
    assert_close(replayed(graph, x, backend), np.tanh(x @ w), backend)
    assert_close(np.asarray(fn(x)[0]), np.tanh(x @ w), backend)


def test_a_model_checked_while_its_program_runs_is_refused_before_any_result(backend):
    """16 MiB of weights: the replay's check runs on a thread while the program computes,
    and its refusal comes before any result, on every backend and every way to run."""
    w, x = weight(rows=4096, cols=1024), x_of(rows=4096)
    assert w.nbytes >= references.OVERLAP_BYTES
    graph = cv.capture(lambda x: np.tanh(x @ w), cv.spec(x.shape, "float32"))
    fn = graph.compile(backend=backend)
    assert_close(np.asarray(fn(x)[0]), np.tanh(x @ w), backend)
    w[4095, 1023] = np.nextafter(w[4095, 1023], np.inf)  # its last element, by one ulp
    for run in (lambda: replayed(graph, x, backend), lambda: fn(x)):
        with pytest.raises(cv.ReplayError) as info:
            run()
        assert "constant %1 'w' (float32[4096, 1024], recorded at" in str(info.value)
        assert "changed in place since the capture" in str(info.value)
        assert info.value.node is graph.nodes[1]
    graph.changed()
    assert_close(np.asarray(fn(x)[0]), np.tanh(x @ w), backend)


def test_a_program_failing_on_a_changed_constant_is_refused_for_the_change(backend,
                                                                           monkeypatch):
    """The check runs beside the program; when the program fails because the user edited an
    index array kept by reference (an index now out of bounds), the error says so, with the
    program's failure as its cause (NumPy and Dask read the array itself; CuPy and JAX
    compute with the copy they made on the device, and are refused all the same)."""
    monkeypatch.setattr(references, "OVERLAP_BYTES", 0)  # the check on its own thread
    idx = np.arange(REFERENCE_BYTES // 8, dtype=np.int64) % 3
    x = np.arange(3, dtype=np.float32)
    graph = cv.capture(lambda x: np.take(x, idx), cv.spec((3,), "float32"))
    assert list(graph.constant_fingerprints)
    np.testing.assert_array_equal(replayed_as(graph, x, backend), np.take(x, idx))
    idx[5] = 10**6
    with pytest.raises(cv.ReplayError) as info:
        replayed_as(graph, x, backend)
    assert "constant %1 'idx' (int64[131072], recorded at" in str(info.value)
    assert "changed in place since the capture" in str(info.value)
    if backend in ("numpy", "dask"):
        assert info.value.__cause__ is not None  # the program's own failure


def replayed_as(graph, x, backend):
    return np.asarray(graph.replay({"x": x}, backend=backend, to_numpy=True)["out"])


def test_memory_two_constants_share_is_read_once_and_an_edit_refuses_both():
    w, x = weight(rows=512, cols=512), x_of(rows=512)
    graph = cv.capture(lambda x: x @ w @ w.T, cv.spec(x.shape, "float32"))
    assert len(graph.constant_fingerprints) == 2  # w, and w.T: a view of the same memory
    read = []
    real = references._memory_digest
    monkey = pytest.MonkeyPatch()
    monkey.setattr(references, "_memory_digest", lambda v: read.append(v) or real(v))
    try:
        assert changed_constants(graph) == []
        assert len(read) == 1
        np.testing.assert_allclose(graph.replay({"x": x})["out"], x @ w @ w.T, rtol=1e-5)
        w[0, 1] = 7.0
        assert changed_constants(graph) == sorted(graph.constant_fingerprints)
    finally:
        monkey.undo()
    with pytest.raises(cv.ReplayError, match="constant %1 'w' .* changed in place"):
        graph.replay({"x": x})


def test_a_loaded_graph_owns_its_arrays(backend):
    w, x = weight(), x_of()
    want = np.tanh(x @ w)
    graph = cv.capture(lambda x: np.tanh(x @ w), cv.spec(x.shape, "float32"))
    loaded = save_load(graph)
    assert not loaded.constant_fingerprints
    w[...] = 0.0  # the user's array changes; the loaded graph keeps what was saved
    assert_close(replayed(loaded, x, backend), want, backend)
    with pytest.raises(cv.ReplayError, match="changed in place since the capture"):
        replayed(graph, x, backend)


def test_replacing_a_referenced_constant_makes_it_owned():
    w, x = weight(), x_of()
    graph = cv.capture(lambda x: x @ w, cv.spec(x.shape, "float32"))
    (index,) = graph.constant_fingerprints
    graph.constant_values[index] = np.ones_like(w)
    assert not graph.constant_fingerprints
    w[...] = 5.0
    np.testing.assert_array_equal(graph.replay({"x": x})["out"], x @ np.ones_like(w))


def test_a_weight_kept_by_reference_then_written_by_the_capture_becomes_a_state():
    """Issue 20 turns an outside array the capture writes into a state; read first as a
    constant kept by reference, its recorded value is then copied, and the user's array is
    left as eager NumPy leaves it."""
    w, x = weight(), x_of()
    keep = w.copy()

    def fn(x):
        y = (x @ w).sum()
        w[...] += y * 0.0  # a recorded write into the outside array: a state
        return y

    graph = cv.capture(fn, cv.spec(x.shape, "float32"))
    assert [n.kind for n in graph.nodes if n.name == "w"] == ["state", "output"]
    assert not graph.constant_fingerprints
    np.testing.assert_array_equal(w, keep)  # as eager NumPy leaves it
    out = graph.replay({"x": x})["out"]
    np.testing.assert_allclose(out, (x @ keep).sum(), rtol=1e-5)
