"""Host arrays admitted into a graph, by capture and replay alike: the dtypes a graph holds,
the ndarray subclasses refused (and what to pass instead), and a constant's private copy with
its memory layout kept."""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.backends import registry
from capviz.core.errors import UnsupportedOperationError
from capviz.core.layout import layout_copy
from capviz.core.source import format_source, user_source


def host_copy(value: Any) -> np.ndarray:
    """A private host copy of an array-like value with its memory layout (strides, order) kept,
    so replay runs the kernels eager NumPy ran (CuPy arrays are copied to the host).

    Raises:
        UnsupportedOperationError: an ndarray subclass other than ``np.memmap`` (see
            :func:`subclass_refusal`), or a dtype outside the numbers and booleans.
    """
    other = registry.owner(value)
    if other is not None:  # another backend's array (CuPy's): copied to the host
        return other.to_host(value)
    refusal = subclass_refusal(value)
    if refusal is not None:
        raise UnsupportedOperationError(f"{refusal}{at(user_source())}")
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError("object arrays cannot be recorded (they could hold anything)")
    if arr.dtype.kind not in NUMERIC_KINDS:
        raise UnsupportedOperationError(
            f"{dtype_refusal(arr.dtype, 'an array constant')}{at(user_source())}")
    return layout_copy(arr)


#: The dtype kinds a graph holds (booleans, integers, floats, complex): what replay backends
#: compute and what a saved graph stores.
NUMERIC_KINDS = "biufc"

#: ndarray subclasses whose operators and ufuncs are exactly ndarray's (a memmap is an
#: ndarray over a file); any other subclass is refused, since it may redefine them.
PLAIN_SUBCLASSES = (np.memmap,)


def subclass_refusal(value: Any) -> str | None:
    """Why ndarray subclass ``value`` cannot enter a capture (``None``: a plain array)."""
    fix = subclass_fix(value)
    if fix is None:
        return None
    return (f"an ndarray subclass ({type_name(value)}) cannot be recorded: the graph holds "
            f"plain ndarrays, and {fix}")


def type_name(value: Any) -> str:
    """``module.Class`` of ``value``'s type (``numpy.ma.MaskedArray``)."""
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def subclass_fix(value: Any) -> str | None:
    """What ndarray subclass ``value`` changes and what to pass instead (``None``: a plain
    ndarray, or ``np.memmap``, which computes as one).

    ``np.matrix`` makes ``*`` and ``**`` matrix products, a masked array leaves masked elements
    out of its results, and any other subclass may redefine operators and ufuncs: a graph holds
    plain ndarrays, so recording one would silently change what the code computes.
    """
    kind = type(value)
    if not isinstance(value, np.ndarray) or kind is np.ndarray or kind in PLAIN_SUBCLASSES:
        return None
    if registry.owner(value) is not None:
        return None  # another backend's array (CuPy's): host_array copies it to the host
    if isinstance(value, np.matrix):
        fix = ("np.matrix makes * and ** matrix products; pass np.asarray(M) and write @ for a "
               "matrix product")
    elif isinstance(value, np.ma.MaskedArray):
        fix = ("a masked array leaves its masked elements out of results; pass m.filled(value) "
               "or compute with np.where(mask, ..., ...) on plain arrays")
    else:
        fix = ("a subclass may redefine operators and ufuncs; pass np.asarray(value) if it "
               "computes as a plain ndarray")
    return fix


def dtype_refusal(dtype: np.dtype, what: str) -> str:
    """Why ``what`` of non-numeric ``dtype`` cannot be recorded."""
    return (f"{what} of dtype {dtype} cannot be recorded: a graph holds booleans, integers, "
            "floats and complex numbers only (object arrays could hold anything; strings, "
            "datetime64, timedelta64 and structured dtypes are not computed by the replay "
            "backends nor stored by graph.save). Compute this part outside the capture, or "
            "keep numbers (for datetime64: x.astype('int64') counts of its unit)")


def at(source: Any) -> str:
    """`` (at file:line in function)`` for a source, or ``""``."""
    where = format_source(source)
    return f" (at {where})" if where else ""
