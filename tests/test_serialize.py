"""save/load: JSON + npz, never pickle; corrupt or hand-edited files give GraphFormatError."""

import json
import os
import tracemalloc
import zipfile

import numpy as np
import pytest

import capviz as cv
from capviz import ops
from capviz.testing import assert_graph_equal


@pytest.fixture
def saved(tmp_path):
    w = np.arange(12, dtype=np.float32).reshape(4, 3)

    def f(x):
        with cv.name_scope("blk"):
            a, b = np.split(x @ w, [1], axis=-1)
        return np.concatenate([b, a[:, ::-1]], axis=1)[..., None] * np.float64(0.5)

    graph = cv.capture(f, cv.spec((2, 4)))
    path = tmp_path / "g.json"
    graph.save(str(path))
    return graph, path


def npz_of(path):
    return str(path) + ".npz"


def test_round_trip(saved):
    graph, path = saved
    loaded = cv.load(str(path))
    assert_graph_equal(loaded, graph)
    assert loaded.complete and loaded.inputs == ["x"]
    assert [n.source for n in loaded.nodes] == [n.source for n in graph.nodes]
    x = np.ones((2, 4), np.float32)
    assert np.array_equal(loaded.replay({"x": x})["out"], graph.replay({"x": x})["out"])
    assert sorted(os.listdir(path.parent)) == ["g.json", "g.json.npz"]  # no temporary left


def test_round_trip_keeps_special_values(tmp_path):
    g = cv.capture(lambda x: np.where(x > 0, x, -np.inf) + x[..., 1:2] * float("nan"),
                   cv.spec((2, 3), "float64"))
    g.save(str(tmp_path / "s.json"))
    assert_graph_equal(cv.load(str(tmp_path / "s.json")), g)
    json.loads((tmp_path / "s.json").read_text())  # strict JSON: no NaN literals


