"""The ops of the JAX backend: which it refuses (:data:`UNSUPPORTED`), and the functional forms
it runs instead of ``op.bind(jax.numpy)`` (:data:`OVERRIDES`).

jax arrays are immutable, so every write (``setitem``, ``index_put``, ``put``, ``ufunc_at``...)
becomes "assign values at flat positions, the last one wins" (:func:`_assign_flat`), which is
deterministic where a scatter of repeated indices is not. Where NumPy raises on values (an index
out of bounds) or leaves a result to the platform (a float cast to an integer out of range), a
form checks the values with :func:`capviz.backends.jax.trace.require`; where XLA defines a
result otherwise than NumPy (an integer divided by zero, an integer power that overflows, ``gcd``
of ``INT_MIN``, ``modf`` of an infinity or of a negative integer), the form computes NumPy's;
where it rounds otherwise (an integer ``np.pad`` linear ramp), the form refuses. A ufunc
runs in the loop NumPy picks for its operands' dtypes (:func:`_in_loop_dtypes`).
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.jax import (
    cancellation,
    complex_picks,
    complex_products,
    python_ints,
    unfused,
    variances,
)
from capviz.backends.jax.cancellation import sums_of_products
from capviz.backends.jax.checks import checked
from capviz.backends.jax.functions import FUNCTIONS
from capviz.backends.jax.functions.polynomials import convolve_as_numpy
from capviz.backends.jax.functions.ranges import linspace_as_numpy
from capviz.backends.jax.functions.rounding import divided, product
from capviz.backends.jax.random import bernoulli, normal, uniform
from capviz.backends.jax.trace import cast, dtype_of, loop_key, refusal, require
from capviz.ops import traits
from capviz.ops.advanced_index import tensor_axes
from capviz.ops.creation import RANGES
from capviz.ops.reductions import MASKED

UNSUPPORTED: dict[str, str] = {
    "partition": "the order of the elements on each side of the kth is NumPy's introselect's "
                 "own; jax.numpy orders them otherwise (use np.sort, or a stable np.argsort)",
    "argpartition": "the order of the indices on each side of the kth is NumPy's "
                    "introselect's own; jax.numpy orders them otherwise (use np.argsort with "
                    "kind='stable')",
    "linalg.eigh": "eigenvectors are unique only up to sign, and XLA chooses the signs "
                   "otherwise than LAPACK in NumPy (use np.linalg.eigvalsh for the values)",
    "linalg.svd": "singular vectors are unique only up to sign, and XLA chooses the signs "
                  "otherwise than LAPACK in NumPy (use np.linalg.svdvals for the values)",
    "linalg.qr": "the signs of Q's columns and R's rows are XLA's choice on GPUs, not "
                 "LAPACK's (use np.linalg.solve or np.linalg.cholesky where they serve)",
    "histogram": "a value on a bin edge may fall in the neighbouring bin (jax.numpy computes "
                 "the bin of a value otherwise than NumPy), which changes integer counts",
    "histogram2d": "a value on a bin edge may fall in the neighbouring bin (jax.numpy "
                   "computes the bin of a value otherwise than NumPy)",
    "isnat": "jax has no datetime or timedelta arrays",
    "ravel_multi_index": "jax.numpy clips an index out of bounds where NumPy raises "
                         "(compute the flat index with arithmetic: i * n + j)",
    "unravel_index": "jax.numpy clips an index out of bounds where NumPy raises (compute the "
                     "indices with // and %)",
    "choose": "jax.numpy's choose clips or wraps an index out of bounds where NumPy raises "
              "(use np.where or np.select)",
    "compress": "jax.numpy's compress needs a condition known at trace time and an output "
                "size (use np.take with the indices np.flatnonzero(condition) gives)",
    "gradient": "jax.numpy's gradient takes no edge_order and differs from NumPy's at the "
                "edges (write the differences with slicing)",
    "histogramdd": "jax.numpy's histogramdd counts in integers where NumPy gives floats, and "
                   "a value on a bin edge may fall in the neighbouring bin",
    "block": "jax.numpy's block reads nested lists of arrays, which a replay passes as "
             "operands (use np.concatenate)",
    "linalg.eig": "eigenvectors are unique only up to a complex factor, which XLA chooses "
                  "otherwise than LAPACK in NumPy, and NumPy's result is real or complex "
                  "depending on the values (use np.linalg.eigh for a symmetric matrix)",
    "linalg.eigvals": "XLA orders complex eigenvalues otherwise than LAPACK in NumPy (use "
                      "np.linalg.eigvalsh for a symmetric matrix)",
    "fix": "jax.numpy has no fix (use np.trunc, which rounds the same way)",
    "lib.stride_tricks.sliding_window_view": "jax.numpy has no sliding_window_view (gather "
                                             "the windows with np.take and np.arange offsets)",
    **{f"emath.{name}": "jax.numpy has no emath: its result's dtype (real or complex) would "
                        "depend on the values (use np.sqrt, np.log... on complex inputs)"
       for name in ("sqrt", "log", "log10", "log2", "logn", "power", "arccos", "arcsin",
                    "arctanh")},
    "polyfit": "a least-squares fit's coefficients come from LAPACK's SVD: on ill-conditioned "
               "data (huge or nearly collinear values) XLA's SVD gives other coefficients, far "
               "beyond any tolerance, and NumPy's raises LinAlgError where XLA returns numbers "
               "(replay with backend='numpy', or solve the normal equations with np.linalg."
               "solve)",
    "scalar_power": "a NumPy scalar's ** is C's pow in the scalar's precision, which XLA's "
                    "power does not reproduce (write np.power(x, y) on arrays)",
    **{name: "its result's length depends on the data (a size symbol), and XLA compiles "
             "only static shapes (replay on numpy or dask, or keep the shape with "
             "np.where(mask, x, fill))"
       for name in ("mask_select", "mask_put", "nonzero", "flatnonzero", "argwhere", "unique",
                    "compress_data", "extract")},
}
"""Ops this backend refuses, by name, with the reason (raised by :meth:`JaxBackend.bind`)."""


def _is_int(dtype: Any) -> bool:
    return np.dtype(dtype).kind in "iub"


_AXES_PARAMS = frozenset(("axes", "axis"))
"""Parameters naming axes: a list there is a list of axes (``np.tensordot(a, b, axes=[[1],
[0]])``), passed to jax.numpy as tuples, which it takes (and an array it refuses)."""


def _list_param(name: str, value: list) -> Any:
    """A list parameter as jax.numpy takes it: axes as tuples, a ``where=`` mask as a boolean
    array (an empty list would make a float64 one), any other list as an array."""
    if name in _AXES_PARAMS:
        return _as_tuples(value)
    return np.asarray(value, bool) if name == "where" else np.asarray(value)


def _lists_as_arrays(fn: Callable) -> Callable:
    """``fn`` with list arguments passed as NumPy arrays: NumPy reads a list as an array
    (``np.delete(x, [0, 2])``), jax.numpy refuses lists; lists of axes as tuples."""

    def run(*args: Any, **params: Any) -> Any:
        args = tuple(np.asarray(a) if type(a) is list else a for a in args)
        params = {k: _list_param(k, v) if type(v) is list else v for k, v in params.items()}
        return fn(*args, **params)

    run.__name__ = getattr(fn, "__name__", "op")
    return run


_COMPLEX_SUMS = frozenset(("add", "subtract"))
"""The ufuncs whose complex results XLA's CPU code would reassociate
(:func:`capviz.backends.jax.unfused.complex_sum_kept`)."""


_COMPLEX_PRODUCTS = frozenset(("multiply", "square"))
"""The ufuncs whose complex results NumPy computes in its fused form
(:func:`capviz.backends.jax.complex_products.multiply`; ``square`` is ``x * x``)."""


def _in_loop_dtypes(jnp: Any, ufunc: np.ufunc, fn: Callable) -> Callable:
    """``fn`` (the ufunc on jax.numpy) called on operands cast to the loop NumPy picks for
    them (``np.sin`` of int32 runs in float64, of uint8 in float16; ``bool << bool`` in int8):
    the casts are exact, and jax's own promotion would pick other loops."""

    name = ufunc.__name__

    def run(*args: Any) -> Any:
        loop = ufunc.resolve_dtypes(tuple(loop_key(a) for a in args) + (None,) * ufunc.nout)
        cast_args = [a.astype(dt) if hasattr(a, "dtype") and not isinstance(a, np.generic)
                     and np.dtype(a.dtype) != dt else a for a, dt in zip(args, loop)]
        if name in unfused.LITERAL_GUARDED:  # constants XLA would simplify (R5 #2)
            cast_args = unfused.opaque_operands(name, cast_args, loop)
        if name in _COMPLEX_SUMS and np.dtype(loop[-1]).kind == "c":
            return unfused.complex_sum_kept(fn(*cast_args))
        if name in _COMPLEX_PRODUCTS and np.dtype(loop[-1]).kind == "c" \
                and complex_products.NUMPY_FUSES:  # NumPy's fused form (R6 #24)
            operands = [jnp.asarray(a, loop[-1]) for a in cast_args]
            return complex_products.multiply(jnp, operands[0], operands[-1])
        return fn(*cast_args)

    run.__name__ = ufunc.__name__
    return run


