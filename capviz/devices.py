"""Eager devices: ``cv.Device("numpy")`` or ``cv.Device("cupy")``, each with its own
counter-based generator, the default device, ``cv.tensor`` and ``cv.seed``."""

from __future__ import annotations

import threading
import weakref
from typing import Any

from capviz.backends import registry
from capviz.ops.random import check_seed, fresh_seed
from capviz.randomness import hooks
from capviz.trace.context import active
from capviz.trace.eager import EagerTrace
from capviz.trace.recorder import Recorder
from capviz.trace.tensor import Tensor


class Device:
    """An eager device: ``Device("numpy")`` or ``Device("cupy")``, with its own generator.

    Random draws are numbered; draw ``k`` after ``seed(s)`` is the Philox stream keyed by
    ``(s, k)``, so it is the same on every device kind and in every replay of a capture.
    The kinds are the registry's eager backends; the replay-only ones (Dask, JAX) are refused
    with the way to use them.
    """

    def __init__(self, kind: str = "numpy") -> None:
        if kind == "auto":  # as replay's backend="auto": CuPy with a GPU, else NumPy
            kind = registry.resolve().name
        eager = registry.eager_names()
        if kind not in eager:
            expected = " or ".join(map(repr, eager))
            if kind in registry.names():
                raise ValueError(f"{kind!r} is a replay-only backend, not an eager device "
                                 f"(expected {expected}): capture on cv.Device('numpy') and "
                                 f"run the graph with graph.replay(inputs, backend={kind!r})")
            raise ValueError(f"unknown device kind {kind!r}; expected {expected}")
        self.kind = kind
        self.backend = EagerTrace(registry.get(kind), self)
        self._seed: int | None = None
        self._entropy: int | None = None
        self._draws = 0
        self._lock = threading.Lock()
        self._captures: weakref.WeakSet[Recorder] = weakref.WeakSet()  # captures drawing from it

    @property
    def xp(self) -> Any:
        """The array namespace of the device's backend."""
        return self.backend.xp

    @property
    def current_seed(self) -> int | None:
        """The seed given to :meth:`seed`, or ``None`` if the device was never seeded."""
        return self._seed

    def seed(self, seed: int) -> None:
        """Seed the device's generator (a ``seed`` violation inside a capture, and of every open
        capture drawing from this device, whichever thread it runs in)."""
        self.reseed(seed, hooks.call_text(f"Device({self.kind!r}).seed", (seed,), {}))

    def reseed(self, seed: int, call: str) -> None:
        """Seed the generator; ``call`` is how the user's code did it (for the violation)."""
        seed = check_seed(seed)
        with self._lock:
            users = [r for r in self._captures if not r.closed]
        if users or active() is not None:
            hooks.report_seed(call, users)
        with self._lock:
            self._seed = seed
            self._draws = 0

    def bind_capture(self, recorder: Recorder) -> None:
        """Make ``recorder`` draw from this device until its scope closes."""
        recorder.graph.rng_seed = self.current_seed
        recorder.seeded = self.current_seed is not None
        recorder.next_draw = self.next_draw
        with self._lock:
            self._captures.add(recorder)  # weakly: a finished capture's graph is freed

    def next_draw(self) -> int:
        """Reserve the next draw index."""
        with self._lock:
            draw = self._draws
            self._draws += 1
            return draw

    def rng_key(self) -> int:
        """The seed draws use: the given seed, else entropy fixed once per device."""
        if self._seed is not None:
            return self._seed
        with self._lock:
            if self._entropy is None:
                self._entropy = fresh_seed()
            return self._entropy

    def __repr__(self) -> str:
        return f"Device({self.kind!r})"


_default: Device | None = None
_default_lock = threading.Lock()


def default_device() -> Device:
    """CuPy when it imports and sees a GPU, else NumPy (chosen once per process)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Device(registry.resolve().name)
        return _default


def tensor(data: Any, device: Device | None = None) -> Tensor:
    """An eager tensor holding a copy of ``data`` on ``device`` (default: the default device)."""
    device = device or default_device()
    if isinstance(data, Tensor):
        data = data.numpy()
    backend = device.backend
    value = backend.copy_of(data)
    if value.dtype == object:
        raise TypeError("cv.tensor() needs numbers; got an object array")
    return Tensor(value, backend)


def seed(n: int) -> None:
    """Seed the default device (a ``seed`` violation inside a capture)."""
    default_device().reseed(n, hooks.call_text("cv.seed", (n,), {}))


