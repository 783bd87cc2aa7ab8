"""A stand-in for CuPy built on NumPy, for testing capviz's CuPy code paths without a GPU.

A GPU cannot exist on CI machines, so this is the one mocked component: arrays carry
``__cuda_array_interface__`` and ``.get()`` like CuPy's, and ``cuda.runtime.getDeviceCount``
reports one device. The real CuPy runs the same tests on the GPU machine (benchmarks/gpu_check.py).
"""

import sys
import types

import numpy as np


class ndarray(np.ndarray):
    __module__ = "cupy"

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3}

    def get(self):
        return np.asarray(self).copy()


def _device(out):
    if isinstance(out, np.ndarray) and not isinstance(out, ndarray):
        return out.view(ndarray)
    return out


class _Ufunc:
    """A NumPy ufunc whose results are device arrays; ``.at`` and the rest pass through."""

    def __init__(self, ufunc):
        self._ufunc = ufunc

    def __call__(self, *args, **kwargs):
        return _device(self._ufunc(*args, **kwargs))

    def __getattr__(self, name):
        method = getattr(self._ufunc, name)
        if name in ("reduce", "accumulate"):  # as CuPy: add and multiply only, no initial=
            def limited(array, axis=0, dtype=None, out=None, **kwargs):
                if self._ufunc.__name__ not in ("add", "multiply") or "initial" in kwargs:
                    raise NotImplementedError(f"{self._ufunc.__name__}.{name} (CuPy has it "
                                              "for add and multiply only)")
                return _device(method(array, axis=axis, dtype=dtype, out=out, **kwargs))

            return limited
        return method


class _Namespace(types.ModuleType):
    def __getattr__(self, name):
        value = getattr(np, name)
        if isinstance(value, np.ufunc):
            return _Ufunc(value)
        if callable(value) and not isinstance(value, type):
            def wrapped(*args, **kwargs):
                return _device(value(*args, **kwargs))

            return wrapped
        return value


def install(monkeypatch, devices=1):
    cupy = _Namespace("cupy")
    cupy.ndarray = ndarray
    cupy.asarray = lambda a, dtype=None: np.array(a, dtype=dtype).view(ndarray)
    cupy.asnumpy = lambda a: np.asarray(a).copy()
    cupy.uint64, cupy.uint32 = np.uint64, np.uint32
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(
        getDeviceCount=lambda: devices))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(sys.modules["capviz.devices"], "_default", None)
    from capviz import ops

    for op in ops.OPS.values():  # ops bound to this stand-in are forgotten after the test
        monkeypatch.setattr(op, "_bound", {k: v for k, v in op._bound.items() if k != "cupy"})
    return cupy
