"""The dispatch tables the :class:`~capviz.trace.tensor.Tensor` reads and the NumPy API fills.

``Tensor.__array_function__`` looks a NumPy function up in :data:`HANDLED`; one that is not
there is refused with the reason and alternative of :data:`REFUSED`. ``np.<ufunc>.reduce``,
``accumulate`` and ``outer`` go to the handler in :data:`UFUNC_METHODS`. The tables live here,
below the Tensor, and :mod:`capviz.numpy_api` fills them when it is imported (as
``import capviz`` does), so the Tensor never imports the API written on top of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class _Handlers(dict):
    """``HANDLED``: a NumPy function replaced by a hook while a capture is open
    (:mod:`capviz.randomness.creation`, ``np.copy``) finds its original's handler through the
    hook's ``__wrapped__`` (``HANDLED[np.copy]`` read while hooked)."""

    def __missing__(self, key: Any) -> Callable:
        original = getattr(key, "__wrapped__", None)
        if original is not None and original is not key and dict.__contains__(self, original):
            return self[original]
        raise KeyError(key)


HANDLED: dict[Callable, Callable] = _Handlers()
"""NumPy function -> handler, for every function capture records or answers."""

_PRIVATE = (".core", "._core", ".lib", ".fromnumeric", ".shape_base", ".numeric", ".multiarray",
            "._multiarray_umath", ".function_base", "._function_base_impl", "._shape_base_impl",
            "._twodim_base_impl", ".twodim_base", ".umath", "._linalg", "._pocketfft",
            "._helper", "._stride_tricks_impl", "._nanfunctions_impl", "._arraysetops_impl",
            "._histograms_impl", "._polynomial_impl", "._index_tricks_impl", "._arraypad_impl",
            "._type_check_impl", "._ufunclike_impl", "._utils_impl", "._npyio_impl",
            "._arrayprint", ".arrayprint", "._scimath_impl", "._array_utils_impl")
_PUBLIC = {"np.stride_tricks": "np.lib.stride_tricks", "np.scimath": "np.emath"}


def function_name(func: Any) -> str:
    """``numpy.linalg.norm`` -> ``"np.linalg.norm"``."""
    module = getattr(func, "__module__", None) or "numpy"
    module = module.replace("numpy", "np", 1) if module.startswith("numpy") else module
    for private in _PRIVATE:
        module = module.replace(private, "")
    module = _PUBLIC.get(module, module)
    return f"{module}.{getattr(func, '__name__', repr(func))}"


def implements(*funcs: Callable) -> Callable:
    """Decorator: the handler of ``funcs`` (each a NumPy function)."""
    def register(handler: Callable) -> Callable:
        for f in funcs:
            HANDLED[f] = handler
        return handler

    return register


UFUNC_METHODS: list[Callable] = []
"""The handler of ``np.<ufunc>.reduce``, ``accumulate`` and ``outer`` on tensors, one entry once
:mod:`capviz.numpy_api.ufunc_methods` is imported (:func:`implements_ufunc_methods`)."""


def implements_ufunc_methods(handler: Callable) -> Callable:
    """Decorator: the handler of ``np.<ufunc>.<method>(tensor, ...)``, called with
    ``(ufunc, method, inputs, kwargs)``."""
    UFUNC_METHODS[:] = [handler]
    return handler


_DATA_SHAPE = ("its output shape depends on the values, which a capture does not have; keep the "
               "shape with np.where(mask, x, fill), or take a fixed-size top-k with "
               "np.argpartition(-x, k, axis)[..., :k]")
_DATA_DTYPE = ("its output dtype (real or complex) depends on the values; cast first, e.g. "
               "np.sqrt(x.astype(np.complex128))")
_FILES = ("it writes files from values; save the replayed outputs: "
          "np.save(path, graph.replay(inputs)['y'])")
_DATETIME = "datetime arrays are not tensors; compute it before the capture and pass it in"
_MEMORY = "memory layout is not recorded in a graph; compare values instead"

REFUSED: dict[str, str] = {
    # data-dependent output shapes
    # (np.nonzero, np.flatnonzero, np.argwhere, np.extract, np.unique: numpy_api/sized.py,
    # recorded with a size symbol in a capture with example values)
    "np.unique_all": _DATA_SHAPE,
    "np.unique_counts": _DATA_SHAPE, "np.unique_inverse": _DATA_SHAPE,
    "np.unique_values": _DATA_SHAPE, "np.intersect1d": _DATA_SHAPE, "np.union1d": _DATA_SHAPE,
    "np.setdiff1d": _DATA_SHAPE, "np.setxor1d": _DATA_SHAPE, "np.trim_zeros": _DATA_SHAPE,
    "np.roots": _DATA_SHAPE,
    "np.bincount": ("its length is the largest value + 1, which a capture does not have; "
                    "write np.sum(x[..., None] == np.arange(n), axis=-2), the counts of n bins "
                    "where every value is below n (np.bincount(x, minlength=n))"),
    "np.linalg.lstsq": ("its residuals are empty or not depending on the rank of the data; "
                        "write np.linalg.pinv(a) @ b"),
    # data-dependent dtypes (np.emath, np.linalg.eig/eigvals of real tensors and
    # np.real_if_close of complex ones are refused where they are recorded: ops/emath.py,
    # ops/linalg.py, numpy_api/adapters.py)
    "np.min_scalar_type": _DATA_DTYPE,
    # callbacks, files, datetimes, memory
    "np.save": _FILES, "np.savetxt": _FILES, "np.savez": _FILES, "np.savez_compressed": _FILES,
    "np.busday_count": _DATETIME, "np.busday_offset": _DATETIME, "np.is_busday": _DATETIME,
    "np.datetime_as_string": _DATETIME,
    "np.may_share_memory": _MEMORY, "np.shares_memory": _MEMORY,
    "np.polydiv": ("the length of its remainder depends on the values (leading coefficients "
                   "that come out near zero are trimmed); call np.polydiv on the replayed "
                   "outputs, or compute it before the capture and pass it in"),
}
"""Refused function name -> why, and what to write instead."""


def refusal(name: str) -> str:
    """The reason and alternative for a refused function ``name`` (``"np.unique"``); for a
    function that no table knows (a newer NumPy's), the generic advice."""
    return REFUSED.get(name, "not recorded by this version of capviz; compute it before the "
                             "capture or on the replayed outputs")
