"""``np.cov`` in NumPy's steps (the hostile review 3, finding 23: refused at bind on JAX).

NumPy (``numpy/lib/_function_base_impl.py``), for real or integer ``m`` without ``y``,
weights or ``dtype`` (those stay refused by name: :func:`admitted`):

1. ``X = np.array(m, ndmin=2, dtype=float64)``, in ``m``'s memory order, transposed when
   ``rowvar=False`` (unless it has one row);
2. ``avg = np.average(X, axis=1)``: ``X.mean(axis=1)``, added in NumPy's order for ``m``'s
   layout (pairwise along ``m``'s contiguous axis, row after row along the other one): computed
   here in that order (:func:`capviz.backends.jax.numpy_order.reduce_sum`), NumPy's bits, so
   the centred values ``X - avg[:, None]`` are NumPy's bits too. An F-ordered ``m`` (``x.T``
   of a C-ordered ``x``, an ``np.asfortranarray`` input: :data:`capviz.backends.jax.layouts.F`)
   gives an F-ordered ``X`` (NumPy's copy keeps the order), whose memory is the C-ordered
   ``X.T``: its sums are that array's along the other axis (one row after another where they
   were pairwise); so does a transposed slice (``x[:, :5].T``: NumPy's copy keeps the order
   of its strides, Fortran's). Any other layout (a flipped or broadcast view) is refused at
   the node;
3. ``c = dot(X, X.T.conj())``: a BLAS contraction, its order NumPy's BLAS's: declared as the
   contractions of linear algebra are (:mod:`capviz.backends.contraction_bound`, its ``cov``
   bound), held to it by ``compare`` and the differential harness;
4. ``c *= np.true_divide(1, fact)``, ``fact = n - ddof`` (``ddof`` 1, 0 with ``bias=True``;
   ``fact <= 0`` warns ``Degrees of freedom <= 0 for slice`` and takes 0.0, so the factor is
   ``inf``, with NumPy's division warning), then ``c.squeeze()``.

What XLA flushes where NumPy keeps a subnormal fails at the node: a term of magnitude below
``tiny * 2**(nmant + 1)`` (the mean's partial sums may be subnormal), a mean that is 0 where its
sum is not, a centred value that is 0 where the value is not the mean, a covariance that the
factor made 0 where it was not. An empty operand is NumPy's own result
(:func:`.empty_operands.numpy_of_empty`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends import registry
from capviz.backends.jax import layouts, numpy_order
from capviz.backends.jax.cancellation import _operand_layout
from capviz.backends.jax.functions.empty_operands import empty, numpy_of_empty
from capviz.backends.jax.trace import TRACE, dtype_of, refusal, require_each, warn
from capviz.core.ir import Node

_PARAMS = frozenset(("rowvar", "bias", "ddof", "dtype"))
"""The parameters of ``np.cov`` this form follows (``y``, ``fweights``, ``aweights`` are
operands, and stay refused)."""

_LAYOUT = ("np.cov of an operand NumPy holds neither in C nor in Fortran order (a flipped "
           "or broadcast view): NumPy's mean adds its values in that memory "
           "order, which this replay does not know; replay with backend='numpy'")
_FLUSHED = ("np.cov: {what} is below the float's smallest normal ({tiny:.3g}), where XLA "
            "flushes it to zero and NumPy keeps a subnormal; replay with backend='numpy', or "
            "scale the values up")


def admitted(dtype: Any, ndim: int, params: dict, operands: int) -> bool:
    """Whether ``np.cov`` of one operand of ``dtype`` and ``ndim`` dimensions with ``params``
    is written out here: a real or integer ``m`` of at most two dimensions, no ``y`` or
    weights, no ``dtype`` but float64."""
    dtype = np.dtype(dtype)
    wanted = params.get("dtype")
    return (operands == 1 and ndim <= 2 and (dtype.kind in "biu" or dtype in _REAL)
            and set(params) <= _PARAMS
            and (wanted is None or np.dtype(wanted) == np.float64))


_REAL = frozenset(np.dtype(t) for t in (np.float32, np.float64))


def _cov(jnp: Any) -> Callable:
    def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None,
            fweights: Any = None, aweights: Any = None, dtype: Any = None) -> Any:
        operand, m = m, jnp.asarray(m)
        if not admitted(dtype_of(m), len(m.shape), {"dtype": dtype}, 1) or y is not None \
                or fweights is not None or aweights is not None:
            # refused at bind unless the replay takes arithmetic='xla': jax.numpy's own
            return jnp.cov(m, y, rowvar, bias, ddof, fweights, aweights, dtype=dtype)
        if empty(m):
            return numpy_of_empty(jnp, np.cov, m, rowvar=rowvar, bias=bias, ddof=ddof,
                                  dtype=dtype)
        layout = _layout(operand) if len(m.shape) == 2 else layouts.C
        if layout not in (layouts.C, layouts.STRIDED, layouts.F):
            raise refusal(_LAYOUT)
        x = m.astype(np.float64).reshape((1,) * (2 - len(m.shape)) + tuple(m.shape))
        axis = 1  # the observations' axis of x, C-ordered as NumPy's copy of m
        if not rowvar and x.shape[0] != 1:
            axis = 0
        count = x.shape[axis]
        tiny = float(np.finfo(np.float64).tiny)
        small = tiny * 2.0 ** (np.finfo(np.float64).nmant + 1)
        require_each((x == 0) | ~(jnp.abs(x) < small),
                     _FLUSHED.format(what=f"a value or a partial sum (a value below {small:.3g})",
                                     tiny=tiny))
        if layout == layouts.F:  # the C-ordered x.T's memory, summed along the other axis
            total = numpy_order.reduce_sum(jnp, x.T, 1 - axis)
        else:
            total = numpy_order.reduce_sum(jnp, x, axis)
        mean = numpy_order.mean(jnp, total, count)
        require_each((mean != 0) | (total == 0), _FLUSHED.format(what="a mean", tiny=tiny))
        means = mean.reshape((-1, 1) if axis == 1 else (1, -1))
        centred = x - means
        require_each((centred != 0) | (x == means),
                     _FLUSHED.format(what="a centred value", tiny=tiny))
        rows = centred if axis == 1 else centred.T
        c = jnp.matmul(rows, rows.T)
        scale = _factor(count, bias, ddof)
        result = c * scale
        require_each((result != 0) | (c == 0) | ~np.isfinite(scale),
                     _FLUSHED.format(what="a covariance divided by the degrees of freedom",
                                     tiny=tiny))
        return result.squeeze()

    return cov


def _layout(operand: Any) -> str | None:
    """The layout NumPy gives the operand: the trace's (:mod:`capviz.backends.jax.layouts`), or
    for an op run on its own (``compare``'s steps) the layout of the host array it came from.
    A transpose of a C-ordered or strided 2-d value (a transposed slice, ``x[:, :5].T``) is
    taken as F: NumPy's copy ``np.array(m, ndmin=2, dtype=float64)`` keeps its operand's order
    of strides (``order='K'``), which is Fortran's there, so its sums are those of ``x.T``."""
    if TRACE.get() is not None:
        found = _operand_layout()
        return layouts.F if found is None and _transposed_strided() else found
    # the registered JAX backend, looked up by name (importing its module here would close an
    # import circle: the backend imports this module)
    return registry.get("jax").host_layout(operand)


_SWAPS = frozenset(("transpose", "swapaxes", "moveaxis", "matrix_transpose",
                    "linalg.matrix_transpose"))


def _transposed_strided() -> bool:
    """Whether the traced node's first operand is a 2-d transpose of a value NumPy holds
    C-ordered or strided with its axes in C order (:func:`_layout`)."""
    trace = TRACE.get()
    node = trace.node if trace is not None else None
    if node is None or trace.layouts is None or not node.args:
        return False
    view = node.args[0]
    if not isinstance(view, Node) or view.kind != "op" or view.op not in _SWAPS \
            or view.shape is None or len(view.shape) != 2 or not view.args:
        return False
    source = view.args[0]
    if not isinstance(source, Node) or source.shape is None or len(source.shape) != 2 \
            or any(isinstance(a, Node) for a in view.args[1:]):
        return False
    return trace.layouts.of(source) in (layouts.C, layouts.STRIDED)


def _factor(count: int, bias: bool, ddof: Any) -> np.float64:
    """NumPy's ``np.true_divide(1, fact)`` and its warnings (given at each run)."""
    if ddof is None:
        ddof = 0 if bias else 1
    fact = count - ddof
    if fact <= 0:
        warn(RuntimeWarning, "Degrees of freedom <= 0 for slice")
        fact = 0.0
    settings = {k: "warn" if v == "call" else v for k, v in np.geterr().items()}
    with warnings.catch_warnings(record=True) as caught, np.errstate(**settings):
        warnings.simplefilter("always")
        scale = np.true_divide(1, fact)
    for given in caught:
        warn(given.category, str(given.message))
    return np.float64(scale)


FORMS: dict[str, Callable[[Any], Callable]] = {"cov": _cov}
"""The forms of this module by op name, each written with NumPy's signature."""
