"""NumPy functions the JAX backend writes out in jax.numpy, where jax.numpy's own give another
result than NumPy's or fail on arguments NumPy takes (issue 25, found by the thorough
differential profile, ``python -m tests.differential --thorough``). Each form is NumPy's
algorithm step by step in NumPy's types, or checks the values (:func:`require`: the replay fails
at the node with the user's line) where NumPy's result is its own algorithm's accident (a
binary search of an unsorted array). :data:`FUNCTIONS` joins
:data:`capviz.backends.jax.ops.OVERRIDES`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.jax.trace import cast, dtype_of, require, require_each
from capviz.ops.spec import SPECS, call

_BOOL_AS = np.dtype(np.uint8)
"""The type booleans are computed in where jax.numpy takes no booleans (``kron``, ``polyadd``,
``convolve``): 0 and 1, and a nonzero result is NumPy's ``True``."""


def _as_bool(result: Any) -> Any:
    return result != 0


def _booleans_as_integers(name: str, one_d: bool) -> Callable[[Any], Callable]:
    """np.kron (``one_d=False``) or np.polyadd (0-d operands as 1-d, ``atleast_1d``): of
    booleans NumPy's ``multiply`` is ``and`` and its ``add`` is ``or``, which XLA's product and
    sum refuse: computed on integers, nonzero is true."""

    def make(jnp: Any) -> Callable:
        fn = getattr(jnp, name)
        prepare = jnp.atleast_1d if one_d else jnp.asarray

        def run(a: Any, b: Any) -> Any:
            a, b = prepare(a), prepare(b)
            if dtype_of(a) == np.bool_ and dtype_of(b) == np.bool_:
                return _as_bool(fn(a.astype(_BOOL_AS), b.astype(_BOOL_AS)))
            return fn(a, b)

        run.__name__ = name
        return run

    return make


def convolve_as_numpy(jnp: Any, a: Any, v: Any, mode: str = "full") -> Any:
    """np.convolve: 0-d operands as 1-d (NumPy's ``array(a, ndmin=1)``); integers in their own
    type, wrapping as NumPy's sums of products do (jax.numpy's convolve computes them in
    floats); booleans as NumPy's sum of products of booleans (``or`` of ``and``s)."""
    a, v = jnp.atleast_1d(a), jnp.atleast_1d(v)
    kinds = dtype_of(a).kind + dtype_of(v).kind
    if kinds == "bb":
        return _as_bool(_integer_convolve(jnp, a.astype(np.int64), v.astype(np.int64), mode))
    if set(kinds) <= set("biu"):
        dtype = np.result_type(dtype_of(a), dtype_of(v))
        return _integer_convolve(jnp, a.astype(dtype), v.astype(dtype), mode)
    result = jnp.convolve(a, v, mode=mode)
    if "c" not in kinds:
        sums_of_products(jnp, result, jnp.convolve(jnp.abs(a), jnp.abs(v), mode=mode),
                          min(a.shape[0], v.shape[0]), np.dtype(result.dtype))
    return result


def sums_of_products(jnp: Any, got: Any, size: Any, n: int, dtype: np.dtype) -> None:
    """Each output of a convolution (``n`` products at most, of total magnitude ``size``)
    checked to be the same in NumPy's order of summation and XLA's, within the tolerance: a
    product or partial sum that overflows, or a sum cancelling below ``n * eps * size``,
    differs by the order and by XLA's fused multiply-adds (a float64 ``polymul`` of extremes
    gave other values)."""
    if dtype == np.float16:  # overflow: capviz.backends.jax.checks (FLOAT16_OVERFLOW)
        return
    rtol, atol = _TOLERANCE
    slack = size * (n * float(np.finfo(dtype).eps))
    ok = jnp.isfinite(size) & (slack <= atol + rtol * jnp.abs(got))
    require_each(ok | jnp.isnan(size), "a convolution (np.convolve, np.polymul) whose sums "
                 "of products overflow or cancel: NumPy's order of summation and XLA's fused "
                 "multiply-adds give other values there beyond the tolerance; replay with "
                 "backend='numpy'")


def _integer_convolve(jnp: Any, a: Any, v: Any, mode: str) -> Any:
    """The convolution of two 1-d integer arrays of one dtype: the longer operand times each
    value of the shorter added into its place, in a loop (memory linear in ``m + n``, not the
    ``m * n`` of all products at once; wrapping sums are exact in any order), then NumPy's
    slice of the full result for ``mode``."""
    from jax import lax

    m, n = a.shape[0], v.shape[0]
    short, long = min(m, n), max(m, n)
    if m < n:  # a convolution commutes
        a, v = v, a

    def add(k: Any, full: Any) -> Any:
        part = lax.dynamic_slice(full, (k,), (long,))
        return lax.dynamic_update_slice(full, part + a * v[k], (k,))

    full = lax.fori_loop(0, short, add, jnp.zeros(m + n - 1, a.dtype))
    if mode == "valid":
        return full[short - 1:long]
    if mode == "same":
        start = (short - 1) // 2
        return full[start:start + long]
    return full


def _convolve(jnp: Any) -> Callable:
    def convolve(a: Any, v: Any, mode: str = "full") -> Any:
        return convolve_as_numpy(jnp, a, v, mode)

    return convolve


