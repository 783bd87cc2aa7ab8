"""Capture scopes, the function form, boundaries, threads, and the graph they leave."""

import threading

import numpy as np
import pytest

import capviz as cv


def test_scope_form_records_and_never_computes():
    cap = cv.CaptureDevice()
    w = np.ones((4, 3), np.float32)
    with cap.capture_scope() as scope:
        assert cv.is_capturing()
        x = scope.input("x", (1, 4), "float32")
        y = np.tanh(x @ w)
        scope.output(y, name="y")
    assert not cv.is_capturing()
    g = scope.graph
    assert g.complete and g.inputs == ["x"] and g.outputs == ["y"]
    assert [n.op for n in g.ops] == ["matmul", "tanh"]
    assert [n.kind for n in g.constants] == ["constant"]
    assert g.ops[0].shape == (1, 3) and g.ops[0].dtype == np.float32


def test_function_form_names_inputs_after_parameters():
    def f(x, bias):
        return x + bias, x * 2

    g = cv.capture(f, cv.spec((2,)), cv.spec((2,), "float64"))
    assert g.inputs == ["x", "bias"]
    assert g.outputs == ["out0", "out1"]
    assert g.nodes[1].dtype == np.float64
    assert cv.capture(lambda x: x * 2, cv.spec(3)).outputs == ["out"]
    assert cv.capture(lambda x: {"a": x, "b": -x}, cv.spec(3)).outputs == ["a", "b"]


def test_scope_input_from_example_array_and_eager_tensor():
    cap = cv.CaptureDevice()
    example = np.zeros((2, 3), np.int32)
    eager = cv.tensor(np.ones(3, np.float32), device=cv.Device("numpy"))
    with cap.capture_scope() as scope:
        a = scope.input("a", example)
        b = scope.input("b", eager)
        scope.output(a * eager, "y")  # the eager tensor reads input b
    g = scope.graph
    assert g.inputs == ["a", "b"]
    assert g.node("a").dtype == np.int32
    mul = g.ops[0]
    assert mul.args[1] is g.node("b") and b._data is g.node("b")
    out = g.replay({"a": np.full((2, 3), 2, np.int32), "b": np.full(3, 3, np.float32)})
    assert out["y"].tolist() == [[6, 6, 6]] * 2


def test_ndarray_met_in_capture_becomes_one_recorded_constant():
    w = np.arange(3.0)
    g = cv.capture(lambda x: x * w + w, cv.spec(3, "float64"))
    assert len(g.constants) == 1
    w[0] = 100.0  # mutating the array later does not change the graph
    assert g.constant_values[g.constants[0].index][0] == 0.0


def test_scope_constant_is_named():
    cap = cv.CaptureDevice()
    with cap.capture_scope() as scope:
        w = scope.constant(np.eye(2), name="w")
        scope.output(w @ scope.input("x", (2,), "float64"), "y")
    assert scope.graph.constants[0].name == "w"


def test_graph_nx_attributes_are_json_and_edges_keyed_by_position():
    import json

    g = cv.capture(lambda x: x * x + 1.0, cv.spec((2, 2)))
    nx_graph = g.nx
    json.dumps(dict(nx_graph.nodes(data=True)))
    mul = g.ops[0].index
    attrs = nx_graph.nodes[mul]
    assert attrs["kind"] == "op" and attrs["op"] == "multiply"
    assert attrs["shape"] == [2, 2] and attrs["dtype"] == "float32"
    assert attrs["order"] == mul and attrs["scope"] == ""
    assert "test_capture.py:" in attrs["source"] and " in <lambda>" in attrs["source"]
    assert sorted(k for _, _, k in nx_graph.in_edges(mul, keys=True)) == [0, 1]
    add = g.ops[1].index
    assert nx_graph.nodes[add]["literals"] == {"1": 1.0}


