"""Scopes from the call stack: each op's ``scope`` is the chain of user functions and explicit
name scopes that recorded it, calls numbered per parent (capviz/trace/scopes.py)."""

import numpy as np
import pytest

import capviz as cv


def scopes_of(graph, op=None):
    return [n.scope for n in graph.ops if op is None or n.op == op]


# --- functions --------------------------------------------------------------------------------


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def attention(x):
    return softmax(x * 2.0)


def mha(x):
    return attention(x) + attention(x + 1.0)


def transformer_block(x):
    return mha(x) + np.tanh(x)


def gpt2(x):
    for _ in range(3):
        x = transformer_block(x)
    return x


def test_scope_is_the_chain_of_user_functions_numbered_per_parent():
    g = cv.capture(lambda x: gpt2(x), cv.spec((4,)))
    exps = scopes_of(g, "exp")
    assert exps == [f"gpt2/transformer_block[{b}]/mha/attention[{a}]/softmax"
                    for b in range(3) for a in range(2)]
    assert scopes_of(g, "tanh") == [f"gpt2/transformer_block[{b}]" for b in range(3)]


def test_the_captured_function_itself_is_the_top_level():
    g = cv.capture(transformer_block, cv.spec((4,)))
    assert scopes_of(g, "tanh") == [""]
    assert scopes_of(g, "exp") == ["mha/attention[0]/softmax", "mha/attention[1]/softmax"]


def test_scope_form_entry_frame_is_the_top_level():
    with cv.CaptureDevice().capture_scope() as scope:
        x = scope.input("x", (4,))
        y = np.tanh(x)  # at the top level
        scope.output(transformer_block(y))
    g = scope.graph
    assert scopes_of(g, "tanh") == ["", "transformer_block"]
    assert scopes_of(g, "exp")[0] == "transformer_block/mha/attention[0]/softmax"
    assert [n.scope for n in g.nodes if n.kind in ("input", "output")] == ["", ""]


def test_nested_functions_use_their_name_without_locals():
    def outer(x):
        def inner(y):
            return y * 2.0
        return inner(x) + 1.0

    g = cv.capture(lambda x: outer(x), cv.spec(2))
    assert scopes_of(g) == ["outer/inner", "outer"]


def test_recursion_nests():
    def power(x, n):
        if n == 0:
            return x
        return power(x * 2.0, n - 1)

    g = cv.capture(lambda x: power(x, 3), cv.spec(2))
    assert scopes_of(g) == ["power", "power/power", "power/power/power"]


def test_lambdas_and_methods():
    class MLP:
        def __init__(self):
            self.act = lambda v: np.maximum(v, 0.0)

        def forward(self, x):
            return self.act(x * 3.0)

        def __call__(self, x):
            return self.forward(x) - 1.0

    mlp = MLP()
    g = cv.capture(lambda x: mlp(x), cv.spec(2))
    assert scopes_of(g) == ["MLP/MLP.forward", "MLP/MLP.forward/lambda", "MLP"]


def test_comprehensions_and_generator_expressions_make_no_scope():
    def layer(x):
        return x * 2.0

    def model(x):
        ys = [layer(x) for _ in range(2)]
        total = sum(np.tanh(y) for y in ys)
        return total

    g = cv.capture(lambda x: model(x), cv.spec(2))
    assert scopes_of(g, "multiply") == ["model/layer[0]", "model/layer[1]"]
    assert set(scopes_of(g, "tanh")) == {"model"}


def test_module_level_code(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        "import numpy as np, capviz as cv\n"
        "def helper(x):\n"
        "    return x * 2.0\n"
        "with cv.CaptureDevice().capture_scope() as scope:\n"
        "    x = scope.input('x', (2,))\n"
        "    scope.output(helper(np.tanh(x)))\n"
        "GRAPH = scope.graph\n")
    namespace = {}
    exec(compile(script.read_text(), str(script), "exec"), namespace)
    g = namespace["GRAPH"]
    assert scopes_of(g) == ["", "helper"]