def divided(jnp: Any, x: Any, n: int) -> Any:
    """``x / n`` rounded once, as NumPy's, for a float32 or float16 ``x``: XLA divides by a
    constant as a multiplication by its reciprocal (an ulp off), so the quotient is taken in
    float64 and rounded (a float32 divided by an integer below 2**27 is never within float64's
    error of a float32 rounding boundary). A float64 or complex ``x`` is divided by an array
    of ``n`` behind :func:`separate` (XLA turns a division by a broadcast scalar, constant or
    not, into a product with its reciprocal: ``np.linspace`` of int64 extremes, cancelling to
    0 in NumPy, gave 512)."""
    dtype = np.dtype(x.dtype)
    if dtype.kind == "f" and dtype.itemsize < 8:
        return narrowed(jnp, x.astype(np.float64) / n, dtype)
    return x / separate(jnp.full(x.shape, n, dtype))


def product(jnp: Any, a: Any, b: Any) -> Any:
    """``a * b`` rounded on its own, as NumPy's, for float32 or float16 operands: exact in
    float64 and rounded to their precision by ``reduce_precision``, kept in float64 (a product
    rounded by a cast, LLVM narrows to a float32 product and fuses with the sum that follows
    into one multiply-add). Float64 and complex products may be fused (see
    :func:`_fused_cancellation`)."""
    dtype = np.dtype(a.dtype)
    if dtype.kind == "f" and dtype.itemsize < 8:
        return rounded(jnp, a.astype(np.float64) * b.astype(np.float64), dtype)
    return a * b


def rounded(jnp: Any, x: Any, dtype: np.dtype) -> Any:
    """Float64 ``x`` rounded to float16 or float32 ``dtype``'s values, kept in float64, its
    subnormals included: ``reduce_precision`` rounds normal values and flushes subnormals to
    0 (a float16 ``linspace(0, 2e-4, 5)`` gave 0 where NumPy gives 5e-05), so a value below
    ``dtype``'s smallest normal is rounded to a multiple of its smallest subnormal (an exact
    scaling by a power of two, rounded half to even as the cast does)."""
    from jax import lax

    info = np.finfo(dtype)
    x = jnp.asarray(x).astype(np.float64)  # 1 / unit overflows float16 (0 * inf: NaN)
    normal = lax.reduce_precision(x, exponent_bits=info.nexp, mantissa_bits=info.nmant)
    unit = float(info.smallest_subnormal)
    small = jnp.abs(x) < float(info.smallest_normal)
    tiny = jnp.round(jnp.where(small, x, 0.0) * (1 / unit)) * unit
    return jnp.where(small, tiny, normal)


def narrowed(jnp: Any, x: Any, dtype: np.dtype) -> Any:
    """Float64 ``x`` cast to ``dtype``: a float32 subnormal fails the replay at the node, as
    XLA's CPU conversion to float32 flushes it to 0 where NumPy keeps it (float16
    conversions keep their subnormals)."""
    if dtype == np.float32:
        subnormal = (jnp.abs(x) < float(np.finfo(dtype).smallest_normal)) & (x != 0)
        require_each(~subnormal, "a float32 result in the subnormal range (below "
                     f"{np.finfo(dtype).smallest_normal}), which XLA flushes to 0 where NumPy "
                     "keeps it; replay with backend='numpy'")
    return x.astype(dtype)


def separate(x: Any) -> Any:
    """``x`` behind an optimization barrier: XLA sees neither a constant nor a broadcast
    through it."""
    from jax import lax

    return lax.optimization_barrier(x)


def linspace_as_numpy(jnp: Any, start: Any, stop: Any, num: int = 50, endpoint: bool = True,
                      dtype: Any = None, axis: int = 0) -> Any:
    """np.linspace step by step: ``delta = stop - start`` in the inexact result type, ``y =
    arange(num) * (delta / div)`` (``arange(num) / div * delta`` when a step is 0), ``+ start``,
    the last point set to ``stop``, floored for an integer ``dtype``. jax.numpy's linspace
    interpolates otherwise (an infinite start gives ``inf`` where NumPy's ``0 * inf`` is NaN,
    and its last point is not ``stop``)."""
    dt = np.result_type(_weak_or_dtype(jnp, start), _weak_or_dtype(jnp, stop))
    start, stop = jnp.asarray(start), jnp.asarray(stop)
    num = int(num)
    div = num - 1 if endpoint else num
    if dt.kind not in "fc":  # NumPy's ensure_inexact
        dt = np.dtype(np.float64)
    delta = stop.astype(dt) - start.astype(dt)
    y = jnp.arange(num, dtype=dt).reshape((num,) + (1,) * len(delta.shape))
    exact = None
    if div > 0:
        step = divided(jnp, delta, div)
        stepped = ~jnp.any(step == 0)  # the branch taking y * step
        if dt == np.float64:  # i * step is exact when step's last bits are 0 for i's bits
            exact = stepped & ((lax_bits(step) & _low_bits(num, len(delta.shape))) == 0)
        y = jnp.where(jnp.any(step == 0), product(jnp, divided(jnp, y, div), delta),
                      product(jnp, y, step))
    else:
        y = product(jnp, y, delta)
    if y.dtype != np.dtype(dt):  # float64 holding float32 (float16) products: add, round once
        y = narrowed(jnp, y + start.astype(dt).astype(np.float64), dt)
    else:
        first = start.astype(dt)
        if dt == np.float64:
            _fused_cancellation(jnp, y, first, exact)
        y = y + first
    if endpoint and num > 1:
        y = y.at[-1].set(stop.astype(dt))
    y = jnp.moveaxis(y, 0, axis)
    dtype = dt if dtype is None else np.dtype(dtype)
    if dtype.kind in "iu":  # NaN or out of range fails the node (XLA saturates)
        return cast(jnp, jnp.floor(y), dtype)
    return y.astype(dtype)


