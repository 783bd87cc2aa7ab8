"""The declared tolerance of a contraction of linear algebra on an engine that adds in its own
order (JAX, Dask): the componentwise bound every order of the sum meets (issue 25).

NumPy's own ``matmul``, ``dot``, ``einsum`` (of two operands or more), ``tensordot``,
``inner``, ``vdot``, ``vecdot``, ``matvec``, ``vecmat`` and ``linalg.multi_dot`` add in its
BLAS's order (OpenBLAS, MKL or Accelerate, blocked by their thread counts and CPU kernels), so
NumPy itself gives other bits on other machines, and no cheap run-time check can say whether
an engine's order agrees with it (``|A| @ |B|`` is a second product of the same size at every
replay). Each contraction is therefore *declared*, not checked: an engine's result ``c`` and
NumPy's ``c_np`` agree within

    |c - c_np| <= 2 * gamma_k * (|A| @ |B|) + 2 * k * m * tiny

componentwise (:func:`bound`). Why it holds: each order computes every output as a sum of
``K`` products of ``m`` factors (``m = 2`` for two operands), so a term goes through at most
``m - 1`` multiplications and ``K - 1`` additions, each rounding to the result type's unit
roundoff ``u`` (a fused multiply-add rounds once where two would round; an accumulation in a
wider type rounds less), and Higham's analysis (*Accuracy and Stability of Numerical
Algorithms*, 2nd ed., section 3.1, lemma 3.1) bounds the result's error from the exact value by
``gamma_k * (|A| @ |B|)``, ``gamma_k = k * u / (1 - k * u)``, with ``k = K + m - 2``; a path
that contracts several operands pairwise (jax.numpy's ``einsum``, ``multi_dot``'s chain) sums
each term through ``sum_i (K_i - 1) <= K - 1`` additions (``prod_i K_i = K``), within the same
``k``. Two results each within it of the exact value are within twice it of each other. A
complex one (the products' four real products and two sums) takes ``sqrt(2) * gamma_(k + 2)``
(Higham, section 3.6). The ``tiny`` term covers an engine that flushes subnormal partial
results to zero (XLA on a CPU): each of a term's ``m`` operations moves it by less than the
type's smallest normal. Where ``k * u >= 1`` no bound holds (an infinite one): a float16
contraction of 2,048 terms or more.

``np.linalg.norm(x)`` with no axis (``ord`` ``None``, ``'fro'`` of a matrix, ``2`` of a vector)
is NumPy's ``sqrt(x.dot(x))`` of the flattened operand (of each part's, added, for complex
values), a BLAS ``dot`` as well (:func:`norm_is_dot`): declared the same way
(:func:`norm_bound`). Its ``n`` squares are never negative, so both sums are within
``gamma_k * S`` of the exact ``S = sum |x|**2`` (``k = n``, ``2 n`` for complex parts), within
``d = 2 gamma_k S`` of each other, and the square roots within ``d / (2 sqrt(S (1 - gamma_k)))``
(``|sqrt a - sqrt b| = |a - b| / (sqrt a + sqrt b)``; ``sqrt(d)`` where that is smaller), plus
each ``sqrt``'s rounding: a gradient-clipping norm of 100,000 float32 values replays, held to
``6e-3`` of the norm (the worst case of two orders; NumPy's own result may be off the exact
one by half that on some machine; on this one, both are within ``1e-7`` of it).

``np.cov(m)`` (without ``y`` or weights) is NumPy's ``dot(X, X.T) * (1 / fact)`` of the centred
rows ``X``: declared too (:func:`cov_bound`), the bound of that contraction of ``X`` as NumPy
centres it (an engine that follows NumPy's order for the mean, as JAX's does, centres it to
the same bits), times the factor, plus the factor's rounding on each side.

``|A| @ |B|`` (:func:`magnitudes`) is the same contraction of the operands' magnitudes, in
float64, computed by NumPy when a value is compared (``graph.compare``, the differential
harness), never at replay time. Where NumPy's result is not finite the engine's must be the same
value (an overflow in one order and not in another differs). A contraction written with one
operand (``np.einsum("ij->j", x)``) is a sum, checked at run time as sums are
(:data:`CONTRACTIONS` leaves it out).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from capviz import ops
from capviz.core.ir import Node
from capviz.ops.products import einsum_terms

CONTRACTIONS = frozenset(("matmul", "dot", "vdot", "einsum", "tensordot", "linalg.tensordot",
                          "inner", "vecdot", "linalg.vecdot", "matvec", "vecmat",
                          "linalg.multi_dot"))
"""The contractions of linear algebra held to :func:`bound` (an ``einsum`` of one operand is a
sum: :func:`is_contraction`)."""

_MAGNITUDE_DROPS = ("dtype", "casting", "out")
"""Parameters the magnitudes' contraction leaves out: it runs in float64."""


