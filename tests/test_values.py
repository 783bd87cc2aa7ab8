"""Captures with example values: reads become guards, data-dependent lengths become symbols.

Each program is captured on an example, then replayed bit for bit as eager NumPy computes it
on the example and on inputs that take the same branches; inputs that take another branch
raise GuardError naming the line, the recorded value and the new one. The same through save
and load, on Dask (unknown lengths) and JAX (guards evaluated in the compiled program; size
symbols refused by name).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import capviz as cv

HERE = os.path.basename(__file__)


def shade(x):
    hit = x > 0.5
    if np.any(hit):  # a ray tracer's early test
        return np.where(hit, x * 2.0, 0.0)
    return x * 0.0


def halve_until_small(x):
    for _ in range(20):  # an iterative solver: the loop unrolls, one guard per test
        if np.max(np.abs(x)) <= 1.0:
            break
        x = x / 2.0
    return x


def int_size(x):
    n = int((x > 0).sum())  # a size taken from the data
    return np.ones(n) * x.sum() + x[:n]


def nbody_step(y):
    y = y.copy()
    y[y > 0] = y[y > 0] ** -1.5
    return y


def masked_mean(x):
    mask = x > 0
    return x[mask].mean()


def nonzero_gather(x):
    idx = np.nonzero(x > 0)[0]
    return x[idx] * 2.0, np.take(x, idx) + 1.0


def unique_counts(x):
    values, counts = np.unique(x, return_counts=True)
    return values, counts


EX = np.array([0.25, 3.0, -2.0, 0.75, 5.0, 0.1])
CASES = [
    # (fn, example, same-branch input, other-branch input, guarded line text)
    (shade, EX, EX[::-1].copy(), np.full(6, 0.1), "if np.any(hit)"),
    (halve_until_small, np.array([3.0, -4.0]), np.array([2.5, 3.9]), np.array([30.0, 4.0]),
     "if np.max(np.abs(x)) <= 1.0"),
    (int_size, EX, np.array([1.0, 2.0, -1.0, 3.0, 4.0, 6.0]), -EX, "n = int"),
    (nbody_step, EX, np.array([-1.0, 2.0, 3.0, 4.0, 5.0, -0.5]), None, None),
    (masked_mean, EX, np.array([1.0, -3.0, 2.0, 0.5, -1.0, 7.0]), None, None),
    (nonzero_gather, EX, np.array([1.0, -3.0, 2.0, 0.5, -1.0, 7.0]), None, None),
    (unique_counts, np.array([3.0, 1.0, 3.0, 2.0, 1.0, 3.0]),
     np.array([5.0, 5.0, 1.0, 0.0, 9.0, 9.0]), None, None),
]
IDS = [c[0].__name__ for c in CASES]


def _outputs(result):
    return result if isinstance(result, tuple) else (result,)


def _same_bits(graph, fn, x, backend="numpy"):
    got = graph.replay({graph.inputs[0]: x}, backend=backend, to_numpy=True)
    want = _outputs(fn(x.copy()))
    assert len(got) == len(want)
    for name, w in zip(graph.outputs, want):
        g, w = np.asarray(got[name]), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, name
        assert g.tobytes() == w.tobytes(), name


@pytest.mark.parametrize(("fn", "example", "same", "other", "line"), CASES, ids=IDS)
def test_replay_equals_eager_on_the_example_and_on_same_branch_inputs(fn, example, same,
                                                                      other, line):
    graph = cv.capture(fn, example)
    graph.verify()
    _same_bits(graph, fn, example)
    _same_bits(graph, fn, same)


@pytest.mark.parametrize(("fn", "example", "same", "other", "line"),
                         [c for c in CASES if c[3] is not None],
                         ids=[c[0].__name__ for c in CASES if c[3] is not None])
def test_another_branch_raises_guard_error_naming_line_values_and_fix(fn, example, same,
                                                                      other, line):
    graph = cv.capture(fn, example)
    with pytest.raises(cv.GuardError) as info:
        graph.replay({graph.inputs[0]: other})
    err = info.value
    assert isinstance(err, cv.ReplayError)
    text = str(err)
    assert f"{HERE}:" in text and "another branch" in text
    assert f"read {err.recorded!r} when captured and {err.got!r} now" in text
    assert "capture again with an example that takes this branch" in text
    assert "np.where" in text
    assert err.node.kind == "guard"
    assert line in open(__file__).read().splitlines()[err.node.source[1] - 1]


def test_the_unrolled_loop_has_one_guard_per_test_and_the_listing_shows_them():
    graph = cv.capture(halve_until_small, np.array([3.0, -4.0]))
    guards = graph.guards
    assert [g.params["value"] for g in guards] == [False, False, True]  # 4, 2, 1
    assert all(g.op == "bool()" for g in guards)
    text = str(graph)
    assert "3 guards" in text
    assert f"guard %{guards[-1].index}: bool(%{guards[-1].args[0].index}) == True" in text


def test_a_size_read_is_a_guard_on_the_symbol_and_lengths_print_as_symbols():
    graph = cv.capture(lambda x: (x[x > 0] * 2.0, len(x[x > 1])), EX)
    text = str(graph)
    assert "float64[n0]" in text and "# sizes: n0 = len(" in text
    size_guards = [g for g in graph.guards if g.op == "len()"]
    assert len(size_guards) == 1 and size_guards[0].params == {"axis": 0, "value": 2}
    assert f"len(%{size_guards[0].args[0].index}, axis=0) == 2" in text


@pytest.mark.parametrize(("fn", "example", "same", "other", "line"), CASES, ids=IDS)
def test_guards_and_symbols_survive_save_and_load(tmp_path, fn, example, same, other, line):
    graph = cv.capture(fn, example)
    path = str(tmp_path / "g.json")
    graph.save(path)
    loaded = cv.load(path)
    assert str(loaded) == str(graph)
    assert [(g.op, g.params) for g in loaded.guards] == [(g.op, g.params) for g in graph.guards]
    assert sorted(loaded.symbols) == sorted(graph.symbols)
    _same_bits(loaded, fn, same)
    if other is not None:
        with pytest.raises(cv.GuardError, match="another branch"):
            loaded.replay({loaded.inputs[0]: other})


def test_a_loaded_graph_refuses_a_shape_naming_an_unknown_symbol(tmp_path):
    import json

    graph = cv.capture(masked_mean, EX)
    path = str(tmp_path / "g.json")
    graph.save(path)
    doc = json.load(open(path))
    doc["symbols"] = {}
    json.dump(doc, open(path, "w"))
    with pytest.raises(cv.GraphFormatError, match="size symbols"):
        cv.load(path)


@pytest.mark.parametrize(("fn", "example", "same", "other", "line"), CASES, ids=IDS)
def test_dask_runs_symbols_and_checks_guards_in_the_same_compute(fn, example, same, other,
                                                                  line):
    pytest.importorskip("dask")
    graph = cv.capture(fn, example)
    for x in (example, same):
        got = graph.replay({graph.inputs[0]: x}, backend="dask", chunks=2)
        want = _outputs(fn(x.copy()))
        for name, w in zip(graph.outputs, want):
            np.testing.assert_allclose(got[name], w, rtol=1e-12)
            assert np.asarray(got[name]).shape == np.shape(w)
    if other is not None:
        with pytest.raises(cv.GuardError, match="another branch"):
            graph.replay({graph.inputs[0]: other}, backend="dask", chunks=2)
        with pytest.raises(cv.GuardError, match="another branch"):  # lazy: guards first
            graph.replay({graph.inputs[0]: other}, backend="dask", compute=False)


@pytest.mark.parametrize("fn", [shade, halve_until_small, int_size], ids=lambda f: f.__name__)
def test_jax_evaluates_guards_in_the_compiled_program(fn):
    pytest.importorskip("jax")
    case = next(c for c in CASES if c[0] is fn)
    graph = cv.capture(fn, case[1])
    got = graph.replay({graph.inputs[0]: case[2]}, backend="jax", to_numpy=True)
    for name, w in zip(graph.outputs, _outputs(fn(case[2].copy()))):
        np.testing.assert_allclose(got[name], w, rtol=1e-12)
    with pytest.raises(cv.GuardError, match="another branch"):
        graph.replay({graph.inputs[0]: case[3]}, backend="jax")


@pytest.mark.parametrize("fn", [nbody_step, masked_mean, nonzero_gather, unique_counts],
                         ids=lambda f: f.__name__)
def test_jax_refuses_data_dependent_lengths_by_name(fn):
    pytest.importorskip("jax")
    case = next(c for c in CASES if c[0] is fn)
    graph = cv.capture(fn, case[1])
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"cannot run on the jax backend: its result's length depends on "
                             r"the data .*XLA compiles only static shapes"):
        graph.replay({graph.inputs[0]: case[1]}, backend="jax")


def test_the_executor_checks_guards_node_by_node():
    graph = cv.capture(shade, EX)
    with pytest.raises(cv.GuardError):
        graph.replay({"x": np.full(6, 0.1)}, check_finite=True)
    compiled = graph.compile()
    np.testing.assert_array_equal(compiled(EX)[0], shade(EX))
    with pytest.raises(cv.GuardError):
        compiled(np.full(6, 0.1))


# --- without examples: refused as before, each message naming the example array --------------


@pytest.mark.parametrize(("fn", "call"), [
    (shade, "bool()"), (int_size, "int()"), (masked_mean, r"tensor\[mask\]"),
    (nonzero_gather, "np.nonzero"), (unique_counts, "np.unique"),
    (lambda x: x[x > 0, 1:], "boolean tensor inside a tuple index"),
], ids=["bool", "int", "mask", "nonzero", "unique", "mask_tuple"])
def test_without_examples_the_reads_are_refused_and_name_the_example_array(fn, call):
    shape = (6, 2) if call.startswith("boolean") else (6,)
    with pytest.raises(cv.CaptureViolation, match=call) as info:
        cv.capture(fn, cv.spec(shape, "float64"))
    text = str(info.value)
    assert "example array instead of a spec" in text
    assert f"{HERE}:" in text


def test_an_array_leaving_through_asarray_is_refused_with_examples_too():
    def fn(x):
        y = np.asarray(x * 2.0, order="F")  # plain NumPy after this would bake the example in
        # (np.asarray(x * 2.0) is the tensor itself: tests/test_conversions.py)
        return x + float(y.sum())

    with pytest.raises(cv.DataReadError, match="np.asarray") as info:
        cv.capture(fn, EX)
    text = str(info.value)
    assert "would compute from the example's values a constant" in text
    assert f"{HERE}:" in text and len(text.splitlines()) == 3


def test_a_spec_input_read_is_refused_when_another_input_has_an_example():
    def fn(x, w):
        return x * 2.0 if float(w.sum()) > 0 else x

    with pytest.raises(cv.DataReadError, match="this input was given by its shape and dtype"):
        cv.capture(fn, EX, cv.spec((3,), "float64"))


def test_capture_with_examples_computes_nothing_when_nothing_is_read():
    def fn(x):
        return np.tanh(x * 2.0).sum(axis=0)

    scope = cv.CaptureDevice().capture_scope()
    with scope:
        x = scope.input("x", np.ones((4, 3)))
        scope.output(fn(x), "y")
    assert set(scope.recorder.examples.values) == {0}  # the example itself, nothing computed


def test_the_memory_plan_bounds_a_symbol_by_its_upper_bound():
    graph = cv.capture(lambda x: x[x > 0] * 2.0, np.ones(1000))
    (symbol,) = graph.symbols.values()
    assert symbol.bound == 1000
    plan = graph.memory_plan()
    assert plan.peak_bytes >= 2 * 1000 * 8


def test_writes_back_through_another_mask_are_refused_by_name():
    def fn(y):
        y = y.copy()
        y[y > 0] = y[y < 3] * 2.0
        return y

    with pytest.raises(cv.UnsupportedOperationError, match="another selection than this mask"):
        cv.capture(fn, EX)


def test_mask_then_slice_reads_the_selected_rows():
    x = np.arange(12.0).reshape(6, 2) - 5.0
    fn = lambda a: a[a[:, 0] > 0, 1:] * 3.0  # noqa: E731
    graph = cv.capture(fn, x)
    _same_bits(graph, fn, x)
    _same_bits(graph, fn, x[::-1].copy())


def test_concatenation_of_two_selections_makes_a_new_symbol():
    fn = lambda x: np.concatenate([x[x > 0], x[x < -1]]) * 2.0  # noqa: E731
    graph = cv.capture(fn, EX)
    assert len(graph.symbols) == 3
    assert "float64[n2]" in str(graph)
    _same_bits(graph, fn, np.array([1.0, -3.0, 2.0, 0.5, -1.0, 7.0]))


def test_a_rule_that_needs_the_number_asks_for_a_guard():
    fn = lambda x: x[x > 0] + x[x < 1]  # noqa: E731 - valid only for equal counts
    with pytest.raises(ValueError, match="broadcast"):  # 3 and 2 selected: NumPy's error
        cv.capture(fn, np.array([1.0, 2.0, -1.0, 0.5]))
    graph = cv.capture(fn, np.array([2.0, 3.0, -1.0, -2.0]))  # 2 and 2
    assert {g.op for g in graph.guards} == {"len()"}
    _same_bits(graph, fn, np.array([5.0, -1.0, 6.0, -7.0]))
    with pytest.raises(cv.GuardError, match="read 2 when captured and 3 now"):
        graph.replay({"x": np.array([5.0, 1.5, 6.0, -7.0])})


def test_every_read_returns_the_example_value_and_records_its_guard():
    def fn(x):
        s = x.sum()
        a = float(s)
        b = int(x.max())
        c = s.item()
        d = x[:2].tolist()
        e = bool(s > 0)
        f = round(x.min())
        g = x[:x.argmax()]  # a tensor as a slice bound: operator.index
        return x * a + b + c + d[1] + e + f + g

    x = np.array([1.5, 2.0, -0.5])
    graph = cv.capture(fn, x)
    reads = [(g.op, g.params["value"]) for g in graph.guards]
    assert reads == [("float()", 3.0), ("int()", 2), (".item()", 3.0), (".tolist()", [1.5, 2.0]),
                     ("bool()", True), ("round()", 0), ("operator.index()", 1)]
    _same_bits(graph, fn, x)
    with pytest.raises(cv.GuardError, match=r"\.tolist\(\) of %\d+.*read \[1\.5, 2\.0\] when "
                                            r"captured and \[1\.5, 2\.5\] now"):
        graph.replay({"x": np.array([1.5, 2.5, -1.0])})  # same sum, another second element


def test_a_float_guard_tells_minus_zero_from_zero():
    fn = lambda x: x * float(x.max())  # noqa: E731
    graph = cv.capture(fn, np.array([0.0, 0.0]))
    with pytest.raises(cv.GuardError, match="read 0.0 when captured and -0.0 now"):
        graph.replay({"x": np.array([-0.0, -0.0])})


def leaky_relu(z):
    _z = z.copy()
    _z[z < 0] = _z[z < 0] * 0.01  # the mask recomputed on the left: the same value
    return _z


SIZED = [
    (lambda x: np.flatnonzero(x > 0) * 2, "flatnonzero"),
    (lambda x: np.argwhere(x.reshape(2, 3) > 0), "argwhere"),
    (lambda x: np.unique(np.round(x), return_index=True, return_inverse=True,
                         return_counts=True), "unique_all_flags"),
    (lambda x: np.compress(x > 0, x * 3), "compress"),
    (lambda x: np.compress(x[:3] > 0, x.reshape(2, 3), axis=1), "compress_axis"),
    (lambda x: np.extract(x < 1, x) - 1, "extract"),
    (lambda x: x.reshape(3, 2)[x.reshape(3, 2)[:, 0] > 0, 1:] + 1, "mask_rows_slice"),
    (lambda x: np.nonzero(x.reshape(2, 3) > 0)[1] + x.reshape(2, 3)[np.nonzero(
        x.reshape(2, 3) > 0)], "nonzero_2d_gather"),
    (leaky_relu, "leaky_relu"),
    (lambda x: np.sort(x[x > 0])[::-1].cumsum(), "sort_cumsum"),
]


@pytest.mark.parametrize("fn", [f for f, _ in SIZED], ids=[n for _, n in SIZED])
@pytest.mark.parametrize("backend", ["numpy", "dask"])
def test_every_data_dependent_length_replays_as_eager(fn, backend):
    if backend == "dask":
        pytest.importorskip("dask")
    graph = cv.capture(fn, EX)
    graph.verify()
    assert graph.symbols
    for x in (EX, np.array([1.0, -3.0, 2.0, 0.5, -1.0, 7.0]), -EX):
        got = graph.replay({graph.inputs[0]: x}, backend=backend, to_numpy=True)
        for name, want in zip(graph.outputs, _outputs(fn(x.copy()))):
            assert np.asarray(got[name]).tobytes() == np.asarray(want).tobytes(), name
            assert np.asarray(got[name]).shape == np.shape(want)


def test_guards_run_on_cupy_arrays(monkeypatch):
    from helpers import fakecupy

    fakecupy.install(monkeypatch)
    graph = cv.capture(shade, EX)
    got = graph.replay({"x": EX}, backend="cupy", to_numpy=True)["out"]
    assert got.tobytes() == shade(EX).tobytes()
    with pytest.raises(cv.GuardError, match="read True when captured and False now"):
        graph.replay({"x": np.full(6, 0.1)}, backend="cupy")


def test_the_svg_draws_guards_as_their_own_kind():
    import xml.etree.ElementTree as ET

    graph = cv.capture(shade, EX)
    root = ET.fromstring(graph.to_svg())
    ns = {"svg": "http://www.w3.org/2000/svg"}
    nodes = [g for g in root.iter("{http://www.w3.org/2000/svg}g")
             if "node" in g.get("class", "").split()]
    guards = [g for g in nodes if "guard bool(%2)" in "".join(g.itertext())]
    assert len(guards) == 1
    assert "== True" in "".join(guards[0].itertext())
    assert guards[0].find(".//svg:polygon", ns) is not None  # a hexagon, not a rounded box
    others = [g for g in nodes if g is not guards[0]]
    assert all(g.get("class") != guards[0].get("class") for g in others)  # its own kind
