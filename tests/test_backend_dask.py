"""The Dask backend: one lazy dask.array expression per replay, on threads or a LocalCluster.

Elementwise ops, data movement, per-block and one-block rules are bit for bit the NumPy
replay; reductions and products agree within the backend's tolerance; random ops draw the
Philox words of their own global positions, so any chunking on any scheduler gives NumPy's bits.
"""

import warnings

import numpy as np
import pytest

import capviz as cv

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

from helpers.dask_scheduler import CountingScheduler  # noqa: E402

from capviz.backends import contraction_bound, registry  # noqa: E402
from capviz.backends.dask import backend as dask_backend  # noqa: E402
from capviz.backends.dask import rules as dask_rules  # noqa: E402
from capviz.ops import table as ops  # noqa: E402

RNG = np.random.default_rng(3)


def _bits_equal(got, expected):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes()


@pytest.fixture(scope="module")
def cluster():
    """A 2-worker LocalCluster on loopback, worker processes of 256 MiB each (a worker
    process holds about 100 MiB before it computes anything), and its client, not made the
    default scheduler: the tests after these would run on workers a larger-than-memory test
    may have left paused."""
    from distributed import Client, LocalCluster

    local = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         host="127.0.0.1", memory_limit="256MiB", dashboard_address=None)
    client = Client(local, set_as_default=False)
    yield client
    client.close()
    local.close()


@pytest.fixture
def cluster_client(cluster):
    """The cluster's client as the scheduler of one test."""
    with dask.config.set(scheduler=cluster.get):
        yield cluster


# --- the rule table ----------------------------------------------------------------------------


def test_every_op_of_the_table_has_a_declared_rule():
    missing = sorted(set(ops.OPS) - set(dask_rules.RULES))
    assert not missing, f"add traits for these ops to capviz/ops/traits.py: {missing}"
    kinds = {"elementwise", "axis", "move", "select", "reduce", "contract", "gather", "split",
             "whole", "random", "unpack", "into", "sized"}
    assert set(dask_rules.RULES.values()) <= kinds
    assert all(ops.OPS[name].random for name, k in dask_rules.RULES.items() if k == "random")


def test_an_op_without_a_rule_is_refused_by_name_at_bind_time():
    made_up = ops.Op("made_up_op", lambda xp: xp.negative, lambda args, params: ((), "f4"))
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"op 'made_up_op' cannot run on the dask backend: no Dask rule is "
                             r"declared for it in capviz/ops/traits.py"):
        registry.get("dask").bind(made_up)


def test_a_ravel_in_memory_order_is_refused_naming_the_op_and_the_alternative():
    g = cv.capture(lambda x: np.ravel(x.T, order="K"), cv.spec((3, 4)))
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"op 'ravel' cannot run on the dask backend: order='K' ravels in "
                             r"memory order, and a dask array has none \(ravel with order='C' "
                             r"or 'F'\)"):
        g.replay({"x": np.ones((3, 4), np.float32)}, backend="dask")


def test_the_backend_declares_what_it_is():
    backend = registry.get("dask")
    assert isinstance(backend, dask_backend.DaskBackend)
    assert (backend.name, backend.extra, backend.mutable, backend.exact) == ("dask", "dask",
                                                                            False, False)
    assert backend.options == {"chunks", "compute", "arithmetic"}
    assert backend.is_native(da.ones(3)) and not backend.is_native(np.ones(3))


# --- exactness ----------------------------------------------------------------------------------


def _chain(x, y):
    a = np.tanh(x * 0.5 + y) - np.exp(-np.abs(x))
    b = np.where(a > 0, np.sqrt(np.abs(a)), a ** 2) / (1.0 + y * y)
    c = np.maximum(b, -0.25) * np.float32(3.0) + np.sin(x) * np.cos(y.T).T
    return c, np.floor_divide(c, 0.3), (c > 0.1).astype(np.int32), np.clip(c, -1, 1)


