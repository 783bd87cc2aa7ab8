"""Seed violations (burn's "seeding is not supported during graph capture"), data reads, and
randomness that replays exactly."""

import random
import re
import sys
import threading
import types

import numpy as np
import pytest
from helpers import framework

import capviz as cv
from capviz.randomness import hooks

SEED_CALLS = {
    "np.random.seed": lambda dev, cap: np.random.seed(1),
    "np.random.set_state": lambda dev, cap: np.random.set_state(np.random.get_state()),
    "random.seed": lambda dev, cap: random.seed(1),
    "Device('numpy').seed": lambda dev, cap: dev.seed(1),
    "CaptureDevice('cap').seed": lambda dev, cap: cap.seed(1),
    "cv.seed": lambda dev, cap: cv.seed(1),
}


def line_of(marker, module=None):
    path = (module or sys.modules[__name__]).__file__
    for i, text in enumerate(open(path).read().splitlines(), 1):
        if marker in text:
            return i
    raise AssertionError(marker)


@pytest.mark.parametrize("call", sorted(SEED_CALLS))
def test_each_seeding_api_in_a_scope_raises_with_the_fixes(call):
    dev, cap = cv.Device("numpy"), cv.CaptureDevice("cap")
    with pytest.raises(cv.SeedViolationError) as info:
        with cap.capture_scope(rng=dev) as scope:
            x = scope.input("x", (2,))
            y = x * 2
            SEED_CALLS[call](dev, cap)
            scope.output(y)
    err = info.value
    message = str(err)
    assert message.startswith("seeding is not supported during graph capture")
    assert call in message
    line = SEED_CALLS[call].__code__.co_firstlineno
    assert f"test_violations.py:{line} in <lambda>" in message
    for fix in ("Seed the underlying device before entering the scope",
                "Gate the seeding call", "cv.is_capturing()",
                "Create random tensors before capture and pass them in as inputs"):
        assert fix in message
    assert isinstance(err, cv.CaptureViolation) and isinstance(err, cv.CaptureError)
    graph = err.graph
    assert graph is scope.graph and not graph.complete
    node = graph.nodes[err.violation.order]
    assert node.kind == "violation" and node.op == "seed"
    assert node.source[1] == line
    assert graph.nx.nodes[node.index]["kind"] == "violation"
    assert (y._data.index, node.index, "after") in graph.nx.edges(keys=True)
    assert not hooks.installed()
    with cap.capture_scope() as again:  # the device was released
        again.output(again.input("x", (1,)) + 1)


def test_cupy_random_seed_is_hooked_when_cupy_is_loaded(monkeypatch):
    """CuPy cannot exist here: a stand-in ``cupy.random`` module takes its place in sys.modules."""
    calls = []
    fake = types.ModuleType("cupy.random")
    fake.seed = lambda s=None: calls.append(s)
    monkeypatch.setitem(sys.modules, "cupy.random", fake)
    cap = cv.CaptureDevice()
    with pytest.raises(cv.SeedViolationError, match=r"cupy\.random\.seed\(3\)"):
        with cap.capture_scope():
            sys.modules["cupy.random"].seed(3)
    assert calls == []
    sys.modules["cupy.random"].seed(4)
    assert calls == [4] and fake.seed.__name__ == "<lambda>"


def test_seeding_outside_capture_is_untouched():
    original = np.random.seed
    with cv.CaptureDevice().capture_scope() as scope:
        assert np.random.seed is not original
        scope.output(scope.input("x", (1,)) * 1)
    assert np.random.seed is original and random.seed.__self__ is random._inst


def test_record_mode_collects_every_violation_in_order():
    dev = cv.Device("numpy")
    dev.seed(0)
    cap = cv.CaptureDevice()
    with cap.capture_scope(on_violation="record", rng=dev) as scope:
        x = scope.input("x", (3,))
        np.random.seed(1)
        w = cv.random.uniform((3,))
        random.seed(2)
        y = x * w
        value = float(y.sum())
        scope.output(y, "y")
    graph = scope.graph
    assert graph.complete
    assert [v.kind for v in graph.violations] == ["seed", "seed", "data_read"]
    assert [v.call for v in graph.violations] == ["np.random.seed(1)", "random.seed(2)", "float()"]
    assert value == 0.0  # a placeholder: record mode keeps going
    first_seed = graph.violations[0].order
    affects = [(u, v) for u, v, k in graph.nx.edges(keys=True) if k == "affects"]
    random_node = next(n.index for n in graph.ops if n.op == "random_uniform")
    assert (first_seed, random_node) in affects
    with pytest.raises(cv.SeedViolationError, match="np.random.seed"):
        graph.check()


