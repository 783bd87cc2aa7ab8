"""The guards' steps of a compiled replay (what a guard is: :mod:`capviz.core.guards`).

On NumPy and CuPy a guard is a step of the program's table, run where the capture read the
value: the value is converted on the host and compared, and a difference raises
:class:`~capviz.core.errors.GuardError` before any later op runs. An engine that builds one
expression (Dask) or traces the table (JAX) passes a list instead: the step appends the value
it would check, the engine computes those values with the outputs, in the same run, and calls
:func:`capviz.core.guards.check_all` before it returns anything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.registry import host_array
from capviz.core.guards import READS, guard_error, same
from capviz.core.ir import Node


def step(node: Node) -> Callable[[Any, Any], Any]:
    """The table step of guard ``node``: check ``value`` now, or append it to ``sink``
    (returned: the step's result register is the sink's own). A NumPy value is converted as it
    is (the conversions take NumPy scalars and arrays alike); another engine's array is
    copied to the host first."""
    recorded = node.params["value"]
    convert = READS.get(node.op)
    if convert is None:  # a length: read from the shape
        axis = node.params["axis"]

        def convert(value: Any) -> int:
            return int(value.shape[axis])

    def guard(value: Any, sink: list | None) -> Any:
        if sink is not None:
            sink.append(value)
            return sink
        if type(value) is not np.ndarray and not isinstance(value, np.generic):
            value = host_array(value)
        got = convert(value)
        if type(got) is bool and got is recorded:  # the common case, a branch: no more work
            return None
        if not same(recorded, got):
            raise guard_error(node, got)
        return None

    guard.__name__ = f"guard_{node.index}"
    return guard