def _weak_or_dtype(jnp: Any, value: Any) -> Any:
    """A Python number as itself (weak in NumPy's promotion: ``np.linspace(float32, 5.0)`` is
    float32), anything else as its dtype."""
    if type(value) in (bool, int, float, complex):
        return value
    return dtype_of(jnp.asarray(value))




def _low_bits(num: int, ndim: int) -> np.ndarray:
    """For each ``i < num`` (along a new first axis), the mask of the last mantissa bits a
    float64 must have 0 for its product with ``i`` to be exact: as many bits as ``i``'s odd
    part has after its leading one (none for a power of two)."""
    masks = []
    for i in range(num):
        odd = i >> (i & -i).bit_length() - 1 if i else 1
        masks.append((1 << (odd.bit_length() - 1)) - 1)
    return np.array(masks, np.int64).reshape((num,) + (1,) * ndim)


def lax_bits(x: Any) -> Any:
    """The bits of float64 ``x`` as int64."""
    from jax import lax

    return lax.bitcast_convert_type(x, np.int64)


_TOLERANCE = (1e-4, 1e-4)
"""The JAX backend's ``(rtol, atol)`` for float64 (``JaxBackend.tolerance``)."""


def _fused_cancellation(jnp: Any, p: Any, start: Any, exact: Any) -> None:
    """``p + start`` (``p`` a float64 product) checked where it can differ from NumPy's beyond
    the tolerance: XLA fuses the product and the sum into one multiply-add, rounded once, where
    NumPy rounds the product first. The two differ by at most half a unit of ``p``, which is
    beyond the backend's tolerance only where the sum cancels (``|p + start|`` far below
    ``|p|``) and the product was not exact (``exact``: per element, or ``None``: unknown)."""
    total = p + start
    rtol, atol = _TOLERANCE
    ok = ~jnp.isfinite(p) | (jnp.abs(p) * 2.0**-52 <= atol + rtol * jnp.abs(total))
    if exact is not None:
        ok = ok | exact
    require_each(ok, "np.linspace (or geomspace) of float64: a point cancels to near 0 "
                 "(start + i * step), where XLA's fused multiply-add (rounded once) differs "
                 "from NumPy's product then sum beyond the tolerance; replay with "
                 "backend='numpy'")


def _linspace(jnp: Any) -> Callable:
    def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
                 retstep: bool = False, dtype: Any = None, axis: int = 0) -> Any:
        return linspace_as_numpy(jnp, start, stop, num, endpoint, dtype, axis)

    return linspace


def _geomspace(jnp: Any) -> Callable:
    """np.geomspace step by step: the signs rotated out, ``10 ** linspace(log10(start),
    log10(stop))`` in NumPy's arithmetic, the first and last points set to ``start`` and
    ``stop`` exactly (jax.numpy's overflows ``10 ** log10(finfo.max)`` to ``inf`` and gives
    ``inf`` where NumPy's linspace makes NaN); a zero fails the replay as NumPy raises.
    Complex values go to jax.numpy's geomspace (its sign of a complex is NumPy's)."""

    def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
                  dtype: Any = None, axis: int = 0) -> Any:
        start, stop = jnp.asarray(start), jnp.asarray(stop)
        num = int(num)
        dt = np.result_type(dtype_of(start), dtype_of(stop), float(num),
                            np.zeros((), dtype))
        if dt.kind == "c":
            return jnp.geomspace(start, stop, num, endpoint, dtype, axis)
        require(jnp.all(start != 0) & jnp.all(stop != 0),
                "ValueError: Geometric sequence cannot include zero (NumPy raises)")
        start, stop = start.astype(dt), stop.astype(dt)
        sign = jnp.sign(start)
        start, stop = start / sign, stop / sign
        y = linspace_as_numpy(jnp, jnp.log10(start), jnp.log10(stop), num, endpoint, dt)
        result = jnp.power(np.asarray(10.0, dt), y)
        if num > 0:
            result = result.at[0].set(start)
            if num > 1 and endpoint:
                result = result.at[-1].set(stop)
        result = jnp.moveaxis(result * sign, 0, axis)
        return result.astype(dt if dtype is None else np.dtype(dtype))

    return geomspace


