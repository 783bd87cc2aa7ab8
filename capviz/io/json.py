"""Static values as JSON: what JSON lacks is tagged (``{"$tuple": [...]}``, ``{"$slice": [...]}``,
``{"$float": "nan"}``, NumPy scalar literals ``{"$scalar": ["float32", 0.5]}``...), and
:func:`decode` builds back only plain values: nothing is unpickled or evaluated."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from capviz.core.errors import GraphFormatError
from capviz.core.ir import LoggedPart

# NumPy scalar literals keep their dtype in a file: {"$scalar": ["float32", 0.5]}. Each of these
# dtypes holds values a JSON number (or a $complex pair of them) gives back exactly.
_SCALAR_DTYPES = frozenset(("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                            "uint64", "float16", "float32", "float64", "complex64", "complex128"))


def encode(value: Any) -> Any:
    """A static value as JSON data."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.generic) and value.dtype.name in _SCALAR_DTYPES:
        return {"$scalar": [value.dtype.name, encode(value.item())]}
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else {"$float": repr(v)}
    if isinstance(value, complex):
        return {"$complex": [encode(value.real), encode(value.imag)]}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, slice):
        return {"$slice": [encode(value.start), encode(value.stop), encode(value.step)]}
    if value is Ellipsis:
        return {"$ellipsis": None}
    if isinstance(value, dict):
        return {"$dict": {str(k): encode(v) for k, v in value.items()}}
    if isinstance(value, LoggedPart):  # (a tensor's place in a logged dict or tuple)
        return {"$part": value.index}
    raise TypeError(f"cannot store a {type(value).__name__} in a graph file")


def decode(data: Any, where: str = "value") -> Any:
    """The static value for JSON data written by :func:`encode`."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v, where) for v in data]
    if isinstance(data, dict) and len(data) == 1:
        (tag, body), = data.items()
        if tag == "$tuple" and isinstance(body, list):
            return tuple(decode(v, where) for v in body)
        if tag == "$slice" and isinstance(body, list) and len(body) == 3:
            parts = [decode(v, where) for v in body]
            if all(p is None or (isinstance(p, int) and not isinstance(p, bool)) for p in parts):
                return slice(*parts)
        if tag == "$float" and body in ("nan", "inf", "-inf"):
            return float(body)
        if tag == "$complex" and isinstance(body, list) and len(body) == 2:
            return complex(decode(body[0], where), decode(body[1], where))
        if tag == "$ellipsis" and body is None:
            return Ellipsis
        if tag == "$scalar" and isinstance(body, list) and len(body) == 2:
            return _scalar(body[0], decode(body[1], where), where)
        if tag == "$part" and isinstance(body, int) and not isinstance(body, bool):
            return LoggedPart(body)
        if tag == "$dict" and isinstance(body, dict):
            return {k: decode(v, where) for k, v in body.items()}
    raise GraphFormatError(f"{where}: unrecognised value {json.dumps(data)[:80]}")


def _scalar(dtype: Any, value: Any, where: str) -> np.generic:
    """The NumPy scalar ``{"$scalar": [dtype, value]}`` stands for; it must hold ``value``
    exactly (no rounding, no wrap-around)."""
    if dtype not in _SCALAR_DTYPES or isinstance(value, (str, list, tuple, dict)) \
            or value is None:
        raise GraphFormatError(f"{where}: {json.dumps([dtype, repr(value)])[:80]} is not a "
                               "NumPy scalar of a numeric dtype")
    try:
        with np.errstate(all="ignore"):
            scalar = np.dtype(dtype).type(value)
        exact = scalar.item() == value or (value != value and scalar != scalar)
    except (OverflowError, TypeError, ValueError):
        exact = False
    if not exact:
        raise GraphFormatError(f"{where}: {value!r} is not exactly a {dtype}")
    return scalar


