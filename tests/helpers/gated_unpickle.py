"""A function whose unpickling waits on a gate the test holds: the eager worker of
tests/differential unpickles a call's payload (importing its module, as long as that takes)
before it says "started", so nothing may come back from the worker while the gate is held
(tests/test_differential.py). The gate is a named pipe (FIFO): the worker's open for reading
returns once the test opens it for writing, and its read returns when the test closes it."""

from __future__ import annotations

import os


def doubles(x):
    return x * 2


def _after_the_gate(fifo: str):
    """``doubles``, once the holder of ``fifo`` has opened it and closed it again."""
    with open(fifo, "rb") as gate:
        gate.read()
    return doubles


class Gated:
    """Pickles as a call of :func:`_after_the_gate`: unpickled, it is :func:`doubles`, reached
    only through the gate at ``fifo`` (made here)."""

    def __init__(self, fifo: str) -> None:
        os.mkfifo(fifo)
        self.fifo = fifo

    def __reduce__(self):
        return _after_the_gate, (self.fifo,)