def _histogram_bin_edges(jnp: Any) -> Callable:
    """np.histogram_bin_edges with a number of bins and no range: NumPy's outer edges (the
    minimum and maximum, which must be finite: NumPy raises ValueError, checked here; an empty
    range widened by 0.5 each side) and its linspace between them in the edges' type
    (:func:`linspace_as_numpy`), which must increase (NumPy raises ValueError: too many bins);
    jax.numpy's computes the edges otherwise (a float16 edge 46 where NumPy's is 48). Other
    forms go to jax.numpy's."""

    def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None,
                            weights: Any = None) -> Any:
        a = jnp.asarray(a).ravel()
        if range is not None or not isinstance(bins, (int, np.integer)) \
                or not a.shape[0]:
            return jnp.histogram_bin_edges(a, bins, range, weights)
        first, last = a.min(), a.max()
        require(jnp.isfinite(first) & jnp.isfinite(last),
                "ValueError: autodetected range of [min, max] is not finite (NumPy raises: "
                "an infinity or NaN among the values of np.histogram_bin_edges)")
        edge = np.dtype(np.float64) if dtype_of(a).kind in "biu" else dtype_of(a)
        first, last = first.astype(edge), last.astype(edge)
        same = first == last
        first = jnp.where(same, first - np.asarray(0.5, edge), first)
        last = jnp.where(same, last + np.asarray(0.5, edge), last)
        edges = linspace_as_numpy(jnp, first, last, int(bins) + 1, True, edge)
        require(jnp.all(edges[:-1] < edges[1:]), f"ValueError: Too many bins for data range. "
                f"Cannot create {int(bins)} finite-sized bins (NumPy raises)")
        return edges

    return histogram_bin_edges


def _order_statistic(name: str) -> Callable[[Any], Callable]:
    """np.quantile / np.percentile (and the nan forms of integers, which hold no NaN) with
    NumPy's default ``method='linear'``: NumPy's steps (``_quantile``): the virtual indices,
    their neighbours and weights ``gamma`` computed on the host as NumPy computes them, then
    the neighbours of the sorted values interpolated as NumPy's ``_lerp``: ``next - previous``
    in the values' type (an int64 difference wraps, a float16 one rounds), ``previous + diff
    * gamma``, or ``next - diff * (1 - gamma)`` where ``gamma >= 0.5``, in the result's type
    (a Python ``q`` is weak: a float16 interpolation stays float16), NaN where a slice holds
    one. jax.numpy's interpolation differs on those values. Other methods, weights and tuple
    axes go to jax.numpy's; a nan form of floats too (the empty array: :func:`_nan_order_
    statistic`)."""
    percent = name.endswith("percentile")
    nan_form = name.startswith("nan")
    fallback = _nan_order_statistic(name) if nan_form else None

    def make(jnp: Any) -> Callable:
        other = fallback(jnp) if fallback is not None else getattr(jnp, name)

        def run(a: Any, q: Any, axis: Any = None, out: Any = None,
                overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, **params: Any) -> Any:
            a = jnp.asarray(a)
            simple = (method == "linear" and params.get("weights") is None
                      and out is None and not isinstance(axis, (tuple, list))
                      and math.prod(a.shape) > 0)
            if not simple or (nan_form and dtype_of(a).kind in "fc"):
                return other(a, q, axis, out=out, overwrite_input=overwrite_input,
                             method=method, keepdims=keepdims, **params)
            return _linear_quantile(jnp, a, q, axis, keepdims, percent)

        run.__name__ = name
        return run

    return make


def _linear_quantile(jnp: Any, a: Any, q: Any, axis: Any, keepdims: bool,
                     percent: bool) -> Any:
    weak = type(q) in (int, float)
    qs = np.true_divide(q, 100) if percent else np.asanyarray(q)
    ndim = len(a.shape)
    arr = a.ravel() if axis is None else jnp.moveaxis(a, axis % ndim, 0)
    n = arr.shape[0]
    dtype = dtype_of(arr)
    virtual = np.asanyarray((n - 1) * qs)  # NumPy's 'linear' virtual index
    previous_at, next_at = _neighbours(virtual, n, dtype)
    gamma = np.asanyarray(np.asanyarray(virtual - previous_at), dtype=virtual.dtype)
    if weak:
        gamma = float(gamma)
    else:
        gamma = gamma.reshape(virtual.shape + (1,) * (len(arr.shape) - 1))
    result_dtype = np.result_type(dtype, gamma)
    ordered = jnp.sort(arr, axis=0)
    previous, following = ordered[previous_at], ordered[next_at]
    narrow = result_dtype.kind == "f" and result_dtype.itemsize < 8
    work = np.dtype(np.float64) if narrow else result_dtype
    diff = _each_rounded(jnp, following - previous, dtype)  # in the values' type, as NumPy's
    t = np.asarray(np.asarray(gamma, result_dtype), work)
    rest = np.asarray(np.asarray(1 - np.asarray(gamma), result_dtype), work)  # 1 - t in q's type
    part = _each_rounded(jnp, diff.astype(work) * t, result_dtype)
    below = _each_rounded(jnp, previous.astype(work) + part, result_dtype)
    part = _each_rounded(jnp, diff.astype(work) * rest, result_dtype)
    above = _each_rounded(jnp, following.astype(work) - part, result_dtype)
    result = jnp.where(t >= 0.5, above, below)
    result = narrowed(jnp, result, result_dtype) if narrow else result.astype(result_dtype)
    if dtype.kind == "f":
        nans = jnp.isnan(ordered[-1])
        result = jnp.where(nans, jnp.asarray(np.nan, result_dtype), result)
    if keepdims:
        kept = (1,) * ndim if axis is None else tuple(
            1 if k == axis % ndim else d for k, d in enumerate(a.shape))
        result = result.reshape(tuple(np.shape(qs)) + kept)
    return result


