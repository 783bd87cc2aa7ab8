"""What the NumPy API's handlers share: refusing an argument by name, and static parameters.

Handlers register in :data:`capviz.trace.dispatch.HANDLED` (:func:`implements`). A handler has
the NumPy function's signature and calls :func:`capviz.trace.tensor.apply` with an op;
arguments that are not tensor operands become the op's static parameters, which must be plain
values a graph file can hold (:func:`static`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.trace.tensor import Tensor, unsupported


def reject(name: str, args: Any, **given: Any) -> None:
    """Refuse, by name, the first of ``given`` that is set (not None, not NumPy's no-value),
    with the rewrite that applies (:func:`rewrite`) as the message's ``Fix:`` line."""
    bad = [k for k, v in given.items() if v is not None and v is not np._NoValue]
    if bad:
        raise unsupported(f"{name}(..., {bad[0]}=...)", args,
                          f"the argument {bad[0]!r} is not supported; {rewrite(name, bad[0])}")


_REWRITES = {
    ("np.any", "where"): "write np.any(x & mask, axis) (the terms where= leaves out as False)",
    ("np.all", "where"): "write np.all(x | ~mask, axis) (the terms where= leaves out as True)",
    ("np.var", "where"): "write it out with the mask: n = np.sum(mask, axis, keepdims=True); "
                         "mu = np.sum(x, axis, keepdims=True, where=mask) / n; "
                         "np.sum((x - mu) ** 2, axis, where=mask) / np.sum(mask, axis)",
    ("np.std", "where"): "write it out with the mask: n = np.sum(mask, axis, keepdims=True); "
                         "mu = np.sum(x, axis, keepdims=True, where=mask) / n; "
                         "np.sqrt(np.sum((x - mu) ** 2, axis, where=mask) / np.sum(mask, "
                         "axis))",
    ("np.var", "mean"): "write np.var(x, axis) without mean=: it computes the mean it needs",
    ("np.std", "mean"): "write np.std(x, axis) without mean=: it computes the mean it needs",
}
_REWRITE_OF_ARGUMENT = {
    "out": "write the result to a name instead, y = {call}(...) (to fill a tensor buffer: "
           "buf[...] = {call}(...))",
    "dtype": "cast the operands first, {call}([a.astype(t) for a in arrays]), as NumPy's "
             "dtype= casts them",
}
CATALOGUE = "docs/guide/numpy.md (\"What is refused, and what to write instead\")"
"""The page listing what capviz records of NumPy's API, and the rewrites of what it does not."""


def rewrite(call: str, argument: str) -> str:
    """The rewrite of ``call(..., argument=...)`` that capture records (the ``Fix:`` line of its
    refusal), or, where none is known, where the docs list what capviz records."""
    fix = _REWRITES.get((call, argument))
    if fix is None and argument in _REWRITE_OF_ARGUMENT:
        fix = _REWRITE_OF_ARGUMENT[argument].format(call=call)
    if fix is None:
        fix = (f"write the call without {argument}= (the rewrites capviz records are listed in "
               f"{CATALOGUE}, and cv.supported_functions() names the functions)")
    return fix


_PLAIN = (type(None), bool, int, float, complex, str)


# parameters whose value NumPy computes with, in the operand's type or the scalar's (NEP 50):
# a NumPy scalar there is "strong" where the Python number it is recorded as is "weak"
_PROMOTING = frozenset({"q", "discont", "period", "range", "base"})  # base: np.logspace
_PROMOTING_ITEMS = frozenset({"range"})  # a tuple whose items NumPy computes with one by one
_NARROW = frozenset({np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64)})


