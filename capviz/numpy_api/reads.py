"""NumPy functions answered without recording an op.

* From shape and dtype alone (``np.iscomplexobj``, ``np.einsum_path``, ``np.tril_indices_from``):
  the function runs on zero-stride stand-ins of the tensors' shape and dtype, which hold one
  element, so the answer is eager NumPy's and nothing is allocated.
* From values (``np.allclose``, ``np.array_equal``, ``np.array2string``): a data read, which a
  capture records as a ``data_read`` violation, like ``t.numpy()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.trace.dispatch import HANDLED, function_name
from capviz.trace.tensor import Tensor

FROM_METADATA = (np.iscomplexobj, np.isrealobj, np.common_type, np.can_cast, np.einsum_path,
                 np.diag_indices_from, np.tril_indices_from, np.triu_indices_from)
"""Functions whose result depends only on shapes and dtypes."""

DATA_READS = (np.allclose, np.array_equal, np.array_equiv, np.array2string, np.array_repr,
              np.array_str)
"""Functions that need the values (a ``data_read`` violation while capturing)."""


def _map(args: Any, fn: Callable) -> Any:
    if type(args) is Tensor:
        return fn(args)
    if isinstance(args, (list, tuple)):
        return type(args)(_map(a, fn) for a in args)
    return args


def _stand_in(t: Tensor) -> np.ndarray:
    return np.broadcast_to(np.zeros((), t.dtype), t.shape)


def _from_metadata(func: Callable) -> Callable:
    def handler(*args: Any, **kwargs: Any) -> Any:
        return func(*_map(args, _stand_in), **{k: _map(v, _stand_in) for k, v in kwargs.items()})

    handler.__name__ = func.__name__
    handler.__doc__ = f"``{function_name(func)}`` from the tensors' shapes and dtypes."
    return handler


def _reading(func: Callable) -> Callable:
    call = f"{function_name(func)}()"

    def value(t: Tensor) -> np.ndarray:
        return t._trace.read(t, call)

    def handler(*args: Any, **kwargs: Any) -> Any:
        return func(*_map(args, value), **{k: _map(v, value) for k, v in kwargs.items()})

    handler.__name__ = func.__name__
    handler.__doc__ = f"``{function_name(func)}`` of the values (a data read)."
    return handler


for _func in FROM_METADATA:
    HANDLED[_func] = _from_metadata(_func)
for _func in DATA_READS:
    HANDLED[_func] = _reading(_func)