def _neighbours(virtual: np.ndarray, n: int, dtype: np.dtype) -> tuple:
    """NumPy's ``_get_indexes`` (``numpy/lib/_function_base_impl.py``, a private function,
    written out here): the indices before and after each virtual index, the last value's
    (-1) past the end or for a NaN index of an inexact array, the first's (0) before the
    start."""
    previous = np.asanyarray(np.floor(virtual))
    following = np.asanyarray(previous + 1)
    above = virtual >= n - 1
    previous[above], following[above] = -1, -1
    below = virtual < 0
    previous[below], following[below] = 0, 0
    if np.issubdtype(dtype, np.inexact):
        nans = np.isnan(virtual)
        previous[nans], following[nans] = -1, -1
    return previous.astype(np.intp), following.astype(np.intp)


def _each_rounded(jnp: Any, x: Any, dtype: np.dtype) -> Any:
    """``x`` rounded to float16 or float32 ``dtype`` (``x`` exact in float64 or in ``dtype``):
    each step of a chain rounded on its own, as NumPy's, where XLA keeps a float16 chain in
    float32 between steps."""
    if dtype.kind != "f" or dtype.itemsize == 8:
        return x
    return rounded(jnp, x, dtype)


def _average(jnp: Any) -> Callable:
    """np.average with weights, NumPy's steps: weights of one axis laid along it, their sum in
    the result's type (float64 for integers: NumPy raises ZeroDivisionError where it is 0,
    checked here, where an int64 sum wraps otherwise), ``multiply(a, w, dtype=...)`` summed
    and divided by it. A sum of products cancelling beyond the tolerance (its terms' size
    times the rounding of a sum in another order) fails at the node: NumPy's order of
    summation and rounding of each product are its own. Without weights: jax.numpy's mean."""

    def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
                **params: Any) -> Any:
        a = jnp.asarray(a)
        if weights is None or returned:
            return jnp.average(a, axis, weights, returned, **params)
        w = jnp.asarray(weights)
        ndim = len(a.shape)
        if isinstance(axis, list):
            axis = tuple(axis)
        if tuple(w.shape) != tuple(a.shape):
            w = jnp.swapaxes(w.reshape((1,) * (ndim - 1) + tuple(w.shape)), -1, axis)
        kind = dtype_of(a).kind
        result = np.result_type(dtype_of(a), dtype_of(w), *(("f8",) if kind in "biu" else ()))
        keep = {"keepdims": bool(params["keepdims"])} if "keepdims" in params else {}
        total = w.astype(result).sum(axis=axis, **keep)
        require(jnp.all(total != 0), "ZeroDivisionError: Weights sum to zero, can't be "
                "normalized (NumPy raises)")
        terms = a.astype(result) * w.astype(result)
        numerator = terms.sum(axis=axis, **keep)
        if result.kind in "fc":
            # a NaN operand makes NaN in every order; any other non-finite term is unsettled
            # (XLA's reduction may fuse a * w into a multiply-add that does not overflow)
            settled = (jnp.isnan(a) | jnp.isnan(w)).any(axis=axis, **keep)
            n = terms.size // max(numerator.size, 1)
            parts = (jnp.real, jnp.imag) if result.kind == "c" else (lambda v: v,)
            real = np.dtype(result.type(0).real.dtype)
            for part in parts:  # a complex sum: each of its parts, as a float sum
                _cancelled_sum(jnp, part(numerator), jnp.abs(part(terms)).sum(axis=axis, **keep),
                               jnp.abs(total), n, real, settled)
        # a true division: XLA makes one by a broadcast value a product with its reciprocal,
        # which flushes to 0 past 1 / finfo.tiny (inf / 1.9e38 gave NaN in float32)
        return numerator / separate(jnp.broadcast_to(total, numerator.shape))

    return average


def _cancelled_sum(jnp: Any, got: Any, size: Any, divisor: Any, n: int,
                   dtype: np.dtype, settled: Any) -> None:
    """A sum ``got`` of ``n`` terms of total magnitude ``size`` (then divided by ``divisor``)
    checked to be the same in every order of summation, within the tolerance: the rounding of
    another order is at most ``n * eps * size``; a ``size`` that overflows (a partial sum or
    product may overflow to either infinity, or not, by the order and the fusing) fails
    unless the sum is ``settled`` (a NaN operand: NaN every way)."""
    rtol, atol = _TOLERANCE if dtype != np.float16 else (1e-2, 1e-1)
    slack = size * (n * float(np.finfo(dtype).eps))
    quotient = jnp.abs(got / divisor)
    ok = jnp.isfinite(size) & (jnp.abs(slack / divisor) <= atol + rtol * quotient)
    require_each(ok | settled, "np.average: the weighted sum overflows or cancels (its terms' "
                 "magnitudes are far above it), so NumPy's order of summation gives another "
                 "value than XLA's beyond the tolerance; replay with backend='numpy'")