def edit(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("change,message", [
    (lambda d: d["nodes"][2].update(op="frobnicate"), "unknown op 'frobnicate'"),
    (lambda d: d["nodes"][2].update(kind="weird"), "unknown kind 'weird'"),
    (lambda d: d["nodes"][2]["args"].__setitem__(0, {"ref": 9}), "not earlier in program order"),
    (lambda d: d["nodes"].pop(1), "has index 2, expected 1"),
    (lambda d: d["nodes"][2].update(shape=[7, 7]), "recorded as float32[7, 7] but matmul"),
    (lambda d: d["nodes"][2].update(dtype="object"), "not a numeric dtype"),
    (lambda d: d["nodes"][2].update(shape="big"), "shape must be a list"),
    (lambda d: d["nodes"][2].update(shape=[2**70]), "shape must be a list of integers in"),
    (lambda d: d.update(version=99), "version 99 is not supported"),
    (lambda d: d.update(format="other"), "not a capviz graph"),
    (lambda d: d.update(constants="../../etc/passwd"), "plain file name"),
    (lambda d: d["nodes"][2]["params"].update(evil={"$code": "1"}), "unrecognised value"),
    (lambda d: d["nodes"][2]["params"].update(axis=1), "unknown params ['axis']"),
])
def test_hand_edited_files_are_format_errors(saved, change, message):
    _, path = saved
    edit(path, change)
    with pytest.raises(cv.GraphFormatError, match=message.replace("[", r"\[").replace("]", r"\]")):
        cv.load(str(path))


def test_truncated_json(saved):
    _, path = saved
    path.write_text(path.read_text()[:100])
    with pytest.raises(cv.GraphFormatError, match="not valid JSON"):
        cv.load(str(path))


def test_ten_thousand_digit_integer_is_a_format_error(saved):
    _, path = saved
    text = path.read_text().replace('"shape": [\n    2,\n    4\n   ]',
                                    '"shape": [' + "9" * 10_000 + ", 4]", 1)
    assert "9" * 10_000 in text
    path.write_text(text)
    with pytest.raises(cv.GraphFormatError, match="holds a number capviz will not read"):
        cv.load(str(path))


def test_a_directory_is_a_format_error(tmp_path):
    with pytest.raises(cv.GraphFormatError, match="cannot read graph file .*: Is a directory"):
        cv.load(str(tmp_path))


# --- the constants file -------------------------------------------------------------------


def replace_constants(path, **arrays):
    """Write ``arrays`` as the graph's constants, as a user editing them by hand would: the JSON
    then has no checksum (old files had none), so the member checks are what answers."""
    edit(path, lambda d: d.pop("constants_sha256"))
    np.savez(npz_of(path), **arrays)


def test_missing_constant_array(saved):
    _, path = saved
    replace_constants(path)
    with pytest.raises(cv.GraphFormatError, match="its array 'c1' is absent"):
        cv.load(str(path))


def test_missing_constants_file(saved):
    _, path = saved
    os.remove(npz_of(path))
    with pytest.raises(cv.GraphFormatError, match="constants file .* is missing"):
        cv.load(str(path))


def test_pickled_object_array_is_refused(saved):
    _, path = saved
    replace_constants(path, c1=np.array([{"x": 1}, None], dtype=object))
    with pytest.raises(cv.GraphFormatError, match="holds dtype object, which cannot be loaded "
                                                  "safely"):
        cv.load(str(path))


def test_corrupt_npz(saved):
    _, path = saved
    edit(path, lambda d: d.pop("constants_sha256"))
    with open(npz_of(path), "wb") as f:
        f.write(b"PK\x03\x04 not a zip")
    with pytest.raises(cv.GraphFormatError, match="corrupt or truncated"):
        cv.load(str(path))


def test_constant_of_wrong_shape(saved):
    _, path = saved
    replace_constants(path, c1=np.zeros((2, 2), np.float32))
    with pytest.raises(cv.GraphFormatError, match=r"array is float32\[2, 2\] but the node says"):
        cv.load(str(path))


def test_swapped_constants_are_refused_by_checksum(saved, tmp_path):
    _, path = saved
    other = cv.capture(lambda x: x @ np.full((4, 3), 7, np.float32), cv.spec((2, 4)))
    other.save(str(tmp_path / "other.json"))
    os.replace(npz_of(tmp_path / "other.json"), npz_of(path))  # same shape, other values
    with pytest.raises(cv.GraphFormatError, match="is not the one saved with this graph"):
        cv.load(str(path))


def test_files_without_checksum_still_load(saved):
    graph, path = saved
    edit(path, lambda d: d.pop("constants_sha256"))
    assert_graph_equal(cv.load(str(path)), graph)


def write_member(npz, header_shape, data, compress=zipfile.ZIP_STORED):
    with zipfile.ZipFile(npz, "w", compress) as zf:
        with zf.open("c1.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(
                f, {"descr": "<f4", "fortran_order": False, "shape": header_shape})
            for chunk in data:
                f.write(chunk)


def claim_huge_constant(path, shape):
    """Make the JSON say constant %1 has ``shape`` (the npz then has to back that up)."""
    def change(doc):
        doc.pop("constants_sha256")
        doc["nodes"][1]["shape"] = list(shape)
    edit(path, change)


def peak_bytes_of(fn):
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_crafted_header_cannot_make_load_allocate_a_gigabyte(saved):
    _, path = saved
    huge = (250_000_000,)  # 1 GB of float32, in a file of a few hundred bytes
    claim_huge_constant(path, huge)
    write_member(npz_of(path), huge, [b"\0" * 16])
    assert os.path.getsize(npz_of(path)) < 1000

    def load():
        with pytest.raises(cv.GraphFormatError,
                           match=r"holds 16 bytes of data; float32\[250000000\] takes 1000000000"):
            cv.load(str(path))

    peak = peak_bytes_of(load)
    assert peak < 20_000_000, f"load allocated {peak} bytes for a file of a few hundred"


def test_compressed_member_is_refused_before_it_is_inflated(saved):
    _, path = saved
    huge = (64 * 2**20,)  # 256 MB inflated from about 256 kB
    claim_huge_constant(path, huge)
    write_member(npz_of(path), huge, [bytes(2**20)] * 256, compress=zipfile.ZIP_DEFLATED)
    assert os.path.getsize(npz_of(path)) < 2**20

    def load():
        with pytest.raises(cv.GraphFormatError, match=r"\['c1'\] is compressed; capviz writes "
                                                      "constants uncompressed"):
            cv.load(str(path))

    assert peak_bytes_of(load) < 20_000_000


def test_header_that_disagrees_with_the_json_is_refused(saved):
    _, path = saved
    edit(path, lambda d: d.pop("constants_sha256"))
    write_member(npz_of(path), (250_000_000,), [b"\0" * 16])
    with pytest.raises(cv.GraphFormatError, match=r"array is float32\[250000000\] but the node "
                                                  r"says float32\[4, 3\]"):
        cv.load(str(path))


def test_trailing_bytes_in_a_member_are_refused(saved):
    _, path = saved
    edit(path, lambda d: d.pop("constants_sha256"))
    write_member(npz_of(path), (4, 3), [b"\0" * 48, b"extra"])
    with pytest.raises(cv.GraphFormatError, match=r"holds 53 bytes of data; float32\[4, 3\] "
                                                  "takes 48"):
        cv.load(str(path))


def test_fortran_order_constants_round_trip(tmp_path):
    w = np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4))
    g = cv.capture(lambda x: x @ w, cv.spec((2, 3), "float64"))
    g.save(str(tmp_path / "f.json"))
    loaded = cv.load(str(tmp_path / "f.json"))
    value = loaded.constant_values[loaded.constants[0].index]
    assert value.flags.f_contiguous and value.flags.writeable and np.array_equal(value, w)