CHUNKINGS = ["auto", 4, (5, 3), ((7, 1, 9), (2, 2, 2)), ((17,), (1, 5))]


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_elementwise_chain_is_bit_for_bit_numpy_for_any_chunking(chunks, dtype):
    x = RNG.standard_normal((17, 6)).astype(dtype)
    y = RNG.standard_normal((17, 6)).astype(dtype)
    g = cv.capture(_chain, cv.spec(x.shape, dtype), cv.spec(y.shape, dtype))
    expected = g.replay({"x": x, "y": y}, backend="numpy")
    got = g.replay({"x": x, "y": y}, backend="dask", chunks=chunks)
    assert got.backend == "dask"
    for name in g.outputs:
        _bits_equal(got[name], expected[name])


def _moves_and_blocks(x, idx):
    t = np.transpose(x.reshape(4, 3, 6), (2, 0, 1))[:, 1:, ::-1]
    parts = np.split(x, 3, axis=1)
    s = np.sort(x, axis=0)
    c = np.cumsum(x, axis=1)
    m = np.median(x, axis=1)
    inv = np.linalg.inv(x[:6, :6] + 6 * np.eye(6, dtype=x.dtype))
    return (t, np.concatenate([parts[2], parts[0]], axis=0), s, c, m, inv, x[idx],
            np.take(x, idx % 6, axis=1), x.max(axis=0), np.argmax(x, axis=1),
            np.flip(np.roll(x, 2, axis=0), axis=1), np.pad(x, 1))


@pytest.mark.parametrize("chunks", ["auto", 5, ((3, 9), (1, 4, 1))], ids=str)
def test_movement_axis_gather_and_whole_rules_are_bit_for_bit(chunks):
    x = RNG.standard_normal((12, 6)).astype(np.float32)
    idx = np.array([[0, 5], [11, 2], [3, 3]], dtype=np.int64)
    g = cv.capture(_moves_and_blocks, cv.spec(x.shape, x.dtype), cv.spec(idx.shape, idx.dtype))
    expected = g.replay({"x": x, "idx": idx}, backend="numpy")
    got = g.replay({"x": x, "idx": da.from_array(idx, chunks=2)}, backend="dask",
                   chunks=chunks)
    for name in g.outputs:
        _bits_equal(got[name], expected[name])


def test_chunks_that_do_not_fit_an_input_are_refused_naming_it():
    g = cv.capture(lambda x, i: x[i], cv.spec((12, 6)), cv.spec((3,), "int64"))
    inputs = {"x": np.ones((12, 6), np.float32), "i": np.zeros(3, np.int64)}
    with pytest.raises(ValueError, match=r"chunks=\(5, 2\) does not fit input 'i' of shape "
                                         r"\(3,\)"):
        g.replay(inputs, backend="dask", chunks=(5, 2))


def _reductions(x, w):
    return (x.sum(axis=0), x.mean(), x.var(axis=1), np.std(x, axis=0, ddof=1), x @ w,
            np.einsum("ij,jk->ik", x, w), np.prod(x[:, :3] * 0.1 + 1.0, axis=1))


def test_float_reductions_and_products_agree_within_the_declared_tolerance():
    x = RNG.standard_normal((300, 40)).astype(np.float32)
    w = RNG.standard_normal((40, 8)).astype(np.float32)
    g = cv.capture(_reductions, cv.spec(x.shape), cv.spec(w.shape))
    expected = g.replay({"x": x, "w": w}, backend="numpy")
    got = g.replay({"x": x, "w": w}, backend="dask", chunks=(64, 16))
    rtol, atol = registry.get("dask").tolerance
    for name in g.outputs:
        assert got[name].dtype == expected[name].dtype
        np.testing.assert_allclose(got[name], expected[name], rtol=rtol, atol=atol)


def test_float16_reductions_agree_within_the_float16_tolerance():
    x = RNG.standard_normal(300).astype(np.float16)  # review13 F4: chunks=7 missed by 0.0049
    m = RNG.standard_normal((40, 300)).astype(np.float16)
    g = cv.capture(lambda x, m: (x.sum(), x.mean(), x.var(), m @ m.T, m.sum(axis=0)),
                   cv.spec(x.shape, x.dtype), cv.spec(m.shape, m.dtype))
    expected = g.replay({"x": x, "m": m}, backend="numpy")
    backend = registry.get("dask")
    assert backend.tolerance_for(np.float16) == (1e-2, 1e-1)
    assert backend.tolerance_for(np.float32) == backend.tolerance
    for chunks in (7, "auto"):
        got = g.replay({"x": x, "m": m}, backend="dask", chunks=chunks)
        for name in g.outputs:
            assert got[name].dtype == np.float16
            np.testing.assert_allclose(got[name], expected[name], rtol=1e-2, atol=1e-1)


