"""Functions with one output value per input element: nan_to_num, real, imag, angle, isclose...

The shape is the operand's (or the operands' broadcast shape); the dtype comes from proxies.
"""

from __future__ import annotations

from capviz.ops.spec import FunctionSpec, define

_COPY = "np.nan_to_num(x) (copy=True) and use its result: copy=False writes into x"

for _path, _tensors in [("fix", ("x",)), ("i0", ("x",)), ("sinc", ("x",)), ("real", ("val",)),
                        ("imag", ("val",)), ("angle", ("z",)), ("isreal", ("x",)),
                        ("iscomplex", ("x",)), ("isneginf", ("x",)), ("isposinf", ("x",)),
                        ("unwrap", ("p",))]:
    define(FunctionSpec(_path, _tensors, "same"))
define(FunctionSpec("nan_to_num", ("x",), "same", refuse={"copy": _COPY}))
define(FunctionSpec("isclose", ("a", "b"), "broadcast"))
