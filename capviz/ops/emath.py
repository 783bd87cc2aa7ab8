"""``np.emath``: the functions whose result is complex where the real one would be NaN.

For a real tensor the result's dtype depends on the values (``np.emath.sqrt`` of a float array is
complex only when an element is negative), so such a call is refused by name. For the dtypes
where NumPy never switches (complex tensors; unsigned and boolean ones for the functions that
switch on negative values; booleans for arccos, arcsin and arctanh, which switch on
``abs(x) > 1``) the dtype is fixed and the call is recorded: replay runs ``np.emath`` itself.
"""

from __future__ import annotations

from typing import Any

from capviz.ops import table as ops
from capviz.ops.spec import FunctionSpec, define

_DATA_DTYPE = ("its output dtype (real or complex) depends on the values of a real tensor; cast "
               "first, e.g. np.emath.sqrt(x.astype(np.complex128)), or use np.sqrt for real "
               "results (NaN where undefined)")

_NEGATIVE = "if"  # the kinds that may hold negative values
_ABOVE_ONE = "iuf"  # the kinds that may hold abs(x) > 1


_KIND_NAMES = {"i": "signed integer", "u": "unsigned", "f": "float", "b": "boolean",
               "c": "complex"}


def _listed(names: list[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def _fixed_unless(kinds: str, positions: tuple[int, ...] | None = None) -> Any:
    """A ``refuse_if`` rule: tensors (at ``positions``, default all) of ``kinds`` are refused.
    Its docstring is the note of the coverage table."""

    def refuse(operands: list, params: dict) -> tuple[str, str] | None:
        for i, a in enumerate(operands):
            if positions is not None and i not in positions:
                continue
            if ops.is_tensor_meta(a) and a.dtype.kind in kinds:
                return f"of a {a.dtype} tensor", _DATA_DTYPE
        return None

    kept = [name for kind, name in _KIND_NAMES.items() if kind not in kinds]
    refused = [name for kind, name in _KIND_NAMES.items() if kind in kinds]
    refuse.__doc__ = (f"recorded for {_listed(kept)} tensors; {_listed(refused)} ones are "
                      "refused (their values would decide between a real and a complex "
                      "result)")
    return refuse


def _power_refusal(operands: list, params: dict) -> tuple[str, str] | None:
    """recorded for an unsigned, boolean or complex x and a p that is not a signed integer
    tensor; others are refused (their values would decide the result's dtype: a negative x
    makes it complex, a negative integer p makes it float)"""
    return (_fixed_unless(_NEGATIVE, (0,))(operands, params)
            or _fixed_unless("i", (1,))(operands, params))


for _name in ("sqrt", "log", "log10", "log2"):
    define(FunctionSpec(f"emath.{_name}", ("x",), "same", refuse_if=_fixed_unless(_NEGATIVE)))
define(FunctionSpec("emath.logn", ("n", "x"), "broadcast", refuse_if=_fixed_unless(_NEGATIVE)))
define(FunctionSpec("emath.power", ("x", "p"), "broadcast", refuse_if=_power_refusal))
for _name in ("arccos", "arcsin", "arctanh"):
    define(FunctionSpec(f"emath.{_name}", ("x",), "same", refuse_if=_fixed_unless(_ABOVE_ONE)))
