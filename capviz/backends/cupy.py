"""Loading CuPy, the optional GPU namespace (the ``capviz[cuda]`` extra), only when asked for."""

from __future__ import annotations

import importlib
import sys
from typing import Any

from capviz.errors import BackendUnavailableError

_INSTALL = ("install the extra from the capviz checkout with: pip install '.[cuda]' (it "
            "installs cupy-cuda12x)")
_MISSING: list[str] = []  # why `import cupy` failed, remembered: a failed import searches
#                            every path entry (35 us), and backend="auto" asks on every replay


def load_cupy() -> Any:
    """Import CuPy and check a GPU is visible.

    Raises:
        BackendUnavailableError: naming what is missing (CuPy itself, or a usable GPU).
    """
    if _MISSING and "cupy" not in sys.modules:
        raise BackendUnavailableError(f"the CuPy backend needs CuPy, which is not installed "
                                      f"({_MISSING[0]}); {_INSTALL}")
    try:
        cupy = importlib.import_module("cupy")
    except ImportError as err:
        _MISSING[:] = [str(err)]
        raise BackendUnavailableError(f"the CuPy backend needs CuPy, which is not installed "
                                      f"({err}); {_INSTALL}") from None
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
