"""Warnings raised while replaying point at the user's line, not at capviz's files.

NumPy reports a floating-point error (``invalid value encountered in log``) as a warning from
the op; during a replay the op runs in capviz's generated code or in the stepping executor, so
Python would attribute the warning to them. Inside :func:`user_warnings`, NumPy's error
settings that say ``warn`` say ``call`` instead (``np.errstate``, which is per thread and per
context, so concurrent replays do not disturb each other or the process's warning filters), and
the callback issues the same ``RuntimeWarning`` with :func:`warnings.warn_explicit` at the
source line of the node being replayed. Filters and the once-per-location rule then apply to
the user's line as in eager NumPy. Settings other than ``warn`` (``ignore``, ``raise``, a
``call`` of your own) are left as they are. The text names the recorded op
(``... encountered in mean``), where eager NumPy may name an internal one (``scalar divide``).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Callable, Iterator
from types import FrameType

import numpy as np

from capviz.core.ir import Node

_REGISTRIES: dict[str, dict] = {}  # once-per-location bookkeeping, per user file


@contextlib.contextmanager
def user_warnings(node_of: Callable[[FrameType], Node | None]) -> Iterator[None]:
    """Issue NumPy's floating-point warnings of the block at the user's line of the node
    ``node_of(frame)`` finds from the frame that called the op."""
    settings = np.geterr()
    if "warn" not in settings.values() or "call" in settings.values():
        yield
        return

    def report(kind: str, flag: int) -> None:
        node = node_of(sys._getframe(1))
        what = node.op if node is not None else "an op"
        message = f"{kind} encountered in {what}"
        if node is None or node.source is None:
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            return
        file, line, _ = node.source
        registry = _REGISTRIES.setdefault(file, {})
        warnings.warn_explicit(message, RuntimeWarning, file, line, registry=registry)

    calls = {k: ("call" if v == "warn" else v) for k, v in settings.items()}
    with np.errstate(call=report, **calls):
        yield
