"""One definition per NumPy function op: :class:`FunctionSpec` and :func:`define`.

A spec names the NumPy function (``"linalg.inv"``: ``np.linalg.inv``), which of its parameters
are tensor operands, and its shape and dtype rules. :func:`define` turns it into an
:class:`capviz.ops.table.Op` whose ``impl(xp)`` is that same function of namespace ``xp``, called
with the same arguments as the user's eager call, so replay on NumPy is bit for bit what eager NumPy
computes. The ``__array_function__`` handler (:mod:`capviz.numpy_api`) is generated from the spec
and the NumPy function's own signature, so every parameter, default and keyword lives in one
place: NumPy.

Rules never touch data. Shapes come from a written rule, or from running the function on
zero-byte dummies (``np.dtype([])``) for ops that only move elements; dtypes come from running the
function on one-element proxies of the operands' dtypes and ranks (NumPy's own promotion).
"""

from __future__ import annotations

import inspect
import types
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from capviz.ops import table as ops

SPECS: dict[str, FunctionSpec] = {}
"""Every function spec, by op name (the NumPy path below ``np``)."""

VOID = np.dtype([])
_DTYPE_CACHE: dict = {}
_RULE_ERRORS = (ValueError, TypeError, IndexError, KeyError, ArithmeticError, AttributeError,
                RuntimeError, MemoryError, np.exceptions.AxisError, np.linalg.LinAlgError)
"""What a rule raises for operands or parameters NumPy would refuse (a capture's ShapeError)."""


@dataclass(frozen=True)
class FunctionSpec:
    """How capture records one NumPy function.

    Attributes:
        path: the function below ``np`` (``"cumsum"``, ``"linalg.inv"``, ``"fft.rfft"``); also
            the op name.
        tensors: the parameters that are tensor operands, in call order (``"*xi"``: variadic;
            ``"tup[]"``: one parameter holding a sequence of them). Every other argument is a
            static parameter recorded in the graph.
        shape: ``"same"`` (the first operand's), ``"broadcast"``, ``"dummy"`` (run on zero-byte
            dummies), or ``rule(shapes, params) -> shape`` (a list of shapes when ``multi``).
        dtype: ``"proxy"`` (run on one-element proxies), ``"same"`` (the first operand's),
            ``"each"`` (result i has operand i's), ``"promote"``, ``"arrays"`` (promoted with
            each number made an array first, as ``np.append`` does), or a dtype.
        multi: the function returns several arrays.
        container: the type those come back in (``tuple``, ``list`` or a NumPy named tuple),
            or a function of the results that builds NumPy's return value (``np.histogramdd``'s
            ``(hist, [edges...])``; ``np.gradient``'s lone array for one axis). The op itself
            returns the flat results (:func:`flat_results`).
        index: operands that are integer indices (dummies keep their dtype, zero strides).
        probe: parameter overrides for the proxy and dummy runs (``num=2`` for ``np.linspace``,
            so a dtype never costs memory), or ``probe(params) -> params``.
        refuse: parameters that capture cannot honour when given (any value but the default),
            each with the alternative to write.
        refuse_values: ``{param: {value: alternative}}`` for single values capture cannot honour.
        per_operand: like ``np.atleast_1d(*arys)``: one op per operand, one result per operand.
        leading: static parameters passed positionally before the operands (``np.einsum``'s
            subscripts).
        keywords: the keywords the function's ``**kwargs`` takes (``np.pad``'s
            ``constant_values``...); any other is refused by name.
        refuse_if: ``refuse_if(operands, params) -> (what, alternative) | None``: a call
            capture cannot make exact for these operands (a result dtype that would depend on
            the values of a real tensor), refused by name: ``"<call> <what>"``.
        other_form: ``other_form(args) -> args | None``: another calling form of the function
            rewritten into the leading-parameter one, or ``None`` when ``args`` are not in it
            (``np.einsum(a, [0, 1], b, [1, 2])``, its sublist form, as
            ``np.einsum("AB,BC", a, b)``).
        proxies: ``proxies(operands) -> list`` builds the one-element proxies the dtype rule
            runs on, for a function whose checks need more than one element per axis (the
            proxy's shape is then part of the dtype cache key).
    """

    path: str
    tensors: tuple[str, ...]
    shape: Any = "same"
    dtype: Any = "proxy"
    multi: bool = False
    container: Any = tuple
    index: tuple[str, ...] = ()
    probe: Any = field(default_factory=dict)
    refuse: dict = field(default_factory=dict)
    refuse_values: dict = field(default_factory=dict)
    per_operand: bool = False
    leading: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    refuse_if: Any = None
    other_form: Any = None
    proxies: Any = None

    @property
    def name(self) -> str:
        return self.path

    @cached_property
    def positional(self) -> bool:
        """The operands are NumPy's leading parameters, in order (so they are passed by
        position, as some are positional-only)."""
        names = list(inspect.signature(self.numpy_function).parameters)
        return list(self.tensors) == names[:len(self.tensors)]

    @cached_property
    def numpy_function(self) -> Callable:
        """The NumPy function this spec records."""
        return resolve(np, self.path)


