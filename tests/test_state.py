"""Arrays from outside that the captured code writes are states: read live at replay, written
back as an eager call writes them (capviz/trace/state.py, capviz/replay/state.py)."""

from __future__ import annotations

import copy
import os

import numpy as np
import pytest

import capviz as cv

RNG = np.random.default_rng(2020)


def same(a, b):
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    assert np.array_equal(a, b, equal_nan=True)


# --- a KV cache across two calls ------------------------------------------------------------


class Attention:
    """The public-code KV cache: self.cache_k[:, pos:pos + L] = xk, then attention over the
    filled part."""

    def __init__(self, heads=2, max_len=8, dim=4):
        self.cache_k = np.zeros((heads, max_len, dim), np.float32)
        self.cache_v = np.zeros((heads, max_len, dim), np.float32)

    def __call__(self, q, xk, xv, pos):
        L = xk.shape[1]
        self.cache_k[:, pos:pos + L] = xk
        self.cache_v[:, pos:pos + L] = xv
        keys = self.cache_k[:, :pos + L]
        values = self.cache_v[:, :pos + L]
        scores = q @ keys.transpose(0, 2, 1) / np.float32(2.0)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = weights / weights.sum(axis=-1, keepdims=True)
        return weights @ values


def _qkv(L):
    return [RNG.standard_normal((2, L, 4)).astype(np.float32) for _ in range(3)]


def test_a_kv_cache_across_two_calls_replays_bit_for_bit_with_its_states():
    captured, eager = Attention(), Attention()
    g0 = cv.capture(lambda q, xk, xv: captured(q, xk, xv, 0), *_qkv(3))
    g1 = cv.capture(lambda q, xk, xv: captured(q, xk, xv, 3), *_qkv(1))
    assert [n.name for n in g0.state_nodes] == ["captured.cache_k", "captured.cache_v"]
    assert not captured.cache_k.any()  # the capture changes nothing outside
    for graph, pos, L in ((g0, 0, 3), (g1, 3, 1), (g1, 4, 1)):
        q, xk, xv = _qkv(L)
        if pos == 4:  # the same graph at another position is another program: recapture
            graph = cv.capture(lambda q, xk, xv: captured(q, xk, xv, 4), q, xk, xv)
        out = graph.replay({"q": q, "xk": xk, "xv": xv})["out"]
        same(out, eager(q, xk, xv, pos))
        same(captured.cache_k, eager.cache_k)
        same(captured.cache_v, eager.cache_v)


# --- AdaGrad over zipped lists ----------------------------------------------------------------


class Model:
    def __init__(self):
        self.W = RNG.standard_normal((3, 4))
        self.b = np.zeros(4)
        self.mW, self.mb = np.zeros_like(self.W), np.zeros_like(self.b)

    def step(self, x, y, lr=0.1):
        pred = x @ self.W + self.b
        d = pred - y
        dW, db = x.T @ d, d.sum(axis=0)
        for param, dparam, mem in zip([self.W, self.b], [dW, db], [self.mW, self.mb]):
            mem += dparam * dparam
            param += -lr * dparam / np.sqrt(mem + 1e-8)
        return (d * d).mean()


def test_adagrad_over_zipped_lists_replays_bit_for_bit_over_three_calls():
    captured = Model()
    eager = copy.deepcopy(captured)
    x, y = RNG.standard_normal((5, 3)), RNG.standard_normal((5, 4))
    graph = cv.capture(captured.step, x, y)
    assert sorted(n.name for n in graph.state_nodes) == ["captured.W", "captured.b",
                                                         "captured.mW", "captured.mb"]
    w_node = graph.node("captured.W")
    assert w_node.kind == "state" and w_node.index < graph.ops[0].index  # read before written
    for _ in range(3):
        x, y = RNG.standard_normal((5, 3)), RNG.standard_normal((5, 4))
        same(graph.replay({"x": x, "y": y})["out"], np.asarray(eager.step(x, y)))
        for name in ("W", "b", "mW", "mb"):
            same(getattr(captured, name), getattr(eager, name))


# --- SGD on a global --------------------------------------------------------------------------

w = np.ones(4, np.float32)


def sgd(x, y):
    global w
    err = x @ w - y
    w -= np.float32(0.01) * (x.T @ err)
    return (err * err).sum()


