"""Names a person recognises: constants named after the user's variables, scalars by value,
long index lists abbreviated, notebook cells as ``In [3]``, replay warnings at the user's line."""

import warnings
import xml.etree.ElementTree as ET

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

import capviz as cv
from capviz.render.dot import node_label

SVG = "{http://www.w3.org/2000/svg}"
RNG = np.random.default_rng(0)
PARAMS = {"blocks": [{"attn": {"c_attn": {"w": RNG.standard_normal((4, 4)).astype(np.float32)}}}
                     for _ in range(3)]}


def attn(x, p):
    return x @ p["c_attn"]["w"]


def constant_names(graph):
    return [n.name for n in graph.constants]


def test_constant_named_after_a_local_variable():
    mask = np.tril(np.ones((4, 4), np.float32))

    def f(x):
        return x * mask

    g = cv.capture(f, cv.spec((4, 4)))
    assert constant_names(g) == ["mask"]
    assert "= constant mask : float32[4,4]" in str(g)


def test_constant_named_by_its_dict_path_from_the_outermost_frame():
    def gpt(x, params):
        for block in params["blocks"]:
            x = attn(x, block["attn"])
        return x

    g = cv.capture(lambda x: gpt(x, PARAMS), cv.spec((4, 4)))
    assert constant_names(g) == [f'PARAMS["blocks"][{b}]["attn"]["c_attn"]["w"]'
                                 for b in range(3)]


def test_constant_named_by_an_attribute_path():
    class Linear:
        def __init__(self):
            self.W = RNG.standard_normal((4, 4)).astype(np.float32)

        def __call__(self, x):
            return x @ self.W

    layer = Linear()
    g = cv.capture(lambda x: layer(x), cv.spec((4, 4)))
    assert constant_names(g) == ["layer.W"]


def test_a_view_made_inline_is_named_after_its_base():
    params = {"wte": RNG.standard_normal((5, 4)).astype(np.float32)}

    def logits(x):
        return x @ params["wte"].T, x[:, :2] * params["wte"][0, :2]

    g = cv.capture(lambda x: logits(x), cv.spec((2, 4)))
    assert constant_names(g) == ['params["wte"].T', 'view of params["wte"]']


def test_a_temporary_array_has_no_name_and_shows_its_type():
    g = cv.capture(lambda x: x + np.array([2.0] * 4, np.float32), cv.spec((4,)))
    assert constant_names(g) == [None]
    add = g.ops[0]
    assert "const float32[4]" in node_label(add, ["const float32[4]"])


def test_scalar_constants_show_their_value_on_their_readers():
    eps = np.full((1,), 1e-5, np.float32)

    def f(x):
        return x / (x * x + eps)

    g = cv.capture(f, cv.spec((3,)))
    root = ET.fromstring(g.to_svg())
    drawn = {e.get("id"): "".join(t.text or "" for t in e.iter(f"{SVG}text"))
             for e in root.iter(f"{SVG}g") if "node" in (e.get("class") or "").split()}
    add = next(n for n in g.ops if n.op == "add")
    assert drawn[f"n{add.index}"] == "addfloat32[3]eps = 1e-05"
    assert f"n{g.constants[0].index}" not in drawn  # an annotation, not a node


def test_long_index_lists_are_abbreviated_in_labels():
    idx = list(range(200))
    g = cv.capture(lambda x: x[idx], cv.spec((300,)))
    label = g.to_dot().source
    assert "[0, 1, ..., 199]" in label
    assert "0, 1, 2, 3" not in label


def test_replay_warning_points_at_the_users_line():
    def f(x):
        return np.log(x)  # the user's line

    g = cv.capture(f, cv.spec((2,)))
    line = f.__code__.co_firstlineno + 1
    bad = {"x": np.array([-1.0, 1.0], np.float32)}
    with pytest.warns(RuntimeWarning, match="invalid value encountered in log") as record:
        g.replay(bad, backend="numpy")
    assert (record[0].filename, record[0].lineno) == (__file__, line)
    with pytest.warns(RuntimeWarning, match="invalid value encountered in log") as record:
        g.executor(bad, backend="numpy").run()
    assert (record[0].filename, record[0].lineno) == (__file__, line)