def _astype(jnp: Any) -> Callable:
    def astype(x: Any, dtype: str) -> Any:
        return cast(jnp, x, dtype)

    return astype


def _integer_division(jnp: Any, name: str) -> Callable:
    """floor_divide, remainder, fmod: an integer divided by zero gives 0 in NumPy (with a
    warning), while XLA defines it otherwise."""
    fn = getattr(jnp, name)

    def run(a: Any, b: Any) -> Any:
        if not (_is_int(dtype_of(a)) and _is_int(dtype_of(b))):
            return fn(a, b)
        zero = jnp.asarray(b) == 0
        result = fn(a, jnp.where(zero, jnp.ones_like(b), b))
        return jnp.where(zero, jnp.zeros_like(result), result)

    run.__name__ = name
    return run


def _divmod(jnp: Any) -> Callable:
    floor_divide = _integer_division(jnp, "floor_divide")
    remainder = _integer_division(jnp, "remainder")

    def divmod_(a: Any, b: Any) -> tuple:
        return floor_divide(a, b), remainder(a, b)

    return divmod_


def _copy(jnp: Any) -> Callable:
    def copy(a: Any, order: str = "K", subok: bool = False) -> Any:
        return jnp.array(a, copy=True)  # jax arrays have no memory order to keep

    return copy


def split_pieces(x: Any, indices_or_sections: Any, axis: int, even: bool) -> list:
    """NumPy's ``array_split`` (``even``: ``split``'s check) with static slices, which keep
    NumPy's slicing rules for negative, repeated and out-of-range split points (jax.numpy's
    split refuses them)."""
    axis %= len(x.shape)
    n = x.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        if even and n % sections:
            raise ValueError("array split does not result in an equal division")
        size, extra = divmod(n, sections)
        sizes = [0] + extra * [size + 1] + (sections - extra) * [size]
        points = list(np.cumsum(sizes))
    else:
        points = [0, *[int(i) for i in indices_or_sections], n]
    pieces = []
    for start, stop in itertools.pairwise(points):
        index = [slice(None)] * len(x.shape)
        index[axis] = slice(start, stop)
        pieces.append(x[tuple(index)])
    return pieces


def _split(name: str) -> Callable[[Any], Callable]:
    def make(jnp: Any) -> Callable:
        def split(x: Any, indices_or_sections: Any, axis: int = 0) -> list:
            if name == "hsplit":
                axis = 1 if len(x.shape) > 1 else 0
            elif name in ("vsplit", "dsplit"):
                axis = 0 if name == "vsplit" else 2
            return split_pieces(x, indices_or_sections, axis, name != "array_split")

        return split

    return make


def _reciprocal(jnp: Any) -> Callable:
    def reciprocal(x: Any) -> Any:
        if not _is_int(dtype_of(x)):
            return jnp.reciprocal(x)
        require(jnp.all(x != 0), "the integer reciprocal of 0 is the platform's in NumPy")
        one = jnp.ones_like(x)
        return jnp.where(x == 1, one, jnp.where(x == -1, -one, jnp.zeros_like(x)))

    return reciprocal


_FLOAT_EXPONENTS = (-1, 0, 1, 2)
"""The integer exponents jax.numpy's power of floats computes as NumPy's (``1 / x``, ``1``,
``x``, ``x * x``, each rounded once); any other integer it raises by repeated squaring, up to
``(n - 1) / 2`` units of ``eps * |x ** n|`` off (28 for ``x ** 64``), and ``x ** -16`` of a small
float32 ``x`` as ``1 / x ** 16``, infinite where NumPy's is finite."""


def _float_power(jnp: Any, a: Any, b: Any, dtype: np.dtype) -> Any:
    """``a ** b`` in the float loop ``dtype``: a number ``b`` of 0.5 as ``np.sqrt`` (NumPy's
    loop takes that path: ``-0.0`` and ``-inf`` give ``-0.0`` and NaN, ``pow``'s ``0.0`` and
    ``inf``), an integer outside :data:`_FLOAT_EXPONENTS` as a float of ``dtype`` (XLA's
    ``pow``, within 1.35 ``eps * |result|`` of NumPy's on this CPU, as for any other exponent:
    ``capviz.backends.jax.carried_sources.approximated``)."""
    number = isinstance(b, (int, float, np.integer, np.floating)) and not isinstance(b, bool)
    if number and dtype.kind == "f" and b == 0.5:
        return jnp.sqrt(a)
    if number and dtype.kind == "f" and float(b).is_integer() \
            and b not in _FLOAT_EXPONENTS:
        return jnp.power(a, dtype.type(b))
    return jnp.power(a, b)