def test_source_is_the_users_line_not_capvizs():
    def model(x):
        y = np.exp(x)  # line A
        return y

    g = cv.capture(model, cv.spec(3))
    file, line, func = g.ops[0].source
    assert file == __file__ and func == "model"
    assert "line A" in open(file).read().splitlines()[line - 1]


def test_listing_is_like_a_jaxpr():
    g = cv.capture(lambda x: np.split(x * 2.0, 2), cv.spec((4, 2)))
    text = str(g)
    assert text.splitlines()[0] == "graph(x) -> (out0, out1)  [4 ops, 0 violations]"
    assert "%1 = multiply %0 2.0 : float32[4,2]  # test_capture.py:" in text
    assert "%3, %4 = split %1 indices_or_sections=2 axis=0 : float32[2,2], float32[2,2]" in text
    assert "output out1 = %4" in text


def test_name_scopes_are_recorded():
    def f(x):
        with cv.name_scope("block1"):
            with cv.name_scope("attn"):
                y = x + 1
            z = y * 2
        return z

    g = cv.capture(f, cv.spec(2))
    assert [n.scope for n in g.ops] == ["block1/attn", "block1"]


# --- boundaries ----------------------------------------------------------------------------


def test_duplicate_input_names():
    cap = cv.CaptureDevice()
    with pytest.raises(cv.DuplicateBoundaryError, match="input name 'x' is declared twice") as e:
        with cap.capture_scope() as scope:
            scope.input("x", (2,))
            scope.input("x", (3,))
    assert e.value.graph is scope.graph and not scope.graph.complete


def test_duplicate_output_names():
    cap = cv.CaptureDevice()
    with pytest.raises(cv.DuplicateBoundaryError, match="output name 'y' is declared twice"):
        with cap.capture_scope() as scope:
            x = scope.input("x", (2,))
            scope.output(x + 1, "y")
            scope.output(x + 2, "y")


def test_undeclared_input_names_the_line():
    eager = cv.tensor(np.ones(2, np.float32), device=cv.Device("numpy"))
    cap = cv.CaptureDevice()
    with pytest.raises(cv.UndeclaredInputError, match=r"float32\[2\].*test_capture\.py:\d+") as e:
        with cap.capture_scope() as scope:
            x = scope.input("x", (2,))
            scope.output(x + eager, "y")
    assert "neither a declared input nor a constant" in str(e.value)
    assert e.value.graph.nodes[1].kind == "input"  # the partial graph keeps what was read


def test_invalid_input_produced_inside_the_graph():
    cap = cv.CaptureDevice()
    with pytest.raises(cv.InvalidInputError, match="input 'z'.*produced inside this graph"):
        with cap.capture_scope() as scope:
            x = scope.input("x", (2,))
            scope.input("z", x * 2)


def test_invalid_output():
    cap = cv.CaptureDevice()
    ones = np.ones(2)  # made outside: inside a capture np.ones makes a capture tensor
    with pytest.raises(cv.InvalidOutputError,
                       match="output 'y'.*is a value of type ndarray, not a tensor of this"):
        with cap.capture_scope() as scope:
            scope.input("x", (2,))
            scope.output(ones, "y")


def test_unknown_boundary_from_another_capture():
    a, b = cv.CaptureDevice("a"), cv.CaptureDevice("b")
    with pytest.raises(cv.UnknownBoundaryError, match="output 'y'.*another capture"):
        with a.capture_scope() as sa:
            xa = sa.input("x", (2,))
            with b.capture_scope() as sb:
                sb.input("x", (2,))
                sb.output(xa, "y")


def test_unknown_boundary_for_a_non_tensor_input():
    cap = cv.CaptureDevice()
    with pytest.raises(cv.UnknownBoundaryError,
                       match="input 'x'.*is a value of type str, not a shape"):
        with cap.capture_scope() as scope:
            scope.input("x", "float32")