def test_replay_warnings_obey_the_users_filters_and_error_settings():
    g = cv.capture(lambda x: np.log(x), cv.spec((2,)))
    bad = {"x": np.array([-1.0, 1.0], np.float32)}
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=RuntimeWarning)
        with pytest.raises(cv.ReplayError, match="invalid value encountered in log"):
            g.replay(bad, backend="numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(invalid="ignore"):
            g.replay(bad, backend="numpy")  # ignored as in eager NumPy: no warning
    with np.errstate(invalid="raise"), pytest.raises(cv.ReplayError, match="FloatingPointError"):
        g.replay(bad, backend="numpy")


def test_replay_warnings_in_threads_leave_the_warning_filters_alone():
    from concurrent.futures import ThreadPoolExecutor

    g = cv.capture(lambda x: np.log(x), cv.spec((2,)))
    bad = {"x": np.array([-1.0, 1.0], np.float32)}
    before = list(warnings.filters)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda _: g.replay(bad, backend="numpy"), range(40)))
    assert warnings.filters == before
    assert len(caught) == 40
    assert {(w.filename, str(w.message)) for w in caught} == {
        (__file__, "invalid value encountered in log")}


CELL_DEFINE = """\
import numpy as np, capviz as cv
def model(x):
    y = np.tanh(x)
    return y * 2.0
"""
CELL_CAPTURE = """\
graph = cv.capture(model, cv.spec((3,)))
print("SOURCES", [n.source for n in graph.ops])
print("LISTING", str(graph).splitlines()[2])
"""


def test_notebook_cells_show_as_in_n_with_the_cells_line(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(CELL_DEFINE), nbformat.v4.new_code_cell(CELL_CAPTURE)]
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "".join(o.get("text", "") for o in nb.cells[1].outputs)
    assert "SOURCES [('In [1]', 3, 'model'), ('In [1]', 4, 'model')]" in text, text
    assert "# In [1]:3" in text, text
    assert "ipykernel_" not in text


BIG = {"layers": [{"w": np.ones((2, 2)), "meta": list(range(50))} for _ in range(200)]}


def test_containers_are_indexed_once_per_capture_not_per_array(monkeypatch):
    from capviz.trace import names

    calls = [0]
    real = names._children

    def counting(obj):
        calls[0] += 1
        return real(obj)

    monkeypatch.setattr(names, "_children", counting)

    def fresh(n):
        def f(x):
            for _ in range(n):
                x = x * np.array([1.0] * 4, np.float32)  # a temporary: no name, nothing to find
            return x

        calls[0] = 0
        g = cv.capture(f, cv.spec((4,)))
        assert constant_names(g) == [None] * n
        return calls[0]

    assert fresh(300) == fresh(30) > 0  # the module's containers, walked once either way


def test_an_array_inside_a_large_global_structure_is_found():
    g = cv.capture(lambda x: x @ BIG["layers"][7]["w"], cv.spec((2, 2)))
    assert constant_names(g) == ['BIG["layers"][7]["w"]']


def _walked(namespace, budget):
    """The index a breadth-first walk makes that takes every entry, arrays too, from its queue
    (names._index before arrays were indexed when met): {id: path}."""
    from collections import deque

    from capviz.trace import names

    index, seen, visits = {}, set(), 0
    queue = deque((v, k, 1) for k, v in namespace.items() if names._named(k))
    while queue and visits < budget:
        obj, link, depth = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if type(obj) is np.ndarray:
            index.setdefault(id(obj), names.path_of(link))
            continue
        if depth > names.MAX_DEPTH:
            continue
        kind, children = names._children(obj)
        visits += len(children)
        for key, child in children:
            if type(child) is np.ndarray or isinstance(child, (dict, list, tuple)) or \
                    names._has_attributes(child):
                queue.append((child, (link, kind, key), depth + 1))
    return index


class _Holder:
    def __init__(self, **items):
        vars(self).update(items)