def _power(jnp: Any) -> Callable:
    """NumPy's power: in an integer loop, exponentiation by squaring in the loop's dtype,
    wrapping on overflow (``int64`` ``2 ** 70`` is 0, ``int16`` ``3 ** 251`` is 21563), for
    every exponent bit of the dtype; jax.numpy's integer power looks at 6 bits of the exponent
    only. A negative integer exponent fails the replay (NumPy raises ValueError). In a float
    loop, :func:`_float_power`."""
    from jax import lax

    def power(a: Any, b: Any) -> Any:
        loop = np.power.resolve_dtypes((loop_key(a), loop_key(b), None))
        dtype = np.dtype(loop[2])
        if dtype.kind not in "iu":
            return _float_power(jnp, a, b, dtype)
        base, exponent = jnp.broadcast_arrays(jnp.asarray(a).astype(dtype),
                                              jnp.asarray(b).astype(dtype))
        if dtype.kind == "i":
            require(jnp.all(exponent >= 0), "integers to negative integer powers are "
                    "not allowed (NumPy raises ValueError)")

        def step(_: Any, carry: tuple) -> tuple:
            result, base, exponent = carry
            result = jnp.where((exponent & 1) != 0, result * base, result)
            return result, base * base, lax.shift_right_logical(exponent, jnp.ones_like(exponent))

        start = (jnp.ones_like(base), base, exponent)
        result, _, _ = lax.fori_loop(0, dtype.itemsize * 8, step, start)
        return result

    return power


def _end_value_pairs(values: Any, ndim: int) -> Any:
    """``end_values`` as np.pad reads them (its ``_as_pairs``): one pair per axis, NumPy
    scalars where one or two values were given, Python scalars otherwise; the kind decides the
    float type of NumPy's ramp (a NumPy float64 scalar is not weak, a Python float is)."""
    x = np.array(values)
    if x.ndim < 3 and x.size == 1:
        x = x.ravel()
        return ((x[0], x[0]),) * ndim
    if x.ndim < 3 and x.size == 2 and x.shape != (2, 1):
        x = x.ravel()
        return ((x[0], x[1]),) * ndim
    return np.broadcast_to(x, (ndim, 2)).tolist()


def _ramp(jnp: Any, start: Any, edge: Any, num: int, dtype: np.dtype, axis: int) -> Any:
    """``np.linspace(start, edge, num, endpoint=False, dtype=dtype, axis=axis)`` for a float or
    complex ``dtype``, in NumPy's arithmetic: in the float type NumPy picks for ``start`` and
    ``edge`` (float64 for a NumPy float64 or integer scalar: ``end_values=(0, 1)`` ramps a
    float32 array in float64), ``arange(num) * step + start``, where ``step`` is ``(edge -
    start) / num`` unless a step is 0 (then ``arange(num) / num * (edge - start)``), cast to
    ``dtype`` last. jax.numpy's linspace interpolates in ``dtype`` instead, which misses
    NumPy's by units near a zero crossing of a float32 ramp and overflows float16."""
    with np.errstate(all="ignore"):
        dt = np.linspace(start, np.zeros(1, dtype), num=1, endpoint=False).dtype
        first = np.asarray(start).astype(dt)
    y = jnp.arange(num, dtype=dt).reshape((num,) + (1,) * len(edge.shape))
    delta = edge.astype(dt) - first
    # XLA folds ``x - (-0.0)`` and ``x + 0.0`` to ``x`` and keeps a -0.0 where NumPy's sum is
    # +0.0 (the review 7, finding 29): those zeros made +0.0 by a select, which it leaves
    zero_end = np.dtype(dt).kind == "f" and first == 0
    if zero_end and np.signbit(first):
        delta = jnp.where(delta == 0, jnp.zeros_like(delta), delta)
    step = divided(jnp, delta, num)
    scaled = jnp.where(jnp.any(step == 0), product(jnp, divided(jnp, y, num), delta),
                       product(jnp, y, step))
    if scaled.dtype != y.dtype:  # float64 holding float32 (float16) values: add, round once
        y = (scaled + first.astype(np.float64)).astype(dt)
    else:
        y = scaled + first
    if zero_end and not np.signbit(first):
        y = jnp.where(y == 0, jnp.zeros_like(y), y)
    return jnp.moveaxis(cast(jnp, y, dtype), 0, axis)


def _linear_ramp(jnp: Any, array: Any, pad_width: Any, end_values: Any) -> Any:
    """np.pad(array, pad_width, mode='linear_ramp', end_values=...) of a float or complex
    array: axis by axis, each ramp running from the end value to the edge of the array padded
    so far along the earlier axes, as NumPy's."""
    from jax import lax

    dtype = np.dtype(array.dtype)
    ndim = len(array.shape)
    widths = np.broadcast_to(np.asarray(pad_width), (ndim, 2)).tolist()
    if math.prod(array.shape) == 0:  # padded along an axis of 0 only: still empty
        return jnp.zeros(tuple(d + a + b for d, (a, b) in zip(array.shape, widths)), dtype)
    for axis, ((before, after), (first, last)) in enumerate(
            zip(widths, _end_value_pairs(end_values, ndim))):
        n = array.shape[axis]
        left = _ramp(jnp, first, lax.index_in_dim(array, 0, axis, False), before, dtype, axis)
        right = _ramp(jnp, last, lax.index_in_dim(array, n - 1, axis, False), after, dtype,
                      axis)
        array = jnp.concatenate([left, array, jnp.flip(right, axis)], axis=axis)
    return array


