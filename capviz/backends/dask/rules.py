"""How each op of the op table runs on Dask: its rule kind (:data:`RULES`, read from the op's
traits, :func:`capviz.ops.traits.treatment`), the ops refused by name (:data:`REFUSED`), and the
function that builds each kind (:data:`LOWER`; the kinds are described in
:mod:`capviz.backends.dask.backend`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.dask.kinds import (
    along_axis,
    elementwise,
    gather,
    move,
    select,
    sized,
    split,
    whole,
)
from capviz.backends.dask.reductions import accumulate
from capviz.backends.dask.shapes import check_result, expected
from capviz.backends.registry import get, unsupported
from capviz.ops import traits

REFUSED: dict[str, str] = {
    "draw": "a draw from a live random generator (a state of the graph), which a lazy "
            "expression cannot advance as eager calls do; replay on NumPy or CuPy",
}
"""Ops this backend refuses at bind time, with the reason (an op added to the table without a
rule is refused until it gets one)."""


def _kind(name: str) -> str | None:
    """The rule kind of the op ``name`` (its trait, :func:`capviz.ops.traits.treatment`), or
    ``None`` when it has none (refused)."""
    if name in ops.UFUNCS:
        return "elementwise"
    if name in ("unpack", "into"):
        # unpack: the program picks a result of a multi-result op itself; into: f(..., out=y),
        # f's own rule where out= changes no bit, else whole
        return name
    return traits.treatment(name)


def _rules() -> dict[str, str]:
    table: dict[str, str] = {}
    for name in ops.OPS:
        kind = _kind(name)
        if kind is not None:
            table[name] = kind
    return table


RULES: dict[str, str] = _rules()
"""How each op of the op table runs on Dask (see the module docstring for the kinds)."""

def rule(op_name: str) -> str:
    """The rule kind of an op (``"elementwise"``, ``"axis"``, ...; see :data:`RULES`).

    Raises:
        UnsupportedOperationError: the op has no rule (or is refused), with the reason.
    """
    kind = RULES.get(op_name)
    if kind is None and op_name in ops.OPS:  # an op registered after this module's import
        kind = _rules().get(op_name)
        if kind is not None:
            RULES[op_name] = kind
    if op_name in REFUSED:
        raise unsupported(get("dask"), op_name, REFUSED[op_name])
    if kind is None:
        raise unsupported(get("dask"), op_name, "no Dask rule is declared for it in "
                          "capviz/ops/traits.py")
    return kind


def into(op: ops.Op, args: tuple, params: dict) -> Any:
    """A function called with ``out=`` of its result's own shape and dtype: the function's own
    result where ``out=`` changes no bit (the op's ``out`` flag), else ``whole``."""
    inner = ops.OPS[params["op"]]
    target = args[0]
    if getattr(target, "ndim", None) == 0:  # a 0-d block may compute as a NumPy scalar, and
        # f(..., out=) needs an array (np.round(x[1, 1], out=x[0, 0, ...]))
        args = (target.map_blocks(np.asarray, dtype=target.dtype), *args[1:])
    if not inner.out:
        return whole(op, args, params)
    shape, dtype = expected(op, args, params)
    value = LOWER[rule(inner.name)](inner, tuple(args[1:]), dict(params["params"]))
    return check_result(op, value, shape, dtype)



LOWER: dict[str, Callable] = {
    "elementwise": elementwise, "axis": along_axis, "move": move, "select": select,
    "reduce": accumulate, "contract": accumulate, "gather": gather, "split": split, "whole": whole,
    "into": into, "sized": sized,
}
