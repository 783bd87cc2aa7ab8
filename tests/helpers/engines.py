"""The backend a parametrized test replays with (moved here from the state tests that each
wrote it again, stop 38)."""

from __future__ import annotations

import pytest

from helpers import fakecupy


def engine(name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The backend name to replay with for the test parameter ``name``: ``"fakecupy"``
    installs the CuPy stand-in (``"cupy"``); ``"dask"`` and ``"jax"`` skip the test where the
    engine is not installed."""
    if name == "fakecupy":
        fakecupy.install(monkeypatch)
        return "cupy"
    if name == "dask":
        pytest.importorskip("dask.array")
    if name == "jax":
        pytest.importorskip("jax")
    return name