def test_sgd_on_a_global_replays_bit_for_bit_and_two_replays_advance_twice():
    global w
    x, y = RNG.standard_normal((6, 4)).astype(np.float32), RNG.standard_normal(6).astype(
        np.float32)
    start = w.copy()
    graph = cv.capture(sgd, x, y)
    same(w, start)
    assert "  %2 = state w : float32[4]" in str(graph) and "state w = %" in str(graph)
    live = w
    outs = [graph.replay({"x": x, "y": y})["out"] for _ in range(2)]
    after_replays = w.copy()
    w = start.copy()
    eager = [np.asarray(sgd(x, y)) for _ in range(2)]
    assert live is not w
    same(after_replays, w)
    for a, b in zip(outs, eager):
        same(a, b)


# --- the write forms ----------------------------------------------------------------------------


def test_every_write_form_records_into_the_outside_array():
    def writes(t, buf, params):
        np.add(buf, t, out=buf)
        np.clip(buf, -t, t, out=buf)
        buf[1:3] = t[:2] * 2
        params["blocks"][0]["m"][0] = t
        view = params["blocks"][0]["m"][1]
        view *= t
        np.copyto(params["blocks"][0]["m"][2], t + 1)
        return buf.dot(t) if False else t * 1

    def run(fn):
        buf = np.arange(4.0)
        params = {"blocks": [{"m": np.ones((3, 4))}]}
        graphs, outs = [], []
        return buf, params, graphs, outs

    buf, params, _, _ = run(writes)
    buf_e, params_e = buf.copy(), copy.deepcopy(params)
    t = np.array([0.5, 2.0, -1.0, 3.0])
    graph = cv.capture(lambda t: writes(t, buf, params), t)
    assert [n.name for n in graph.state_nodes] == ["buf", 'params["blocks"][0]["m"]']
    for _ in range(2):
        graph.replay({"t": t})
        writes(t, buf_e, params_e)
        same(buf, buf_e)
        same(params["blocks"][0]["m"], params_e["blocks"][0]["m"])


def test_state_return_leaves_the_arrays_and_returns_the_new_values():
    acc = np.zeros(3)

    def f(x):
        acc[:] += x
        return x * 2

    graph = cv.capture(f, np.ones(3))
    result = graph.replay({"x": np.ones(3)}, state="return")
    assert not acc.any()
    same(result.states["acc"], np.ones(3))
    graph.replay({"x": np.ones(3)})
    graph.replay({"x": np.ones(3)})
    same(acc, np.full(3, 2.0))
    with pytest.raises(ValueError, match="state must be 'write' or 'return', got 'none'"):
        graph.replay({"x": np.ones(3)}, state="none")


def test_compiled_replay_writes_the_states_back():
    acc = np.zeros(3)

    def f(x):
        acc[...] += x
        return x * acc  # a read the capture sees (x is a tensor): the written value

    run = cv.capture(f, np.ones(3)).compile()
    same(run(np.ones(3))[0], np.ones(3))
    same(run(np.full(3, 3.0))[0], np.full(3, 12.0))
    same(acc, np.full(3, 4.0))


class Mixed:
    """Four states: two whose last write is a ufunc of their own dtype (written in place by a
    replay), a float32 one updated from float64 (an astype last) and a cache row (a setitem
    last), both copied back after the run."""

    def __init__(self):
        self.m = np.zeros(5)
        self.w = np.linspace(-1.0, 1.0, 5).copy()  # (linspace returns a view)
        self.w32 = np.ones(5, np.float32)
        self.cache = np.zeros((3, 5))

    def step(self, g, k):
        m, w = self.m, self.w
        m += g * g
        w -= 0.1 * g / np.sqrt(m + 1e-8)
        self.w32 -= g  # float64 into float32: the astype NumPy's casting makes
        self.cache[k] = w  # a row of the cache
        return w.sum()


def test_a_states_last_ufunc_writes_into_the_live_array_and_equals_eager():
    from capviz.replay.state import in_place

    model, twin = Mixed(), Mixed()
    graph = cv.capture(lambda g: model.step(g, 1), cv.spec((5,), "float64"))
    in_live = sorted(graph.nodes[s].name for s in in_place(graph).values())
    assert in_live == ["model.m", "model.w"]
    run = graph.compile()
    for call in range(4):  # replays and compiled replays, in turns, as eager calls
        g = RNG.standard_normal(5)
        out = graph.replay({"g": g})["out"] if call % 2 else run(g)[0]
        same(out, np.asarray(twin.step(g, 1)))
        for name in ("m", "w", "w32", "cache"):
            same(getattr(model, name), getattr(twin, name))
    before = {name: getattr(model, name).copy() for name in ("m", "w", "w32", "cache")}
    result = graph.replay({"g": np.ones(5)}, state="return")  # writes nothing
    for name, value in before.items():
        same(getattr(model, name), value)
    same(result.states["model.m"], before["m"] + 1.0)


