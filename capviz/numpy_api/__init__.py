"""NumPy functions that capviz tensors handle through ``__array_function__``.

:data:`HANDLED` maps a NumPy function to its handler: handlers generated from the op specs of
:mod:`capviz.ops` (:mod:`.generated`), handlers written by hand (:mod:`.handwritten`),
functions answered from shapes or values (:mod:`.reads`), handlers that shape a call first or
run a callback (:mod:`.adapters`), and writes into an argument (:mod:`.writes`).
:data:`REFUSED` maps every other dispatchable NumPy function to the alternative its error names
(:mod:`.refusals`).
"""

from __future__ import annotations

from capviz.numpy_api import methods  # noqa: F401  (registers every handler, then the methods)
from capviz.trace.dispatch import HANDLED, REFUSED, function_name, implements, refusal


def supported_functions() -> list[str]:
    """Names of the NumPy functions capviz records or answers (``np.cumsum``,
    ``np.linalg.inv``...); ufuncs aside (every ufunc of one or two operands is recorded).

    ``docs/numpy-coverage.md`` lists every dispatchable function and ndarray method with its
    status.
    """
    return sorted(function_name(f) for f in HANDLED)


__all__ = ["HANDLED", "REFUSED", "function_name", "implements", "refusal",
           "supported_functions"]