def test_a_generator_resumed_several_times_is_one_call():
    def layers(x):
        for _ in range(3):
            x = np.tanh(x)
            yield x

    def model(x):
        out = x
        for y in layers(x):
            out = y * 2.0
        return out

    g = cv.capture(lambda x: model(x), cv.spec(2))
    assert scopes_of(g) == ["model/layers", "model"] * 3


def test_a_capture_left_open_by_a_returned_function_has_no_function_scopes():
    def opener():
        scope = cv.CaptureDevice().capture_scope()
        scope.__enter__()
        return scope

    def helper(x):
        with cv.name_scope("named"):
            return x * 3.0

    scope = opener()
    x = scope.input("x", (2,))
    scope.output(helper(np.tanh(x)))
    scope.__exit__(None, None, None)
    assert scopes_of(scope.graph) == ["", "named"]  # its entry frame is gone: no call chain


# --- explicit scopes --------------------------------------------------------------------------


def test_explicit_scopes_nest_under_the_function_that_entered_them():
    def block(x):
        with cv.name_scope("attn"):
            y = attention(x)
        return y + 1.0

    g = cv.capture(lambda x: block(x), cv.spec(4))
    assert scopes_of(g, "exp") == ["block/attn/attention/softmax"]
    assert scopes_of(g, "add") == ["block"]


def test_same_named_explicit_scopes_entered_twice_are_two_scopes():
    def f(x):
        with cv.name_scope("h"):
            x = x * 2.0
        with cv.name_scope("h"):
            x = x * 3.0
        with cv.name_scope("once"):
            x = x + 1.0
        return x

    g = cv.capture(f, cv.spec(2))
    assert scopes_of(g) == ["h[0]", "h[1]", "once"]


def test_a_name_scope_around_calls_in_a_loop():
    def layer(x):
        return np.tanh(x)

    def f(x):
        for _ in range(2):
            with cv.name_scope("layer"):
                x = layer(x)
        return x

    g = cv.capture(f, cv.spec(2))
    assert scopes_of(g) == ["layer[0]/layer", "layer[1]/layer"]


def test_name_scope_opened_before_the_capture_is_a_prefix():
    with cv.name_scope("outside"):
        g = cv.capture(lambda x: mha(x), cv.spec(2))
    assert scopes_of(g, "exp") == ["outside/mha/attention[0]/softmax",
                                   "outside/mha/attention[1]/softmax"]


def test_violation_nodes_carry_the_scope():
    def noisy(x):
        np.random.seed(0)
        return x * 2.0

    with cv.CaptureDevice().capture_scope(on_violation="record") as scope:
        scope.output(noisy(scope.input("x", (2,))))
    (v,) = [n for n in scope.graph.nodes if n.kind == "violation"]
    assert v.scope == "noisy"


def test_a_failed_capture_keeps_settled_scopes_on_its_partial_graph():
    def block(x):
        return float(x * 2.0)

    def f(x):
        return block(x) + block(x)

    with pytest.raises(cv.DataReadError) as err:
        cv.capture(f, cv.spec(()))
    assert [n.scope for n in err.value.graph.ops] == ["block"]


# --- stored and shown -------------------------------------------------------------------------


def test_scopes_survive_save_and_load(tmp_path):
    g = cv.capture(lambda x: gpt2(x), cv.spec((4,)))
    path = str(tmp_path / "g.json")
    g.save(path)
    loaded = cv.load(path)
    assert [n.scope for n in loaded.nodes] == [n.scope for n in g.nodes]
    assert loaded.nx.nodes[5]["scope"] == g.nodes[5].scope


def test_listing_shows_scopes():
    g = cv.capture(lambda x: mha(x), cv.spec(2))
    lines = str(g).splitlines()
    assert "  # mha/attention[0]" in lines
    at = lines.index("  # mha/attention[0]/softmax")
    assert lines[at + 1].startswith("  %") and "= max " in lines[at + 1]
    assert lines.count("  # mha") == 2  # the add between the two calls, and the final add