def is_contraction(name: str, operands: int) -> bool:
    """Whether the op ``name`` of ``operands`` tensor operands is a contraction held to
    :func:`bound` (an ``einsum`` of one operand is a checked sum)."""
    return name in CONTRACTIONS and not (name == "einsum" and operands < 2)


def is_contraction_node(node: Node) -> bool:
    """Whether graph node ``node`` is a contraction held to :func:`bound` (a norm NumPy takes
    from its BLAS ``dot`` included: :func:`norm_is_dot`)."""
    if node.kind != "op":
        return False
    if node.op == COV:
        return len([a for a in node.args if a is not None]) == 1 and isinstance(
            node.args[0], Node)
    if node.op == NORM:
        operand = node.args[0] if node.args else None
        return isinstance(operand, Node) and operand.shape is not None and norm_is_dot(
            node.params, len(operand.shape))
    tensors = sum(isinstance(a, Node) for a in node.args)
    return is_contraction(node.op, tensors)


NORM = "linalg.norm"
COV = "cov"


def cov_rows(m: Any, params: dict) -> tuple[np.ndarray, float]:
    """NumPy's centred rows of ``np.cov(m, **params)`` (float64, as NumPy computes them) and
    its factor ``1 / fact`` (``inf`` where ``fact <= 0``)."""
    x = np.array(m, ndmin=2, dtype=np.float64)
    if not params.get("rowvar", True) and x.shape[0] != 1:
        x = x.T
    ddof = params.get("ddof")
    if ddof is None:
        ddof = 0 if params.get("bias", False) else 1
    fact = x.shape[1] - ddof
    with np.errstate(all="ignore"):
        scale = float(np.true_divide(1, fact if fact > 0 else 0.0))
        centred = x - np.average(x, axis=1)[:, None]
    return centred, scale


def cov_bound(m: Any, params: dict) -> np.ndarray:
    """The bound of the module docstring on ``|c - c_np|`` for ``np.cov(m, **params)`` (a
    float64 array of the result's shape)."""
    rows, scale = cov_rows(m, params)
    k = max(rows.shape[1], 1)
    u = float(np.finfo(np.float64).eps) / 2
    g = gamma(k, np.float64)
    with np.errstate(all="ignore"):
        size = np.abs(rows) @ np.abs(rows).T / (1 - gamma(k + 2, np.float64)) * abs(scale)
        floor = 2 * k * 2 * float(np.finfo(np.float64).tiny) * abs(scale)
        return np.asarray(2 * g * size + 2 * u * (1 + 2 * g) * size + floor).squeeze()


def norm_is_dot(params: dict, ndim: int) -> bool:
    """Whether ``np.linalg.norm(x, **params)`` of an ``ndim``-d operand is NumPy's
    ``sqrt(x.dot(x))`` of the flattened operand (``numpy/linalg/_linalg.py``'s fast path): no
    axis, and ``ord`` ``None``, ``'fro'``/``'f'`` of a matrix or ``2`` of a vector."""
    if params.get("axis") is not None:
        return False
    ord_ = params.get("ord")
    if ord_ is None:
        return True
    if isinstance(ord_, str):
        return ord_ in ("f", "fro") and ndim == 2
    return ord_ == 2 and ndim == 1


