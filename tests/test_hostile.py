"""Hostile inputs: mutated graph files, odd arrays, overflowing literals. Each is a named capviz
error that names the culprit, and nothing is lost."""

import json
import os
import re
import tempfile

import numpy as np
import pytest
from conftest import assert_bitwise
from hypothesis import given, settings
from hypothesis import strategies as st

import capviz as cv
from capviz.randomness import hooks


def reference_graph():
    w = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))

    def f(x, i):
        with cv.name_scope('we"ird\n<b>'):
            y = np.tanh(x @ w)[:, ::2]
        parts = np.split(y, 2, axis=1)
        return np.concatenate(parts, axis=0)[i] * 0.5, np.where(y > 0, y, -np.inf)

    return cv.capture(f, cv.spec((2, 3)), cv.spec((2,), "int64"))


FUZZ_DIR = tempfile.mkdtemp(prefix="capviz-fuzz-")
BASE = os.path.join(FUZZ_DIR, "base.json")
reference_graph().save(BASE)
BASE_DOC = json.load(open(BASE))
BASE_TEXT = open(BASE).read()
BASE_NPZ = open(BASE + ".npz", "rb").read()

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=6)


def paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


ALL_PATHS = [p for p in paths(BASE_DOC) if p]


def mutate(doc, path, value, delete):
    target = doc
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(ALL_PATHS), JSON_VALUES, st.booleans()), min_size=1,
                max_size=4))
def test_fuzz_json_mutations_only_raise_graph_format_error(mutations):
    doc = json.loads(BASE_TEXT)
    for path, value, delete in mutations:
        try:
            mutate(doc, path, value, delete)
        except (KeyError, IndexError, TypeError):
            continue
    path = os.path.join(FUZZ_DIR, "m.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    with open(path + ".npz", "wb") as f:
        f.write(BASE_NPZ)
    if doc.get("constants") == "base.json.npz":
        doc["constants"] = "m.json.npz"
    try:
        cv.load(path)
    except cv.GraphFormatError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(BASE_TEXT)), st.binary(max_size=6), st.booleans())
def test_fuzz_truncated_or_corrupted_text(cut, junk, into_npz):
    path = os.path.join(FUZZ_DIR, "t.json")
    text, npz = BASE_TEXT.encode(), BASE_NPZ
    if into_npz:  # without its checksum, so that the member checks are what answers
        npz = npz[:cut % len(npz)] + junk + npz[cut % len(npz) + len(junk):]
        text = re.sub(rb'"constants_sha256": "[0-9a-f]+",', b"", text)
    else:
        text = text[:cut] + junk
    with open(path, "wb") as f:
        f.write(text.replace(b"base.json.npz", b"t.json.npz"))
    with open(path + ".npz", "wb") as f:
        f.write(npz)
    try:
        cv.load(path)
    except cv.GraphFormatError:
        pass


def test_integer_literal_out_of_range_is_named_at_capture():
    with pytest.raises(cv.ShapeError, match="Python integer 300 out of bounds for int8"):
        cv.capture(lambda x: x + 300, cv.spec(3, "int8"))
    g = cv.capture(lambda x: x + 100, cv.spec(3, "int8"))  # in range: wraps like NumPy
    x = np.full(3, 100, np.int8)
    with np.errstate(over="ignore"):
        assert_bitwise(g.replay({"x": x})["out"], x + 100)


def test_non_contiguous_and_fortran_constants():
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    fortran, strided = np.asfortranarray(base), base[::2, ::3]

    def f(x):
        return (x @ fortran) + strided.sum() , x[:, :2] * strided

    x = np.ones((2, 4))
    g = cv.capture(f, cv.spec(x.shape, x.dtype))
    for got, want in zip(g.replay({"x": x}).values(), f(x)):
        assert_bitwise(got, want)
    assert g.constant_values[g.constants[0].index].flags.f_contiguous
    path = os.path.join(tempfile.mkdtemp(), "g.json")
    g.save(path)
    for got, want in zip(cv.load(path).replay({"x": x}).values(), f(x)):
        assert_bitwise(got, want)


def test_hostile_names_round_trip_through_files(tmp_path):
    name = 'q"uote\nnew<line>&'
    with cv.CaptureDevice().capture_scope() as scope:
        scope.output(scope.input(name, (2,)) * 2, name)
    scope.graph.save(str(tmp_path / "g.json"))
    loaded = cv.load(str(tmp_path / "g.json"))
    assert loaded.inputs == [name] and loaded.outputs == [name]


def test_object_arrays_are_refused_at_capture():
    with pytest.raises(TypeError, match="object arrays cannot be recorded"):
        cv.capture(lambda x: x + np.array([object(), 1], dtype=object), cv.spec(2))


def test_failed_scope_releases_everything():
    cap = cv.CaptureDevice()
    with pytest.raises(RuntimeError):
        with cap.capture_scope() as scope:
            x = scope.input("x", (2,))
            y = x * 2
            raise RuntimeError("user bug")
    assert not hooks.installed() and not cv.is_capturing()
    assert [n.op for n in scope.graph.ops] == ["multiply"] and y is not None
    with cap.capture_scope() as again:
        again.output(again.input("x", (1,)) + 1)
    assert again.graph.complete


def test_many_ops_stay_within_the_memory_goal():
    import tracemalloc

    def chain(x):
        for _ in range(50_000):
            x = x * 1.0001
            x = x + 0.5
        return x

    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    graph = cv.capture(chain, cv.spec(4))
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    used = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert len(graph.ops) == 100_000
    assert used / 100_000 < 2048, used / 100_000


def test_graphs_are_freed_without_the_cycle_collector(capviz_graphs):
    import gc
    import weakref

    gc.collect()
    gc.disable()
    try:
        g = cv.capture(lambda x: np.tanh(x) * 2, cv.spec(3))
        g.replay({"x": np.ones(3, np.float32)})
        g.executor({"x": np.ones(3, np.float32)}).run()
        _ = g.nx, str(g), g.to_dot(), g.to_svg()
        ref = weakref.ref(g)
        capviz_graphs.clear()  # the pytest plugin keeps the test's graphs for its report
        del g
        assert ref() is None
    finally:
        gc.enable()


def test_failed_graphs_are_collected(capviz_graphs):
    import gc
    import weakref

    try:
        cv.capture(lambda x: x @ np.ones((5, 5)), cv.spec(3))
    except cv.ShapeError as err:
        ref = weakref.ref(err.graph)
    capviz_graphs.clear()
    gc.collect()
    assert ref() is None