def _pad(jnp: Any) -> Callable:
    """np.pad: ``mode='linear_ramp'`` in NumPy's arithmetic for floats (:func:`_linear_ramp`),
    refused for integer and boolean arrays (NumPy floors a float ramp and casts it: a value
    one rounding off crosses an integer), as ``mode='mean'``/``'median'`` of integers are (NumPy
    rounds a float64 statistic half to even); list arguments as tuples (jax.numpy's pad takes them
    as static arguments, which must hash)."""
    pad = ops.OPS["pad"].bind(jnp)

    def run(*args: Any, **params: Any) -> Any:
        array = args[0] if args else params.pop("array")
        rest = list(args[1:])
        pad_width = rest.pop(0) if rest else params.pop("pad_width")
        mode = rest.pop(0) if rest else params.pop("mode", "constant")
        dtype = dtype_of(array)
        if mode == "linear_ramp":
            if dtype.kind in "biu":
                raise refusal(
                    f"np.pad(..., mode='linear_ramp') of {dtype} on the jax backend: NumPy's "
                    f"ramp is np.linspace computed in floats, floored and cast to {dtype}, "
                    "which jax.numpy's linspace rounds otherwise (a ramp value differs by "
                    "one), and a fused multiply-add on the device can move a value across an "
                    "integer; replay with backend='numpy' or backend='dask', or pad a float copy "
                    "(np.pad(x.astype(np.float64), ..., mode='linear_ramp'))")
            return _linear_ramp(jnp, jnp.asarray(array), pad_width,
                                params.get("end_values", 0))
        if mode in ("mean", "median") and dtype.kind in "iu":
            raise refusal(
                f"np.pad(..., mode={mode!r}) of {dtype} on the jax backend: NumPy computes the "
                "statistic in float64 and rounds it half to even before the cast, jax.numpy "
                "otherwise (uint32 values near 2**32 padded 1073741824 where NumPy pads "
                "1073741826); replay with backend='numpy' or backend='dask', or pad a float copy "
                f"and round it: np.round(np.pad(x.astype(np.float64), ..., mode={mode!r}))"
                f".astype(np.{dtype})")
        if mode == "median" and dtype.kind == "c":
            raise refusal(
                f"np.pad(..., mode='median') of {dtype} on the jax backend: jax.numpy's median "
                "takes no complex values (NumPy sorts them by real, then imaginary part); "
                "replay with backend='numpy', or pad the real and imaginary parts apart")
        params = {k: _as_tuples(v) for k, v in params.items()}
        if dtype == np.bool_ and params.get("reflect_type") == "odd":
            return _odd_reflection_of_booleans(jnp, pad, array, pad_width, mode, params)
        if dtype.kind in "fc" and params.get("reflect_type") == "odd":
            parts = (jnp.real(array), jnp.imag(array)) if dtype.kind == "c" else (array,)
            half = float(np.finfo(dtype).max) / 2
            require(jnp.all(jnp.asarray([jnp.all(jnp.abs(p) <= half) for p in parts])),
                    f"np.pad(..., reflect_type='odd') of {dtype} values beyond finfo.max / 2 "
                    "(or infinite): NumPy's 2 * edge - x overflows to an infinity (or NaN) "
                    "where XLA's fused multiply-add does not; replay with backend='numpy'")
        return pad(array, _as_tuples(pad_width), mode, **params)

    run.__name__ = "pad"
    return run


def _odd_reflection_of_booleans(jnp: Any, pad: Callable, array: Any, pad_width: Any,
                                mode: str, params: dict) -> Any:
    """np.pad of booleans with ``reflect_type='odd'``: NumPy reflects ``2 * edge - x`` in int64
    and stores each axis's padding as booleans (nonzero: True) before the next axis reads it.
    A padding longer than one reflection of the axis is refused: NumPy then reflects again,
    chunk by chunk, each chunk stored as booleans."""
    array = jnp.asarray(array)
    ndim = len(array.shape)
    widths = np.broadcast_to(np.asarray(pad_width), (ndim, 2)).tolist()
    for axis, (before, after) in enumerate(widths):
        room = array.shape[axis] - (mode == "reflect")
        if max(before, after) > room:
            raise refusal(
                f"np.pad(..., mode={mode!r}, reflect_type='odd') of bool by more than one "
                "reflection of an axis on the jax backend: NumPy reflects chunk by chunk, "
                "storing each as booleans; replay with backend='numpy', or pad "
                "x.astype(np.int8)")
        one = [(0, 0)] * ndim
        one[axis] = (before, after)
        array = pad(array.astype(np.int64), tuple(one), mode, **params) != 0
    return array


def _as_tuples(value: Any) -> Any:
    """A list or array argument as nested tuples (hashable)."""
    if isinstance(value, np.ndarray) and not value.ndim:
        return value[()]
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(_as_tuples(v) for v in value)
    return value


def in_bounds(jnp: Any, idx: Any, n: int, what: str) -> Any:
    """``idx`` with negative entries wrapped, checked to lie in ``[-n, n)`` (NumPy raises
    IndexError otherwise; jax clips or drops). The comparison runs in int64 (replays run under
    x64), never in the index's own dtype: ``-n`` wraps in an unsigned type and ``n`` overflows
    int8; a uint64 index has no negative entries and is compared with ``n`` alone."""
    idx = jnp.asarray(idx)
    message = f"{what} is out of bounds for an axis of size {n} (NumPy raises IndexError)"
    if idx.dtype == np.uint64:
        require(jnp.all(idx < np.uint64(n)), message)
        return idx.astype(np.int64)  # in bounds: below n, so it fits
    idx = idx.astype(np.int64)  # every other integer (or bool) index fits int64 exactly
    require(jnp.all((idx >= -n) & (idx < n)), message)
    return jnp.where(idx < 0, idx + n, idx)


def _index(jnp: Any) -> Callable:
    def index(x: Any, idx: Any) -> Any:
        idx = in_bounds(jnp, idx, x.shape[0], "an index")
        if not x.shape[0]:  # every index is out of bounds (checked): XLA's gather fails
            return jnp.zeros(tuple(idx.shape) + tuple(x.shape[1:]), x.dtype)
        return x[idx]

    return index


def _take(jnp: Any) -> Callable:
    """np.take: ``mode='raise'`` checks the indices (jax clips), ``'wrap'`` takes them modulo
    the axis, ``'clip'`` clips them to it (a negative index to 0, as NumPy's)."""

    def take(x: Any, idx: Any, axis: int | None = None, mode: str = "raise") -> Any:
        n = math.prod(x.shape) if axis is None else x.shape[axis]
        if mode == "raise":
            idx = in_bounds(jnp, idx, n, "an index of take")
        elif n:
            idx = jnp.asarray(idx).astype(np.int64)
            idx = jnp.mod(idx, n) if mode == "wrap" else jnp.clip(idx, 0, n - 1)
        return jnp.take(x, idx, axis=axis)

    return take


def _take_along_axis(jnp: Any) -> Callable:
    def take_along_axis(arr: Any, indices: Any, axis: int | None = -1, **params: Any) -> Any:
        n = math.prod(arr.shape) if axis is None else arr.shape[axis]
        return jnp.take_along_axis(arr, in_bounds(jnp, indices, n, "an index of "
                                                   "take_along_axis"), axis, **params)

    return take_along_axis


def _sort(jnp: Any) -> Callable:
    def sort(a: Any, axis: int | None = -1, kind: str | None = None, order: Any = None,
             **params: Any) -> Any:
        if order is not None:
            raise refusal("sort(order=...) sorts structured arrays, which jax has not")
        params.pop("stable", None)  # equal values are equal: the sorted values are the same
        return jnp.sort(a, axis=axis, **params)

    return sort


