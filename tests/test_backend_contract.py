"""The backend contract (docs/architecture.md, "Writing a backend"), run against every backend:
NumPy, the CuPy stand-in (helpers.fakecupy), Dask on its threaded scheduler, Dask on a 2-worker
``LocalCluster`` on loopback, and JAX. A backend whose engine (or capviz module) is missing is
skipped, saying which.

Each backend replays every op of the op table as the NumPy replay does (bit for bit where the
backend says ``exact``, within its ``tolerance`` otherwise, always with NumPy's dtype and shape),
or refuses the op by name when the graph is bound, with the reason, for an op its module
declares; it draws the same random numbers; it checks inputs with the same messages; an op
that fails names its node and the user's line; and the generated programs of
tests/test_properties.py replay on it as on NumPy.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import numpy as np
import pytest
from helpers import fakecupy, op_examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_properties import make_inputs, program_function, programs

import capviz as cv
from capviz.backends import registry

BACKENDS = ["numpy", "fakecupy", "dask", "dask-distributed", "jax"]
ENGINES = {"dask": "dask.array", "dask-distributed": "distributed", "jax": "jax"}


class Target:
    """A backend under test: ``name`` is what ``backend=`` takes."""

    def __init__(self, param: str, backend: registry.Backend) -> None:
        self.param = param
        self.backend = backend
        self.name = backend.name

    def replay(self, graph, feed, **options):
        options = {**OWN_ARITHMETIC.get(self.name, {}), **options}
        return graph.replay(feed, backend=self.name, to_numpy=True, **options)


OWN_ARITHMETIC = {"jax": {"arithmetic": "xla"}}
"""The contract holds an engine's arithmetic to its tolerance on every op, those a replay
refuses by default for it included (JAX's ``np.linalg``, ``np.fft``...: XLA flushes subnormal
floats, ``Backend.own_arithmetic``); the refusal itself is tests/test_jax_subnormals.py's."""


def _registered(name: str) -> registry.Backend:
    """The registry's backend ``name``, or a skip saying what is missing."""
    try:
        return registry.get(name)
    except ModuleNotFoundError as err:
        if err.name == f"capviz.backends.{name}":
            pytest.skip(f"capviz.backends.{name} not written yet")
        raise
    except cv.BackendUnavailableError as err:
        pytest.skip(str(err))


CLUSTER = """
import sys, distributed
cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                   protocol="tcp://", host="127.0.0.1", dashboard_address=None)
print(cluster.scheduler_address, flush=True)
sys.stdin.read()  # until the test module closes our stdin
cluster.close()
"""


@pytest.fixture(scope="module")
def dask_client():
    """A client of a 2-worker LocalCluster on loopback, the cluster in a process of its own.

    Not in this process: a cluster's threads draw from Python's global ``random`` (dask's
    ``sizeof`` samples containers), and a capture running meanwhile would see the global
    generator's state change under it (a violation).
    """
    distributed = pytest.importorskip("distributed")
    process = subprocess.Popen([sys.executable, "-c", CLUSTER], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        address = process.stdout.readline().strip()
        assert address.startswith("tcp://127.0.0.1:"), address
        client = distributed.Client(address, set_as_default=False)
        assert len(client.scheduler_info()["workers"]) == 2
        yield client
        client.close()
    finally:
        process.stdin.close()
        process.wait(60)


@pytest.fixture(params=BACKENDS)
def target(request, monkeypatch):
    param = request.param
    if param in ENGINES:
        pytest.importorskip(ENGINES[param])
    if param == "fakecupy":
        fakecupy.install(monkeypatch)
        yield Target(param, registry.get("cupy"))
    elif param == "dask-distributed":
        import dask

        backend = _registered("dask")
        client = request.getfixturevalue("dask_client")
        with dask.config.set(scheduler=client):
            yield Target(param, backend)
    else:
        yield Target(param, _registered(param))


def declared_refusals(backend: registry.Backend) -> set[str]:
    """The ops a backend's module declares it refuses (``UNSUPPORTED`` or ``REFUSED``)."""
    module = sys.modules[type(backend).__module__]
    names: set[str] = set()
    for attribute in ("UNSUPPORTED", "REFUSED"):
        names |= set(getattr(module, attribute, {}))
    return names


def assert_agrees(got, expected, backend: registry.Backend, what: str) -> None:
    """``got`` (a backend's result on the host) is ``expected`` (the NumPy replay's): same
    type, dtype and shape; bit for bit where the backend is exact, or for integer and boolean
    results; within its tolerance for the result's dtype otherwise."""
    expected = np.asarray(expected)
    assert type(got) is np.ndarray, (what, type(got))
    assert got.dtype == expected.dtype, (what, got.dtype, expected.dtype)
    assert got.shape == expected.shape, (what, got.shape, expected.shape)
    if backend.exact or expected.dtype.kind not in "fc":
        assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes(), \
            what
    else:
        rtol, atol = backend.tolerance_for(expected.dtype)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=what)


