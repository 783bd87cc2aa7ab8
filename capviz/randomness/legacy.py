"""NumPy's global-generator draws recorded as capviz random ops (``global_random="record"``).

With ``capture_scope(global_random="record")`` a call such as ``np.random.rand(3, 4)`` in the body
is recorded as a ``random_uniform`` op instead of drawing from NumPy's generator, so every replay
draws fresh values, reproducibly (capviz's Philox stream of the scope's ``rng`` device). The values
are capviz's, not NumPy's: the same distribution, shape and dtype (float64, as NumPy's legacy
functions return), not the same numbers.

Only the common continuous draws are recorded (:data:`RECORDABLE`); :func:`plan` answers why any
other call cannot be, and the hooks then report it as a ``frozen_random`` violation.
"""

from __future__ import annotations

import numbers
from typing import Any

from capviz import ops
from capviz.trace.recorder import Recorder
from capviz.trace.tensor import Tensor


class NotRecordable(Exception):
    """A call that ``global_random="record"`` cannot record; the text says why."""


def _size(size: Any, call: str, hint: str = "size=1") -> tuple:
    if size is None:
        raise NotRecordable(f"{call} without a size returns a Python float, which a graph cannot "
                            f"hold as a random op; pass a size ({hint})")
    dims = (size,) if isinstance(size, numbers.Integral) else size
    try:
        shape = tuple(int(d) for d in dims)
    except TypeError:
        raise TypeError(f"{call}: size must be an int or a tuple of ints, got {size!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"{call}: negative dimensions are not allowed, got {shape}")
    return shape


def _number(value: Any, what: str, call: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise NotRecordable(f"{call} with a {what} of type {type(value).__name__}: only scalar "
                            "parameters can be recorded")
    return float(value)


def _dims(call: str, dims: tuple) -> tuple:
    if not dims:
        return _size(None, call, call.replace("()", "(1)"))
    return _size(dims, call)


def _rand(*dims: Any) -> tuple:
    return "random_uniform", _dims("np.random.rand()", dims), {"low": 0.0, "high": 1.0}


def _randn(*dims: Any) -> tuple:
    return "random_normal", _dims("np.random.randn()", dims), {"mean": 0.0, "std": 1.0}


def _random_sample(size: Any = None) -> tuple:
    return "random_uniform", _size(size, "np.random.random()"), {"low": 0.0, "high": 1.0}


def _uniform(low: Any = 0.0, high: Any = 1.0, size: Any = None) -> tuple:
    call = "np.random.uniform()"
    dist = {"low": _number(low, "low", call), "high": _number(high, "high", call)}
    return "random_uniform", _size(size, call), dist


def _normal(loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> tuple:
    call = "np.random.normal()"
    dist = {"mean": _number(loc, "loc", call), "std": _number(scale, "scale", call)}
    if dist["std"] < 0:
        raise ValueError("scale < 0")  # NumPy's own message
    return "random_normal", _size(size, call), dist


def _standard_normal(size: Any = None) -> tuple:
    return "random_normal", _size(size, "np.random.standard_normal()"), {"mean": 0.0, "std": 1.0}


RECORDABLE = {
    "rand": _rand,
    "randn": _randn,
    "random": _random_sample,
    "random_sample": _random_sample,
    "ranf": _random_sample,
    "sample": _random_sample,
    "uniform": _uniform,
    "normal": _normal,
    "standard_normal": _standard_normal,
}
"""NumPy legacy draw name -> its signature, returning ``(capviz op, shape, distribution)``."""


def plan(name: str, args: tuple, kwargs: dict) -> tuple:
    """``(op name, shape, distribution params)`` for ``np.random.<name>(*args, **kwargs)``.

    Raises:
        NotRecordable: the call has no capviz random op (the reason names the alternative).
        TypeError, ValueError: the arguments are wrong for NumPy too.
    """
    parse = RECORDABLE.get(name)
    if parse is None:
        raise NotRecordable(f"np.random.{name} has no capviz random op (recorded: "
                            f"{', '.join(sorted(RECORDABLE))})")
    return parse(*args, **kwargs)


def record(recorder: Recorder, name: str, args: tuple, kwargs: dict) -> Tensor:
    """Record ``np.random.<name>(*args, **kwargs)`` as a float64 capviz random op."""
    op, shape, dist = plan(name, args, kwargs)
    return recorder.random(ops.OPS[op], {"shape": shape, "dtype": "float64", **dist})