def norm_bound(x: Any, dtype: Any) -> np.ndarray:
    """The bound of the module docstring on ``|n - n_np|`` for ``np.linalg.norm(x)`` NumPy
    takes from its BLAS ``dot`` (:func:`norm_is_dot`), ``x`` the operand (a host array), the
    result of ``dtype``: a float64 0-d array."""
    real = np.dtype(np.dtype(dtype).type(0).real.dtype)
    x = np.asarray(x)
    count = max(x.size, 1)
    k = 2 * count if x.dtype.kind == "c" else count
    g = gamma(k, real)
    with np.errstate(all="ignore"):
        parts = (x.real, x.imag) if x.dtype.kind == "c" else (x,)
        total = sum(float(np.sum(np.square(p.astype(np.float64)))) for p in parts)
        total /= 1 - gamma(k + 2, np.float64)  # the float64 sum's own roundings
        # each square NumPy or XLA flushed or made subnormal: below tiny each, 2 per term
        d = 2 * g * total + 2 * k * 2 * float(np.finfo(real).tiny)
        low = total * (1 - g) if g < 1 else 0.0
        apart = math.sqrt(d) if low <= 0 else min(math.sqrt(d), d / (2 * math.sqrt(low)))
        rounding = 2 * float(np.finfo(real).eps) / 2 * math.sqrt(total * (1 + g))
        return np.asarray(apart + rounding, dtype=np.float64)


def _axis_length(shape: tuple, axis: int) -> int:
    return int(shape[operator.index(axis) % len(shape)]) if shape else 1


def terms(name: str, shapes: Sequence[tuple], params: dict) -> int:
    """``K``: how many products each output of contraction ``name`` adds, for operands of
    ``shapes``."""
    a = tuple(shapes[0])
    b = tuple(shapes[1]) if len(shapes) > 1 else ()
    if name in ("matmul", "matvec", "vecmat"):
        return _axis_length(a, -1)
    if name in ("dot", "inner"):
        return 1 if not a or not b else _axis_length(a, -1)
    if name == "vdot":
        return max(math.prod(a), 1)
    if name in ("vecdot", "linalg.vecdot"):
        axis = params.get("axis", -1)
        return max(_axis_length(a, axis), _axis_length(b, axis))
    if name in ("tensordot", "linalg.tensordot"):
        axes = params.get("axes", 2)
        if isinstance(axes, int):
            mine = range(len(a) - axes, len(a))
        else:
            first = axes[0]
            mine = (first,) if isinstance(first, int) else first
        return max(math.prod(_axis_length(a, k) for k in mine), 1)
    if name == "linalg.multi_dot":  # the inner sizes of the chain, multiplied
        inner = [tuple(s)[-1] if len(s) else 1 for s in shapes[:-1]]
        return max(math.prod(int(n) for n in inner), 1)
    if name == "einsum":
        labels, out, sizes = einsum_terms(params["subscripts"], [tuple(s) for s in shapes])
        summed = set("".join(labels)) - set(out)
        return max(math.prod(int(sizes[k]) for k in summed), 1)
    raise ValueError(f"{name} is not a contraction of linear algebra")


def gamma(k: int, dtype: Any) -> float:
    """``gamma_k = k * u / (1 - k * u)`` for the unit roundoff ``u`` of ``dtype``'s real type
    (``inf`` where ``k * u >= 1``)."""
    u = float(np.finfo(np.dtype(dtype)).eps) / 2
    return k * u / (1 - k * u) if k * u < 1 else math.inf


def magnitudes(name: str, operands: Sequence[Any], params: dict) -> np.ndarray:
    """``|A| @ |B|``: contraction ``name`` of the operands' magnitudes, in float64 (a complex
    operand's moduli), by NumPy."""
    absolute = [np.abs(np.asarray(x).astype(np.complex128 if np.iscomplexobj(x)
                                           else np.float64)) for x in operands]
    kept = {k: v for k, v in params.items() if k not in _MAGNITUDE_DROPS}
    with np.errstate(all="ignore"):
        return np.asarray(ops.get(name).bind(np)(*absolute, **kept), dtype=np.float64)


