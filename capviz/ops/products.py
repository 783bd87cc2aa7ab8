"""Products and sliding sums: einsum, tensordot, outer, inner, kron, vdot, convolve, correlate.

Each shape rule is written from NumPy's documentation and checked against eager NumPy by
tests/test_numpy_coverage.py; dtypes come from one-element proxies.
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from capviz.ops import table as ops
from capviz.ops.elementwise import GUFUNCS
from capviz.ops.spec import FunctionSpec, define
from capviz.ops.table import (
    Op,
    proxy_dtype,
    register,
    rule_error,
    rule_keys,
    shape_of,
)

# --- matmul and dot -----------------------------------------------------------------------------


def _matmul_shape(a: tuple, b: tuple) -> tuple:
    if not a or not b:
        raise ValueError("matmul: input operand does not have enough dimensions")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: core dimension mismatch ({a2[-1]} != {b2[-2]})")
    batch = tuple(np.broadcast_shapes(a2[:-2], b2[:-2]))
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _dot_shape(a: tuple, b: tuple) -> tuple:
    if not a or not b:
        return a or b
    if len(b) == 1:
        if a[-1] != b[0]:
            raise ValueError(f"shapes {a} and {b} not aligned")
        return a[:-1]
    if a[-1] != b[-2]:
        raise ValueError(f"shapes {a} and {b} not aligned")
    return a[:-1] + b[:-2] + b[-1:]


def _product_meta(name: str, shape_rule: Callable, fn: Callable) -> Callable:
    def meta(args: Sequence, params: dict) -> tuple:
        try:  # dtype first: NumPy converts the operands (OverflowError) before shape checks
            dt = proxy_dtype(fn, args, params, rule_keys(name, args))
            shape = shape_rule(shape_of(args[0]), shape_of(args[1]))
        except (ValueError, TypeError, OverflowError) as err:
            raise rule_error(name, args, params, err) from None
        return shape, dt

    return meta


register(Op("matmul", lambda xp: xp.matmul, _product_meta("matmul", _matmul_shape, np.matmul),
            nargs=(2, 2), out=True))
register(Op("dot", lambda xp: xp.dot, _product_meta("dot", _dot_shape, np.dot), nargs=(2, 2)))


# --- NumPy functions ------------------------------------------------------------------------------


def einsum_terms(subscripts: str, shapes: list) -> tuple[list[str], str, dict]:
    """Input terms, output term and label sizes (``...`` spelled as upper-case labels)."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"more operands ({len(shapes)}) than subscripts ({len(terms)})"
                         if len(shapes) > len(terms) else
                         "fewer operands provided to einstein sum function than specified in "
                         "the subscripts string")
    free = [c for c in string.ascii_uppercase + string.ascii_lowercase
            if c not in subscripts]
    widest = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes)
                  if "..." in t), default=0)
    ell = "".join(free[:widest])
    sizes: dict[str, int] = {}
    spelled = []
    for term, shape in zip(terms, shapes):
        if "..." in term:
            n = len(shape) - len(term.replace("...", ""))
            if n < 0:
                raise ValueError("einstein sum subscripts string contains too many subscripts")
            term = term.replace("...", ell[len(ell) - n:] if n else "")
        if len(term) != len(shape):
            raise ValueError("operand has more dimensions than subscripts given in einstein "
                             "sum, but no '...' ellipsis provided to broadcast the extra "
                             "dimensions." if len(shape) > len(term) else
                             "einstein sum subscripts string contains too many subscripts "
                             "for operand")
        for label, d in zip(term, shape):
            seen = sizes.get(label)
            if seen is None or seen == 1 or (label in ell and d == 1):
                sizes[label] = d if seen is None or seen == 1 else seen
            elif seen != d:
                raise ValueError(f"operands could not be broadcast together with remapped "
                                 f"shapes: size of label '{label}' is {seen} and {d}")
        spelled.append(term)
    if arrow:
        out = output.replace("...", ell)
    else:
        labels = "".join(spelled)
        out = ell + "".join(sorted(c for c in set(labels)
                                   if labels.count(c) == 1 and c not in ell))
    return spelled, out, sizes


def einsum_shape(shapes: list, params: dict) -> tuple:
    """Output shape of ``np.einsum(params['subscripts'], *operands)``."""
    _, out, sizes = einsum_terms(params["subscripts"], shapes)
    for label in out:
        if label not in sizes:
            raise ValueError(f"einstein sum subscripts string included output subscript "
                             f"'{label}' which never appeared in an input")
    return tuple(sizes[c] for c in out)