def resolve(xp: Any, path: str) -> Callable:
    """``xp.linalg.inv`` for ``path == "linalg.inv"`` (AttributeError when missing). Where
    NumPy's function is capviz's stand-in of the moment (a capture is open:
    :mod:`capviz.randomness.creation`'s hooks of ``np.copy``, ``np.zeros``..., and
    :mod:`capviz.randomness.hooks`' of ``np.random``), the function it stands in for: an op
    bound then keeps its callable for every later replay
    (:meth:`capviz.ops.table.Op.bind` caches it), which must
    be NumPy's own, not the hook (a dask cluster cannot pickle the hook for its workers: it holds a
    thread-local)."""
    obj = xp
    for part in path.split("."):
        obj = getattr(obj, part)
    while _capviz_hook(obj):
        obj = obj.__wrapped__
    return obj


def _capviz_hook(value: Any) -> bool:
    """Whether ``value`` is one of capviz's hooks of a NumPy function (its ``__wrapped__``:
    NumPy's function)."""
    return isinstance(value, types.FunctionType) and hasattr(value, "__wrapped__") \
        and str(getattr(value, "__module__", None) or "").startswith("capviz.randomness.")


def static_params(spec: FunctionSpec) -> tuple[str, ...]:
    """The static parameters a node of ``spec``'s op may hold: NumPy's parameters that are not
    operands, the leading ones, and the documented keywords of a ``**kwargs``."""
    names = [name for name, p in inspect.signature(spec.numpy_function).parameters.items()
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
             and name not in {t.strip("*[]") for t in spec.tensors}]
    return (*spec.leading, *names, *spec.keywords)


def define(spec: FunctionSpec) -> ops.Op:
    """Register the op for ``spec`` (and remember the spec); returns the op."""
    SPECS[spec.path] = spec
    return ops.register(ops.Op(spec.path, _impl(spec), _meta(spec), params=static_params(spec),
                               nargs=(0, None), multi=spec.multi))


# --- running ------------------------------------------------------------------------------------


def packing(spec: FunctionSpec) -> str:
    """How operands are passed: ``"variadic"`` (``*xi``), ``"sequence"`` (one list),
    ``"mixed"`` (single operands and lists, each list the same length: ``np.select``),
    ``"trailing"`` (named operands, then a variadic one: ``np.gradient(f, *varargs)``) or
    ``"named"`` (each by its parameter name)."""
    first = spec.tensors[0] if spec.tensors else ""
    if first.startswith("*"):
        return "variadic"
    if any(t.startswith("*") for t in spec.tensors[1:]):
        return "trailing"
    if any(t.endswith("[]") for t in spec.tensors):
        return "sequence" if len(spec.tensors) == 1 else "mixed"
    return "named"