def test_a_replay_that_fails_after_a_states_last_write_leaves_it_written_as_eager_does():
    """The last write of a state goes into the live array where the program makes it, so a
    replay failing at a later node has written that state and not the ones after, as an eager
    call failing at that line has: each array holds its old value or its new one, never a
    mix."""
    class Step:
        def __init__(self):
            self.m, self.w, self.rows = np.zeros(3), np.ones(3), np.zeros((2, 3))

        def __call__(self, g):
            self.m += g * g  # written in place: before the failing node
            self.rows[0] = g  # copied back after the run: never, the run fails
            self.w -= 1.0 / g  # fails for a zero in g under divide="raise"
            return g * 1.0

    model, twin = Step(), Step()
    graph = cv.capture(model, cv.spec((3,), "float64"))
    g = np.array([1.0, 0.0, 2.0])
    for attempt in ("replay", "compiled"):
        with np.errstate(divide="raise"), pytest.raises(
                cv.ReplayError, match=r"replay failed at node %\d+ \(divide\) .*"
                                      r"FloatingPointError: divide by zero"):
            graph.replay({"g": g}) if attempt == "replay" else graph.compile()(g)
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            twin(g)
        same(model.m, twin.m)
        same(model.w, twin.w)
    same(model.m, 2 * g * g)  # written twice, as two failing eager calls wrote it
    same(model.w, np.ones(3))
    assert not model.rows.any() and twin.rows.any()  # the one difference: see the docs


def test_an_input_sharing_a_states_memory_is_refused_by_name():
    """Eager NumPy reads a state's written values through an input that shares its memory (a
    view, or ``np.frombuffer`` of it, with no ``.base`` chain back); a replay reads its inputs
    where its program does, so no replay can promise eager's reads: refused, naming both."""

    def accumulate(x):
        global SHARED
        SHARED += x
        return x + 1.0

    graph = cv.capture(accumulate, cv.spec((3,), "float64"))
    SHARED[...] = [1.0, 2.0, 3.0]
    aliases = [SHARED[::-1], SHARED.reshape(3, 1)[:, 0], np.frombuffer(memoryview(SHARED)),
               np.lib.stride_tricks.as_strided(SHARED, (3,), (8,)),
               np.lib.stride_tricks.sliding_window_view(SHARED, 1)[:, 0]]
    for alias in aliases:
        for replay in (lambda: graph.replay({"x": alias}), lambda: graph.compile()(alias),
                       lambda: graph.replay({"x": alias}, state="return")):
            with pytest.raises(cv.ReplayInputError, match=(
                    r"input 'x' shares memory with the state SHARED, which the graph writes: "
                    r"eager NumPy would read the values written there through 'x'.*"
                    r"Fix: pass a copy \(x\.copy\(\)\)")):
                replay()
            same(SHARED, np.array([1.0, 2.0, 3.0]))  # refused before anything ran
    same(graph.replay({"x": np.ones(3)})["out"], np.full(3, 2.0))  # an input apart
    same(SHARED, np.array([2.0, 3.0, 4.0]))
    same(graph.compile()(np.ones(3))[0], np.full(3, 2.0))
    same(SHARED, np.array([3.0, 4.0, 5.0]))


def test_a_guard_after_a_states_last_write_refuses_the_replay_before_any_write():
    """A GuardError says the recorded ops are not what the code runs on these inputs: the
    replay did not run, so no live array may be written (as the copy back never did)."""

    class Acc:
        def __init__(self):
            self.m = np.zeros(3)

        def __call__(self, g):
            self.m += g  # the last write, a ufunc: in place when nothing can refuse after it
            if g.sum() > 0:
                return g * 2.0
            return g * -1.0

    acc = Acc()
    graph = cv.capture(acc, np.ones(3))
    acc.m[...] = 0.0
    for replay in (lambda: graph.replay({"g": -np.ones(3)}), lambda: graph.compile()(-np.ones(3))):
        with pytest.raises(cv.GuardError, match="another branch than the capture's"):
            replay()
        same(acc.m, np.zeros(3))
    graph.replay({"g": np.ones(3)})
    same(acc.m, np.ones(3))