# --- saving: names, refusals, atomicity ---------------------------------------------------


def test_constants_are_named_after_the_whole_file_name(tmp_path):
    a = cv.capture(lambda x: x + ONES2, cv.spec(2))
    b = cv.capture(lambda x: x + np.full(2, 5, np.float32), cv.spec(2))
    a.save(str(tmp_path / "run.json"))
    b.save(str(tmp_path / "run.txt"))
    assert sorted(os.listdir(tmp_path)) == ["run.json", "run.json.npz", "run.txt",
                                            "run.txt.npz"]
    x = np.zeros(2, np.float32)
    assert cv.load(str(tmp_path / "run.json")).replay({"x": x})["out"].tolist() == [1, 1]
    assert cv.load(str(tmp_path / "run.txt")).replay({"x": x})["out"].tolist() == [5, 5]


def test_save_refuses_to_overwrite_an_unrelated_file(tmp_path):
    np.savez(tmp_path / "run.json.npz", precious=np.arange(3))
    before = (tmp_path / "run.json.npz").read_bytes()
    g = cv.capture(lambda x: x + ONES2, cv.spec(2))
    with pytest.raises(FileExistsError, match=r"refusing to overwrite .*run\.json\.npz: it was "
                                              "not written by capviz for the graph file "
                                              "run.json"):
        g.save(str(tmp_path / "run.json"))
    assert (tmp_path / "run.json.npz").read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["run.json.npz"]


def test_constants_written_for_another_graph_file_are_not_overwritten(tmp_path):
    g = cv.capture(lambda x: x + ONES2, cv.spec(2))
    g.save(str(tmp_path / "a.json"))
    os.rename(tmp_path / "a.json.npz", tmp_path / "b.json.npz")
    with pytest.raises(FileExistsError, match="not written by capviz for the graph file b.json"):
        g.save(str(tmp_path / "b.json"))


def test_saving_again_replaces_its_own_constants(tmp_path):
    path = str(tmp_path / "run.json")
    cv.capture(lambda x: x + ONES2, cv.spec(2)).save(path)
    cv.capture(lambda x: x * THREES2, cv.spec(2)).save(path)
    out = cv.load(path).replay({"x": np.ones(2, np.float32)})["out"]
    assert out.tolist() == [3, 3]


def test_the_same_graph_saves_byte_for_byte_the_same_files(tmp_path):
    g = cv.capture(lambda x: x + ONES2, cv.spec(2))
    g.save(str(tmp_path / "a.json"))
    first = (tmp_path / "a.json.npz").read_bytes()
    g.save(str(tmp_path / "a.json"))
    assert (tmp_path / "a.json.npz").read_bytes() == first


ONES2 = np.ones(2, np.float32)  # ndarrays: constants of the graphs below (np.ones inside a
THREES2 = np.full(2, 3, np.float32)  # capture would record a create op, no constant)


class Crash(BaseException):
    """Stands for the process dying (not an Exception, so nothing handles it)."""