def _interp(jnp: Any) -> Callable:
    """np.interp of real values in float64, as NumPy's C loop computes whatever the inputs'
    type (jax.numpy's interpolates in the inputs' type: a float16 ``x`` gave 0.50 where NumPy
    gives 0.62), the periodic points made as NumPy makes them, checked where NumPy's result is
    its own: ``xp`` not increasing (without a period: NumPy's binary search then finds its own
    neighbours) or tied (with one: its quicksort orders them), an infinity or NaN among the
    points (NumPy's C formula falls back to the slope at the next point where jax.numpy's
    gives NaN), a result that is not finite or cancels below the points' rounding (NumPy's
    ``slope * (x - xp[j]) + fp[j]`` and jax.numpy's ``(x - xp[j]) / dx * df + fp[j]`` round
    otherwise)."""

    def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
               period: Any = None) -> Any:
        x, xp, fp = (jnp.asarray(v) for v in (x, xp, fp))
        if dtype_of(fp).kind == "c":
            return jnp.interp(x, xp, fp, left, right, period)
        x, xp, fp = (v.astype(np.float64) for v in (x, xp, fp))
        ok = jnp.all(jnp.isfinite(x)) & jnp.all(jnp.isfinite(xp)) & jnp.all(jnp.isfinite(fp))
        if period is not None:  # NumPy's periodic points, left and right ignored
            period = abs(float(period))
            x, xp = jnp.remainder(x, period), jnp.remainder(xp, period)
            order = jnp.argsort(xp, stable=True)
            xp, fp = xp[order], fp[order]
            if xp.shape[0] > 1:  # tied points: NumPy's quicksort picks their order
                ok = ok & jnp.all(xp[1:] > xp[:-1])
            xp = jnp.concatenate([xp[-1:] - period, xp, xp[:1] + period])
            fp = jnp.concatenate([fp[-1:], fp, fp[:1]])
            left = right = None
        elif xp.shape[0] > 1:
            ok = ok & jnp.all(xp[1:] >= xp[:-1])
        result = jnp.interp(x, xp, fp, left, right)
        rtol, atol = _TOLERANCE
        rounding = jnp.max(jnp.abs(fp)) * (8 * float(np.finfo(np.float64).eps))
        each = jnp.isfinite(result) & (rounding <= atol + rtol * jnp.abs(result))
        require(ok & jnp.all(each), "np.interp of these points: xp is not increasing (or, "
                "with a period, holds ties), or the "
                "points hold an infinity or NaN, or the result overflows or cancels far "
                "below the points' values, where NumPy's C interpolation gives its own "
                "result; replay with backend='numpy'")
        return result

    return interp


_TRANSFORMS = ("fft", "fft2", "fftn", "ifft", "ifft2", "ifftn", "rfft", "rfft2", "rfftn",
               "irfft", "irfft2", "irfftn", "hfft", "ihfft")


def _transform(name: str) -> Callable[[Any], Callable]:
    """A transform of ``np.fft``, checked where its rounding can reach beyond the tolerance:
    pocketfft in NumPy and XLA's FFT round otherwise, by up to about ``eps * log2(n)`` times
    the operand's norm in each output, so an output far below that norm (an int64 signal of
    extremes, whose transform is mostly rounding) differs beyond the tolerance (42.7 against
    56.9 for ``irfftn`` of int64 extremes)."""

    def make(jnp: Any) -> Callable:
        fn = ops.OPS[f"fft.{name}"].bind(jnp)

        def run(a: Any, *args: Any, **params: Any) -> Any:
            params = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}
            result = fn(a, *args, **params)
            _rounding_within_tolerance(jnp, jnp.asarray(a), result)
            return result

        run.__name__ = name
        return run

    return make


def _rounding_within_tolerance(jnp: Any, a: Any, result: Any) -> None:
    real = np.dtype(result.dtype).type(0).real.dtype
    n = max(math.prod(a.shape), math.prod(result.shape), 2)
    norm = jnp.sqrt(jnp.sum(jnp.abs(a.astype(result.dtype)) ** 2))
    bound = norm * (float(np.finfo(real).eps) * (math.log2(n) + 1))
    rtol, atol = _TOLERANCE
    require(jnp.all(bound <= atol + rtol * jnp.abs(result)) | ~jnp.isfinite(norm),
            "np.fft: an output of the transform lies far below its operand's norm, within "
            "the rounding of the transform, which pocketfft (NumPy) and XLA's FFT do "
            "otherwise: they differ there beyond the tolerance; replay with backend='numpy'")