def _tensordot(shapes: list, params: dict) -> tuple:
    a, b = (tuple(s) for s in shapes)
    axes = params.get("axes", 2)
    if isinstance(axes, int):
        ax_a, ax_b = list(range(len(a) - axes, len(a))), list(range(axes))
    else:
        ax_a, ax_b = ([x] if isinstance(x, int) else list(x) for x in axes)
    if len(ax_a) != len(ax_b):
        raise ValueError("shape-mismatch for sum")
    ax_a = [x % len(a) if len(a) else x for x in ax_a]
    ax_b = [x % len(b) if len(b) else x for x in ax_b]
    for i, j in zip(ax_a, ax_b):
        if a[i] != b[j]:
            raise ValueError("shape-mismatch for sum")
    return (tuple(d for i, d in enumerate(a) if i not in ax_a)
            + tuple(d for i, d in enumerate(b) if i not in ax_b))


def _outer(shapes: list, params: dict) -> tuple:
    return (ops.numel(shapes[0]), ops.numel(shapes[1]))


def _linalg_outer(shapes: list, params: dict) -> tuple:
    if len(shapes[0]) != 1 or len(shapes[1]) != 1:
        raise ValueError("Input arrays must be one-dimensional")
    return _outer(shapes, params)


def _inner(shapes: list, params: dict) -> tuple:
    a, b = (tuple(s) for s in shapes)
    if not a or not b:
        return a or b
    if a[-1] != b[-1]:
        raise ValueError(f"shapes {a} and {b} not aligned: {a[-1]} (dim {len(a) - 1}) != "
                         f"{b[-1]} (dim {len(b) - 1})")
    return a[:-1] + b[:-1]


def _kron(shapes: list, params: dict) -> tuple:
    a, b = (tuple(s) for s in shapes)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(x * y for x, y in zip(a, b))


def _vdot(shapes: list, params: dict) -> tuple:
    if ops.numel(shapes[0]) != ops.numel(shapes[1]):
        raise ValueError("cannot reshape array")
    return ()


def _convolve(shapes: list, params: dict) -> tuple:
    a, v = (tuple(s) for s in shapes)
    if len(a) > 1 or len(v) > 1:
        raise ValueError("object too deep for desired array")
    n, m = ops.numel(a), ops.numel(v)
    if n == 0:
        raise ValueError("a cannot be empty")
    if m == 0:
        raise ValueError("v cannot be empty")
    mode = params["mode"]
    if mode not in _CONV_LENGTH:
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    return (_CONV_LENGTH[mode](n, m),)


_CONV_LENGTH = {"full": lambda n, m: n + m - 1, "same": max,
                "valid": lambda n, m: max(n, m) - min(n, m) + 1}


def _correlate(shapes: list, params: dict) -> tuple:
    return _convolve(shapes, {"mode": params.get("mode", "valid")})


def _convolve_full(shapes: list, params: dict) -> tuple:
    return _convolve(shapes, {"mode": params.get("mode", "full")})


def _vecdot(shapes: list, params: dict) -> tuple:
    a, b = (tuple(s) for s in shapes)
    axis = params.get("axis", -1)
    a2 = a[:axis % len(a)] + a[axis % len(a) + 1:] if a else a
    b2 = b[:axis % len(b)] + b[axis % len(b) + 1:] if b else b
    if not a or not b or a[axis] != b[axis]:
        raise ValueError("vecdot: core dimensions do not match")
    return tuple(np.broadcast_shapes(a2, b2))


def _multi_dot(shapes: list, params: dict) -> tuple:
    if len(shapes) < 2:
        raise ValueError("Expecting at least two arrays.")
    first, last = tuple(shapes[0]), tuple(shapes[-1])
    mats = [(1,) + first if len(first) == 1 else first] + [tuple(s) for s in shapes[1:-1]] \
        + [last + (1,) if len(last) == 1 else last]
    for m in mats:
        if len(m) != 2:
            raise ValueError(f"{len(m)}-dimensional array given. Array must be two-dimensional")
    for x, y in itertools.pairwise(mats):
        if x[1] != y[0]:
            raise ValueError(f"shapes {x} and {y} not aligned")
    out = (mats[0][0], mats[-1][1])
    if len(first) == 1:
        out = out[1:]
    if len(last) == 1:
        out = out[:-1]
    return out


def _cross(shapes: list, params: dict) -> tuple:
    a, b = (tuple(s) for s in shapes)
    axisa, axisb = params.get("axisa", params.get("axis", -1)), params.get("axisb",
                                                                           params.get("axis", -1))
    if not a or not b or a[axisa] not in (2, 3) or b[axisb] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 "
                         "or 3)")
    da, db = a[axisa], b[axisb]
    a2 = a[:axisa % len(a)] + a[axisa % len(a) + 1:]
    b2 = b[:axisb % len(b)] + b[axisb % len(b) + 1:]
    batch = tuple(np.broadcast_shapes(a2, b2))
    if da == 2 and db == 2:
        return batch
    out = batch + (3,)
    axisc = params.get("axisc", params.get("axis", -1))
    return tuple(np.moveaxis(np.empty(out, np.dtype([])), -1, axisc).shape)


