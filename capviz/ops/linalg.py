"""``np.linalg``: inv, solve, det, slogdet, norm, cholesky, qr, svd, eigh, pinv...

A dummy cannot stand for a matrix here (the functions compute), so every shape is a written rule
over the trailing ``(M, N)`` matrix dimensions and the leading batch dimensions; the dtypes come
from one-element proxies (a ``(1, 1)`` matrix of ones is invertible, symmetric and positive
definite, so every function accepts it). ``eig`` and ``eigvals`` of a real matrix are refused
by name: their dtype (real or complex) depends on the values; of a complex matrix they are
recorded.
"""

from __future__ import annotations

import numpy as np

from capviz.ops import table as ops
from capviz.ops.reductions import reduced_shape
from capviz.ops.spec import FunctionSpec, define

_RESULTS = np.linalg._linalg


def _matrix(shape: tuple, square: bool = False) -> tuple:
    if len(shape) < 2:
        raise np.linalg.LinAlgError(f"{len(shape)}-dimensional array given. Array must be at "
                                    "least two-dimensional")
    if square and shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    return shape[:-2], shape[-2], shape[-1]


def _square(shapes: list, params: dict) -> tuple:
    _matrix(tuple(shapes[0]), square=True)
    return tuple(shapes[0])


def _batch(shapes: list, params: dict) -> tuple:
    return _matrix(tuple(shapes[0]), square=True)[0]


def _slogdet(shapes: list, params: dict) -> list:
    batch = _batch(shapes, params)
    return [batch, batch]


def _solve(shapes: list, params: dict) -> tuple:
    a, b = tuple(shapes[0]), tuple(shapes[1])
    batch, m, _ = _matrix(a, square=True)
    if len(b) == 1:
        if b[0] != m:
            raise ValueError("solve: Input operand 1 has a mismatch in its core dimension 0")
        return batch + (m,)
    if len(b) < 2 or b[-2] != m:
        raise ValueError("solve: Input operand 1 has a mismatch in its core dimension 0")
    return tuple(np.broadcast_shapes(batch, b[:-2])) + b[-2:]


def _pinv(shapes: list, params: dict) -> tuple:
    batch, m, n = _matrix(tuple(shapes[0]))
    return batch + (n, m)


def _qr(shapes: list, params: dict) -> list:
    batch, m, n = _matrix(tuple(shapes[0]))
    k = min(m, n)
    mode = params.get("mode", "reduced")
    if mode == "reduced":
        return [batch + (m, k), batch + (k, n)]
    if mode == "complete":
        return [batch + (m, m), batch + (m, n)]
    raise ValueError(f"Unrecognized mode '{mode}'")


def _svd(shapes: list, params: dict) -> list:
    batch, m, n = _matrix(tuple(shapes[0]))
    k = min(m, n)
    if params.get("full_matrices", True):
        return [batch + (m, m), batch + (k,), batch + (n, n)]
    return [batch + (m, k), batch + (k,), batch + (k, n)]


def _singular(shapes: list, params: dict) -> tuple:
    batch, m, n = _matrix(tuple(shapes[0]))
    return batch + (min(m, n),)


def _eigh(shapes: list, params: dict) -> list:
    batch, m, _ = _matrix(tuple(shapes[0]), square=True)
    return [batch + (m,), batch + (m, m)]


def _eigvalsh(shapes: list, params: dict) -> tuple:
    batch, m, _ = _matrix(tuple(shapes[0]), square=True)
    return batch + (m,)


def _norm(shapes: list, params: dict) -> tuple:
    shape = tuple(shapes[0])
    axis = params.get("axis")
    keepdims = params.get("keepdims", False)
    ord_ = params.get("ord")
    if axis is None and ord_ is not None and len(shape) not in (1, 2):
        raise ValueError("Improper number of dimensions to norm.")
    if isinstance(axis, (tuple, list)) and len(axis) not in (1, 2):
        raise ValueError("Improper number of dimensions to norm.")
    return reduced_shape(shape, axis, keepdims)


def _matrix_norm(shapes: list, params: dict) -> tuple:
    _matrix(tuple(shapes[0]))
    return reduced_shape(tuple(shapes[0]), (-2, -1), params.get("keepdims", False))


def _vector_norm(shapes: list, params: dict) -> tuple:
    return reduced_shape(tuple(shapes[0]), params.get("axis"), params.get("keepdims", False))