def _argsort(jnp: Any) -> Callable:
    def argsort(a: Any, axis: int | None = -1, kind: str | None = None,
                order: Any = None, **params: Any) -> Any:
        if order is not None:
            raise refusal("argsort(order=...) sorts structured arrays, which jax has not")
        if params.pop("stable", None):
            kind = "stable"
        if jnp.ndim(a) == 0:  # NumPy sorts a 0-d value as one of one: [0] (jax raises)
            a, axis = jnp.reshape(a, (1,)), -1
        result = jnp.argsort(a, axis=axis, stable=True, **params)
        if kind not in ("stable", "mergesort"):
            ordered = jnp.sort(a.reshape(-1) if axis is None else a,
                               axis=0 if axis is None else axis)
            ax = 0 if axis is None else axis
            n = ordered.shape[ax]
            if n > 1:
                first = jnp.take(ordered, jnp.arange(n - 1), axis=ax)
                rest = jnp.take(ordered, jnp.arange(1, n), axis=ax)
                # two NaNs are a tie too (NaN != NaN, but their order is quicksort's own)
                tie = (first == rest) | (jnp.isnan(first) & jnp.isnan(rest)) \
                    if dtype_of(a).kind in "fc" else first == rest
                require(~jnp.any(tie), "argsort of equal values (or of several NaNs) with "
                        "NumPy's default kind (quicksort): the order of ties is NumPy's own; "
                        "pass kind='stable'")
        return result

    return argsort


def _magnitude(jnp: Any, x: Any) -> Any:
    """``|x|`` in the unsigned type of ``x``'s width: exact for every value, ``INT_MIN``
    included (its magnitude does not fit the signed type, where ``abs`` leaves it negative)."""
    dtype = np.dtype(x.dtype)
    unsigned = np.dtype(f"u{dtype.itemsize}")
    u = x.astype(unsigned)  # a same-width integer conversion keeps the bits
    if dtype.kind == "u":
        return u
    return jnp.where(x < 0, jnp.zeros_like(u) - u, u)


def _gcd_of(jnp: Any, a: Any, b: Any) -> Any:
    """NumPy's gcd of two integer arrays of one dtype: Euclid's algorithm on the magnitudes in
    the unsigned type (each step lowers the remainder, so the loop ends for every value; a
    signed ``abs`` of ``INT_MIN`` stays negative, and jax.numpy's gcd never ends on it), the
    result cast back as NumPy's C code does (``gcd(INT_MIN, 0)`` is ``INT_MIN``)."""
    from jax import lax

    dtype = np.dtype(a.dtype)
    x, y = jnp.broadcast_arrays(_magnitude(jnp, a), _magnitude(jnp, b))

    def step(pair: tuple) -> tuple:
        x, y = pair
        nonzero = y != 0
        return (jnp.where(nonzero, y, x),
                jnp.where(nonzero, lax.rem(x, jnp.where(nonzero, y, 1)), 0).astype(y.dtype))

    g, _ = lax.while_loop(lambda pair: jnp.any(pair[1] != 0), step, (x, y))
    return g.astype(dtype)


def _integers(jnp: Any, a: Any, b: Any) -> tuple:
    """``a`` and ``b`` as arrays of their common integer dtype (the ufunc loop's; a Python int
    takes the array's dtype, as NumPy's weak promotion does)."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    dtype = jnp.result_type(a, b)
    if not _is_int(dtype):
        raise TypeError(f"gcd and lcm take integers, not {dtype}")
    return a.astype(dtype), b.astype(dtype)


def _gcd(jnp: Any) -> Callable:
    def gcd(a: Any, b: Any) -> Any:
        return _gcd_of(jnp, *_integers(jnp, a, b))

    return gcd


def _lcm(jnp: Any) -> Callable:
    """NumPy's lcm: ``|a| / gcd(a, b) * |b|`` in C, where int8 and int16 compute in ``int``
    (32 bits) and wider types wrap in their own width (``abs(INT_MIN)`` stays ``INT_MIN``);
    the result wraps to the dtype."""
    from jax import lax

    def lcm(a: Any, b: Any) -> Any:
        a, b = _integers(jnp, a, b)
        dtype = np.dtype(a.dtype)
        work = np.dtype(np.int32) if dtype.kind == "i" and dtype.itemsize < 4 else dtype
        a, b = a.astype(work), b.astype(work)
        g = _gcd_of(jnp, a, b)
        zero = g == 0
        divisor = jnp.where(zero, 1, g).astype(work)
        multiple = lax.div(*jnp.broadcast_arrays(jnp.abs(a), divisor)) * jnp.abs(b)
        result = jnp.where(zero, jnp.zeros_like(multiple), multiple)
        return result.astype(dtype)

    return lcm


def _modf(jnp: Any) -> Callable:
    """NumPy's modf (C's): the fractional part has the sign of ``x`` (``-0.0`` for ``-1.0``
    and ``-0.0``), is a signed zero for an infinity, and NaN for NaN; jax.numpy's gives NaN for
    infinities and ``+0.0`` for negative integers. ``x - trunc(x)`` is exact in floats."""

    def modf(x: Any) -> tuple:
        whole = jnp.trunc(x)
        fraction = jnp.where(jnp.isinf(x), jnp.zeros_like(x), x - whole)
        fraction = jnp.where(jnp.isnan(x), x, jnp.copysign(fraction, x))
        return fraction, whole

    return modf


def _arg_extremum(name: str) -> Callable[[Any], Callable]:
    def make(jnp: Any) -> Callable:
        fn = getattr(jnp, name)

        def run(a: Any, *args: Any, **params: Any) -> Any:
            dtype = dtype_of(a)
            if dtype.kind == "c":
                raise refusal(
                    f"{name} of complex values: XLA cannot order complex numbers in {name} "
                    f"(NumPy orders them by real, then imaginary part); replay with "
                    f"backend='numpy', or take np.{name} of np.real or np.abs of the values")
            axis = args[0] if args else params.get("axis")
            if not len(a.shape) and axis in (0, -1):
                # NumPy takes axis 0 (or -1) of a 0-d array as its one element (keepdims or
                # not: the result is 0-d)
                a, args = jnp.reshape(a, (1,)), ()
                params = {**params, "axis": 0, "keepdims": False}
                axis = 0
            if name.startswith("nan") and dtype.kind == "f":
                # NumPy raises on a slice of NaNs only, where jax.numpy gives -1
                nan = jnp.isnan(jnp.asarray(a))
                require(~jnp.any(jnp.all(nan, axis=axis)),
                        f"ValueError: All-NaN slice encountered (np.{name} raises on a slice "
                        "of NaNs only, where jax.numpy gives -1)")
            return fn(a, *args, **params)

        run.__name__ = name
        return run

    return make


def advanced_key(jnp: Any, shape: tuple, idx: tuple, index: tuple, tensors: tuple) -> tuple:
    """The tuple index of an ``advanced_index`` node: static lists as arrays, each tensor checked
    to lie in bounds of the axis it indexes (jax clips where NumPy raises)."""
    full = [np.asarray(k) if isinstance(k, list) else k for k in index]
    for pos, axis, value in zip(tensors, tensor_axes(index, tensors, len(shape)), idx):
        full[pos] = in_bounds(jnp, value, shape[axis], "an index")
    return tuple(full)


def _advanced_index(jnp: Any) -> Callable:
    def advanced_index(x: Any, *idx: Any, index: tuple, tensors: tuple) -> Any:
        return x[advanced_key(jnp, x.shape, idx, index, tensors)]

    return advanced_index


def _append(jnp: Any) -> Callable:
    """np.append: NumPy ravels each operand into an array first, so a number is an int64,
    float64, complex128 or bool array, not a weak scalar (``np.append(int8_x, 0)`` is int64);
    jax.numpy's append promotes it weakly."""

    def append(arr: Any, values: Any, axis: Any = None) -> Any:
        arr, values = (v if hasattr(v, "dtype") else np.asarray(v) for v in (arr, values))
        return jnp.append(arr, values, axis=axis)

    return append