def test_second_scope_on_an_active_device():
    cap = cv.CaptureDevice("shared")
    with cap.capture_scope():
        with pytest.raises(cv.ScopeAlreadyActiveError, match="'shared' already has an active"):
            with cap.capture_scope():
                pass
    with cap.capture_scope() as again:  # released afterwards
        again.output(again.input("x", (1,)) + 1)


def test_capture_tensor_used_after_its_scope():
    cap = cv.CaptureDevice()
    with cap.capture_scope() as scope:
        x = scope.input("x", (2,))
    with pytest.raises(cv.ScopeClosedError, match="capture scope is already complete"):
        x + 1
    with cap.capture_scope() as scope2:
        with pytest.raises(cv.ScopeClosedError, match="capture scope is already complete"):
            scope2.input("y", (2,)) * x
    with pytest.raises(cv.ScopeClosedError):
        scope.output(x)


def test_two_capture_devices_in_one_op():
    a, b = cv.CaptureDevice("a"), cv.CaptureDevice("b")
    with a.capture_scope() as sa, b.capture_scope() as sb:
        xa, xb = sa.input("x", (2,)), sb.input("x", (2,))
        with pytest.raises(cv.DeviceMismatchError,
                           match="capture device 'b' met a tensor of capture device 'a'"):
            xa + xb


def test_graph_is_set_when_the_body_raises():
    cap = cv.CaptureDevice()
    with pytest.raises(ZeroDivisionError):
        with cap.capture_scope() as scope:
            x = scope.input("x", (2,))
            _ = x * 3
            1 / 0
    assert [n.op for n in scope.graph.ops] == ["multiply"]
    assert not scope.graph.complete and isinstance(scope.graph.error, ZeroDivisionError)


def test_function_form_attaches_partial_graph_to_errors():
    def f(x):
        x = x + 1
        raise KeyError("boom")

    with pytest.raises(KeyError) as info:
        cv.capture(f, cv.spec(2))
    assert [n.op for n in info.value.graph.ops] == ["add"]


def test_scopes_are_per_thread():
    cap = cv.CaptureDevice()
    seen = {}

    def other():
        seen["capturing"] = cv.is_capturing()
        seen["value"] = (cv.tensor(np.ones(2), device=cv.Device("numpy")) * 2).numpy().tolist()

    with cap.capture_scope() as scope:
        scope.output(scope.input("x", (2,)) * 2)
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == {"capturing": False, "value": [2.0, 2.0]}
    assert len(scope.graph.ops) == 1


def test_capture_tensor_from_another_thread_is_refused():
    cap = cv.CaptureDevice()
    errors = []
    with cap.capture_scope() as scope:
        x = scope.input("x", (2,))

        def other():
            try:
                x + 1
            except cv.CaptureError as err:
                errors.append(str(err))

        t = threading.Thread(target=other)
        t.start()
        t.join()
        scope.output(x + 1)
    assert "used from another thread" in errors[0]
    assert len(scope.graph.ops) == 1


def test_on_violation_must_be_known():
    with pytest.raises(ValueError, match="on_violation must be 'raise' or 'record'"):
        cv.CaptureDevice().capture_scope(on_violation="ignore")


def test_ndarray_indexed_by_a_capture_tensor_is_a_clear_error():
    table = np.arange(10.0)

    def f(i):
        return table[i]

    with pytest.raises(cv.DataReadError,
                       match=r"Fix: record the array first: cv\.constant\(table\)\[i\]"):
        cv.capture(f, cv.spec((3,), "int64"))


def test_constant_indexed_by_a_capture_tensor_works():
    cap = cv.CaptureDevice()
    with cap.capture_scope() as scope:
        i = scope.input("i", (3,), "int64")
        table = scope.constant(np.arange(10.0) * 3, name="table")
        scope.output(table[i], "a")
        scope.output(np.take(table, i, axis=0), "b")
    out = scope.graph.replay({"i": np.array([1, 2, 9])})
    assert out["a"].tolist() == out["b"].tolist() == [3.0, 6.0, 27.0]