def _matrix_power(shapes: list, params: dict) -> tuple:
    _matrix(tuple(shapes[0]), square=True)
    return tuple(shapes[0])


def _rank(shapes: list, params: dict) -> tuple:
    shape = tuple(shapes[0])
    return shape[:-2] if len(shape) >= 2 else ()


define(FunctionSpec("linalg.inv", ("a",), _square))
define(FunctionSpec("linalg.cholesky", ("a",), _square))
define(FunctionSpec("linalg.matrix_power", ("a",), _matrix_power))
define(FunctionSpec("linalg.det", ("a",), _batch))
define(FunctionSpec("linalg.slogdet", ("a",), _slogdet, multi=True,
                    container=_RESULTS.SlogdetResult))
define(FunctionSpec("linalg.solve", ("a", "b"), _solve))
define(FunctionSpec("linalg.pinv", ("a",), _pinv))
define(FunctionSpec("linalg.qr", ("a",), _qr, multi=True, container=_RESULTS.QRResult,
                    refuse_values={"mode": {"r": "np.linalg.qr(a).R (the 'r' mode returns one "
                                                 "array)",
                                            "raw": "np.linalg.qr(a) (mode 'reduced')"}}))
define(FunctionSpec("linalg.svd", ("a",), _svd, multi=True, container=_RESULTS.SVDResult,
                    refuse={"compute_uv": "np.linalg.svdvals(a) for the singular values alone"}))
define(FunctionSpec("linalg.svdvals", ("x",), _singular))
define(FunctionSpec("linalg.eigh", ("a",), _eigh, multi=True, container=_RESULTS.EighResult))
define(FunctionSpec("linalg.eigvalsh", ("a",), _eigvalsh))
define(FunctionSpec("linalg.norm", ("x",), _norm))
define(FunctionSpec("linalg.matrix_norm", ("x",), _matrix_norm))
define(FunctionSpec("linalg.vector_norm", ("x",), _vector_norm))
define(FunctionSpec("linalg.matrix_rank", ("A",), _rank))
define(FunctionSpec("linalg.cond", ("x",), _rank))


def _tensorinv(shapes: list, params: dict) -> tuple:
    shape = tuple(shapes[0])
    ind = params.get("ind", 2)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    if ops.numel(shape[:ind]) != ops.numel(shape[ind:]):
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    return shape[ind:] + shape[:ind]


def _tensorsolve(shapes: list, params: dict) -> tuple:
    a, b = tuple(shapes[0]), tuple(shapes[1])
    if params.get("axes") is not None:
        raise ValueError("np.linalg.tensorsolve records axes=None; move the axes first with "
                         "np.moveaxis")
    out = a[-(len(a) - len(b)):]  # NumPy's slice: a's whole shape when b has as many axes
    size = ops.numel(out)
    if ops.numel(a) != size ** 2:
        raise np.linalg.LinAlgError("Input arrays must satisfy the requirement "
                                    "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    if ops.numel(b) != size:  # NumPy's solve of a (size, size) matrix and b raveled
        raise ValueError("solve1: Input operand 1 has a mismatch in its core dimension 0, with "
                         "gufunc signature (m,m),(m)->(m) (size "
                         f"{ops.numel(b)} is different from {size})")
    return out


define(FunctionSpec("linalg.tensorinv", ("a",), _tensorinv))


def _complex_only(eigh: str) -> object:
    """``np.linalg.eig`` / ``eigvals`` are recorded for complex matrices (always complex)."""

    def refuse(operands: list, params: dict) -> tuple[str, str] | None:
        (a,) = operands
        if ops.is_tensor_meta(a) and a.dtype.kind != "c":
            return (f"of a {a.dtype} matrix", f"its dtype (real or complex) depends on the "
                    f"values; for a symmetric matrix write {eigh}, else cast first: "
                    "a.astype(np.complex128)")
        return None

    refuse.__doc__ = ("recorded for complex matrices; a real one is refused (its values would "
                      "decide between a real and a complex result)")
    return refuse


define(FunctionSpec("linalg.eig", ("a",), _eigh, multi=True, container=_RESULTS.EigResult,
                    refuse_if=_complex_only("np.linalg.eigh(a)")))
define(FunctionSpec("linalg.eigvals", ("a",), _eigvalsh,
                    refuse_if=_complex_only("np.linalg.eigvalsh(a)")))
define(FunctionSpec("linalg.tensorsolve", ("a", "b"), _tensorsolve))