def regroup(spec: FunctionSpec, operands: Sequence) -> list:
    """The flat operands of a ``mixed`` spec as NumPy's arguments (lists rebuilt)."""
    lists = [t for t in spec.tensors if t.endswith("[]")]
    each = (len(operands) - (len(spec.tensors) - len(lists))) // len(lists)
    out, i = [], 0
    for name in spec.tensors:
        if name.endswith("[]"):
            out.append(list(operands[i:i + each]))
            i += each
        else:
            out.append(operands[i])
            i += 1
    return out


def call(spec: FunctionSpec, fn: Callable, operands: Sequence, params: dict) -> Any:
    """``fn`` called as the user called the NumPy function: operands in their places."""
    how = packing(spec)
    if how == "mixed":
        return fn(*regroup(spec, operands), **params)
    if spec.leading:
        params = dict(params)
        first = [params.pop(name) for name in spec.leading]
        return fn(*first, *operands, **params)
    if how in ("variadic", "trailing"):
        return fn(*operands, **params)
    if how == "sequence":
        return fn(list(operands), **params)
    if spec.positional:
        return fn(*operands, **params)
    named = {k: v for k, v in zip(spec.tensors, operands) if v is not None}
    return fn(**named, **params)


def flat_results(out: Any) -> tuple:
    """The arrays of a multi-result call, in order: nested lists flattened (``np.histogramdd``'s
    ``(hist, [edges...])``), a lone array as one result (``np.gradient`` along one axis)."""
    if not isinstance(out, (tuple, list)):
        return (out,)
    flat: list = []
    for item in out:
        flat.extend(flat_results(item) if isinstance(item, (tuple, list)) else (item,))
    return tuple(flat)


def _impl(spec: FunctionSpec) -> Callable:
    def impl(xp: Any) -> Callable:
        fn = resolve(xp, spec.path)

        def run(*operands: Any, **params: Any) -> Any:
            return call(spec, fn, operands, params)

        def run_flat(*operands: Any, **params: Any) -> Any:
            return flat_results(call(spec, fn, operands, params))

        return run_flat if spec.multi and spec.container not in (tuple, list) else run

    return impl


# --- rules --------------------------------------------------------------------------------------


def _present(args: Sequence) -> list:
    """Operands without the ``None`` that stands for an optional operand not given."""
    return [a for a in args if a is not None]


def _dummy(a: Any, index: bool) -> Any:
    if not ops.is_tensor_meta(a):
        return a if index or a is None else np.empty((), VOID)
    if index:
        return np.broadcast_to(np.zeros((), a.dtype), a.shape)
    return np.empty(a.shape, VOID)


def _dummies(spec: FunctionSpec, args: Sequence) -> list:
    flags = _index_flags(spec, len(args))
    return [_dummy(a, f) for a, f in zip(args, flags)]


def _index_flags(spec: FunctionSpec, n: int) -> list[bool]:
    how = packing(spec)
    if how == "mixed":
        groups = regroup(spec, list(range(n)))
        flags = []
        for name, group in zip(spec.tensors, groups):
            flags += [name.strip("[]") in spec.index] * (len(group) if name.endswith("[]")
                                                          else 1)
        return flags
    if how != "named":
        return [spec.tensors[0].strip("*[]") in spec.index] * n
    return [name in spec.index for name in spec.tensors[:n]]


def _call(spec: FunctionSpec, args: Sequence, params: dict) -> Any:
    probe = spec.probe(params) if callable(spec.probe) else {**params, **spec.probe}
    return call(spec, spec.numpy_function, args, probe)


def rule_key(args: Sequence, params: dict, shaped: bool = False) -> Any:
    parts = []
    for a in args:
        if ops.is_tensor_meta(a):
            parts.append((tuple(a.shape) if shaped else len(a.shape), a.dtype))
        else:
            parts.append((type(a), a))
    try:
        key = (tuple(parts), repr(sorted(params.items())))
        hash(key)
    except TypeError:
        return None
    return key