def _insert(jnp: Any) -> Callable:
    """np.insert with a static index: NumPy's path for one index written out (``values`` made
    ``ndmin=arr.ndim``, moved for a scalar index, assigned to the slice it fills, which drops
    leading axes of length 1 as an assignment does); jax.numpy broadcasts ``values`` to fewer
    dimensions and fails. Several indices go to jax.numpy's insert."""

    def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
        arr = jnp.asarray(arr)
        if axis is None:
            arr, axis = arr.ravel(), 0
        ndim = len(arr.shape)
        axis %= ndim
        n = arr.shape[axis]
        if isinstance(obj, slice):
            indices = np.arange(*obj.indices(n))
        else:
            indices = np.array(obj)
            if indices.dtype == bool:
                indices = np.flatnonzero(indices)
        if indices.size != 1:
            return jnp.insert(arr, indices, values, axis=axis)
        index = int(indices.item())
        index += n if index < 0 else 0  # in bounds: the capture checked it as NumPy does
        if _is_literal(values):  # NumPy's conversion: its TypeError/ValueError/OverflowError
            values = np.array(values, ndmin=ndim, dtype=dtype_of(arr))
        values = cast(jnp, values, dtype_of(arr))
        values = values.reshape((1,) * (ndim - len(values.shape)) + tuple(values.shape))
        if indices.ndim == 0:
            values = jnp.moveaxis(values, 0, axis)
        target = list(arr.shape)
        target[axis] = values.shape[axis]
        while len(values.shape) > ndim and values.shape[0] == 1:
            values = values[0]
        values = jnp.broadcast_to(values, tuple(target))
        before = [slice(None)] * ndim
        after = [slice(None)] * ndim
        before[axis], after[axis] = slice(None, index), slice(index, None)
        return jnp.concatenate([arr[tuple(before)], values, arr[tuple(after)]], axis=axis)

    return insert


def _nan_to_num(jnp: Any) -> Callable:
    """np.nan_to_num with its replacements ``nan``/``posinf``/``neginf`` cast to the array's
    (real) type on the host, as NumPy's ``copyto`` casts them (1e300 into float32 is inf),
    and put in place by ``where`` on the real and imaginary parts (jax.numpy's nan_to_num
    clips a replacement to ``finfo.max``)."""

    def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
                   neginf: Any = None) -> Any:
        x = jnp.asarray(x)
        real = np.dtype(dtype_of(x).type(0).real.dtype)
        if real.kind != "f":
            return x
        info = np.finfo(real)
        posinf = info.max if posinf is None else posinf
        neginf = info.min if neginf is None else neginf
        with np.errstate(all="ignore"):
            nan, posinf, neginf = (np.asarray(v).astype(real) for v in (nan, posinf, neginf))

        def replaced(d: Any) -> Any:  # NumPy's masks, all taken from the original values
            kept = jnp.where(jnp.isposinf(d), posinf, jnp.where(jnp.isneginf(d), neginf, d))
            return jnp.where(jnp.isnan(d), nan, kept)

        if dtype_of(x).kind == "c":
            return jax_complex(replaced(jnp.real(x)), replaced(jnp.imag(x)), dtype_of(x))
        return replaced(x)

    return nan_to_num


def jax_complex(real: Any, imag: Any, dtype: np.dtype) -> Any:
    """The complex array of ``dtype`` with these real and imaginary parts."""
    from jax import lax

    return lax.complex(real, imag).astype(dtype)


def _is_literal(value: Any) -> bool:
    """Whether ``value`` is a value of the user's code rather than a traced operand."""
    return isinstance(value, (bool, int, float, complex, list, tuple, np.generic, np.ndarray))


def _nan_order_statistic(name: str) -> Callable[[Any], Callable]:
    """np.nanquantile / np.nanpercentile of an empty array: NumPy returns ``np.nanmean(a,
    axis, keepdims=keepdims)`` (NaNs, whatever ``q``), where jax.numpy's gather fails."""

    def make(jnp: Any) -> Callable:
        fn = getattr(jnp, name)

        def run(a: Any, q: Any, axis: Any = None, **params: Any) -> Any:
            a = jnp.asarray(a)
            if isinstance(axis, list):
                axis = tuple(axis)
            if math.prod(a.shape):
                wide = np.result_type(dtype_of(a), q if type(q) in (int, float)
                                      else np.asarray(q))  # NumPy's type but for all-NaN
                if wide != dtype_of(a):
                    _no_slice_all_nan(jnp, a, axis, name, wide)
                return fn(a, np.asarray(q) if isinstance(q, list) else q, axis, **params)
            dtype = np.result_type(dtype_of(a), np.float16)  # nanmean's: float64 of integers
            if dtype_of(a).kind in "iub":
                dtype = np.dtype(np.float64)
            return jnp.nanmean(a, axis=axis, dtype=dtype,
                               keepdims=bool(params.get("keepdims", False)))

        run.__name__ = name
        return run

    return make


def _no_slice_all_nan(jnp: Any, a: Any, axis: Any, name: str, recorded: np.dtype) -> None:
    """A nan-quantile of float32 (float16) with an array ``q``, whose type in NumPy depends on
    the values: the operand's type where a slice is all NaN (NumPy's ``nanmean`` of it), the
    ``recorded`` float64 otherwise. A slice all NaN fails the replay at the node."""
    all_nan = jnp.all(jnp.isnan(a), axis=axis)
    require(~jnp.any(all_nan), f"np.{name} of {dtype_of(a)} where a slice is all NaN: "
            f"NumPy's result is then {dtype_of(a)}, not the {recorded} the graph recorded "
            "(its result type depends on the values); drop the all-NaN slices or pass q as "
            "a Python float")