@pytest.mark.parametrize("op, axis", [("max", 1), ("min", 1), ("argmax", 1), ("argmin", 1),
                                      ("nanmax", 1), ("any", 1), ("any", 0), ("all", 0)])
@pytest.mark.parametrize("chunks", [1, "auto"], ids=str)
def test_an_order_free_reduction_of_an_empty_array_gives_numpys_result(op, axis, chunks):
    g = cv.capture(lambda a: getattr(np, op)(a, axis=axis), cv.spec((0, 4)))
    feed = {"a": np.zeros((0, 4), np.float32)}
    expected = g.replay(feed, backend="numpy")["out"]
    _bits_equal(g.replay(feed, backend="dask", chunks=chunks)["out"], expected)
    lazy = g.replay(feed, backend="dask", chunks=chunks, compute=False)["out"]
    _bits_equal(lazy.compute(), expected)


def test_integer_reductions_are_exact():
    x = RNG.integers(-1000, 1000, (200, 30)).astype(np.int32)
    g = cv.capture(lambda x: (x.sum(axis=0), x.sum(), np.prod(x[:, :2] % 5, axis=1),
                              x.max(), x @ x.T), cv.spec(x.shape, x.dtype))
    expected = g.replay({"x": x}, backend="numpy")
    got = g.replay({"x": x}, backend="dask", chunks=(33, 7))
    for name in g.outputs:
        _bits_equal(got[name], expected[name])


def test_an_error_while_computing_names_the_node_and_the_users_line():
    def solve(a):
        b = a * 2.0
        return np.linalg.inv(b)  # the failing line: a singular matrix

    g = cv.capture(solve, cv.spec((3, 3), "float64"))
    line = solve.__code__.co_firstlineno + 2
    with pytest.raises(cv.ReplayError, match=rf"replay failed at node %{g.ops[-1].index} "
                                             rf"\(linalg.inv\) of float64\[3,3\], recorded at "
                                             rf".*test_backend_dask.py:{line} in solve: "
                                             r"LinAlgError: Singular matrix") as info:
        g.replay({"a": np.ones((3, 3))}, backend="dask")
    assert info.value.node is g.ops[-1]


def test_an_error_while_computing_a_lazy_result_is_a_replay_error_naming_the_users_line():
    def solve(a):
        b = a * 2.0
        return np.linalg.inv(b)  # the failing line: a singular matrix

    g = cv.capture(solve, cv.spec((3, 3), "float64"))
    line = solve.__code__.co_firstlineno + 2
    lazy = g.replay({"a": np.ones((3, 3))}, backend="dask", compute=False)["out"]
    with pytest.raises(cv.ReplayError, match=rf"^replay failed at node %{g.ops[-1].index} "
                                             rf"\(linalg.inv\), recorded at "
                                             rf".*test_backend_dask.py:{line} in solve: "
                                             r"LinAlgError: Singular matrix$"):
        lazy.compute()


# --- laziness and inputs ------------------------------------------------------------------------


def test_the_replay_builds_one_expression_and_computes_it_once():
    x = RNG.standard_normal((40, 10)).astype(np.float32)
    g = cv.capture(lambda x: (np.tanh(x).sum(axis=1), np.sort(x, axis=0), x.max()),
                   cv.spec(x.shape))
    counting = CountingScheduler()
    with dask.config.set(scheduler=counting):
        lazy = g.replay({"x": x}, backend="dask", chunks=(8, 5), compute=False)
        assert counting.calls == 0  # no op computed anything while the expression was built
        assert all(isinstance(v, da.Array) for v in lazy.values())
        assert lazy["out0"].chunks == ((8,) * 5,)  # the input's chunks carried through
        got = g.replay({"x": x}, backend="dask", chunks=(8, 5))
        assert counting.calls == 1  # one dask.compute over every output
    expected = g.replay({"x": x}, backend="numpy")
    rtol, atol = registry.get("dask").tolerance
    for name in g.outputs:
        assert isinstance(got[name], np.ndarray)
        np.testing.assert_allclose(got[name], expected[name], rtol=rtol, atol=atol)
        np.testing.assert_allclose(lazy[name].compute(), expected[name], rtol=rtol, atol=atol)