SHARED = np.ones(3)


def test_an_array_made_inside_the_capture_is_no_state():
    base = np.arange(3.0)

    def f(x):
        acc = base.copy()  # ndarray.copy: no hook sees it; the array dies with the call
        acc += x
        return acc

    graph = cv.capture(f, np.ones(3))
    assert graph.state_nodes == [] and len(graph.constants) == 1
    for _ in range(2):
        same(graph.replay({"x": np.ones(3)})["out"], f(np.ones(3)))


# --- the graph: listed, saved, loaded, drawn, refused where it cannot be written back -------


def test_states_are_saved_loaded_drawn_and_refused_by_name_on_jax(tmp_path):
    cache = np.zeros((2, 3))

    def f(x):
        cache[0] = x
        return x + 1

    graph = cv.capture(f, np.ones(3))
    graph.verify()
    path = os.fspath(tmp_path / "g.json")
    graph.save(path)
    loaded = cv.load(path)
    assert [n.kind for n in loaded.state_nodes] == ["state"] and loaded.outputs == ["out"]
    with pytest.raises(cv.ReplayInputError,
                       match=r"the graph writes the state cache, whose live array is gone .*"
                             r"states=\{'cache': array\}"):
        loaded.replay({"x": np.ones(3)})
    mine = np.full((2, 3), 5.0)
    loaded.replay({"x": np.full(3, 2.0)}, states={"cache": mine})
    same(mine, np.array([[2.0] * 3, [5.0] * 3]))
    with pytest.raises(cv.ReplayInputError, match=r"state 'cache': expected an ndarray "
                                                  r"float64\[2, 3\], got float32\[2, 3\]"):
        loaded.replay({"x": np.ones(3)}, states={"cache": mine.astype(np.float32)})
    assert 'class="node capviz-state"' in graph.to_svg() or "state cache" in graph.to_svg()
    pytest.importorskip("jax")
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"the graph writes the state cache \(recorded at .*test_state.py:"
                             r"\d+ in f\), which backend 'jax' cannot write back"):
        graph.replay({"x": np.ones(3)}, backend="jax")


def test_the_stepping_executor_reads_states_and_writes_nothing():
    acc = np.ones(2)

    def f(x):
        acc[...] += x
        return x * acc

    graph = cv.capture(f, np.ones(2))
    ex = graph.executor({"x": np.ones(2)})
    ex.run()
    same(ex.values["out"], np.full(2, 2.0))
    same(acc, np.ones(2))


# --- refusals ------------------------------------------------------------------------------------


def test_a_target_capviz_cannot_read_again_is_refused_with_the_fix():
    arrays = [np.zeros(3)]

    def get():
        return arrays[0]

    def f(x):
        get()[0:3] = x
        return x

    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"(?s)^`get\(\)\[0:3\] = x` at .*test_state.py:\d+ in f: .*"
                             r"Fix: write the array to a name first: a = <the expression>, "
                             r"then a\[i\] = t\.$"):
        cv.capture(f, np.ones(3))
    assert not arrays[0].any()


def test_a_view_read_before_the_write_reads_the_live_array_when_a_replay_starts():
    W, twin = RNG.standard_normal((3, 3)), np.empty((3, 3))
    twin[...] = W

    def f(x, W):
        y = x * W[0] + x[:2] @ W[:, 1:].T  # views of W read before the write
        W[1] += x
        return y

    graph = cv.capture(lambda x: f(x, W), np.ones(3))
    views = [n for n in graph.state_nodes if "of" in n.params]
    assert [n.params["of"] for n in views] == [graph.state_nodes[-1].index] * 2
    assert ", a view of %" in str(graph)
    for k in range(3):  # each replay reads what W holds when it starts, as each call does
        x = RNG.standard_normal(3)
        same(graph.replay({"x": x})["out"], f(x, twin))
        same(W, twin)
    result = graph.replay({"x": x}, state="return")  # view states are no states to return
    assert list(result.states) == ["W"]


