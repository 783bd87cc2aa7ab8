"""The CuPy backend (the ``capviz[cuda]`` extra): the op table on CuPy's namespace, on a GPU.

CuPy is imported only when this backend is asked for; a failed import is remembered (a failed
import searches every path entry, about 35 us, and ``backend="auto"`` asks on every replay)
until a ``cupy`` module appears in ``sys.modules``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.registry import Backend, install_hint, register
from capviz.core.errors import BackendUnavailableError
from capviz.ops.reductions import MASKED

_MISSING: list[str] = []  # why `import cupy` failed, remembered


def load_cupy() -> Any:
    """Import CuPy and check a GPU is visible.

    Raises:
        BackendUnavailableError: naming what is missing (CuPy itself, or a usable GPU) and the
            extra that installs CuPy.
    """
    if _MISSING and "cupy" not in sys.modules:
        raise BackendUnavailableError(f"the CuPy backend needs CuPy, which is not installed "
                                      f"({_MISSING[0]}); {install_hint('cupy')}")
    try:
        cupy = importlib.import_module("cupy")
    except ImportError as err:
        _MISSING[:] = [str(err)]
        raise BackendUnavailableError(f"the CuPy backend needs CuPy, which is not installed "
                                      f"({err}); {install_hint('cupy')}") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # CUDA driver or runtime errors have many types
        raise BackendUnavailableError(f"CuPy is installed but no GPU is usable: {err}") from None
    if count < 1:
        raise BackendUnavailableError("CuPy is installed but no GPU is visible")
    return cupy


def cupy_available() -> bool:
    """True when CuPy imports and sees at least one GPU (a failed import is remembered)."""
    if _MISSING and "cupy" not in sys.modules:
        return False
    try:
        load_cupy()
    except BackendUnavailableError:
        return False
    return True


class CupyBackend(Backend):
    """Replay on CuPy (``backend="cupy"``): the same table and memory plan as NumPy, on the GPU.

    Random bits are Philox written in array operations (:func:`capviz.ops.random.philox_raw`), equal
    to NumPy's; elementwise results may differ from NumPy's by an ulp where CUDA's
    transcendental functions round otherwise (``tolerance``).
    """

    name = "cupy"
    extra = "cuda"
    mutable = True
    eager = True
    exact = False
    tolerance = (1e-5, 1e-6)

    def namespace(self) -> Any:
        return load_cupy()

    def available(self) -> bool:
        if _MISSING and "cupy" not in sys.modules:  # asked on every backend="auto" replay
            return False
        return cupy_available()

    def from_host(self, value: Any) -> Any:
        return load_cupy().asarray(value)

    def to_host(self, value: Any) -> np.ndarray:
        return sys.modules["cupy"].asnumpy(value)

    def is_native(self, value: Any) -> bool:
        cupy = sys.modules.get("cupy")  # no CuPy loaded: nothing can be a CuPy array
        return cupy is not None and isinstance(value, getattr(cupy, "ndarray", ()))

    def bind(self, op: Any) -> Callable:
        fn = super().bind(op)
        if op.name in _CUPY_METHODS:
            return _ufunc_method(op.name, fn)
        if op.name == "into":  # f(..., out=y) of a ufunc method: the form above, then copied
            return _into(self, fn)
        if op.name in _ON_HOST:
            return _on_host(op)
        return fn


_ON_HOST = frozenset(MASKED.values())
"""Ops CuPy's namespace lacks the arguments of: ``np.sum(..., where=)`` and the other
``where=``/``initial=`` reductions (``cupy.sum`` takes neither), run as NumPy's on host copies."""


def _on_host(op: Any) -> Callable:
    """The op's NumPy call on host copies of the operands, moved back to the GPU: NumPy's exact
    result, at the cost of two transfers."""
    fn = op.bind(np)

    def run(*args: Any, out: Any = None, **params: Any) -> Any:
        cupy = sys.modules["cupy"]
        host = [cupy.asnumpy(a) if isinstance(a, cupy.ndarray) else a for a in args]
        result = cupy.asarray(fn(*host, **params))
        if out is None:
            return result
        out[...] = result
        return out

    run.__name__ = op.name
    return run


_CUPY_METHODS = {"ufunc_reduce": "reduce", "ufunc_accumulate": "accumulate"}
_CUPY_REDUCES = frozenset(("add", "multiply"))
"""The ufuncs whose ``reduce`` and ``accumulate`` CuPy has (its docs: "ufunc.reduce: add,
multiply"; ``outer`` it has for every ufunc)."""


def _ufunc_method(name: str, fn: Callable) -> Callable:
    """``np.<ufunc>.reduce`` / ``.accumulate`` on CuPy: CuPy's own for add and multiply
    (without ``initial=``, which CuPy's reduce does not take); for the other ufuncs NumPy's on
    a host copy, moved back to the GPU: NumPy's exact result, at the cost of two transfers."""
    method = _CUPY_METHODS[name]

    def run(a: Any, *, ufunc: str, **params: Any) -> Any:
        if ufunc in _CUPY_REDUCES and "initial" not in params:
            return fn(a, ufunc=ufunc, **params)
        cupy = sys.modules["cupy"]
        out = params.pop("out", None)
        result = getattr(getattr(np, ufunc), method)(cupy.asnumpy(a), **params)
        if out is None:
            return cupy.asarray(result)
        out[...] = cupy.asarray(result)
        return out

    run.__name__ = name
    return run


def _into(backend: CupyBackend, fn: Callable) -> Callable:
    def into(target: Any, *operands: Any, op: str, params: dict) -> Any:
        if op not in _CUPY_METHODS:
            return fn(target, *operands, op=op, params=params)
        y = target.copy()
        y[...] = backend.bind(ops.OPS[op])(*operands, **params)
        return y

    return into


register(CupyBackend())