def _spacing(jnp: Any) -> Callable:
    """np.spacing: NaN at an infinity of either sign, as NumPy gives (jax.numpy's float16
    spacing of -inf is inf: the thorough differential profile of stop 35)."""

    def spacing(x: Any) -> Any:
        result = jnp.spacing(x)
        return jnp.where(jnp.isinf(x), jnp.asarray(np.nan, result.dtype), result)

    return spacing


def _nextafter(jnp: Any) -> Callable:
    """np.nextafter: NumPy's float16 form gives ``x`` where ``x == y`` (``nextafter(-0.0,
    0.0)`` is -0.0), its float32/64 form, C's, gives ``y``, as jax.numpy does for every type
    (review 7 #36)."""

    def nextafter(x: Any, y: Any) -> Any:
        result = jnp.nextafter(x, y)
        if np.dtype(result.dtype) != np.float16:
            return result
        x = jnp.asarray(x, result.dtype)
        return jnp.where(x == jnp.asarray(y, result.dtype), x, result)

    return nextafter


OVERRIDES: dict[str, Callable[[Any], Callable]] = {
    "astype": _astype,
    "spacing": _spacing,
    "nextafter": _nextafter,
    "append": _append,
    "floor_divide": lambda jnp: _integer_division(jnp, "floor_divide"),
    "remainder": lambda jnp: _integer_division(jnp, "remainder"),
    "fmod": lambda jnp: _integer_division(jnp, "fmod"),
    "divmod": _divmod,
    "power": _power,
    "pad": _pad,
    "index": _index,
    "take": _take,
    "take_along_axis": _take_along_axis,
    "argsort": _argsort,
    "sort": _sort,
    "copy": _copy,
    **{name: _split(name) for name in ("split", "array_split", "hsplit", "vsplit", "dsplit")},
    "reciprocal": _reciprocal,
    "gcd": _gcd,
    "lcm": _lcm,
    "modf": _modf,
    **{name: _arg_extremum(name) for name in ("argmax", "argmin", "nanargmax", "nanargmin")},
    "advanced_index": _advanced_index,
    "random_uniform": uniform,
    "random_normal": normal,
    "random_bernoulli": bernoulli,
}
"""Ops bound to a functional form instead of ``op.bind(jax.numpy)``: the random ops (a traced
seed) and the ops whose NumPy result on some values XLA does not give (checked, see
:func:`require`), here; the writes (jax arrays are immutable, :mod:`.writes`) and the ufunc
methods (:mod:`.ufunc_methods`) add theirs when imported, as the backend does."""


def _integer_dtype_cast(jnp: Any, fn: Callable) -> Callable:
    """``fn`` (a reduction or scan with ``dtype=``) with a float operand cast to an integer
    ``dtype`` by :func:`cast` first, as NumPy casts each element into the loop's type: jax
    casts inside the op, saturating a value out of range (``cumprod(float16, dtype=int32)``
    of an infinity: ``INT32_MAX`` against NumPy's platform value), which :func:`cast` checks."""

    def run(*args: Any, **params: Any) -> Any:
        dtype = params.get("dtype")
        if dtype is not None and args and hasattr(args[0], "dtype") \
                and np.dtype(dtype).kind in "iu" and dtype_of(args[0]).kind in "fc":
            args = (cast(jnp, args[0], dtype), *args[1:])
        return fn(*args, **params)

    run.__name__ = getattr(fn, "__name__", "op")
    return run


def _round(jnp: Any) -> Callable:
    """np.round of floats with ``decimals``: NumPy's ``rint(x * 10**d) / 10**d`` (``x / 10**-d``
    and ``* 10**-d`` for negative ``d``) in the array's precision, each step rounded on its own
    (a float32 or float16 step exact in float64, rounded once: a huge value overflows to inf as
    in NumPy, where XLA's fused steps do not); integers and ``decimals=0`` as jax.numpy's."""
    from jax import lax

    def steps(x: Any, decimals: int) -> Any:
        dtype = np.dtype(x.dtype)
        factor = 10.0 ** abs(decimals)
        first, last = (operator.mul, operator.truediv) if decimals >= 0 else (
            operator.truediv, operator.mul)
        if dtype.itemsize < 8:
            info = np.finfo(dtype)
            wide = np.float64(np.asarray(factor, dtype))  # the factor in x's type, as NumPy's

            def rounded(v: Any) -> Any:
                return lax.reduce_precision(v, exponent_bits=info.nexp,
                                            mantissa_bits=info.nmant)

            y = rounded(first(x.astype(np.float64), wide))
            y = jnp.rint(y)
            return rounded(last(y, wide)).astype(dtype)
        return last(jnp.rint(first(x, factor)), factor)

    def round_(a: Any, decimals: int = 0, out: Any = None) -> Any:
        a = jnp.asarray(a)
        dtype = dtype_of(a)
        decimals = int(decimals)
        if dtype == np.bool_:  # NumPy's rint of booleans runs in float16 (decimals=0 only)
            return a.astype(np.float16)
        if dtype.kind not in "fc" or decimals == 0:
            return jnp.round(a, decimals)
        if dtype.kind == "c":
            return jax_complex(jnp, steps(jnp.real(a), decimals), steps(jnp.imag(a), decimals))
        return steps(a, decimals)

    return round_


def jax_complex(jnp: Any, real: Any, imag: Any) -> Any:
    """``real + 1j * imag`` without arithmetic on the parts (``lax.complex``)."""
    from jax import lax

    return lax.complex(real, imag)