def _refuse_strong(call: str, name: str, value: Any, operands: Any) -> None:
    """Refuse a NumPy integer or float64 scalar in a parameter NumPy computes with, next to an
    operand of a narrower float type: NumPy promotes the result to the scalar's type (NEP 50),
    the Python number a graph records would not be promoted."""
    found = operands if isinstance(operands, (list, tuple)) else (operands,)
    narrow = [o for o in found if getattr(o, "dtype", None) in _NARROW]
    if narrow:
        dtype = narrow[0].dtype
        wide = np.result_type(dtype, value.dtype)
        kind = type(value.item()).__name__
        python = f"{name}=tuple({kind}(v) for v in {name})" if name in _PROMOTING_ITEMS \
            else f"{name}={kind}({name})"
        raise unsupported(
            f"{call}(..., {name}=np.{type(value).__name__}(...))", operands,
            f"NumPy computes a {dtype} operand with a NumPy scalar {name} in {wide} (NEP 50), "
            f"where the Python number a graph records keeps {dtype}. Fix: cast the operand "
            f"(a.astype(np.{wide})) to keep NumPy's {wide} result, or pass {python} to compute "
            f"in {dtype}")


_TENSOR_MASK = {
    "np.nansum": "write np.nansum's own steps, np.sum(np.where(np.isnan(x), 0, x), axis, "
                 "where=mask), which capture records with a tensor mask",
    "np.nanprod": "write np.nanprod's own steps, np.prod(np.where(np.isnan(x), 1, x), axis, "
                  "where=mask), which capture records with a tensor mask",
    "np.nanmax": "write np.max(x, axis, where=mask & ~np.isnan(x), initial=v), which capture "
                 "records with a tensor mask",
    "np.nanmin": "write np.min(x, axis, where=mask & ~np.isnan(x), initial=v), which capture "
                 "records with a tensor mask",
    "": f"write it with np.sum, np.prod, np.mean, np.max or np.min, which take a tensor mask "
        f"(the rewrites are in {CATALOGUE})",
}


def static(call: str, name: str, value: Any, operands: Any, nested: bool = False) -> Any:
    """``value`` of parameter ``name`` as a static graph parameter, or a refusal naming it.

    Python scalars, strings, None, slices and lists/tuples of them stay as they are (a NumPy
    function treats a list and a tuple alike); NumPy integers and float64 scalars become the
    equal Python numbers, but in ``q``, ``discont``, ``period`` and ``range``'s items next to a
    narrower float operand, where NumPy promotes to the scalar's type (NEP 50) and would not
    with the Python number, they are refused with the fix; a dtype becomes its name; a small
    int64/float64/bool ndarray becomes a list. Anything else (a tensor, a callable, a float32
    scalar whose type would change the result) is refused.
    """
    t = type(value)
    if t in _PLAIN:
        return value
    if isinstance(value, (list, tuple)):
        each = name not in _PROMOTING_ITEMS  # histogram's range=: its items promote
        return t(static(call, name, v, operands, each) for v in value) if t in (list, tuple) \
            else tuple(static(call, name, v, operands, each) for v in value)
    if isinstance(value, slice):
        return slice(*(static(call, name, v, operands)
                       for v in (value.start, value.stop, value.step)))
    if t is Tensor and name == "where":
        raise unsupported(f"{call}(..., where=<tensor>)", operands,
                          f"{call} records a where= mask known before the capture (an "
                          f"ndarray), not a tensor; {_TENSOR_MASK.get(call, _TENSOR_MASK[''])}")
    if t is Tensor:
        raise unsupported(f"{call}(..., {name}=<tensor>)", operands,
                          f"{name} must be a Python value: the result's shape or meaning "
                          "would depend on tensor data, which a capture does not have")
    if isinstance(value, (np.bool_, np.integer)) or t is np.float64:
        if name in _PROMOTING and not nested and not isinstance(value, np.bool_):
            # (a list is "strong" either way: NumPy makes it an array)
            _refuse_strong(call, name, value, operands)
        return value.item()
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)) \
            or any(value is py for py in (int, float, complex, bool)):
        return np.dtype(value).name
    if isinstance(value, np.ndarray) and value.dtype in (np.int64, np.float64, np.bool_):
        return value.tolist()
    raise unsupported(f"{call}(..., {name}=...)", operands,
                      f"a {t.__name__} cannot be recorded as {name!r}; pass a Python int, float, "
                      "str or a list of them")