def test_a_crash_while_writing_leaves_the_old_pair_intact(tmp_path, monkeypatch):
    path = str(tmp_path / "run.json")
    cv.capture(lambda x: x + ONES2, cv.spec(2)).save(path)
    new = cv.capture(lambda x: x * THREES2, cv.spec(2))

    def crash(*args, **kwargs):
        raise Crash
    monkeypatch.setattr(np.lib.format, "write_array", crash)
    with pytest.raises(Crash):
        new.save(path)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["run.json", "run.json.npz"]
    assert cv.load(path).replay({"x": np.ones(2, np.float32)})["out"].tolist() == [2, 2]


def test_a_crash_between_the_renames_is_refused_not_misread(tmp_path, monkeypatch):
    path = str(tmp_path / "run.json")
    cv.capture(lambda x: x + ONES2, cv.spec(2)).save(path)
    new = cv.capture(lambda x: x + THREES2, cv.spec(2))  # same shapes
    real_replace = os.replace

    def replace(src, dst):
        if dst == path:
            raise Crash  # the constants are already renamed, the JSON is not
        real_replace(src, dst)
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(Crash):
        new.save(path)
    monkeypatch.undo()
    with pytest.raises(cv.GraphFormatError, match="is not the one saved with this graph"):
        cv.load(path)
    new.save(path)  # the next save repairs the pair
    assert cv.load(path).replay({"x": np.ones(2, np.float32)})["out"].tolist() == [4, 4]


# --- loading is linear -----------------------------------------------------------------------


def test_a_4000_way_split_computes_the_split_rule_once_per_load(tmp_path, monkeypatch):
    g = cv.capture(lambda x: np.split(x, 4000)[7] * 2, cv.spec(4000))
    g.save(str(tmp_path / "split.json"))
    split = ops.OPS["split"]
    calls = []
    real_meta = split.meta

    def counting_meta(args, params):
        calls.append(1)
        return real_meta(args, params)
    monkeypatch.setattr(split, "meta", counting_meta)
    loaded = cv.load(str(tmp_path / "split.json"))
    assert len([n for n in loaded.ops if n.op == "unpack"]) == 4000
    assert len(calls) == 1, f"split's rule ran {len(calls)} times for one load"


class CountingNodes(list):
    """A node list that counts the elements read through it (slices count their length)."""

    def __init__(self, nodes):
        super().__init__(nodes)
        self.reads = 0

    def __iter__(self):
        self.reads += len(self)
        return super().__iter__()

    def __reversed__(self):
        self.reads += len(self)
        return super().__reversed__()

    def __getitem__(self, key):
        self.reads += len(range(*key.indices(len(self)))) if isinstance(key, slice) else 1
        return super().__getitem__(key)


def violation_graph(n):
    def f(x):
        y = x + 1
        for _ in range(n):
            float(y[0])  # a data read: one violation per iteration
        return y
    return cv.capture(f, cv.spec(3), on_violation="record")


def test_nx_reads_each_node_a_bounded_number_of_times():
    reads = {}
    for n in (500, 2000):
        g = violation_graph(n)
        assert len(g.violations) == n
        g.nodes = CountingNodes(g.nodes)
        g.nx
        reads[n] = g.nodes.reads / len(g.nodes)
    assert reads[2000] <= reads[500] * 1.1, reads  # per node: flat, not growing with n


def test_violation_edges_are_kept(tmp_path):
    def f(x):
        y = cv.random.normal((2,)) + x
        np.random.seed(1)
        z = cv.random.uniform((2,)) * y
        float(z[0])
        return z
    dev = cv.Device("numpy")
    dev.seed(0)
    g = cv.capture(f, cv.spec(2), on_violation="record", rng=dev)
    edges = {(u, v, k) for u, v, k in g.nx.edges(keys=True) if k in ("after", "affects",
                                                                      "reads")}
    seed = next(n.index for n in g.nodes if n.kind == "violation" and n.op == "seed")
    read = next(n.index for n in g.nodes if n.kind == "violation" and n.op == "data_read")
    uniform = next(n.index for n in g.ops if n.op == "random_uniform")
    assert (seed, uniform, "affects") in edges
    assert (seed - 1, seed, "after") in edges and (read - 1, read, "after") in edges
    assert [k for _, v, k in g.nx.in_edges(uniform, keys=True)] == ["affects"]