def test_framework_helper_is_reported_at_its_own_line():
    cap = cv.CaptureDevice()
    with pytest.raises(cv.SeedViolationError) as info:
        with cap.capture_scope():
            framework.init_weights((2, 2))
    source = info.value.violation.source
    assert source[0] == framework.__file__ and source[2] == "init_weights"
    assert source[1] == line_of("FRAMEWORK SEED LINE", framework)
    assert f"framework.py:{source[1]} in init_weights" in str(info.value)


def test_harness_that_seeds_per_iteration_outside_the_scope_is_fine():
    cap = cv.CaptureDevice()
    for i in range(3):
        np.random.seed(i)
        random.seed(i)
        noise = np.random.rand(2)  # drawn before the scope: a draw inside is frozen_random
        with cap.capture_scope() as scope:
            scope.output(scope.input("x", (2,)) + noise)
        assert scope.graph.violations == []


def test_seeding_in_another_thread_during_a_capture_is_not_a_violation():
    cap = cv.CaptureDevice()
    done = threading.Event()
    errors = []

    def seeder():
        try:
            for i in range(200):
                np.random.seed(i)
                random.seed(i)
        except Exception as err:  # pragma: no cover - the failure we look for
            errors.append(err)
        done.set()

    with cap.capture_scope() as scope:
        x = scope.input("x", (2,))
        t = threading.Thread(target=seeder)
        t.start()
        done.wait(10)
        t.join()
        scope.output(x + 1)
    assert errors == [] and scope.graph.violations == []


def test_data_reads_of_computed_tensors_are_violations():
    reads = {
        "float()": lambda t: float(t.sum()),
        "int()": lambda t: int(t.sum()),
        "bool()": lambda t: bool(t.sum()),
        ".item()": lambda t: t.sum().item(),
        ".numpy()": lambda t: t.numpy(),
        "np.asarray()": lambda t: np.asarray(t, order="F"),  # (np.asarray(t) is t itself)
    }
    for call, read in reads.items():
        cap = cv.CaptureDevice()
        pattern = "(?s)test_violations.py.*" + re.escape(call)
        with pytest.raises(cv.DataReadError, match=pattern) as info:
            with cap.capture_scope() as scope:
                read(scope.input("x", (2,)) * 2)
        assert info.value.graph.violations[0].kind == "data_read"


def test_reading_a_constant_is_fine():
    cap = cv.CaptureDevice()
    with cap.capture_scope() as scope:
        c = scope.constant(np.array([1.5, 2.5]), name="c")
        assert c.numpy().tolist() == [1.5, 2.5]
        assert np.asarray(c).tolist() == [1.5, 2.5]
        scope.output(scope.input("x", (2,), "float64") * c)
    assert scope.graph.violations == []


def test_caught_violation_still_fails_the_capture():
    cap = cv.CaptureDevice()
    with pytest.raises(cv.SeedViolationError):
        with cap.capture_scope() as scope:
            x = scope.input("x", (1,))
            try:
                np.random.seed(0)
            except cv.SeedViolationError:
                pass
            scope.output(x)
    assert not scope.graph.complete


def test_capture_device_seed_outside_a_scope_is_refused():
    with pytest.raises(cv.SeedViolationError, match=r"CaptureDevice\('c'\)\.seed\(5\)"):
        cv.CaptureDevice("c").seed(5)


# --- randomness ------------------------------------------------------------------------------


def draw_program(x):
    w = cv.random.normal((3, 4))
    u = cv.random.uniform((4,), low=-1, high=2, dtype="float64")
    mask = cv.random.bernoulli((3, 4), p=0.25)
    return (x @ w) * 1.0, u, mask