def _polymul(jnp: Any) -> Callable:
    """np.polymul, its leading coefficients checked (:data:`capviz.ops.polynomials.
    POLYMUL_TRIMS`), without jax's trimming; 0-d operands as 1-d and booleans convolved as
    NumPy's (:func:`convolve_as_numpy`)."""
    from capviz.ops.polynomials import POLYMUL_TRIMS

    def polymul(a1: Any, a2: Any) -> Any:
        a1, a2 = jnp.atleast_1d(a1), jnp.atleast_1d(a2)  # NumPy's, before its convolve
        for a in (a1, a2):
            if a.shape[0] > 1:
                require(a[0] != 0, POLYMUL_TRIMS)
        kinds = dtype_of(a1).kind + dtype_of(a2).kind
        empty = not (a1.shape[0] and a2.shape[0])  # NumPy's product is [0.]
        if set(kinds) <= set("biu") and not empty:
            return convolve_as_numpy(jnp, a1, a2)  # integers in their type (jax's: floats)
        result = jnp.polymul(a1, a2, trim_leading_zeros=False)
        if not empty:
            sums_of_products(jnp, result, a1, a2,
                             lambda x, y: jnp.polymul(x, y, trim_leading_zeros=False),
                             min(a1.shape[0], a2.shape[0]))
        return result

    return polymul


_REDUCTIONS_IN_FLOATS = ("var", "std", "nanvar", "nanstd", "mean", "nanmean")


def _float_reduction(name: str) -> Callable[[Any], Callable]:
    """mean, var, std (and their nan forms) with an integer ``dtype=``: NumPy sums in that
    integer type (wrapping) and divides; jax.numpy computes otherwise (or not at all), so the
    form refuses it at the node."""

    def make(jnp: Any) -> Callable:
        fn = getattr(jnp, name)

        def run(*args: Any, **params: Any) -> Any:
            dtype = params.get("dtype")
            if dtype is not None and args and dtype_of(args[0]).kind == "c" \
                    and np.dtype(dtype).kind != "c":
                raise refusal(
                    f"np.{name}(..., dtype={np.dtype(dtype)}) of complex values: jax.numpy "
                    "takes no real dtype for them; replay with backend='numpy'")
            if dtype is not None and np.dtype(dtype).kind in "biu":
                raise refusal(
                    f"np.{name}(..., dtype={np.dtype(dtype)}): NumPy accumulates in that "
                    "integer type, wrapping on overflow, where jax.numpy computes in floats; "
                    "replay with backend='numpy', or pass a float dtype")
            return fn(*args, **{k: _list_param(k, v) if type(v) is list else v
                                for k, v in params.items()})

        run.__name__ = name
        return run

    return make


def _triangle(name: str) -> Callable[[Any], Callable]:
    """np.tril / np.triu: a 1-d operand is NumPy's too (its rows broadcast to a square), which
    jax.numpy refuses."""

    def make(jnp: Any) -> Callable:
        fn = getattr(jnp, name)

        def run(m: Any, k: int = 0) -> Any:
            m = jnp.asarray(m)
            if len(m.shape) == 1:
                m = jnp.broadcast_to(m, (m.shape[0], m.shape[0]))
            return fn(m, k)

        return run

    return make


def _vander(jnp: Any) -> Callable:
    """np.vander: booleans as NumPy's integer powers of them (jax.numpy has none)."""

    def vander(x: Any, *args: Any, **params: Any) -> Any:
        x = jnp.asarray(x)
        if dtype_of(x) == np.bool_:
            x = x.astype(np.int64)
        return jnp.vander(x, *args, **params)

    return vander


def _digitize(jnp: Any) -> Callable:
    """np.digitize: NumPy's ValueError for bins that are neither increasing nor decreasing
    (checked), where jax.numpy returns indices."""

    def digitize(x: Any, bins: Any, right: bool = False) -> Any:
        bins = jnp.asarray(bins)
        if bins.shape and bins.shape[0] > 1:
            later, earlier = bins[1:], bins[:-1]  # compared, not subtracted (unsigned bins)
            require(jnp.all(later >= earlier) | jnp.all(later <= earlier),
                    "ValueError: bins must be monotonically increasing or decreasing")
        return jnp.digitize(x, bins, right)

    return digitize


def _insert_indices(jnp: Any) -> Callable:
    """np.insert with an index tensor: each index checked to lie in ``[-n, n]`` (NumPy raises
    IndexError; jax.numpy clips)."""

    def insert_indices(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
        arr = jnp.asarray(arr)
        n = math.prod(arr.shape) if axis is None else arr.shape[axis]
        obj = jnp.asarray(obj).astype(np.int64)
        require(jnp.all((obj >= -n) & (obj <= n)), f"an index of np.insert is out of bounds "
                f"for an axis of size {n} (NumPy raises IndexError)")
        return jnp.insert(arr, obj, values, axis=axis)

    return insert_indices


def _logspace(jnp: Any) -> Callable:
    """``np.logspace`` as NumPy computes it (``numpy/_core/function_base.py``): ``base ** y`` of
    NumPy's ``np.linspace`` points (:func:`linspace_as_numpy`, NumPy's bits: an infinite start
    makes NaN points, ``0 * inf``), an array ``base`` broadcast with the ends and spread along
    ``axis``, cast to ``dtype`` last. jax.numpy's logspace interpolates its own points: ``inf``
    and ``0.0`` where NumPy's are NaN (the differential profile's 3 silent ``np.logspace``
    cases). The power is XLA's ``pow``, carried to a cancelling add or subtract as any
    approximated power (:data:`capviz.backends.jax.carried_sources.APPROXIMATED`)."""

    def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
                 base: Any = 10.0, dtype: Any = None, axis: int = 0) -> Any:
        if not isinstance(base, (float, int)) and np.ndim(base):
            base = np.asarray(base) if isinstance(base, (list, tuple)) else base  # float64
            ndim = len(jnp.broadcast_shapes(np.shape(start), np.shape(stop), np.shape(base)))
            start, stop, base = (_at_least(jnp, a, ndim) for a in (start, stop, base))
            base = jnp.expand_dims(base, axis)
        y = linspace_as_numpy(jnp, start, stop, num, endpoint, None, axis)
        result = jnp.power(base, y)
        return result if dtype is None else cast(jnp, result, dtype)

    return logspace


def _at_least(jnp: Any, value: Any, ndim: int) -> Any:
    """``np.array(value, ndmin=ndim)``: ones prepended to its shape."""
    value = jnp.asarray(value)
    return value.reshape((1,) * (ndim - len(value.shape)) + tuple(value.shape))