def test_save_into_a_missing_folder_or_onto_a_directory_says_so(tmp_path):
    g = cv.capture(lambda x: x + ONES2, cv.spec(2))
    with pytest.raises(FileNotFoundError, match="cannot save .*nowhere/g.json: the folder "
                                                ".*nowhere does not exist"):
        g.save(str(tmp_path / "nowhere" / "g.json"))
    (tmp_path / "d.json").mkdir()
    with pytest.raises(IsADirectoryError, match="cannot save .*d.json: it is a directory"):
        g.save(str(tmp_path / "d.json"))
    assert sorted(os.listdir(tmp_path)) == ["d.json"]  # no stray constants or temporaries


def schema_attributes(node):
    """A node's graph.nx attributes written from the schema table (docs/architecture.md), one
    node at a time, independently of to_networkx's caches."""
    from capviz.core.ir import Node
    from capviz.io.json import encode

    attrs = {"kind": node.kind, "op": node.op,
             "shape": None if node.shape is None else [int(d) for d in node.shape],
             "dtype": None if node.dtype is None else np.dtype(node.dtype).name,
             "params": {k: encode(v) for k, v in node.params.items()},
             "source": None if node.source is None else "{}:{} in {}".format(*node.source),
             "order": node.index, "scope": node.scope, "name": node.name}
    literals = {str(i): encode(a) for i, a in enumerate(node.args) if not isinstance(a, Node)}
    if literals:
        attrs["literals"] = literals
    return attrs


def public_api_graph(graph):
    """graph.nx as networkx's public API builds it (add_nodes_from / add_edges_from)."""
    import networkx as nx

    from capviz.core.ir import Node
    from capviz.io.nx import violation_links

    expected = nx.MultiDiGraph(inputs=graph.inputs, outputs=graph.outputs,
                               rng_seed=graph.rng_seed)
    expected.add_nodes_from((n.index, schema_attributes(n)) for n in graph.nodes)
    expected.add_edges_from((a.index, n.index, pos, {"kind": "operand"}) for n in graph.nodes
                            for pos, a in enumerate(n.args) if isinstance(a, Node))
    expected.add_edges_from((u, v, k, {"kind": k}) for u, v, k in violation_links(graph))
    return expected


def assert_same_nx(got, expected):
    """Equal nodes (in order), attributes (as exact JSON: 1, 1.0 and true differ), edges with
    their keys and data (in order), and graph attributes."""
    import networkx as nx

    assert nx.utils.graphs_equal(got, expected)
    assert list(got.nodes) == list(expected.nodes)
    for (u, a), (_, b) in zip(got.nodes(data=True), expected.nodes(data=True)):
        assert json.dumps(a) == json.dumps(b), u
    assert list(got.edges(keys=True, data=True)) == list(expected.edges(keys=True, data=True))
    assert [list(got.pred[v]) for v in got] == [list(expected.pred[v]) for v in expected]
    assert got.graph == expected.graph


def test_nx_view_equals_the_graph_built_through_networkx_public_api():
    """to_networkx fills networkx's dict layout directly, with caches; it must equal
    add_*_from's result for every kind of node, parameter, literal and edge."""
    import networkx as nx

    from capviz.io.nx import node_attributes

    w = np.arange(6, dtype=np.float32)
    cap = cv.CaptureDevice()
    with cap.capture_scope(on_violation="record") as scope:
        x = scope.input("x", (4, 6), "float32")
        a, b = np.split(x * x, 2, axis=1)  # x * x: two edges between the same nodes
        y = a @ b.T
        with cv.name_scope("blk"):
            m = np.mean(y, axis=-1, keepdims=True) + np.mean(y, axis=-1, keepdims=True)
            z = y[:, ::2] * np.float32(0.5) + y[:, 1::2] ** 2 + (x[..., None, 1] - w[1])
            z = np.where(z > 0.0, z, np.nan) + 1j + m.sum() + np.clip(y, -1, 2).max()
        float(y.sum())  # a data read: a violation with 'after' and 'reads' edges
        np.random.seed(3)  # a seed violation
        scope.output(np.tanh(x) * w, name="y")
        scope.output(z, name="z")
    graph = scope.graph
    got = graph.nx
    assert_same_nx(got, public_api_graph(graph))
    assert [node_attributes(n) for n in graph.nodes] == [got.nodes[n.index] for n in graph.nodes]
    assert got.number_of_edges(0, 1) == 2  # x * x keeps both operands
    assert next(iter(nx.topological_sort(got))) == 0
    kinds = {k for _, _, k in got.edges(keys=True)}
    assert {0, 1, "after", "reads"} <= kinds