def bound(name: str, operands: Sequence[Any], params: dict, dtype: Any) -> np.ndarray | None:
    """The componentwise bound of the module docstring on ``|c - c_np|`` for contraction
    ``name`` of ``operands`` (host arrays) with a result of ``dtype``: a float64 array of the
    result's shape, or ``None`` where nothing bounds it here (an integer or boolean result:
    exact in every order; an op that is not a contraction)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" and name == COV and len(operands) == 1:
        return cov_bound(operands[0], params) if np.size(operands[0]) else None
    if dtype.kind in "fc" and name == NORM and len(operands) == 1:
        if not norm_is_dot(params, np.ndim(operands[0])):
            return None
        limit = norm_bound(operands[0], dtype)
        return limit.reshape((1,) * np.ndim(operands[0])) if params.get("keepdims") else limit
    if dtype.kind not in "fc" or not is_contraction(name, len(operands)):
        return None
    real = np.dtype(dtype.type(0).real.dtype)
    count = terms(name, [np.shape(x) for x in operands], params)
    m = max(len(operands), 2)
    k = count + m - 2
    g = math.sqrt(2) * gamma(k + 2, real) if dtype.kind == "c" else gamma(k, real)
    size = magnitudes(name, operands, params)
    # the magnitudes' own float64 roundings: NumPy's float64 contraction of them is within
    # gamma_k (float64) of the exact |A| @ |B|, from below at worst
    size = size / (1 - gamma(k + 2, np.float64))
    floor = 2 * count * m * float(np.finfo(real).tiny)
    with np.errstate(all="ignore"):
        return 2 * g * size + floor


def apart(mine: Any, ref: Any) -> np.ndarray:
    """``|mine - ref|`` in float64 (moduli of complex values), 0 where both are the same value
    (the same infinity, NaN on both sides)."""
    m, r = np.asarray(mine), np.asarray(ref)
    wide = np.complex128 if np.iscomplexobj(m) or np.iscomplexobj(r) else np.float64
    m, r = m.astype(wide), r.astype(wide)
    with np.errstate(all="ignore"):
        gap = np.abs(m - r).astype(np.float64)
        same = (m == r) | (np.isnan(m) & np.isnan(r))
    return np.where(same, 0.0, gap)


def perturbed(name: str, mine: Sequence[Any], ref: Sequence[Any], params: dict,
              dtype: Any) -> np.ndarray | None:
    """The bound on ``|c - c_np|`` where the engine's operands ``mine`` are not NumPy's
    ``ref`` (each run computed them, within their own nodes' tolerance): each side's rounding
    (:func:`bound` of its own operands, half of it each) plus what the operands' differences
    move the exact result by. A contraction is linear in each operand, so ``C(M) - C(R)`` is
    the sum over ``i`` of ``C(R_1..R_(i-1), M_i - R_i, M_(i+1)..M_m)``, bounded by the same
    contraction of the magnitudes; ``np.linalg.norm`` moves by at most ``norm(M - R)``.
    ``None`` where nothing bounds it here (``np.cov``, quadratic in its operand: the flat
    tolerance applies)."""
    if name == COV:
        return None
    own = [bound(name, ops_, params, dtype) for ops_ in (mine, ref)]
    if own[0] is None or own[1] is None:
        return None
    gaps = [apart(m, r) for m, r in zip(mine, ref)]
    with np.errstate(all="ignore"):
        if name == NORM:
            moved = np.sqrt(np.sum(np.square(gaps[0])))
        else:
            moved = sum(magnitudes(name, [*ref[:i], gaps[i], *mine[i + 1:]], params)
                        for i in range(len(gaps)))
        count = terms(name, [np.shape(x) for x in ref], params) if name != NORM else 1
        moved = moved / (1 - gamma(count + 2, np.float64))  # its own float64 roundings
        return (own[0] + own[1]) / 2 + moved


def outside(got: Any, want: Any, limit: np.ndarray) -> np.ndarray:
    """Elementwise: where ``got`` (an engine's contraction) is not within ``limit``
    (:func:`bound`) of ``want`` (NumPy's). The same value (infinities, NaN where NumPy's is
    NaN) is within; a value not finite on either side is within only where it is the same."""
    got = np.asarray(got)
    want = np.asarray(want)
    wide = np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(want) else np.float64
    g, w = got.astype(wide), want.astype(wide)
    parts = (np.real, np.imag) if wide is np.complex128 else (np.asarray,)
    same = np.ones(np.broadcast_shapes(g.shape, w.shape), dtype=bool)
    finite = same.copy()
    for part in parts:
        gp, wp = part(g), part(w)
        same &= (gp == wp) | (np.isnan(gp) & np.isnan(wp))
        finite &= np.isfinite(gp) & np.isfinite(wp)
    with np.errstate(all="ignore"):
        near = finite & (np.abs(g - w) <= limit)
    return ~(same | near)