def _create(jnp: Any) -> Callable:
    """The ``create`` op: ``np.zeros``, ``np.eye``... made inside a capture, of plain arguments.
    A range (``np.arange``, ``linspace``, ``logspace``, ``geomspace``) is NumPy's own, made
    when the program is traced and held as a constant: jax.numpy computes its points otherwise
    (``np.linspace(0.1, 0.7, 13)``: 2 of 13 points an ulp off; ``np.arange(-2.0, 1e3, 1 / 3)``:
    2,844 of 3,006; ``np.geomspace(1, 1000, 4)``: 2 of 4, ``x - np.geomspace(1, 1000, 4)`` not
    NumPy's 0 where ``x`` holds its points). The others are jax.numpy's, exact."""

    def create(*, function: str, args: tuple = (), kwargs: dict | None = None) -> Any:
        if function in RANGES:
            with np.errstate(all="ignore"):  # NumPy's warnings were given at the capture
                return jnp.asarray(getattr(np, function)(*args, **(kwargs or {})))
        name = "zeros" if function == "empty" else function
        return getattr(jnp, name)(*args, **(kwargs or {}))

    return create


def _meshgrid(jnp: Any) -> Callable:
    """``np.meshgrid``, which flattens each input (``x.reshape(-1)`` along its own axis), where
    jax.numpy's requires 1-d inputs and raised on a (1, 1) one."""

    def meshgrid(*xi: Any, **params: Any) -> Any:
        return jnp.meshgrid(*[jnp.ravel(jnp.asarray(x)) for x in xi], **params)

    return meshgrid


OVERRIDES.update({"create": _create, "meshgrid": _meshgrid, "insert_indices": _insert_indices,
                  "logspace": _logspace,
                  "tril": _triangle("tril"),
                  "triu": _triangle("triu"), "vander": _vander, "digitize": _digitize})
OVERRIDES.update(FUNCTIONS)
OVERRIDES.update(complex_products.forms(OVERRIDES))  # complex outer, kron: NumPy's multiply
OVERRIDES.update({"round": _round, "polymul": _polymul, "cross": unfused.cross,
                  "divide": unfused.quotient,
                  "linalg.cross": unfused.linalg_cross,
                  **{name: _float_reduction(name) for name in _REDUCTIONS_IN_FLOATS}})


_NAN_REDUCTIONS = frozenset(("nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax",
                             "nanmin"))
"""The nan-reductions NumPy runs on a 0-d operand along axis 0 or -1 (as its one element: its
ufunc reductions take that axis), where jax.numpy raises (:func:`_zero_d_along_axis`)."""


_CUMULATIVE = frozenset(("cumsum", "cumprod", "nancumsum", "nancumprod", "cumulative_sum",
                         "cumulative_prod"))
"""The accumulations NumPy runs on a 0-d operand along axis 0 or -1 (as a 1-d array of its one
element: ``np.nancumsum(np.array(2.5), axis=0)`` is ``[2.5]``), where jax.numpy raises
(:func:`_zero_d_along_axis`)."""


_ZERO_D_AXES = (0, -1, (0,), (-1,))
_ZERO_D_AXES_CUMULATIVE = (None, *_ZERO_D_AXES)  # np.cumulative_sum's axis=None: no flattening


def _zero_d_along_axis(jnp: Any, fn: Callable, cumulative: bool = False) -> Callable:
    """``fn`` (a nan-reduction, or an accumulation where ``cumulative``) with a 0-d operand
    along axis 0 or -1 (an accumulation's also along ``axis=None``) taken as a 1-d array of
    its one element along axis 0: a reduction's result 0-d as NumPy's (keepdims or not), an
    accumulation's 1-d as NumPy's."""

    def run(a: Any, *args: Any, **params: Any) -> Any:
        axes = _ZERO_D_AXES_CUMULATIVE if cumulative else _ZERO_D_AXES
        if not len(np.shape(a)) and params.get("axis") in axes:
            a = jnp.reshape(jnp.asarray(a), (1,))
            params = {**params, "axis": 0}
            if not cumulative:
                params["keepdims"] = False
        return fn(a, *args, **params)

    run.__name__ = getattr(fn, "__name__", "reduction")
    return run


MASKED_FORMS = {masked: plain for plain, masked in MASKED.items()}
"""The ``where=``/``initial=`` ops (``sum_where``...) and the reduction each is a form of."""


def _masked(fn: Callable) -> Callable:
    """A ``where=``/``initial=`` op (:data:`MASKED_FORMS`) as its plain reduction's form ``fn``
    with the mask, the op's second operand, passed as ``where=``: jax.numpy's reductions take
    it, and every check of the plain reduction (sums that cancel, subnormals, float16
    overflow) reads ``where=`` and ``initial=`` from its parameters, as for the nan forms."""

    def run(a: Any, *mask: Any, **params: Any) -> Any:
        if mask:
            params["where"] = mask[0]
        return fn(a, **params)

    run.__name__ = getattr(fn, "__name__", "reduction")
    return run


def functional(op: ops.Op, jnp: Any, checks: bool = True) -> Callable:
    """The callable that runs ``op`` on ``jnp`` as NumPy does: its form of :data:`OVERRIDES`, or
    ``op.bind(jnp)``; a ufunc in NumPy's loop, list arguments as arrays; an accumulating
    reduction's float operand cast to an integer ``dtype=`` with :func:`cast`; a nan-reduction
    or an accumulation of a 0-d operand along axis 0 as NumPy's (:func:`_zero_d_along_axis`);
    the value checks of :mod:`capviz.backends.jax.checks` and the sums that cancel of
    :mod:`capviz.backends.jax.cancellation` (``checks=False``: without them, for a form that runs
    the op inside a jax loop, where a check cannot be returned). (Refusals are the caller's:
    :data:`UNSUPPORTED`.)"""
    plain = MASKED_FORMS.get(op.name)
    if plain is not None:
        return _masked(functional(ops.OPS[plain], jnp, checks))
    make = OVERRIDES.get(op.name)
    fn = make(jnp) if make is not None else op.bind(jnp)
    if op.random:
        return fn
    if op.name in ops.UFUNCS:
        fn = _in_loop_dtypes(jnp, ops.UFUNCS[op.name], fn)
    elif make is None:
        fn = _lists_as_arrays(fn)
    if op.name in python_ints.FORMS:  # a Python int beyond an integer type (R8 #12)
        fn = python_ints.kept(op.name, jnp, fn)
    if op.name in traits.ACCUMULATES:
        fn = _integer_dtype_cast(jnp, fn)
    if checks:
        fn = variances.checked(op.name, jnp, checked(op.name, jnp,
                                                    cancellation.checked(op.name, jnp, fn)))
        fn = complex_picks.checked(op.name, jnp, fn)  # a near tie of XLA's values (stop 37)
    if op.name in unfused.PRODUCTS:  # rounded before an add reads it: no fused multiply-add
        fn = unfused.rounding(fn)
    if op.name in unfused.SUMS_FROM_ZERO:  # a zero sum is NumPy's +0.0 (R6 #20)
        fn = unfused.sums_from_zero(op.name, fn)
    if op.name in _NAN_REDUCTIONS or op.name in _CUMULATIVE:
        return _zero_d_along_axis(jnp, fn, cumulative=op.name in _CUMULATIVE)
    return fn