def hand_built(params_list):
    """A graph of one input and one op per params dict (params as a hand-edited graph may
    hold them), each op reading the one before."""
    from capviz.core.ir import Node
    from capviz.graph import CapturedGraph

    graph = CapturedGraph()
    f32 = np.dtype("float32")
    prev = graph.add(Node(0, "input", None, (), {}, (2,), f32, ("m.py", 1, "f"), "", "x"))
    for i, params in enumerate(params_list, 1):
        prev = graph.add(Node(i, "op", "negative", (prev,), params, (2,), f32,
                              ("m.py", 2, "f"), ""))
    return graph


EQUAL_LOOKING = [1, 1.0, True, 0, 0.0, -0.0, False, None, float("nan"), float("inf"), (1,),
                 (1.0,), (True,), [1], [1.0], ((1, 2.0),), ((1.0, 2),), slice(1, None),
                 slice(True, None), (slice(None), Ellipsis, None, 1), "1", np.float32(1),
                 np.int64(1), 1j]


def test_params_json_keeps_equal_looking_values_apart():
    """Parameters that are their own JSON are copied, not encoded: values that compare equal
    but encode differently (1, 1.0, True, np.int64(1); 0.0 and -0.0; (1,) and (1.0,)) keep
    their own JSON."""
    from capviz.io.json import encode

    params_list = [{"v": v} for v in EQUAL_LOOKING] * 2 + [{"v": 1, "w": (2, 3.0)},
                                                           {"w": (2, 3.0), "v": 1},
                                                           {1: 0}, {True: 0}, {1: (0,)},
                                                           {True: (0,)}]
    graph = hand_built(params_list)
    got = graph.nx
    assert_same_nx(got, public_api_graph(graph))
    for node, params in zip(graph.nodes[1:], params_list):
        expected = {k: encode(v) for k, v in params.items()}
        assert json.dumps(got.nodes[node.index]["params"]) == json.dumps(expected), params
    texts = [json.dumps(got.nodes[i]["params"]) for i in range(1, len(EQUAL_LOOKING) + 1)]
    assert len(set(texts)) == len(EQUAL_LOOKING)  # no two of them encode alike
    last = len(params_list)
    assert list(got.nodes[last - 5]["params"]) == ["v", "w"]  # order kept
    assert list(got.nodes[last - 4]["params"]) == ["w", "v"]
    assert [type(k) for i in range(last - 3, last + 1) for k in got.nodes[i]["params"]] == \
        [int, bool, int, bool]  # names (in a hand-made graph) keep their types too


def test_nx_nodes_and_edges_share_no_mutable_value():
    """Cached encodings are copied: editing one node's params, shape, literals or one edge's
    data leaves every other node and edge as it was."""
    index = {"index": (slice(None), slice(1, None, 2)), "axis": [0, 1]}
    flat = {"a": 1}
    graph = hand_built([dict(index), dict(index), flat, flat])  # one params dict, two nodes
    got = graph.nx
    before = json.dumps(dict(got.nodes(data=True)), default=str)
    got.nodes[1]["params"]["index"]["$tuple"].append(9)
    got.nodes[1]["params"]["axis"].append(9)
    got.nodes[3]["params"]["a"] = 2
    got.nodes[1]["shape"].append(9)
    got.edges[0, 1, 0]["kind"] = "edited"
    assert got.nodes[2]["params"] == {"index": {"$tuple": [
        {"$slice": [None, None, None]}, {"$slice": [1, None, 2]}]}, "axis": [0, 1]}
    assert got.nodes[4]["params"] == {"a": 1} and got.nodes[2]["shape"] == [2]
    assert graph.nodes[3].params == {"a": 1}  # the captured node's own params: untouched
    assert got.edges[1, 2, 0] == {"kind": "operand"}
    after = json.loads(json.dumps(dict(got.nodes(data=True)), default=str))
    assert {k: v for k, v in after.items() if k not in ("1", "3")} == \
        {k: v for k, v in json.loads(before).items() if k not in ("1", "3")}
