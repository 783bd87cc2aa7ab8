"""Numerical routines with written shape rules: diff, interp, searchsorted, cov, trapezoid...

Their output shapes depend only on operand shapes and static arguments.
"""

from __future__ import annotations

import numpy as np

from capviz.ops import table as ops
from capviz.ops.spec import FunctionSpec, axis_index, define


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
define(FunctionSpec("cov", ("m", "y", "fweights", "aweights"), _cov,
                    probe={"ddof": 0, "bias": True}))
define(FunctionSpec("corrcoef", ("x", "y"), _cov,
                    lambda dtypes, params: np.result_type(*dtypes, np.float64)))
define(FunctionSpec("trapezoid", ("y", "x"), _trapezoid))
for _path in ("linspace", "logspace", "geomspace"):
    define(FunctionSpec(_path, ("start", "stop"), _linspace, probe={"num": 2},
                        refuse={"retstep": _RETSTEP} if _path == "linspace" else {}))

