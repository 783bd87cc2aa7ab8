"""Numerical routines with written shape rules: diff, interp, searchsorted, histogram, cov...

Their output shapes depend only on operand shapes and static arguments (a histogram with a fixed
number of bins has a fixed length even though its counts depend on the data).
"""

from __future__ import annotations

import numpy as np

from capviz import ops
from capviz.oplib.base import FunctionSpec, axis_index, define


def _diff(shapes: list, params: dict) -> tuple:
    a, prepend, append = (list(shapes) + [None, None])[:3]
    shape = list(a)
    if not shape:
        raise ValueError("diff requires input that is at least one dimensional")
    n = params.get("n", 1)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    ax = axis_index(params.get("axis", -1), len(shape))
    if n == 0:
        return tuple(shape)
    for extra in (prepend, append):
        if extra is None:
            continue
        if not extra:  # a scalar is broadcast to one slice
            shape[ax] += 1
        elif len(extra) != len(shape) or any(
                e != d for i, (e, d) in enumerate(zip(extra, shape)) if i != ax):
            raise ValueError("all the input array dimensions except for the concatenation "
                             "axis must match exactly")
        else:
            shape[ax] += extra[ax]
    shape[ax] = max(shape[ax] - n, 0)
    return tuple(shape)


def _ediff1d(shapes: list, params: dict) -> tuple:
    size = max(ops.numel(shapes[0]) - 1, 0)
    for key in ("to_begin", "to_end"):
        if params.get(key) is not None:
            size += np.asarray(params[key]).size
    return (size,)


def _of(position: int) -> object:
    def rule(shapes: list, params: dict) -> tuple:
        return tuple(shapes[position])

    return rule


def _searchsorted(shapes: list, params: dict) -> tuple:
    if len(shapes[0]) != 1:
        raise ValueError("object too deep for desired array" if shapes[0]
                         else "object of too small depth for desired array")
    return tuple(shapes[1])


def _interp(shapes: list, params: dict) -> tuple:
    x, xp, fp = (tuple(s) for s in shapes)
    if len(xp) != 1 or len(fp) != 1:
        raise ValueError("object too deep for desired array" if len(xp) > 1 or len(fp) > 1
                         else "object of too small depth for desired array")
    if xp[0] != fp[0]:
        raise ValueError("fp and xp are not of the same length.")
    if xp[0] == 0:
        raise ValueError("array of sample points is empty")
    return x


def _vander(shapes: list, params: dict) -> tuple:
    x = tuple(shapes[0])
    if len(x) != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = params.get("N")
    return (x[0], x[0] if n is None else n)


def _bins(params: dict) -> int:
    bins = params.get("bins", 10)
    if isinstance(bins, str):
        raise ValueError(f"bins={bins!r} chooses the number of bins from the data")
    if isinstance(bins, int):
        if bins < 1:
            raise ValueError("`bins` must be positive, when an integer")
        return bins
    return len(bins) - 1


def _histogram(shapes: list, params: dict) -> list:
    n = _bins(params)
    return [(n,), (n + 1,)]


def _bin_edges(shapes: list, params: dict) -> tuple:
    return (_bins(params) + 1,)


def _variables(shape: tuple, rowvar: bool) -> int:
    if len(shape) > 2:
        raise ValueError("m has more than 2 dimensions")
    rows = (1,) * (2 - len(shape)) + tuple(shape)
    return rows[0] if rowvar or rows[0] == 1 else rows[1]


def _cov(shapes: list, params: dict) -> tuple:
    rowvar = params.get("rowvar", True)
    n = _variables(tuple(shapes[0]), rowvar)
    if len(shapes) > 1 and shapes[1] is not None:
        n += _variables(tuple(shapes[1]), rowvar)
    return () if n == 1 else (n, n)


