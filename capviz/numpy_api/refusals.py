"""Dispatchable NumPy functions capture refuses, each with the reason and the alternative that
its :class:`capviz.UnsupportedOperationError` names (``tensor.__array_function__`` raises it)."""

from __future__ import annotations

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
    # data-dependent dtypes (np.emath, np.linalg.eig/eigvals of real tensors and
    # np.real_if_close of complex ones are refused where they are recorded: oplib/emath.py,
    # oplib/linalg.py, numpy_api/adapters.py)
    "np.min_scalar_type": _DATA_DTYPE,
    # callbacks, files, datetimes, memory
    "np.save": _FILES, "np.savetxt": _FILES, "np.savez": _FILES, "np.savez_compressed": _FILES,
    "np.busday_count": _DATETIME, "np.busday_offset": _DATETIME, "np.is_busday": _DATETIME,
    "np.datetime_as_string": _DATETIME,
    "np.may_share_memory": _MEMORY, "np.shares_memory": _MEMORY,
    "np.empty_like": ("its values are undefined, so no replay could match them; write "
                      "np.zeros_like(a)"),
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