def _unwrap(jnp: Any) -> Callable:
    """np.unwrap step by step in NumPy's types: the differences are taken in the input's type
    (an integer input's wrap, ``uint8`` ``0 - 5`` is ``251``), then corrected in
    ``result_type(diff, period)`` (float64 for integers with the default period); jax.numpy's
    unwrap converts integers to floats first."""

    def unwrap(p: Any, discont: Any = None, axis: int = -1, *,
               period: float = 2 * np.pi) -> Any:
        p = jnp.asarray(p)
        ndim = len(p.shape)
        dd = jnp.diff(p, axis=axis)
        if discont is None:
            discont = period / 2
        dtype = np.result_type(dtype_of(dd), period)
        if dtype.kind in "iu":
            interval_high, rem = divmod(period, 2)
            ambiguous = rem == 0
        else:
            interval_high = period / 2
            ambiguous = True
        interval_low = -interval_high
        wide = dd.astype(dtype)
        ddmod = jnp.mod(wide - np.asarray(interval_low, dtype), np.asarray(period, dtype)) \
            + np.asarray(interval_low, dtype)
        if ambiguous:
            ddmod = jnp.where((ddmod == interval_low) & (dd > 0),
                              np.asarray(interval_high, dtype), ddmod)
        correction = ddmod - wide
        correction = jnp.where(_below(jnp, jnp.abs(dd), discont),
                               jnp.zeros_like(correction), correction)
        later = [slice(None)] * ndim
        later[axis] = slice(1, None)
        later = tuple(later)
        up = p.astype(dtype)
        head = p[later].astype(dtype) + jnp.cumsum(correction, axis=axis)
        return up.at[later].set(head)

    return unwrap


def _below(jnp: Any, x: Any, bound: Any) -> Any:
    """``x < bound`` as NumPy compares an array with a Python number (an integer array with a
    float: in float64)."""
    if isinstance(bound, float) and dtype_of(x).kind in "iub":
        return x.astype(np.float64) < bound
    return x < bound


def _sorted_nan_last(jnp: Any, s: Any) -> Any:
    """Whether 1-d ``s`` is sorted in NumPy's order (NaNs last; complex by real, then
    imaginary part; a complex NaN fails the test)."""
    if s.shape[0] < 2:
        return jnp.asarray(True)
    first, rest = s[:-1], s[1:]
    kind = dtype_of(s).kind
    if kind == "c":
        re0, re1, im0, im1 = jnp.real(first), jnp.real(rest), jnp.imag(first), jnp.imag(rest)
        ordered = (re0 < re1) | ((re0 == re1) & (im0 <= im1))
        return jnp.all(ordered) & ~jnp.any(jnp.isnan(s))
    if kind == "f":
        return jnp.all((first <= rest) | jnp.isnan(rest))
    return jnp.all(first <= rest)


def _searchsorted(jnp: Any) -> Callable:
    """np.searchsorted: NumPy's result for an unsorted array is its binary search's own (it
    even depends on the order of the keys), so the sorted array is checked; for a sorted one
    every correct search gives NumPy's indices."""

    def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
        a = jnp.asarray(a)
        if sorter is not None:
            sorter = jnp.asarray(sorter)
            n = a.shape[0]
            require(jnp.all((sorter >= 0) & (sorter < n)), "ValueError: Sorter index out of "
                    f"range (an index of np.searchsorted's sorter is outside 0..{n - 1})")
        s = a if sorter is None else a[sorter]
        require(_sorted_nan_last(jnp, s), "np.searchsorted of an array that is not sorted "
                "(NaNs last): NumPy's result is then its binary search's own accident, which "
                "jax.numpy's search does not reproduce; sort the array (np.sort) or pass "
                "sorter=np.argsort(a)")
        return jnp.searchsorted(a, v, side=side, sorter=sorter)

    return searchsorted


def _called_as_numpy(name: str, form: Callable[[Any], Callable]) -> Callable[[Any], Callable]:
    """``form`` (written with NumPy's signature) called with the operands and parameters of
    the op ``name``'s node, as :func:`capviz.ops.spec.call` calls NumPy's function."""

    def make(jnp: Any) -> Callable:
        fn = form(jnp)
        spec = SPECS[name]

        def run(*operands: Any, **params: Any) -> Any:
            return call(spec, fn, operands, params)

        run.__name__ = name.rsplit(".", 1)[-1]
        return run

    return make


_FORMS: dict[str, Callable[[Any], Callable]] = {
    "kron": _booleans_as_integers("kron", one_d=False),
    "polyadd": _booleans_as_integers("polyadd", one_d=True),
    "convolve": _convolve,
    "insert": _insert,
    **{name: _order_statistic(name)
       for name in ("quantile", "percentile", "nanquantile", "nanpercentile")},
    "unwrap": _unwrap,
    "searchsorted": _searchsorted,
    "linspace": _linspace,
    "geomspace": _geomspace,
    "histogram_bin_edges": _histogram_bin_edges,
    "average": _average,
    "interp": _interp,
    "nan_to_num": _nan_to_num,
}

FUNCTIONS: dict[str, Callable[[Any], Callable]] = {
    **{name: _called_as_numpy(name, form) for name, form in _FORMS.items()},
    **{f"fft.{name}": _transform(name) for name in _TRANSFORMS}}
"""The forms of this module by op name (joined to ``OVERRIDES``)."""