def _trapezoid(shapes: list, params: dict) -> tuple:
    shape = tuple(shapes[0])
    ax = axis_index(params.get("axis", -1), len(shape))
    return shape[:ax] + shape[ax + 1:]


def _linspace(shapes: list, params: dict) -> tuple:
    num = params.get("num", 50)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    batch = tuple(np.broadcast_shapes(*[s for s in shapes if s is not None]))
    ax = axis_index(params.get("axis", 0), len(batch) + 1)
    return batch[:ax] + (num,) + batch[ax:]


_RETSTEP = "compute the step as (stop - start) / (num - 1)"

define(FunctionSpec("diff", ("a", "prepend", "append"), _diff, "proxy"))
define(FunctionSpec("ediff1d", ("ary",), _ediff1d))
define(FunctionSpec("searchsorted", ("a", "v", "sorter"), _searchsorted, np.intp))
define(FunctionSpec("interp", ("x", "xp", "fp"), _interp))
define(FunctionSpec("digitize", ("x", "bins"), _of(0)))
define(FunctionSpec("isin", ("element", "test_elements"), _of(0)))
define(FunctionSpec("vander", ("x",), _vander, probe={"N": 1}))
define(FunctionSpec("polyval", ("p", "x"), _of(1)))
def _one_bin(params: dict) -> dict:
    """Probe with one bin when ``bins`` is a count (explicit edges set the edges' dtype)."""
    return {**params, "bins": 1} if isinstance(params.get("bins", 10), int) else params


define(FunctionSpec("histogram", ("a", "weights"), _histogram, multi=True, probe=_one_bin))
define(FunctionSpec("histogram_bin_edges", ("a", "weights"), _bin_edges, probe=_one_bin))
define(FunctionSpec("cov", ("m", "y", "fweights", "aweights"), _cov,
                    probe={"ddof": 0, "bias": True}))
define(FunctionSpec("corrcoef", ("x", "y"), _cov,
                    lambda dtypes, params: np.result_type(*dtypes, np.float64)))
define(FunctionSpec("trapezoid", ("y", "x"), _trapezoid))
for _path in ("linspace", "logspace", "geomspace"):
    define(FunctionSpec(_path, ("start", "stop"), _linspace, probe={"num": 2},
                        refuse={"retstep": _RETSTEP} if _path == "linspace" else {}))


def _poly_lengths(shapes: list) -> list[int]:
    for s in shapes:
        if len(s) > 1:
            raise ValueError("polynomial coefficients must be 1-d")
    return [ops.numel(s) for s in shapes]


def _polyadd(shapes: list, params: dict) -> tuple:
    a, b = (tuple(s) or (1,) for s in shapes)
    if a[0] == b[0]:
        return tuple(np.broadcast_shapes(a, b))
    return (max(_poly_lengths(shapes)),)


def _polymul(shapes: list, params: dict) -> tuple:
    n, m = _poly_lengths(shapes)
    return (n + m - 1,)


def _polyint(shapes: list, params: dict) -> tuple:
    m = params.get("m", 1)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    return (_poly_lengths(shapes)[0] + m,)


def _histogram2d(shapes: list, params: dict) -> list:
    bins = params.get("bins", 10)
    if isinstance(bins, int):
        nx = ny = bins
    elif len(bins) == 2 and all(isinstance(b, int) for b in bins):
        nx, ny = bins
    else:
        raise ValueError("np.histogram2d records an integer or a pair of integers as bins")
    return [(nx, ny), (nx + 1,), (ny + 1,)]


define(FunctionSpec("polyadd", ("a1", "a2"), _polyadd))
define(FunctionSpec("polysub", ("a1", "a2"), _polyadd))
define(FunctionSpec("polymul", ("a1", "a2"), _polymul))
define(FunctionSpec("polyint", ("p",), _polyint, probe={"m": 1}))
define(FunctionSpec("histogram2d", ("x", "y", "weights"), _histogram2d, multi=True,
                    probe={"bins": 1}))