def _sublist_labels(sublist: Any) -> str:
    """One operand's sublist as subscript labels, as NumPy spells them: 0-25 are A-Z, 26-51
    a-z (so the implicit output's alphabetical order is the numbers' order), ``...`` kept."""
    labels = []
    for item in sublist:
        if item is Ellipsis:
            labels.append("...")
            continue
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
            raise TypeError("each subscript must be either an integer or an ellipsis")
        if not 0 <= item < 52:
            raise ValueError("subscript is not within the valid range [0, 52)")
        labels.append(string.ascii_uppercase[item] if item < 26
                      else string.ascii_lowercase[item - 26])
    return "".join(labels)


def einsum_sublists(args: tuple) -> tuple | None:
    """``np.einsum(a, [0, 1], b, [1, 2], [0, 2])`` (the sublist form) as ``("AB,BC->AC", a,
    b)``; ``None`` when the first argument is the subscripts string."""
    if not args or isinstance(args[0], str):
        return None
    operands, sublists = args[0:len(args) - len(args) % 2:2], args[1::2]
    terms = ",".join(_sublist_labels(sublist) for sublist in sublists)
    if len(args) % 2:  # an output sublist after the last operand's
        terms += "->" + _sublist_labels(args[-1])
    return (terms, *operands)


define(FunctionSpec("einsum", ("*operands",), einsum_shape, leading=("subscripts",),
                    keywords=("dtype", "order", "casting"), other_form=einsum_sublists))
define(FunctionSpec("tensordot", ("a", "b"), _tensordot))
define(FunctionSpec("linalg.tensordot", ("x1", "x2"), _tensordot))
define(FunctionSpec("outer", ("a", "b"), _outer))
define(FunctionSpec("linalg.outer", ("x1", "x2"), _linalg_outer))
define(FunctionSpec("inner", ("a", "b"), _inner))
define(FunctionSpec("kron", ("a", "b"), _kron))
define(FunctionSpec("vdot", ("a", "b"), _vdot))
define(FunctionSpec("convolve", ("a", "v"), _convolve_full))
define(FunctionSpec("correlate", ("a", "v"), _correlate))
define(FunctionSpec("linalg.vecdot", ("x1", "x2"), _vecdot))
define(FunctionSpec("linalg.multi_dot", ("arrays[]",), _multi_dot))
def _cross_dtype(dtypes: list, params: dict) -> np.dtype:
    return np.cross(np.ones(3, dtypes[0]), np.ones(3, dtypes[1])).dtype


define(FunctionSpec("cross", ("a", "b"), _cross, _cross_dtype))
def _linalg_cross(shapes: list, params: dict) -> tuple:
    a, b = (tuple(s) for s in shapes)
    axis = params.get("axis", -1)
    if not a or not b or a[axis] != 3 or b[axis] != 3:
        raise ValueError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but "
                         f"they are {a[axis] if a else 0} and {b[axis] if b else 0} dimensional "
                         "instead.")
    return _cross(shapes, params)


define(FunctionSpec("linalg.cross", ("x1", "x2"), _linalg_cross, _cross_dtype))


# --- the generalized ufuncs vecdot, matvec, vecmat (recorded through __array_ufunc__) ----------


def _core(shape: tuple, n: int, name: str, position: int) -> tuple:
    if len(shape) < n:
        raise ValueError(f"{name}: Input operand {position} does not have enough dimensions "
                         f"(has {len(shape)}, gufunc core with signature requires {n})")
    return shape[:len(shape) - n], shape[len(shape) - n:]


def _gufunc_shape(name: str, a: tuple, b: tuple) -> tuple:
    if name == "vecdot":
        (ba, (n,)), (bb, (m,)) = _core(a, 1, name, 0), _core(b, 1, name, 1)
        out: tuple = ()
    elif name == "matvec":
        (ba, (rows, n)), (bb, (m,)) = _core(a, 2, name, 0), _core(b, 1, name, 1)
        out = (rows,)
    else:  # vecmat
        (ba, (n,)), (bb, (m, cols)) = _core(a, 1, name, 0), _core(b, 2, name, 1)
        out = (cols,)
    if n != m:
        raise ValueError(f"{name}: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature (size {m} is different from {n})")
    return tuple(np.broadcast_shapes(ba, bb)) + out


def _gufunc(name: str) -> None:
    ufunc = getattr(np, name)

    def meta(args: list, params: dict) -> tuple:
        try:
            shape = _gufunc_shape(name, ops.shape_of(args[0]), ops.shape_of(args[1]))
            with np.errstate(all="ignore"):
                dtype = ufunc(*[ops.proxy(a) for a in args]).dtype
        except (ValueError, TypeError) as err:
            raise ops.rule_error(name, args, params, err) from None
        return shape, dtype

    ops.register(ops.Op(name, lambda xp: getattr(xp, name), meta, nargs=(2, 2)))
    GUFUNCS.add(name)


for _name in ("vecdot", "matvec", "vecmat"):
    _gufunc(_name)