def proxy_dtypes(spec: FunctionSpec, args: Sequence, params: dict) -> Any:
    """The dtype (a list for ``multi``) the function gives on one-element proxies of ``args``."""
    key = rule_key(args, params, shaped=spec.proxies is not None)
    if key is not None:
        hit = _DTYPE_CACHE.get((spec.path, key))
        if hit is not None:
            return hit
    if spec.proxies is not None:
        proxies = spec.proxies(args)
    else:
        proxies = [ops.proxy(a) if a is not None else None for a in args]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a proxy's RankWarning, ComplexWarning...
        out = _call(spec, proxies, params)
    result = ([np.asarray(o).dtype for o in flat_results(out)] if spec.multi
              else np.asarray(out).dtype)
    if key is not None:
        ops.remember(_DTYPE_CACHE, (spec.path, key), result, 50_000)
    return result


def _zero_d(args: Sequence) -> bool:
    """Every tensor operand is 0-d: its one-element proxy has the real shape."""
    tensors = [a for a in args if ops.is_tensor_meta(a)]
    return bool(tensors) and all(not a.shape for a in tensors)


def _shape(spec: FunctionSpec, args: Sequence, params: dict) -> Any:
    rule = spec.shape
    if _zero_d(args):  # NumPy's 0-d special cases (axis=0 on a scalar...), exactly: with the
        # call's own params, not the dtype probe's (np.linspace's num=2 would be the length)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nanstd's "degrees of freedom <= 0"...
            proxies = [ops.proxy(a) if a is not None else None for a in args]
            out = call(spec, spec.numpy_function, proxies, params)
        return [np.shape(o) for o in flat_results(out)] if spec.multi else np.shape(out)
    if rule == "dummy":
        out = _call(spec, _dummies(spec, args), params)
        return [tuple(o.shape) for o in flat_results(out)] if spec.multi else tuple(out.shape)
    shapes = [ops.shape_of(a) if a is not None else None for a in args]
    if rule == "same":
        return tuple(shapes[0])
    if rule == "broadcast":
        return tuple(np.broadcast_shapes(*[s for s in shapes if s is not None]))
    return rule(shapes, params)


def _dtype(spec: FunctionSpec, args: Sequence, params: dict, n: int) -> Any:
    rule = spec.dtype
    tensors = [a for a in _present(args) if ops.is_tensor_meta(a)]
    if rule == "proxy":
        return proxy_dtypes(spec, args, params)
    if rule == "each":  # a literal operand is a result too, as NumPy converts it (0.0: float64)
        return [a.dtype if ops.is_tensor_meta(a) else np.asarray(a).dtype
                for a in _present(args)]
    if rule == "same":
        dt = tensors[0].dtype
    elif rule == "promote":
        dt = np.result_type(*[a.dtype if ops.is_tensor_meta(a) else a for a in _present(args)])
    elif rule == "arrays":  # each operand made an array first (a Python 0.5: float64, not weak)
        dt = np.result_type(*[a.dtype if ops.is_tensor_meta(a) else np.asarray(a).dtype
                              for a in _present(args)])
    elif callable(rule) and not isinstance(rule, type):
        dt = rule([a.dtype for a in tensors], params)
        if isinstance(dt, list):  # one dtype per result
            return dt
    else:
        dt = np.dtype(rule)
    return [dt] * n if spec.multi else dt


def _meta(spec: FunctionSpec) -> Callable:
    def meta(args: Sequence, params: dict) -> Any:
        try:
            shape = _shape(spec, args, params)
            dtype = _dtype(spec, args, params, len(shape) if spec.multi else 1)
        except _RULE_ERRORS as err:
            raise ops.rule_error(spec.path, _present(args), params, err) from None
        if spec.multi:  # strict: a rule that lost a result must fail, never drop it
            return list(zip(shape, dtype, strict=True))
        return shape, dtype

    return meta


# --- helpers for written shape rules ------------------------------------------------------------


def axis_index(axis: Any, ndim: int) -> int:
    """``axis`` as a non-negative int (NumPy's AxisError when out of range)."""
    return np.lib.array_utils.normalize_axis_index(axis, ndim)


def signature_of(spec: FunctionSpec) -> inspect.Signature:
    """NumPy's signature of the spec's function."""
    return inspect.signature(spec.numpy_function)