def test_a_dask_array_input_larger_than_memory_stays_lazy():
    """A 3.2 GB input made by da.ones is never materialized: the replay returns dask arrays,
    and computing a slice of the result reads only the blocks it needs."""
    big = da.ones((20_000, 20_000), chunks=(100, 20_000), dtype=np.float64)
    g = cv.capture(lambda x: (np.tanh(x * 0.5).sum(axis=1), x[:, :3] + 1.0),
                   cv.spec(big.shape, big.dtype))
    counting = CountingScheduler()
    with dask.config.set(scheduler=counting):
        lazy = g.replay({"x": big}, backend="dask", compute=False)
        assert counting.calls == 0
        head = lazy["out0"][:100].compute()
    assert lazy["out0"].chunks[0][0] == 100  # the input's own chunks were kept
    np.testing.assert_allclose(head, np.full(100, 20_000 * np.tanh(0.5)), rtol=1e-9)


def test_lazy_results_do_not_see_later_writes_to_a_numpy_input():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    g = cv.capture(lambda x: x * 2.0, cv.spec(x.shape))
    lazy = g.replay({"x": x}, backend="dask", chunks=2, compute=False)
    x[...] = -1.0
    assert np.array_equal(lazy["out"].compute(), np.arange(12).reshape(3, 4) * 2.0)


def test_inputs_are_checked_for_dask_arrays_too():
    g = cv.capture(lambda x: x + 1, cv.spec((4, 3)))
    with pytest.raises(cv.ReplayInputError,
                       match=r"input 'x': expected float32\[4,3\], got float64\[4,3\]"):
        g.replay({"x": da.zeros((4, 3), dtype=np.float64)}, backend="dask")
    with pytest.raises(cv.ReplayInputError,
                       match=r"input 'x': expected float32\[4,3\], got float32\[5,3\]"):
        g.replay({"x": da.zeros((5, 3), dtype=np.float32)}, backend="dask")
    unknown = da.zeros((8, 3), dtype=np.float32)
    unknown = unknown[unknown[:, 0] > -1]  # a boolean mask: dask no longer knows the rows
    with pytest.raises(cv.ReplayInputError, match=r"input 'x': a dask array of unknown shape "
                                                  r"\(\?, 3\) .*call x.compute_chunk_sizes\(\) "
                                                  r"on it first"):
        g.replay({"x": unknown}, backend="dask")
    unknown.compute_chunk_sizes()  # the fix the message gives: now the shape is checked
    with pytest.raises(cv.ReplayInputError, match=r"input 'x': expected float32\[4,3\], got "
                                                  r"float32\[8,3\]"):
        g.replay({"x": unknown}, backend="dask")


def test_an_unknown_option_is_refused_naming_the_accepted_ones():
    g = cv.capture(lambda x: x + 1, cv.spec((4,)))
    with pytest.raises(TypeError, match=r"the dask backend takes no option 'chunk' \(its "
                                        r"options: arithmetic, chunks, compute\)"):
        g.replay({"x": np.ones(4, np.float32)}, backend="dask", chunk=2)


# --- random ops ---------------------------------------------------------------------------------


def test_philox_at_gives_the_words_at_any_positions():
    from capviz.ops.random import philox_at

    words = np.random.Philox(key=np.array([2**64 - 1, 7], np.uint64)).random_raw(5000)
    positions = np.array([[0, 4999, 3], [4, 5, 2047]])
    assert np.array_equal(philox_at(np, 2**64 - 1, 7, positions), words[positions])


