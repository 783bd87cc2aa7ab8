"""The CuPy backend: the same op table on another namespace. Without a GPU these run against
helpers.fakecupy (the GPU is what is mocked); with CuPy and a GPU the ``gpu`` tests run for real."""

import numpy as np
import pytest
from helpers import fakecupy

import capviz as cv
from capviz.models import transformer_block, transformer_weights


@pytest.fixture
def cupy(monkeypatch):
    return fakecupy.install(monkeypatch)


def test_auto_picks_cupy_and_says_so(cupy):
    g = cv.capture(lambda x: np.tanh(x) * 2, cv.spec(3))
    out = g.replay({"x": np.ones(3, np.float32)}, backend="auto")
    assert out.backend == "cupy" and isinstance(out["out"], cupy.ndarray)
    host = g.replay({"x": np.ones(3, np.float32)}, backend="cupy", to_numpy=True)
    assert type(host["out"]) is np.ndarray
    assert cv.default_device().kind == "cupy"


def test_cupy_replay_matches_numpy(cupy):
    p = transformer_weights(d=8, heads=2)
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    g = cv.capture(lambda x: transformer_block(x, p), cv.spec(x.shape))
    a = g.replay({"x": x}, backend="cupy", to_numpy=True)["out"]
    b = g.replay({"x": x}, backend="numpy")["out"]
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_random_ops_give_the_same_bits_on_both_backends(cupy):
    dev = cv.Device("numpy")
    dev.seed(11)
    g = cv.capture(lambda: (cv.random.uniform((64,)), cv.random.bernoulli((64,), p=0.4),
                            cv.random.normal((64,))), rng=dev)
    a = g.replay({}, backend="cupy", to_numpy=True)
    b = g.replay({}, backend="numpy")
    for name in g.outputs:
        assert np.array_equal(a[name], b[name]), name


def test_eager_cupy_device(cupy):
    dev = cv.Device("cupy")
    t = cv.tensor(np.arange(3.0), device=dev)
    assert isinstance(t._data, cupy.ndarray)
    assert (t * 2).numpy().tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(cv.DeviceMismatchError, match="'numpy' met a tensor on 'cupy'"):
        t + cv.tensor(np.ones(3), device=cv.Device("numpy"))


def test_gpu_array_on_a_numpy_replay_is_refused(cupy):
    g = cv.capture(lambda x: x + 1, cv.spec(3))
    with pytest.raises(cv.ReplayInputError, match=r"input 'x' is an array of the cupy backend "
                                                  r"\(cupy\.ndarray\) but the replay runs on "
                                                  r"numpy; pass a NumPy array or replay with "
                                                  r"backend='cupy'"):
        g.replay({"x": cupy.asarray(np.ones(3, np.float32))}, backend="numpy")


def test_gpu_array_met_in_capture_becomes_a_host_constant(cupy):
    c = cupy.asarray(np.arange(3.0))
    g = cv.capture(lambda x: x + c, cv.spec(3, "float64"))
    assert type(g.constant_values[g.constants[0].index]) is np.ndarray


def test_no_gpu_visible(monkeypatch):
    fakecupy.install(monkeypatch, devices=0)
    with pytest.raises(cv.BackendUnavailableError, match="no GPU is visible"):
        cv.Device("cupy")


def _real_cupy():
    try:
        import cupy

        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:
        return None


@pytest.mark.gpu
@pytest.mark.skipif(_real_cupy() is None, reason="needs CuPy and a GPU (pip install "
                                                 "'.[cuda]' on a machine with one)")
def test_real_cupy_random_bits_and_replay():
    cupy = _real_cupy()
    dev = cv.Device("numpy")
    dev.seed(5)
    g = cv.capture(lambda: (cv.random.uniform((1000,)), cv.random.bernoulli((1000,), p=0.2),
                            cv.random.normal((1000,), dtype="float64")), rng=dev)
    a = g.replay({}, backend="cupy")
    b = g.replay({}, backend="numpy")
    assert isinstance(a["out0"], cupy.ndarray)
    assert np.array_equal(cupy.asnumpy(a["out0"]), b["out0"])
    assert np.array_equal(cupy.asnumpy(a["out1"]), b["out1"])
    np.testing.assert_array_max_ulp(cupy.asnumpy(a["out2"]), b["out2"], maxulp=8)


def test_a_failed_cupy_import_is_remembered_not_retried_on_every_auto_replay(monkeypatch):
    """backend="auto" asks for CuPy on every replay; a failed import searches every path entry
    (tens of microseconds), so its failure is remembered until a 'cupy' module appears."""
    import importlib
    import sys

    from capviz.backends import cupy as cupy_backend

    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(cupy_backend, "_MISSING", [])
    calls = []
    real_import = importlib.import_module

    def counting(name, *args):
        calls.append(name)
        if name == "cupy" and "cupy" not in sys.modules:
            raise ImportError("No module named 'cupy'")
        return real_import(name, *args)

    monkeypatch.setattr(importlib, "import_module", counting)
    g = cv.capture(lambda x: x + 1, cv.spec(3))
    for _ in range(3):
        assert g.replay({"x": np.ones(3, np.float32)}).backend == "numpy"
        with pytest.raises(cv.BackendUnavailableError,
                           match=r"No module named 'cupy'.*pip install '\.\[cuda\]'"):
            g.replay({"x": np.ones(3, np.float32)}, backend="cupy")
    assert calls.count("cupy") == 1
    fake = fakecupy.install(monkeypatch)  # a CuPy that appears later is found
    assert g.replay({"x": np.ones(3, np.float32)}).backend == "cupy"
    assert isinstance(g.replay({"x": np.ones(3, np.float32)})["out"], fake.ndarray)


def test_statistics_and_compare_read_gpu_values_through_the_backend(cupy):
    g = cv.capture(lambda x: np.tanh(x) * 2, cv.spec(4, "float64"))
    x = np.array([-1.0, 0.0, 0.5, np.nan])
    stats = g.compute_stats({"x": x}, backend="cupy")
    out = g.ops[-1].index
    assert stats[out].nan == 1 and stats[out].max == np.tanh(0.5) * 2
    assert not g.compare(inputs={"x": x}, backend="cupy", against="numpy")
    tensor = cv.tensor(np.arange(3.0), device=cv.Device("cupy"))
    assert type(tensor.numpy()) is np.ndarray and tensor.numpy().tolist() == [0.0, 1.0, 2.0]
    copied = cv.tensor(cupy.asarray(np.arange(3.0)), device=cv.Device("numpy"))
    assert type(copied._data) is np.ndarray and copied.numpy().tolist() == [0.0, 1.0, 2.0]