REFUSAL = re.compile(r"op '(?P<op>[^']+)' cannot run on the (?P<backend>\w+) backend: \S.*"
                     r"\(node %\d+, recorded at .+\)")


STATE_REFUSAL = re.compile(r"the graph writes the state (?P<state>\S+) \(recorded at .+\), which "
                           r"backend '(?P<backend>\w+)' cannot write back")


def assert_refusal(err: Exception, graph, backend: registry.Backend) -> None:
    """A refusal names an op of the graph, the backend and the reason, and the op is one the
    backend's module declares; or, on a backend that cannot write states back
    (``Backend.mutable`` false), it names the graph's first state."""
    state = STATE_REFUSAL.search(str(err))
    if state and not backend.mutable:
        assert state["backend"] == backend.name, str(err)
        assert state["state"] == graph.state_nodes[0].name, str(err)
        return
    found = REFUSAL.search(str(err))
    assert found, str(err)
    assert found["backend"] == backend.name, str(err)
    assert found["op"] in {n.op for n in graph.ops}, str(err)
    assert found["op"] in declared_refusals(backend), \
        f"{backend.name} refused {found['op']!r}, which its module does not declare: {err}"


# --- every op of the op table -----------------------------------------------------------------

EXAMPLES = op_examples.examples()


def test_every_op_of_the_table_has_an_example():
    assert op_examples.uncovered() == []


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("example", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_op_replays_as_on_numpy_or_is_refused_by_name(target, example):
    _, fn, arrays = example
    try:
        graph = op_examples.capture(fn, arrays)
    except cv.CaptureError as err:  # the example itself is tests/test_numpy_coverage.py's
        pytest.fail(f"the example does not capture: {err}")
    feed = dict(zip(graph.inputs, arrays))
    with np.errstate(all="ignore"):
        try:
            expected = graph.replay(feed, backend="numpy")
        except cv.ReplayError as err:
            expected, numpy_error = None, err
        try:
            got = target.replay(graph, feed)
        except cv.UnsupportedOperationError as err:
            assert_refusal(err, graph, target.backend)
            return
        except cv.ReplayError as err:
            assert expected is None, f"{target.name} failed where NumPy did not: {err}"
            assert err.node is not None and err.node.index == numpy_error.node.index
            return
    assert expected is not None, f"NumPy failed ({numpy_error}); {target.name} did not"
    assert got.backend == target.name
    for name in graph.outputs:
        assert_agrees(got[name], expected[name], target.backend, name)


# --- random ops ---------------------------------------------------------------------------------


def _draws(shape, dtype):
    return (cv.random.uniform(shape, low=-2.0, high=3.0, dtype=dtype),
            cv.random.bernoulli(shape, p=0.3),
            cv.random.normal(shape, mean=1.0, std=2.0, dtype=dtype),
            cv.random.uniform(shape, dtype=dtype) * 2.0)


@pytest.mark.parametrize("shape", [(7,), (33, 5), (4, 9, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_ops_draw_the_numpy_replays_numbers(target, shape, dtype):
    device = cv.Device("numpy")
    device.seed(2026)
    graph = cv.capture(lambda: _draws(shape, dtype), rng=device)
    expected = graph.replay({}, backend="numpy")
    chunkings = [{}]
    if "chunks" in target.backend.options:  # whatever the chunking
        chunkings += [{"chunks": tuple(max(1, s // 2) for s in shape)},
                      {"chunks": tuple(1 + s // 3 for s in shape)}]
    for options in chunkings:
        for seed in (None, 99):
            got = target.replay(graph, {}, seed=seed, **options)
            reference = expected if seed is None else graph.replay({}, backend="numpy",
                                                                   seed=seed)
            uniform, bernoulli, normal, scaled = graph.outputs
            for name in (uniform, bernoulli, scaled):  # bit for bit on every backend
                assert np.asarray(got[name]).tobytes() == reference[name].tobytes(), \
                    (name, options, seed)
                assert got[name].dtype == reference[name].dtype
            assert_agrees(got[normal], reference[normal], target.backend, "normal")


# --- inputs validation: the same messages everywhere --------------------------------------------


def _message(graph, feed, backend_name):
    with pytest.raises(cv.ReplayInputError) as info:
        graph.replay(feed, backend=backend_name)
    return str(info.value)


@pytest.mark.parametrize("case", ["missing", "extra", "dtype", "shape", "not an array",
                                  "capture tensor"])
def test_input_errors_say_the_same_on_every_backend(target, case):
    graph = cv.capture(lambda x, y: x * y + 1, cv.spec((2, 3)), cv.spec((3,), "float64"))
    x, y = np.ones((2, 3), np.float32), np.ones(3)
    feed = {"missing": {"x": x},
            "extra": {"x": x, "y": y, "z": y},
            "dtype": {"x": x.astype(np.float64), "y": y},
            "shape": {"x": x, "y": np.ones(4)},
            "not an array": {"x": x.tolist(), "y": y}}.get(case)
    if case == "capture tensor":
        with cv.CaptureDevice().capture_scope() as scope:
            feed = {"x": scope.input("x", (2, 3)), "y": y}
            scope.output(feed["x"] + 1)
    expected = {"missing": r"missing input 'y': expected float64\[3\]",
                "extra": "unexpected input 'z'",
                "dtype": r"input 'x': expected float32\[2,3\], got float64\[2,3\]",
                "shape": r"input 'y': expected float64\[3\], got float64\[4\]",
                "not an array": r"input 'x' must be an array float32\[2,3\], got list",
                "capture tensor": "input 'x' is a capture tensor, which has no value"}[case]
    message = _message(graph, feed, target.name)
    assert re.search(expected, message), message
    assert message == _message(graph, feed, "numpy")


def test_an_option_the_backend_does_not_take_is_named(target):
    graph = cv.capture(lambda x: x + 1, cv.spec(3))
    accepted = ", ".join(sorted(target.backend.options)) or "none"
    with pytest.raises(TypeError, match=rf"the {target.name} backend takes no option "
                                        rf"'colour' \(its options: {re.escape(accepted)}\)"):
        graph.replay({"x": np.ones(3, np.float32)}, backend=target.name, colour="red")


# --- errors name the node -------------------------------------------------------------------


def test_a_failing_op_names_its_node_and_the_users_line(target):
    def gather(x, i):
        y = x * 2.0
        return y[i]  # the failing line

    graph = cv.capture(gather, cv.spec((3, 4)), cv.spec((2,), "int64"))
    node = graph.ops[-1]
    feed = {"x": np.ones((3, 4), np.float32), "i": np.array([0, 7])}  # 7 is out of bounds
    line = gather.__code__.co_firstlineno + 2
    with pytest.raises(cv.ReplayError, match=rf"replay failed at node %{node.index} "
                                             rf"\({node.op}\).*test_backend_contract\.py:"
                                             rf"{line}") as info:
        target.replay(graph, feed)
    assert info.value.node is node


def test_result_says_where_it_ran_and_to_numpy_gives_host_arrays(target):
    graph = cv.capture(lambda x: np.tanh(x) * 2.0, cv.spec((4,), "float64"))
    x = np.linspace(-1, 1, 4)
    native = graph.replay({"x": x}, backend=target.name)
    host = graph.replay({"x": x}, backend=target.name, to_numpy=True)
    assert native.backend == host.backend == target.name
    assert type(host["out"]) is np.ndarray
    assert_agrees(target.backend.to_host(native["out"]), np.tanh(x) * 2.0, target.backend,
                  "out")


# --- the generated programs of tests/test_properties.py ----------------------------------------

SLOW = {"dask", "dask-distributed", "jax"}  # a replay builds a task graph or compiles


@pytest.mark.filterwarnings("ignore")
def test_generated_programs_replay_as_on_numpy(target):
    examples = 25 if target.param in SLOW else 100

    @settings(max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow])
    @given(programs(), st.integers(0, 2**32))
    def check(program, seed):
        specs, steps = program
        inputs = make_inputs(specs, seed)
        fn = program_function(steps, len(inputs))
        device = cv.Device("numpy")
        device.seed(seed)
        with np.errstate(all="ignore"):
            try:
                graph = cv.capture(fn, *[cv.spec(s, d) for s, d in specs], rng=device)
            except (ValueError, TypeError, OverflowError, IndexError):
                return  # refused at capture: tests/test_properties.py's business
            feed = dict(zip(graph.inputs, inputs))
            try:
                expected = graph.replay(feed, backend="numpy")
            except cv.ReplayError:
                expected = None
            try:
                got = target.replay(graph, feed)
            except cv.UnsupportedOperationError as err:
                assert_refusal(err, graph, target.backend)
                return
            except cv.ReplayError as err:
                assert expected is None, f"{target.name} failed where NumPy did not: {err}"
                return
        assert expected is not None, f"NumPy failed; {target.name} did not"
        for name in graph.outputs:
            assert_agrees(got[name], expected[name], target.backend, name)

    check()


def test_the_registry_lists_every_backend_and_imports_none_until_asked():
    assert registry.names()[:1] == ["auto"]
    assert {"numpy", "cupy", "dask", "jax"} <= set(registry.names())
    assert registry.get("numpy").name == "numpy"
    with pytest.raises(ValueError, match=r"unknown backend 'tpu'; expected one of 'auto', "):
        registry.get("tpu")


@pytest.mark.parametrize("name,engine", [("dask", "dask"), ("jax", "jax")])
def test_a_missing_engine_names_the_extra(monkeypatch, name, engine):
    """With the engine's import failing, asking for the backend names the pip extra."""
    module = f"capviz.backends.{name}"
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} not written yet")
    for loaded in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        monkeypatch.delitem(sys.modules, loaded)  # the engine's package and its modules
    monkeypatch.delitem(registry._REGISTRY, name, raising=False)
    monkeypatch.setitem(sys.modules, engine, None)  # `import engine` raises ImportError
    graph = cv.capture(lambda x: x + 1, cv.spec(3))
    with pytest.raises(cv.BackendUnavailableError, match=rf"pip install '\.\[{name}\]'"):
        graph.replay({"x": np.ones(3, np.float32)}, backend=name)


def test_the_cli_offers_every_registered_backend(capsys):
    from capviz import cli

    parser = cli.build_parser()
    for name in registry.names():
        assert parser.parse_args(["demo", "--backend", name]).backend == name
    with pytest.raises(SystemExit):
        parser.parse_args(["demo", "--backend", "tpu"])
    assert "invalid choice: 'tpu'" in capsys.readouterr().err
