"""Dispatchable NumPy functions capture refuses, each with the reason and the alternative that
its :class:`capviz.UnsupportedOperationError` names (``tensor.__array_function__`` raises it)."""

from __future__ import annotations

_DATA_SHAPE = ("its output shape depends on the values, which a capture does not have; keep the "
               "shape with np.where(mask, x, fill), or take a fixed-size top-k with "
               "np.argpartition(-x, k, axis)[..., :k]")
_DATA_DTYPE = ("its output dtype (real or complex) depends on the values; cast first, e.g. "
               "np.sqrt(x.astype(np.complex128))")
_MUTATES = ("it writes into its argument; write the result to a new tensor, e.g. "
            "a = np.where(mask, values, a)")
_CALLABLE = "it calls back into Python per slice; write the vectorised expression instead"
_FILES = ("it writes files from values; save the replayed outputs: "
          "np.save(path, graph.replay(inputs)['y'])")
_DATETIME = "datetime arrays are not tensors; compute it before the capture and pass it in"
_MEMORY = "memory layout is not recorded in a graph; compare values instead"

REFUSED: dict[str, str] = {
    # data-dependent output shapes
    "np.nonzero": _DATA_SHAPE, "np.argwhere": _DATA_SHAPE, "np.flatnonzero": _DATA_SHAPE,
    "np.extract": _DATA_SHAPE, "np.unique": _DATA_SHAPE, "np.unique_all": _DATA_SHAPE,
    "np.unique_counts": _DATA_SHAPE, "np.unique_inverse": _DATA_SHAPE,
    "np.unique_values": _DATA_SHAPE, "np.intersect1d": _DATA_SHAPE, "np.union1d": _DATA_SHAPE,
    "np.setdiff1d": _DATA_SHAPE, "np.setxor1d": _DATA_SHAPE, "np.trim_zeros": _DATA_SHAPE,
    "np.roots": _DATA_SHAPE,
    "np.bincount": ("its length is the largest value + 1; count into a fixed number of bins "
                    "with np.sum(x[..., None] == np.arange(n), axis=-2)"),
    "np.linalg.lstsq": ("its residuals are empty or not depending on the rank of the data; "
                        "write np.linalg.pinv(a) @ b"),
    # data-dependent dtypes
    "np.real_if_close": _DATA_DTYPE, "np.min_scalar_type": _DATA_DTYPE,
    "np.linalg.eig": ("its dtype (real or complex) depends on the values; for a symmetric "
                      "matrix write np.linalg.eigh(a)"),
    "np.linalg.eigvals": ("its dtype (real or complex) depends on the values; for a symmetric "
                          "matrix write np.linalg.eigvalsh(a)"),
    **{f"np.emath.{name}": _DATA_DTYPE for name in ("arccos", "arcsin", "arctanh", "log",
                                                   "log10", "log2", "logn", "power", "sqrt")},
    # writes into an argument
    "np.fill_diagonal": _MUTATES, "np.putmask": _MUTATES,
    # callbacks, files, datetimes, memory
    "np.apply_along_axis": _CALLABLE, "np.apply_over_axes": _CALLABLE, "np.piecewise":
        "it calls back into Python per piece; write nested np.where(cond, f(x), g(x))",
    "np.save": _FILES, "np.savetxt": _FILES, "np.savez": _FILES, "np.savez_compressed": _FILES,
    "np.busday_count": _DATETIME, "np.busday_offset": _DATETIME, "np.is_busday": _DATETIME,
    "np.datetime_as_string": _DATETIME,
    "np.may_share_memory": _MEMORY, "np.shares_memory": _MEMORY,
    "np.empty_like": ("its values are undefined, so no replay could match them; write "
                      "np.zeros_like(a)"),
    # not recorded (yet): the equivalent in recorded functions
    "np.block": "not recorded; write np.concatenate of np.concatenate calls",
    "np.lexsort": ("not recorded; sort by the last key with np.argsort(..., kind='stable') and "
                   "the earlier keys through np.take_along_axis"),
    "np.gradient": "not recorded; write central differences: (x[2:] - x[:-2]) / 2",
    "np.histogramdd": "not recorded; write np.histogram of a combined index",
    "np.poly": "not recorded; write the product with np.convolve",
    "np.polydiv": "not recorded; compute it before the capture",
    "np.polyder": "not recorded; write p[:-1] * np.arange(len(p) - 1, 0, -1)",
    "np.polyfit": "not recorded; write np.linalg.pinv(np.vander(x, deg + 1)) @ y",
}
"""Refused function name -> why, and what to write instead."""


def refusal(name: str) -> str:
    """The reason and alternative for a refused function ``name`` (``"np.unique"``); for a
    function that no table knows (a newer NumPy's), the generic advice."""
    return REFUSED.get(name, "not recorded by this version of capviz; compute it before the "
                             "capture or on the replayed outputs")