def _random_graph(shape):
    dev = cv.Device("numpy")
    dev.seed(11)
    return cv.capture(lambda: (cv.random.uniform(shape, low=-2.0, high=3.0),
                               cv.random.uniform(shape, dtype="float64"),
                               cv.random.bernoulli(shape, p=0.3),
                               cv.random.normal(shape, mean=1.0, std=2.0),
                               cv.random.normal(shape, dtype="float64")), rng=dev)


# (1, 50): one run per block (NumPy's Philox per run); (25, 7): 25 short runs per block;
# (100, 7): many short runs (philox_at at the block's positions); uneven chunks too
RANDOM_CHUNKINGS = ["auto", (1, 50), (25, 7), (100, 7), ((3, 90, 7), (49, 1))]


def _assert_random_equal(got, expected, names):
    for name in names[:3]:  # uniform and bernoulli: the same bits
        _bits_equal(got[name], expected[name])
    for name in names[3:]:  # normal: within the documented ulp bound (docs/guide/replay.md)
        assert got[name].dtype == expected[name].dtype
        np.testing.assert_array_max_ulp(got[name], expected[name], maxulp=4)


@pytest.mark.parametrize("chunks", RANDOM_CHUNKINGS, ids=str)
def test_random_ops_give_numpy_bits_for_any_chunking(chunks):
    g = _random_graph((100, 50))
    expected = g.replay({}, backend="numpy")
    got = g.replay({}, backend="dask", chunks=chunks)
    _assert_random_equal(got, expected, g.outputs)


@pytest.mark.parametrize("shape,chunks", [((7, 13), (7, 2)), ((131, 4), (131, 3)),
                                          ((131, 4), (40, 4))], ids=str)
def test_normal_pairs_crossing_the_middle_inside_a_block_are_drawn_as_numpy_does(shape, chunks):
    """A normal draw pairs element i with i + half: a run of a block that crosses the middle
    (odd sizes too) switches from cos to sin there, on both drawing paths."""
    g = _random_graph(shape)
    _assert_random_equal(g.replay({}, backend="dask", chunks=chunks),
                         g.replay({}, backend="numpy"), g.outputs)


@pytest.mark.slow
def test_random_ops_give_numpy_bits_on_a_two_worker_cluster(cluster_client):
    g = _random_graph((100, 50))
    expected = g.replay({}, backend="numpy")
    for chunks in [(30, 50), ((3, 90, 7), (49, 1))]:
        got = g.replay({}, backend="dask", chunks=chunks)
        _assert_random_equal(got, expected, g.outputs)


# --- larger than one worker ---------------------------------------------------------------------

ROWS, COLS, BLOCK = 262_144, 1024, 2048  # 1 GiB of float32 input: 4x one worker's 256 MiB
P_KEEP = 0.9


def _body(x, keep, w):
    h = np.tanh(x * 0.5 + 0.1) * keep / P_KEEP  # dropout
    y = h @ w
    return y, h.mean(axis=1), np.abs(y).max(axis=1), y.sum(axis=0)


@pytest.mark.slow
def test_a_variance_of_a_product_larger_than_a_worker_is_tested_at_run_time(cluster_client):
    """np.std of ``x @ w`` over the 1 GiB input (the lead's ruling 38 10:50): the product keeps
    dask.array's blocks and its declared bound is tested at the std, which fails there by name
    (float32, 262,144 terms: the roundings alone are beyond the tolerance); before, a product
    any variance read was gathered onto one block, operands and all, whatever its size. With
    arithmetic='dask' it replays, within the product's declared bound carried to the std."""
    w = np.random.default_rng(0).standard_normal((COLS, 16)).astype(np.float32)
    g = cv.capture(lambda x: np.std(x @ w, axis=0), cv.spec((ROWS, COLS)))
    x = da.random.default_rng(5).random((ROWS, COLS), dtype=np.float32, chunks=(BLOCK, COLS))
    with pytest.raises(cv.ReplayError, match=r"\(std\).*ProductCancels: np\.std cancels the "
                                             r"value of np\.matmul .*arithmetic='dask'"):
        g.replay({"x": x}, backend="dask", chunks=(BLOCK, COLS))
    got = g.replay({"x": x}, backend="dask", chunks=(BLOCK, COLS), arithmetic="dask")["out"]
    want = da.std(x.astype(np.float64) @ w.astype(np.float64), axis=0).compute()
    np.testing.assert_allclose(got, want, rtol=1e-4)


