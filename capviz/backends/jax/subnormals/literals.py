"""Subnormal values the program reads, which XLA reads as 0: literals
(:func:`subnormal_literal`) and constants (:func:`subnormal_constant`), refused like the ops of
:data:`capviz.backends.jax.subnormals.declared.DECLARED`."""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.backends.jax.subnormals.operands import FLUSHED
from capviz.core.ir import Node


def _literals(value: Any) -> Any:
    """The float and complex numbers and arrays in a node's static arguments or parameters."""
    if isinstance(value, Node) or isinstance(value, bool):
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _literals(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _literals(item)
    elif isinstance(value, (float, complex, np.floating, np.complexfloating)):
        yield value
    elif isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        yield value


def _subnormals_in(value: Any, dtype: Any) -> np.ndarray:
    """The values of ``value`` (a number or an array; each part of a complex one) that are
    nonzero subnormals once in ``dtype`` (none for a dtype XLA does not flush)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        dtype = np.dtype(np.float32 if dtype.itemsize == 8 else np.float64)
    a = np.asarray(value)
    if dtype not in FLUSHED or a.dtype.kind not in "fc":
        return np.empty(0)
    tiny = np.finfo(dtype).tiny
    found = []
    with np.errstate(all="ignore"):
        for part in ((a.real, a.imag) if a.dtype.kind == "c" else (a,)):
            cast = part.astype(dtype)
            found.append(cast[(cast != 0) & (np.abs(cast) < tiny)])
    return np.concatenate([f.reshape(-1) for f in found])


def subnormal_literal(node: Node) -> str | None:
    """Why a literal of ``node`` (an argument or a parameter: ``x + 1e-310``,
    ``np.clip(x, 1e-310, None)``) makes XLA's result differ from NumPy's: it is a nonzero
    subnormal in the type the op computes in (NumPy's promotion of the operands and the
    literal; a Python number takes the operands' type), or in its own float32/float64 type
    (XLA may convert it on the device, where it reads as 0); ``None`` when none is. XLA reads
    subnormal floats as 0, and no run-time check sees a value the program does not compute.
    float16 literals are kept (XLA computes float16 in float32)."""
    operands = [np.dtype(a.dtype) for a in node.args
                if isinstance(a, Node) and a.dtype is not None]
    own = np.dtype(node.dtype) if node.dtype is not None else None
    for value in (*_literals(node.args), *_literals(node.params or {})):
        try:
            computed = np.result_type(*operands, value) if operands else \
                own if own is not None and own.kind in "fc" else np.result_type(value)
        except TypeError:  # pragma: no cover - a value NumPy does not promote
            computed = None
        dtypes = [computed] if isinstance(value, (float, complex)) else [computed, value.dtype]
        for dtype in dtypes:
            if dtype is None:
                continue
            found = _subnormals_in(value, dtype)
            if found.size:
                return (f"the literal {_shown(value, found)} is subnormal in "
                        f"{np.dtype(dtype).name}: XLA reads it as 0")
    return None


def _shown(value: Any, found: np.ndarray) -> str:
    if isinstance(value, np.ndarray) and value.size > 1:
        return f"array holding {float(found[0])!r}"
    return repr(value.item() if isinstance(value, np.ndarray) else value)


def subnormal_constant(host: Any, low: float | None = None) -> str | None:
    """What a constant holds that XLA reads as 0 (its first nonzero subnormal value, in its
    own float32/float64 or complex type), ``None`` when it holds none; ``low``: its smallest
    nonzero magnitude when already measured (:func:`magnitudes`), which rules most out."""
    dtype = np.asarray(host).dtype
    if dtype.kind not in "fc" or (low is not None and dtype.kind == "f"
                                  and not low < float(np.finfo(dtype).tiny)):
        return None
    found = _subnormals_in(host, dtype)
    if not found.size:
        return None
    return f"{float(found[0])!r}, subnormal in {dtype.name}"
