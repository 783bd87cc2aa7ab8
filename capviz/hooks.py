"""Seed hooks: notice reseeding of NumPy's, Python's and CuPy's global generators in a capture.

The hooks are installed when the first capture scope of the process opens and removed when the
last one closes, so outside a capture ``np.random.seed`` is NumPy's own function and costs exactly
what it always did. While installed, a hooked call from a thread that is not capturing goes
straight to the original.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy.random

from capviz.backends.capture import active, user_source
from capviz.violations import seed_message

_lock = threading.Lock()
_users = 0
_installed: list[tuple[Any, str, Callable, Callable]] = []  # (module, attr, original, hook)


def _targets() -> list[tuple[Any, str, str]]:
    found: list[tuple[Any, str, str]] = [
        (numpy.random, "seed", "np.random.seed"),
        (numpy.random, "set_state", "np.random.set_state"),
        (random, "seed", "random.seed"),
    ]
    cupy_random = sys.modules.get("cupy.random")
    if cupy_random is not None and hasattr(cupy_random, "seed"):
        found.append((cupy_random, "seed", "cupy.random.seed"))
    return found


def call_text(name: str, args: tuple, kwargs: dict) -> str:
    """``np.random.seed(42)``: the call as the user wrote it, shortened."""
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    text = ", ".join(parts)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{name}({text})"


def report_seed(call: str) -> None:
    """Record a ``seed`` violation in the current thread's capture (raises in ``raise`` mode)."""
    recorder = active()
    if recorder is not None:
        source = user_source()
        recorder.violation("seed", call, seed_message(call, source), source)


def _hook(name: str, original: Callable) -> Callable:
    def hooked(*args: Any, **kwargs: Any) -> Any:
        if active() is not None:
            report_seed(call_text(name, args, kwargs))
        return original(*args, **kwargs)

    hooked.__wrapped__ = original  # type: ignore[attr-defined]
    hooked.__name__ = getattr(original, "__name__", name)
    hooked.__doc__ = getattr(original, "__doc__", None)
    return hooked


def install() -> None:
    """Install the hooks (reference-counted: one call per opening scope)."""
    global _users
    with _lock:
        _users += 1
        if _users > 1:
            return
        for module, attr, name in _targets():
            original = getattr(module, attr)
            hook = _hook(name, original)
            setattr(module, attr, hook)
            _installed.append((module, attr, original, hook))


def uninstall() -> None:
    """Remove the hooks when the last scope closes; leave a function someone else put there."""
    global _users
    with _lock:
        _users -= 1
        if _users > 0:
            return
        while _installed:
            module, attr, original, hook = _installed.pop()
            if getattr(module, attr) is hook:
                setattr(module, attr, original)


def installed() -> bool:
    """True while the hooks are in place."""
    return bool(_installed)