@pytest.mark.slow
def test_a_two_worker_cluster_replays_inputs_larger_than_a_worker(cluster_client):
    """A graph (elementwise chain, dropout drawn by a capviz random op, matmul, reductions)
    over an input 4x one worker's memory limit, generated on the workers (never in this
    process), matches the NumPy replay of the same computation on row blocks that fit."""
    w = np.random.default_rng(0).standard_normal((COLS, 16)).astype(np.float32)
    dev = cv.Device("numpy")
    dev.seed(21)

    def model(x):
        keep = cv.random.bernoulli(x.shape, p=P_KEEP, dtype="float32")
        return _body(x, keep, w)

    g = cv.capture(model, cv.spec((ROWS, COLS)), rng=dev)
    x = da.random.default_rng(5).random((ROWS, COLS), dtype=np.float32, chunks=(BLOCK, COLS))
    got = g.replay({"x": x}, backend="dask", chunks=(BLOCK, COLS))
    assert got["out0"].shape == (ROWS, 16) and got["out3"].shape == (16,)

    # the reference: the same body on row blocks in NumPy, the dropout mask drawn at the
    # block's global positions by NumPy's own Philox
    (draw,) = [n.params["draw"] for n in g.nodes if n.op == "random_bernoulli"]
    block_graph = cv.capture(_body, cv.spec((BLOCK, COLS)), cv.spec((BLOCK, COLS)),
                             cv.spec(w.shape))
    threshold = np.uint64(np.ceil(P_KEEP * 2.0 ** 53))
    for k in (0, ROWS // BLOCK // 2 + 3, ROWS // BLOCK - 1):
        xk = x[k * BLOCK:(k + 1) * BLOCK].compute()
        words = registry.get("numpy").random_bits(21, draw, BLOCK * COLS, k * BLOCK * COLS)
        keep = ((words >> np.uint64(11)) < threshold).astype(np.float32).reshape(BLOCK, COLS)
        ref = block_graph.replay({"x": xk, "keep": keep, "w": w}, backend="numpy")
        rows = slice(k * BLOCK, (k + 1) * BLOCK)
        _bits_equal(got["out1"][rows], ref["out1"])  # the mean of each row: one block each
        # h @ w is a contraction: declared, held to its bound (which BLAS order NumPy takes is
        # the machine's: on an AMD EPYC's OpenBLAS 6 of 32,768 values were 1.4e-5 apart, past
        # the flat tolerance); max |y| moves by at most its row's largest bound
        h = np.tanh(xk * 0.5 + 0.1) * keep / P_KEEP
        limit = contraction_bound.bound("matmul", [h, w], {}, np.float32)
        assert not contraction_bound.outside(got["out0"][rows], ref["out0"], limit).any()
        assert not contraction_bound.outside(got["out2"][rows], ref["out2"],
                                             limit.max(axis=1)).any()
        if k == 0:  # the first block's positions are a block graph's own: no hand-made mask
            dev.seed(21)
            first = cv.capture(lambda x: _body(x, cv.random.bernoulli(
                x.shape, p=P_KEEP, dtype="float32"), w), cv.spec((BLOCK, COLS)), rng=dev)
            _bits_equal(first.replay({"x": xk}, backend="numpy")["out1"], ref["out1"])
    total = got["out0"].astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(got["out3"], total, rtol=1e-4)


@pytest.mark.parametrize("name", ["argmax", "argmin", "nanargmax", "nanargmin"])
def test_a_flat_arg_reduction_gives_numpys_first_tie_in_c_order_whatever_the_chunks(name):
    """dask.array's arg reductions over several blocks pick the first tie in block order;
    NumPy's, over the flattened array, the first in C order."""
    fn = getattr(np, name)
    rng = np.random.default_rng(9)
    for shape in [(4, 4), (3, 5), (2, 3, 4)]:
        x = rng.integers(0, 2, shape).astype(np.float64)
        if name.startswith("nan"):
            x[rng.random(shape) < 0.2] = np.nan
            x.flat[0] = 1.0  # not all NaN
        graph = cv.capture(lambda a, fn=fn: fn(a), cv.spec(shape, "float64"))
        expected = fn(x)
        for chunks in (1, 2, (2,) * len(shape), "auto"):
            got = graph.replay({"a": x}, backend="dask", chunks=chunks, to_numpy=True)["out"]
            assert got == expected, (shape, chunks)


def test_a_loop_of_column_writes_builds_in_time_linear_in_its_length():
    """Each whole op hands dask.delayed its operands as single-block Delayed objects: handed
    the arrays, dask copied their whole graphs at every step, exponential in the chain's
    length (37 ops made 11,615 tasks; 55 ops did not finish in 230 s). Counted, not timed:
    the graph of the result holds a bounded number of tasks per recorded op."""

    def naive_grad(W, X):
        dW = np.zeros_like(W)
        for i in range(2):
            for j in range(W.shape[1]):
                dW[:, j] += X[i] * 0.5
        return dW

    W, X = np.zeros((5, 3), np.float32), np.ones((4, 5), np.float32)
    graph = cv.capture(naive_grad, cv.spec(W.shape, W.dtype), cv.spec(X.shape, X.dtype))
    lazy = graph.replay({"W": W, "X": X}, backend="dask", compute=False)["out"]
    assert len(dict(lazy.__dask_graph__())) < 10 * len(graph.ops)
    got = graph.replay({"W": W, "X": X}, backend="dask", to_numpy=True)["out"]
    np.testing.assert_array_equal(got, naive_grad(W.copy(), X))


@pytest.mark.parametrize("chunks", [1, 2, "auto"])
@pytest.mark.parametrize("fn", [
    lambda x: np.round(x[1, 1], 1, out=x[0, 0, ...]),
    lambda x: np.around(x[1, 1, ...], out=x[0, 0, ...]),
    lambda x: np.add.reduce(x[1], out=x[0, 0, ...]),
    lambda x: np.clip(x[1, 2], 0.5, 1.0, out=x[1, 1, ...]),
], ids=["round", "around", "add.reduce", "clip"])
def test_a_function_into_a_0d_view_replays_as_numpy(fn, chunks):
    """f(..., out=x[0, 0, ...]): the 0-d target's block may compute as a NumPy scalar, which
    out= refuses ("output must be an array"); the rule hands it on as a 0-d array."""
    x = np.arange(12.0).reshape(3, 4) * 0.37

    def f(x):
        fn(x)
        return x

    eager = f(x.copy())
    graph = cv.capture(f, cv.spec(x.shape, x.dtype))
    got = graph.replay({"x": x}, backend="dask", chunks=chunks, to_numpy=True)["out"]
    _bits_equal(got, eager)


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax",
                                  "nanmin", "sum", "prod", "max", "min", "argmax", "argmin",
                                  "any"])
@pytest.mark.parametrize("axis", [0, -1])
def test_reductions_of_a_0d_array_along_axis_0_are_numpys(name, axis):
    """NumPy reduces a 0-d array along axis 0 or -1 as its one element (a 0-d result, keepdims
    or not); dask.array raised AxisError "Axis 0 is out of bounds for array of dimension 0"
    inside a ReplayError (review 2, finding 27: nansum, nanmean, nanmax, nanmin of 0-d float64,
    float32 and uint32)."""
    fn = getattr(np, name)
    for value in (np.array(np.nan), np.array(2.5, np.float32), np.array(7, np.uint32)):
        if value.dtype.kind == "u" and name in ("nanmean", "nanvar", "nanstd"):
            continue  # NumPy's np.mean of an integer 0-d array raises AxisError
        for keepdims in ((False, True) if name not in ("argmax", "argmin") else (False,)):
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the mean of a NaN's empty slice
                want = fn(value, axis=axis, keepdims=keepdims)
                graph = cv.capture(lambda x: fn(x, axis=axis, keepdims=keepdims),
                                   cv.spec(value.shape, value.dtype))
                got = graph.replay({graph.inputs[0]: value}, backend="dask", to_numpy=True)
            _bits_equal(got[graph.outputs[0]], want)