def test_random_ops_replay_exactly_the_eager_draws():
    cv.seed(1234)
    x = np.ones((2, 3), np.float32)
    eager = draw_program(cv.tensor(x))
    cv.seed(1234)
    graph = cv.capture(draw_program, cv.spec((2, 3)))
    assert graph.violations == [] and graph.rng_seed == 1234
    for _ in range(3):
        out = graph.replay({"x": x}, backend="numpy")
        for i, value in enumerate(eager):
            assert np.array_equal(out[f"out{i}"], value.numpy())
            assert out[f"out{i}"].dtype == value.dtype
    other = graph.replay({"x": x}, backend="numpy", seed=99)
    assert not np.array_equal(other["out1"], out["out1"])
    assert np.array_equal(other["out1"], graph.replay({"x": x}, backend="numpy",
                                                      seed=99)["out1"])


def test_draws_depend_on_seed_and_draw_index_only():
    a, b = cv.Device("numpy"), cv.Device("numpy")
    a.seed(7)
    b.seed(7)
    first = cv.random.uniform((5,), device=a).numpy()
    cv.random.uniform((5,), device=b)
    assert not np.array_equal(cv.random.uniform((5,), device=b).numpy(), first)
    b.seed(7)
    assert np.array_equal(cv.random.uniform((5,), device=b).numpy(), first)


def test_unseeded_random_warns_and_replays_differ():
    dev = cv.Device("numpy")  # never seeded
    with pytest.warns(cv.UnseededRandomWarning, match="no known seed"):
        graph = cv.capture(lambda x: x + cv.random.uniform((8,)), cv.spec(8), rng=dev)
    kinds = [(v.kind, v.level) for v in graph.violations]
    assert kinds == [("unseeded_random", "warning")]
    graph.check()  # a warning does not raise
    x = np.zeros(8, np.float32)
    assert not np.array_equal(graph.replay({"x": x})["out"], graph.replay({"x": x})["out"])


def test_random_distributions():
    dev = cv.Device("numpy")
    dev.seed(0)
    u = cv.random.uniform((100_000,), low=2, high=3, device=dev).numpy()
    n = cv.random.normal((100_000,), mean=1, std=2, dtype="float64", device=dev).numpy()
    b = cv.random.bernoulli((100_000,), p=0.3, device=dev).numpy()
    assert u.dtype == np.float32 and 2 <= u.min() and u.max() < 3
    assert abs(n.mean() - 1) < 0.03 and abs(n.std() - 2) < 0.03
    assert b.dtype == bool and abs(b.mean() - 0.3) < 0.01
    with pytest.raises(TypeError, match="float32 or float64"):
        cv.random.uniform((2,), dtype="int32")
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\]"):
        cv.random.bernoulli((2,), p=2)


# --- the three fixes of the seed record --------------------------------------------------------


def test_fix_1_seed_the_device_before_the_scope():
    dev = cv.Device("numpy")
    dev.seed(42)
    with cv.CaptureDevice().capture_scope(rng=dev) as scope:
        w = cv.random.normal((2, 2))
        scope.output(scope.input("x", (2, 2)) @ w)
    assert scope.graph.violations == [] and scope.graph.rng_seed == 42


def test_fix_2_gate_the_seeding_call():
    dev = cv.Device("numpy")
    dev.seed(0)
    with cv.CaptureDevice().capture_scope(rng=dev) as scope:
        w = framework.init_weights_gated((2, 2))
        scope.output(w)
    assert scope.graph.violations == []


def test_fix_3_random_tensors_created_before_capture_passed_as_inputs():
    cv.seed(3)
    w = cv.random.normal((2, 2))  # eager, outside the scope
    with cv.CaptureDevice().capture_scope() as scope:
        x = scope.input("x", (2, 2))
        w_in = scope.input("w", w)
        scope.output(x @ w_in)
    graph = scope.graph
    assert graph.inputs == ["x", "w"] and not any(n.op.startswith("random") for n in graph.ops)
    out = graph.replay({"x": np.eye(2, dtype=np.float32), "w": w.numpy()})
    assert np.array_equal(out["out0"], w.numpy())

