"""Handlers generated from the op specs of :mod:`capviz.ops`, one per NumPy function.

Each handler binds the call with NumPy's own signature (so it accepts exactly what NumPy
accepts, positionally or by keyword, and fails the same way on a bad call), takes the spec's
tensor parameters as operands and every other argument given as a static parameter (defaults are
left out, so the recorded call is the user's call), and records the spec's op.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.numpy_api.registry import static
from capviz.numpy_api.writes import write_into
from capviz.ops import SPECS, FunctionSpec
from capviz.ops.spec import packing
from capviz.trace.dispatch import HANDLED, function_name
from capviz.trace.tensor import Tensor, apply, unsupported

_VAR_KEYWORD = inspect.Parameter.VAR_KEYWORD
_OUT = ("write y = {call}(...) and use y: out= into a tensor is not recorded by this function")


def _is_default(value: Any, default: Any) -> bool:
    if value is default:
        return True
    plain = (bool, int, float, str)
    return type(value) is type(default) and type(value) in plain and value == default


def handler_for(spec: FunctionSpec) -> Callable:
    """The ``__array_function__`` handler of ``spec``'s NumPy function."""
    func = spec.numpy_function
    sig = inspect.signature(func)
    call = function_name(func)
    op = ops.OPS[spec.path]
    how = packing(spec)
    names = [t.strip("*[]") for t in spec.tensors]
    leading = spec.leading

    def handler(*args: Any, **kwargs: Any) -> Any:
        if leading:  # np.einsum(subscripts, *operands, ...)
            args = (spec.other_form and spec.other_form(args)) or args
            fixed, args = dict(zip(leading, args)), args[len(leading):]
        else:
            fixed = {}
        bound = sig.bind(*args, **kwargs)
        given = bound.arguments
        if how == "named":
            operands: list = [given.get(n) for n in names]
            while operands and operands[-1] is None:
                operands.pop()
        elif how == "mixed":  # np.select(condlist, choicelist), np.choose(a, choices)
            operands = []
            for name, entry in zip(names, spec.tensors):
                value = given.get(name)
                if entry.endswith("[]"):
                    operands.extend(_sequence(call, name, value))
                else:
                    operands.append(value)
        elif how == "trailing":  # np.gradient(f, *varargs)
            operands = [given.get(n) for n in names[:-1]] + list(given.get(names[-1], ()))
        else:
            operands = list(given.get(names[0], ()))
        params = {k: static(call, k, v, operands) for k, v in fixed.items()}
        out = None
        for name, value in given.items():
            param = sig.parameters[name]
            if name in names:
                continue
            if name == "out" and value is not None:
                if type(value) is not Tensor or spec.multi or spec.per_operand:
                    raise unsupported(f"{call}(..., out=...)", operands,
                                      _OUT.format(call=call))
                out = value  # a tensor: written by numpy_api/writes.py
                continue
            if param.kind is _VAR_KEYWORD:
                for k, v in value.items():
                    if k not in spec.keywords:
                        raise unsupported(f"{call}(..., {k}=...)", operands,
                                          f"{call} takes no keyword {k!r} here; it takes "
                                          f"{', '.join(spec.keywords)}")
                    params[k] = static(call, k, v, operands)
            elif not _is_default(value, param.default):
                params[name] = static(call, name, value, operands)
        _check(spec, call, params, operands)
        if spec.per_operand:
            results = [apply(op, (a,), params) if type(a) is Tensor  # a literal: as NumPy
                       else spec.numpy_function(a, **params) for a in operands]
            return results[0] if len(results) == 1 else tuple(results)
        if out is not None:
            return write_into(call, op, operands, params, out)
        result = apply(op, tuple(operands), params)
        if not spec.multi:
            return result
        container = spec.container
        if container is list or container is tuple:
            return container(result)
        return container(*result)

    handler.__name__ = func.__name__
    handler.__qualname__ = func.__name__
    handler.__doc__ = f"Record ``{call}`` (see NumPy's documentation)."
    handler.__signature__ = sig  # type: ignore[attr-defined]
    return handler


def _sequence(call: str, name: str, value: Any) -> list:
    if not isinstance(value, (list, tuple)):
        raise unsupported(f"{call}(..., {name}=...)", (value,),
                          f"pass {name} as a list or tuple of tensors")
    return list(value)


def _check(spec: FunctionSpec, call: str, params: dict, operands: list) -> None:
    for name, alternative in spec.refuse.items():
        if name in params:
            raise unsupported(f"{call}(..., {name}=...)", operands, f"write {alternative}")
    for name, values in spec.refuse_values.items():
        value = params.get(name)
        if isinstance(value, (str, int)) and value in values:
            raise unsupported(f"{call}(..., {name}={value!r})", operands,
                              f"write {values[value]}")
    if spec.refuse_if is not None:
        refused = spec.refuse_if(operands, params)
        if refused is not None:
            what, alternative = refused
            raise unsupported(f"{call} {what}", operands, alternative)


for _spec in SPECS.values():
    HANDLED[_spec.numpy_function] = handler_for(_spec)

HANDLED[np.einsum].__signature__ = inspect.signature(  # type: ignore[attr-defined]
    lambda subscripts, *operands, out=None, optimize=False, **kwargs: None)
