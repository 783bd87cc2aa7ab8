"""The CuPy backend (the ``capviz[cuda]`` extra): the op table on CuPy's namespace, on a GPU.

CuPy is imported only when this backend is asked for; a failed import is remembered (a failed
import searches every path entry, about 35 us, and ``backend="auto"`` asks on every replay)
until a ``cupy`` module appears in ``sys.modules``.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import numpy as np

from capviz.backends.registry import Backend, install_hint, register
from capviz.errors import BackendUnavailableError

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

    Random bits are Philox written in array operations (:func:`capviz.rng.philox_raw`), equal
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


register(CupyBackend())
