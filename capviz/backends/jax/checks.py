"""Value checks of the JAX backend for the classes of values where XLA's arithmetic is not
NumPy's and no functional form computes NumPy's (issue 25; ``docs/guide/replay.md``, "Where
JAX's arithmetic differs from NumPy's"). Each check is a flag of the traced function
(:func:`capviz.backends.jax.trace.require`): the replay fails at the node, with the user's line,
instead of returning a different value.

* **Complex special values.** XLA's complex arithmetic does not follow C99's Annex G as
  NumPy's does: a ``complex64`` product of infinities is ``inf+infj`` in XLA and
  ``inf-infj`` in NumPy; ``log1p`` of a complex with a real part near ``finfo.max`` is ``89.07``
  in XLA and ``inf`` in NumPy; ``sign`` of a complex whose magnitude overflows is ``nan+nanj``
  in XLA and ``1j`` in NumPy. So every complex operand and result of an op that computes must
  be finite with real and imaginary parts below ``sqrt(finfo.max)`` (where both compute
  without overflow); moves (:data:`MOVES`) and ops on the parts apart (:data:`COMPONENTWISE`)
  are not checked, nor a product's result (:data:`PLAIN_RESULT`). The checks are elementwise
  (:func:`capviz.backends.jax.trace.require_each`): merged into one mask per shape that XLA
  fuses into the computation (``benchmarks/engine_checks.py``: 2.4x a bare ``jax.jit`` on a
  40-op complex64 chain, against 21x with a reduction per value).
* **Infinities in convolutions** (:data:`NONFINITE_SPREAD`).
* **Contractions near overflow** (:func:`_overflow_free`). NumPy's BLAS and XLA add a
  contraction's products in other orders (and fuse a product into an add or not), so a partial
  sum near ``finfo.max`` overflows in one and not the other: ``inf`` against NumPy's
  ``1.3e308``, NaN (``inf - inf``) against its ``-inf``. A float32, float64, complex64 or
  complex128 contraction of ``K >= 2`` products (:func:`capviz.backends.contraction_bound.
  terms`) must have ``K * max|A| * max|B| <= finfo.max / 4`` (the largest finite magnitudes of
  the operands' parts; ``2 K`` for complex parts): then no product or partial sum reaches
  ``finfo.max`` in any order, an infinity or NaN of an operand gives the same infinity or NaN in
  every order, and the declared bound of :mod:`capviz.backends.contraction_bound` is finite.
  A float16 ``einsum`` (NumPy rounds its partial sums to float16 as it adds, XLA adds in
  float32) must have each output's ``(|A| @ |B|) * (1 + gamma_K)`` below 65504
  (:func:`_float16_einsum`); NumPy's other float16 contractions add in float32.
* **Subnormals made inside the graph**: :mod:`capviz.backends.jax.subnormals`.
* **float16 overflow in reductions and products.** NumPy accumulates a float16 ``std``,
  ``var``, ``mean`` or ``polymul`` in float16 or float32 and rounds to an infinity where XLA's
  other order of operations gives NaN: a float16 result of those ops that is not finite, from
  finite operands, fails the replay.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends import contraction_bound
from capviz.backends.jax import subnormals
from capviz.backends.jax.poison import PROPAGATES
from capviz.backends.jax.subnormals.operands import operand_magnitudes
from capviz.backends.jax.trace import (
    dtype_of,
    poisoned,
    precise,
    refusal,
    require,
    require_each,
)
from capviz.ops import traits

FLOAT16_OVERFLOW = frozenset((*traits.REDUCE, *traits.CONTRACT, *traits.ACCUMULATES,
                              "polymul", "polyval", "convolve", "correlate", "kron", "inner",
                              "outer", "vecdot", "linalg.vecdot", "matvec", "vecmat", "cov",
                              "corrcoef", "average", "linalg.multi_dot", "polyfit", "trapezoid"))
"""Ops whose float16 result NumPy accumulates otherwise than XLA (NaN against NumPy's inf)."""

NUMPY_STEPS_FLOAT16 = frozenset(("median", "nanmedian"))
"""Reductions of :data:`FLOAT16_OVERFLOW` computed in NumPy's own steps and types
(:mod:`capviz.backends.jax.functions.empty_operands`), an overflow included (``np.nanmedian``
along a short axis adds its two middle float16 values in float16: inf at 65504, as NumPy's):
not checked."""

NONFINITE_SPREAD = frozenset(("convolve", "correlate", "polymul"))
"""Ops XLA runs as a convolution over zero padding: an infinity or NaN of an operand reaches
every result element (``0 * nan``), where NumPy's sliding sums leave the elements it does not
touch finite. Their float operands must be finite, as those of every ``fft.*`` op (XLA's and
pocketfft's butterflies spread an infinity into other NaN patterns)."""

FINITE_OPERANDS = frozenset(("linalg.pinv", "linalg.svdvals", "linalg.matrix_rank",
                             "linalg.cond", "linalg.eigvalsh", "linalg.cholesky",
                             "linalg.matrix_norm"))
"""Ops NumPy runs in LAPACK, which raises LinAlgError on an infinity or NaN (SVD did not
converge...), where XLA returns NaNs: their float operands must be finite."""

ORDER_STATISTICS = frozenset(("median", "nanmedian", "percentile", "quantile", "nanpercentile",
                              "nanquantile"))
"""Ops that interpolate between sorted values: an infinity among them gives NumPy's NaN
(``b - (b - a) * (1 - t)``) where XLA's formula gives an infinity; their float operands must
hold no infinity, and complex ones are refused (jax.numpy has no complex quantiles)."""

COMPLEX_REFUSED = frozenset(("interp", "clip"))
"""Ops jax.numpy refuses for complex values (NumPy computes them)."""

NOT_EMPTY = frozenset(("linalg.cond", "histogram_bin_edges"))
"""Ops jax.numpy refuses on an empty operand (NumPy raises its own error or computes)."""

_INFINITY = ("an operand of {op} holds an infinity: NumPy's interpolation between sorted "
             "values gives NaN next to it where XLA's gives an infinity; replay with "
             "backend='numpy', or np.nan_to_num the operand first")
_LAPACK = ("an operand of {op} holds an infinity or NaN: NumPy's LAPACK fails on it "
           "(LinAlgError) where XLA returns NaNs; replay with backend='numpy', or check the "
           "values first")
_SPREAD = ("an operand of {op} holds an infinity or NaN: XLA's convolution multiplies it by "
           "its zero padding and spreads NaN to every element, where NumPy's sums leave the "
           "others finite; replay with backend='numpy', or np.nan_to_num the operands first")
_COMPLEX = ("a complex {what} is not finite, or its real or imaginary part reaches "
            "sqrt(finfo.max): XLA's complex arithmetic gives other values than NumPy's for "
            "infinities, NaNs and overflowing magnitudes (C99's rules, which NumPy follows); "
            "replay with backend='numpy', or keep complex values finite and moderate")
_NEAR_MAX = ("a sum of products of {op} may reach finfo.max ({k} terms times the operands' "
             "largest magnitudes): NumPy's BLAS and XLA add in other orders, so which partial "
             "sums overflow differs (inf against a finite value, NaN against -inf); replay with "
             "backend='numpy', or scale the operands down")
_FLOAT16_EINSUM = ("a float16 partial sum of einsum may pass 65504: NumPy rounds einsum's float16 "
                   "partial sums as it adds (inf there) where XLA adds in float32; replay with "
                   "backend='numpy', or compute in float32 (x.astype(np.float32))")
_FLOAT16 = ("a float16 result of {op} overflowed: NumPy's float16 accumulation rounds it to "
            "an infinity where XLA's order of operations gives NaN; replay with "
            "backend='numpy', or compute in float32 (dtype=np.float32)")


def _arrays(value: Any) -> list:
    if isinstance(value, (tuple, list)):
        return [a for item in value for a in _arrays(item)]
    return [value] if hasattr(value, "dtype") and hasattr(value, "shape") else []


MOVES = frozenset((*(traits.MOVE - {"outer", "linalg.outer", "ufunc_outer"}), *traits.SPLIT,
                   *traits.GATHER, "unpack", "copy", "real", "imag", "conjugate", "negative",
                   "positive", "where", "astype", "view", "select", "choose", "setitem",
                   "index_put", "put", "put_along_axis", "take_along_axis", "compress",
                   "append", "insert", "delete", "pad", "diag", "diagflat"))
"""Ops that move, select or negate complex values without computing new ones: XLA gives
NumPy's values whatever they are, so their complex operands and results are not checked (an
operand a computing op reads is checked there)."""

COMPONENTWISE = frozenset(("add", "subtract", "sum", "nansum", "cumsum", "nancumsum", "isnan",
                           "isinf", "isfinite", "equal", "not_equal"))
"""Complex ops computing the real and imaginary parts apart, with the float arithmetic of each
(IEEE's in XLA and NumPy alike, infinities and NaNs included): not checked."""

PLAIN_RESULT = frozenset(("multiply",))
"""Complex ops whose result XLA computes with NumPy's formula from operands the check passed
(``(ac - bd) + (ad + bc)j``: with parts below ``sqrt(finfo.max)`` no product overflows, and a
sum that does is an infinity in both): their operands are checked, not their result, which an
op reading it checks as its operand."""


def _complex_ok(jnp: Any, x: Any) -> Any:
    """Elementwise: complex ``x`` finite, with parts below ``sqrt(finfo.max)``."""
    bound = np.sqrt(np.finfo(np.dtype(x.dtype)).max)
    return (jnp.abs(jnp.real(x)) < bound) & (jnp.abs(jnp.imag(x)) < bound)


def _weights_sum(jnp: Any, a: Any, w: Any, axis: Any) -> None:
    """np.average's ZeroDivisionError: weights summing to 0 (jax.numpy divides)."""
    total = w.sum(axis=axis) if len(w.shape) == len(a.shape) else w.sum()
    require(jnp.all(total != 0), "ZeroDivisionError: Weights sum to zero, can't be normalized "
            "(NumPy raises)")


def _largest(jnp: Any, a: Any) -> Any:
    """The largest finite magnitude of ``a``'s values (of a complex ``a``, of its parts), 0 where
    there is none; a constant's measured once on the host."""
    known = operand_magnitudes(a)
    if known is not None:  # a complex constant's modulus: at least its parts' magnitudes
        return known[1]
    parts = (jnp.real(a), jnp.imag(a)) if dtype_of(a).kind == "c" else (a,)
    largest = [jnp.max(jnp.where(jnp.isfinite(p), jnp.abs(p), 0), initial=0) for p in parts]
    return largest[0] if len(largest) == 1 else jnp.maximum(*largest)


def _within(jnp: Any, a: Any, threshold: float) -> Any:
    """Elementwise: each finite value of ``a`` (each part of a complex one) at most
    ``threshold``."""
    parts = (jnp.real(a), jnp.imag(a)) if dtype_of(a).kind == "c" else (a,)
    ok = [(jnp.abs(p) <= threshold) | ~jnp.isfinite(p) for p in parts]
    return ok[0] if len(ok) == 1 else ok[0] & ok[1]


def _float16_einsum(jnp: Any, name: str, operands: list, params: dict) -> None:
    """NumPy's float16 ``einsum`` rounds its partial sums to float16 as it goes, where XLA adds
    in float32: a partial sum past 65504 is ``inf`` in NumPy and not in XLA (the review 7,
    finding 15). Fail unless each output's ``(|A| @ |B|) * (1 + gamma_K)`` (the operands' finite
    magnitudes contracted in float32), which bounds its partial sums in every order, is below
    ``finfo(float16).max``. Past ``K * u >= 1`` no bound holds (none is declared either)."""
    count = contraction_bound.terms(name, [tuple(a.shape) for a in operands], params)
    growth = 1 + contraction_bound.gamma(count + 1, np.float16)
    if count < 2 or not math.isfinite(growth):
        return
    magnitudes = [jnp.where(jnp.isfinite(a), jnp.abs(a), 0).astype(np.float32)
                  for a in operands]
    sizes = jnp.einsum(params["subscripts"], *magnitudes)
    require(jnp.max(sizes, initial=0) * growth <= float(np.finfo(np.float16).max),
            _FLOAT16_EINSUM)


def _overflow_free(jnp: Any, name: str, operands: list, result: Any,
                   params: dict) -> dict[int, Any]:
    """Fail unless no product or partial sum of contraction ``name`` can reach ``finfo.max`` in
    any order (the module docstring's *Contractions near overflow*). The precise trace tests
    ``K * max|A| * max|B|`` (a reduction of each computed operand); the fast one, each computed
    operand's values elementwise against its share of the limit (after a constant's largest
    magnitude, measured on the host), which fails wherever the exact test does (a failure
    reruns the precise program). There a real float operand of an op that carries a NaN to
    every result element it reads (:data:`capviz.backends.jax.poison.PROPAGATES`) is poisoned
    where its test fails (NaN, an elementwise select XLA fuses into the operand's producer,
    :func:`capviz.backends.jax.trace.poisoned`): each result element that reads a value past its
    share is then NaN, and the NaN reruns the precise program where it leaves; the others
    (complex, ``multi_dot``) are and-ed into the merged masks. Returns the poisoned operands
    by the id of the operand each replaces (the op is to be run on them)."""
    result_dtype = np.dtype(dtype_of(result))
    if result_dtype == np.float16:
        if name == "einsum":
            _float16_einsum(jnp, name, operands, params)
        return {}  # NumPy's other float16 contractions add in float32: the float16 check
    if result_dtype.kind not in "fc":
        return {}
    count = contraction_bound.terms(name, [tuple(a.shape) for a in operands], params)
    count *= 2 if result_dtype.kind == "c" else 1  # a part adds two real products per term
    if count < 2:  # one product: the same rounding, the same overflow, in every order
        return {}
    real = np.dtype(result_dtype.type(0).real.dtype)
    limit = float(np.finfo(real).max) / 4 / count
    message = _NEAR_MAX.format(op=name, k=count)
    known = [operand_magnitudes(a) for a in operands]
    computed = [a for a, k in zip(operands, known) if k is None]
    fixed = math.prod(float(k[1]) for k in known if k is not None)
    if not computed:
        require(jnp.asarray(fixed <= limit), message)
        return {}
    if precise():
        total = jnp.asarray(float(count) * fixed, real)
        for a in computed:
            total = total * jnp.asarray(_largest(jnp, a)).astype(real)
        require(total <= np.finfo(real).max / 4, message)
        return {}
    if fixed == 0:  # a zero constant: every product 0 (or NaN in every order)
        return {}
    # each computed operand's share, rounded down a little (float rounding of the threshold)
    share = (limit / fixed) ** (1 / len(computed)) * (1 - 1e-6)
    carries = result_dtype.kind == "f" and name in PROPAGATES and PROPAGATES[name] is None
    replaced = {}
    for a in computed:
        ok = _within(jnp, a, share)
        if carries and dtype_of(a).kind == "f" and tuple(ok.shape) == tuple(a.shape):
            replaced[id(a)] = poisoned(a, ok, message, operand=True)
        else:
            require_each(ok, message)
    return replaced


def _one_term(name: str, operands: list) -> bool:
    """A real ``convolve`` or ``correlate`` with an operand of one value: each result element
    one product (:func:`capviz.backends.jax.functions.polynomials.one_term`), which XLA computes
    as NumPy does for an infinity or NaN too (``inf * 0`` is NaN in both); no padding spreads
    it."""
    return name in ("convolve", "correlate") and len(operands) == 2 \
        and any(math.prod(a.shape) == 1 for a in operands) \
        and all(dtype_of(a).kind == "f" for a in operands)


def checked(name: str, jnp: Any, fn: Callable) -> Callable:
    """``fn`` (the op ``name`` on jax.numpy) with the value checks of this module."""
    float16 = name in FLOAT16_OVERFLOW and name not in NUMPY_STEPS_FLOAT16
    transform = name.startswith("fft.") and not name.endswith(("shift", "freq"))
    spread = name in NONFINITE_SPREAD or transform
    finite = name in FINITE_OPERANDS
    computes = name not in MOVES and name not in COMPONENTWISE
    plain_result = name in PLAIN_RESULT

    def run(*args: Any, **params: Any) -> Any:
        operands = [a for a in args if hasattr(a, "dtype") and not isinstance(a, np.generic)]
        if (spread or finite) and not _one_term(name, operands):
            for a in operands:
                if dtype_of(a).kind in "fc":
                    require(jnp.all(jnp.isfinite(a)),
                            (_SPREAD if spread else _LAPACK).format(op=name))
        if transform and any(dtype_of(a) == np.float16 for a in operands):
            raise refusal(
                f"np.{name} of float16: NumPy computes the transform's scale factor (1/n) in "
                "float16 and applies it to the float32 transform, which XLA does not; replay "
                "with backend='numpy', or transform x.astype(np.float32)")
        if name in COMPLEX_REFUSED and any(dtype_of(a).kind == "c" for a in operands):
            raise refusal(f"jax.numpy's {name} takes no complex values; replay with "
                          "backend='numpy'")
        if name == "average" and len(operands) > 1:
            _weights_sum(jnp, operands[0], operands[1], params.get("axis"))
        if name in ORDER_STATISTICS:
            for a in operands:
                if dtype_of(a).kind == "c":
                    raise refusal(f"jax.numpy's {name} takes no complex values; replay "
                                  "with backend='numpy'")
                if dtype_of(a).kind == "f":
                    require(~jnp.any(jnp.isinf(a)), _INFINITY.format(op=name))
        if name in NOT_EMPTY and any(not math.prod(a.shape) for a in operands):
            raise refusal(f"jax.numpy's {name} takes no empty array; replay with "
                          "backend='numpy'")
        result = fn(*args, **params)
        if contraction_bound.is_contraction(name, len(operands)) and operands:
            replaced = _overflow_free(jnp, name, operands, result, params)
            if replaced:  # the op run again on its poisoned operands (XLA drops the first)
                args = tuple(replaced.get(id(a), a) for a in args)
                operands = [replaced.get(id(a), a) for a in operands]
                result = fn(*args, **params)
        if computes:
            values = operands if plain_result else (*operands, *_arrays(result))
            for value in values:
                if dtype_of(value).kind == "c":
                    require_each(_complex_ok(jnp, value), _COMPLEX.format(
                        what="operand or result"))
        result = subnormals.check(jnp, name, fn, args, operands, result, params)
        if float16 and all(math.prod(a.shape) for a in operands):  # an empty operand's NaN
            # (np.mean, np.median of an empty axis) is NumPy's too
            for value in _arrays(result):
                if dtype_of(value) == np.float16:
                    finite_in = jnp.all(jnp.asarray([jnp.all(jnp.isfinite(a)) for a in operands
                                                     if dtype_of(a).kind in "fc"] or [True]))
                    require(~finite_in | jnp.all(jnp.isfinite(value)), _FLOAT16.format(op=name))
        return result

    run.__name__ = getattr(fn, "__name__", name)
    return run