def test_a_view_read_before_the_write_that_capviz_cannot_map_back_is_refused():
    W = np.ones((2, 3))

    def f(x):
        y = x * W.view(np.int64)[0]  # another dtype (a reshape is mapped: test_state_reshaped)
        W[1] += x
        return y

    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(f, np.ones(3))
    assert str(info.value).splitlines() == [
        f"`W[1] += x` at {__file__}:{f.__code__.co_firstlineno + 2} in f: a write into the "
        "ndarray W is not supported by capviz.",
        "capviz cannot record it: the capture read view of W at "
        f"{__file__}:{f.__code__.co_firstlineno + 1} in f before this write, through a view "
        "capviz cannot map back to an index of it (another dtype, a reshape of memory that is "
        "not C-contiguous) or whose values NumPy changed since.",
        "Fix: make that read after the write, or read it as an index of the array (a[i], "
        "a[:, j:k], a.T) before it."]
    assert W.tolist() == [[1.0] * 3] * 2

    def changed(x):
        y = x * W[0]
        W[0, 0] = 5.0  # NumPy's own store between the read and the write
        W[1] += x
        return y

    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"the capture read view of W at .*test_state.py:\d+ in changed "
                             r"before this write, through a view capviz cannot map back to an "
                             r"index of it \(another dtype, a reshape of memory that is not "
                             r"C-contiguous\) or whose values NumPy changed since"):
        cv.capture(changed, np.ones(3))


W_SGD = np.ones(3)


def sgd_numpy_loss(g):
    global W_SGD
    W_SGD -= 0.1 * g
    return g * 0 + (W_SGD * 2).sum()  # NumPy's own operators on the written array


W_FIX = np.ones(3)


def sgd_quoted_fix(g):
    global W_FIX
    W_FIX -= 0.1 * g
    return g * 0 + (cv.constant(W_FIX) * 2).sum()


def test_numpys_own_reads_of_a_written_array_are_refused_at_their_line():
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(sgd_numpy_loss, np.ones(3))
    lines = str(info.value).splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("`return g * 0 + (W_SGD * 2).sum()` at ") and \
        "test_state.py" in lines[0]
    assert "NumPy's own operators computed a value from an array the capture writes" in lines[0]
    assert "(it depends on what W_SGD holds)" in lines[1]
    assert lines[2].startswith("Fix: write `return g * 0 + (cv.constant(W_SGD) * 2).sum()`: ")
    assert W_SGD.tolist() == [1.0, 1.0, 1.0]  # its values put back
    graph = cv.capture(sgd_quoted_fix, np.ones(3))  # the fix applied: replays as calls
    eager = W_FIX.copy()  # the same step, computed eagerly beside it
    for k in range(3):
        g = np.arange(3.0) + k
        got = graph.replay({"g": g})["out"]
        eager -= 0.1 * g
        assert np.array_equal(got, g * 0 + (eager * 2).sum()) and np.array_equal(W_FIX, eager)

    with pytest.raises(cv.UnsupportedOperationError) as info:  # one capture: the NaN mark
        with cv.CaptureDevice().capture_scope() as scope:
            scope.output(sgd_numpy_loss(scope.input("g", (3,), "float64")))
    lines = str(info.value).splitlines()
    assert lines[0].startswith("`g * 0 + (W_SGD * 2).sum()` at ")
    assert "computed by NumPy's own operators from W_SGD after the capture wrote it" in lines[1]
    assert lines[2].startswith("Fix: make the array meet a tensor first")
    assert W_SGD.tolist() == [1.0, 1.0, 1.0]

    def returned(g):
        global W_SGD
        W_SGD -= g
        return W_SGD.sum()  # a NumPy scalar returned: a constant output, refused too

    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"`return W_SGD\.sum\(\)` at .* the returned value was "
                             r"computed by NumPy's own operators from W_SGD"):
        cv.capture(returned, np.ones(3))
    assert W_SGD.tolist() == [1.0, 1.0, 1.0]


def test_a_plain_store_into_a_written_array_is_refused_at_the_exit():
    buf = np.zeros(3)

    def f(x):
        buf[...] = x  # recorded
        buf[0] = 1.0  # a plain value: NumPy stores it, no hook sees it
        return x * 1

    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"(?s)`buf\[0\] = 1\.0` at .* in f: NumPy's own operators wrote buf "
                             r"after the capture's write into it\..*Fix: write "
                             r"`buf\[0\] = cv\.constant\(np\.float64\(1\.0\)\)`"):
        cv.capture(f, np.ones(3))
    assert buf.tolist() == [0.0, 0.0, 0.0]