def test_an_index_cut_short_by_its_visit_budget_holds_what_the_walk_reached(monkeypatch):
    """Arrays enter a namespace's index as the walk meets them; a walk that the visit budget
    (names.MAX_VISITS) cuts short holds exactly the arrays its queue reached before the cut,
    with the shortest paths, as a walk taking each array from its queue does."""
    from capviz.trace import names

    shared = np.zeros(3)
    namespace = {
        "w": np.ones(2),
        "params": [np.full(2, float(i)) for i in range(4)] + [shared],
        "opt": _Holder(mems=[np.zeros(2) for _ in range(3)], inner=_Holder(m=shared)),
        "blocks": [{"w": np.full(2, float(i)), "b": [np.zeros(1)]} for i in range(3)],
        "_hidden": [np.zeros(1)],
    }
    sizes = set()
    for budget in (0, 1, 3, 4, 5, 6, 8, 9, 12, 16, 20, 30, 50_000):
        monkeypatch.setattr(names, "MAX_VISITS", budget)
        index = names.Namer()._index(namespace)
        got = {key: names.path_of(link) for key, (_, link) in index.items()}
        assert got == _walked(namespace, budget), budget
        sizes.add(len(got))
    assert len(sizes) > 3  # budgets that cut the walk at several places
    assert got[id(shared)] == "params[4]"  # (the whole walk: the shortest path wins)


MYMODEL = '''
import numpy as np

W1 = np.full((3, 4), 0.5, np.float32)
W2 = np.full((4, 2), 0.25, np.float32)
BLOCKS = [{"w": np.full((2, 2), i, np.float32)} for i in range(3)]


def layer(x):
    return np.tanh(x @ W1) @ W2


def block(x, b):
    return x @ b["w"]


def stack(x):
    for b in BLOCKS:
        x = block(x, b)
    return x


def gpt(x, blocks):
    for blk in blocks:
        x = block(x, blk)
    return x
'''


@pytest.fixture
def mymodel(tmp_path, monkeypatch):
    import importlib
    import sys

    (tmp_path / "mymodel.py").write_text(MYMODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "mymodel", raising=False)
    return importlib.import_module("mymodel")


def test_globals_of_a_model_module_are_named_by_module_path(mymodel):
    for fn in (mymodel.layer, lambda x: mymodel.layer(x)):
        g = cv.capture(fn, cv.spec((2, 3)))
        assert constant_names(g) == ["mymodel.W1", "mymodel.W2"]
        assert "= constant mymodel.W1 : float32[3,4]" in str(g)


def test_a_module_global_read_by_the_captured_code_is_named_by_module_path(mymodel):
    g = cv.capture(lambda x: x @ mymodel.W1, cv.spec((2, 3)))
    assert constant_names(g) == ["mymodel.W1"]


def test_a_list_walked_in_a_loop_names_every_element_alike(mymodel):
    g = cv.capture(mymodel.stack, cv.spec((2, 2)))
    assert constant_names(g) == [f'mymodel.BLOCKS[{i}]["w"]' for i in range(3)]
    blocks = [{"w": np.full((2, 2), i + 5, np.float32)} for i in range(3)]
    g = cv.capture(lambda x: mymodel.gpt(x, blocks), cv.spec((2, 2)))
    assert constant_names(g) == [f'blocks[{i}]["w"]' for i in range(3)]  # never blk["w"]


def test_an_array_only_a_loop_variable_holds_keeps_its_name():
    def f(x):
        for w in (np.array([[1, 0], [0, 1]], np.float32),):  # made on the line: no other name
            x = x @ w
        return x

    g = cv.capture(f, cv.spec((2, 2)))
    assert constant_names(g) == ["w"]


def test_weights_in_a_loop_over_a_local_list_are_named_by_index():
    def f(x):
        weights = [np.array([[i] * 2] * 2, np.float32) for i in range(3)]  # ndarrays
        for w in weights:
            x = x @ w
        return x

    g = cv.capture(f, cv.spec((2, 2)))
    assert constant_names(g) == [f"weights[{i}]" for i in range(3)]
